# Make targets for repro's k3s stand-in (NOT k3s); included by the top-level
# Makefile (`include sim/sim.mk`).
#   make sim          static `k3s` binary for FROM-scratch images
#   make sim-images   repro.local/k3s-sim:<tag> for the versions below

SIM_TARGET ?= x86_64-unknown-linux-gnu
SIM_TARGET_DIR ?= $(or $(CARGO_TARGET_DIR),target)
SIM_BIN ?= $(SIM_TARGET_DIR)/$(SIM_TARGET)/release/k3s
SIM_VERSIONS ?= v1.33.4+k3s1 v1.33.5+k3s1 v1.32.8+k3s1 v1.32.9+k3s1 v1.34.1+k3s1 v1.31.12+k3s1 v1.31.13+k3s1

.PHONY: sim sim-images

# An explicit --target keeps +crt-static away from build scripts and proc macros.
sim:
	RUSTFLAGS="-C target-feature=+crt-static" cargo build -p k3s-sim --release --target $(SIM_TARGET)

sim-images: sim
	sim/scripts/build-images.sh $(SIM_BIN) $(SIM_VERSIONS)

# repro.local/systemd-base:bookworm, the systemd node base image (docs/systemd-nodes.md);
# cached by its fingerprint label and the rootfs tarball under target/cache.
.PHONY: systemd-base
systemd-base:
	sim/scripts/build-systemd-base.sh
