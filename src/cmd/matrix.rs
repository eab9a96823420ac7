//! `repro matrix`: every check × k3s version, several runs at once, one table at the end.
//!
//! Everything about the input (checks, versions, channels) is settled before Docker is touched;
//! `--emit github-matrix` stops there and prints the cells for a CI fan-out. Each run is a full
//! `run::execute` with its own Docker network and labels, so runs only share the engine; they
//! are silent (their logs are in their folders) and the matrix prints one line as each ends.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::catalog::{self, Catalog};
use crate::cli::{Emit, Global, MatrixArgs, Outcome, Target};
use crate::docker::Engine;
use crate::exit;
use crate::matrix::{self, Cell, Status, Summary};
use crate::plan::{ExpectedVerdict, Plan};
use crate::scenario::Scenario;
use crate::version::K3sVersion;

/// GitHub Actions runs at most this many jobs from one matrix.
const GITHUB_MATRIX_LIMIT: usize = 256;

/// Prints to stdout; a closed pipe is the reader's choice, not an error.
pub(crate) fn out(text: &str) {
    let _ = super::plan::write_stdout(&format!("{text}\n"));
}

/// Prints input problems and returns exit 2.
pub(crate) fn bad_input(msg: &str) -> i32 {
    eprint!("{msg}");
    if !msg.ends_with('\n') {
        eprintln!();
    }
    exit::BAD_INPUT
}

/// A `--k3s-versions` / `--good` / `--bad` entry: a version, or a channel resolved on the
/// channel server. Err((exit code, message)): 2 for a malformed entry, 3 when a channel cannot
/// be resolved (the network is missing: infrastructure, not the user's input).
pub(crate) async fn version_entry(raw: &str, flag: &str) -> Result<K3sVersion, (i32, String)> {
    let raw = raw.trim();
    if crate::channels::is_channel(raw) {
        let v = crate::channels::resolve(raw)
            .await
            .map_err(|e| (exit::INFRA, format!("error: {flag}: {e}")))?;
        eprintln!("repro: channel `{raw}` is {v} today");
        return Ok(v);
    }
    raw.parse::<K3sVersion>().map_err(|e| {
        (
            exit::BAD_INPUT,
            format!(
                "error: {flag}: {e}\n  help: give full versions (v1.33.4+k3s1) or a channel (stable, latest, v1.33)"
            ),
        )
    })
}

/// `matrix-20250101T000000Z-ab12cd34`-style folder names.
pub(crate) fn stamped(prefix: &str) -> String {
    let t = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let id: String = (0..4)
        .map(|_| format!("{:02x}", rand::random::<u8>()))
        .collect();
    format!("{prefix}-{t}-{id}")
}

/// The run id a run folder's result.json names.
pub(crate) fn run_id_of(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("result.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get("run_id")?.as_str().map(str::to_string)
}

pub(crate) fn outcome_of(e: ExpectedVerdict) -> Outcome {
    match e {
        ExpectedVerdict::Fixed => Outcome::Fixed,
        ExpectedVerdict::Reproduced => Outcome::Reproduced,
    }
}

/// Ctrl-C / SIGTERM cancels the token (each running run also hears it and cleans up).
pub(crate) fn spawn_interrupt_listener(cancel: CancellationToken) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        match term.as_mut() {
            Some(t) => tokio::select! { _ = tokio::signal::ctrl_c() => {}, _ = t.recv() => {} },
            None => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
        eprintln!("repro: interrupted — no new runs start; running ones are removed");
        cancel.cancel();
    })
}

/// One planned cell: everything a run needs, decided before Docker.
struct Planned {
    scenario: Scenario,
    plan: Plan,
    target: Target,
    expected: ExpectedVerdict,
    because: String,
}

