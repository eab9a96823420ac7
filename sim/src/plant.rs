//! Planted bugs (`REPRO_SIM_PLANT=<name>`, from `repro run|explore --sim --sim-plant NAME`): the
//! stand-in plays one bug of `distro::plant::CATALOGUE` (the one table: names, the class and key
//! explore should report, the k3s issue whose shape each copies) at the place its behaviour
//! lives — each function here is called from one hook in agent.rs or node.rs and does nothing
//! unless its bug is the planted one. Unset, the stand-in is unchanged.

use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use distro::plant::{self, Plant};

use crate::bootstrap::{CriticalArgs, Wire};
use crate::config::{PortRange, ServerConfig};
use crate::http::{self, Auth, Url};
use crate::logs;

/// The planted bug, read once: `None` when unset or not a name of the catalogue (warned).
pub fn active() -> Option<Plant> {
    static PLANT: OnceLock<Option<Plant>> = OnceLock::new();
    *PLANT.get_or_init(|| {
        let raw = std::env::var(plant::PLANT_ENV).ok()?;
        match plant::parse_plant(&raw) {
            Ok(name) => plant::by_name(&name).map(|e| e.plant),
            Err(e) => {
                logs::warn(format!(
                    "repro-sim: {}: {e}; nothing is planted",
                    plant::PLANT_ENV
                ));
                None
            }
        }
    })
}

fn planted(p: Plant) -> bool {
    active() == Some(p)
}

/// [`Plant::JoinedMetrics`]: an etcd-only server's agent takes `supervisor-metrics` from the
/// served config of the server in its `server:` rather than from its own supervisor's.
pub fn joined_metrics(served: &mut CriticalArgs, cfg: &ServerConfig, etcd_agent: bool, pw: &str) {
    if !planted(Plant::JoinedMetrics) || !etcd_agent {
        return;
    }
    let Some(url) = cfg.server_url.as_deref().and_then(|u| Url::parse(u).ok()) else {
        return;
    };
    let path = crate::distro::supervisor_path("config");
    let answer = http::request(
        "GET",
        &url,
        &path,
        &Auth::Basic("node", pw),
        None,
        Duration::from_secs(10),
    );
    if let Ok(resp) = answer {
        if let Ok(wire) = serde_json::from_slice::<Wire>(&resp.body) {
            if resp.status == 200 {
                served.supervisor_metrics = CriticalArgs::from_wire(&wire).supervisor_metrics;
            }
        }
    }
}

/// [`Plant::CachedFlannelBackend`]: the backend of a node's first boot, kept in its data dir,
/// wins over the served one on every later boot.
pub fn cached_flannel_backend(served: &mut CriticalArgs, data_dir: &Path) {
    if !planted(Plant::CachedFlannelBackend) {
        return;
    }
    let file = data_dir.join("agent/etc/flannel/repro-plant-backend");
    match std::fs::read_to_string(&file) {
        Ok(cached) if !cached.trim().is_empty() => served.flannel_backend = cached.trim().into(),
        _ => {
            if let Some(dir) = file.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let _ = std::fs::write(&file, &served.flannel_backend);
        }
    }
}

/// [`Plant::RefusedKubeProxy`]: the names the bootstrap's check adds to k3s's own mismatches.
pub fn extra_mismatches(cfg: &ServerConfig, remote: &Wire) -> Vec<String> {
    if planted(Plant::RefusedKubeProxy) && cfg.disable_kube_proxy != remote.extra.disable_kube_proxy
    {
        vec!["disable-kube-proxy".into()]
    } else {
        Vec::new()
    }
}

/// [`Plant::ControlPlanePanic`]: a control-plane-only server whose `service-node-port-range`
/// differs from its join server's panics as a Go program does: the banner and the goroutine's
/// trace on stderr, then exit status 2.
pub fn control_plane_panic(cfg: &ServerConfig, remote: &Wire) {
    if !planted(Plant::ControlPlanePanic) || !cfg.disable_etcd {
        return;
    }
    let mine = PortRange::parse(&cfg.service_node_port_range).ok();
    if remote.extra.service_node_port_range.is_none()
        || mine == remote.extra.service_node_port_range
    {
        return;
    }
    logs::raw(
        "panic: runtime error: invalid memory address or nil pointer dereference\n\
         [signal SIGSEGV: segmentation violation code=0x1 addr=0x30 pc=0x2f1c2a4]\n\n\
         goroutine 1 [running]:\n\
         github.com/k3s-io/k3s/pkg/cluster.(*Cluster).compareConfig(0xc000a1e000)\n\
         \t/go/src/github.com/k3s-io/k3s/pkg/cluster/bootstrap.go:448 +0x2a4\n\
         github.com/k3s-io/k3s/pkg/cluster.(*Cluster).Bootstrap(0xc000a1e000, {0x5d8e4a8, 0xc0001b6000}, 0x0)\n\
         \t/go/src/github.com/k3s-io/k3s/pkg/cluster/bootstrap.go:57 +0x1c5",
    );
    std::process::exit(2);
}
