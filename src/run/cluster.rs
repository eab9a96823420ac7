//! The cluster of one run: its network, volumes and node containers; starting a node's next
//! boot, stopping it, and waiting until a boot is ready or dead. Teardown goes by label.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::join_all;
use indexmap::IndexMap;

use crate::docker::{self, DockerApi};
use crate::plan::{Plan, PlannedNode};
use crate::raw::Role;
use crate::result::{BootRecord, LbServer, Outcome};

use super::baseline::{self, Baseline, KeptNode};
use super::emit::Events;
use super::error::RunError;
use super::event::{NodeState, RunEvent};
use super::in_flight::InFlight;
use super::node::spec::{self, container_name, BuildCopy};
use super::node::{self, Mechanism};
use super::observe;
use super::watch::{self, BootHandle};

/// How long the teardown waits for create and start calls in flight (each is one API call).
const CREATE_DRAIN: Duration = Duration::from_secs(60);

/// What a cluster is made of, besides what it does at run time: given by the runner.
pub(crate) struct ClusterSpec {
    pub(crate) docker: Arc<dyn DockerApi>,
    pub(crate) run_id: String,
    pub(crate) plan: Plan,
    pub(crate) dir: PathBuf,
    pub(crate) events: Events,
    /// How long a boot may take to be ready (or dead).
    pub(crate) timeout: Duration,
    /// How long to wait after a settled-by line (its order decides) or readiness.
    pub(crate) settle: observe::Settle,
    pub(crate) privileged: bool,
    /// Applied to every log line and probe output: removes the run's secrets.
    pub(crate) scrub: watch::Scrub,
    /// The outcome the run is asked to show (what each observation is judged against).
    pub(crate) expect: Outcome,
    /// Lines that say a server's boot is ready.
    pub(crate) ready: Vec<regex::Regex>,
    /// Lines that say an agent's boot is ready (k3s prints its own ready line only under
    /// systemd; the kubelet's registration is what an agent in a container shows).
    pub(crate) agent_ready: Vec<regex::Regex>,
    pub(crate) token: String,
    /// The stand-in's load-balancer seed of the run (`None` on real k3s): each node's container
    /// gets its own, derived from it.
    pub(crate) sim_seed: Option<u64>,
    /// The run's redaction context, for `docker inspect` (structurally, as JSON).
    pub(crate) redactor: crate::redact::SharedRedactor,
    /// `--sim-pace`: the stand-in's factor on real k3s timings, passed to every node.
    pub(crate) pace: Option<f64>,
    /// `--sim-plant`: the stand-in's planted bug, passed to every node.
    pub(crate) plant: Option<String>,
    /// A build under test, copied into each node before its first start.
    pub(crate) binary: Option<BuildCopy>,
    /// The MTU of the run's network (`--mtu`, else the engine's default bridge's; `None`: the
    /// engine's default): inside a Docker-in-Docker runner at 1400 a network at 1500 stalls.
    pub(crate) mtu: Option<u32>,
    /// The kept baseline this run restores (`--restore`): its network, its containers'
    /// names, copies of its volumes. `None`: a fresh cluster.
    pub(crate) restore: Option<Arc<Baseline>>,
    /// Labels every object gets besides the run's: a baseline's own (`baseline::labels`).
    pub(crate) extra_labels: docker::Labels,
}

/// A running cluster, shared by the steps: its spec (whose fields read as the cluster's own,
/// `c.plan`, through `Deref`) and its nodes' boots.
pub(crate) struct Cluster {
    spec: ClusterSpec,
    /// How its nodes run (container process or systemd unit), chosen once from the facts.
    mechanism: &'static dyn Mechanism,
    nodes: IndexMap<String, NodeRt>,
    /// The create and start calls in flight, which the teardown waits for.
    calls: InFlight,
    /// The third octet of the run's network, once it exists (node addresses → names).
    third: std::sync::OnceLock<u8>,
    /// Nodes a step's `stop:` took down and no `start:` brought back yet.
    stopped: Mutex<std::collections::HashSet<String>>,
}

impl std::ops::Deref for Cluster {
    type Target = ClusterSpec;

