#!/bin/sh
# Configure (once) and compile: tools/build.sh [BUILDDIR [meson options...]]
set -eu
dir=${1:-build}
[ $# -gt 0 ] && shift
cd "$(dirname "$0")/.."
if [ -f "$dir/build.ninja" ]; then
	[ $# -gt 0 ] && meson configure "$dir" "$@"
else
	meson setup "$dir" "$@"
fi
meson compile -C "$dir"
