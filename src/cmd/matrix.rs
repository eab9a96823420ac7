//! `repro matrix`: every check × k3s version, several runs at once, one table at the end.
//!
//! Everything about the input (checks, versions, channels) is settled before Docker is touched;
//! `--emit github-matrix` stops there and prints the cells for a CI fan-out. Each run is a full
//! `run::execute` with its own Docker network and labels, so runs only share the engine; they
//! are silent (their logs are in their folders) and the matrix prints one line as each ends.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::catalog::{self, Catalog};
use crate::cli::{Emit, Format, Global, MatrixArgs};
use crate::docker::Engine;
use crate::error::Error;
use crate::exit;
use crate::matrix::{render, Cell, Status, Summary};
use crate::plan::Plan;
use crate::result::Outcome;
use crate::run::{self, RunEnd, RunEvent, Target};
use crate::scenario::Scenario;
use crate::version::K3sVersion;

use super::common::{
    create_dir, out, resolve, sim_image_ref, spawn_interrupt_listener, stamped, version_entry,
};

/// GitHub Actions runs at most this many jobs from one matrix.
const GITHUB_MATRIX_LIMIT: usize = 256;

/// One planned cell: everything a run needs, decided before Docker.
struct Planned {
    scenario: Scenario,
    plan: Plan,
    target: Target,
    expected: Outcome,
    because: String,
}

