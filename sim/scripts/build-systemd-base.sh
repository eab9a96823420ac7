#!/bin/sh
# Builds repro.local/systemd-base:bookworm: a Debian bookworm rootfs with
# systemd as PID 1, for nodes that run their distribution as a systemd unit
# (RKE2's own Docker tests do). It boots UNPRIVILEGED on a cgroup-v1 Docker
# 20.10 host (see docs/systemd-nodes.md):
#   docker run -d --tmpfs /run --tmpfs /run/lock \
#     -v /sys/fs/cgroup:/sys/fs/cgroup:ro repro.local/systemd-base:bookworm
# (the image carries STOPSIGNAL SIGRTMIN+3, systemd's "halt" signal).
#
#   usage: sim/scripts/build-systemd-base.sh [--force]
#
# Two caches, so the slow step (debootstrap, minutes) runs once per host:
# - the image: skipped when it exists with this script's fingerprint label
#   (the script's own sha256 and the package list);
# - the rootfs tarball under ${REPRO_CACHE:-target/cache}/systemd-base/, keyed
#   by what debootstrap is given, so a build after `docker rmi` only imports
#   (and the imported rootfs is kept as repro.local/systemd-base-rootfs:KEY).
# Needs root (debootstrap makes device nodes); installs debootstrap with apt
# when it is missing.
set -eu

suite=bookworm
variant=minbase
packages=systemd,systemd-sysv,dbus
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
ref=repro.local/systemd-base:$suite
# Bump when the rootfs is made differently with the same debootstrap inputs.
rootfs_rev=1

force=0
case "${1:-}" in
    --force) force=1 ;;
    "") ;;
    *) echo "usage: $0 [--force]" >&2; exit 2 ;;
esac

here=$(cd "$(dirname "$0")/../.." && pwd)
self="$here/sim/scripts/build-systemd-base.sh"
script_hash=$(sha256sum "$self" | cut -c1-16)
fingerprint="script-$script_hash packages-$packages"
started=$(date +%s)
elapsed() { echo "$(( $(date +%s) - started ))s"; }

have=$(docker image inspect --format '{{ index .Config.Labels "repro.systemd-base.fingerprint" }}' "$ref" 2>/dev/null || true)
if [ "$force" = 0 ] && [ "$have" = "$fingerprint" ]; then
    echo "$ref is up to date ($fingerprint)"
    exit 0
fi

cache=${REPRO_CACHE:-$here/target/cache}/systemd-base
arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)
rootfs_key=$(printf '%s\n' "$suite" "$variant" "$packages" "$mirror" "$arch" "$rootfs_rev" | sha256sum | cut -c1-16)
tarball="$cache/rootfs-$suite-$arch-$rootfs_key.tar"
mkdir -p "$cache"

if [ "$force" = 1 ] || [ ! -s "$tarball" ]; then
    if ! command -v debootstrap >/dev/null 2>&1; then
        echo "installing debootstrap with apt"
        apt-get install -y -q debootstrap >/dev/null
    fi
    dir=$(mktemp -d "$cache/rootfs.XXXXXX")
    trap 'rm -rf "$dir" "$tarball.part"' EXIT INT TERM
    echo "debootstrap $suite ($variant, +$packages) from $mirror"
    if ! debootstrap --variant="$variant" --include="$packages" --arch="$arch" \
        "$suite" "$dir" "$mirror" >"$dir.log" 2>&1; then
        tail -n 30 "$dir.log" >&2
        rm -f "$dir.log"
        exit 1
    fi
    rm -f "$dir.log"
    # A container gets its machine id from the engine at boot; an empty file
    # (not a missing one) tells systemd this is not a first boot to "set up".
    : > "$dir/etc/machine-id"
    # Nothing on this image logs in through a terminal: a getty on the
    # console would only add noise to `docker logs`.
    ln -sf /dev/null "$dir/etc/systemd/system/getty@.service"
    ln -sf /dev/null "$dir/etc/systemd/system/console-getty.service"
    rm -rf "$dir/var/cache/apt/archives/"*.deb "$dir/var/lib/apt/lists/"*
    echo "rootfs made in $(elapsed); caching $tarball"
    tar --numeric-owner -C "$dir" -cf "$tarball.part" .
    mv "$tarball.part" "$tarball"
    rm -rf "$dir"
    trap - EXIT INT TERM
else
    echo "using cached rootfs $tarball"
fi

# `docker import` does not take STOPSIGNAL: the rootfs is imported as an
# image of its own (kept, keyed like the tarball: an edit of this script then
# costs a build, not a 150 MB import), and a short build on it sets the rest.
rootfs_ref="repro.local/systemd-base-rootfs:$rootfs_key"
if [ "$force" = 1 ] || ! docker image inspect "$rootfs_ref" >/dev/null 2>&1; then
    docker import "$tarball" "$rootfs_ref" >/dev/null
fi
ctx=$(mktemp -d "${TMPDIR:-/tmp}/repro-systemd-base.XXXXXX")
trap 'rm -rf "$ctx"' EXIT INT TERM
# journald drops a unit's lines past a burst (10000 per 30s, scaled by free
# disk space); a k3s/rke2 boot can flood, and the journal is the evidence.
mkdir -p "$ctx/journald.conf.d"
printf '[Journal]\nRateLimitIntervalSec=0\nRateLimitBurst=0\n' > "$ctx/journald.conf.d/repro.conf"
cat > "$ctx/Dockerfile" <<EOF
FROM $rootfs_ref
COPY journald.conf.d/repro.conf /etc/systemd/journald.conf.d/repro.conf
LABEL repro.systemd-base.fingerprint="$fingerprint"
LABEL org.opencontainers.image.description="Debian $suite with systemd as PID 1, for repro's systemd nodes"
ENV container=docker
STOPSIGNAL SIGRTMIN+3
CMD ["/lib/systemd/systemd"]
EOF
if ! DOCKER_BUILDKIT=0 docker build --quiet --tag "$ref" "$ctx" >"$ctx/log" 2>&1; then
    cat "$ctx/log" >&2
    exit 1
fi
size=$(docker image inspect --format '{{.Size}}' "$ref")
echo "built $ref ($((size / 1000000)) MB) in $(elapsed)"
