//! `repro runs`: the runs under a results folder — id, check, version, verdict, whether the
//! cluster is still there (the engine's labels, when it answers), folder — and for a kept
//! cluster a node's log (`runs logs`) or a command in a node (`runs exec`) (#32 item 8).
//!
//! The folders are read as `repro report` reads them (`report::runs_in`, the typed record);
//! the engine is asked only for the containers' labels, and a node's log is read the way the
//! run read it (`run::log_command`: the container's log, or a systemd unit's journal).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use futures_util::StreamExt;

use crate::cli::{Format, RunsArgs, RunsCommand, RunsExecArgs, RunsLogsArgs};
use crate::diag::Diagnostic;
use crate::docker::{self, Engine, LogChunk};
use crate::error::Error;
use crate::exit::Exit;
use crate::result::RunResult;

/// A run folder and its record.
struct Listed {
    dir: PathBuf,
    result: RunResult,
}

/// A run's node containers, as the engine lists them.
#[derive(Default)]
struct Cluster {
    check: String,
    /// node → (container, running).
    nodes: BTreeMap<String, (String, bool)>,
}

impl Cluster {
    fn running(&self) -> usize {
        self.nodes.values().filter(|(_, r)| *r).count()
    }
}

/// Every run's cluster the engine still has, by run id; or why the engine could not say.
type EngineView = Result<BTreeMap<String, Cluster>, String>;

pub(crate) async fn run(a: &RunsArgs) -> Result<Exit, Error> {
    match &a.command {
        None => list(a).await,
        Some(RunsCommand::Logs(l)) => logs(&a.results, l).await,
        Some(RunsCommand::Exec(e)) => exec(&a.results, e).await,
    }
}

/// The runs under `results`, newest first, and the folders that could not be read.
fn scan(results: &Path) -> (Vec<Listed>, Vec<String>) {
    let mut runs = Vec::new();
    let mut problems = Vec::new();
    for (dir, r) in crate::report::runs_in(results) {
        match r {
            Ok(result) => runs.push(Listed { dir, result }),
            Err(e) => problems.push(e.to_string()),
        }
    }
    // result.json's start time is RFC 3339 in UTC: ordered as text.
    runs.sort_by(|a, b| b.result.started_at.cmp(&a.result.started_at));
    (runs, problems)
}

/// The clusters of every run the engine has: containers labelled by repro, grouped by run.
async fn clusters(engine: &Engine) -> Result<BTreeMap<String, Cluster>, Error> {
    let mut out: BTreeMap<String, Cluster> = BTreeMap::new();
    for c in engine.containers_labelled(docker::LABEL_MANAGED).await? {
        // Only a node's container names its node (the doctor's trial container does not).
        let (Some(run), Some(node)) = (
            c.labels.get(docker::LABEL_RUN),
            c.labels.get(docker::LABEL_NODE),
        ) else {
            continue;
        };
        let entry = out.entry(run.clone()).or_default();
        if let Some(check) = c.labels.get(docker::LABEL_CHECK) {
            entry.check = check.clone();
        }
        entry.nodes.insert(node.clone(), (c.name, c.running));
    }
    Ok(out)
}

/// The engine's clusters, or (no engine) why it was not asked: the listing goes on without.
async fn engine_view() -> EngineView {
    let first_line = |e: String| e.lines().next().unwrap_or_default().to_string();
    let engine = crate::docker::connect()
        .await
        .map_err(|e| first_line(e.to_string()))?;
    clusters(&engine)
        .await
        .map_err(|e| first_line(e.to_string()))
}

/// The version that ran (a build under test's own), marked when it was the stand-in.
fn version_cell(r: &RunResult) -> String {
    let v = r.build.as_ref().map_or(&r.k3s.version, |b| &b.reported);
    if r.k3s.stand_in {
        format!("{v} (stand-in)")
    } else {
        v.clone()
    }
}

fn verdict_cell(r: &RunResult) -> String {
    match (&r.verdict, &r.finished_at, r.exit_code) {
        (Some(v), _, _) => v.outcome.to_string(),
        (None, None, _) => "unfinished".to_string(),
        (None, Some(_), Some(code)) => format!("error (exit {code})"),
        (None, Some(_), None) => "error".to_string(),
    }
}

