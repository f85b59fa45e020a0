#!/bin/sh
# Create (if missing) a Debian bullseye chroot (glibc 2.31, CPython 3.9.2)
# for the tests (tests/run.sh): an older distribution the static
# pystack-dump runs in (tests/test_static.py) and one more distribution
# interpreter (bullseye-3.9); mount /proc inside it.
#
#   tests/setup-bullseye.sh [DIR]
#
# DIR defaults to $PYD_BULLSEYE_DIR, else /var/cache/pystack-dump/bullseye.
# Idempotent like tests/setup-sid.sh: the marker DIR/.pyd-bullseye-ready is
# written only once python3.9 runs what the targets import. Needs root.
# The apt mirror is the one this machine's own apt sources use.
set -eu

DIR=${1:-${PYD_BULLSEYE_DIR:-/var/cache/pystack-dump/bullseye}}
MARKER="$DIR/.pyd-bullseye-ready"
# python3.9-dbg: the release build's DWARF, for tools/gen-layouts.sh
PKGS="python3.9-minimal,libpython3.9-stdlib,python3.9-dbg"

log() { echo "setup-bullseye: $*" >&2; }
die() { log "error: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (debootstrap, chroot, mount)"
. "$(dirname "$0")/chroot-common.sh"

verify() {
    chroot "$DIR" /usr/bin/python3.9 -B -E -s -c \
        'import asyncio, ctypes, json, queue, select, socket, threading, traceback' \
        >/dev/null 2>&1 || { log "/usr/bin/python3.9 does not run in $DIR"; return 1; }
}

# python3.9-venv (ensurepip, and the pip wheel it puts in a venv): a fresh
# venv in which tests/test_wheel.py installs the wheel.  Best effort: that
# test skips without it.
venv_pkgs() {
    chroot "$DIR" /usr/bin/python3.9 -c 'import ensurepip' >/dev/null 2>&1 && return 0
    log "installing python3.9-venv in $DIR"
    cp /etc/resolv.conf "$DIR/etc/resolv.conf" 2>/dev/null || true
    { chroot "$DIR" apt-get update -qq && \
      chroot "$DIR" apt-get install -y -qq --no-install-recommends python3.9-venv; } \
        >"$DIR.venv.log" 2>&1 \
        || log "cannot install python3.9-venv (see $DIR.venv.log): the wheel's bullseye test skips"
}

if [ -f "$MARKER" ] && verify; then
    mount_proc
    mount_shm
    venv_pkgs
    log "ready: $DIR"
    exit 0
fi
rm -f "$MARKER"
if ! command -v debootstrap >/dev/null 2>&1; then
    log "installing debootstrap"
    apt-get update -qq && apt-get install -y -qq debootstrap >/dev/null \
        || die "cannot install debootstrap"
fi
if mountpoint -q "$DIR/proc" 2>/dev/null; then
    umount "$DIR/proc" || true
fi
MIRROR=$(find_mirror)
mkdir -p "$DIR"
log "debootstrap bullseye into $DIR from $MIRROR (takes a few minutes)"
debootstrap --variant=minbase --include="$PKGS" bullseye "$DIR" "$MIRROR" \
    >"$DIR.debootstrap.log" 2>&1 \
    || die "debootstrap failed, see $DIR.debootstrap.log"
verify || die "chroot $DIR is incomplete"
mount_proc
mount_shm
chroot "$DIR" /usr/bin/python3.9 -c 'import sys; print(sys.executable, sys.version.split()[0])' \
    >"$MARKER.tmp"
mv "$MARKER.tmp" "$MARKER"
venv_pkgs
log "ready: $DIR"
