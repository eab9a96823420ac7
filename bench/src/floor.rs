//! The Docker floor: the operations a run of a plan cannot avoid, done with bare bollard calls
//! and no repro logic (only its tar of the files, the bytes any client sends) — network and
//! volumes, containers with their files (created while the first joins run), the start order's
//! joins one after another (each waits for the node's ready line on a log stream), each step's
//! file writes and restarts in check order, then waiting until every observed node has printed
//! the line after which nothing it says can change the answer (k3s's `Running kubelet`), and
//! teardown. Whatever repro spends beyond this is its own overhead.
//!
//! The plan comes from `repro plan --format json` (data only: names, files, orders); nothing
//! here decides anything about k3s.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use bollard::models::{
    ContainerCreateBody, EndpointSettings, HostConfig, NetworkCreateRequest, NetworkingConfig,
    RestartPolicy, RestartPolicyNameEnum, VolumeCreateRequest,
};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, LogsOptionsBuilder, RemoveContainerOptionsBuilder,
    RemoveVolumeOptions, StopContainerOptionsBuilder, UploadToContainerOptionsBuilder,
};
use bollard::Docker;
use chrono::{DateTime, Utc};
use futures_util::future::try_join_all;
use futures_util::StreamExt;
use indexmap::IndexMap;
use regex::Regex;
use serde::Deserialize;
use tokio::sync::watch;

/// The part of `repro plan --format json` the floor replays.
#[derive(Debug, Clone, Deserialize)]
pub struct Plan {
    pub image: String,
    pub nodes: Vec<PlanNode>,
    pub start_order: Vec<Vec<String>>,
    pub initial: IndexMap<String, IndexMap<String, Option<String>>>,
    pub steps: Vec<PlanStep>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PlanNode {
    pub name: String,
    pub role: String,
    #[serde(default)]
    pub env: IndexMap<String, String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PlanStep {
    pub index: usize,
    pub edits: IndexMap<String, IndexMap<String, Option<String>>>,
    pub start: Vec<String>,
    pub restart: Vec<Vec<String>>,
    pub expect: IndexMap<String, serde_json::Value>,
}

/// Wall time of each phase, in seconds.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Phases {
    /// Until every node's volume, container and first files exist (overlaps the joins).
    pub create: f64,
    /// The start order's joins, each until its ready line (starts while creation goes on).
    pub joins: f64,
    /// create + joins: what repro calls `cluster-up`.
    pub cluster_up: f64,
    /// Per step: writes, restarts until ready, and the observed nodes' last deciding line.
    pub steps: Vec<f64>,
    pub teardown: f64,
    pub total: f64,
}

/// The two lines the floor waits for: readiness, and the line after which a boot has said
/// everything an observation needs.
pub struct Marks {
    pub ready: Regex,
    pub done: Regex,
}

impl Default for Marks {
    fn default() -> Self {
        Marks {
            ready: Regex::new("k3s is up and running").expect("static regex"),
            done: Regex::new("(?i)Running kubelet").expect("static regex"),
        }
    }
}

/// A log line: Docker's timestamp and the text.
type Line = (DateTime<Utc>, String);

/// One boot's log as it arrives.
#[derive(Clone)]
struct BootLog {
    lines: Arc<Mutex<Vec<Line>>>,
    ended: Arc<Mutex<bool>>,
    rx: watch::Receiver<u64>,
}

impl BootLog {
    /// Follows `container`'s log, keeping only lines newer than `after` (earlier boots).
    fn follow(docker: &Docker, container: &str, after: Option<DateTime<Utc>>) -> BootLog {
        let (tx, rx) = watch::channel(0u64);
        let log = BootLog {
            lines: Arc::default(),
            ended: Arc::default(),
            rx,
        };
        let opts = LogsOptionsBuilder::default()
            .follow(true)
            .stdout(true)
            .stderr(true)
            .timestamps(true)
            .since(after.map_or(0, |t| t.timestamp()) as i32)
            .build();
        let mut stream = docker.logs(container, Some(opts));
        let (lines, ended) = (log.lines.clone(), log.ended.clone());
        tokio::spawn(async move {
            let mut buf = Vec::new();
            let mut tick = 0u64;
            while let Some(Ok(chunk)) = stream.next().await {
                buf.extend_from_slice(&chunk.into_bytes());
                while let Some(pos) = buf.iter().position(|&c| c == b'\n') {
                    let raw: Vec<u8> = buf.drain(..=pos).collect();
                    let s = String::from_utf8_lossy(&raw[..raw.len() - 1]).into_owned();
                    let Some((ts, text)) = s.split_once(' ') else {
                        continue;
                    };
                    let Ok(ts) = DateTime::parse_from_rfc3339(ts) else {
                        continue;
                    };
                    let ts = ts.with_timezone(&Utc);
                    if after.is_some_and(|a| ts <= a) {
                        continue;
                    }
                    lines
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push((ts, text.to_string()));
                    tick += 1;
                    let _ = tx.send(tick);
                }
            }
            *ended.lock().unwrap_or_else(|p| p.into_inner()) = true;
            let _ = tx.send(tick + 1);
        });
        log
    }

