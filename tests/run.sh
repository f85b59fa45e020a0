#!/bin/sh
# The test command: tests/run.sh [BUILDDIR] [PYTEST ARGS...]
# Sets up (tests/setup.sh, all at once) the Debian sid chroot for
# 3.13-3.15 and the bullseye one for 3.9, builds the free-threaded
# 3.15.0a0 (and its default build) and unpacks arm64 CPython and qemu
# when it can (versions it cannot provide are reported as skipped), then
# runs the whole pytest suite
# (tests/test_*.py: unit tests, error cases, every target under every
# interpreter found, the gdb and lldb plugins) on 3 workers, with Debian's
# pytest and pytest-xdist.  Extra arguments go to pytest: -k sid-3.15,
# tests/test_cores.py, -x ...  The exit status is pytest's: 0 only if
# everything collected passed or was skipped (5, nothing collected, fails).
set -u
cd "$(dirname "$0")/.."
build=${1:-build}
[ $# -gt 0 ] && shift
tests/setup.sh
# pytest reads --build from tests/conftest.py: name tests/ unless a test path is given
case " $* " in *" tests/"*) ;; *) set -- "$@" tests ;; esac
exec /usr/bin/python3 -m pytest --build="$build" -n 3 --dist loadgroup -rfEs "$@"
