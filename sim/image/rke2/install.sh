#!/bin/sh
# The artifact-path install of rke2's install.sh (INSTALL_RKE2_ARTIFACT_PATH), the same steps
# in the same order, for repro's stand-in node images (NOT rke2's script: a subset of it, so the
# stand-in is installed the way rke2 is). rke2's install.sh at v1.33.5+rke2r1
# (docs/rke2-behaviour.md §9):
#   setup_env         L104-L147  INSTALL_RKE2_TYPE, INSTALL_RKE2_TAR_PREFIX (/usr/local unless
#                                read-only or a mount point: /opt/rke2)
#   stage_local_checksums  L340-L350  sha256sum-${ARCH}.txt, the tarball's expected sum
#   stage_local_tarball, verify_tarball, unpack_tarball (L379-L391: `tar xzf -C prefix`; a
#                                non-default prefix rewrites /usr/local in the units and moves
#                                them to /etc/systemd/system)
#   systemctl daemon-reload unless INSTALL_RKE2_SKIP_RELOAD
# Not here: the RPM method (never chosen with an artifact path, L128), downloads, and the air-gap
# images tarball (the stand-in runs no static pods; none is in the artifact path).
set -eu

fatal() { echo "[ERROR] $*" >&2; exit 1; }
info() { echo "[INFO] $*"; }

setup_env() {
    INSTALL_RKE2_TYPE=${INSTALL_RKE2_TYPE:-${INSTALL_RKE2_EXEC:-server}}
    [ -n "${INSTALL_RKE2_ARTIFACT_PATH:-}" ] || fatal "INSTALL_RKE2_ARTIFACT_PATH is required here"
    if [ -z "${INSTALL_RKE2_TAR_PREFIX:-}" ]; then
        INSTALL_RKE2_TAR_PREFIX=/usr/local
        if ! touch /usr/local/.rke2-ro-test 2>/dev/null || mountpoint -q /usr/local 2>/dev/null; then
            INSTALL_RKE2_TAR_PREFIX=/opt/rke2
        fi
        rm -f /usr/local/.rke2-ro-test
    fi
    ARCH=amd64
    SUFFIX=linux-${ARCH}
    TMP_DIR=$(mktemp -d -t rke2-install.XXXXXXXXXX)
    TMP_CHECKSUMS=${TMP_DIR}/rke2.checksums
    TMP_TARBALL=${TMP_DIR}/rke2.tarball
}

stage_local_checksums() {
    info "staging local checksums from ${INSTALL_RKE2_ARTIFACT_PATH}/sha256sum-${ARCH}.txt"
    cp -f "${INSTALL_RKE2_ARTIFACT_PATH}/sha256sum-${ARCH}.txt" "${TMP_CHECKSUMS}"
    SHA256_TARBALL=$(grep "rke2.${SUFFIX}.tar.gz" "${TMP_CHECKSUMS}" | awk '{print $1}')
    [ -n "${SHA256_TARBALL}" ] || fatal "no checksum for rke2.${SUFFIX}.tar.gz"
}

stage_local_tarball() {
    info "staging tarball from ${INSTALL_RKE2_ARTIFACT_PATH}/rke2.${SUFFIX}.tar.gz"
    cp -f "${INSTALL_RKE2_ARTIFACT_PATH}/rke2.${SUFFIX}.tar.gz" "${TMP_TARBALL}"
}

verify_tarball() {
    info "verifying tarball"
    SHA256_TARBALL_ACTUAL=$(sha256sum "${TMP_TARBALL}" | awk '{print $1}')
    [ "${SHA256_TARBALL}" = "${SHA256_TARBALL_ACTUAL}" ] ||
        fatal "download sha256 does not match ${SHA256_TARBALL}, got ${SHA256_TARBALL_ACTUAL}"
}

unpack_tarball() {
    info "unpacking tarball file to ${INSTALL_RKE2_TAR_PREFIX}"
    mkdir -p "${INSTALL_RKE2_TAR_PREFIX}"
    tar xzf "${TMP_TARBALL}" -C "${INSTALL_RKE2_TAR_PREFIX}"
    if [ "${INSTALL_RKE2_TAR_PREFIX}" != /usr/local ]; then
        info "updating tarball contents to reflect install path"
        sed -i "s|/usr/local|${INSTALL_RKE2_TAR_PREFIX}|" \
            "${INSTALL_RKE2_TAR_PREFIX}/lib/systemd/system/rke2-"*.service
        info "moving systemd units to /etc/systemd/system"
        mv -f "${INSTALL_RKE2_TAR_PREFIX}/lib/systemd/system/rke2-"*.service /etc/systemd/system/
    fi
}

setup_env
stage_local_checksums
stage_local_tarball
verify_tarball
unpack_tarball
rm -rf "${TMP_DIR}"
if [ -z "${INSTALL_RKE2_SKIP_RELOAD:-}" ]; then
    systemctl daemon-reload
fi
