#!/bin/sh
# Cross-build everything for arm64 (aarch64) Linux: tools/build-arm64.sh [BUILDDIR [meson options...]]
#
# Sets up what it needs (as tools/install-deps.sh does, as root): Debian's
# gcc-aarch64-linux-gnu and qemu-user-static, and a sysroot of bookworm's
# arm64 -dev packages (tools/debs-sysroot.sh; $PYD_ARM64_DIR/build, by
# default /var/cache/pystack-dump/arm64/build, made once, marked ready by
# its .pyd-ready file). Then configures BUILDDIR (default build-arm64)
# with the meson cross file written next to the sysroot, and builds. Unit
# tests run under qemu through the cross file's exe_wrapper. The lldb
# plugin is built against the sysroot's arm64 liblldb 16.
set -eu
dir=${1:-build-arm64}
[ $# -gt 0 ] && shift
cd "$(dirname "$0")/.."
top=$(pwd)
base=${PYD_ARM64_DIR:-/var/cache/pystack-dump/arm64}
sys=$base/build
log() { echo "build-arm64: $*" >&2; }

if ! command -v aarch64-linux-gnu-g++ >/dev/null || ! command -v qemu-aarch64-static >/dev/null; then
	log "installing the cross compilers and qemu-user-static"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static >/dev/null
fi
pkgs="libelf-dev libdw-dev zlib1g-dev libzstd-dev liblzma-dev libbz2-dev libiberty-dev
libncurses-dev libpython3.11-dev python3.11-minimal python3-distutils liblldb-16-dev libmicrohttpd-dev libcurl4-openssl-dev"
if ! grep -qx "packages: $(echo $pkgs)" "$sys/.pyd-ready" 2>/dev/null; then
	rm -rf "$sys"
	tools/debs-sysroot.sh arm64 bookworm "$sys" $pkgs
	# gdb's JIT-reader header alone, for the gdb plugin
	(cd "$sys.apt" && APT_CONFIG=$sys.apt/apt.conf apt-get -qq download gdb &&
		dpkg-deb --fsys-tarfile gdb_*.deb | tar -x -C "$sys" ./usr/include/gdb)
	{ date -u +"made by tools/build-arm64.sh on %Y-%m-%dT%H:%M:%SZ"
	  echo "packages: $(echo $pkgs)"; } >"$sys/.pyd-ready"
fi

cross=$base/cross.ini
# meson 1.0 runs only the first word of a cross file's python: a script
printf '#!/bin/sh\nexec qemu-aarch64-static -L "%s" "%s/usr/bin/python3.11" "$@"\n' \
	"$sys" "$sys" >"$base/python3.11"
chmod +x "$base/python3.11"
# the sysroot replaces the cross compiler's own (its libc.so script names
# absolute paths that only a sysroot prefix makes right); meson's python
# module asks the arm64 interpreter itself, under qemu, for its extension
# suffix, and pkg-config for its headers
cat >"$cross" <<INI
[binaries]
c = 'aarch64-linux-gnu-gcc'
cpp = 'aarch64-linux-gnu-g++'
ar = 'aarch64-linux-gnu-ar'
strip = 'aarch64-linux-gnu-strip'
pkgconfig = 'pkg-config'
python = '$base/python3.11'
exe_wrapper = ['qemu-aarch64-static', '-L', '$sys']

[built-in options]
c_args = ['--sysroot=$sys']
c_link_args = ['--sysroot=$sys']
cpp_args = ['--sysroot=$sys']
cpp_link_args = ['--sysroot=$sys']

[properties]
sys_root = '$sys'
# for docs/meson.build, which runs the program from a script
exe_wrapper = ['qemu-aarch64-static', '-L', '$sys']
pkg_config_libdir = ['$sys/usr/lib/aarch64-linux-gnu/pkgconfig', '$sys/usr/share/pkgconfig']

[host_machine]
system = 'linux'
cpu_family = 'aarch64'
cpu = 'aarch64'
endian = 'little'
INI
if [ -f "$dir/build.ninja" ]; then
	[ $# -gt 0 ] && meson configure "$dir" "$@"
else
	meson setup "$dir" --cross-file "$cross" "$@"
fi
meson compile -C "$dir"
log "built $top/$dir"
