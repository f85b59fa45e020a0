#!/bin/sh
# The test command: tests/run.sh [BUILDDIR]
# Sets up the Debian sid chroot for 3.13-3.15 when it can (versions it
# cannot provide are reported as skipped), then runs unit tests and every
# target under every interpreter found.
set -u
cd "$(dirname "$0")/.."
build=${1:-build}
tests/setup-sid.sh || echo "run.sh: no sid chroot; Python 3.13-3.15 from sid will be skipped"
exec python3 tests/run_tests.py --build "$build"
