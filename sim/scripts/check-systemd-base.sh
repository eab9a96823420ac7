#!/bin/sh
# Checks repro.local/systemd-base:bookworm on this engine (DOCKER_HOST works: Podman too),
# as docs/systemd-nodes.md describes it: boots unprivileged to `running`, a unit installed
# under /etc/systemd/system starts and restarts through `docker exec`, each start has its
# own invocation id in the journal, `docker logs` holds none of the unit's lines, and
# `docker stop` (SIGRTMIN+3) halts it. Prints the timings; exits 1 on the first failure.
#   usage: sim/scripts/check-systemd-base.sh   (after sim/scripts/build-systemd-base.sh)
set -eu

image=repro.local/systemd-base:bookworm
name=repro-systemd-check-$$
unit=repro-check.service
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
ms_since() { echo "$(( ($(date +%s%N) - $1) / 1000000 ))ms"; }
trap 'docker rm -f "$name" >/dev/null 2>&1 || true; rm -f "${unitfile:-}"' EXIT INT TERM

docker image inspect "$image" >/dev/null 2>&1 || fail "no $image: run sim/scripts/build-systemd-base.sh"

t=$(date +%s%N)
docker run -d --name "$name" --tmpfs /run --tmpfs /run/lock \
    -v /sys/fs/cgroup:/sys/fs/cgroup:ro "$image" >/dev/null
# `systemctl is-system-running --wait` blocks until boot is over, but only once PID 1's bus
# is up: until then it fails at once, so that (and only that) is retried.
i=0
state=
while [ "$i" -lt 100 ]; do
    state=$(docker exec "$name" systemctl is-system-running --wait 2>/dev/null || true)
    [ -n "$state" ] && break
    i=$((i + 1))
    sleep 0.1
done
[ "$state" = running ] || fail "system state is '$state', not running (failed: $(docker exec "$name" systemctl --failed --no-legend))"
echo "booted to running in $(ms_since "$t")"

unitfile=$(mktemp "${TMPDIR:-/tmp}/repro-check.XXXXXX")
cat > "$unitfile" <<'EOF'
[Service]
ExecStart=/bin/sh -c 'echo repro-check started; exec sleep infinity'
EOF
docker cp "$unitfile" "$name:/etc/systemd/system/$unit"
docker exec "$name" systemctl daemon-reload
docker exec "$name" systemctl start "$unit"
first=$(docker exec "$name" systemctl show -p InvocationID --value "$unit")
t=$(date +%s%N)
docker exec "$name" systemctl restart "$unit"
echo "systemctl restart through docker exec: $(ms_since "$t")"
second=$(docker exec "$name" systemctl show -p InvocationID --value "$unit")
if [ -z "$first" ] || [ "$first" = "$second" ]; then
    fail "invocation id did not change on restart ($first, $second)"
fi

# Both starts' lines, each under its own id. The unit's line of the second start may reach
# the journal after `restart` returns: wait for it with a follow, not a sleep.
docker exec "$name" timeout 10 sh -c \
    "journalctl -u $unit -f -o export _SYSTEMD_INVOCATION_ID=$second | grep -q -m1 '^MESSAGE=repro-check started'" ||
    fail "the second start's line never reached the journal"
ids=$(docker exec "$name" journalctl -u "$unit" -o export | sed -n 's/^_SYSTEMD_INVOCATION_ID=//p' | sort -u | wc -l)
[ "$ids" -eq 2 ] || fail "expected 2 invocation ids in the journal, found $ids"
echo "journal: 2 starts, 2 invocation ids ($first, $second)"

if docker logs "$name" 2>&1 | grep -q 'repro-check started'; then
    fail "docker logs holds the unit's output (expected only the journal to)"
fi
echo "docker logs: $(docker logs "$name" 2>&1 | wc -l) lines, none of the unit's"

t=$(date +%s%N)
# An explicit grace: without `t`, Podman 4.3 kills at once (exit 137).
docker stop -t 10 "$name" >/dev/null
code=$(docker inspect -f '{{.State.ExitCode}}' "$name")
echo "docker stop (SIGRTMIN+3): $(ms_since "$t"), exit $code"
[ "$code" = 0 ] || fail "systemd did not halt cleanly on docker stop (exit $code)"
echo "ok"
