#!/bin/sh
# Builds repro.local/k3s-sim:<tag> images of the k3s stand-in (NOT k3s) with
# the docker CLI, one per k3s version, from the static binary.
#   usage: sim/scripts/build-images.sh BINARY VERSION...
#   e.g.   sim/scripts/build-images.sh target/x86_64-unknown-linux-gnu/release/k3s v1.33.4+k3s1
# The build context is the same as repro's src/sim_image.rs makes in memory.
set -eu

if [ "$#" -lt 2 ]; then
    echo "usage: $0 BINARY VERSION..." >&2
    exit 2
fi
binary=$1
shift
if [ ! -x "$binary" ]; then
    echo "error: no k3s stand-in binary at $binary; run \`make sim\` first" >&2
    exit 1
fi
here=$(cd "$(dirname "$0")/.." && pwd)
ctx=$(mktemp -d "${TMPDIR:-/tmp}/repro-sim-ctx.XXXXXX")
trap 'rm -rf "$ctx" "$ctx.log"' EXIT INT TERM

mkdir -p "$ctx/rootfs/bin" "$ctx/rootfs/etc" "$ctx/rootfs/tmp"
chmod 1777 "$ctx/rootfs/tmp"
cp "$binary" "$ctx/rootfs/bin/k3s"
chmod 0755 "$ctx/rootfs/bin/k3s"
ln -s k3s "$ctx/rootfs/bin/kubectl"
ln -s k3s "$ctx/rootfs/bin/rm"
ln -s k3s "$ctx/rootfs/bin/cat"
cp "$here/image/nsswitch.conf" "$ctx/rootfs/etc/nsswitch.conf"

# Same fingerprint as src/sim_image.rs: binary size-mtime, template revision.
rev=$(sed -n 's/^# template-rev: *//p' "$here/image/Dockerfile.in")
fingerprint="$(stat -c %s "$binary")-$(stat -c %Y "$binary")-t$rev"

for version in "$@"; do
    tag=$(printf '%s' "$version" | tr '+' '-')
    ref="${REPRO_SIM_REPOSITORY:-repro.local/k3s-sim}:$tag"
    printf 'PRETTY_NAME="repro k3s stand-in (NOT k3s) %s"\n' "$version" > "$ctx/rootfs/etc/os-release"
    sed -e "s/@VERSION@/$version/g" -e "s/@FINGERPRINT@/$fingerprint/g" \
        "$here/image/Dockerfile.in" > "$ctx/Dockerfile"
    echo "building $ref"
    # The legacy builder (all a Docker 20.10 engine without buildx offers)
    # prints a deprecation banner on every build: show output only on failure.
    if ! DOCKER_BUILDKIT=0 docker build --quiet --tag "$ref" "$ctx" >"$ctx.log" 2>&1; then
        cat "$ctx.log" >&2
        rm -f "$ctx.log"
        exit 1
    fi
done
rm -f "$ctx.log"
