#!/usr/bin/env bash
# `make test`'s last word (#30): every container, network and volume repro makes carries the
# label io.repro.managed=true (what `repro clean --all` removes); after the suite none may be
# left on the Docker host. Prints each one left (kind, name, its run, the check that made it,
# whether it belongs to a kept baseline) and then one line per run, last, so that the tail CI
# shows names the tests to look at; fails if anything is left. Run it on an engine the suite had
# to itself: another user's runs in progress would count too.
#
#   scripts/leftovers.sh --record FILE   before the suite: writes what is there already (a kept
#                                        run of the user's, a run a killed process left) to FILE
#   scripts/leftovers.sh --except FILE   after it: those objects are named but not counted, so
#                                        the suite answers only for what it made itself
set -u
label=io.repro.managed=true
left=0
record='' except=''
case "${1:-}" in
  --record) record=${2:?--record FILE} ;;
  --except) except=${2:?--except FILE} ;;
  '') ;;
  *) echo "usage: scripts/leftovers.sh [--record FILE | --except FILE]" >&2; exit 2 ;;
esac
if [ -n "$record" ]; then
  : >"$record" || exit 2
  for kind in container network volume; do
    case $kind in container) words=(container ls -a); name=.Names ;; *) words=($kind ls); name=.Name ;; esac
    if ! out=$(docker "${words[@]}" --filter "label=$label" --format "{{$name}}" 2>&1); then
      echo "leftovers: docker ${words[*]} failed: $out" >&2
      exit 2
    fi
    while read -r obj; do
      [ -n "$obj" ] && echo "$kind $obj" >>"$record"
    done <<<"$out"
  done
  n=$(wc -l <"$record")
  if [ "$n" -gt 0 ]; then
    echo "leftovers: $n object(s) labelled $label were on the Docker host before the suite (recorded in $record; not counted after it):" >&2
    sed 's/^/  /' "$record" >&2
  fi
  exit 0
fi
before=0
# Per run: its check (and baseline), and how many objects of each kind it left.
declare -A check_of count
list() { # kind, the name's field in `docker … ls --format`, then the `docker … ls` words
  local kind=$1 name=$2
  shift 2
  local out
  local fmt="{{$name}}|{{.Label \"io.repro.run\"}}|{{.Label \"io.repro.check\"}}|{{.Label \"io.repro.node\"}}|{{.Label \"io.repro.baseline\"}}"
  if ! out=$(docker "$@" --filter "label=$label" --format "$fmt" 2>&1); then
    echo "leftovers: docker $* failed: $out" >&2
    exit 2
  fi
  while IFS='|' read -r obj run check node baseline; do
    [ -n "$obj" ] || continue
    if [ -n "$except" ] && grep -qxF "$kind $obj" "$except" 2>/dev/null; then
      before=$((before + 1))
      continue
    fi
    echo "leftover $kind $obj of run $run (check ${check:-?}${node:+, node $node}${baseline:+, baseline $baseline})" >&2
    check_of[$run]=${check:-?}${baseline:+ (baseline $baseline)}
    count[$run $kind]=$((${count[$run $kind]:-0} + 1))
    left=$((left + 1))
  done <<<"$out"
}
list container .Names container ls -a
list network .Name network ls
list volume .Name volume ls
if [ "$before" -gt 0 ]; then
  echo "leftovers: $before object(s) were there before the suite ($except): not counted" >&2
fi
if [ "$left" -gt 0 ]; then
  for run in "${!check_of[@]}"; do
    echo "leftovers: run $run (check ${check_of[$run]}):" \
      "${count[$run container]:-0} container(s), ${count[$run network]:-0} network(s)," \
      "${count[$run volume]:-0} volume(s); \`repro clean --run $run\` removes them" >&2
  done
  echo "leftovers: $left object(s) with $label are still on the Docker host after the suite" >&2
  exit 1
fi
if [ "$before" -gt 0 ]; then
  echo "leftovers: none made by the suite (only the $before object(s) there before it, labelled $label)"
else
  echo "leftovers: none (no container, network or volume labelled $label on the Docker host)"
fi
