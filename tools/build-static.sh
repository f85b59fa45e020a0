#!/bin/sh
# The release artifact: a fully static pystack-dump for x86-64 Linux, one
# file that runs with no library on the machine (README, "A static
# binary").  tools/build-static.sh [BUILDDIR [OUT]]: builds BUILDDIR
# (default build-static) with -Dstatic=true (the same -O2 as the default
# build) and copies the binary, its debug information stripped,
# to OUT (default BUILDDIR/pystack-dump-VERSION-x86_64-linux).
set -eu
cd "$(dirname "$0")/.."
dir=${1:-build-static}
tools/build.sh "$dir" -Dstatic=true -Dbuildtype=debugoptimized
version=$("$dir/cli/pystack-dump" --version | awk '{print $NF}')
out=${2:-$dir/pystack-dump-$version-x86_64-linux}
strip -o "$out" "$dir/cli/pystack-dump"
file "$out" 2>/dev/null || true
ls -l "$out"