pub async fn run(g: &Global, a: &MatrixArgs) -> anyhow::Result<i32> {
    let argv: Vec<String> = std::env::args().collect();

    // Checks: named, or every check that says where the fix landed.
    let root = catalog::find_root(g.root.as_deref());
    let cat = match Catalog::load(root.as_deref()) {
        Ok(c) => c,
        Err(d) => return Ok(bad_input(&d.to_string())),
    };
    let mut checks: Vec<String> = Vec::new();
    if a.checks.is_empty() {
        checks.extend(
            cat.checks
                .iter()
                .filter(|(c, _)| !c.fixed_in.firsts.is_empty())
                .map(|(c, _)| c.name.clone()),
        );
        if checks.is_empty() {
            return Ok(bad_input(
                "error: no check has `fixed-in`, so there is no default matrix\n  help: name the checks with --checks",
            ));
        }
    } else {
        for c in &a.checks {
            let c = c.trim();
            if c.is_empty() {
                return Ok(bad_input(
                    "error: --checks has an empty entry\n  help: e.g. --checks etcd-split,metrics-order",
                ));
            }
            if !checks.iter().any(|x| x == c) {
                checks.push(c.to_string());
            }
        }
    }

    // Versions: malformed entries are all reported at once, before any channel lookup.
    let mut problems = String::new();
    for raw in &a.k3s_versions {
        let raw = raw.trim();
        if raw.is_empty() {
            problems.push_str("error: --k3s-versions has an empty entry\n");
        } else if !crate::channels::is_channel(raw) {
            if let Err(e) = raw.parse::<K3sVersion>() {
                problems.push_str(&format!("error: --k3s-versions: {e}\n"));
            }
        }
    }
    if !problems.is_empty() {
        problems.push_str(
            "  help: give full versions (v1.33.4+k3s1) or channels (stable, latest, v1.33), comma-separated\n",
        );
        return Ok(bad_input(&problems));
    }
    let mut versions: Vec<K3sVersion> = Vec::new();
    for raw in &a.k3s_versions {
        match version_entry(raw, "--k3s-versions").await {
            Ok(v) if versions.contains(&v) => {
                eprintln!("repro: {v} is listed more than once; it runs once");
            }
            Ok(v) => versions.push(v),
            Err((code, msg)) => {
                eprintln!("{msg}");
                return Ok(code);
            }
        }
    }

    // Plan every cell (validates each check against each version).
    let mut planned: Vec<Planned> = Vec::new();
    for check in &checks {
        for v in &versions {
            let target = Target {
                check: check.clone(),
                topology: None,
                k3s_version: Some(v.to_string()),
                image: None,
                sim: a.sim,
            };
            let (scenario, plan) = match super::plan::resolve(g, &target) {
                Ok(x) => x,
                Err(msg) => return Ok(bad_input(&msg)),
            };
            let expected = plan.expected_verdict.unwrap_or(ExpectedVerdict::Fixed);
            let because = format!(
                "{}{}",
                plan.expected_because,
                if plan.fixed_in.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; fixed-in: {}",
                        plan.fixed_in
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            );
            planned.push(Planned {
                scenario,
                plan,
                target,
                expected,
                because,
            });
        }
    }

    if let Some(Emit::GithubMatrix) = a.emit {
        if planned.len() > GITHUB_MATRIX_LIMIT {
            return Ok(bad_input(&format!(
                "error: {} cells, but a GitHub Actions matrix runs at most {GITHUB_MATRIX_LIMIT} jobs\n  help: split the versions or checks over several workflows",
                planned.len()
            )));
        }
        let cells: Vec<(String, String, String)> = planned
            .iter()
            .map(|p| {
                (
                    p.plan.check.clone(),
                    p.plan.k3s_version.to_string(),
                    p.expected.as_str().to_string(),
                )
            })
            .collect();
        out(&matrix::github_matrix(&cells));
        return Ok(exit::OK);
    }

    // Docker from here on.
    let engine = match Engine::connect().await {
        Ok(e) => e,
        Err(e) => {
            eprintln!("repro: {e}");
            return Ok(exit::INFRA);
        }
    };
    if let Some(archive) = &a.options.image_archive {
        eprintln!("repro: loading image archive {}", archive.display());
        if let Err(e) = engine.load_archive(archive).await {
            eprintln!("repro: {e:#}");
            return Ok(exit::INFRA);
        }
    }
    if a.sim {
        // Built (or refreshed, when the stand-in binary changed) once, one after the other,
        // before the runs: two runs building one tag at the same time would race.
        let t = Instant::now();
        for v in &versions {
            if let Err(e) = crate::sim_image::ensure_sim_image(
                &engine.docker,
                &v.to_string(),
                a.options.rebuild_sim,
            )
            .await
            {
                eprintln!(
                    "repro: cannot build the stand-in image {}: {e:#}",
                    super::plan::sim_image_ref(v)
                );
                return Ok(exit::INFRA);
            }
        }
        eprintln!(
            "repro: stand-in images ready ({:.1}s)",
            t.elapsed().as_secs_f64()
        );
    }

    let dir = a.options.results.join(stamped("matrix"));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!(
            "repro: cannot create the matrix folder {}: {e}",
            dir.display()
        );
        return Ok(exit::INFRA);
    }
    let total = planned.len();
    let jobs = usize::from(a.jobs);
    out(&format!(
        "matrix: {} check{} × {} version{} = {total} run{}, {jobs} at a time{} → {}",
        checks.len(),
        if checks.len() == 1 { "" } else { "s" },
        versions.len(),
        if versions.len() == 1 { "" } else { "s" },
        if total == 1 { "" } else { "s" },
        if a.sim {
            " (k3s stand-in, not real k3s)"
        } else {
            ""
        },
        dir.display()
    ));

    let t0 = Instant::now();
    let cancel = CancellationToken::new();
    let listener = spawn_interrupt_listener(cancel.clone());
    let sem = Arc::new(Semaphore::new(jobs));
    let mut set = tokio::task::JoinSet::new();
    // Every cell exists from the start as "not run": whatever happens to its task (skipped
    // after Ctrl-C, or a panic — a bug), it stays in the table and summary.
    let mut cells: Vec<Cell> = planned
        .iter()
        .map(|p| not_run(&p.plan, p.expected, p.because.clone(), a.sim))
        .collect();
    let mut task_cell = std::collections::HashMap::new();
    for (i, p) in planned.into_iter().enumerate() {
        let sem = sem.clone();
        let cancel = cancel.clone();
        let opts = a.options.for_run(outcome_of(p.expected), dir.clone());
        let argv = argv.clone();
        let handle = set.spawn(async move {
            let Ok(_permit) = sem.acquire_owned().await else {
                return (i, None);
            };
            if cancel.is_cancelled() {
                return (i, None);
            }
            let o = crate::run::execute(p.scenario, p.plan, &p.target, &opts, argv, true).await;
            (i, Some(o))
        });
        task_cell.insert(handle.id(), i);
    }
    let mut done = 0;
    while let Some(joined) = set.join_next_with_id().await {
        done += 1;
        match joined {
            Ok((_, (i, outcome))) => {
                if let Some(o) = outcome {
                    finish(&mut cells[i], &dir, &o);
                }
                out(&progress_line(done, total, &cells[i], &dir));
            }
            Err(e) => {
                eprintln!("repro: internal error (a bug in repro): {e}");
                if let Some(&i) = task_cell.get(&e.id()) {
                    cells[i].status = Status::Broken;
                    cells[i].error = Some(format!("internal error (a bug in repro): {e}"));
                }
            }
        }
    }
    listener.abort();
    let interrupted = cancel.is_cancelled();

    let summary = Summary::new(argv, Vec::new(), cells);
    let written = crate::merge::write_outputs(&dir, &summary, "repro matrix");
    print_report(&summary, &dir);
    out(&format!("wall time {:.1}s", t0.elapsed().as_secs_f64()));
    if let Err(e) = written {
        eprintln!("repro: {e:#}");
        return Ok(exit::INFRA);
    }
    let code = if interrupted {
        exit::INTERRUPTED
    } else {
        summary.exit_code
    };
    out(&format!("exit: {code}"));
    Ok(code)
}

