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
        let nodes = spec
            .plan
            .nodes
            .iter()
            .map(|n| {
                (
                    n.name.clone(),
                    NodeRt {
                        container: container_name(&spec.run_id, &n.name),
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

    pub(crate) fn container(&self, node: &str) -> &str {
        &self.node(node).container
    }

    /// A node as its way of running sees it.
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
        spec::labels(&self.run_id, &self.plan.check, node)
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
        let files = self
            .create_container(i, net, third, &self.plan.image)
            .await?;
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
    /// missing) and container on `image`; returns the files it needs before its first start.
    async fn create_container(
        &self,
        i: usize,
        net: &str,
        third: u8,
        image: &str,
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
        let volume = format!("{}-data", rt.container);
        // The image's other VOLUMEs get named, labelled volumes too: anonymous ones carry no
        // label, so an outside `docker rm -f` (without -v) would leave them where `clean`
        // cannot find them.
        let declared = (self.docker.image(image).await)
            .map(|i| i.volumes)
            .unwrap_or_default();
        let image_volumes =
            spec::image_volume_mounts(&rt.container, &declared, facts.data_dir, process.systemd);
        for name in std::iter::once(&volume).chain(image_volumes.iter().map(|(n, _)| n)) {
            self.docker
                .create_volume(name, &self.labels(Some(&n.name)))
                .await?;
        }
        if self.calls.closing() {
            return Err(RunError::Interrupted);
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
    /// and waited for like a restart: ready (true) or dead (false).
    pub(crate) async fn upgrade_node(
        &self,
        node: &str,
        image: &str,
        step: usize,
    ) -> Result<bool, RunError> {
        let i = (self.plan.nodes.iter().position(|n| n.name == node)).expect("the plan's node");
        let Some(&third) = self.third.get() else {
            return Err(RunError::Interrupted);
        };
        let rt = self.node(node);
        // Read while the node runs (`cat` is no part of the stand-in's image: it has none).
        let password = self.node_password(&rt.container).await;
        rt.stopping.store(true, Ordering::SeqCst);
        self.docker.stop(&rt.container, node::STOP_GRACE).await?;
        if let Some(h) = self.current(node) {
            h.ended().await;
        }
        self.docker.remove_node(&rt.container).await?;
        let net = format!("repro-{}", self.run_id);
        self.create_container(i, &net, third, image).await?;
        let mut files = self.files_at(i, step);
        files.extend(password);
        self.docker.upload(&rt.container, &files).await?;
        self.show(
            node,
            NodeState::Created,
            0,
            &format!("re-created on {image}"),
        );
        self.start_and_wait(node, step).await
    }

    /// The node password the node's agent registered with, if it has one (k3s's and rke2's
    /// agents write it on their first start, outside the data dir), to carry over an upgrade.
    async fn node_password(&self, container: &str) -> Option<(String, String)> {
        let path = self.plan.distro.facts().node_password_path;
        let cat = ["cat", "--", path].map(str::to_string);
        match self.docker.exec(container, &cat).await {
            Ok((0, out)) if !out.is_empty() => Some((path.to_string(), out)),
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
        let agent = (self.plan.nodes.iter()).any(|n| n.name == node && n.role == Role::Agent);
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
    /// is stopped and its log drained; a unit is restarted in place by the start that follows,
    /// `start_and_wait`'s).
    pub(crate) async fn stop_for_restart(&self, node: &str) -> Result<(), RunError> {
        self.mechanism.stop_for_restart(self.node_ref(node)).await
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
