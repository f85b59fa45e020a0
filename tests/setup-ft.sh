#!/bin/sh
# Build (if missing) CPython 3.15.0a0 from ../shared/cpython-ft twice, for the
# tests (tests/run.sh): free-threaded (--disable-gil, python3.15t) and, as a
# control, the default build of the same tree (python3.15). A failure seen on
# both is a 3.15.0a0 difference, not a free-threading one.
#
#   tests/setup-ft.sh [TARBALL [DIR]]
#
# TARBALL defaults to $PYD_FT_TARBALL, else ../shared/cpython-ft/cpython-3.15.0a0.tar.xz
# next to the checkout; DIR to $PYD_FT_DIR, else /var/cache/pystack-dump/ft.
# The builds are installed under DIR/ft and DIR/default; each gets a marker
# (DIR/KIND/.pyd-ft-ready) only once its interpreter runs what the targets
# import. Idempotent: a ready build is only checked. Both are built in
# parallel, one core each: 665 s in CI beside its own builds on 2 cores,
# the last of its setups to end (tests/README.md, "CI").
# Without the tarball it says so and exits 0: the free-threaded tests skip.
set -eu

HERE=$(cd "$(dirname "$0")/.." && pwd)
TARBALL=${1:-${PYD_FT_TARBALL:-$HERE/../shared/cpython-ft/cpython-3.15.0a0.tar.xz}}
DIR=${2:-${PYD_FT_DIR:-/var/cache/pystack-dump/ft}}

log() { echo "setup-ft: $*" >&2; }
die() { log "error: $*"; exit 1; }

IMPORTS='import asyncio, ctypes, hashlib, hmac, json, multiprocessing, queue, random, select, socket, subprocess, tempfile, threading, traceback'

# C modules no target imports, left out of both builds (618 -> 535 s for
# one build, side by side on a busy machine): decimal, the CJK codecs, sqlite3, tkinter, curses, dbm,
# readline, XML; and the HACL* hashes that OpenSSL's _hashlib provides to
# hashlib and hmac (md5, sha1, sha3, HMAC).  _sha2 and _blake2 stay:
# random imports _sha2, and hashlib takes BLAKE2 from no one else.
NO_MODULES='_decimal _codecs_cn _codecs_hk _codecs_iso2022 _codecs_jp _codecs_kr _codecs_tw
_multibytecodec _sqlite3 _tkinter _curses _curses_panel _dbm _gdbm readline _elementtree
pyexpat _md5 _sha1 _sha3 _hmac'

# KIND EXE: the installed interpreter runs the targets' imports, saying
# nothing, and is the kind of build it should be
verify() {
    v_exe="$DIR/$1/bin/$2"
    [ -x "$v_exe" ] || return 1
    want=True
    [ "$1" = ft ] && want=False
    # stderr too: hashlib logs each hash it has no code for
    got=$("$v_exe" -B -E -s -c "$IMPORTS; import sys; print(sys._is_gil_enabled())" 2>&1) \
        || return 1
    [ "$got" = "$want" ]
}

# KIND CONFIGURE-FLAGS EXE: unpack, configure, make, install into DIR/KIND
build() {
    kind=$1 flags=$2 exe=$3
    marker="$DIR/$kind/.pyd-ft-ready"
    if verify "$kind" "$exe"; then
        [ -f "$marker" ] || ready "$kind" "$exe"
        return 0
    fi
    rm -f "$marker"
    src="$DIR/src-$kind"
    rm -rf "$src" "$DIR/$kind"
    mkdir -p "$src"
    tar -xJf "$TARBALL" -C "$src" --strip-components=1 || return 1
    log "building $kind CPython in $src (log: $DIR/$kind.log)"
    # -g1, not the -g of configure's default OPT: the symbols and line
    # tables gdb, lldb and --native read, without the types and locals no
    # test reads (a fifth of a build's time: 348 -> 278 s side by side).
    # No test modules: the targets import none, and Lib/test is half the
    # stdlib that make install compiles three times over (its C modules,
    # the time of a build of the rest).
    off=
    for m in $NO_MODULES; do off="$off py_cv_module_$m=n/a"; done
    ( cd "$src" &&
      env $off OPT="-g1 -O3 -Wall" ./configure $flags --prefix="$DIR/$kind" CFLAGS=-g1 \
          --without-ensurepip --disable-test-modules &&
      make -j1 && make install ) >"$DIR/$kind.log" 2>&1 || return 1
    verify "$kind" "$exe" || return 1
    rm -rf "$src"
    ready "$kind" "$exe"
}

# KIND EXE: mark a verified build ready
ready() {
    "$DIR/$1/bin/$2" -c 'import sys; print(sys.executable, sys.version)' \
        >"$DIR/$1/.pyd-ft-ready"
    log "ready: $DIR/$1/bin/$2"
}

if [ ! -f "$TARBALL" ]; then
    log "no $TARBALL: the free-threaded tests will be skipped"
    exit 0
fi
command -v make >/dev/null 2>&1 || die "make is missing (tools/install-deps.sh installs it)"
mkdir -p "$DIR"
build ft --disable-gil python3.15t & ft=$!
build default "" python3.15 & def=$!
status=0
wait $ft || { log "the free-threaded build failed, see $DIR/ft.log"; status=1; }
wait $def || { log "the default build failed, see $DIR/default.log"; status=1; }
exit $status
