#!/bin/sh
# The test command: tests/run.sh [--quick] [BUILDDIR] [PYTEST ARGS...]
#
# Sets up (tests/setup.sh, all at once) the Debian sid chroot for
# 3.13-3.15 and the bullseye one for 3.9, builds the free-threaded
# 3.15.0a0 (and its default build) and unpacks arm64 CPython and qemu
# when it can (versions it cannot provide are reported as skipped), then
# runs the whole pytest suite (tests/test_*.py: unit tests, error cases,
# every target under every interpreter found, the gdb and lldb plugins)
# on 3 workers, with Debian's pytest and pytest-xdist.  Extra arguments
# go to pytest: -k sid-3.15, tests/test_cores.py, -x ...  The exit status
# is pytest's: 0 only if everything collected passed or was skipped (5,
# nothing collected, fails).
#
# --quick, for a developer between changes: only the sid chroot is set
# up, and every feature file runs on one interpreter of each layout
# family ($QUICK_INTERPS; the others are reported skipped, "left out of
# this run"), without the arm64, static-binary and wheel files, which
# need builds of their own (tests/README.md, "CI": what it leaves out and
# how long it takes).
set -u
cd "$(dirname "$0")/.."
QUICK_INTERPS=pyenv-3.6,pyenv-3.10,pyenv-3.12,sid-3.15
quick=
if [ "${1:-}" = --quick ]; then
	quick=1
	shift
fi
build=${1:-build}
[ $# -gt 0 ] && shift
if [ -n "$quick" ]; then
	tests/setup-sid.sh || echo "run.sh: no sid chroot; sid-3.15 will be skipped"
	set -- --interps "$QUICK_INTERPS" --ignore=tests/test_arm64.py \
		--ignore=tests/test_static.py --ignore=tests/test_wheel.py "$@"
else
	tests/setup.sh
fi
# pytest reads --build from tests/conftest.py: name tests/ unless a test path is given
case " $* " in *" tests/"*) ;; *) set -- "$@" tests ;; esac
exec /usr/bin/python3 -m pytest --build="$build" -n 3 --dist loadgroup -rfEs "$@"