fn cluster_cell(view: &EngineView, id: &str) -> String {
    match view {
        Err(_) => "?".to_string(),
        Ok(m) => match m.get(id) {
            None => "removed".to_string(),
            Some(c) => format!("kept: {}/{} running", c.running(), c.nodes.len()),
        },
    }
}

async fn list(a: &RunsArgs) -> Result<Exit, Error> {
    let (runs, problems) = scan(&a.results);
    let view = engine_view().await;
    for p in &problems {
        errln!("warning: {p}");
    }
    // Runs the engine still has whose folder is not under `results` (another --results).
    let elsewhere: Vec<(&String, &Cluster)> = match &view {
        Ok(m) => m
            .iter()
            .filter(|(id, _)| !runs.iter().any(|r| &r.result.run_id == *id))
            .collect(),
        Err(_) => Vec::new(),
    };
    match a.format {
        Format::Json => {
            let doc = list_json(&a.results, &runs, &elsewhere, &view, &problems);
            let _ = super::common::write_stdout(&format!("{doc:#}\n"));
        }
        Format::Text => list_text(&a.results, &runs, &elsewhere, &view),
    }
    Ok(Exit::Ok)
}

fn list_text(
    results: &Path,
    runs: &[Listed],
    elsewhere: &[(&String, &Cluster)],
    view: &EngineView,
) {
    if let Err(why) = view {
        errln!("warning: the Docker engine was not asked ({why}): whether a cluster is kept is unknown (`?`)");
    }
    if runs.is_empty() && elsewhere.is_empty() {
        super::common::out(&format!(
            "no runs in {} (repro run writes them there; --results names another folder)",
            results.display()
        ));
        return;
    }
    let mut rows = vec![["ID", "CHECK", "VERSION", "VERDICT", "CLUSTER", "FOLDER"]
        .map(String::from)
        .to_vec()];
    for l in runs {
        let r = &l.result;
        rows.push(vec![
            r.run_id.clone(),
            r.check.name.clone(),
            version_cell(r),
            verdict_cell(r),
            cluster_cell(view, &r.run_id),
            l.dir.display().to_string(),
        ]);
    }
    for (id, c) in elsewhere {
        rows.push(vec![
            id.to_string(),
            c.check.clone(),
            "?".to_string(),
            "?".to_string(),
            cluster_cell(view, id),
            format!("(not in {})", results.display()),
        ]);
    }
    let mut text = String::new();
    crate::table::table(&mut text, "", &rows);
    let kept = matches!(view, Ok(m) if !m.is_empty());
    if kept {
        text.push_str(
            "\nA kept cluster: repro runs logs ID [NODE], repro runs exec ID NODE -- CMD…, repro clean --run ID\n",
        );
    }
    super::common::out(text.trim_end());
}

fn list_json(
    results: &Path,
    runs: &[Listed],
    elsewhere: &[(&String, &Cluster)],
    view: &EngineView,
    problems: &[String],
) -> serde_json::Value {
    let cluster = |id: &str| match view {
        Err(_) => serde_json::Value::Null,
        Ok(m) => {
            let nodes: Vec<serde_json::Value> = m.get(id).map_or(Vec::new(), |c| {
                c.nodes
                    .iter()
                    .map(|(node, (container, running))| {
                        serde_json::json!({"node": node, "container": container, "running": running})
                    })
                    .collect()
            });
            serde_json::json!({"kept": !nodes.is_empty(), "nodes": nodes})
        }
    };
    let mut list: Vec<serde_json::Value> = runs
        .iter()
        .map(|l| {
            let r = &l.result;
            serde_json::json!({
                "id": r.run_id,
                "check": r.check.name,
                "distribution": r.distribution,
                "version": r.build.as_ref().map_or(&r.k3s.version, |b| &b.reported),
                "stand_in": r.k3s.stand_in,
                "verdict": r.verdict.as_ref().map(|v| v.outcome),
                "exit_code": r.exit_code,
                "started_at": r.started_at,
                "finished_at": r.finished_at,
                "folder": l.dir,
                "cluster": cluster(&r.run_id),
            })
        })
        .collect();
    list.extend(elsewhere.iter().map(|(id, c)| {
        serde_json::json!({"id": id, "check": c.check, "folder": null, "cluster": cluster(id)})
    }));
    let engine = match view {
        Ok(_) => serde_json::json!({"asked": true}),
        Err(why) => serde_json::json!({"asked": false, "why": why}),
    };
    serde_json::json!({
        "kind": "repro-runs",
        "results": results,
        "engine": engine,
        "runs": list,
        "problems": problems,
    })
}

