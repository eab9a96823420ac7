#!/bin/sh
# The artifact-path install of rke2's install.sh (INSTALL_RKE2_ARTIFACT_PATH), the same steps
# in the same order, for repro's stand-in node images (NOT rke2's script: a subset of it, so the
# stand-in is installed the way rke2 is). rke2's install.sh at v1.33.5+rke2r1
# (docs/rke2-behaviour.md §9):
#   setup_env         L104-L147  INSTALL_RKE2_TYPE, INSTALL_RKE2_TAR_PREFIX (/usr/local unless
#                                read-only or a mount point: /opt/rke2)
#   stage_local_checksums  L340-L350  sha256sum-${ARCH}.txt, the tarball's expected sum (and
#                                the images tarball's, when the artifact path holds one)
#   stage_local_airgap_tarball, verify_airgap_tarball, install_airgap_tarball (the zst form:
#                                checked against the same sum file, moved into
#                                INSTALL_RKE2_AGENT_IMAGES_DIR; v1.32.5's L352-L445, do_install_tar)
#   stage_local_tarball, verify_tarball, unpack_tarball (L379-L391: `tar xzf -C prefix`; a
#                                non-default prefix rewrites /usr/local in the units and moves
#                                them to /etc/systemd/system)
#   systemctl daemon-reload unless INSTALL_RKE2_SKIP_RELOAD
# Not here: the RPM method (never chosen with an artifact path, L128), downloads, and the gzip
# form of the images tarball (releases with zst only).
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
    TMP_AIRGAP_TARBALL=${TMP_DIR}/rke2-images.tarball
    INSTALL_RKE2_AGENT_IMAGES_DIR=${INSTALL_RKE2_AGENT_IMAGES_DIR:-/var/lib/rancher/rke2/agent/images}
}

stage_local_checksums() {
    info "staging local checksums from ${INSTALL_RKE2_ARTIFACT_PATH}/sha256sum-${ARCH}.txt"
    cp -f "${INSTALL_RKE2_ARTIFACT_PATH}/sha256sum-${ARCH}.txt" "${TMP_CHECKSUMS}"
    SHA256_TARBALL=$(grep "rke2.${SUFFIX}.tar.gz" "${TMP_CHECKSUMS}" | awk '{print $1}')
    [ -n "${SHA256_TARBALL}" ] || fatal "no checksum for rke2.${SUFFIX}.tar.gz"
    AIRGAP_CHECKSUM_EXPECTED=
    if [ -f "${INSTALL_RKE2_ARTIFACT_PATH}/rke2-images.${SUFFIX}.tar.zst" ]; then
        AIRGAP_CHECKSUM_EXPECTED=$(grep "rke2-images.${SUFFIX}.tar.zst" "${TMP_CHECKSUMS}" | awk '{print $1}')
    fi
}

# rke2's stage_local_airgap_tarball, verify_airgap_tarball and install_airgap_tarball (the zst
# form): the images tarball is checked against the same sum file and moved into
# INSTALL_RKE2_AGENT_IMAGES_DIR.
stage_local_airgap_tarball() {
    if [ -f "${INSTALL_RKE2_ARTIFACT_PATH}/rke2-images.${SUFFIX}.tar.zst" ]; then
        info "staging zst airgap image tarball from ${INSTALL_RKE2_ARTIFACT_PATH}/rke2-images.${SUFFIX}.tar.zst"
        cp -f "${INSTALL_RKE2_ARTIFACT_PATH}/rke2-images.${SUFFIX}.tar.zst" "${TMP_AIRGAP_TARBALL}"
    fi
}

verify_airgap_tarball() {
    [ -n "${AIRGAP_CHECKSUM_EXPECTED}" ] || return 0
    info "verifying airgap tarball"
    AIRGAP_CHECKSUM_ACTUAL=$(sha256sum "${TMP_AIRGAP_TARBALL}" | awk '{print $1}')
    [ "${AIRGAP_CHECKSUM_EXPECTED}" = "${AIRGAP_CHECKSUM_ACTUAL}" ] ||
        fatal "download sha256 does not match ${AIRGAP_CHECKSUM_EXPECTED}, got ${AIRGAP_CHECKSUM_ACTUAL}"
}

install_airgap_tarball() {
    [ -n "${AIRGAP_CHECKSUM_EXPECTED}" ] || return 0
    mkdir -p "${INSTALL_RKE2_AGENT_IMAGES_DIR}"
    info "installing airgap tarball to ${INSTALL_RKE2_AGENT_IMAGES_DIR}"
    mv -f "${TMP_AIRGAP_TARBALL}" "${INSTALL_RKE2_AGENT_IMAGES_DIR}/rke2-images.${SUFFIX}.tar.zst"
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
stage_local_airgap_tarball
stage_local_tarball
verify_airgap_tarball
install_airgap_tarball
verify_tarball
unpack_tarball
rm -rf "${TMP_DIR}"
if [ -z "${INSTALL_RKE2_SKIP_RELOAD:-}" ]; then
    systemctl daemon-reload
fi
