//! The host's limits against what a topology needs: inotify instances and watches per node,
//! memory per role, disk per node (thresholds and their sources in the module doc of
//! `doctor`).

use super::*;

/// inotify instances a node of real k3s may hold (kubelet/cAdvisor, containerd and its shims):
/// 128 is reported to run out at 4–5 nodes, 256 to suffice for them, so twice the ~30 a node
/// was seen to use (inferred).
pub(super) const INOTIFY_INSTANCES_PER_NODE: u64 = 64;
/// inotify watches k3d's maintainer runs clusters with (k3d #968).
pub(super) const INOTIFY_WATCHES: u64 = 262_144;
/// inotify instances a systemd node (a distribution that runs as a unit: RKE2, its stand-in
/// too) holds with nothing else running: systemd as PID 1, journald, logind, udevd and the
/// unit's own — 8 to 10 measured by #30's campaign, where four RKE2 stand-in runs of three
/// nodes exhausted the default 128. All of a host's containers count against root's limit.
pub(crate) const INOTIFY_INSTANCES_SYSTEMD_NODE: u64 = 10;

/// inotify instances one node of `facts` holds: the kubelet's and containerd's for a real
/// node, systemd's for a node that runs the distribution as a unit; `None` for the stand-in of
/// a distribution that runs as PID 1 (it opens none).
pub(crate) fn inotify_per_node(facts: &Facts, sim: bool) -> Option<u64> {
    let systemd = if facts.node_process.systemd_pid1() {
        INOTIFY_INSTANCES_SYSTEMD_NODE
    } else {
        0
    };
    match (sim, systemd) {
        (true, 0) => None,
        (true, s) => Some(s),
        (false, s) => Some(INOTIFY_INSTANCES_PER_NODE + s),
    }
}

/// The kubelet k3s runs evicts pods below this free share (k3s's own kubelet flag
/// `--eviction-hard=imagefs.available<5%,nodefs.available<5%`, pkg/daemons/agent).
pub(super) const EVICTION_FREE_PERCENT: u64 = 5;

pub(super) fn disk_line(
    dir: Option<&str>,
    free: Option<(u64, u64)>,
    need: u64,
    nodes: u64,
    topology: &str,
) -> Line {
    let why = format!(
        "the {nodes} nodes of {topology} take about {need} MiB (data dir, etcd, containerd; an estimate)"
    );
    let (Some(dir), Some((free, total))) = (dir, free) else {
        return Line::warn(
            "disk",
            format!(
                "could not read the free space of the engine's data root{}; {why}",
                dir.map(|d| format!(" {d}")).unwrap_or_default()
            ),
            "check `docker info` (Docker Root Dir) and `df -h` on it",
        );
    };
    if free < need {
        return Line::fail(
            "disk",
            format!("{free} MiB free at {dir}; {why}"),
            "free space there (`docker system df`, remove unused images and volumes), or run the stand-in with --sim",
        );
    }
    let left = free - need;
    if total > 0 && left * 100 < total * EVICTION_FREE_PERCENT {
        return Line::warn(
            "disk",
            format!("{free} MiB free at {dir}; {why}, leaving {left} MiB, under the {EVICTION_FREE_PERCENT}% the kubelet keeps free (it evicts pods and reports DiskPressure below it)"),
            "free space there (`docker system df`) before a real run",
        );
    }
    Line::ok("disk", format!("{free} MiB free at {dir}; {why}"))
}

/// The host's inotify limits, and what root's processes hold now.
pub(super) struct Inotify {
    pub(super) instances: Option<u64>,
    pub(super) watches: Option<u64>,
    pub(super) in_use: Option<u64>,
    /// Instances repro runs starting now have claimed for nodes not up yet, and how many runs
    /// (`budget::claimed_now`): a run started next counts them as used.
    pub(super) claimed: (u64, usize),
}

/// What one node needs: instances, and the watches limit the whole host wants (0: none).
pub(super) struct InotifyNeed {
    pub(super) per_node: u64,
    pub(super) watches: u64,
}

pub(super) fn inotify_line(
    host: &Inotify,
    want: &InotifyNeed,
    nodes: u64,
    topology: &str,
    local: bool,
) -> Line {
    let need = want.per_node * nodes.max(1);
    let watch_need = want.watches;
    let (Some(instances), Some(watches)) = (host.instances, host.watches) else {
        return Line::warn(
            "inotify",
            "cannot read /proc/sys/fs/inotify/max_user_instances and max_user_watches",
            format!(
                "make sure fs.inotify.max_user_instances ≥ {need} and max_user_watches ≥ {}",
                watch_need.max(8192)
            ),
        );
    };
    let whose = if local {
        ""
    } else {
        " (this machine's, not the engine's)"
    };
    let (claimed, claims) = host.claimed;
    let used = host.in_use.unwrap_or(0) + claimed;
    let claimed_text = match claims {
        0 => String::new(),
        1 => format!(" and {claimed} claimed by 1 repro run starting its nodes"),
        n => format!(" and {claimed} claimed by {n} repro runs starting their nodes"),
    };
    let in_use = host
        .in_use
        .map(|n| format!(", {n} instances held by root's processes now{claimed_text}"))
        .unwrap_or_default();
    let seen = format!(
        "max_user_instances {instances}, max_user_watches {watches}{whose}{in_use}; every node of one engine counts against root's limit, about {} instances a node here",
        want.per_node
    );
    let free = instances.saturating_sub(used);
    if free >= need && watches >= watch_need {
        Line::ok(
            "inotify",
            format!("{seen}: enough for the {nodes} nodes of {topology} ({need})"),
        )
    } else {
        Line::warn(
            "inotify",
            format!("{seen}: the {nodes} nodes of {topology} may fail with \"inotify_init: too many open files\" (want {need} instances free, ≥ {watch_need} watches)"),
            format!("sysctl -w fs.inotify.max_user_instances={} fs.inotify.max_user_watches={}", (need + used).max(instances), watch_need.max(watches)),
        )
    }
}

/// MiB the nodes need: a server with embedded etcd, one without, an agent.
pub(super) fn memory_needed(facts: &Facts, roles: &[Role]) -> u64 {
    let m = &facts.memory;
    roles
        .iter()
        .map(|r| match r {
            Role::Etcd | Role::All => m.server_with_etcd_mib,
            Role::ControlPlane => m.server_mib,
            Role::Agent => m.agent_mib,
        })
        .sum()
}

pub(super) fn memory_line(
    total: Option<u64>,
    available: Option<u64>,
    need: u64,
    topology: &str,
    source: &str,
) -> Line {
    let why = format!("{topology} needs about {need} MiB ({source}, per node)");
    match (total, available) {
        (Some(t), _) if t < need => Line::fail(
            "memory",
            format!("the engine has {t} MiB; {why}"),
            "use a host with more memory, a smaller topology (--topology), or --sim",
        ),
        (_, Some(a)) if a < need => Line::warn(
            "memory",
            format!("{a} MiB available now; {why}"),
            "stop other containers or programs first",
        ),
        (Some(t), _) => Line::ok("memory", format!("the engine has {t} MiB; {why}")),
        (None, _) => Line::warn(
            "memory",
            format!("the engine does not say its memory; {why}"),
            "check `docker info` (Total Memory)",
        ),
    }
}
