#!/usr/bin/env bash
# k3s #12753 (checks/etcd-split.yaml) as a person would script it with the plain docker CLI:
# the same cluster (3 etcd-only servers + 1 control-plane-only server), the same config edits
# and restarts in the same order, waiting with 1-second polls of `docker logs` and a 1-second
# settle before reading the embedded registry's state from the boot's log. `make bench` times
# it against `repro run etcd-split` and counts its time only when its answers are right.
#
# Usage: bench/etcd-split.sh [IMAGE]   (default: the stand-in image of v1.33.4+k3s1)
# Prints one line per observation: `step <n> <node> embedded-registry <up|down>`.
# Everything it creates carries io.repro.run=<id>: `repro clean --run <id>` removes leftovers.
set -euo pipefail

image=${1:-repro.local/k3s-sim:v1.33.4-k3s1}
id=script-$$-$RANDOM
net=repro-$id
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
labels=(--label io.repro.managed=true --label "io.repro.run=$id")
nodes=(etcd-1 etcd-2 etcd-3 cp-1)
declare -A boot  # node -> number of its current boot
work=$(mktemp -d)

cleanup() {
  docker rm -f -v "${nodes[@]/#/repro-$id-}" >/dev/null 2>&1 || true
  docker network rm "$net" >/dev/null 2>&1 || true
  for n in "${nodes[@]}"; do docker volume rm "repro-$id-$n-data" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# config.yaml of a node: its role's keys, plus `embedded-registry: true` when $2 says so.
write_config() {
  local n=$1 registry=${2:-}
  mkdir -p "$work/$n/etc/rancher/k3s"
  {
    if [ "$n" = etcd-1 ]; then echo "cluster-init: true"; else echo 'server: "https://etcd-1:6443"'; fi
    case $n in
      etcd-*) printf 'disable-apiserver: true\ndisable-controller-manager: true\ndisable-scheduler: true\n' ;;
      cp-*) echo "disable-etcd: true" ;;
    esac
    if [ -n "$registry" ]; then echo "embedded-registry: true"; fi
  } >"$work/$n/etc/rancher/k3s/config.yaml"
  printf 'mirrors:\n  docker.io: {}\n' >"$work/$n/etc/rancher/k3s/registries.yaml"
  docker cp "$work/$n/." "repro-$id-$n:/"
}

# The log of a node's current boot (boots are told apart by k3s's start banner).
boot_log() {
  docker logs "repro-$id-$1" 2>&1 | awk -v n="${boot[$1]}" '/Starting k3s/ { b++ } b == n'
}

# Polls once a second until the current boot's log has a line matching $2 (2 minutes at most).
wait_for() {
  local n=$1 pattern=$2 tries=0
  until boot_log "$n" | grep -q "$pattern"; do
    tries=$((tries + 1))
    if [ $tries -gt 120 ]; then echo "timeout: $n never logged '$pattern'" >&2; exit 1; fi
    sleep 1
  done
}

start() {
  boot[$1]=$(( ${boot[$1]:-0} + 1 ))
  docker start "repro-$id-$1" >/dev/null
  wait_for "$1" "k3s is up and running"
}

restart() {
  docker stop "repro-$id-$1" >/dev/null
  start "$1"
}

# Waits for the kubelet line on each node, lets them settle 1 s, reads the registry's state.
observe() {
  local step=$1; shift
  for n in "$@"; do wait_for "$n" "Running kubelet"; done
  sleep 1
  for n in "$@"; do
    if boot_log "$n" | grep -q "Starting distributed registry mirror"; then s=up; else s=down; fi
    echo "step $step $n embedded-registry $s"
  done
}

docker network create "${labels[@]}" "$net" >/dev/null
for n in "${nodes[@]}"; do
  docker volume create "${labels[@]}" "repro-$id-$n-data" >/dev/null
  docker create --name "repro-$id-$n" --hostname "$n" --network "$net" --network-alias "$n" \
    "${labels[@]}" -e "K3S_TOKEN=$token" --tmpfs /run --tmpfs /var/run \
    -v "repro-$id-$n-data:/var/lib/rancher/k3s" "$image" server >/dev/null
  write_config "$n"
done
for n in "${nodes[@]}"; do start "$n"; done

# Step 1: the registry on etcd-2 and etcd-3, not on the init node.
write_config etcd-2 registry
write_config etcd-3 registry
restart etcd-2
restart etcd-3
observe 1 etcd-1 etcd-2 etcd-3

# Step 2: the registry on etcd-1 too.
write_config etcd-1 registry
restart etcd-1
observe 2 etcd-1 etcd-2 etcd-3

# Step 3: restart etcd-2 and etcd-3 again.
restart etcd-2
restart etcd-3
observe 3 etcd-2 etcd-3
