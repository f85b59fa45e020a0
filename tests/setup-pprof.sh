#!/bin/sh
# The pprof binary tests/check_pprof.py runs: tools/build-pprof.sh builds
# it once, offline, from Debian's sources (a minute of CPU on a fresh
# machine, better spent beside the builds than in the suite).
exec "$(dirname "$0")/../tools/build-pprof.sh" >/dev/null