    fn has(&self, re: &Regex) -> bool {
        self.lines
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .any(|(_, l)| re.is_match(l))
    }

    fn last_ts(&self) -> Option<DateTime<Utc>> {
        self.lines
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .last()
            .map(|(t, _)| *t)
    }

    fn is_ended(&self) -> bool {
        *self.ended.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for a line matching `re`; fails if the boot ends first or after `timeout`.
    async fn wait_line(&self, re: &Regex, what: &str, timeout: Duration) -> Result<()> {
        let mut rx = self.rx.clone();
        let wait = async {
            loop {
                if self.has(re) {
                    return Ok(());
                }
                if self.is_ended() {
                    bail!("the boot ended before its {what} line");
                }
                if rx.changed().await.is_err() {
                    bail!("log follower gone before the {what} line");
                }
            }
        };
        tokio::time::timeout(timeout, wait)
            .await
            .map_err(|_| anyhow!("no {what} line within {timeout:?}"))?
    }

    /// Waits until the log stream has ended (the container stopped and its log drained).
    async fn wait_ended(&self) {
        let mut rx = self.rx.clone();
        while !self.is_ended() {
            if rx.changed().await.is_err() {
                return;
            }
        }
    }
}

struct Floor<'a> {
    docker: &'a Docker,
    plan: &'a Plan,
    marks: &'a Marks,
    id: String,
    boots: Mutex<HashMap<String, BootLog>>,
    timeout: Duration,
}

/// Replays `plan` on Docker with nothing but the unavoidable calls; always tears down.
pub async fn run(docker: &Docker, plan: &Plan, marks: &Marks) -> Result<Phases> {
    let f = Floor {
        docker,
        plan,
        marks,
        id: format!("floor-{:08x}", rand_u32()),
        boots: Mutex::default(),
        timeout: Duration::from_secs(120),
    };
    let t0 = Instant::now();
    let body = f.body(t0).await;
    let td = Instant::now();
    let down = f.teardown().await;
    let teardown = td.elapsed().as_secs_f64();
    let mut phases = body?;
    down?;
    phases.teardown = teardown;
    phases.total = t0.elapsed().as_secs_f64();
    Ok(phases)
}

fn rand_u32() -> u32 {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    n ^ std::process::id().rotate_left(16)
}

impl Floor<'_> {
    fn container(&self, node: &str) -> String {
        format!("repro-{}-{node}", self.id)
    }

    fn volume(&self, node: &str) -> String {
        format!("repro-{}-{node}-data", self.id)
    }

    fn network(&self) -> String {
        format!("repro-{}", self.id)
    }

    /// Labels as repro's own, so `repro clean --run <id>` removes anything a crash leaves.
    fn labels(&self) -> HashMap<String, String> {
        HashMap::from([
            ("io.repro.managed".to_string(), "true".to_string()),
            ("io.repro.run".to_string(), self.id.clone()),
        ])
    }

