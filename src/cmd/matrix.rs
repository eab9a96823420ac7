//! `repro matrix`: every check × k3s version, several runs at once, one table at the end.
//!
//! Everything about the input (checks, versions, channels) is settled before Docker is touched,
//! by `crate::matrix::planning`; `--emit github-matrix` stops there and prints the cells for a
//! CI fan-out. The runs themselves are `crate::matrix::batch`'s; this wires them, prints what
//! they say, the table and the exit.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use crate::catalog::{self, Catalog};
use crate::cli::{Emit, Format, Global, MatrixArgs};
use crate::docker::DockerApi;
use crate::error::Error;
use crate::exit::Exit;
use crate::matrix::batch::{self, Planned};
use crate::matrix::{planning, render, Summary};
use crate::run::Target;
use distro::Version;

use super::common::{create_dir, out, resolve, stamped, version_entry};

pub(crate) async fn run(g: &Global, a: &MatrixArgs) -> Result<Exit, Error> {
    // One listener for every run and the time between them (#42).
    crate::run::interrupt::listen_process();
    let argv: Vec<String> = std::env::args().collect();
    let root = catalog::find_root(g.root.as_deref());
    let cat = Catalog::load(root.as_deref())?;
    let checks = planning::checks(&cat, &a.checks)?;
    // The versions flag as typed (`--versions`, or an older name), for the messages.
    let flag = super::common::flag_typed(&["--versions", "--version", "--k3s-versions"]);
    planning::check_versions(&a.versions, flag)?;
    // A build under test: read once; its version is the matrix's one column.
    let mut template = Target {
        k3s_binary: a.k3s_binary.clone(),
        no_images_tarball: a.options.images.no_images_tarball,
        ..Target::of("", a.sim, a.sim_pace)
    };
    super::common::prepare_build(&mut template, false).await?;
    let mut versions: Vec<Version> = Vec::new();
    if let Some(b) = &template.build {
        let releases = crate::releases::ReleaseList::find(b.distro(), None, root.as_deref())?;
        versions.push(planning::build_version(b, &releases.releases)?);
        out(&format!(
            "build under test: {} (reports {}, sha256 {})",
            b.info.path, b.info.reported, b.info.sha256
        ));
    }
    for raw in &a.versions {
        let v = version_entry(raw, flag).await?;
        if versions.contains(&v) {
            errln!("warning: {v} is listed more than once; it runs once");
        } else {
            versions.push(v);
        }
    }

    // The matrix folder's name is settled now, so each run's configuration is complete before
    // Docker.
    let dir = a.options.results.join(stamped("matrix"));
    let planned = plan_cells(g, a, &template, &checks, &versions, &dir, &argv).await?;
    if let Some(Emit::GithubMatrix) = a.emit {
        out(&render::github_matrix(&planning::github_cells(&planned)?));
        return Ok(Exit::Ok);
    }

    if a.format == Format::Json {
        super::common::people_to_stderr();
    }
    // Docker from here on. The matrix folder comes first: whatever breaks before the runs,
    // its summary still lists every cell and why it did not run.
    create_dir(&dir)?;
    // An interrupt while the stand-in images are built drops the build's connection (the engine
    // cancels it; the tag is applied only to a finished image), and the summary still lists
    // every cell, none started: exit 130, not the signal's default 143 with an empty folder.
    // The process's one listener (#42), as explore, verify and bisect use: a signal at any
    // moment from here on — during the build, a run, or between runs — is heard.
    let cancel = crate::run::interrupt::listen_process();
    let images = tokio::select! {
        r = prepare_images(a, &versions) => r.map_err(|e| (planning::all_broken(&planned, &e.to_string()), e)),
        _ = cancel.cancelled() => {
            let s = crate::run::interrupt::interrupted().unwrap_or("SIGINT");
            errln!("repro: interrupted ({s}) while the stand-in images were built; no run started, no image was tagged");
            Err((planned.iter().map(|p| p.cell.clone()).collect(), Error::Run(crate::run::RunError::Interrupted)))
        }
    };
    if let Err((cells, e)) = images {
        let summary = Summary::new(argv, Vec::new(), cells);
        crate::matrix::merge::write_outputs(&dir, &summary, "repro matrix")?;
        print_report("repro matrix", &summary, &dir);
        return Err(e);
    }
    let plans: Vec<&crate::plan::Plan> = planned.iter().map(|p| &p.plan).collect();
    let (jobs, why_jobs) = crate::matrix::jobs::resolve(a.jobs, &plans, a.sim);
    if let Some(why) = why_jobs {
        out(&why);
    }
    out(&planning::headline(
        checks.len(),
        versions.len(),
        jobs,
        a.sim,
        &dir,
    ));

    let t0 = Instant::now();
    let listener = tokio::spawn({
        let cancel = cancel.clone();
        async move {
            cancel.cancelled().await;
            let s = crate::run::interrupt::interrupted().unwrap_or("SIGINT");
            errln!("repro: interrupted ({s}) — no new runs start; running ones are removed");
        }
    });
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

/// Every cell's plan (which validates each check against each version) and run configuration.
/// A real rke2 cell that will run fetches its release artifacts (cached: once per version);
/// emitting the cells for a workflow runs nothing, so fetches nothing.
async fn plan_cells(
    g: &Global,
    a: &MatrixArgs,
    template: &Target,
    checks: &[String],
    versions: &[Version],
    dir: &Path,
    argv: &[String],
) -> Result<Vec<Planned>, Error> {
    let mut planned: Vec<Planned> = Vec::new();
    for check in checks {
        for v in versions {
            let mut target = planning::cell_target(template, check, v);
            // A check that upgrades nodes to a release this version may not move to in one go
            // (a skipped minor) has no cell here: said, not an error of the whole matrix.
            // So has a default check (none named) that cannot run on this version's
            // distribution as written (upgrade targets of another distribution); a check named
            // with --checks is an error there.
            let (_, p) = match super::common::resolve_plan(g.root.as_deref(), &target) {
                Ok(x) => x,
                Err(e) if a.checks.is_empty() => {
                    let why = e.to_string();
                    let why = why.lines().next().unwrap_or("").trim();
                    errln!("repro matrix: no cell for check `{check}` at {v}: {why}");
                    continue;
                }
                Err(e) => return Err(e),
            };
            let refused = crate::plan::upgrade_problems(&p);
            if let Some(why) = refused.first() {
                errln!("repro matrix: no cell for check `{check}` at {v}: {why}");
                continue;
            }
            let (scenario, plan) = if a.emit.is_some() {
                resolve(g.root.as_deref(), &target)?
            } else {
                super::common::resolve_fetching(g.root.as_deref(), &mut target, false).await?
            };
            let expected = planning::expected(&plan, template.build.as_ref())?;
            let cell = batch::not_run(&plan, expected, batch::expected_because(&plan), a.sim);
            let cfg = (a.options).to_config(target, expected, dir.to_path_buf(), argv.to_vec());
            planned.push(Planned {
                scenario,
                plan,
                cfg,
                cell,
            });
        }
    }
    Ok(planned)
}

/// Everything the runs share, done once before them: loading the image archive and building
/// the stand-in images (two runs building one tag at the same time would race).
async fn prepare_images(a: &MatrixArgs, versions: &[Version]) -> Result<(), Error> {
    if a.options.image_archive.is_none() && !a.sim {
        return Ok(());
    }
    let engine = crate::docker::connect().await?;
    if let Some(archive) = &a.options.image_archive {
        errln!("repro: loading image archive {}", archive.display());
        engine.load_archive(archive).await?;
    }
    if a.sim {
        let versions: Vec<String> = versions.iter().map(ToString::to_string).collect();
        super::common::prepare_sim_images(&engine, &versions, a.options.rebuild_sim).await?;
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
