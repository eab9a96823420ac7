//! A kept baseline and its restores (#39, `repro explore --restore`): a topology's cluster
//! brought up once with its uniform starting config, stopped gracefully, and kept as its
//! nodes' volumes (and each node's password file, which the distribution keeps in the rootfs:
//! k3s #802, #6054), with the network it ran on. Each run of the slot then re-creates the
//! containers with the same names, hostnames and addresses on that network over **copies** of
//! the volumes, made in a helper container of the node image itself, and boots them in the
//! plan's staged order (`steps::bring_up`, unchanged): etcd members restart as members, at the
//! address their peers know (a changed IP breaks membership: k3s #4296, #6524).
//!
//! Only the uniform baseline is ever kept, never the middle of a sequence: a restore restarts
//! every node (in k3s #12753 exactly such restarts change the outcome). One [`Slot`] per line of
//! runs that go one after another (explore's runner; `--jobs` gives each of its slots one): a
//! slot holds one baseline at a time, made again when the plan's image, topology or starting
//! config differ, or when it is older than [`MAX_AGE`] (k3s renews certificates at start
//! within 90 days of expiry: a kept baseline must be young). Its objects carry
//! `io.repro.managed=true` and their own run label (the baseline's id), so `repro clean` and
//! scripts/leftovers.sh see them; the slot's owner removes them when it ends
//! ([`Slot::remove`]), whatever way it ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indexmap::IndexMap;
use sha2::{Digest, Sha256};

use crate::docker::{self, DockerApi, HelperSpec};
use crate::plan::Plan;

/// How long a slot uses one baseline before it makes it again.
pub(crate) const MAX_AGE: Duration = Duration::from_secs(6 * 3600);

/// The labels a baseline's objects carry besides a run's (never the token: its hash).
pub(crate) const LABEL_BASELINE: &str = "io.repro.baseline";
const LABEL_IMAGE: &str = "io.repro.baseline.image";
const LABEL_TOPOLOGY: &str = "io.repro.baseline.topology";
const LABEL_CONFIG: &str = "io.repro.baseline.config";
const LABEL_TOKEN: &str = "io.repro.baseline.token-sha256";
const LABEL_CREATED: &str = "io.repro.baseline.created";

/// One line of runs that restore from one kept baseline at a time. Its cluster token is the
/// slot's (a restored node must keep the token its datastore was made with); it is never
/// written anywhere but the nodes' environment, as a run's is.
pub(crate) struct Slot {
    token: String,
    current: tokio::sync::Mutex<Option<Arc<Baseline>>>,
    /// Every baseline id this slot began, to remove (a creation interrupted half-way too).
    ids: Mutex<Vec<String>>,
    /// The clusters of baselines being made: their create calls in flight are waited for
    /// before the removal (an interrupted bring-up's calls still land in the engine).
    making: Mutex<Vec<Arc<dyn Drain>>>,
}

/// What a cluster being made into a baseline offers the slot's removal: to wait for the
/// create and start calls it has in flight (`cluster.rs`; the file cannot be named here).
pub(crate) trait Drain: Send + Sync {
    fn drain(&self) -> futures_util::future::BoxFuture<'_, ()>;
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot").finish_non_exhaustive()
    }
}

/// A kept baseline: where its nodes' volumes and password files are, on which network.
pub(crate) struct Baseline {
    /// Its objects' run label; its containers' names are `repro-<id>-<node>`, a restore's too.
    pub(crate) id: String,
    key: String,
    created: Instant,
    pub(crate) network: String,
    pub(crate) third: u8,
    pub(crate) nodes: IndexMap<String, KeptNode>,
}

/// One node of a baseline.
pub(crate) struct KeptNode {
    /// (the kept volume, where it is mounted), the data dir's first.
    pub(crate) volumes: Vec<(String, String)>,
    /// The node password file's content, when the node had one.
    pub(crate) password: Option<String>,
}

impl Slot {
    pub(crate) fn new() -> Arc<Slot> {
        Arc::new(Slot {
            token: super::random_hex(24),
            current: tokio::sync::Mutex::new(None),
            ids: Mutex::new(Vec::new()),
            making: Mutex::new(Vec::new()),
        })
    }

    pub(crate) fn token(&self) -> &str {
        &self.token
    }

    /// The slot's baseline for `plan` if it has a fitting one (same key, young enough); else
    /// none, the one it had removed (with `docker`) and why (`Err(Some(..))`): the run says so,
    /// so a campaign's second baseline is never a silent one.
    pub(crate) async fn fitting(
        &self,
        docker: &dyn DockerApi,
        key: &str,
    ) -> Result<Arc<Baseline>, Option<String>> {
        let mut cur = self.current.lock().await;
        match cur.as_ref() {
            Some(b) if b.key == key && b.created.elapsed() < MAX_AGE => Ok(b.clone()),
            Some(b) => {
                let why = if b.key != key {
                    "its image, topology, files or pace differ from this run's"
                } else {
                    "it is older than a baseline may be"
                };
                let said = format!("baseline {} no longer fits: {why}; removed", b.id);
                let _ = docker.remove_labelled(docker::LABEL_RUN, Some(&b.id)).await;
                *cur = None;
                Err(Some(said))
            }
            None => Err(None),
        }
    }

