//! `repro verify <check> --buggy A --fixed B`: the flow QA runs to close an issue, in one
//! command — a run on the buggy version (expecting `reproduced`), a run on the fixed one
//! (expecting `fixed`), both through the same path as `repro run`, then the comment `repro report
//! --validation` writes. The pair's order is checked against the check's `fixed-in` before
//! anything is created.

use std::path::PathBuf;

use crate::cli::{Global, VerifyArgs};
use crate::diag::Diagnostic;
use crate::error::Error;
use crate::exit::Exit;
use crate::outcome::Outcome;
use crate::plan::Plan;
use crate::run::Target;

pub(crate) async fn run(g: &Global, a: &VerifyArgs) -> Result<Exit, Error> {
    let root = g.root.as_deref();
    let target = |version: &str| Target {
        topology: a.topology.clone(),
        version: Some(version.to_string()),
        no_images_tarball: a.options.images.no_images_tarball,
        ..Target::of(a.check.clone(), a.sim, a.sim_pace)
    };
    // One listener for both runs and the time between them (#42).
    crate::run::interrupt::listen_process();
    let mut targets = [target(&a.buggy), target(&a.fixed)];
    super::common::check_out(a.out.as_deref())?;
    // Both versions and their order, before anything is created.
    let flag = |e: Error, name: &str| match e {
        Error::BadInput(m) => Error::BadInput(m.replace("--version", name)),
        Error::Usage(mut d) => {
            for d in &mut d.0 {
                d.message = d.message.replace("--version", name);
                d.help = d.help.as_ref().map(|h| h.replace("--version", name));
            }
            Error::Usage(d)
        }
        e => e,
    };
    let (_, buggy_plan) =
        super::common::resolve(root, &targets[0]).map_err(|e| flag(e, "--buggy"))?;
    let (_, fixed_plan) =
        super::common::resolve(root, &targets[1]).map_err(|e| flag(e, "--fixed"))?;
    same_distribution(&buggy_plan, &fixed_plan)?;
    order(&buggy_plan, &fixed_plan)?;
    if a.events.on_stdout() && a.out.is_none() {
        return Err(Diagnostic::general(
            "--events - takes stdout, where the comment goes",
            "write the comment to a file with --out comment.md",
        )
        .into());
    }
    // One stream for both runs (each line names its run).
    let stream = super::common::event_stream(&a.events)?;

    let live = a.progress.is_live();
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut exits = Vec::new();
    for (i, (t, expect)) in targets
        .iter_mut()
        .zip([Outcome::Reproduced, Outcome::Fixed])
        .enumerate()
    {
        let what = if i == 0 { "buggy" } else { "fixed" };
        stop_if_interrupted(what)?;
        let (sc, plan) = super::common::resolve_fetching(root, t, live).await?;
        let mut cfg = a.options.to_config(
            t.clone(),
            expect,
            a.options.results.clone(),
            std::env::args().collect(),
        );
        // Loaded (or rebuilt) once, before the first run: the second finds it in the store.
        if i == 0 {
            cfg.image_archive = a.options.image_archive.clone();
        }
        cfg.rebuild_sim = a.options.rebuild_sim;
        cfg.sim_seed = a.options.sim_seed;
        let version = plan.k3s_version.clone();
        let end = super::run::execute_shown(&cfg, sc, plan, live, stream.clone()).await;
        let dir = end.dir.clone();
        let verdict = end.outcome().map_or("no verdict", Outcome::as_str);
        errln!(
            "repro verify: {what} run on {version}: {verdict} (asked for: {expect}){}",
            dir.as_ref()
                .map(|d| format!(" — {}", d.display()))
                .unwrap_or_default()
        );
        match end.status {
            // No comment from a run that broke: say so with the run's own error and code.
            Err(e) => return Err(e.into()),
            Ok(exit) => exits.push(exit),
        }
        dirs.extend(dir);
    }
    stop_if_interrupted("comment")?;
    let [buggy, fixed] = [&dirs[0], &dirs[1]];
    let load =
        |d: &PathBuf| crate::report::load(d).map_err(|e| Error::Other(anyhow::anyhow!("{e}")));
    let (bf, ff) = (load(buggy)?, load(fixed)?);
    let (outcome, comment) = super::report::write_validation(
        (buggy, &bf),
        (fixed, &ff),
        a.out.as_deref(),
        &a.secrets,
        true,
    )?;
    // The job's summary page shows the comment as it would be posted.
    super::common::append_step_summary(&format!("{comment}\n"));
    Ok(match super::report::validation_exit(outcome) {
        Exit::Ok => Exit::Ok,
        // Not validated: what the runs showed against what was asked (1, or 4 if one could
        // not decide).
        _ => match Exit::worst(exits) {
            Exit::Ok => Exit::OutcomeDiffers,
            e => e,
        },
    })
}

/// A signal heard before the `next` run (or the comment) stops the command: exit 130.
fn stop_if_interrupted(next: &str) -> Result<(), Error> {
    match crate::run::interrupt::interrupted() {
        Some(s) => {
            errln!("repro verify: interrupted ({s}) before the {next}: stopped");
            Err(Error::Run(crate::run::RunError::Interrupted))
        }
        None => Ok(()),
    }
}

/// Both runs must be of one distribution: a validation comment compares two runs of one
/// product (`report --validation` refuses the pair after the fact; this refuses it before).
fn same_distribution(buggy: &Plan, fixed: &Plan) -> Result<(), Diagnostic> {
    if buggy.distro == fixed.distro {
        return Ok(());
    }
    Err(Diagnostic::general(
        format!(
            "--buggy {} is a {} version and --fixed {} a {} one: a validation compares two runs of one distribution",
            buggy.k3s_version, buggy.distro, fixed.k3s_version, fixed.distro
        ),
        format!(
            "give two {} versions (e.g. {})",
            buggy.distro,
            buggy.distro.facts().example_version
        ),
    ))
}

/// The buggy version must come before the fixed one by the check's `fixed-in` (or, where that
/// cannot place a version, by release order); the same version twice validates nothing.
fn order(buggy: &Plan, fixed: &Plan) -> Result<(), Diagnostic> {
    let (b, f) = (&buggy.k3s_version, &fixed.k3s_version);
    if b == f {
        return Err(Diagnostic::general(
            format!("--buggy and --fixed are the same version ({b})"),
            "give the last version with the bug and the first with the fix, e.g. --buggy v1.33.4+k3s1 --fixed v1.33.5+k3s1",
        ));
    }
    let swapped = match (buggy.expected_verdict, fixed.expected_verdict) {
        (Some(Outcome::Fixed), _) => Some(format!(
            "--buggy {b} is at or past the check's fixed-in ({}): the check expects `fixed` there",
            fixed_in(buggy)
        )),
        (_, Some(Outcome::Reproduced)) => Some(format!(
            "--fixed {f} is before the check's fixed-in ({}): the check expects `reproduced` there",
            fixed_in(fixed)
        )),
        _ if b > f => Some(format!("--buggy {b} is newer than --fixed {f}")),
        _ => None,
    };
    match swapped {
        Some(why) => Err(Diagnostic::general(
            why,
            format!(
                "are --buggy and --fixed swapped? `repro plan {} --version <v>` shows what a version is expected to show",
                buggy.check
            ),
        )),
        None => Ok(()),
    }
}

fn fixed_in(plan: &Plan) -> String {
    let firsts: Vec<String> = plan.fixed_in.iter().map(|v| v.to_string()).collect();
    if firsts.is_empty() {
        "none".to_string()
    } else {
        firsts.join(", ")
    }
}
