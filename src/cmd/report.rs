//! `repro report <results-dir>`: render junit.xml, report.md, timeline.html and bundle.tar.gz
//! again from the folder's result.json and logs.
//!
//! `repro report --validation <buggy-run> <fixed-run> [--out FILE]`: the comment that closes an
//! issue, from a run that reproduced the bug and one that shows the fix. Exit 0 when the pair
//! validates the fix (reproduced, then fixed), 1 when it does not (the comment still says what
//! each run showed), 2 when a folder cannot be read or the runs are of different checks.

use std::path::{Path, PathBuf};

use crate::cli::{Global, ReportArgs};
use crate::error::Error;
use crate::exit::Exit;
use crate::report::{self, validation};

use super::common::out;

pub(crate) fn run(_g: &Global, a: &ReportArgs) -> Result<Exit, Error> {
    if let Some(pair) = &a.validation {
        return validate(pair, a.out.as_deref(), &a.secrets);
    }
    let Some(dir) = &a.dir else {
        return Err(Error::bad_input(
            "repro: give a results folder, or --validation <buggy-run> <fixed-run>",
        ));
    };
    let folder = report::load(dir).map_err(|e| Error::bad_input(format!("repro: {e}")))?;
    let rendered = report::render(&folder, &a.secrets)?;
    if a.github_annotations {
        for line in report::github_annotations(&rendered.result) {
            out(&line);
        }
        return Ok(Exit::Ok);
    }
    report::write_rendered(dir, &rendered)?;
    let verdict = rendered
        .result
        .verdict
        .as_ref()
        .map(|v| v.outcome.as_str())
        .unwrap_or("no verdict");
    outln!(
        "wrote {}, {}, {} and {} in {} (verdict: {verdict})",
        report::JUNIT_FILE,
        report::REPORT_FILE,
        report::TIMELINE_FILE,
        report::BUNDLE_FILE,
        dir.display()
    );
    for s in &rendered.skipped {
        errln!("repro: left {s} out of the bundle: not a text file, so it cannot be redacted");
    }
    Ok(Exit::Ok)
}

/// `--validation DIR…`: the pair picked from the folders given (the newest run per version; see
/// [`validation::pick`]), then the comment.
fn validate(dirs: &[PathBuf], out: Option<&Path>, secrets: &[String]) -> Result<Exit, Error> {
    let mut folders = Vec::new();
    let mut results = Vec::new();
    for dir in dirs {
        let folder = report::load(dir).map_err(|e| Error::bad_input(format!("repro: {e}")))?;
        let r: crate::result::RunResult =
            serde_json::from_value(folder.result.clone()).map_err(|e| {
                Error::bad_input(format!(
                    "repro: {}: result.json is not a run's result: {e}",
                    dir.display()
                ))
            })?;
        folders.push(folder);
        results.push(r);
    }
    let names: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    let runs: Vec<(&str, &crate::result::RunResult)> = names
        .iter()
        .map(String::as_str)
        .zip(results.iter())
        .collect();
    let pick = validation::pick(&runs).map_err(|why| Error::bad_input(format!("repro: {why}")))?;
    for (left, kept) in &pick.set_aside {
        errln!(
            "repro: {} is an older run of {} than {}: using the newest",
            names[*left],
            results[*left].k3s.version,
            names[*kept]
        );
    }
    let (b, f) = (pick.buggy, pick.fixed);
    let outcome = write_validation(
        (Path::new(&names[b]), &folders[b]),
        (Path::new(&names[f]), &folders[f]),
        out,
        secrets,
    )?;
    Ok(validation_exit(outcome))
}

/// What a validation comment's outcome means for the exit (0 validated, 1 not).
pub(crate) fn validation_exit(outcome: validation::Outcome) -> Exit {
    match outcome {
        validation::Outcome::Validated => Exit::Ok,
        validation::Outcome::NotValidated => {
            errln!("repro: the pair does not validate the fix: see the heading of the comment");
            Exit::OutcomeDiffers
        }
    }
}

/// Renders the comment from a buggy and a fixed run (each rendered, and so redacted, as `repro
/// report` does) and writes it to `out` or stdout. Runs of different checks, topologies or
/// distributions are bad input (exit 2).
pub(crate) fn write_validation(
    (buggy, buggy_folder): (&Path, &report::RunFolder),
    (fixed, fixed_folder): (&Path, &report::RunFolder),
    out: Option<&Path>,
    secrets: &[String],
) -> Result<validation::Outcome, Error> {
    let folders = [buggy_folder.clone(), fixed_folder.clone()];
    // One redaction context for both runs, learned from both before either is rendered: a
    // secret one folder knows under its key is hidden where the other shows it bare, and
    // `<REDACTED-n>` is the same secret on both sides of the comment (issue #24).
    let mut ctx = report::context_for(&folders, secrets);
    let mut rendered = Vec::new();
    for folder in &folders {
        rendered.push(report::render_with(folder, &mut ctx)?);
    }
    let (b, f) = (&rendered[0], &rendered[1]);
    if let Some(why) = validation::incompatible(&b.result, &f.result) {
        return Err(Error::bad_input(format!(
            "repro: {} and {}: {why}",
            buggy.display(),
            fixed.display()
        )));
    }
    let (text, outcome) = validation::render(b, f);
    // The comment is rendered from redacted data; this is the last line of defence.
    let text = ctx.scrub(&text, false);
    match out {
        Some(path) => {
            crate::results_folder::write_atomic(path, text.as_bytes())?;
            errln!("repro: wrote {}", path.display());
        }
        None => out!("{text}"),
    }
    Ok(outcome)
}
