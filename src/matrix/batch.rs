//! Running a matrix's cells: several runs at once (each a full `run::execute` with its own
//! Docker network and labels, so runs only share the engine), every cell kept in the table
//! whatever happens to its run. Runs are silent (their logs are in their folders); the matrix
//! says one line as each ends, through the caller's `say`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::exit::Exit;
use crate::outcome::Outcome;
use crate::plan::Plan;
use crate::run::{self, RunConfig, RunEnd, RunEvent};
use crate::scenario::Scenario;

use super::model::{Cell, Status};

/// Where the lines for people go (the command's stdout, or stderr under `--format json`).
pub(crate) type Say = Arc<dyn Fn(&str) + Send + Sync>;

/// One planned cell: everything its run needs, decided before Docker, and the cell as it
/// stands before the run (not run).
pub(crate) struct Planned {
    pub(crate) scenario: Scenario,
    pub(crate) plan: Plan,
    pub(crate) cfg: RunConfig,
    pub(crate) cell: Cell,
}

/// Why `plan`'s verdict is the expected one, with the `fixed-in` entries it came from.
pub(crate) fn expected_because(plan: &Plan) -> String {
    if plan.fixed_in.is_empty() {
        return plan.expected_because.clone();
    }
    format!(
        "{}; fixed-in: {}",
        plan.expected_because,
        plan.fixed_in
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// A cell before (or without) its run.
pub(crate) fn not_run(plan: &Plan, expected: Outcome, because: String, sim: bool) -> Cell {
    Cell::not_run(
        plan.check.clone(),
        plan.k3s_version.to_string(),
        expected,
        because,
        sim,
        "interrupted before it started",
    )
}

/// Runs every planned cell, `jobs` at a time, into `dir`; `cancel` stops new runs (and each
/// running one hears the interrupt itself). Returns the cells in the planned order.
pub(crate) async fn run_cells(
    planned: Vec<Planned>,
    jobs: usize,
    dir: &Path,
    cancel: &CancellationToken,
    say: Say,
) -> Vec<Cell> {
    let total = planned.len();
    let sem = Arc::new(Semaphore::new(jobs));
    let done = Arc::new(AtomicUsize::new(0));
    let mut set = tokio::task::JoinSet::new();
    // Every cell exists from the start as "not run": whatever happens to its task (skipped
    // after Ctrl-C, or a panic — a bug), it stays in the table and summary.
    let mut cells: Vec<Cell> = planned.iter().map(|p| p.cell.clone()).collect();
    let mut task_cell = std::collections::HashMap::new();
    for (i, p) in planned.into_iter().enumerate() {
        let sem = sem.clone();
        let cancel = cancel.clone();
        // Runs are silent (their logs are in their folders); each says one line as it ends.
        let line = line_receiver(
            cells[i].clone(),
            dir.to_path_buf(),
            done.clone(),
            total,
            say.clone(),
        );
        let handle = set.spawn(async move {
            let Ok(_permit) = sem.acquire_owned().await else {
                return (i, None);
            };
            if cancel.is_cancelled() {
                return (i, None);
            }
            let end = run::execute(
                &p.cfg,
                p.scenario,
                p.plan,
                vec![line],
                crate::report::render_all_with,
            )
            .await;
            (i, Some(end))
        });
        task_cell.insert(handle.id(), i);
    }
    while let Some(joined) = set.join_next_with_id().await {
        match joined {
            Ok((_, (i, Some(end)))) => finish(&mut cells[i], dir, &end),
            Ok((_, (i, None))) => {
                let n = done.fetch_add(1, Ordering::SeqCst) + 1;
                say(&progress_line(n, total, &cells[i], dir));
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
    cells
}

/// The receiver that says a cell's line when its run finishes.
fn line_receiver(
    cell: Cell,
    dir: PathBuf,
    done: Arc<AtomicUsize>,
    total: usize,
    say: Say,
) -> Arc<dyn run::Receiver> {
    Arc::new(move |e: &RunEvent<'_>| {
        if let RunEvent::Finished(end) = e {
            let mut c = cell.clone();
            finish(&mut c, &dir, end);
            let n = done.fetch_add(1, Ordering::SeqCst) + 1;
            say(&progress_line(n, total, &c, &dir));
        }
    })
}

/// Fills a cell from its finished run.
fn finish(c: &mut Cell, matrix_dir: &Path, end: &RunEnd) {
    c.status = if end.exit() == Exit::Interrupted {
        Status::NotRun
    } else {
        Status::of(c.expected, end.outcome())
    };
    c.verdict = end.outcome();
    c.seconds = end.seconds;
    c.exit_code = Some(end.exit().code());
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