    /// Creation overlaps the joins (a node starts as soon as it exists and the group before it
    /// is ready), the best schedule there is: the floor must not be beaten by a smarter order.
    async fn body(&self, t0: Instant) -> Result<Phases> {
        let mut p = Phases::default();
        self.docker
            .create_network(NetworkCreateRequest {
                name: self.network(),
                driver: Some("bridge".into()),
                labels: Some(self.labels()),
                ..Default::default()
            })
            .await
            .context("create network")?;
        let nodes = &self.plan.nodes;
        let (txs, rxs): (Vec<_>, Vec<_>) = nodes.iter().map(|_| watch::channel(None)).unzip();
        let creating =
            futures_util::future::join_all(nodes.iter().zip(&txs).map(|(n, tx)| async move {
                let r = self.create_node(n).await;
                let _ = tx.send(Some(r.is_ok()));
                r
            }));
        let created_at: Mutex<Option<f64>> = Mutex::default();
        let creating = async {
            let r = creating.await;
            *created_at.lock().unwrap_or_else(|e| e.into_inner()) =
                Some(t0.elapsed().as_secs_f64());
            r
        };
        let starting = async {
            let tj = Instant::now();
            for group in &self.plan.start_order {
                for n in group {
                    let i = nodes
                        .iter()
                        .position(|p| &p.name == n)
                        .ok_or_else(|| anyhow!("{n} is not in the plan"))?;
                    let mut rx = rxs[i].clone();
                    if !matches!(
                        rx.wait_for(Option::is_some).await.as_deref(),
                        Ok(Some(true))
                    ) {
                        bail!("{n} could not be created");
                    }
                }
                try_join_all(group.iter().map(|n| self.start_until_ready(n))).await?;
            }
            anyhow::Ok(tj.elapsed().as_secs_f64())
        };
        let (created, joins) = tokio::join!(creating, starting);
        for r in created {
            r?;
        }
        p.joins = joins?;
        p.create = created_at
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .unwrap_or_default();
        p.cluster_up = t0.elapsed().as_secs_f64();
        for step in &self.plan.steps {
            let ts = Instant::now();
            self.step(step)
                .await
                .with_context(|| format!("step {}", step.index))?;
            p.steps.push(ts.elapsed().as_secs_f64());
        }
        Ok(p)
    }

    async fn create_node(&self, n: &PlanNode) -> Result<()> {
        let name = self.container(&n.name);
        self.docker
            .create_volume(VolumeCreateRequest {
                name: Some(self.volume(&n.name)),
                labels: Some(self.labels()),
                ..Default::default()
            })
            .await
            .context("create volume")?;
        let mut env = vec!["K3S_TOKEN=floor-not-a-secret".to_string()];
        env.extend(n.env.iter().map(|(k, v)| format!("{k}={v}")));
        let body = ContainerCreateBody {
            image: Some(self.plan.image.clone()),
            hostname: Some(n.name.clone()),
            cmd: Some(vec![
                if n.role == "agent" { "agent" } else { "server" }.into()
            ]),
            env: Some(env),
            labels: Some(self.labels()),
            // As repro's containers (src/docker.rs): k3s as PID 1, SIGTERM and the same grace,
            // so the floor pays for exactly the container setup a run pays for.
            stop_signal: Some("SIGTERM".into()),
            stop_timeout: Some(20),
            host_config: Some(HostConfig {
                init: Some(false),
                tmpfs: Some(HashMap::from([
                    ("/run".to_string(), String::new()),
                    ("/var/run".to_string(), String::new()),
                ])),
                network_mode: Some(self.network()),
                binds: Some(vec![format!(
                    "{}:/var/lib/rancher/k3s",
                    self.volume(&n.name)
                )]),
                restart_policy: Some(RestartPolicy {
                    name: Some(RestartPolicyNameEnum::NO),
                    maximum_retry_count: None,
                }),
                ..Default::default()
            }),
            networking_config: Some(NetworkingConfig {
                endpoints_config: Some(HashMap::from([(
                    self.network(),
                    EndpointSettings {
                        aliases: Some(vec![n.name.clone()]),
                        ..Default::default()
                    },
                )])),
            }),
            ..Default::default()
        };
        self.docker
            .create_container(
                Some(CreateContainerOptionsBuilder::default().name(&name).build()),
                body,
            )
            .await
            .with_context(|| format!("create container {name}"))?;
        let files: Vec<(String, String)> = self.plan.initial[&n.name]
            .iter()
            .filter_map(|(p, c)| c.clone().map(|c| (p.clone(), c)))
            .collect();
        self.upload(&n.name, &files).await
    }

    async fn upload(&self, node: &str, files: &[(String, String)]) -> Result<()> {
        if files.is_empty() {
            return Ok(());
        }
        let name = self.container(node);
        let tar = repro::docker::build_tar(files).context("pack the files")?;
        self.docker
            .upload_to_container(
                &name,
                Some(UploadToContainerOptionsBuilder::default().path("/").build()),
                bollard::body_full(bytes::Bytes::from(tar)),
            )
            .await
            .with_context(|| format!("upload to {name}"))
    }

