#!/bin/sh
# A private Podman API service (Docker-compatible) for running repro and its
# suite on Podman: its own socket, containers.conf, storage and network
# config, so nothing it does touches the host's podman state.
#
#   usage: scripts/podman-service.sh start|stop|env|status
#     start   start it if it is not answering yet (idempotent); waits until
#             GET /_ping answers, then prints the DOCKER_HOST line
#     stop    stop the service this script started (by its pid file)
#     env     print `export DOCKER_HOST=unix://…` (eval "$(… env)")
#     status  exit 0 when the API answers
#
# REPRO_PODMAN_DIR (default /tmp/repro-podman) holds podman.sock,
# containers.conf, storage/, runroot/, networks/, service.pid, service.log.
# Rootful only: see docs/podman.md for what rootless would need.
set -eu

dir=${REPRO_PODMAN_DIR:-/tmp/repro-podman}
sock="$dir/podman.sock"
conf="$dir/containers.conf"
pidfile="$dir/service.pid"
log="$dir/service.log"
host="unix://$sock"
# How long `start` waits for the API to answer, in tenths of a second.
wait_tenths=${REPRO_PODMAN_WAIT_TENTHS:-300}

ping() {
    [ -S "$sock" ] && curl -sf --max-time 2 --unix-socket "$sock" http://d/_ping >/dev/null 2>&1
}

ours_running() {
    [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

# "NOFILE NPROC": the hard limits of process $1 (a pid or "self").
hard_limits() {
    awk '/^Max open files/ { n = $5 } /^Max processes/ { p = $4 }
         END { if (n == "unlimited") n = 1048576; if (p == "unlimited") p = 4194304; print n, p }' \
        "/proc/$1/limits"
}

# Podman's default container ulimits (nofile and nproc 1048576) are above
# this host's hard limits, and runc then fails every start with "error
# setting rlimit type 7/6: operation not permitted". A container can have at
# most what the service process has, and podman changes its own limits at
# start (here nproc 96365 in the shell became 32768, the pid_max, in the
# service): so the file is written from the running service's limits.
write_conf() {
    nofile=$1
    nproc=$2
    cat > "$conf.part" <<EOF
# Written by scripts/podman-service.sh on every start, ulimits from the service's own.
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
# k8s-file keeps each line's nanosecond time; the API serves logs from it.
log_driver = "k8s-file"

[engine]
# No systemd as PID 1 on these hosts: no systemd cgroup manager or journal.
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$dir/events.log"

[network]
network_config_dir = "$dir/networks"
EOF
    mv "$conf.part" "$conf"
}

start() {
    if ping; then
        echo "export DOCKER_HOST=$host"
        return 0
    fi
    # A unix socket's path has at most 107 bytes (sun_path); a deep checkout would exceed it.
    [ "${#sock}" -le 107 ] || {
        echo "error: socket path $sock is longer than 107 bytes; set REPRO_PODMAN_DIR to a shorter folder" >&2
        exit 1
    }
    command -v podman >/dev/null 2>&1 || {
        echo "error: podman is not installed (Debian: apt-get install -y podman)" >&2
        exit 1
    }
    command -v curl >/dev/null 2>&1 || {
        echo "error: curl is needed to wait for the service's /_ping" >&2
        exit 1
    }
    if ours_running; then
        # A service that does not answer is of no use; start afresh.
        stop >/dev/null
    fi
    mkdir -p "$dir/storage" "$dir/runroot" "$dir/networks"
    # The limits of an earlier start are usually the service's already (else this shell's);
    # the check below rewrites the file and restarts once when they are not.
    set --
    # shellcheck disable=SC2046 # two numbers, split on purpose
    [ -s "$conf" ] && set -- $(sed -n 's/.*"nofile=\([0-9]*\):.*"nproc=\([0-9]*\):.*/\1 \2/p' "$conf")
    # shellcheck disable=SC2046
    [ "$#" -eq 2 ] || set -- $(hard_limits self)
    write_conf "$1" "$2"
    launch
    # shellcheck disable=SC2046
    set -- $(hard_limits "$(cat "$pidfile")")
    if ! grep -q "\"nofile=$1:$1\", \"nproc=$2:$2\"" "$conf"; then
        stop >/dev/null
        write_conf "$1" "$2"
        launch
    fi
    echo "export DOCKER_HOST=$host"
}

# Starts the service on the current containers.conf and waits for /_ping.
launch() {
    rm -f "$sock"
    CONTAINERS_CONF="$conf" setsid podman --root "$dir/storage" --runroot "$dir/runroot" \
        system service --time=0 "$host" >"$log" 2>&1 </dev/null &
    echo $! > "$pidfile"
    i=0
    until ping; do
        if ! ours_running; then
            echo "error: podman system service exited; its log ($log):" >&2
            tail -n 20 "$log" >&2
            exit 1
        fi
        i=$((i + 1))
        if [ "$i" -ge "$wait_tenths" ]; then
            echo "error: podman service did not answer /_ping on $sock in $((wait_tenths / 10))s" >&2
            exit 1
        fi
        sleep 0.1
    done
}

stop() {
    if ours_running; then
        pid=$(cat "$pidfile")
        kill "$pid"
        i=0
        while kill -0 "$pid" 2>/dev/null && [ "$i" -lt 100 ]; do
            i=$((i + 1))
            sleep 0.1
        done
        kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
        echo "stopped podman service (pid $pid)"
    else
        echo "no podman service of ours is running"
    fi
    rm -f "$pidfile" "$sock"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    env) echo "export DOCKER_HOST=$host" ;;
    status) ping ;;
    *) echo "usage: $0 start|stop|env|status" >&2; exit 2 ;;
esac
