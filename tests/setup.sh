#!/bin/sh
# Every setup the suite uses, all at once: tests/setup.sh
#
# The sid and bullseye chroots and the arm64 sysroots mostly wait on the
# network, the two CPython 3.15.0a0 builds (tests/setup-ft.sh) each keep
# one core busy, and the pprof binary (tests/setup-pprof.sh) is a go
# build: run one after another they took the sum of their times, together
# about the longest one's.  Each is idempotent (a ready setup is
# only checked) and best effort: what one cannot provide, the tests skip,
# saying why; this script says which and exits 0.  With $PYD_PHASES set
# to a file, a line "setup-NAME SECONDS STATUS" is added to it for each
# (.ci/run prints them in its table of phases).
set -u
cd "$(dirname "$0")/.."

# NAME WHAT-IS-SKIPPED-WITHOUT-IT
one() {
	t0=$(date +%s)
	if tests/setup-"$1".sh; then st=ok; else
		st=failed
		echo "setup: no $1 setup; $2 will be skipped" >&2
	fi
	[ -n "${PYD_PHASES:-}" ] && echo "setup-$1 $(($(date +%s) - t0)) $st" >>"$PYD_PHASES"
	return 0
}

one sid "Python 3.13-3.15 from sid" &
one bullseye "bullseye-3.9 and the static binary's bullseye runs" &
one ft "ft-3.15t and ft-3.15" &
one arm64 "the arm64 tests" &
one pprof "the checks that the real pprof reads our profiles" &
one coredump "the checks of --coredump with systemd-coredump" &
wait
