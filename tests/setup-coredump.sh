#!/bin/sh
# systemd-coredump and coredumpctl for tests/test_coredump.py, unpacked
# from Debian's package into $PYD_COREDUMP_DIR (default
# /var/cache/pystack-dump/systemd-coredump) rather than installed: the
# package's installation points kernel.core_pattern at systemd-coredump,
# which would take the kernel cores the other core tests make.  They run
# from there with the machine's systemd libraries (package systemd).
set -eu
dir=${PYD_COREDUMP_DIR:-/var/cache/pystack-dump/systemd-coredump}
[ -x "$dir/lib/systemd/systemd-coredump" ] && [ -x "$dir/usr/bin/coredumpctl" ] && exit 0
[ -x /lib/systemd/systemd-journald ] || { echo "setup-coredump: no systemd-journald (package systemd)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get -qq -o APT::Sandbox::User=root download systemd-coredump)
rm -rf "$dir.new"
dpkg-deb -x "$tmp"/systemd-coredump_*.deb "$dir.new"
rm -rf "$dir"
mv "$dir.new" "$dir"