/// A kept run, found by the id typed: its record (if its folder is under `results`) and its
/// cluster. Bad input (exit 2) when no run has that id or its cluster is gone.
struct Kept {
    id: String,
    listed: Option<Listed>,
    cluster: Cluster,
}

async fn kept(results: &Path, typed: &str) -> Result<(Engine, Kept), Error> {
    let (runs, _) = scan(results);
    // The id is checked before a missing engine counts: a mistyped id is the user's to fix
    // (exit 2) whether or not Docker answers.
    let engine = match crate::docker::connect().await {
        Ok(engine) => {
            let clusters = clusters(&engine).await?;
            Ok((engine, clusters))
        }
        Err(e) => Err(e),
    };
    let mut known: Vec<String> = runs.iter().map(|l| l.result.run_id.clone()).collect();
    if let Ok((_, clusters)) = &engine {
        let more: Vec<String> = (clusters.keys())
            .filter(|k| !known.contains(k))
            .cloned()
            .collect();
        known.extend(more);
    }
    let id = resolve(typed, &known, results)?;
    let (engine, mut clusters) = engine?;
    let listed = runs.into_iter().find(|l| l.result.run_id == id);
    let Some(cluster) = clusters.remove(&id) else {
        let logs = listed.as_ref().map(|l| {
            format!(
                "its boots' logs are in {}",
                crate::results_folder::node_dir(&l.dir, "NODE").display()
            )
        });
        return Err(Diagnostic {
            help: logs,
            ..Diagnostic::usage(format!(
                "run {id} was not kept: the engine has no container of it (the run removed its cluster at the end; `repro run --keep` keeps one)"
            ))
        }
        .into());
    };
    Ok((
        engine,
        Kept {
            id,
            listed,
            cluster,
        },
    ))
}

/// The run id `typed` names: itself, or the one id it begins; else exit 2 with the ids known.
fn resolve(typed: &str, known: &[String], results: &Path) -> Result<String, Error> {
    if known.iter().any(|k| k == typed) {
        return Ok(typed.to_string());
    }
    let begun: Vec<&String> = known
        .iter()
        .filter(|k| !typed.is_empty() && k.starts_with(typed))
        .collect();
    if let [one] = begun.as_slice() {
        return Ok(one.to_string());
    }
    let what = if begun.len() > 1 {
        format!("`{typed}` begins several runs' ids")
    } else {
        format!("no run `{typed}` in {} or on the engine", results.display())
    };
    let mean = crate::catalog::did_you_mean(typed, known.iter().map(String::as_str));
    const SHOWN: usize = 12;
    let mut ids = known
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if known.len() > SHOWN {
        ids.push_str(&format!(" and {} more (`repro runs`)", known.len() - SHOWN));
    }
    let ids = if known.is_empty() {
        "none (`repro runs`)".to_string()
    } else {
        ids
    };
    Err(Diagnostic::general(what, format!("{mean}known runs: {ids}")).into())
}

impl Kept {
    /// The container of `node`, or exit 2 naming the run's nodes.
    fn container(&self, node: &str) -> Result<&(String, bool), Error> {
        self.cluster.nodes.get(node).ok_or_else(|| {
            let names: Vec<&str> = self.cluster.nodes.keys().map(String::as_str).collect();
            let mean = crate::catalog::did_you_mean(node, names.iter().copied());
            Diagnostic::general(
                format!("run {} has no node `{node}`", self.id),
                format!("{mean}its nodes: {}", names.join(", ")),
            )
            .into()
        })
    }