pub async fn run(g: &Global, a: &MatrixArgs) -> Result<i32, Error> {
    let argv: Vec<String> = std::env::args().collect();

    // Checks: named, or every check that says where the fix landed.
    let root = catalog::find_root(g.root.as_deref());
    let cat = Catalog::load(root.as_deref()).map_err(|d| Error::bad_input(d.to_string()))?;
    let mut checks: Vec<String> = Vec::new();
    if a.checks.is_empty() {
        checks.extend(
            cat.checks
                .iter()
                .filter(|(c, _)| !c.fixed_in.firsts.is_empty())
                .map(|(c, _)| c.name.clone()),
        );
        if checks.is_empty() {
            return Err(Error::bad_input(
                "error: no check has `fixed-in`, so there is no default matrix\n  help: name the checks with --checks",
            ));
        }
    } else {
        for c in &a.checks {
            let c = c.trim();
            if c.is_empty() {
                return Err(Error::bad_input(
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
        return Err(Error::bad_input(problems));
    }
    let mut versions: Vec<K3sVersion> = Vec::new();
    for raw in &a.k3s_versions {
        let v = version_entry(raw, "--k3s-versions").await?;
        if versions.contains(&v) {
            errln!("repro: {v} is listed more than once; it runs once");
        } else {
            versions.push(v);
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
            let (scenario, plan) = resolve(g.root.as_deref(), &target)?;
            let expected = plan.expected_verdict.unwrap_or(Outcome::Fixed);
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
            return Err(Error::bad_input(format!(
                "error: {} cells, but a GitHub Actions matrix runs at most {GITHUB_MATRIX_LIMIT} jobs\n  help: split the versions or checks over several workflows",
                planned.len()
            )));
        }
        let cells: Vec<(String, String, Outcome)> = planned
            .iter()
            .map(|p| {
                (
                    p.plan.check.clone(),
                    p.plan.k3s_version.to_string(),
                    p.expected,
                )
            })
            .collect();
        out(&render::github_matrix(&cells));
        return Ok(exit::OK);
    }

    if a.format == Format::Json {
        super::common::people_to_stderr();
    }
    // Docker from here on. The matrix folder comes first: whatever breaks before the runs,
    // its summary still lists every cell and why it did not run.
    let dir = a.options.results.join(stamped("matrix"));
    create_dir(&dir)?;
    if let Err(e) = prepare_images(a, &versions).await {
        let why = format!("{e}");
        let mut cells: Vec<Cell> = planned
            .iter()
            .map(|p| not_run(&p.plan, p.expected, p.because.clone(), a.sim))
            .collect();
        for c in &mut cells {
            c.status = Status::Broken;
            c.error = Some(why.clone());
        }
        let summary = Summary::new(argv, Vec::new(), cells);
        crate::matrix::merge::write_outputs(&dir, &summary, "repro matrix")?;
        print_report(&summary, &dir);
        return Err(e);
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
    let done = Arc::new(AtomicUsize::new(0));
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
        let cfg = a
            .options
            .to_config(p.target, p.expected, dir.clone(), argv.clone());
        // Runs are silent (their logs are in their folders); each prints one line as it ends.
        let line = line_receiver(cells[i].clone(), dir.clone(), done.clone(), total);
        let handle = set.spawn(async move {
            let Ok(_permit) = sem.acquire_owned().await else {
                return (i, None);
            };
            if cancel.is_cancelled() {
                return (i, None);
            }
            let end = run::execute(&cfg, p.scenario, p.plan, vec![line]).await;
            (i, Some(end))
        });
        task_cell.insert(handle.id(), i);
    }
    while let Some(joined) = set.join_next_with_id().await {
        match joined {
            Ok((_, (i, Some(end)))) => finish(&mut cells[i], &dir, &end),
            Ok((_, (i, None))) => {
                let n = done.fetch_add(1, Ordering::SeqCst) + 1;
                out(&progress_line(n, total, &cells[i], &dir));
            }
            Err(e) => {
                errln!("repro: internal error (a bug in repro): {e}");
                done.fetch_add(1, Ordering::SeqCst);
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
    let written = crate::matrix::merge::write_outputs(&dir, &summary, "repro matrix");
    print_report(&summary, &dir);
    out(&format!("wall time {:.1}s", t0.elapsed().as_secs_f64()));
    written?;
    let code = if interrupted {
        exit::INTERRUPTED
    } else {
        summary.exit_code
    };
    out(&format!("exit: {code}"));
    if a.format == Format::Json {
        let json = serde_json::to_string_pretty(&summary).map_err(anyhow::Error::from)?;
        super::common::write_stdout(&format!("{json}\n")).map_err(anyhow::Error::from)?;
    }
    Ok(code)
}

/// Everything the runs share, done once before them: loading the image archive and building
/// the stand-in images (two runs building one tag at the same time would race).
async fn prepare_images(a: &MatrixArgs, versions: &[K3sVersion]) -> Result<(), Error> {
    if a.options.image_archive.is_none() && !a.sim {
        return Ok(());
    }
    let engine = Engine::connect().await?;
    if let Some(archive) = &a.options.image_archive {
        errln!("repro: loading image archive {}", archive.display());
        engine.load_archive(archive).await?;
    }
    if a.sim {
        // Built (or refreshed, when the stand-in binary changed) one after the other.
        let t = Instant::now();
        for v in versions {
            crate::sim_image::ensure_sim_image(
                &engine.docker,
                &v.to_string(),
                a.options.rebuild_sim,
            )
            .await
            .map_err(|e| {
                anyhow::anyhow!(
                    "cannot build the stand-in image {}: {e:#}",
                    sim_image_ref(v)
                )
            })?;
        }
        errln!(
            "repro: stand-in images ready ({:.1}s)",
            t.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// The receiver that prints a cell's line when its run finishes.
fn line_receiver(
    cell: Cell,
    dir: PathBuf,
    done: Arc<AtomicUsize>,
    total: usize,
) -> Arc<dyn run::Receiver> {
    Arc::new(move |e: &RunEvent<'_>| {
        if let RunEvent::Finished(end) = e {
            let mut c = cell.clone();
            finish(&mut c, &dir, end);
            let n = done.fetch_add(1, Ordering::SeqCst) + 1;
            out(&progress_line(n, total, &c, &dir));
        }
    })
}

/// A cell before (or without) its run.
fn not_run(plan: &Plan, expected: Outcome, because: String, sim: bool) -> Cell {
    Cell {
        check: plan.check.clone(),
        k3s_version: plan.k3s_version.to_string(),
        expected,
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
fn finish(c: &mut Cell, matrix_dir: &Path, end: &RunEnd) {
    c.status = if end.code == exit::INTERRUPTED {
        Status::NotRun
    } else {
        Status::of(c.expected, end.outcome())
    };
    c.verdict = end.outcome();
    c.seconds = end.seconds;
    c.exit_code = Some(end.code);
    c.run_id = end.result.as_ref().map(|r| r.run_id.clone());
    c.results = end.dir.as_ref().map(|d| relative(matrix_dir, d));
    c.error = end.why();
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
        c.verdict.map_or("no verdict", Outcome::as_str),
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
pub(super) fn print_report(summary: &Summary, dir: &Path) {
    out("");
    out(render::render_table(&summary.cells).trim_end());
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
    out(&render::render_totals(&summary.totals));
    if summary.cells.iter().any(|c| c.stand_in) {
        out("(verdicts of the repro stand-in, not of real k3s)");
    }
    out(&format!(
        "summary: {}\njunit:   {}",
        dir.join("summary.json").display(),
        dir.join("junit.xml").display()
    ));
}
