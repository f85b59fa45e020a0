# Sourced by tests/setup-sid.sh and tests/setup-bullseye.sh: what every
# cached Debian chroot of the tests needs, given DIR and log/die.

mount_proc() {
    mkdir -p "$DIR/proc"
    if mountpoint -q "$DIR/proc"; then
        return 0
    fi
    mount -t proc proc "$DIR/proc" || die "cannot mount proc on $DIR/proc"
    log "mounted proc on $DIR/proc"
}

# A tmpfs on /dev/shm: glibc before 2.34 (bullseye's 2.31) finds no POSIX
# shared memory without one, and multiprocessing's locks fail (ENOSYS)
mount_shm() {
    mkdir -p "$DIR/dev/shm"
    if mountpoint -q "$DIR/dev/shm"; then
        return 0
    fi
    mount -t tmpfs -o mode=1777 shm "$DIR/dev/shm" || die "cannot mount tmpfs on $DIR/dev/shm"
    log "mounted tmpfs on $DIR/dev/shm"
}

# the first non-security URI of the machine's apt sources
find_mirror() {
    uri=""
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        uri=$(sed -n 's/^[[:space:]]*URIs:[[:space:]]*//p' "$f" | tr -s ' \t' '\n' \
              | grep -v -e '^$' -e 'security' | head -n1)
        [ -n "$uri" ] && break
    done
    if [ -z "$uri" ]; then
        for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
            [ -f "$f" ] || continue
            uri=$(sed -n 's/^[[:space:]]*deb[[:space:]]\{1,\}\(\[[^]]*\][[:space:]]\{1,\}\)\{0,1\}\([^[:space:]]\{1,\}\).*/\2/p' "$f" \
                  | grep -v security | head -n1)
            [ -n "$uri" ] && break
        done
    fi
    [ -n "$uri" ] || die "no apt mirror found in /etc/apt/sources.list{,.d}"
    echo "$uri"
}
