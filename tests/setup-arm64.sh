#!/bin/sh
# Create (if missing) what tests/test_arm64.py runs arm64 CPython with:
# qemu-user 11.1 from sid (twice as fast as bookworm's 7.2 and writes one
# clean core), bookworm's arm64 python3.11 and sid's arm64 python3.13,
# 3.14 and 3.15, each with greenlet, unpacked into sysroots by
# tools/debs-sysroot.sh (no host package is touched).
#
#   tests/setup-arm64.sh [DIR]
#
# DIR defaults to $PYD_ARM64_DIR, else /var/cache/pystack-dump/arm64 (where
# tools/build-arm64.sh keeps its build sysroot). Idempotent: a ready
# setup (DIR/.pyd-arm64-ready, written only once every interpreter has run
# what the targets import) is only checked. Best effort: what is missing
# is skipped by the tests, saying why. Needs root.
set -eu
HERE=$(cd "$(dirname "$0")/.." && pwd)
DIR=${1:-${PYD_ARM64_DIR:-/var/cache/pystack-dump/arm64}}
MARKER="$DIR/.pyd-arm64-ready"
QEMU="$DIR/qemu-sid/usr/bin/qemu-aarch64"
IMPORTS='import asyncio, ctypes, json, queue, select, socket, threading, traceback'
log() { echo "setup-arm64: $*" >&2; }
die() { log "error: $*"; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root (apt-get, dpkg-deb into $DIR)"

# every interpreter runs the targets' imports under qemu
verify() {
	[ -x "$QEMU" ] || { log "missing $QEMU"; return 1; }
	for sv in bookworm:3.11 sid:3.13 sid:3.14 sid:3.15; do
		root=$DIR/py-${sv%%:*}
		"$QEMU" -L "$root" "$root/usr/bin/python${sv#*:}" -B -E -s -c "$IMPORTS" \
			>/dev/null 2>&1 || { log "python${sv#*:} does not run in $root"; return 1; }
	done
}

if [ -f "$MARKER" ] && verify; then
	log "ready: $DIR"
	exit 0
fi
rm -f "$MARKER"
mkdir -p "$DIR"
[ -x "$QEMU" ] || PYD_DEBS_NODEPS=1 "$HERE/tools/debs-sysroot.sh" amd64 sid "$DIR/qemu-sid" qemu-user
[ -x "$DIR/py-bookworm/usr/bin/python3.11" ] ||
	"$HERE/tools/debs-sysroot.sh" arm64 bookworm "$DIR/py-bookworm" python3.11 python3-greenlet
[ -x "$DIR/py-sid/usr/bin/python3.15" ] ||
	"$HERE/tools/debs-sysroot.sh" arm64 sid "$DIR/py-sid" python3.13 python3.14 python3.15 python3-greenlet
verify || die "the arm64 interpreters in $DIR do not run"
{
	echo "created by tests/setup-arm64.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	"$QEMU" --version | head -n1
} >"$MARKER.tmp"
mv "$MARKER.tmp" "$MARKER"
log "ready: $DIR"
