//! `repro run`: start the topology as real containers, perform the steps, observe, decide.
//!
//! The body runs as its own task; whatever happens to it (verdict, error, timeout, Ctrl-C,
//! panic), the caller removes everything the run created by its labels and keeps the results
//! written so far. Cleanup never relies on `Drop`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use futures_util::future::join_all;
use indexmap::IndexMap;
use rand::Rng;
use tokio_util::sync::CancellationToken;

use crate::cli::{Privileged, RunOptions, Target};
use crate::docker::{self, Engine, NodeSpec};
use crate::exit;
use crate::model::Role;
use crate::observe::{self, Eval};
use crate::plan::Plan;
use crate::progress::Progress;
use crate::result::{self as res, BootRecord, Evidence, Observation, RunResult, StepResult};
use crate::scenario::{Scenario, Signal};
use crate::watch::{self, BootEnd, BootHandle};

/// Image label by which an image says it needs no privileged container.
pub const PRIVILEGED_LABEL: &str = "io.repro.privileged";
/// Image label of repro's k3s stand-in.
pub const SIM_LABEL: &str = "io.repro.sim";

/// How long `docker stop` lets k3s shut down before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(20);

/// Why a run stopped before its verdict.
#[derive(Debug)]
pub enum Abort {
    /// A node never became ready (exit 3).
    Timeout(String),
    /// Docker failed us (exit 3).
    Infra(String),
    /// A node died while the cluster was being created: nothing to judge (inconclusive).
    SetupDied(String),
    Interrupted,
}

/// Everything a running cluster needs, shared by the steps.
pub struct Cluster {
    pub engine: Engine,
    pub run_id: String,
    pub plan: Plan,
    pub scenario: Scenario,
    pub opts: RunOptions,
    pub dir: PathBuf,
    nodes: IndexMap<String, NodeRt>,
    progress: Arc<Progress>,
    scrub: watch::Scrub,
    ready: Vec<regex::Regex>,
    settle: Duration,
    token: String,
    network: Mutex<Option<u8>>,
    privileged: bool,
}

struct NodeRt {
    container: String,
    boots: Mutex<Vec<BootHandle>>,
    stopping: Arc<AtomicBool>,
}

pub fn container_name(run_id: &str, node: &str) -> String {
    format!("repro-{run_id}-{node}")
}

fn now_rfc3339() -> String {
    Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn random_hex(bytes: usize) -> String {
    let mut rng = rand::rng();
    (0..bytes)
        .map(|_| format!("{:02x}", rng.random::<u8>()))
        .collect()
}

/// result.json, shared and saved atomically after every change that matters.
#[derive(Clone)]
pub struct Recorder {
    pub dir: PathBuf,
    pub result: Arc<Mutex<RunResult>>,
}

impl Recorder {
    pub fn update(&self, f: impl FnOnce(&mut RunResult)) {
        let mut r = self.result.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut r);
    }

    pub fn save(&self) {
        let text = {
            let r = self.result.lock().unwrap_or_else(|p| p.into_inner());
            serde_json::to_string_pretty(&*r).unwrap_or_default()
        };
        let tmp = self.dir.join(".result.json.tmp");
        if std::fs::write(&tmp, text).is_ok() {
            let _ = std::fs::rename(&tmp, self.dir.join("result.json"));
        }
    }
}

impl Cluster {
    fn node(&self, name: &str) -> &NodeRt {
        &self.nodes[name]
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

    pub fn current(&self, node: &str) -> Option<BootHandle> {
        self.node(node)
            .boots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .last()
            .cloned()
    }

    /// Network, volumes, containers (deferred ones too, unstarted), files before first start.
    async fn create(&self) -> Result<(), Abort> {
        let net = format!("repro-{}", self.run_id);
        let third = self
            .engine
            .create_network(&net, &self.labels(None))
            .await
            .map_err(|e| Abort::Infra(e.to_string()))?;
        *self.network.lock().unwrap_or_else(|p| p.into_inner()) = Some(third);
        // Nodes are independent until they start: create them all at once.
        let created = join_all(
            self.plan
                .nodes
                .iter()
                .enumerate()
                .map(|(i, n)| self.create_node(i, n, &net, third)),
        )
        .await;
        created.into_iter().collect::<Result<Vec<()>, Abort>>()?;
        Ok(())
    }

    async fn create_node(
        &self,
        i: usize,
        n: &crate::plan::PlannedNode,
        net: &str,
        third: u8,
    ) -> Result<(), Abort> {
        let rt = self.node(&n.name);
        let volume = format!("{}-data", rt.container);
        self.engine
            .create_volume(&volume, &self.labels(Some(&n.name)))
            .await
            .map_err(|e| Abort::Infra(e.to_string()))?;
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
        };
        self.engine
            .create_node(&spec)
            .await
            .map_err(|e| Abort::Infra(e.to_string()))?;
        let files: Vec<(String, String)> = self.plan.initial[&n.name]
            .iter()
            .filter_map(|(p, c)| c.clone().map(|c| (p.clone(), c)))
            .collect();
        self.engine
            .upload(&rt.container, &files)
            .await
            .map_err(|e| Abort::Infra(e.to_string()))?;
        self.progress.node(
            &n.name,
            "created",
            0,
            if n.deferred {
                "deferred: a step starts it"
            } else {
                "files written"
            },
        );
        Ok(())
    }