    async fn start_until_ready(&self, node: &str) -> Result<()> {
        let name = self.container(node);
        let after = self.current(node).and_then(|b| b.last_ts());
        self.docker
            .start_container(
                &name,
                None::<bollard::query_parameters::StartContainerOptions>,
            )
            .await
            .with_context(|| format!("start {name}"))?;
        let log = BootLog::follow(self.docker, &name, after);
        self.boots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(node.to_string(), log.clone());
        log.wait_line(&self.marks.ready, "ready", self.timeout)
            .await
            .with_context(|| node.to_string())
    }

    fn current(&self, node: &str) -> Option<BootLog> {
        self.boots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(node)
            .cloned()
    }

    async fn restart_until_ready(&self, node: &str) -> Result<()> {
        let name = self.container(node);
        self.docker
            .stop_container(
                &name,
                Some(StopContainerOptionsBuilder::default().t(20).build()),
            )
            .await
            .with_context(|| format!("stop {name}"))?;
        // The next boot's lines are told from this one's by time: its log must be complete.
        if let Some(b) = self.current(node) {
            b.wait_ended().await;
        }
        self.start_until_ready(node).await
    }

    async fn step(&self, step: &PlanStep) -> Result<()> {
        try_join_all(step.edits.iter().map(|(node, files)| async move {
            let writes: Vec<(String, String)> = files
                .iter()
                .filter_map(|(p, c)| c.clone().map(|c| (p.clone(), c)))
                .collect();
            self.upload(node, &writes).await?;
            let deletes: Vec<String> = files
                .iter()
                .filter(|(_, c)| c.is_none())
                .map(|(p, _)| p.clone())
                .collect();
            if !deletes.is_empty() {
                self.exec_rm(node, &deletes).await?;
            }
            anyhow::Ok(())
        }))
        .await?;
        for n in &step.start {
            self.start_until_ready(n).await?;
        }
        for group in &step.restart {
            try_join_all(group.iter().map(|n| self.restart_until_ready(n))).await?;
        }
        try_join_all(step.expect.keys().map(|n| async move {
            let log = self
                .current(n)
                .ok_or_else(|| anyhow!("{n} was never started"))?;
            log.wait_line(&self.marks.done, "deciding", self.timeout)
                .await
                .with_context(|| n.clone())
        }))
        .await?;
        Ok(())
    }

    async fn exec_rm(&self, node: &str, paths: &[String]) -> Result<()> {
        let name = self.container(node);
        let mut cmd = vec!["rm".to_string(), "-f".into(), "--".into()];
        cmd.extend(paths.iter().cloned());
        let created = self
            .docker
            .create_exec(
                &name,
                bollard::models::ExecConfig {
                    cmd: Some(cmd),
                    ..Default::default()
                },
            )
            .await?;
        self.docker.start_exec(&created.id, None).await?;
        Ok(())
    }

    /// All containers at once, then the network and the volumes at once.
    async fn teardown(&self) -> Result<()> {
        let rm = RemoveContainerOptionsBuilder::default()
            .force(true)
            .v(true) // the image's VOLUMEs (as rancher/k3s has them) are anonymous volumes
            .build();
        let containers = self.plan.nodes.iter().map(|n| {
            let name = self.container(&n.name);
            let rm = rm.clone();
            async move { self.docker.remove_container(&name, Some(rm)).await }
        });
        let c = futures_util::future::join_all(containers).await;
        let network = self.network();
        let net = self.docker.remove_network(&network);
        let vols = futures_util::future::join_all(self.plan.nodes.iter().map(|n| {
            let v = self.volume(&n.name);
            async move {
                self.docker
                    .remove_volume(&v, None::<RemoveVolumeOptions>)
                    .await
            }
        }));
        let (n, v) = tokio::join!(net, vols);
        let errors: Vec<String> = c
            .into_iter()
            .chain(v)
            .chain(std::iter::once(n))
            .filter_map(|r| r.err().map(|e| e.to_string()))
            .collect();
        if !errors.is_empty() {
            bail!("floor teardown: {}", errors.join("; "));
        }
        Ok(())
    }
}
