# repro — see README.md. `make demo` and `make test` are the two commands a new user needs.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
CARGO ?= cargo
REPRO := ./target/release/repro

include sim/sim.mk

.PHONY: build demo test test-podman lint fmt clean-docker bench man completions

## build: the repro binary and the k3s stand-in (static binary for the FROM-scratch image)
build: sim
	$(CARGO) build --release -p repro

## demo: build everything, then run etcd-split on the stand-in for a buggy and a fixed k3s version
demo: build
	$(REPRO) sim build --k3s-version v1.33.4+k3s1,v1.33.5+k3s1
	$(REPRO) run etcd-split --sim --k3s-version v1.33.4+k3s1 --expect reproduced
	$(REPRO) run etcd-split --sim --k3s-version v1.33.5+k3s1 --expect fixed

## test: the whole suite — unit tests, then the integration-test binaries one after another:
## tests/suite (no Docker: snapshots, CLI), tests/e2e (Docker, two runs at a time), tests/faults;
## then the Podman subset, and last scripts/leftovers.sh: it fails naming every container, network
## or volume labelled io.repro.managed=true still on the Docker host that was not there before the
## suite began (`--record` at the start: a kept run of yours is named, not counted), so every run
## of the suite proves it left nothing (on an engine it had to itself).
## The systemd base image (cached; debootstrap as root the first time) is what the RKE2
## end-to-end tests' node images are built on (tests/e2e/rke2.rs, docs/systemd-nodes.md).
test: sim systemd-base lint
	mkdir -p target && scripts/leftovers.sh --record target/leftovers-before.txt
	$(CARGO) test --workspace --lib --bins --tests -- --test-threads=2 2>&1 | tee target/test-output.log
	$(MAKE) --no-print-directory test-podman 2>&1 | tee -a target/test-output.log
	scripts/leftovers.sh --except target/leftovers-before.txt 2>&1 | tee -a target/test-output.log
	@awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($$i ~ /^passed;?$$/) p += $$(i-1); if ($$i ~ /^failed;?$$/) f += $$(i-1) } } \
	  END { printf "total: %d passed, %d failed\n", p, f; exit (f > 0) }' target/test-output.log

## test-podman: the end-to-end subset on Podman — runs of every shipped check, an interrupt and
## its cleanup, matrices — against a private Podman API service (scripts/podman-service.sh: its own
## socket, storage and CONTAINERS_CONF under PODMAN_DIR), stopped afterwards. The stand-in's
## images are built into it once, before the tests. docs/podman.md.
PODMAN_DIR ?= $(CURDIR)/target/podman
PODMAN_TESTS := run::every_shipped_check_has_one_verdict_under_both_config_sources \
  run::etcd_split_reproduces_on_buggy_version run::etcd_split_fixed_on_fixed_version \
  run::interrupt_mid_run_cleans_up_and_exits_130 \
  matrix::interrupting_a_matrix_removes_its_clusters_and_exits_130 \
  json_output::matrix_summary_as_json \
  restore::explore_restores_by_default_on_docker_and_on_podman \
  restore::etcd_split_finds_the_same_with_and_without_restore
test-podman: sim
	$(CARGO) build -p repro
	export REPRO_PODMAN_DIR=$(PODMAN_DIR); \
	eval "$$(scripts/podman-service.sh start)" && \
	$(CARGO) run --quiet -p repro -- sim build --k3s-version v1.32.8+k3s1,v1.33.4+k3s1,v1.33.5+k3s1 && \
	REPRO_TEST_ENGINE=podman $(CARGO) test -p repro --test e2e -- --exact --test-threads=2 $(PODMAN_TESTS); \
	rc=$$?; scripts/podman-service.sh stop; exit $$rc

## lint: formatting and clippy, warnings are errors
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

## bench: repro's speed against the Docker floor and a docker-CLI script, on the stand-in
## (figures, not assertions): writes target/bench/bench.json and prints a table.
## BENCH_ARGS="--runs 3 --skip-matrix" for a quicker look.
bench: build
	$(CARGO) run --release -p repro-bench -- $(BENCH_ARGS)
	$(CARGO) run --release --example inspect_bench
	$(CARGO) run --release --example redact_bench

## clean-docker: remove everything repro runs left on this Docker host
clean-docker: build
	$(REPRO) clean --all

## man: man pages for repro and every command into target/man (`man -l target/man/repro.1`)
man:
	$(CARGO) run --quiet -p repro -- man --out target/man

## completions: shell completion scripts into target/completions (bash, zsh, fish)
completions:
	mkdir -p target/completions
	$(CARGO) run --quiet -p repro -- completions bash > target/completions/repro.bash
	$(CARGO) run --quiet -p repro -- completions zsh > target/completions/_repro
	$(CARGO) run --quiet -p repro -- completions fish > target/completions/repro.fish
