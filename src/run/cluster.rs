//! The cluster of one run: its network, volumes and node containers; starting a node's next
//! boot, stopping it, and waiting until a boot is ready or dead. Teardown goes by label.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::Utc;
use futures_util::future::join_all;
use indexmap::IndexMap;
use tokio_util::task::TaskTracker;

use crate::docker::{self, DockerApi, NodeSpec};
use crate::plan::{Plan, PlannedNode};
use crate::raw::Role;
use crate::result::{BootEnd, BootRecord, LbServer, Outcome};

use super::error::RunError;
use super::event::{Events, NodeState, RunEvent};
use super::journal;
use super::observe;
use super::watch::{self, BootHandle, Ended, LogLine};
use distro::NodeProcess;

/// Where a unit's new boot begins in its journal (`Cluster::start_unit`).
struct StartedUnit {
    unit: &'static str,
    started_at: chrono::DateTime<Utc>,
    cursor: String,
    previous: Option<String>,
}

/// How long `docker stop` lets k3s shut down before it is killed. The shipped tags, as PID 1,
/// exit at once on SIGTERM (the stop takes no grace); releases with k3s's PID-1 signal fix
/// (v1.32.10+, v1.34.2+) stop etcd and kine first, which this leaves room for.
const STOP_GRACE: Duration = Duration::from_secs(20);
/// How long the teardown waits for create calls in flight (each is one API call).
const CREATE_DRAIN: Duration = Duration::from_secs(60);

pub(crate) fn container_name(run_id: &str, node: &str) -> String {
    format!("repro-{run_id}-{node}")
}

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
    /// A build under test, copied into each node before its first start.
    pub(crate) binary: Option<BuildCopy>,
}

/// What the runner needs of a build under test.
#[derive(Debug, Clone)]
pub(crate) struct BuildCopy {
    /// The file on the host.
    pub(crate) host: PathBuf,
    /// Where in each node it replaces the image's binary.
    pub(crate) path: String,
    /// The version it carries, which the nodes' `-v` must print.
    pub(crate) reported: String,
}

