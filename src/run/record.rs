//! The results folder as the run goes: `result.json` (saved atomically after every change that
//! matters) and each node's config per step. The recorder is a receiver of the run's events; a
//! file it cannot write is an error the run reports (exit 3), never dropped.
//!
//! Nothing is written in clear: result.json and the configs go through the run's redaction
//! context first (the record in memory keeps the real values, which the run needs), and every
//! file is created readable by its owner only (0600, folders 0700) — created so, never changed
//! after the content is in.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use indexmap::IndexMap;

use crate::plan::Plan;
use crate::redact::SharedRedactor;
use crate::result::{self as res, Outcome, RunResult};
use crate::scenario::Scenario;

use super::config::RunConfig;
pub(crate) use super::error::RecordError;
use super::event::RunEvent;

pub(crate) use crate::results_folder::RESULT_FILE;
use crate::results_folder::{self as folder, NODES_DIR};

/// Writes `data` to `path` (created 0600), naming the path when it fails.
pub(crate) fn write(path: &Path, data: impl AsRef<[u8]>) -> Result<(), RecordError> {
    let err = |source| RecordError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut f = crate::results_folder::private_file(path).map_err(err)?;
    std::io::Write::write_all(&mut f, data.as_ref()).map_err(err)
}

/// Creates a folder and its missing parents, each 0700.
pub(crate) fn create_dir(path: &Path) -> Result<(), RecordError> {
    crate::safe_fs::private_dir(path).map_err(|source| RecordError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// result.json of one run, kept in memory and saved after every change that matters.
pub(crate) struct Recorder {
    dir: PathBuf,
    /// The folder's device and inode when it was made: each save checks it is still the one.
    made: Option<(u64, u64)>,
    result: Mutex<RunResult>,
    redactor: SharedRedactor,
}

impl Recorder {
    /// Creates the results folder with the node folders and configs, and a first result.json.
    pub(crate) fn create(
        dir: &Path,
        plan: &Plan,
        result: RunResult,
        redactor: SharedRedactor,
    ) -> Result<Recorder, RecordError> {
        create_dir(&dir.join(NODES_DIR))?;
        write_configs(dir, plan, &redactor)?;
        let r = Recorder {
            dir: dir.to_path_buf(),
            made: identity(dir),
            result: Mutex::new(result),
            redactor,
        };
        r.save()?;
        Ok(r)
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// A copy of the record as it stands.
    pub(crate) fn snapshot(&self) -> RunResult {
        self.lock().clone()
    }

    /// The record as result.json has it: redacted (what a run hands to its caller, who prints it).
    pub(crate) fn redacted_snapshot(&self) -> RunResult {
        let snap = self.snapshot();
        serde_json::to_value(&snap)
            .ok()
            .map(|v| self.redactor.json(&v))
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or(snap)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RunResult> {
        self.result.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps what an event says about the run; saves after the ones that change the record.
    pub(crate) fn receive(&self, event: &RunEvent<'_>) -> Result<(), RecordError> {
        {
            let mut r = self.lock();
            match event {
                RunEvent::Engine(env) => r.environment = env.clone(),
                RunEvent::ImageReady {
                    image_id,
                    stand_in,
                    privileged,
                    sim_seed,
                    seconds,
                } => {
                    r.sim_seed = *sim_seed;
                    r.sim_seeds = match sim_seed {
                        Some(seed) => (r.topology.nodes.iter())
                            .map(|n| (n.name.clone(), crate::sim_image::node_seed(*seed, &n.name)))
                            .collect(),
                        None => IndexMap::new(),
                    };
                    r.k3s.image_id = image_id.clone();
                    r.k3s.stand_in = *stand_in;
                    r.k3s.privileged = *privileged;
                    r.timings.insert("images".into(), *seconds);
                }
                RunEvent::ClusterUp {
                    boots,
                    seconds,
                    version_output,
                } => {
                    r.timings.insert("cluster-up".into(), *seconds);
                    r.boots = boots.clone();
                    r.k3s.version_output = version_output.clone();
                }
                RunEvent::StepDone {
                    step,
                    boots,
                    seconds,
                } => {
                    r.timings.insert(format!("step-{}", step.index), *seconds);
                    r.steps.push(step.clone());
                    r.boots = boots.clone();
                }
                RunEvent::Concluded(c) => {
                    if !c.boots.is_empty() {
                        r.boots = c.boots.clone();
                    }
                    r.verdict = c.verdict.clone();
                    r.exit_code = Some(c.exit.code());
                    r.error = c.error.clone();
                    r.failure = c.failure;
                    r.finished_at = Some(now_rfc3339());
                    r.timings.insert("teardown".into(), c.teardown_secs);
                    r.timings.insert("total".into(), c.total_secs);
                }
                _ => return Ok(()),
            }
        }
        self.save()
    }

    /// Writes result.json through the one atomic write (`safe_fs::replace`): a reader never sees
    /// half, and a link planted under its name is replaced, not followed.
    pub(crate) fn save(&self) -> Result<(), RecordError> {
        if self.made.is_some() && identity(&self.dir) != self.made {
            return Err(RecordError::Vanished {
                path: self.dir.clone(),
            });
        }
        let path = self.dir.join(RESULT_FILE);
        let ser = |source| RecordError::Serialise {
            path: path.clone(),
            source,
        };
        let value = serde_json::to_value(&*self.lock()).map_err(ser)?;
        let text = serde_json::to_string_pretty(&self.redactor.json(&value)).map_err(ser)?;
        crate::safe_fs::replace(&path, text.as_bytes()).map_err(|e| RecordError::Write {
            path,
            source: e.into_io(),
        })
    }
}

/// A folder's device and inode (not following a link), `None` when it is not there.
fn identity(dir: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(dir)
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

pub(crate) fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The record before anything ran: what was asked, the check and topology, configs per step.
pub(crate) fn initial_result(
    cfg: &RunConfig,
    sc: &Scenario,
    plan: &Plan,
    run_id: &str,
    (expect, because): (Outcome, String),
) -> RunResult {
    RunResult {
        schema_version: res::SCHEMA_VERSION,
        tool: res::ToolInfo {
            name: "repro".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        run_id: run_id.into(),
        command: cfg.argv.clone(),
        rerun: rerun(cfg, sc, plan, expect),
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
        distribution: plan.distro,
        k3s: res::K3sInfo {
            version: plan.k3s_version.to_string(),
            image: plan.image.clone(),
            image_id: None,
            stand_in: cfg.target.sim,
            privileged: true,
            version_output: None,
        },
        build: cfg.target.build.as_ref().map(|b| b.info.clone()),
        environment: res::EnvInfo {
            docker_host: crate::docker::endpoint(),
            ..Default::default()
        },
        expect,
        expect_because: Some(because),
        expected_for_version: plan.expected_verdict,
        started_at: now_rfc3339(),
        finished_at: None,
        configs: configs(plan),
        planned_steps: plan
            .steps
            .iter()
            .map(res::PlannedStepRecord::from)
            .collect(),
        initial_files: plan.initial.clone(),
        signals: res::signal_records(&sc.signals, &sc.check, &plan.k3s_version),
        sim_seed: None,
        sim_seeds: IndexMap::new(),
        steps: Vec::new(),
        boots: Vec::new(),
        verdict: None,
        timings: IndexMap::new(),
        exit_code: None,
        error: None,
        failure: None,
    }
}

/// The command that runs the same thing again: every input that chose the build (version,
/// image, build under test, release artifacts and their base image, the stand-in and its pace,
/// the topology), each word shell-quoted so it can be pasted as it is.
fn rerun(cfg: &RunConfig, sc: &Scenario, plan: &Plan, expect: Outcome) -> String {
    let t = &cfg.target;
    // A build under test is named as it was given: it, not a version flag, says the version.
    let (flag, value) = match (&t.k3s_commit, &t.k3s_binary) {
        (Some(sha), _) => ("--k3s-commit", sha.clone()),
        (None, Some(p)) => ("--k3s-binary", p.display().to_string()),
        (None, None) => ("--version", plan.k3s_version.to_string()),
    };
    // A check given as a file (explore's generated checks) is named by its path, absolute so
    // the line runs from any folder; a check of the catalog by its name.
    let check = match std::fs::canonicalize(&t.check) {
        Ok(p) if t.check != sc.check.name && p.is_file() => p.display().to_string(),
        _ => sc.check.name.clone(),
    };
    let mut rerun = vec![
        "repro".to_string(),
        "run".to_string(),
        check,
        flag.to_string(),
        value,
    ];
    if let Some(topology) = &t.topology {
        rerun.extend(["--topology".to_string(), topology.clone()]);
    }
    if t.sim {
        rerun.push("--sim".into());
    }
    if let Some(pace) = t.sim_pace {
        rerun.extend(["--sim-pace".to_string(), pace.to_string()]);
    }
    if let Some(plant) = &t.sim_plant {
        rerun.extend(["--sim-plant".to_string(), plant.clone()]);
    }
    if let Some(i) = &t.image {
        rerun.extend(["--image".to_string(), i.clone()]);
    }
    if let Some(dir) = &t.artifacts {
        rerun.extend(["--artifacts".to_string(), dir.display().to_string()]);
    }
    if let Some(base) = &t.node_base {
        rerun.extend(["--node-base".to_string(), base.clone()]);
    }
    if t.no_images_tarball {
        rerun.push("--no-images-tarball".into());
    }
    rerun.extend(["--expect".to_string(), expect.as_str().to_string()]);
    rerun
        .iter()
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `word` as a POSIX shell reads it back unchanged: as it is when it holds only characters no
/// shell interprets, else in single quotes (a `'` inside closed, escaped and reopened).
pub(crate) fn shell_quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// step ("0" = before first start) -> node -> config.yaml
fn configs(plan: &Plan) -> IndexMap<String, IndexMap<String, String>> {
    let mut configs = IndexMap::new();
    let initial: IndexMap<String, String> = plan
        .nodes
        .iter()
        .filter_map(|n| match plan.initial[&n.name].get(plan.config_path()) {
            Some(Some(c)) => Some((n.name.clone(), c.clone())),
            _ => None,
        })
        .collect();
    configs.insert("0".to_string(), initial);
    for s in &plan.steps {
        configs.insert(s.index.to_string(), s.configs.clone());
    }
    configs
}

/// Each node's files as of each step, next to its logs.
fn write_configs(dir: &Path, plan: &Plan, redactor: &SharedRedactor) -> Result<(), RecordError> {
    for n in &plan.nodes {
        let d = folder::node_dir(dir, &n.name);
        create_dir(&d)?;
        if let Some(Some(c)) = plan.initial[&n.name].get(plan.config_path()) {
            write(
                &d.join(folder::config_step_name(0)),
                redactor.file(plan.config_path(), c),
            )?;
        }
        for s in &plan.steps {
            write(
                &d.join(folder::config_step_name(s.index)),
                redactor.file(plan.config_path(), &s.configs[&n.name]),
            )?;
        }
    }
    Ok(())
}
/// Each node's `docker inspect`, redacted, next to its logs.
pub(crate) fn save_inspect<'a>(
    dir: &Path,
    redactor: &SharedRedactor,
    inspected: impl Iterator<Item = (&'a str, serde_json::Value)>,
) -> Result<(), super::error::RunError> {
    use super::error::RunError;
    for (name, v) in inspected {
        let text = serde_json::to_string_pretty(&redactor.json(&v))
            .map_err(|e| RunError::Internal(format!("inspect of {name}: {e}")))?;
        let d = folder::node_dir(dir, name);
        create_dir(&d)?;
        write(&d.join(folder::INSPECT_FILE), text)?;
    }
    Ok(())
}

/// A boot as result.json records it (`lb_server`: the first server its load balancer reached).
pub(crate) fn boot_record(
    node: &str,
    b: &super::watch::Boot,
    lb_server: Option<res::LbServer>,
) -> res::BootRecord {
    use super::watch::Ended;
    let ts =
        |t: &chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    res::BootRecord {
        node: node.to_string(),
        boot: b.number,
        step: b.step,
        started_at: ts(&b.started_at),
        ready_at: b.ready.map(|i| ts(&b.lines[i].ts)),
        ended_at: match &b.end {
            Some(Ended::Died { at, .. } | Ended::Stopped { at }) => Some(at.clone()),
            _ => None,
        },
        end: match &b.end {
            None => res::BootEnd::Running,
            Some(Ended::Stopped { .. }) => res::BootEnd::Stopped,
            Some(Ended::Died { .. }) => res::BootEnd::Exited,
            Some(Ended::Lost { .. }) => res::BootEnd::Lost,
        },
        exit_code: match &b.end {
            Some(Ended::Died { exit_code, .. }) => *exit_code,
            _ => None,
        },
        log: crate::results_folder::boot_log(node, b.number),
        lb_server,
    }
}
