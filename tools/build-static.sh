#!/bin/sh
# The release artifact: a fully static pystack-dump for Linux, one file
# that runs with no library on the machine (README, "A static binary").
# tools/build-static.sh [--arm64] [BUILDDIR [OUT]]: builds BUILDDIR
# (default build-static, or build-arm64-static with --arm64: the arm64
# cross build of tools/build-arm64.sh, which sets up its sysroot) with
# -Dstatic=true (the same -O2 as the default build) and copies the
# binary, its debug information stripped, to OUT (default
# BUILDDIR/pystack-dump-VERSION-ARCH-linux).
set -eu
cd "$(dirname "$0")/.."
if [ "${1:-}" = --arm64 ]; then
	shift
	dir=${1:-build-arm64-static}
	tools/build-arm64.sh "$dir" -Dstatic=true -Dbuildtype=debugoptimized
	run=qemu-aarch64-static arch=aarch64 strip=aarch64-linux-gnu-strip
else
	dir=${1:-build-static}
	tools/build.sh "$dir" -Dstatic=true -Dbuildtype=debugoptimized
	run= arch=x86_64 strip=strip
fi
version=$($run "$dir/cli/pystack-dump" --version | awk '{print $NF}')
out=${2:-$dir/pystack-dump-$version-$arch-linux}
$strip -o "$out" "$dir/cli/pystack-dump"
file "$out" 2>/dev/null || true
ls -l "$out"