    /// How the node's log is read: the command to run in it, or None for the container's log.
    fn log_command(&self, node: &str, follow: bool) -> Result<Option<Vec<String>>, Error> {
        let Some(l) = &self.listed else {
            return Err(Diagnostic::general(
                format!(
                    "run {} has no results folder here: which way its nodes log (container or systemd unit) is in its result.json",
                    self.id
                ),
                "give the --results folder it was run with",
            )
            .into());
        };
        let r = &l.result;
        let role = r
            .topology
            .nodes
            .iter()
            .find(|n| n.name == node)
            .map(|n| n.role);
        Ok(role.and_then(|role| crate::run::log_command(r.distribution.facts(), role, follow)))
    }
}

async fn logs(results: &Path, a: &RunsLogsArgs) -> Result<Exit, Error> {
    let (engine, kept) = kept(results, &a.run).await?;
    let nodes: Vec<String> = match &a.node {
        Some(n) => {
            kept.container(n)?;
            vec![n.clone()]
        }
        None => kept.cluster.nodes.keys().cloned().collect(),
    };
    let several = nodes.len() > 1;
    for node in nodes {
        let (container, _) = kept.container(&node)?;
        if several {
            super::common::out(&format!("==> {node} <=="));
        }
        let mut printer = Printer::log();
        match kept.log_command(&node, a.follow)? {
            None => {
                let mut stream = engine.logs(container, a.follow);
                while let Some(chunk) = stream.next().await {
                    printer.chunk(chunk?);
                }
            }
            Some(cmd) => {
                engine
                    .exec_streamed(container, &cmd, &mut |c| printer.chunk(c))
                    .await?;
            }
        }
        printer.finish();
    }
    Ok(Exit::Ok)
}

async fn exec(results: &Path, a: &RunsExecArgs) -> Result<Exit, Error> {
    let (engine, kept) = kept(results, &a.run).await?;
    let (container, running) = kept.container(&a.node)?;
    if !running {
        return Err(Diagnostic::general(
            format!(
                "{} of run {} is not running (its container stopped)",
                a.node, kept.id
            ),
            format!("`repro runs logs {} {}` shows why", kept.id, a.node),
        )
        .into());
    }
    let mut printer = Printer::default();
    let code = engine
        .exec_streamed(container, &a.cmd, &mut |c| printer.chunk(c))
        .await?;
    printer.finish();
    match u8::try_from(code) {
        Ok(c) => Ok(Exit::Passed(c)),
        Err(_) => Err(Error::Other(anyhow::anyhow!(
            "the engine gave no exit status for `{}` in {container}",
            a.cmd.join(" ")
        ))),
    }
}

/// Writes a node's output line by line, each line redacted (the engine's output is the node's
/// raw text) and sanitised as every output of repro: a command's stdout and stderr apart, a
/// log (`log`) all on stdout — k3s logs on stderr, and the log is what was asked for.
#[derive(Default)]
struct Printer {
    log: bool,
    out: crate::run::watch::LineSplitter,
    err: crate::run::watch::LineSplitter,
    redactor: Option<crate::redact::Redactor>,
}

impl Printer {
    fn log() -> Printer {
        Printer {
            log: true,
            ..Printer::default()
        }
    }

    fn chunk(&mut self, c: LogChunk) {
        let redactor = self
            .redactor
            .get_or_insert_with(|| crate::redact::Redactor::new(&[]));
        let to_err = c.stderr && !self.log;
        let split = if c.stderr {
            &mut self.err
        } else {
            &mut self.out
        };
        split.feed(&c.bytes, |line, _cut| write(redactor, to_err, line));
    }

    fn finish(&mut self) {
        let redactor = self
            .redactor
            .get_or_insert_with(|| crate::redact::Redactor::new(&[]));
        self.out.finish(|line, _| write(redactor, false, line));
        let to_err = !self.log;
        self.err.finish(|line, _| write(redactor, to_err, line));
    }
}

fn write(redactor: &mut crate::redact::Redactor, stderr: bool, line: &[u8]) {
    let text = redactor.redact_text(&String::from_utf8_lossy(line));
    if stderr {
        crate::term::write_err(&format!("{text}\n"));
    } else {
        let _ = crate::term::write_out(&format!("{text}\n"));
    }
}