    /// Starts a node's next boot and follows its log from the first line.
    async fn boot(&self, node: &str, step: usize) -> Result<BootHandle, Abort> {
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
        self.engine
            .start(&rt.container)
            .await
            .map_err(|e| Abort::Infra(e.to_string()))?;
        let started = self
            .engine
            .state(&rt.container)
            .await
            .map_err(|e| Abort::Infra(e.to_string()))?;
        let started_at = DateTime::parse_from_rfc3339(&started.started_at)
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_else(|_| Utc::now());
        let log_dir = self.dir.join("nodes").join(node);
        let _ = std::fs::create_dir_all(&log_dir);
        let progress = self.progress.clone();
        let name = node.to_string();
        let ready = self.ready.clone();
        let on_line: watch::OnLine = Arc::new(move |_c, l| {
            if ready.iter().any(|r| r.is_match(&l.text)) {
                progress.node(&name, "ready", number, &l.text);
            } else if l.text.contains("level=fatal") || l.text.contains("level=error") {
                progress.node(&name, "running", number, &l.text);
            }
        });
        let h = watch::follow(
            self.engine.clone(),
            rt.container.clone(),
            number,
            step,
            started_at,
            after,
            self.ready.clone(),
            log_dir.join(format!("boot-{number}.log")),
            on_line,
            rt.stopping.clone(),
            self.scrub.clone(),
        );
        rt.boots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(h.clone());
        self.progress
            .node(node, "starting", number, "container started");
        Ok(h)
    }

    /// Stops a node's current boot (if running) and waits until its log is drained.
    async fn stop(&self, node: &str) -> Result<(), Abort> {
        let rt = self.node(node);
        if let Some(h) = self.current(node) {
            if h.with(|b| b.end.is_none()) {
                rt.stopping.store(true, Ordering::SeqCst);
                self.engine
                    .stop(&rt.container, STOP_GRACE)
                    .await
                    .map_err(|e| Abort::Infra(e.to_string()))?;
                h.ended().await;
            }
        }
        Ok(())
    }

