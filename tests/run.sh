#!/bin/sh
# The test command: tests/run.sh [BUILDDIR]
# Sets up the Debian sid chroot for 3.13-3.15 when it can (versions it
# cannot provide are reported as skipped), then runs unit tests and every
# target under every interpreter found: pystack-dump itself, then the gdb
# and lldb plugins (skipped where they or their debugger are missing).
set -u
cd "$(dirname "$0")/.."
build=${1:-build}
tests/setup-sid.sh || echo "run.sh: no sid chroot; Python 3.13-3.15 from sid will be skipped"
status=0
python3 tests/run_tests.py --build "$build" || status=1
python3 tests/test_gdb.py --build "$build" || status=1
python3 tests/test_lldb.py --build "$build" || status=1
echo "run.sh: $( [ $status = 0 ] && echo all passed || echo FAILURES above)"
exit $status