    fn deref(&self) -> &ClusterSpec {
        &self.spec
    }
}

struct NodeRt {
    container: String,
    boots: Mutex<Vec<BootHandle>>,
    stopping: Arc<AtomicBool>,
}

impl Cluster {
    pub(crate) fn new(spec: ClusterSpec) -> Cluster {
        // A restore's containers take the baseline's names (its nodes' volumes were theirs).
        let names = spec.restore.as_ref().map_or(&spec.run_id, |b| &b.id);
        let nodes = spec
            .plan
            .nodes
            .iter()
            .map(|n| {
                (
                    n.name.clone(),
                    NodeRt {
                        container: container_name(names, &n.name),
                        boots: Mutex::new(Vec::new()),
                        stopping: Arc::new(AtomicBool::new(false)),
                    },
                )
            })
            .collect();
        Cluster {
            mechanism: node::of(spec.plan.distro.facts()),
            spec,
            nodes,
            calls: InFlight::default(),
            third: std::sync::OnceLock::new(),
            stopped: Mutex::new(Default::default()),
        }
    }

    fn node(&self, name: &str) -> &NodeRt {
        &self.nodes[name]
    }

    /// A node's fixed address on the run's network, once the network exists.
    pub(crate) fn address(&self, node: &str) -> Option<String> {
        let third = *self.third.get()?;
        let i = self.plan.nodes.iter().position(|n| n.name == node)?;
        Some(spec::node_ip(third, i))
    }

    /// The nodes `node` waits for before its first start: the plan's `start_needs`, except on
    /// a restore, where an etcd member waits for no other etcd member. The members restart
    /// into one cluster that has quorum only once enough of them run (on real k3s a lone
    /// member of three would wait out the others' stage), and none joins: etcd's one learner
    /// at a time is a join's rule. A control-plane-only node and an agent still wait for the
    /// servers they reach.
    pub(crate) fn start_needs(&self, node: &str) -> Vec<String> {
        let needs = self.plan.start_needs.get(node).cloned().unwrap_or_default();
        let etcd = |name: &str| {
            (self.plan.nodes.iter())
                .any(|n| n.name == name && matches!(n.role, Role::Etcd | Role::All))
        };
        if self.restore.is_none() || !etcd(node) {
            return needs;
        }
        needs.into_iter().filter(|n| !etcd(n)).collect()
    }

    /// The run's network (name, third octet), once it exists.
    pub(crate) fn network_of(&self) -> Option<(String, u8)> {
        let third = *self.third.get()?;
        match &self.restore {
            Some(b) => Some((b.network.clone(), third)),
            None => Some((format!("repro-{}", self.run_id), third)),
        }
    }

    pub(crate) fn container(&self, node: &str) -> &str {
        &self.node(node).container
    }

    /// A node as its way of running sees it.
    fn is_agent(&self, node: &str) -> bool {
        (self.plan.nodes.iter()).any(|n| n.name == node && n.role == Role::Agent)
    }

    fn node_ref<'a>(&'a self, name: &'a str) -> node::Node<'a> {
        let rt = self.node(name);
        node::Node {
            docker: &self.docker,
            name,
            container: &rt.container,
            stopping: &rt.stopping,
            calls: &self.calls,
            current: self.current(name),
        }
    }

    fn show(&self, node: &str, state: NodeState, boot: u32, detail: &str) {
        self.events.show(&RunEvent::Node {
            node: node.to_string(),
            state,
            boot,
            detail: detail.to_string(),
        });
    }

    fn labels(&self, node: Option<&str>) -> HashMap<String, String> {
        let mut l = spec::labels(&self.run_id, &self.plan.check, node);
        l.extend(self.extra_labels.clone());
        l
    }

    /// The node's current (last started) boot.
    pub(crate) fn current(&self, node: &str) -> Option<BootHandle> {
        self.node(node)
            .boots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .last()
            .cloned()
    }