    /// Waits for the boot to be ready or dead. A timeout aborts the run with the last lines.
    async fn wait_ready(&self, node: &str, h: &BootHandle) -> Result<bool, Abort> {
        let waited = tokio::time::timeout(
            self.opts.timeout,
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
                self.progress.node(node, "dead", n, &last);
                Ok(false)
            }
            Err(_) => {
                let (n, last) = h.with(|b| {
                    (
                        b.number,
                        b.lines
                            .iter()
                            .rev()
                            .take(3)
                            .rev()
                            .map(|l| l.text.clone())
                            .collect::<Vec<_>>(),
                    )
                });
                self.progress.node(node, "timeout", n, "not ready in time");
                Err(Abort::Timeout(format!(
                    "{node} (boot {n}) was not ready within {}; last lines: {}",
                    humantime::format_duration(self.opts.timeout),
                    if last.is_empty() {
                        "(no output)".to_string()
                    } else {
                        last.join(" / ")
                    }
                )))
            }
        }
    }

    async fn start_and_wait(&self, node: &str, step: usize) -> Result<bool, Abort> {
        let h = self.boot(node, step).await?;
        self.wait_ready(node, &h).await
    }

    async fn restart_and_wait(&self, node: &str, step: usize) -> Result<bool, Abort> {
        self.stop(node).await?;
        self.start_and_wait(node, step).await
    }

    /// Observes one signal on one node's current boot.
    async fn observe(&self, node: &str, sig: &Signal) -> (String, u32, Vec<Evidence>, String) {
        let Some(h) = self.current(node) else {
            return (
                "unknown".into(),
                0,
                vec![],
                "the node was never started".into(),
            );
        };
        let number = h.with(|b| b.number);
        let v = &self.plan.k3s_version;
        let cap = Instant::now() + self.opts.timeout;
        let mut rx = h.subscribe();
        let mut closed = false;
        if let Some(probe) = &sig.probe {
            let deadline_probe = |start: Instant| start + probe.timeout;
            let mut first_try: Option<Instant> = None;
            loop {
                let (dead, ready_to_probe) = h.with(|b| {
                    (
                        observe::is_dead(b) || b.end.is_some(),
                        observe::probe_ready(sig, b, v),
                    )
                });
                if dead {
                    let ev = h.with(observe::death_evidence);
                    let val = sig
                        .on_death
                        .as_ref()
                        .map_or("unknown", |e| e.as_str())
                        .to_string();
                    return (val, number, ev, "the node died in this boot".into());
                }
                if ready_to_probe {
                    let started = *first_try.get_or_insert_with(Instant::now);
                    let container = &self.node(node).container;
                    match self.engine.exec(container, &probe.command).await {
                        Ok((code, out)) => {
                            let out = (self.scrub)(out);
                            if let Some(state) = observe::eval_probe(sig, code, &out) {
                                let ev = vec![Evidence {
                                    source: "probe".into(),
                                    boot: number,
                                    time: Some(now_rfc3339()),
                                    text: format!(
                                        "$ {} → exit {code}: {}",
                                        probe.command.join(" "),
                                        observe::probe_excerpt(&out)
                                    ),
                                }];
                                return (state.into(), number, ev, "probe rule matched".into());
                            }
                            if Instant::now() >= deadline_probe(started) {
                                let ev = vec![Evidence {
                                    source: "probe".into(),
                                    boot: number,
                                    time: Some(now_rfc3339()),
                                    text: format!("exit {code}: {}", observe::probe_excerpt(&out)),
                                }];
                                return (
                                    "unknown".into(),
                                    number,
                                    ev,
                                    "no probe rule matched before the probe timeout".into(),
                                );
                            }
                        }
                        Err(e) => {
                            if Instant::now() >= deadline_probe(started) {
                                return (
                                    "unknown".into(),
                                    number,
                                    vec![],
                                    format!("probe failed: {e}"),
                                );
                            }
                        }
                    }
                    // A probe answers a question the log cannot; retrying it is the only way to
                    // learn when the endpoint appears, so back off briefly between tries.
                    tokio::time::sleep(Duration::from_millis(250)).await;
                    continue;
                }
                if Instant::now() >= cap {
                    return (
                        "unknown".into(),
                        number,
                        vec![],
                        "the probe's `after` line never appeared".into(),
                    );
                }
                if closed
                    || tokio::time::timeout_at(cap.into(), rx.changed())
                        .await
                        .map(|r| r.is_err())
                        .unwrap_or(false)
                {
                    closed = true;
                    tokio::time::sleep_until(cap.into()).await;
                }
            }
        }
        loop {
            match h.with(|b| observe::eval_log(sig, b, v, self.settle, Instant::now())) {
                Eval::Decided(o) => return (o.observed, number, o.evidence, o.reason),
                Eval::Pending { until } => {
                    if Instant::now() >= cap {
                        let ev = h.with(|b| {
                            b.lines
                                .iter()
                                .rev()
                                .take(2)
                                .map(|l| observe::evidence(b, l))
                                .collect()
                        });
                        return (
                            "unknown".into(),
                            number,
                            ev,
                            "not decided within the timeout".into(),
                        );
                    }
                    let deadline = until.map_or(cap, |u| u.min(cap));
                    if closed {
                        tokio::time::sleep_until(deadline.into()).await;
                    } else {
                        tokio::select! {
                            r = rx.changed() => if r.is_err() { closed = true },
                            _ = tokio::time::sleep_until(deadline.into()) => {},
                        }
                    }
                }
            }
        }
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
                            Some(BootEnd::Died { at, .. } | BootEnd::Stopped { at }) => {
                                Some(at.clone())
                            }
                            _ => None,
                        },
                        end: match &b.end {
                            None => "running",
                            Some(BootEnd::Stopped { .. }) => "stopped",
                            Some(BootEnd::Died { .. }) => "exited",
                            Some(BootEnd::Lost { .. }) => "lost",
                        }
                        .into(),
                        exit_code: match &b.end {
                            Some(BootEnd::Died { exit_code, .. }) => *exit_code,
                            _ => None,
                        },
                        log: format!("nodes/{name}/boot-{}.log", b.number),
                    }
                }));
            }
        }
        out
    }
}

