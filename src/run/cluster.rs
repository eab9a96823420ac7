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
use crate::result::{BootEnd, BootRecord, Outcome};

use super::error::RunError;
use super::event::{Events, NodeState, RunEvent};
use super::observe;
use super::watch::{self, BootHandle, Ended};

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
    /// The run's redaction context, for `docker inspect` (structurally, as JSON).
    pub(crate) redactor: crate::redact::SharedRedactor,
    /// `--sim-pace`: the stand-in's factor on real k3s timings, passed to every node.
    pub(crate) pace: Option<f64>,
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
        let volume = format!("{}-data", rt.container);
        self.docker
            .create_volume(&volume, &self.labels(Some(&n.name)))
            .await?;
        if self.closing.load(Ordering::SeqCst) {
            return Err(RunError::Interrupted);
        }
        let facts = self.plan.distro.facts();
        let mut env = vec![format!("{}={}", facts.token_env, self.token)];
        env.extend(n.env.iter().map(|(k, v)| format!("{k}={v}")));
        if let Some(f) = self.pace {
            env.push(format!("{}={f}", distro::pace::PACE_ENV));
        }
        let args = match n.role {
            Role::Agent => facts.agent_args,
            _ => facts.server_args,
        };
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
            privileged: self.privileged,
            stop_grace: STOP_GRACE,
        };
        if self.closing.load(Ordering::SeqCst) {
            return Err(RunError::Interrupted);
        }
        self.docker.create_node(&spec).await?;
        let files: Vec<(String, String)> = self.plan.initial[&n.name]
            .iter()
            .filter_map(|(p, c)| c.clone().map(|c| (p.clone(), c)))
            .collect();
        self.docker.upload(&rt.container, &files).await?;
        let detail = if n.deferred {
            "deferred: a step starts it"
        } else {
            "files written"
        };
        self.show(&n.name, NodeState::Created, 0, detail);
        Ok(())
    }

    /// Starts a node's next boot and follows its log from the first line.
    async fn boot(&self, node: &str, step: usize) -> Result<BootHandle, RunError> {
        let rt = self.node(node);
        let prev = self.current(node);
        let after = match &prev {
            Some(h) => {
                h.ended().await;
                h.position()
            }
            None => None,
        };
        let number = prev.as_ref().map_or(1, |h| h.with(|b| b.number) + 1);
        rt.stopping.store(false, Ordering::SeqCst);
        self.docker.start(&rt.container).await?;
        // When the start call returned: Docker's own StartedAt is a moment earlier, and asking
        // for it would cost a round trip on every restart's critical path.
        let started_at = Utc::now();
        let log_dir = crate::results_folder::node_dir(&self.dir, node);
        super::record::create_dir(&log_dir)?;
        let events = self.events.clone();
        let name = node.to_string();
        let is_agent = self
            .plan
            .nodes
            .iter()
            .any(|n| n.name == node && n.role == crate::raw::Role::Agent);
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
        let h = watch::follow(watch::Follow {
            docker: self.docker.clone(),
            container: rt.container.clone(),
            number,
            step,
            started_at,
            after,
            ready: if is_agent {
                self.agent_ready.clone()
            } else {
                self.ready.clone()
            },
            log_path: log_dir.join(crate::results_folder::boot_log_name(number)),
            on_line,
            stopping: rt.stopping.clone(),
            scrub: self.scrub.clone(),
        });
        rt.boots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(h.clone());
        self.show(node, NodeState::Starting, number, "container started");
        Ok(h)
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
    async fn wait_ready(&self, node: &str, h: &BootHandle) -> Result<bool, RunError> {
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
                let (n, last) = h.with(|b| {
                    let start = b.lines.len().saturating_sub(3);
                    let last: Vec<String> =
                        b.lines[start..].iter().map(|l| l.text.clone()).collect();
                    (b.number, last)
                });
                self.show(node, NodeState::Timeout, n, "not ready in time");
                Err(RunError::NotReady {
                    node: node.to_string(),
                    boot: n,
                    timeout: humantime::format_duration(self.timeout).to_string(),
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

    pub(crate) async fn restart_and_wait(&self, node: &str, step: usize) -> Result<bool, RunError> {
        self.stop(node).await?;
        self.start_and_wait(node, step).await
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

/// The fixed address of the plan's `i`-th node on the run's 10.213.`third`.0/24: etcd peer URLs
/// embed the IP (k3d #550), and every node's `/etc/hosts` lists them all.
fn node_ip(third: u8, i: usize) -> String {
    format!("10.213.{third}.{}", 10 + i)
}
