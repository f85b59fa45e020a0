#!/bin/sh
# Unpack Debian packages of another architecture or suite, with everything
# they depend on, into a directory: a sysroot to cross-build against or to
# run arm64 programs in under qemu. Never touches the host's dpkg: apt runs
# on a private state (an empty status file, so it fetches the whole
# dependency closure) and the .debs are unpacked with dpkg-deb -x, because
# installing multiarch -dev packages would upgrade host packages.
#
#   tools/debs-sysroot.sh ARCH SUITE DIR PACKAGE...
#
# PYD_DEBS_NODEPS=1 unpacks the named packages alone (a static binary).
# The mirror is the one this machine's own apt sources use. Needs root.
set -eu
[ $# -ge 4 ] || { echo "usage: $0 ARCH SUITE DIR PACKAGE..." >&2; exit 2; }
arch=$1 suite=$2 dir=$3
shift 3
log() { echo "debs-sysroot: $*" >&2; }

# the first non-security URI of the machine's apt sources
find_mirror() {
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        sed -n 's/^[[:space:]]*URIs:[[:space:]]*//p' "$f" | tr -s ' \t' '\n' \
            | grep -v -e '^$' -e security | head -n1
    done | head -n1
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        sed -n 's/^[[:space:]]*deb[[:space:]]\{1,\}\(\[[^]]*\][[:space:]]\{1,\}\)\{0,1\}\([^[:space:]]\{1,\}\).*/\2/p' "$f" \
            | grep -v security | head -n1
    done | head -n1
}
mirror=$(find_mirror | head -n1)
[ -n "$mirror" ] || { log "no apt mirror in /etc/apt/sources.list{,.d}"; exit 1; }

apt=$dir.apt
mkdir -p "$apt/etc/apt/apt.conf.d" "$apt/etc/apt/preferences.d" "$apt/etc/apt/sources.list.d" \
    "$apt/var/lib/apt/lists/partial" "$apt/var/cache/apt/archives/partial" "$apt/var/lib/dpkg" "$dir"
: >"$apt/var/lib/dpkg/status"
echo "deb [arch=$arch signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main" \
    >"$apt/etc/apt/sources.list"
# the mirror's sid is a frozen snapshot: its Release file is past Valid-Until
cat >"$apt/apt.conf" <<CONF
Dir "$apt/";
Dir::State::status "$apt/var/lib/dpkg/status";
APT::Architecture "$arch";
APT::Architectures { "$arch"; };
APT::Install-Recommends "false";
Acquire::Check-Valid-Until "false";
Acquire::Languages "none";
CONF
export APT_CONFIG="$apt/apt.conf"
log "$arch $suite from $mirror: $*"
apt-get -qq update >"$apt/log" 2>&1 || { cat "$apt/log" >&2; exit 1; }
rm -f "$apt"/var/cache/apt/archives/*.deb
if [ "${PYD_DEBS_NODEPS:-}" = 1 ]; then
    (cd "$apt/var/cache/apt/archives" && apt-get -qq download "$@") >>"$apt/log" 2>&1
else
    apt-get -qq -y --download-only install "$@" >>"$apt/log" 2>&1
fi || { cat "$apt/log" >&2; exit 1; }
for deb in "$apt"/var/cache/apt/archives/*.deb; do
    dpkg-deb -x "$deb" "$dir"
done
# absolute symlinks point into the host: make them relative to the sysroot
find "$dir" -type l | while read -r link; do
    target=$(readlink "$link")
    case $target in
    /*) ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$dir$target")" "$link" ;;
    esac
done
# sid's packages assume merged /usr
for d in bin lib sbin; do
    [ -e "$dir/$d" ] || [ ! -d "$dir/usr/$d" ] || ln -s "usr/$d" "$dir/$d"
done
log "unpacked $(ls "$apt"/var/cache/apt/archives/*.deb | wc -l) packages into $dir"