/// Everything between "cluster created" and "verdict": runs as its own task.
async fn drive(c: Arc<Cluster>, rec: Recorder) -> Result<(), Abort> {
    let t0 = Instant::now();
    c.progress.step("creating the cluster");
    c.create().await?;
    for group in &c.plan.start_order {
        c.progress.step(&format!("starting {}", group.join(" + ")));
        let results = join_all(group.iter().map(|n| c.start_and_wait(n, 0))).await;
        for (n, r) in group.iter().zip(results) {
            if !r? {
                let ev = c
                    .current(n)
                    .map(|h| h.with(observe::death_evidence))
                    .unwrap_or_default();
                let last = ev
                    .iter()
                    .map(|e| e.text.as_str())
                    .collect::<Vec<_>>()
                    .join(" / ");
                return Err(Abort::SetupDied(format!(
                    "{n} died while the cluster was being created: {last}"
                )));
            }
        }
    }
    rec.update(|r| {
        r.timings
            .insert("cluster-up".into(), t0.elapsed().as_secs_f64());
        r.boots = c.boot_records();
    });
    rec.save();

    let has_bug = c.scenario.check.steps.iter().any(|s| !s.bug.is_empty());
    let _ = has_bug;
    for (i, step) in c.scenario.check.steps.iter().enumerate() {
        let ts = Instant::now();
        let pstep = &c.plan.steps[i];
        c.progress.step(&format!(
            "step {}/{}: {}",
            pstep.index,
            c.plan.steps.len(),
            pstep.name
        ));
        let mut sr = StepResult {
            index: pstep.index,
            name: pstep.name.clone(),
            why: pstep.why.clone(),
            started_at: now_rfc3339(),
            finished_at: None,
            actions: Vec::new(),
            observations: Vec::new(),
        };
        for (node, files) in &pstep.edits {
            let rt = c.node(node);
            let writes: Vec<(String, String)> = files
                .iter()
                .filter_map(|(p, v)| v.clone().map(|v| (p.clone(), v)))
                .collect();
            if !writes.is_empty() {
                c.engine
                    .upload(&rt.container, &writes)
                    .await
                    .map_err(|e| Abort::Infra(e.to_string()))?;
            }
            for (p, v) in files {
                if v.is_none() {
                    let (code, out) = c
                        .engine
                        .exec(
                            &rt.container,
                            &[
                                "rm".to_string(),
                                "-f".to_string(),
                                "--".to_string(),
                                p.clone(),
                            ],
                        )
                        .await
                        .map_err(|e| {
                            Abort::Infra(format!(
                                "failed to delete {p} on {node} (the image needs `rm`): {e}"
                            ))
                        })?;
                    if code != 0 {
                        return Err(Abort::Infra(format!(
                            "failed to delete {p} on {node}: {out}"
                        )));
                    }
                }
            }
            sr.actions.push(res::Action {
                kind: "edit".into(),
                nodes: vec![node.clone()],
                at: now_rfc3339(),
                files: files.keys().cloned().collect(),
            });
        }
        for n in &step.start {
            sr.actions.push(res::Action {
                kind: "start".into(),
                nodes: vec![n.clone()],
                at: now_rfc3339(),
                files: vec![],
            });
            c.start_and_wait(n, pstep.index).await?;
        }
        for group in &step.restart {
            sr.actions.push(res::Action {
                kind: "restart".into(),
                nodes: group.clone(),
                at: now_rfc3339(),
                files: vec![],
            });
            let results = join_all(group.iter().map(|n| c.restart_and_wait(n, pstep.index))).await;
            for r in results {
                r?;
            }
        }
        // Observe every expected (node, signal) of this step at once.
        let bug_world = step.bug_world();
        let mut jobs = Vec::new();
        for (node, sigs) in &step.expect {
            for (sig, exp) in sigs {
                let def = c.scenario.signals.get(sig).cloned();
                let bug = bug_world
                    .get(node)
                    .and_then(|m| m.get(sig))
                    .map(|e| e.as_str().to_string());
                let c = c.clone();
                let node = node.clone();
                let sig = sig.clone();
                let exp = exp.as_str().to_string();
                jobs.push(async move {
                    let (observed, boot, evidence, reason) = match &def {
                        Some(d) => c.observe(&node, d).await,
                        None => ("unknown".into(), 0, vec![], "signal not defined".into()),
                    };
                    Observation {
                        node,
                        signal: sig,
                        expected: Some(exp),
                        bug,
                        observed,
                        boot,
                        evidence,
                        reason,
                    }
                });
            }
        }
        sr.observations = join_all(jobs).await;
        for o in &sr.observations {
            let mark = if o.matches_expected() {
                "as expected"
            } else if o.matches_bug() {
                "BUG"
            } else {
                "DIFFERS"
            };
            c.progress.info(&format!(
                "  step {} {:<8} {:<20} {:<8} expected {:<6} {mark}",
                pstep.index,
                o.node,
                o.signal,
                o.observed,
                o.expected.as_deref().unwrap_or("-")
            ));
        }
        sr.finished_at = Some(now_rfc3339());
        rec.update(|r| {
            r.steps.push(sr);
            r.timings
                .insert(format!("step-{}", pstep.index), ts.elapsed().as_secs_f64());
            r.boots = c.boot_records();
        });
        rec.save();
    }
    Ok(())
}

