#!/usr/bin/env bash
# One cell of the nightly: `repro run` against real k3s, retried once when it stopped on
# infrastructure (exit 3: Docker, an image pull, a node never ready in time). The first
# attempt's folder moves to <results>-attempt-1/ (the workflow uploads it apart), so `repro
# merge` sees one run per cell. Any other exit code is final: a regression (1) or an
# inconclusive run (4) is never retried away.
#
# Usage: scripts/nightly-run.sh CHECK K3S_VERSION EXPECTED [RESULTS_DIR]
# REPRO names the repro binary (default: `repro` on PATH).
set -uo pipefail

if [ $# -lt 3 ]; then
  echo "usage: $0 CHECK K3S_VERSION EXPECTED [RESULTS_DIR]" >&2
  exit 2
fi
check=$1 version=$2 expected=$3 results=${4:-results}
repro=${REPRO:-repro}

attempt() {
  "$repro" run "$check" --k3s-version "$version" --expect "$expected" \
    --progress never --results "$results"
}

attempt
code=$?
if [ "$code" -eq 3 ]; then
  echo "::warning::repro exited 3 (infrastructure) for $check on $version: retrying once"
  if [ -d "$results" ]; then
    mkdir -p "$results-attempt-1"
    find "$results" -mindepth 1 -maxdepth 1 -exec mv -t "$results-attempt-1" {} +
  fi
  attempt
  code=$?
fi
echo "repro exited $code for $check on $version"
# Each case that did not pass as a GitHub annotation on the check's YAML line (nothing on exit 0).
for dir in "$results"/*/; do
  if [ -f "$dir/result.json" ]; then
    "$repro" report --github-annotations "$dir" || true
  fi
done
exit "$code"
