//! `repro matrix`: every check × k3s version, several runs at once, one table at the end.
//!
//! Everything about the input (checks, versions, channels) is settled here before Docker is
//! touched; `--emit github-matrix` stops there and prints the cells for a CI fan-out. The runs
//! themselves are `crate::matrix::batch`'s; this prints what they say, the table and the exit.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::catalog::{self, Catalog};
use crate::cli::{Emit, Format, Global, MatrixArgs};
use crate::docker::{DockerApi, Engine};
use crate::error::Error;
use crate::exit::Exit;
use crate::matrix::batch::{self, Planned};
use crate::matrix::{render, Cell, Status, Summary};
use crate::result::Outcome;
use crate::run::Target;
use distro::Version;

use super::common::{
    create_dir, out, resolve, sim_image_ref, spawn_interrupt_listener, stamped, version_entry,
};

/// GitHub Actions runs at most this many jobs from one matrix.
const GITHUB_MATRIX_LIMIT: usize = 256;

pub(crate) async fn run(g: &Global, a: &MatrixArgs) -> Result<Exit, Error> {
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
    let flag = super::common::flag_typed(&["--versions", "--version", "--k3s-versions"]);
    let mut problems = String::new();
    for raw in &a.versions {
        let raw = raw.trim();
        if raw.is_empty() {
            problems.push_str(&format!("error: {flag} has an empty entry\n"));
        } else if !crate::channels::is_channel(raw) {
            if let Err(e) = raw.parse::<Version>() {
                problems.push_str(&format!("error: {flag}: {e}\n"));
            }
        }
    }
    if !problems.is_empty() {
        problems.push_str(&format!(
            "  help: give full versions ({}) or channels (stable, latest, v1.33), comma-separated\n",
            distro::Distro::default().facts().example_version
        ));
        return Err(Error::bad_input(problems));
    }
    // A build under test: read once; its version (for a commit build, its base release) is the
    // matrix's one column.
    let mut template = Target {
        k3s_binary: a.k3s_binary.clone(),
        ..Target::of("", a.sim, a.sim_pace)
    };
    super::common::prepare_build(&mut template, false).await?;
    let mut versions: Vec<Version> = Vec::new();
    if let Some(b) = &template.build {
        let releases = crate::releases::ReleaseList::find(b.distro(), None, root.as_deref())
            .map_err(|d| Error::bad_input(d.to_string()))?;
        let Some(base) = b.base_version(&releases.releases) else {
            return Err(Error::bad_input(format!(
                "error: --k3s-binary: the binary reports `{}`, which names no release line\n  help: run each check alone with `repro run <check> --k3s-binary … --image … --expect fixed`\n",
                b.info.reported
            )));
        };
        out(&format!(
            "build under test: {} (reports {}, sha256 {})",
            b.info.path, b.info.reported, b.info.sha256
        ));
        versions.push(base);
    }
    for raw in &a.versions {
        let v = version_entry(raw, flag).await?;
        if versions.contains(&v) {
            errln!("warning: {v} is listed more than once; it runs once");
        } else {
            versions.push(v);
        }
    }

    // Plan every cell (validates each check against each version). The matrix folder's name is
    // settled now, so each run's configuration is complete before Docker.
    let dir = a.options.results.join(stamped("matrix"));
    let mut planned: Vec<Planned> = Vec::new();
    for check in &checks {
        for v in &versions {
            let mut target = match &template.build {
                Some(_) => Target {
                    check: check.clone(),
                    ..template.clone()
                },
                None => Target {
                    version: Some(v.to_string()),
                    ..Target::of(check.clone(), a.sim, a.sim_pace)
                },
            };
            // A real rke2 cell that will run fetches its release artifacts (cached: once per
            // version); emitting the cells for a workflow runs nothing, so fetches nothing.
            let (scenario, plan) = if a.emit.is_some() {
                resolve(g.root.as_deref(), &target)?
            } else {
                super::common::resolve_fetching(g.root.as_deref(), &mut target, false).await?
            };
            if let (Some(b), None) = (&template.build, plan.expected_verdict) {
                return Err(Error::bad_input(format!(
                    "error: no expected verdict for {} on the build: {}\n  help: run it alone with `repro run {} --k3s-binary {} --expect fixed` (or reproduced)\n",
                    plan.check, plan.expected_because, plan.check, b.info.path
                )));
            }
            let Some(expected) = plan.expected_verdict else {
                return Err(Error::bad_input(format!(
                    "error: no expected verdict for {} {}: {}\n  help: leave the version out of the matrix and run it alone with `repro run {} --version {} --expect fixed` (or reproduced)",
                    plan.check, plan.k3s_version, plan.expected_because, plan.check, plan.k3s_version
                )));
            };
            let cell = batch::not_run(&plan, expected, batch::expected_because(&plan), a.sim);
            let cfg = a
                .options
                .to_config(target, expected, dir.clone(), argv.clone());
            planned.push(Planned {
                scenario,
                plan,
                cfg,
                cell,
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
                    p.cell.expected,
                )
            })
            .collect();
        out(&render::github_matrix(&cells));
        return Ok(Exit::Ok);
    }

    if a.format == Format::Json {
        super::common::people_to_stderr();
    }
    // Docker from here on. The matrix folder comes first: whatever breaks before the runs,
    // its summary still lists every cell and why it did not run.
    create_dir(&dir)?;
    if let Err(e) = prepare_images(a, &versions).await {
        let why = format!("{e}");
        let mut cells: Vec<Cell> = planned.iter().map(|p| p.cell.clone()).collect();
        for c in &mut cells {
            c.status = Status::Broken;
            c.error = Some(why.clone());
        }
        let summary = Summary::new(argv, Vec::new(), cells);
        crate::matrix::merge::write_outputs(&dir, &summary, "repro matrix")?;
        print_report("repro matrix", &summary, &dir);
        return Err(e);
    }
    let total = planned.len();
    let plans: Vec<&crate::plan::Plan> = planned.iter().map(|p| &p.plan).collect();
    let (jobs, why_jobs) = crate::matrix::jobs::resolve(a.jobs, &plans, a.sim);
    if let Some(why) = why_jobs {
        out(&why);
    }
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
    let cells = batch::run_cells(planned, jobs, &dir, &cancel, Arc::new(out)).await;
    listener.abort();
    let interrupted = cancel.is_cancelled();

    let summary = Summary::new(argv, Vec::new(), cells);
    let written = crate::matrix::merge::write_outputs(&dir, &summary, "repro matrix");
    print_report("repro matrix", &summary, &dir);
    out(&format!("wall time {:.1}s", t0.elapsed().as_secs_f64()));
    written?;
    let exit = if interrupted {
        Exit::Interrupted
    } else {
        summary.exit()
    };
    out(&format!("exit: {}", exit.code()));
    if a.format == Format::Json {
        let json = serde_json::to_string_pretty(&summary).map_err(anyhow::Error::from)?;
        super::common::write_stdout(&format!("{json}\n")).map_err(anyhow::Error::from)?;
    }
    Ok(exit)
}

/// Everything the runs share, done once before them: loading the image archive and building
/// the stand-in images (two runs building one tag at the same time would race).
async fn prepare_images(a: &MatrixArgs, versions: &[Version]) -> Result<(), Error> {
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
            crate::sim_image::ensure_sim_image(&engine, &v.to_string(), a.options.rebuild_sim)
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

/// The table, a line per cell that is not ok (why), the counts and where the files are; the
/// same table on the CI job's summary page when `$GITHUB_STEP_SUMMARY` is set.
pub(super) fn print_report(name: &str, summary: &Summary, dir: &Path) {
    super::common::append_step_summary(&render::markdown(name, &summary.cells, &summary.totals));
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
        dir.join(crate::results_folder::SUMMARY_FILE).display(),
        dir.join(crate::results_folder::JUNIT_FILE).display()
    ));
}