/// Gets the image: an archive to load, the local store, the stand-in builder, or a pull.
async fn ensure_image(
    engine: &Engine,
    plan: &Plan,
    target: &Target,
    opts: &RunOptions,
    progress: &Progress,
) -> Result<Option<String>, String> {
    if let Some(archive) = &opts.image_archive {
        progress.step(&format!("loading image archive {}", archive.display()));
        engine
            .load_archive(archive)
            .await
            .map_err(|e| format!("{e:#}"))?;
    }
    if target.sim {
        let v = plan.k3s_version.to_string();
        // Always asked: it rebuilds a tag only when missing or built from another binary.
        progress.step(&format!("preparing the k3s stand-in image {}", plan.image));
        crate::sim_image::ensure_sim_image(&engine.docker, &v, opts.rebuild_sim)
            .await
            .map_err(|e| format!("cannot build the stand-in image {}: {e:#}", plan.image))?;
        return Ok(engine.image_id(&plan.image).await);
    }
    if let Some(id) = engine.image_id(&plan.image).await {
        return Ok(Some(id));
    }
    progress.step(&format!("pulling {}", plan.image));
    let mut last = (0, 0);
    let pulled = engine
        .pull(&plan.image, |done, total| {
            if (done, total) != last {
                last = (done, total);
                progress.node("pull", "pulling", 0, &format!("{done}/{total} layers"));
            }
        })
        .await;
    match pulled {
        Ok(()) => Ok(engine.image_id(&plan.image).await),
        Err(e) => Err(format!(
            "cannot get image {}: {e}\n  help: this host cannot pull it. Ways out:\n    --sim                  run the built-in k3s stand-in for {} (offline)\n    --image-archive FILE   load a `docker save` tarball of the image first\n    --image NAME           use an image that is already in the local store",
            plan.image, plan.k3s_version
        )),
    }
}

fn results_dir(base: &Path, plan: &Plan, run_id: &str) -> PathBuf {
    let t = Utc::now().format("%Y%m%dT%H%M%SZ");
    base.join(format!(
        "{}-{}-{t}-{run_id}",
        plan.check,
        plan.k3s_version.image_tag()
    ))
}

/// What a finished run left: its exit code, folder and verdict.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    pub code: i32,
    /// The results folder, if the run got far enough to create it.
    pub dir: Option<PathBuf>,
    /// `fixed`, `reproduced` or `inconclusive`; None when the run broke before a verdict.
    pub verdict: Option<String>,
    pub seconds: f64,
    /// Why there is no verdict (or why it is inconclusive).
    pub error: Option<String>,
}

impl RunOutcome {
    fn early(code: i32, error: String, t: Instant) -> RunOutcome {
        RunOutcome {
            code,
            dir: None,
            verdict: None,
            seconds: t.elapsed().as_secs_f64(),
            error: Some(error),
        }
    }
}

