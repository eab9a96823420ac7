#!/usr/bin/env bash
# `make test`'s last word (#30): every container, network and volume repro makes carries the
# label io.repro.managed=true (what `repro clean --all` removes); after the suite none may be
# left on the Docker host. Prints each one left (kind, id, name, its run) and fails, so every CI
# run proves the suite's runs leave nothing. Run it on an engine the suite had to itself: another
# user's runs in progress would count too.
set -u
label=io.repro.managed=true
left=0
list() { # kind, the name's field in `docker … ls --format`, then the `docker … ls` words
  local kind=$1 name=$2
  shift 2
  local out
  if ! out=$(docker "$@" --filter "label=$label" --format "{{$name}} {{.Label \"io.repro.run\"}}" 2>&1); then
    echo "leftovers: docker $* failed: $out" >&2
    exit 2
  fi
  while read -r line; do
    [ -n "$line" ] || continue
    echo "leftover $kind ${line% *} of run ${line##* } (\`repro clean --run ${line##* }\` removes it)" >&2
    left=$((left + 1))
  done <<<"$out"
}
list container .Names container ls -a
list network .Name network ls
list volume .Name volume ls
if [ "$left" -gt 0 ]; then
  echo "leftovers: $left object(s) with $label are still on the Docker host after the suite" >&2
  exit 1
fi
echo "leftovers: none (no container, network or volume labelled $label on the Docker host)"
