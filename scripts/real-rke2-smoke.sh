#!/usr/bin/env bash
# Real-RKE2 smoke test (the nightly's `real-rke2-smoke` job: an ubuntu-24.04 runner, privileged
# Docker): rancher/rke2#8465 on the last buggy and the first fixed release of 1.32 — metrics-order
# and etcd-split on v1.32.8+rke2r1 (must reproduce) and v1.32.9+rke2r1 (must be fixed, rancher/rke2
# #8876). Every run leaves its results folder under RESULTS_DIR.
#
#   scripts/real-rke2-smoke.sh [--print] [RESULTS_DIR] [extra `repro run` arguments…]
#
# The host must run privileged containers with systemd as PID 1 (rke2's own tests/docker do the
# same) and have ~3 GiB of memory per server: the checks' etcd-split topology has 4 servers, so
# 12 GiB; repro's capacity check refuses a smaller host with exit 3 before it creates anything.
# Extra arguments go to every `repro run` (`--image`, `--keep`; `--sim` runs the stand-in as
# rke2, once it plays rke2). `--print` prints the commands and runs nothing.
#
# REPRO names the binary (default ./target/release/repro). Exits with the worst code of the runs
# (130 > 3 > 1 > 4 > 0, as `repro matrix`); exit 2 (bad usage) stops at once, since every other
# run would fail the same way.
set -uo pipefail

repro=${REPRO:-./target/release/repro}
print=false
if [ "${1:-}" = --print ]; then
  print=true
  shift
fi
case ${1:-} in
  -h | --help)
    sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  -*)
    echo "real-rke2-smoke.sh: RESULTS_DIR comes before \`repro run\` arguments (got \`$1\`); see --help" >&2
    exit 2
    ;;
esac
results=${1:-results}
shift $(( $# > 0 ? 1 : 0 ))
extra=("$@")

rank() { case $1 in 130) echo 5 ;; 3) echo 4 ;; 1) echo 3 ;; 4) echo 2 ;; 0) echo 0 ;; *) echo 4 ;; esac; }
worst=0
for check in metrics-order etcd-split; do
  for pair in "v1.32.8+rke2r1 reproduced" "v1.32.9+rke2r1 fixed"; do
    read -r version expect <<<"$pair"
    cmd=("$repro" run "$check" --version "$version" --expect "$expect" --results "$results"
      --progress never "${extra[@]}")
    echo "== ${cmd[*]}"
    if $print; then continue; fi
    "${cmd[@]}"
    code=$?
    echo "== exit $code"
    if [ "$code" -eq 2 ]; then
      exit 2
    fi
    if [ "$(rank "$code")" -gt "$(rank "$worst")" ]; then worst=$code; fi
  done
done
exit "$worst"