/// A cell before (or without) its run.
fn not_run(plan: &Plan, expected: ExpectedVerdict, because: String, sim: bool) -> Cell {
    Cell {
        check: plan.check.clone(),
        k3s_version: plan.k3s_version.to_string(),
        expected: expected.as_str().to_string(),
        expected_because: because,
        verdict: None,
        status: Status::NotRun,
        seconds: 0.0,
        exit_code: None,
        run_id: None,
        results: None,
        stand_in: sim,
        error: Some("interrupted before it started".into()),
    }
}

/// Fills a cell from its finished run.
fn finish(c: &mut Cell, matrix_dir: &Path, o: &crate::run::RunOutcome) {
    c.status = if o.code == exit::INTERRUPTED {
        Status::NotRun
    } else {
        Status::of(&c.expected, o.verdict.as_deref())
    };
    c.verdict = o.verdict.clone();
    c.seconds = o.seconds;
    c.exit_code = Some(o.code);
    c.run_id = o.dir.as_deref().and_then(run_id_of);
    c.results = o.dir.as_ref().map(|d| relative(matrix_dir, d));
    c.error = o.error.clone();
}

/// `d` relative to `base` when inside it (the run folders of a matrix are), else as is.
fn relative(base: &Path, d: &Path) -> String {
    d.strip_prefix(base)
        .map(PathBuf::from)
        .unwrap_or_else(|_| d.to_path_buf())
        .display()
        .to_string()
}

fn progress_line(done: usize, total: usize, c: &Cell, dir: &Path) -> String {
    let mut s = format!(
        "[{done}/{total}] {} {}: {} (expected {}) {} in {:.1}s",
        c.check,
        c.k3s_version,
        c.verdict.as_deref().unwrap_or("no verdict"),
        c.expected,
        c.status.label(),
        c.seconds
    );
    if c.status != Status::Ok {
        if let Some(r) = &c.results {
            s.push_str(&format!(" → {}", dir.join(r).display()));
        }
    }
    s
}

/// The table, a line per cell that is not ok (why), the counts and where the files are.
pub(crate) fn print_report(summary: &Summary, dir: &Path) {
    out("");
    out(matrix::render_table(&summary.cells).trim_end());
    let why: Vec<String> = summary
        .cells
        .iter()
        .filter_map(|c| c.explain().map(|w| format!("  {}: {w}", c.status.label())))
        .collect();
    if !why.is_empty() {
        out("");
        for w in why {
            out(&w);
        }
    }
    out("");
    out(&matrix::render_totals(&summary.totals));
    if summary.cells.iter().any(|c| c.stand_in) {
        out("(verdicts of the repro stand-in, not of real k3s)");
    }
    out(&format!(
        "summary: {}\njunit:   {}",
        dir.join("summary.json").display(),
        dir.join("junit.xml").display()
    ));
}
