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

use crate::docker::{self, DockerApi, NodeSpec};
use crate::plan::{Plan, PlannedNode};
use crate::raw::Role;
use crate::result::{BootEnd, BootRecord, Outcome};

use super::error::RunError;
use super::event::{Events, NodeState, RunEvent};
use super::observe;
use super::watch::{self, BootHandle, Ended};

/// How long `docker stop` lets k3s shut down before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(20);

pub fn container_name(run_id: &str, node: &str) -> String {
    format!("repro-{run_id}-{node}")
}

/// Everything a running cluster needs, shared by the steps.
pub struct Cluster {
    pub docker: Arc<dyn DockerApi>,
    pub run_id: String,
    pub plan: Plan,
    pub dir: PathBuf,
    pub events: Events,
    /// How long a boot may take to be ready (or dead).
    pub timeout: Duration,
    /// How long to wait after a settled-by line (its order decides) or readiness.
    pub settle: observe::Settle,
    pub privileged: bool,
    /// Applied to every log line and probe output: removes the run's secrets.
    pub scrub: watch::Scrub,
    /// The outcome the run is asked to show (what each observation is judged against).
    pub expect: Outcome,
    nodes: IndexMap<String, NodeRt>,
    ready: Vec<regex::Regex>,
    token: String,
    redactor: crate::redact::SharedRedactor,
}

struct NodeRt {
    container: String,
    boots: Mutex<Vec<BootHandle>>,
    stopping: Arc<AtomicBool>,
}

/// What a cluster is made of, besides the plan.
pub struct ClusterSpec {
    pub docker: Arc<dyn DockerApi>,
    pub run_id: String,
    pub plan: Plan,
    pub dir: PathBuf,
    pub events: Events,
    pub timeout: Duration,
    pub settle: observe::Settle,
    pub privileged: bool,
    pub scrub: watch::Scrub,
    pub expect: Outcome,
    /// Lines that say a boot is ready.
    pub ready: Vec<regex::Regex>,
    pub token: String,
    /// The run's redaction context, for `docker inspect` (structurally, as JSON).
    pub redactor: crate::redact::SharedRedactor,
}

impl Cluster {
    pub fn new(s: ClusterSpec) -> Cluster {
        let nodes = s
            .plan
            .nodes
            .iter()
            .map(|n| {
                (
                    n.name.clone(),
                    NodeRt {
                        container: container_name(&s.run_id, &n.name),
                        boots: Mutex::new(Vec::new()),
                        stopping: Arc::new(AtomicBool::new(false)),
                    },
                )
            })
            .collect();
        Cluster {
            docker: s.docker,
            run_id: s.run_id,
            plan: s.plan,
            dir: s.dir,
            events: s.events,
            timeout: s.timeout,
            settle: s.settle,
            privileged: s.privileged,
            scrub: s.scrub,
            expect: s.expect,
            nodes,
            ready: s.ready,
            token: s.token,
            redactor: s.redactor,
        }
    }

    fn node(&self, name: &str) -> &NodeRt {
        &self.nodes[name]
    }

    pub fn container(&self, node: &str) -> &str {
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
    pub fn current(&self, node: &str) -> Option<BootHandle> {
        self.node(node)
            .boots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .last()
            .cloned()
    }

    /// The run's network: its name and the third octet of its /24.
    pub async fn create_network(&self) -> Result<(String, u8), RunError> {
        let net = format!("repro-{}", self.run_id);
        let third = self.docker.create_network(&net, &self.labels(None)).await?;
        Ok((net, third))
    }

    /// The plan's `i`-th node: its volume, container (deferred ones too, unstarted) and the
    /// files it needs before its first start.
    pub async fn create_node(&self, i: usize, net: &str, third: u8) -> Result<(), RunError> {
        let n: &PlannedNode = &self.plan.nodes[i];
        let rt = self.node(&n.name);
        let volume = format!("{}-data", rt.container);
        self.docker
            .create_volume(&volume, &self.labels(Some(&n.name)))
            .await?;
        let mut env = vec![format!("K3S_TOKEN={}", self.token)];
        env.extend(n.env.iter().map(|(k, v)| format!("{k}={v}")));
        let cmd = match n.role {
            Role::Agent => vec!["agent".to_string()],
            _ => vec!["server".to_string()],
        };
        let spec = NodeSpec {
            name: rt.container.clone(),
            hostname: n.name.clone(),
            image: self.plan.image.clone(),
            cmd,
            env,
            labels: self.labels(Some(&n.name)),
            network: net.to_string(),
            // Fixed addresses: etcd peer URLs embed the IP (k3d #550).
            ip: format!("10.213.{third}.{}", 10 + i),
            data_volume: volume,
            privileged: self.privileged,
            stop_grace: STOP_GRACE,
        };
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
                h.with(|b| b.last_ts())
            }
            None => None,
        };
        let number = prev.as_ref().map_or(1, |h| h.with(|b| b.number) + 1);
        rt.stopping.store(false, Ordering::SeqCst);
        self.docker.start(&rt.container).await?;
        // When the start call returned: Docker's own StartedAt is a moment earlier, and asking
        // for it would cost a round trip on every restart's critical path.
        let started_at = Utc::now();
        let log_dir = self.dir.join("nodes").join(node);
        super::record::create_dir(&log_dir)?;
        let events = self.events.clone();
        let name = node.to_string();
        let ready = self.ready.clone();
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
            ready: self.ready.clone(),
            log_path: log_dir.join(format!("boot-{number}.log")),
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
    pub async fn start_and_wait(&self, node: &str, step: usize) -> Result<bool, RunError> {
        let h = self.boot(node, step).await?;
        self.wait_ready(node, &h).await
    }

    pub async fn restart_and_wait(&self, node: &str, step: usize) -> Result<bool, RunError> {
        self.stop(node).await?;
        self.start_and_wait(node, step).await
    }

    /// The evidence of a node's death in its current boot, as one line.
    pub fn death_line(&self, node: &str) -> String {
        self.current(node)
            .map(|h| h.with(observe::death_evidence))
            .unwrap_or_default()
            .iter()
            .map(|e| e.text.as_str())
            .collect::<Vec<_>>()
            .join(" / ")
    }

    /// Each container's `docker inspect`, redacted, next to its logs (asked all at once).
    pub async fn save_inspect(&self) -> Result<(), RunError> {
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
            let d = self.dir.join("nodes").join(name);
            super::record::create_dir(&d)?;
            super::record::write(&d.join("inspect.json"), text)?;
        }
        Ok(())
    }

    /// Removes everything of this run by its label; returns the problems met.
    pub async fn remove(&self) -> Vec<String> {
        for rt in self.nodes.values() {
            rt.stopping.store(true, Ordering::SeqCst);
        }
        self.docker
            .remove_labelled(docker::LABEL_RUN, Some(&self.run_id))
            .await
            .errors
    }

    /// Per-boot records for result.json.
    pub fn boot_records(&self) -> Vec<BootRecord> {
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
                        log: format!("nodes/{name}/boot-{}.log", b.number),
                    }
                }));
            }
        }
        out
    }

    /// The first log file a follower could not write, if any.
    pub fn log_write_error(&self) -> Option<super::record::RecordError> {
        self.nodes.values().find_map(|rt| {
            rt.boots
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .find_map(|h| h.take_write_error())
        })
    }
}
