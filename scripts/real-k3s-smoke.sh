#!/usr/bin/env bash
# Real-k3s smoke test (the nightly's `real-k3s-smoke` job, on a cgroup-v2 ubuntu-24.04 runner):
# etcd-split and metrics-order on v1.33.4+k3s1 (must reproduce k3s #12753) and v1.33.5+k3s1
# (must be fixed). Every run leaves its results folder under RESULTS_DIR.
#
#   scripts/real-k3s-smoke.sh [RESULTS_DIR] [extra `repro run` arguments…]
#
# REPRO names the binary (default ./target/release/repro). The test suite runs exactly these
# commands with `--sim` as the extra argument (tests/e2e/run.rs), since real images cannot be pulled
# there. Exits with the worst code of the four runs (130 > 3 > 1 > 4 > 0, as `repro matrix`).
set -uo pipefail

repro=${REPRO:-./target/release/repro}
results=${1:-results}
shift $(( $# > 0 ? 1 : 0 ))
extra=("$@")

rank() { case $1 in 130) echo 5 ;; 3) echo 4 ;; 1) echo 3 ;; 4) echo 2 ;; 0) echo 0 ;; *) echo 4 ;; esac; }
worst=0
for check in etcd-split metrics-order; do
  for pair in "v1.33.4+k3s1 reproduced" "v1.33.5+k3s1 fixed"; do
    read -r version expect <<<"$pair"
    echo "== repro run $check --k3s-version $version --expect $expect ${extra[*]}"
    "$repro" run "$check" --k3s-version "$version" --expect "$expect" --results "$results" \
      --progress never "${extra[@]}"
    code=$?
    echo "== exit $code"
    if [ "$code" -eq 2 ]; then
      exit 2 # bad usage: the other runs would fail the same way
    fi
    if [ "$(rank "$code")" -gt "$(rank "$worst")" ]; then worst=$code; fi
  done
done
exit "$worst"
