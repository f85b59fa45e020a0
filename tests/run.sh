#!/bin/sh
# The test command: tests/run.sh [BUILDDIR] [PYTEST ARGS...]
# Sets up the Debian sid chroot for 3.13-3.15 and the bullseye one for 3.9,
# builds the free-threaded 3.15.0a0 (and its default build) and unpacks
# arm64 CPython and qemu (tests/setup-arm64.sh) when it can (versions it
# cannot provide are reported as skipped), then runs the whole pytest suite
# (tests/test_*.py: unit tests, error cases, every target under every
# interpreter found, the gdb and lldb plugins) on 3 workers, with Debian's
# pytest and pytest-xdist.  Extra arguments go to pytest: -k sid-3.15,
# tests/test_cores.py, -x ...  The exit status is pytest's: 0 only if
# everything collected passed or was skipped (5, nothing collected, fails).
set -u
cd "$(dirname "$0")/.."
build=${1:-build}
[ $# -gt 0 ] && shift
tests/setup-sid.sh || echo "run.sh: no sid chroot; Python 3.13-3.15 from sid will be skipped"
tests/setup-bullseye.sh || echo "run.sh: no bullseye chroot; bullseye-3.9 and the static binary's bullseye runs will be skipped"
tests/setup-ft.sh || echo "run.sh: no free-threaded build; ft-3.15t and ft-3.15 will be skipped"
tests/setup-arm64.sh || echo "run.sh: no arm64 sysroots; the arm64 tests will be skipped"
# pytest reads --build from tests/conftest.py: name tests/ unless a test path is given
case " $* " in *" tests/"*) ;; *) set -- "$@" tests ;; esac
exec /usr/bin/python3 -m pytest --build="$build" -n 3 --dist loadgroup -rfEs "$@"
