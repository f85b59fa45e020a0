#!/bin/sh
# Build the libFuzzer harnesses (fuzz/) and run them:
#
#   tools/fuzz.sh [TARGET|all] [SECONDS] [BUILDDIR]
#
# TARGET is snapshot, sample, core, profile, linetable, unicode,
# gdb_request or all (the default); each runs SECONDS (default 60) with
# clang's ASan and UBSan, from its corpus: the seeds in the tree (fuzz/corpus/TARGET, and
# for snapshot and sample every fixture snapshot of tests/fixtures, for
# gdb_request the request fixture), the reproducers kept under
# tests/fuzz/TARGET, plus what earlier runs kept (BUILDDIR/corpus/TARGET).
# A finding is written to BUILDDIR/crashes/ and the script exits 1; keep
# it as a reproducer under tests/fuzz/TARGET/ (the suite replays them).
set -eu
cd "$(dirname "$0")/.."
only=${1:-all}
secs=${2:-60}
dir=${3:-build-fuzz}
targets="snapshot sample core profile linetable unicode gdb_request"
[ "$only" = all ] || targets=$only
if [ ! -f "$dir/build.ninja" ]; then
	CC=clang meson setup "$dir" -Dfuzz=true -Db_sanitize=address,undefined \
		-Db_lundef=false -Dgdb=disabled -Dlldb=disabled >/dev/null
fi
# Only the harnesses (and the code they link): the rest of this build is
# never run.
# shellcheck disable=SC2046  # one word per harness
meson compile -C "$dir" $(for t in $targets; do echo "fuzz_$t"; done) >/dev/null
mkdir -p "$dir/crashes"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp
# One harness: fuzz it from its corpus; 0, or 1 on a finding.
fuzz_one() {
	t=$1
	corpus=$dir/corpus/$t
	mkdir -p "$corpus"
	seeds="fuzz/corpus/$t"
	[ -d "$seeds" ] || seeds=
	case $t in
	snapshot|sample) seeds="$seeds tests/fixtures" ;;
	gdb_request) mkdir -p "$dir/seeds/gdb_request"
		cp tests/fixtures/gdb-request.txt "$dir/seeds/gdb_request/"
		seeds="$dir/seeds/gdb_request" ;;
	esac
	tests_dir=tests/fuzz/$t
	[ -d "$tests_dir" ] && seeds="$seeds $tests_dir"
	# A snapshot that holds greenlets holds the collector's pages: past
	# libFuzzer's default cap of 1 MiB.
	opts=
	case $t in
	snapshot|sample) opts="-dict=fuzz/snapshot.dict -max_len=2097152" ;;
	core) opts=-dict=fuzz/core.dict ;;
	esac
	log=$dir/fuzz-$t.log
	# shellcheck disable=SC2086  # the seed directories and options are words
	if "$dir/fuzz/fuzz_$t" $opts -max_total_time="$secs" -timeout=10 \
		-rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$dir/crashes/$t-" "$corpus" $seeds >"$log" 2>&1; then
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
		rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
		echo "fuzz $t: ${runs:-?} executions in ${secs}s (${rate:-?}/s), no finding"
	else
		echo "fuzz $t: FINDING (see $log and $dir/crashes/)"
		tail -30 "$log"
		return 1
	fi
}
# Two at a time: each harness is one process on one core.
lane() {
	st=0
	for t in "$@"; do
		fuzz_one "$t" || st=1
	done
	return $st
}
set -- $targets
odd= even=
while [ $# -gt 0 ]; do
	odd="$odd $1"
	shift
	[ $# -gt 0 ] && { even="$even $1"; shift; }
done
status=0
# shellcheck disable=SC2086  # one word per harness
lane $odd &
first=$!
lane $even || status=1
wait $first || status=1
exit $status
