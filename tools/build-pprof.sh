#!/bin/sh
# Build the pprof tool offline from Debian's golang-github-google-pprof-dev
# (tools/install-deps.sh installs it and golang-go), so the tests can check
# that pprof reads our profiles: tools/build-pprof.sh [OUTPUT]
# Prints the binary's path; does nothing but that if it is already built.
set -eu
out=${1:-/var/cache/pystack-dump/pprof/pprof}
gopath=/usr/share/gocode
mkdir -p "$(dirname "$out")"
# One build at a time: the suite's workers may all ask at once.
exec 9>"$out.lock"
flock 9
if [ -x "$out" ]; then
	echo "$out"
	exit 0
fi
if [ ! -f "$gopath/src/github.com/google/pprof/pprof.go" ]; then
	echo "build-pprof: $gopath has no pprof sources;" \
		"apt-get install golang-github-google-pprof-dev" >&2
	exit 1
fi
command -v go >/dev/null || {
	echo "build-pprof: no go; apt-get install golang-go" >&2
	exit 1
}
# GOPATH mode over Debian's source packages: no module proxy, no network.
# The build cache is thrown away: the binary is what is kept.
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
GOPATH=$gopath GO111MODULE=off GOFLAGS='' GOPROXY=off GOTOOLCHAIN=local \
	GOCACHE=$cache go build -o "$out.tmp" github.com/google/pprof
mv "$out.tmp" "$out"
echo "$out"