    /// A new baseline id, registered for removal before anything of it exists.
    pub(crate) fn begin(&self) -> String {
        let id = format!("b{}", super::random_hex(4));
        self.ids
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(id.clone());
        id
    }

    /// The ids of the baselines this slot began and has not removed.
    pub(crate) fn ids(&self) -> Vec<String> {
        self.ids.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// A baseline's cluster is being made: the removal waits for its calls first.
    pub(crate) fn making(&self, cluster: Arc<dyn Drain>) {
        let mut m = self.making.lock().unwrap_or_else(|p| p.into_inner());
        m.push(cluster);
    }

    /// The baseline made (or given up: `None`); no cluster is being made any more.
    pub(crate) async fn keep(&self, b: Option<Arc<Baseline>>) {
        self.making
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        *self.current.lock().await = b;
    }

    /// Removes every baseline this slot began, by label; the problems met.
    pub(crate) async fn remove(&self, docker: &dyn DockerApi) -> Vec<String> {
        let making = std::mem::take(&mut *self.making.lock().unwrap_or_else(|p| p.into_inner()));
        for m in making {
            m.drain().await;
        }
        let ids = std::mem::take(&mut *self.ids.lock().unwrap_or_else(|p| p.into_inner()));
        *self.current.lock().await = None;
        let mut problems = Vec::new();
        for id in ids {
            let r = docker.remove_labelled(docker::LABEL_RUN, Some(&id)).await;
            if !r.complete {
                problems.extend(r.errors);
            }
        }
        problems
    }
}

impl Baseline {
    pub(crate) fn new(
        id: String,
        key: String,
        (network, third): (String, u8),
        nodes: IndexMap<String, KeptNode>,
    ) -> Baseline {
        Baseline {
            id,
            key,
            created: Instant::now(),
            network,
            third,
            nodes,
        }
    }
}

/// What decides whether a baseline fits a run: the image (its id: a rebuilt stand-in is
/// another), the topology, every node's starting files, environment and role, and the
/// stand-in's pace and plant. A hash: the labels carry it, never the config.
pub(crate) fn key(plan: &Plan, image_id: Option<&str>, env: &[String]) -> String {
    let mut h = Sha256::new();
    let mut put = |s: &str| {
        h.update(s.as_bytes());
        h.update([0]);
    };
    put(&plan.image);
    put(image_id.unwrap_or("-"));
    put(&plan.topology);
    for e in env {
        put(e);
    }
    for (p, c) in &plan.common_files {
        put(p);
        put(c);
    }
    for n in &plan.nodes {
        put(&n.name);
        put(n.role.as_str());
        put(&n.deferred.to_string());
        for (k, v) in &n.env {
            put(k);
            put(v);
        }
        for (p, c) in plan.initial.get(&n.name).into_iter().flatten() {
            put(p);
            put(c.as_deref().unwrap_or("\u{1}absent"));
        }
    }
    format!("{:x}", h.finalize())
}

/// The labels of a baseline's objects besides a run's: what it was made of and when.
pub(crate) fn labels(
    plan: &Plan,
    image_id: Option<&str>,
    key: &str,
    token: &str,
) -> docker::Labels {
    let mut l = HashMap::new();
    l.insert(LABEL_BASELINE.to_string(), "true".to_string());
    l.insert(
        LABEL_IMAGE.to_string(),
        image_id.unwrap_or(&plan.image).to_string(),
    );
    l.insert(LABEL_TOPOLOGY.to_string(), plan.topology.clone());
    l.insert(LABEL_CONFIG.to_string(), key.to_string());
    l.insert(
        LABEL_TOKEN.to_string(),
        format!("{:x}", Sha256::digest(token.as_bytes())),
    );
    l.insert(LABEL_CREATED.to_string(), chrono::Utc::now().to_rfc3339());
    l
}

/// How a helper container of the node image runs one of the image's tools (`cp`, `sleep`):
/// (entrypoint, command before the tool's arguments). The one place that knows what each kind
/// of node image holds. The stand-in's k3s image is FROM scratch: its binary answers `cp` and
/// `sleep` itself, through the image's entrypoint. Real k3s images (rancher/k3s) carry
/// k3s-root's busybox in /bin (its package/busybox/busybox.config: busybox 1.35 with `cp`,
/// `sleep`, FEATURE_FANCY_SLEEP and FLOAT_DURATION, whose `sleep` takes `infinity` as GNU's
/// does; not run here: no real image can be pulled on the test host); the systemd node
/// images (RKE2's, the stand-in's and real) Debian's coreutils.
fn image_tool(tool: &str, (stand_in, systemd): (bool, bool)) -> (Option<Vec<String>>, Vec<String>) {
    if stand_in && !systemd {
        (None, vec![tool.to_string()])
    } else {
        (Some(vec![tool.to_string()]), Vec::new())
    }
}

/// The helper container that copies a kept node's volumes into a run's: the node image's own
/// `cp -a` (`--reflink=auto` where it is GNU's: a clone that shares blocks, never an overlay
/// of the original, which breaks containerd's overlayfs, k3s #19, #4769). Real k3s images'
/// busybox `cp` has no `--reflink`; the systemd node images' coreutils has.
pub(crate) fn copy_helper(
    name: String,
    (image, stand_in, systemd): (&str, bool, bool),
    pairs: &[(&str, &str)],
    labels: docker::Labels,
) -> HelperSpec {
    let (entrypoint, mut cmd) = image_tool("cp", (stand_in, systemd));
    cmd.push("-a".to_string());
    if systemd {
        cmd.push("--reflink=auto".to_string());
    }
    cmd.extend(["/from/.".to_string(), "/to/".to_string()]);
    let binds = (pairs.iter().enumerate())
        .flat_map(|(k, (from, to))| [format!("{from}:/from/{k}:ro"), format!("{to}:/to/{k}")])
        .collect();
    HelperSpec {
        name,
        image: image.to_string(),
        entrypoint,
        cmd,
        binds,
        labels,
        network: None,
    }
}

/// The container that keeps a baseline's network in use for the baseline's whole life: the
/// node image's `sleep infinity` on that network, at the address plan's keeper address (never a
/// node's), labelled as the baseline (removed with it, by `repro clean`, by an interrupt's
/// cleanup). Between two restored runs no node is on the kept network, and Podman (4.3.1,
/// netavark 1.4.0) then tears its bridge and firewall rules down; a teardown racing the next
/// run's setup left that run's nodes on a network that drops every packet (docs/podman.md).
/// On both engines, though only Podman needs it: one way for every restore, so the Docker
/// tests run the same path as Podman's; on Docker it costs one idle container.
pub(crate) fn keeper(
    name: String,
    (image, stand_in, systemd): (&str, bool, bool),
    (network, third): (&str, u8),
    labels: docker::Labels,
) -> HelperSpec {
    let (entrypoint, mut cmd) = image_tool("sleep", (stand_in, systemd));
    cmd.push("infinity".to_string());
    HelperSpec {
        name,
        image: image.to_string(),
        entrypoint,
        cmd,
        binds: Vec::new(),
        labels,
        network: Some((network.to_string(), docker::address::keeper_ip(third))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_helper_uses_the_images_own_cp() {
        let pairs = [("kept-data", "run-data"), ("kept-vol0", "run-vol0")];
        let sim = copy_helper("h".into(), ("img", true, false), &pairs, HashMap::new());
        assert_eq!(sim.entrypoint, None);
        assert_eq!(sim.cmd, ["cp", "-a", "/from/.", "/to/"]);
        assert_eq!(
            sim.binds,
            [
                "kept-data:/from/0:ro",
                "run-data:/to/0",
                "kept-vol0:/from/1:ro",
                "run-vol0:/to/1"
            ]
        );
        let k3s = copy_helper("h".into(), ("img", false, false), &pairs, HashMap::new());
        assert_eq!(k3s.entrypoint, Some(vec!["cp".to_string()]));
        assert_eq!(k3s.cmd, ["-a", "/from/.", "/to/"]);
        let rke2 = copy_helper("h".into(), ("img", true, true), &pairs, HashMap::new());
        assert_eq!(rke2.entrypoint, Some(vec!["cp".to_string()]));
        assert_eq!(rke2.cmd, ["-a", "--reflink=auto", "/from/.", "/to/"]);
        assert_eq!(rke2.network, None);
    }

    #[test]
    fn the_keeper_sleeps_on_the_kept_network_at_no_nodes_address() {
        let net = ("repro-b1", 7);
        let sim = keeper("k".into(), ("img", true, false), net, HashMap::new());
        assert_eq!(
            (sim.entrypoint, sim.cmd),
            (None, vec!["sleep".into(), "infinity".into()])
        );
        assert_eq!(sim.network, Some(("repro-b1".into(), "10.213.7.4".into())));
        assert!(sim.binds.is_empty());
        for image in [("img", false, false), ("img", true, true)] {
            let k = keeper("k".into(), image, net, HashMap::new());
            assert_eq!(k.entrypoint, Some(vec!["sleep".to_string()]));
            assert_eq!(k.cmd, ["infinity"]);
        }
        let nodes: Vec<String> = (0..docker::address::MAX_NODES)
            .map(|i| docker::address::node_ip(7, i))
            .collect();
        assert!(!nodes.contains(&docker::address::keeper_ip(7)));
    }
}