/// A running cluster, shared by the steps: its spec (whose fields read as the cluster's own,
/// `c.plan`, through `Deref`) and its nodes' boots.
pub(crate) struct Cluster {
    spec: ClusterSpec,
    nodes: IndexMap<String, NodeRt>,
    /// The create calls in flight (see `tracked`).
    creating: TaskTracker,
    /// Set when the teardown begins: no new create call starts.
    closing: AtomicBool,
    /// The third octet of the run's network, once it exists (node addresses → names).
    third: std::sync::OnceLock<u8>,
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
            spec,
            nodes,
            creating: TaskTracker::new(),
            closing: AtomicBool::new(false),
            third: std::sync::OnceLock::new(),
        }
    }

    fn node(&self, name: &str) -> &NodeRt {
        &self.nodes[name]
    }

    pub(crate) fn container(&self, node: &str) -> &str {
        &self.node(node).container
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
        let mut l = HashMap::new();
        l.insert(docker::LABEL_MANAGED.to_string(), "true".to_string());
        l.insert(docker::LABEL_RUN.to_string(), self.run_id.clone());
        l.insert(docker::LABEL_CHECK.to_string(), self.plan.check.clone());
        if let Some(n) = node {
            l.insert(docker::LABEL_NODE.to_string(), n.to_string());
        }
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
        let c = self.clone();
        self.tracked(async move {
            let net = format!("repro-{}", c.run_id);
            let third = c.docker.create_network(&net, &c.labels(None)).await?;
            let _ = c.third.set(third);
            Ok((net, third))
        })
        .await
    }

    /// Runs a create call as a task of its own that the teardown waits for: a create request
    /// already sent lands in the engine even if the steps' task is aborted (Ctrl-C), and
    /// removal by label must list after it landed, not before (k3s-sized topologies leaked
    /// objects created behind the cleanup otherwise).
    async fn tracked<T: Send + 'static>(
        &self,
        f: impl std::future::Future<Output = Result<T, RunError>> + Send + 'static,
    ) -> Result<T, RunError> {
        if self.closing.load(Ordering::SeqCst) {
            return Err(RunError::Interrupted);
        }
        match self.creating.spawn(f).await {
            Ok(r) => r,
            Err(e) => Err(RunError::Internal(format!("a create task failed: {e}"))),
        }
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
        let rt = self.node(&n.name);
        let facts = self.plan.distro.facts();
        let systemd = facts.node_process == NodeProcess::SystemdUnit;
        let volume = format!("{}-data", rt.container);
        // The image's other VOLUMEs get named, labelled volumes too: anonymous ones carry no
        // label, so an outside `docker rm -f` (without -v) would leave them where `clean`
        // cannot find them.
        let declared = (self.docker.image(&self.plan.image).await)
            .map(|i| i.volumes)
            .unwrap_or_default();
        let image_volumes = image_volume_mounts(&rt.container, &declared, facts.data_dir, systemd);
        for name in std::iter::once(&volume).chain(image_volumes.iter().map(|(n, _)| n)) {
            self.docker
                .create_volume(name, &self.labels(Some(&n.name)))
                .await?;
        }
        if self.closing.load(Ordering::SeqCst) {
            return Err(RunError::Interrupted);
        }
        let mut env = vec![format!("{}={}", facts.token_env, self.token)];
        if let Some(seed) = self.sim_seed {
            env.push(format!(
                "{}={}",
                crate::sim_image::SIM_SEED_ENV,
                crate::sim_image::node_seed(seed, &n.name)
            ));
        }
        env.extend(n.env.iter().map(|(k, v)| format!("{k}={v}")));
        if let Some(f) = self.pace {
            env.push(format!("{}={f}", distro::pace::PACE_ENV));
        }
        let args = match n.role {
            Role::Agent => facts.agent_args,
            _ => facts.server_args,
        };
        // A unit does not see the container's environment: its variables go where the unit
        // reads them, `EnvironmentFile=-/etc/default/%N` of rke2's units (rke2's own Docker
        // tests write them into the unit's .env file instead; that file is the tarball's here).
        let unit_env = systemd.then(|| {
            let unit = facts.unit(n.role == Role::Agent);
            (format!("/etc/default/{unit}"), env.join("\n") + "\n")
        });
        let env = if systemd { Vec::new() } else { env };
        let cmd = args.iter().map(|a| a.to_string()).collect();
        let spec = NodeSpec {
            name: rt.container.clone(),
            hostname: n.name.clone(),
            image: self.plan.image.clone(),
            cmd,
            env,
            labels: self.labels(Some(&n.name)),
            network: net.to_string(),
            ip: node_ip(third, i),
            extra_hosts: (self.plan.nodes.iter().enumerate())
                .map(|(j, m)| format!("{}:{}", m.name, node_ip(third, j)))
                .collect(),
            data_volume: volume,
            data_dir: facts.data_dir.to_string(),
            image_volumes,
            privileged: self.privileged,
            stop_grace: STOP_GRACE,
            systemd,
            host_ro: vec![],
        };
        if self.closing.load(Ordering::SeqCst) {
            return Err(RunError::Interrupted);
        }
        self.docker.create_node(&spec).await?;
        let mut files: Vec<(String, String)> = self.plan.initial[&n.name]
            .iter()
            .filter_map(|(p, c)| c.clone().map(|c| (p.clone(), c)))
            .collect();
        files.extend(unit_env);
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

    /// Starts a node's next boot and follows its log from the first line.
    pub(crate) async fn boot(&self, node: &str, step: usize) -> Result<BootHandle, RunError> {
        let rt = self.node(node);
        let prev = self.current(node);
        // A container's next boot follows its log after the previous boot's last line, once
        // that boot is over; a unit's is found in its journal by its invocation id
        // (`start_unit` ends the previous boot itself).
        let after = match (&prev, self.plan.distro.facts().node_process) {
            (Some(h), NodeProcess::Container) => {
                h.ended().await;
                h.position()
            }
            _ => None,
        };
        let number = prev.as_ref().map_or(1, |h| h.with(|b| b.number) + 1);
        let is_agent = self
            .plan
            .nodes
            .iter()
            .any(|n| n.name == node && n.role == crate::raw::Role::Agent);
        // The one place a node's process is chosen: the container's own, or a systemd unit.
        let unit = match self.plan.distro.facts().node_process {
            NodeProcess::Container => {
                rt.stopping.store(false, Ordering::SeqCst);
                self.docker.start(&rt.container).await?;
                None
            }
            NodeProcess::SystemdUnit => Some(self.start_unit(node, is_agent, prev.as_ref()).await?),
        };
        // When the start call returned: Docker's own StartedAt is a moment earlier, and asking
        // for it would cost a round trip on every restart's critical path.
        let started_at = unit.as_ref().map_or_else(Utc::now, |u| u.started_at);
        let log_dir = crate::results_folder::node_dir(&self.dir, node);
        super::record::create_dir(&log_dir)?;
        let events = self.events.clone();
        let name = node.to_string();
        let ready = if is_agent {
            self.agent_ready.clone()
        } else {
            self.ready.clone()
        };
        let on_line: watch::OnLine = Arc::new(move |_c, l| {
            let state = if ready.iter().any(|r| r.is_match(&l.text)) {
                NodeState::Ready
            } else if l.text.contains("level=fatal") || l.text.contains("level=error") {
                NodeState::Running
            } else {
                return;
            };
            events.show(&RunEvent::Node {
                node: name.clone(),
                state,
                boot: number,
                detail: l.text.clone(),
            });
        });
        let ready = if is_agent {
            self.agent_ready.clone()
        } else {
            self.ready.clone()
        };
        let log_path = log_dir.join(crate::results_folder::boot_log_name(number));
        let h = match unit {
            None => watch::follow(watch::Follow {
                docker: self.docker.clone(),
                container: rt.container.clone(),
                number,
                step,
                started_at,
                after,
                ready,
                log_path,
                on_line,
                stopping: rt.stopping.clone(),
                scrub: self.scrub.clone(),
            }),
            Some(started) => journal::follow(journal::JournalFollow {
                docker: self.docker.clone(),
                container: rt.container.clone(),
                unit: started.unit.to_string(),
                number,
                step,
                started_at,
                after_cursor: started.cursor,
                previous: started.previous,
                ready,
                log_path,
                on_line,
                stopping: rt.stopping.clone(),
                scrub: self.scrub.clone(),
            }),
        };
        rt.boots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(h.clone());
        let detail = match (self.plan.distro.facts().node_process, number) {
            (NodeProcess::Container, _) => "container started",
            (NodeProcess::SystemdUnit, 1) => "unit started",
            (NodeProcess::SystemdUnit, _) => "unit restarted",
        };
        self.show(node, NodeState::Starting, number, detail);
        Ok(h)
    }

    /// Runs a command in a node; its output, or the failure named after `what`.
    async fn in_node(&self, node: &str, what: &str, cmd: &[&str]) -> Result<String, RunError> {
        let cmd: Vec<String> = cmd.iter().map(|s| s.to_string()).collect();
        let (code, out) = self.docker.exec(self.container(node), &cmd).await?;
        if code != 0 {
            return Err(RunError::Systemd {
                node: node.to_string(),
                what: format!("{what} (`{}` exited {code})", cmd.join(" ")),
                output: out.trim().to_string(),
            });
        }
        Ok(out)
    }

    /// Starts (first boot) or restarts a node's unit the way rke2's own tests do, through
    /// systemctl in the node, and returns where its journal's new boot begins. The first boot
    /// starts the container and waits for systemd to finish booting; a restart marks the
    /// running boot as stopped by repro and waits until its follower has seen the stop.
    async fn start_unit(
        &self,
        node: &str,
        agent: bool,
        prev: Option<&BootHandle>,
    ) -> Result<StartedUnit, RunError> {
        let rt = self.node(node);
        let unit = self.plan.distro.facts().unit(agent);
        if prev.is_none() {
            rt.stopping.store(false, Ordering::SeqCst);
            self.docker.start(&rt.container).await?;
            // systemd's bus appears a moment after PID 1 starts; `--wait` then blocks until
            // start-up is done (an event in the node, not a sleep of ours).
            let booted = tokio::time::timeout(
                self.timeout,
                self.in_node(
                    node,
                    "waiting for systemd to boot",
                    &[
                        "sh",
                        "-c",
                        "until [ -S /run/systemd/private ]; do sleep 0.05; done; systemctl is-system-running --wait || true",
                    ],
                ),
            )
            .await
            .map_err(|_| RunError::Systemd {
                node: node.to_string(),
                what: "systemd did not finish booting".into(),
                output: format!("within {}", humantime::format_duration(self.timeout)),
            })??;
            let state = booted.lines().last().unwrap_or_default().trim().to_string();
            if !matches!(state.as_str(), "running" | "degraded") {
                return Err(RunError::Systemd {
                    node: node.to_string(),
                    what: "systemd did not reach `running`".into(),
                    output: state,
                });
            }
        }
        let previous = self
            .in_node(
                node,
                "reading the unit's invocation id",
                &["systemctl", "show", "-p", "InvocationID", "--value", unit],
            )
            .await?
            .trim()
            .to_string();
        let out = self
            .in_node(
                node,
                "reading the journal's cursor",
                &["journalctl", "-n", "0", "--show-cursor", "-q"],
            )
            .await?;
        let cursor = journal::parse_cursor(&out).ok_or_else(|| RunError::Systemd {
            node: node.to_string(),
            what: "the journal has no cursor".into(),
            output: out.trim().to_string(),
        })?;
        let running = prev.filter(|h| h.with(|b| b.end.is_none()));
        if running.is_some() {
            rt.stopping.store(true, Ordering::SeqCst);
        }
        let verb = if prev.is_some() { "restart" } else { "start" };
        // The boot begins with the command: its first lines may come before the old boot's
        // follower has seen that boot end.
        let started_at = Utc::now();
        // `--no-block`: a Type=notify unit's start returns only once it is ready; the journal
        // is what repro waits on (docs/systemd-nodes.md).
        self.in_node(
            node,
            &format!("systemctl {verb}"),
            &["systemctl", verb, "--no-block", unit],
        )
        .await?;
        if let Some(h) = running {
            h.ended().await;
        }
        rt.stopping.store(false, Ordering::SeqCst);
        Ok(StartedUnit {
            unit,
            started_at,
            cursor,
            previous: (!previous.is_empty()).then_some(previous),
        })
    }

    /// Stops a node's current boot (if running) and waits until its log is drained.
    async fn stop(&self, node: &str) -> Result<(), RunError> {
        let rt = self.node(node);
        if let Some(h) = self.current(node) {
            if h.with(|b| b.end.is_none()) {
                rt.stopping.store(true, Ordering::SeqCst);
                self.docker.stop(&rt.container, STOP_GRACE).await?;
                h.ended().await;
            }
        }
        Ok(())
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
                    let why = still_waiting_for(waiting, &b.lines);
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

    /// The first half of a restart: a container's process is stopped (and its log drained) here,
    /// the start that follows is `start_and_wait`'s. A unit is restarted in place (`systemctl
    /// restart`, in `start_unit`): nothing to do before its start.
    pub(crate) async fn stop_for_restart(&self, node: &str) -> Result<(), RunError> {
        if self.plan.distro.facts().node_process == NodeProcess::Container {
            self.stop(node).await?;
        }
        Ok(())
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
        for ((name, _), v) in self.nodes.iter().zip(inspected) {
            let Ok(v) = v else {
                continue;
            };
            let text = serde_json::to_string_pretty(&self.redactor.json(&v))
                .map_err(|e| RunError::Internal(format!("inspect of {name}: {e}")))?;
            let d = crate::results_folder::node_dir(&self.dir, name);
            super::record::create_dir(&d)?;
            super::record::write(&d.join(crate::results_folder::INSPECT_FILE), text)?;
        }
        Ok(())
    }

    /// Removes everything of this run by its label, after every create call in flight has
    /// returned, until a listing finds nothing; returns the problems met (empty: all gone).
    pub(crate) async fn remove(&self) -> Vec<String> {
        self.closing.store(true, Ordering::SeqCst);
        for rt in self.nodes.values() {
            rt.stopping.store(true, Ordering::SeqCst);
        }
        self.creating.close();
        let mut problems = Vec::new();
        if tokio::time::timeout(CREATE_DRAIN, self.creating.wait())
            .await
            .is_err()
        {
            problems.push(format!(
                "{} create call(s) still running after {}s",
                self.creating.len(),
                CREATE_DRAIN.as_secs()
            ));
        }
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

    /// The first server the boot's load balancer reached, and the node at that address.
    fn lb_server(&self, b: &super::watch::Boot) -> Option<LbServer> {
        let facts = self.plan.distro.facts();
        let address = b.lines.iter().find_map(|l| facts.lb_pick(&l.text))?;
        let host = address.rsplit_once(':').map_or(address, |(h, _)| h);
        let node = (self.plan.nodes.iter().enumerate())
            .find(|(i, n)| {
                n.name == host || self.third.get().is_some_and(|t| node_ip(*t, *i) == host)
            })
            .map(|(_, n)| n.name.clone());
        Some(LbServer {
            address: address.to_string(),
            node,
        })
    }

    /// Per-boot records for result.json.
    pub(crate) fn boot_records(&self) -> Vec<BootRecord> {
        let mut out = Vec::new();
        for (name, rt) in &self.nodes {
            for h in rt.boots.lock().unwrap_or_else(|p| p.into_inner()).iter() {
                out.push(h.with(|b| {
                    BootRecord {
                        node: name.clone(),
                        boot: b.number,
                        step: b.step,
                        started_at: b
                            .started_at
                            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                        ready_at: b.ready.map(|i| {
                            b.lines[i]
                                .ts
                                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
                        }),
                        ended_at: match &b.end {
                            Some(Ended::Died { at, .. } | Ended::Stopped { at }) => {
                                Some(at.clone())
                            }
                            _ => None,
                        },
                        end: match &b.end {
                            None => BootEnd::Running,
                            Some(Ended::Stopped { .. }) => BootEnd::Stopped,
                            Some(Ended::Died { .. }) => BootEnd::Exited,
                            Some(Ended::Lost { .. }) => BootEnd::Lost,
                        },
                        exit_code: match &b.end {
                            Some(Ended::Died { exit_code, .. }) => *exit_code,
                            _ => None,
                        },
                        log: crate::results_folder::boot_log(name, b.number),
                        lb_server: self.lb_server(b),
                    }
                }));
            }
        }
        out
    }

    /// The first log file a follower could not write, if any.
    pub(crate) fn log_write_error(&self) -> Option<super::record::RecordError> {
        self.nodes.values().find_map(|rt| {
            rt.boots
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .find_map(|h| h.take_write_error())
        })
    }
}

/// What a node that is not ready was still waiting for, in the words of its waiting lines
/// (`Facts::waiting_lines`, in their order). A node can wait for several things at once — an
/// etcd-only joiner both for its promotion and for an apiserver — and k3s repeats each on its own
/// timer, so every reason whose line is among the last few is named, not only the newest; when
/// none is that recent, the last waiting line of the boot.
fn still_waiting_for(waiting: &[(&str, &str)], lines: &[LogLine]) -> String {
    const RECENT: usize = 10;
    let recent = &lines[lines.len().saturating_sub(RECENT)..];
    let named: Vec<String> = waiting
        .iter()
        .filter_map(|(pattern, what)| {
            let l = recent.iter().rev().find(|l| l.text.contains(pattern))?;
            Some(format!("{what} (`{}`)", l.text))
        })
        .collect();
    if !named.is_empty() {
        return format!(": {}", named.join("; "));
    }
    (lines.iter().rev())
        .find_map(|l| {
            let (_, what) = waiting.iter().find(|(p, _)| l.text.contains(p))?;
            Some(format!(": {what} (`{}`)", l.text))
        })
        .unwrap_or_default()
}

/// The fixed address of the plan's `i`-th node on the run's 10.213.`third`.0/24: etcd peer URLs
/// embed the IP (k3d #550), and every node's `/etc/hosts` lists them all.
fn node_ip(third: u8, i: usize) -> String {
    format!("10.213.{third}.{}", 10 + i)
}

/// A named volume (name, path) for each `VOLUME` the image declares (`declared`) that nothing
/// else covers — not the data dir (its own volume, kept across restarts) nor a tmpfs — named
/// after the container, its place in the list and the path (Docker allows `[a-zA-Z0-9_.-]`).
fn image_volume_mounts(
    container: &str,
    declared: &[String],
    data_dir: &str,
    systemd: bool,
) -> Vec<(String, String)> {
    let covered = |p: &str| p == data_dir || crate::docker::tmpfs_paths(systemd).contains(&p);
    let mut paths: Vec<&str> = declared
        .iter()
        .map(|p| match p.trim_end_matches('/') {
            "" => "/",
            t => t,
        })
        .filter(|p| !covered(p))
        .collect();
    paths.sort_unstable();
    paths.dedup();
    paths
        .into_iter()
        .enumerate()
        .map(|(k, p)| {
            let slug: String = p
                .trim_start_matches('/')
                .chars()
                .map(|c| match c {
                    'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '.' | '-' => c,
                    _ => '-',
                })
                .collect();
            (format!("{container}-vol{k}-{slug}"), p.to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(texts: &[&str]) -> Vec<LogLine> {
        texts
            .iter()
            .map(|t| LogLine {
                ts: Utc::now(),
                seen: std::time::Instant::now(),
                text: t.to_string(),
            })
            .collect()
    }

    #[test]
    fn a_node_waiting_for_two_things_is_said_to_wait_for_both() {
        let waiting = distro::Distro::K3s.facts().waiting_lines;
        let lines = log(&[
            "msg=\"Waiting for control-plane node to register apiserver addresses in etcd\"",
            "msg=\"Failed to test etcd connection: this server has not yet been promoted from learner to voting member\"",
            "msg=\"Waiting for control-plane node to register apiserver addresses in etcd\"",
        ]);
        let why = still_waiting_for(waiting, &lines);
        let learner = why.find("still a learner").expect(&why);
        let apiserver = why.find("registered an apiserver").expect(&why);
        assert!(learner < apiserver, "in the facts' order: {why}");
        // A reason long past (the learner promoted, 20 lines ago) is not named again.
        let mut old = log(&["msg=\"has not yet been promoted from learner to voting member\""]);
        old.extend(log(&["msg=\"other\""; 20]));
        old.extend(log(&[
            "msg=\"Waiting for control-plane node to register apiserver addresses in etcd\"",
        ]));
        let why = still_waiting_for(waiting, &old);
        assert!(
            !why.contains("learner") && why.contains("apiserver"),
            "{why}"
        );
        // Nothing recent: the last waiting line of the boot, as before.
        let mut past = log(&["msg=\"too many learner members in cluster\""]);
        past.extend(log(&["msg=\"other\""; 20]));
        assert!(still_waiting_for(waiting, &past).contains("second learner"));
        assert_eq!(still_waiting_for(waiting, &log(&["x"])), "");
    }

    #[test]
    fn every_image_volume_but_the_data_dir_and_tmpfs_gets_a_named_one() {
        let declared: Vec<String> = [
            "/var/lib/kubelet",
            "/var/lib/rancher/k3s",
            "/var/lib/cni/",
            "/var/log",
            "/run",
            "/data dir/x",
            "/var/log",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            image_volume_mounts(
                "repro-ab12-etcd-1",
                &declared,
                "/var/lib/rancher/k3s",
                false
            ),
            vec![
                (
                    "repro-ab12-etcd-1-vol0-data-dir-x".into(),
                    "/data dir/x".into()
                ),
                (
                    "repro-ab12-etcd-1-vol1-var-lib-cni".into(),
                    "/var/lib/cni".into()
                ),
                (
                    "repro-ab12-etcd-1-vol2-var-lib-kubelet".into(),
                    "/var/lib/kubelet".into()
                ),
                ("repro-ab12-etcd-1-vol3-var-log".into(), "/var/log".into()),
            ]
        );
        assert!(image_volume_mounts("c", &[], "/d", false).is_empty());
    }
}