    /// The run's network: its name and the third octet of its /24.
    pub(crate) async fn create_network(self: &Arc<Self>) -> Result<(String, u8), RunError> {
        if let Some(b) = &self.restore {
            let _ = self.third.set(b.third);
            return Ok((b.network.clone(), b.third));
        }
        let c = self.clone();
        self.tracked(async move {
            let net = format!("repro-{}", c.run_id);
            let third = c
                .docker
                .create_network(&net, &c.labels(None), c.mtu)
                .await?;
            let _ = c.third.set(third);
            Ok((net, third))
        })
        .await
    }

    /// Runs a create call as a task the teardown waits for (`InFlight`).
    async fn tracked<T: Send + 'static>(
        &self,
        f: impl std::future::Future<Output = Result<T, RunError>> + Send + 'static,
    ) -> Result<T, RunError> {
        self.calls.run(f).await
    }

    /// The plan's `i`-th node: its volume, container (deferred ones too, unstarted) and the
    /// files it needs before its first start.
    pub(crate) async fn create_node(
        self: &Arc<Self>,
        i: usize,
        net: &str,
        third: u8,
    ) -> Result<(), RunError> {
        let (c, net) = (self.clone(), net.to_string());
        self.tracked(async move { c.create_node_now(i, &net, third).await })
            .await
    }

    async fn create_node_now(&self, i: usize, net: &str, third: u8) -> Result<(), RunError> {
        let n: &PlannedNode = &self.plan.nodes[i];
        let kept = self.restore.as_ref().map(|b| &b.nodes[&n.name]);
        let mut files = (self.create_container(i, net, third, &self.plan.image, kept)).await?;
        if let Some(password) = kept.and_then(|k| k.password.clone()) {
            let path = self.plan.distro.facts().node_password_path;
            files.push((path.to_string(), password));
        }
        let rt = self.node(&n.name);
        self.docker.upload(&rt.container, &files).await?;
        if let Some(b) = &self.binary {
            self.docker
                .upload_executable(&rt.container, &b.host, &b.path)
                .await?;
        }
        let detail = if n.deferred {
            "deferred: a step starts it"
        } else {
            "files written"
        };
        self.show(&n.name, NodeState::Created, 0, detail);
        Ok(())
    }

    /// The plan's `i`-th node's volumes (named, so they outlive the container: created if
    /// missing; filled from a kept baseline's node when `kept`, a restore) and container on
    /// `image`; returns the files it needs before its first start.
    async fn create_container(
        &self,
        i: usize,
        net: &str,
        third: u8,
        image: &str,
        kept: Option<&KeptNode>,
    ) -> Result<Vec<(String, String)>, RunError> {
        let n: &PlannedNode = &self.plan.nodes[i];
        let rt = self.node(&n.name);
        let facts = self.plan.distro.facts();
        let args = facts.node_args(n.role == Role::Agent);
        let env = spec::env(
            facts,
            &self.token,
            self.sim_seed,
            n,
            (self.pace, self.plant.as_deref()),
        );
        let process = self.mechanism.process(facts, n.role, args, env);
        let (volume, image_volumes) = self.volumes_of(&n.name, image, process.systemd).await;
        for name in std::iter::once(&volume).chain(image_volumes.iter().map(|(n, _)| n)) {
            self.docker
                .create_volume(name, &self.labels(Some(&n.name)))
                .await?;
        }
        if self.calls.closing() {
            return Err(RunError::Interrupted);
        }
        if let Some(kept) = kept {
            let mine = std::iter::once(&volume).chain(image_volumes.iter().map(|(v, _)| v));
            self.copy_kept(&n.name, kept, mine.cloned().collect(), process.systemd)
                .await?;
        }
        let place = spec::Place {
            plan: &self.plan,
            i,
            net,
            third,
        };
        let labels = self.labels(Some(&n.name));
        let volumes = (volume, image_volumes);
        let mut container =
            place.container(&rt.container, &process, volumes, labels, self.privileged);
        container.image = image.to_string();
        if self.calls.closing() {
            return Err(RunError::Interrupted);
        }
        self.docker.create_node(&container).await?;
        Ok(place.files(&process))
    }

    /// A step's `stop:` of a node: its process gets the distribution's stop signal (its
    /// container is stopped, not removed: volumes, address and files stay) and its boot's log
    /// is drained; the node stays down until a `start:`.
    pub(crate) async fn stop_node(&self, node: &str) -> Result<(), RunError> {
        let rt = self.node(node);
        rt.stopping.store(true, Ordering::SeqCst);
        self.docker.stop(&rt.container, node::STOP_GRACE).await?;
        if let Some(h) = self.current(node) {
            h.ended().await;
        }
        self.stopped_set().insert(node.to_string());
        let boot = self.current(node).map_or(0, |h| h.with(|b| b.number));
        self.show(node, NodeState::Stopped, boot, "stopped by the step");
        Ok(())
    }

    /// A node's data volume and the named volumes over the image's other VOLUMEs, named after
    /// the run (a restore's container has the baseline's name, its volumes are the run's):
    /// anonymous ones carry no label, so an outside `docker rm -f` (without -v) would leave
    /// them where `clean` cannot find them.
    async fn volumes_of(
        &self,
        node: &str,
        image: &str,
        systemd: bool,
    ) -> (String, Vec<(String, String)>) {
        let prefix = container_name(&self.run_id, node);
        let declared = (self.docker.image(image).await)
            .map(|i| i.volumes)
            .unwrap_or_default();
        let facts = self.plan.distro.facts();
        let image_volumes = spec::image_volume_mounts(&prefix, &declared, facts.data_dir, systemd);
        (format!("{prefix}-data"), image_volumes)
    }

    /// Copies a kept node's volumes into this run's (`mine`, in the same order), in one helper
    /// container of the node image.
    async fn copy_kept(
        &self,
        node: &str,
        kept: &KeptNode,
        mine: Vec<String>,
        systemd: bool,
    ) -> Result<(), RunError> {
        let pairs: Vec<(&str, &str)> = (kept.volumes.iter())
            .zip(&mine)
            .map(|((from, _), to)| (from.as_str(), to.as_str()))
            .collect();
        let helper = baseline::copy_helper(
            format!("{}-restore", container_name(&self.run_id, node)),
            (&self.plan.image, self.sim_seed.is_some(), systemd),
            &pairs,
            self.labels(Some(node)),
        );
        match self.docker.run_helper(&helper).await? {
            (0, _) => Ok(()),
            (code, out) => Err(RunError::Internal(format!(
                "restoring {node} from baseline {}: the copy of its volumes exited {code}: {}",
                self.restore.as_ref().map_or("", |b| b.id.as_str()),
                out.trim()
            ))),
        }
    }

    /// Makes this (baseline) cluster, brought up, into a kept baseline: the network's keeper
    /// started on it, every node stopped gracefully at once, its password file copied out, its
    /// container removed; its volumes, the network and its keeper stay, under the baseline's
    /// labels. Returns what a restore needs.
    pub(crate) async fn keep_as_baseline(&self) -> Result<IndexMap<String, KeptNode>, RunError> {
        // Before any node stops: the network never has no running container from here to the
        // baseline's removal (Podman tears an empty network down: `baseline::keeper`).
        let (net, third) = self
            .network_of()
            .ok_or_else(|| RunError::Internal("the baseline's network is not made".into()))?;
        let keeper = baseline::keeper(
            format!("repro-{}_network-keeper", self.run_id),
            (
                &self.plan.image,
                self.sim_seed.is_some(),
                self.mechanism_systemd(),
            ),
            (&net, third),
            self.labels(None),
        );
        // A call the teardown waits for, as a node's create: an interrupt now must not leave
        // a keeper landing after the baseline's removal.
        let docker = self.docker.clone();
        self.tracked(async move { Ok(docker.start_helper(&keeper).await?) })
            .await?;
        for rt in self.nodes.values() {
            rt.stopping.store(true, Ordering::SeqCst);
        }
        let stops = self
            .nodes
            .values()
            .map(|rt| async { self.docker.stop(&rt.container, node::STOP_GRACE).await });
        for r in join_all(stops).await {
            r?;
        }
        let facts = self.plan.distro.facts();
        let systemd = self.mechanism_systemd();
        let mut kept = IndexMap::new();
        for (name, rt) in &self.nodes {
            let password = (self.docker)
                .download(&rt.container, facts.node_password_path)
                .await?
                .map(|b| String::from_utf8_lossy(&b).into_owned());
            self.docker.remove_container(&rt.container).await?;
            let (data, others) = self.volumes_of(name, &self.plan.image, systemd).await;
            let mut volumes = vec![(data, facts.data_dir.to_string())];
            volumes.extend(others);
            kept.insert(name.clone(), KeptNode { volumes, password });
        }
        Ok(kept)
    }

    /// Whether the nodes run systemd as PID 1 (their tmpfs paths are not volumes).
    fn mechanism_systemd(&self) -> bool {
        self.plan.distro.facts().node_process.systemd_pid1()
    }

    fn stopped_set(&self) -> std::sync::MutexGuard<'_, std::collections::HashSet<String>> {
        self.stopped.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether a step's `stop:` took the node down and no `start:` brought it back yet.
    pub(crate) fn is_stopped(&self, node: &str) -> bool {
        self.stopped_set().contains(node)
    }

    /// A step's `start:` of a stopped node brings it back: its next boot is no longer stopped.
    pub(crate) fn started_again(&self, node: &str) {
        self.stopped_set().remove(node);
    }

    /// A step's `upgrade:` of a node, as an install script replacing the binary would leave
    /// it: its boot stopped, its container removed and created again on `image` with the same
    /// name, host name and address, over the same named volumes (its data dir: an etcd member
    /// stays the member it was), with its files as of this step written again; then started
    /// and waited for like a restart: ready (true) or dead (false). A local build (`binary`) is
    /// copied over the image's binary first, as `--k3s-binary`'s is into every node.
    pub(crate) async fn upgrade_node(
        &self,
        node: &str,
        (image, binary): (&str, Option<&crate::scenario::UpgradeBinary>),
        step: usize,
    ) -> Result<bool, RunError> {
        let i = (self.plan.nodes.iter().position(|n| n.name == node)).expect("the plan's node");
        let Some(&third) = self.third.get() else {
            return Err(RunError::Interrupted);
        };
        let rt = self.node(node);
        let password = self.node_password(&rt.container).await;
        rt.stopping.store(true, Ordering::SeqCst);
        self.docker.stop(&rt.container, node::STOP_GRACE).await?;
        if let Some(h) = self.current(node) {
            h.ended().await;
        }
        self.docker.remove_node(&rt.container).await?;
        let net = format!("repro-{}", self.run_id);
        self.create_container(i, &net, third, image, None).await?;
        let mut files = self.files_at(i, step);
        files.extend(password);
        self.docker.upload(&rt.container, &files).await?;
        let mut detail = format!("re-created on {image}");
        if let Some(b) = binary {
            let Some(to) = self.plan.distro.facts().binary_path else {
                return Err(RunError::Internal(format!(
                    "a local build for {node}, but {} has no known binary path (the check's loading refuses that)",
                    self.plan.distro
                )));
            };
            self.docker
                .upload_executable(&rt.container, &b.path, to)
                .await?;
            detail = format!("{detail} with the local build {}", b.path.display());
        }
        self.show(node, NodeState::Created, 0, &detail);
        self.start_and_wait(node, step).await
    }

    /// The node password the node's agent registered with, if it has one (k3s's and rke2's
    /// agents write it on their first start, outside the data dir), to carry over an upgrade:
    /// through the engine's archive API, as a restore copies it (no `cat` in every image).
    async fn node_password(&self, container: &str) -> Option<(String, String)> {
        let path = self.plan.distro.facts().node_password_path;
        match self.docker.download(container, path).await {
            Ok(Some(b)) if !b.is_empty() => {
                Some((path.to_string(), String::from_utf8_lossy(&b).into_owned()))
            }
            _ => None,
        }
    }

    /// The plan's `i`-th node's files as of step `step`: its first files with every edit up to
    /// that step's over them (a deleted file left out), and its way of running's.
    fn files_at(&self, i: usize, step: usize) -> Vec<(String, String)> {
        let n = &self.plan.nodes[i];
        let mut files = self.plan.initial.get(&n.name).cloned().unwrap_or_default();
        for s in self.plan.steps.iter().take_while(|s| s.index <= step) {
            if let Some(edits) = s.edits.get(&n.name) {
                files.extend(edits.clone());
            }
        }
        let facts = self.plan.distro.facts();
        let env = spec::env(
            facts,
            &self.token,
            self.sim_seed,
            n,
            (self.pace, self.plant.as_deref()),
        );
        let args = facts.node_args(n.role == Role::Agent);
        let process = self.mechanism.process(facts, n.role, args, env);
        (files.into_iter())
            .filter_map(|(p, c)| c.map(|c| (p, c)))
            .chain(process.files)
            .collect()
    }

    /// Starts a node's next boot and follows its log from the first line.
    pub(crate) async fn boot(&self, node: &str, step: usize) -> Result<BootHandle, RunError> {
        let rt = self.node(node);
        let number = self.current(node).map_or(1, |h| h.with(|b| b.number) + 1);
        let agent = self.is_agent(node);
        let log_dir = crate::results_folder::node_dir(&self.dir, node);
        super::record::create_dir(&log_dir)?;
        let ready = if agent {
            &self.agent_ready
        } else {
            &self.ready
        };
        let boot = node::Boot {
            number,
            step,
            ready: ready.clone(),
            log_path: log_dir.join(crate::results_folder::boot_log_name(number)),
            on_line: node::live_states(self.events.clone(), node, number, ready.clone()),
            scrub: self.scrub.clone(),
            agent,
            timeout: self.timeout,
        };
        let (h, detail) = (self.mechanism)
            .start(self.plan.distro.facts(), self.node_ref(node), boot)
            .await?;
        rt.boots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(h.clone());
        self.show(node, NodeState::Starting, number, detail);
        Ok(h)
    }

    /// Waits for the boot to be ready (true) or dead (false). A timeout stops the run with the
    /// boot's last lines.
    pub(crate) async fn wait_ready(&self, node: &str, h: &BootHandle) -> Result<bool, RunError> {
        let waited = tokio::time::timeout(
            self.timeout,
            h.wait_for(|b| {
                if b.ready.is_some() {
                    Some(true)
                } else if observe::is_dead(b) || b.end.is_some() {
                    Some(false)
                } else {
                    None
                }
            }),
        )
        .await;
        match waited {
            Ok(Some(true)) => Ok(true),
            Ok(_) => {
                if let Some(e) = h.with(|b| lost(node, b)) {
                    return Err(e);
                }
                let (n, ev) = h.with(|b| (b.number, observe::death_evidence(b)));
                let last = ev
                    .iter()
                    .map(|e| e.text.clone())
                    .collect::<Vec<_>>()
                    .join(" / ");
                self.show(node, NodeState::Dead, n, &last);
                Ok(false)
            }
            Err(_) => {
                let waiting = self.plan.distro.facts().waiting_lines;
                let (n, last, why) = h.with(|b| {
                    let start = b.lines.len().saturating_sub(3);
                    let last: Vec<String> =
                        b.lines[start..].iter().map(|l| l.text.clone()).collect();
                    let why = observe::still_waiting_for(waiting, &b.lines);
                    (b.number, last, why)
                });
                self.show(node, NodeState::Timeout, n, "not ready in time");
                Err(RunError::NotReady {
                    node: node.to_string(),
                    boot: n,
                    timeout: humantime::format_duration(self.timeout).to_string(),
                    why,
                    last: if last.is_empty() {
                        "(no output)".to_string()
                    } else {
                        last.join(" / ")
                    },
                })
            }
        }
    }

    /// Starts a node and waits for its new boot: ready (true) or dead (false).
    pub(crate) async fn start_and_wait(&self, node: &str, step: usize) -> Result<bool, RunError> {
        let h = self.boot(node, step).await?;
        self.wait_ready(node, &h).await
    }

    /// The first half of a restart, as the node's way of running has it (a container's process
    /// is stopped, a unit `systemctl stop`ped; its log drained); `start_and_wait` is the second.
    pub(crate) async fn stop_for_restart(&self, node: &str) -> Result<(), RunError> {
        let facts = self.plan.distro.facts();
        (self.mechanism)
            .stop_for_restart(facts, self.node_ref(node), self.is_agent(node))
            .await
    }

    /// The evidence of a node's death in its current boot, as one line.
    pub(crate) fn death_line(&self, node: &str) -> String {
        self.current(node)
            .map(|h| h.with(observe::death_evidence))
            .unwrap_or_default()
            .iter()
            .map(|e| e.text.as_str())
            .collect::<Vec<_>>()
            .join(" / ")
    }

    /// Each container's `docker inspect`, redacted, next to its logs (asked all at once).
    pub(crate) async fn save_inspect(&self) -> Result<(), RunError> {
        let inspected = join_all(
            self.nodes
                .values()
                .map(|rt| self.docker.inspect_json(&rt.container)),
        )
        .await;
        let found = self.nodes.keys().zip(inspected);
        let found = found.filter_map(|(name, v)| Some((name.as_str(), v.ok()?)));
        super::record::save_inspect(&self.dir, &self.redactor, found)
    }

    /// Removes everything of this run by its label, after every create and start call in
    /// flight has returned, until a listing finds nothing; returns the problems met (empty:
    /// all gone).
    pub(crate) async fn remove(&self) -> Vec<String> {
        for rt in self.nodes.values() {
            rt.stopping.store(true, Ordering::SeqCst);
        }
        let mut problems: Vec<String> = self.calls.drain(CREATE_DRAIN).await.into_iter().collect();
        let removed = self
            .docker
            .remove_labelled(docker::LABEL_RUN, Some(&self.run_id))
            .await;
        if removed.complete {
            return Vec::new();
        }
        problems.extend(removed.errors);
        problems
    }

    /// The first server a boot's load balancer reached, and the node at that address.
    fn lb_server(&self, b: &super::watch::Boot) -> Option<LbServer> {
        let facts = self.plan.distro.facts();
        let address = b.lines.iter().find_map(|l| facts.lb_pick(&l.text))?;
        Some(LbServer {
            address: address.to_string(),
            node: spec::node_at(&self.plan, self.third.get().copied(), address),
        })
    }

    /// Per-boot records for result.json.
    pub(crate) fn boot_records(&self) -> Vec<BootRecord> {
        let mut out = Vec::new();
        for (name, rt) in &self.nodes {
            for h in rt.boots.lock().unwrap_or_else(|p| p.into_inner()).iter() {
                out.push(h.with(|b| super::record::boot_record(name, b, self.lb_server(b))));
            }
        }
        out
    }

    /// The first boot whose log was lost while its node ran on, as the error that stops the
    /// run (exit 3): what was observed after it cannot be trusted, and it is no death.
    pub(crate) fn lost_log(&self) -> Option<RunError> {
        self.nodes.iter().find_map(|(name, rt)| {
            (rt.boots.lock().unwrap_or_else(|p| p.into_inner()).iter())
                .find_map(|h| h.with(|b| lost(name, b)))
        })
    }

    /// The first log file a follower could not write, if any.
    pub(crate) fn log_write_error(&self) -> Option<super::error::RecordError> {
        self.nodes.values().find_map(|rt| {
            rt.boots
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .find_map(|h| h.take_write_error())
        })
    }
}

/// A baseline's cluster interrupted while it was made: its calls in flight land before the
/// slot removes it by label.
impl baseline::Drain for Cluster {
    fn drain(&self) -> futures_util::future::BoxFuture<'_, ()> {
        use futures_util::FutureExt;
        async move {
            for rt in self.nodes.values() {
                rt.stopping.store(true, Ordering::SeqCst);
            }
            let _ = self.calls.drain(CREATE_DRAIN).await;
        }
        .boxed()
    }
}

/// A boot whose log was lost, as the run's error.
fn lost(node: &str, b: &watch::Boot) -> Option<RunError> {
    match &b.end {
        Some(watch::Ended::Lost { reason }) => Some(RunError::LogLost {
            node: node.to_string(),
            boot: b.number,
            reason: reason.clone(),
            hint: super::error::lost_log_hint(reason),
        }),
        _ => None,
    }
}
