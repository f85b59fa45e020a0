#!/bin/sh
# Install what building and testing pystack-dump needs on Debian (as root).
set -eu
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
	gcc g++ libc6-dev meson ninja-build pkg-config libelf-dev libdw-dev libiberty-dev \
	python3 python3-dev python3-dbg debootstrap procps time util-linux gdb gdb-multiarch ca-certificates \
	zlib1g-dev libzstd-dev zstd liblzma-dev xz-utils liblz4-dev lz4 libncurses-dev libmicrohttpd-dev libcurl4-openssl-dev tmux strace valgrind zsh chromium python3-pytest python3-pytest-xdist python3-trio golang-go golang-github-google-pprof-dev \
	systemd gdbserver lldb-16 liblldb-16-dev clang libclang-rt-14-dev \
	python3-mesonpy python3-build python3-venv python3-pip patchelf \
	ccache make xz-utils libffi-dev libssl-dev libbz2-dev liblzma-dev \
	>/dev/null
echo "install-deps: done"
