#!/bin/sh
# Create (if missing) a Debian sid chroot with CPython 3.13, 3.14 and 3.15,
# release and debug builds, for the tests (tests/run.sh); mount /proc inside it.
#
#   tests/setup-sid.sh [DIR]
#
# DIR defaults to $PYD_SID_DIR, else /var/cache/pystack-dump/sid.
# Idempotent: a chroot that is already complete is only checked (and /proc
# mounted if it is not). The marker file DIR/.pyd-sid-ready is written only
# after every interpreter has been verified to run. Needs root.
# The apt mirror is the one this machine's own apt sources use.
set -eu

DIR=${1:-${PYD_SID_DIR:-/var/cache/pystack-dump/sid}}
MARKER="$DIR/.pyd-sid-ready"
VERSIONS="3.13 3.14 3.15"
PKGS=""
for v in $VERSIONS; do
    PKGS="$PKGS,python$v-minimal,libpython$v-stdlib,python$v-dbg"
done
PKGS=${PKGS#,}

log() { echo "setup-sid: $*" >&2; }
die() { log "error: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (debootstrap, chroot, mount)"

# every interpreter (release and debug) runs and has what the targets import
verify() {
    for v in $VERSIONS; do
        for exe in "python$v" "python${v}d"; do
            [ -x "$DIR/usr/bin/$exe" ] || { log "missing $DIR/usr/bin/$exe"; return 1; }
            chroot "$DIR" "/usr/bin/$exe" -B -E -s -c \
                'import asyncio, ctypes, json, queue, select, socket, threading, traceback' \
                >/dev/null 2>&1 || { log "/usr/bin/$exe does not run in $DIR"; return 1; }
        done
    done
    chroot "$DIR" /usr/bin/python3.15 -B -E -s -c 'import profiling.sampling.dump' \
        >/dev/null 2>&1 || { log "profiling.sampling missing from python3.15"; return 1; }
}

# greenlet and gevent for tests/test_greenlets.py (built for sid's default
# python3), and the headers it builds greenlet with again, with debug
# information, from the sources Debian ships; best effort: without them
# (offline, a dated index) those tests skip, and the chroot is still ready
# for the rest
GREENLET_PKGS="python3-greenlet python3-gevent libpython3.14-dev libpython3.15-dev"
install_greenlet() {
    chroot "$DIR" /usr/bin/python3.14 -B -E -c 'import greenlet, gevent' \
        >/dev/null 2>&1 && [ -f "$DIR/usr/include/python3.15/Python.h" ] &&
        return 0
    log "installing $GREENLET_PKGS into $DIR"
    [ -f /etc/resolv.conf ] && cp -L /etc/resolv.conf "$DIR/etc/resolv.conf" 2>/dev/null || true
    chroot "$DIR" /usr/bin/env DEBIAN_FRONTEND=noninteractive sh -c \
        "apt-get -o Acquire::Check-Valid-Until=false update -qq && apt-get install -y -qq $GREENLET_PKGS" \
        >"$DIR.greenlet.log" 2>&1 \
        || log "could not install $GREENLET_PKGS (see $DIR.greenlet.log): the greenlet tests will skip"
}

. "$(dirname "$0")/chroot-common.sh"

if [ -f "$MARKER" ] && verify; then
    mount_proc
    install_greenlet
    log "ready: $DIR"
    exit 0
fi
rm -f "$MARKER"

if [ ! -d "$DIR/debootstrap" ] && [ -x "$DIR/usr/bin/apt-get" ] && [ -f "$DIR/etc/debian_version" ]; then
    # a complete base system: only (re)install what is missing
    if ! verify 2>/dev/null; then
        log "installing the Python packages into the existing chroot $DIR"
        [ -f /etc/resolv.conf ] && cp -L /etc/resolv.conf "$DIR/etc/resolv.conf" 2>/dev/null || true
        chroot "$DIR" /usr/bin/env DEBIAN_FRONTEND=noninteractive sh -c \
            "apt-get update -qq && apt-get install -y -qq $(echo "$PKGS" | tr ',' ' ')" \
            >"$DIR.apt.log" 2>&1 || die "apt-get in the chroot failed, see $DIR.apt.log"
    fi
else
    if ! command -v debootstrap >/dev/null 2>&1; then
        log "installing debootstrap"
        apt-get update -qq && apt-get install -y -qq debootstrap >/dev/null \
            || die "cannot install debootstrap"
    fi
    MIRROR=$(find_mirror)
    mkdir -p "$DIR"
    # an earlier interrupted run may have left /proc mounted: unmount it first
    if mountpoint -q "$DIR/proc" 2>/dev/null; then
        umount "$DIR/proc" || true
    fi
    log "debootstrap sid into $DIR from $MIRROR (takes a few minutes)"
    debootstrap --variant=minbase --include="$PKGS" sid "$DIR" "$MIRROR" \
        >"$DIR.debootstrap.log" 2>&1 \
        || die "debootstrap failed, see $DIR.debootstrap.log"
fi

verify || die "chroot $DIR is incomplete"
mount_proc
{
    echo "created by tests/setup-sid.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    for v in $VERSIONS; do
        chroot "$DIR" "/usr/bin/python$v" -c 'import sys; print(sys.executable, sys.version.split()[0])'
    done
} >"$MARKER.tmp"
mv "$MARKER.tmp" "$MARKER"
install_greenlet
log "ready: $DIR"