/// The whole `repro run`. `quiet` leaves out the summary on stdout (for matrix and bisect).
pub async fn execute(
    sc: Scenario,
    plan: Plan,
    target: &Target,
    opts: &RunOptions,
    argv: Vec<String>,
    quiet: bool,
) -> RunOutcome {
    let t_all = Instant::now();
    let mut nodes_names: Vec<String> = plan.nodes.iter().map(|n| n.name.clone()).collect();
    nodes_names.insert(0, "pull".into());
    nodes_names.remove(0);
    let progress = Arc::new(Progress::new(opts.progress, &nodes_names));
    let engine = match Engine::connect().await {
        Ok(e) => e,
        Err(e) => {
            progress.finish();
            eprintln!("repro: {e}");
            return RunOutcome::early(exit::INFRA, e.to_string(), t_all);
        }
    };
    let t_img = Instant::now();
    let image_id = match ensure_image(&engine, &plan, target, opts, &progress).await {
        Ok(id) => id,
        Err(msg) => {
            progress.finish();
            eprintln!("repro: {msg}");
            return RunOutcome::early(exit::INFRA, msg, t_all);
        }
    };
    let images_secs = t_img.elapsed().as_secs_f64();

    let run_id = random_hex(4);
    let dir = results_dir(&opts.results, &plan, &run_id);
    if let Err(e) = std::fs::create_dir_all(dir.join("nodes")) {
        let msg = format!("cannot create the results folder {}: {e}", dir.display());
        eprintln!("repro: {msg}");
        return RunOutcome::early(exit::INFRA, msg, t_all);
    }
    let token = random_hex(24);
    let rec = Recorder {
        dir: dir.clone(),
        result: Arc::new(Mutex::new(initial_result(
            &sc,
            &plan,
            target,
            opts,
            &argv,
            &run_id,
            image_id,
            engine.describe().await,
        ))),
    };
    // Whether this is the stand-in is a fact of the image (its label), not of how it was named:
    // `--image repro.local/...` of a stand-in image is still not real k3s.
    let labels = engine.image_labels(&plan.image).await;
    let stand_in = target.sim || labels.get(SIM_LABEL).is_some_and(|v| v == "true");
    let privileged = match opts.privileged {
        Privileged::Always => true,
        Privileged::Never => false,
        // Real k3s needs privileges (k3d runs it privileged); an image may say it needs none.
        Privileged::Auto => labels.get(PRIVILEGED_LABEL).is_none_or(|v| v != "false"),
    };
    rec.update(|r| {
        r.timings.insert("images".into(), images_secs);
        r.k3s.stand_in = stand_in;
        r.k3s.privileged = privileged;
    });
    write_configs(&dir, &plan);
    rec.save();
    progress.info(&format!(
        "run {run_id}: {} on k3s {} ({}) → {}",
        plan.check,
        plan.k3s_version,
        plan.image,
        dir.display()
    ));

    // Our own output and the kept logs never carry the token or a secret the scenario sets
    // (a `*password*`/`*secret*`/`*token*` value in a config, file or env): they are replaced by
    // the same placeholders the bundle uses.
    let mut redactor = crate::report::redact::Redactor::new(std::slice::from_ref(&token));
    for n in &plan.nodes {
        for (k, v) in &n.env {
            redactor.learn_text(&format!("{k}={v}"));
        }
    }
    for (path, content) in plan
        .initial
        .values()
        .flatten()
        .chain(plan.steps.iter().flat_map(|s| s.edits.values().flatten()))
    {
        if let Some(c) = content {
            redactor.learn_file(path, c);
        }
    }
    let redactor = Arc::new(Mutex::new(redactor));
    let scrub: watch::Scrub = Arc::new(move |s: String| {
        redactor
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .redact_text(&s)
    });
    let ready = sc
        .signals
        .get("ready")
        .map(|s| s.up.iter().map(|p| p.regex.clone()).collect())
        .unwrap_or_default();
    let settle = opts.settle.unwrap_or(sc.check.settle);
    let nodes = plan
        .nodes
        .iter()
        .map(|n| {
            (
                n.name.clone(),
                NodeRt {
                    container: container_name(&run_id, &n.name),
                    boots: Mutex::new(Vec::new()),
                    stopping: Arc::new(AtomicBool::new(false)),
                },
            )
        })
        .collect();
    let cluster = Arc::new(Cluster {
        engine: engine.clone(),
        run_id: run_id.clone(),
        plan: plan.clone(),
        scenario: sc.clone(),
        opts: opts.clone(),
        dir: dir.clone(),
        nodes,
        progress: progress.clone(),
        scrub,
        ready,
        settle,
        token: token.clone(),
        network: Mutex::new(None),
        privileged,
    });

    let cancel = CancellationToken::new();
    // Stopped when this run ends: `matrix` and `bisect` run many in one process, and a finished
    // run's handler would still answer a later Ctrl-C with "removing the cluster".
    let signals = spawn_signal_handler(cancel.clone(), run_id.clone());
    let body = tokio::spawn(drive(cluster.clone(), rec.clone()));
    let abort_handle = body.abort_handle();
    let outcome: Result<(), Abort> = tokio::select! {
        r = body => match r {
            Ok(r) => r,
            Err(e) if e.is_panic() => Err(Abort::Infra(format!("internal error (a bug in repro): {e}"))),
            Err(e) => Err(Abort::Infra(e.to_string())),
        },
        _ = cancel.cancelled() => {
            abort_handle.abort();
            Err(Abort::Interrupted)
        }
    };

    // Evidence of the containers' last state, then teardown.
    let t_down = Instant::now();
    for (name, rt) in &cluster.nodes {
        if let Ok(v) = engine.inspect_json(&rt.container).await {
            let text = serde_json::to_string_pretty(&v)
                .unwrap_or_default()
                .replace(&token, "<REDACTED-1>");
            let _ = std::fs::create_dir_all(dir.join("nodes").join(name));
            let _ = std::fs::write(dir.join("nodes").join(name).join("inspect.json"), text);
        }
    }
    if opts.keep && !matches!(outcome, Err(Abort::Interrupted)) {
        progress.info(&format!(
            "--keep: the cluster is still running. Inspect it with\n  docker ps --filter label={}={run_id}\n  docker logs {}\n  docker exec -it {} sh\nand remove it with\n  repro clean --run {run_id}",
            docker::LABEL_RUN,
            container_name(&run_id, &plan.nodes[0].name),
            container_name(&run_id, &plan.nodes[0].name)
        ));
    } else {
        progress.step("removing the cluster");
        for rt in cluster.nodes.values() {
            rt.stopping.store(true, Ordering::SeqCst);
        }
        let removed = engine
            .remove_labelled(docker::LABEL_RUN, Some(&run_id))
            .await;
        for e in &removed.errors {
            progress.info(&format!(
                "cleanup problem: {e} (run `repro clean --run {run_id}`)"
            ));
        }
    }
    let teardown_secs = t_down.elapsed().as_secs_f64();

    let observations: Vec<Observation> = rec
        .result
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .steps
        .iter()
        .flat_map(|s| s.observations.clone())
        .collect();
    let has_bug = sc.check.steps.iter().any(|s| !s.bug.is_empty());
    let (verdict, code, error) = match outcome {
        Ok(()) => {
            let v = crate::verdict::decide(&observations, has_bug, &plan.notes);
            let code = if v.outcome == opts.expect.as_str() {
                exit::OK
            } else {
                exit::OUTCOME_DIFFERS
            };
            (Some(v), code, None)
        }
        Err(Abort::SetupDied(msg)) => {
            let v = res::Verdict {
                outcome: "inconclusive".into(),
                reason: msg.clone(),
                differences: vec![],
                expectations: 0,
                matched_expected: 0,
                matched_bug: 0,
            };
            (Some(v), exit::OUTCOME_DIFFERS, Some(msg))
        }
        Err(Abort::Timeout(msg)) | Err(Abort::Infra(msg)) => (None, exit::INFRA, Some(msg)),
        Err(Abort::Interrupted) => (
            None,
            exit::INTERRUPTED,
            Some("interrupted by the user".into()),
        ),
    };
    rec.update(|r| {
        r.boots = cluster.boot_records();
        r.verdict = verdict.clone();
        r.exit_code = Some(code);
        r.error = error.clone();
        r.finished_at = Some(now_rfc3339());
        r.timings.insert("teardown".into(), teardown_secs);
        r.timings
            .insert("total".into(), t_all.elapsed().as_secs_f64());
    });
    rec.save();
    // Reports are rendered from result.json and the logs alone (as `repro report` does later).
    if let Err(e) = crate::report::render_all(&dir, std::slice::from_ref(&token)) {
        progress.info(&format!(
            "could not render the reports: {e:#} (retry with `repro report {}`)",
            dir.display()
        ));
    }
    progress.finish();
    signals.abort();

    let r = rec.result.lock().unwrap_or_else(|p| p.into_inner()).clone();
    if !quiet {
        print_summary(&r, &dir);
    }
    RunOutcome {
        code,
        dir: Some(dir),
        verdict: r.verdict.as_ref().map(|v| v.outcome.clone()),
        seconds: t_all.elapsed().as_secs_f64(),
        error: r.error.clone().or_else(|| {
            r.verdict
                .as_ref()
                .filter(|v| v.outcome == "inconclusive")
                .map(|v| v.reason.clone())
        }),
    }
}

fn initial_result(
    sc: &Scenario,
    plan: &Plan,
    target: &Target,
    opts: &RunOptions,
    argv: &[String],
    run_id: &str,
    image_id: Option<String>,
    env: res::EnvInfo,
) -> RunResult {
    let mut rerun = vec![
        "repro".to_string(),
        "run".to_string(),
        sc.check.name.clone(),
        "--k3s-version".to_string(),
        plan.k3s_version.to_string(),
    ];
    if let Some(t) = &target.topology {
        rerun.extend(["--topology".to_string(), t.clone()]);
    }
    if target.sim {
        rerun.push("--sim".into());
    }
    if let Some(i) = &target.image {
        rerun.extend(["--image".to_string(), i.clone()]);
    }
    rerun.extend(["--expect".to_string(), opts.expect.as_str().to_string()]);
    // step ("0" = before first start) -> node -> config.yaml
    let mut configs: IndexMap<String, IndexMap<String, String>> = IndexMap::new();
    let initial: IndexMap<String, String> = plan
        .nodes
        .iter()
        .filter_map(
            |n| match plan.initial[&n.name].get(crate::plan::CONFIG_PATH) {
                Some(Some(c)) => Some((n.name.clone(), c.clone())),
                _ => None,
            },
        )
        .collect();
    configs.insert("0".to_string(), initial);
    for s in &plan.steps {
        configs.insert(s.index.to_string(), s.configs.clone());
    }
    RunResult {
        schema_version: res::SCHEMA_VERSION,
        tool: res::ToolInfo {
            name: "repro".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        run_id: run_id.into(),
        command: argv.to_vec(),
        rerun: rerun.join(" "),
        check: res::CheckInfo {
            name: sc.check.name.clone(),
            issue: sc.check.issue.clone(),
            summary: sc.check.summary.clone(),
            description: sc.check.description.clone(),
            sources: sc.check.sources.clone(),
            file: sc.check.path.display().to_string(),
        },
        topology: res::TopologyInfo {
            name: sc.topology.name.clone(),
            description: sc.topology.description.clone(),
            file: sc.topology.path.display().to_string(),
            nodes: plan.nodes.clone(),
        },
        k3s: res::K3sInfo {
            version: plan.k3s_version.to_string(),
            image: plan.image.clone(),
            image_id,
            stand_in: target.sim,
            privileged: true,
            version_output: None,
        },
        environment: env,
        expect: opts.expect.as_str().into(),
        expected_for_version: plan.expected_verdict.map(|v| v.as_str().to_string()),
        started_at: now_rfc3339(),
        finished_at: None,
        configs,
        planned_steps: plan
            .steps
            .iter()
            .map(res::PlannedStepRecord::from)
            .collect(),
        initial_files: plan.initial.clone(),
        signals: res::signal_records(&sc.signals, &sc.check, &plan.k3s_version),
        steps: Vec::new(),
        boots: Vec::new(),
        verdict: None,
        timings: IndexMap::new(),
        exit_code: None,
        error: None,
    }
}

/// Each node's files as of each step, next to its logs.
fn write_configs(dir: &Path, plan: &Plan) {
    for n in &plan.nodes {
        let d = dir.join("nodes").join(&n.name);
        let _ = std::fs::create_dir_all(&d);
        if let Some(Some(c)) = plan.initial[&n.name].get(crate::plan::CONFIG_PATH) {
            let _ = std::fs::write(d.join("config-step-0.yaml"), c);
        }
        for s in &plan.steps {
            let _ = std::fs::write(
                d.join(format!("config-step-{}.yaml", s.index)),
                &s.configs[&n.name],
            );
        }
    }
}

/// Ctrl-C (or SIGTERM) once: cancel and clean up. Twice: exit 130 at once.
fn spawn_signal_handler(cancel: CancellationToken, run_id: String) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        let first = async {
            match term.as_mut() {
                Some(t) => tokio::select! { _ = tokio::signal::ctrl_c() => {}, _ = t.recv() => {} },
                None => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        };
        first.await;
        eprintln!("repro: interrupted — removing the cluster (press Ctrl-C again to exit at once)");
        cancel.cancel();
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("repro: exiting without cleanup; remove leftovers with `repro clean --run {run_id}`");
            std::process::exit(exit::INTERRUPTED);
        }
    })
}

fn print_summary(r: &RunResult, dir: &Path) {
    println!();
    println!(
        "{} on k3s {}{}",
        r.check.name,
        r.k3s.version,
        if r.k3s.stand_in {
            " (repro stand-in, not real k3s)"
        } else {
            ""
        }
    );
    for s in &r.steps {
        println!("step {}: {}", s.index, s.name);
        for o in &s.observations {
            let mark = if o.matches_expected() {
                "ok"
            } else if o.matches_bug() {
                "BUG"
            } else {
                "??"
            };
            let ev = o
                .evidence
                .first()
                .map(|e| log_message(&e.text))
                .unwrap_or_default();
            let why = if o.reason.starts_with("settle rule") {
                format!("no up line within the settle window after: {ev}")
            } else {
                ev
            };
            println!(
                "  {mark:<4}{:<8} {:<20} observed {:<8} expected {:<8} {}",
                o.node,
                o.signal,
                o.observed,
                o.expected.as_deref().unwrap_or("-"),
                shorten(&why, 90)
            );
        }
    }
    match &r.verdict {
        Some(v) => println!(
            "verdict: {} — {} (asked for: {})",
            v.outcome, v.reason, r.expect
        ),
        None => println!(
            "verdict: none — {}",
            r.error.as_deref().unwrap_or("the run did not finish")
        ),
    }
    for d in r.verdict.iter().flat_map(|v| &v.differences) {
        println!("  differs: {d}");
    }
    println!("results: {}", dir.display());
    println!("exit: {}", r.exit_code.unwrap_or(-1));
}

/// The `msg="..."` of a logrus line (what a reader wants), or the line as it is.
fn log_message(line: &str) -> String {
    match line.split_once("msg=\"") {
        Some((_, rest)) => rest.strip_suffix('"').unwrap_or(rest).replace("\\\"", "\""),
        None => line.to_string(),
    }
}

fn shorten(s: &str, n: usize) -> String {
    if s.chars().count() > n {
        let t: String = s.chars().take(n).collect();
        format!("{t}…")
    } else {
        s.to_string()
    }
}
