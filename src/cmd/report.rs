//! `repro report <results-dir>`: render junit.xml, report.md, timeline.html and bundle.tar.gz
//! again from the folder's result.json and logs.
//!
//! `repro report --validation <buggy-run> <fixed-run> [--out FILE]`: the comment that closes an
//! issue, from a run that reproduced the bug and one that shows the fix. Exit 0 when the pair
//! validates the fix (reproduced, then fixed), 1 when it does not (the comment still says what
//! each run showed), 2 when a folder cannot be read or the runs are of different checks.

use std::path::{Path, PathBuf};

use crate::cli::{Format, Global, ReportArgs};
use crate::error::Error;
use crate::exit::Exit;
use crate::report::{self, validation};

use super::common::out;

pub(crate) fn run(_g: &Global, a: &ReportArgs) -> Result<Exit, Error> {
    if let Some(pair) = &a.validation {
        return validate(pair, a.out.as_deref(), &a.secrets, a.format);
    }
    let Some(dir) = &a.dir else {
        return Err(Error::usage(
            "give a results folder, or --validation <buggy-run> <fixed-run>",
        ));
    };
    let folder = report::load(dir).map_err(|e| Error::usage(e.to_string()))?;
    let rendered = report::render(&folder, &a.secrets)?;
    if a.github_annotations {
        for line in report::github_annotations(&rendered.result) {
            out(&line);
        }
        return Ok(Exit::Ok);
    }
    report::write_rendered(dir, &rendered)?;
    let files = [
        report::JUNIT_FILE,
        report::REPORT_FILE,
        report::TIMELINE_FILE,
        report::BUNDLE_FILE,
    ];
    if a.format == Format::Json {
        let r = &rendered.result;
        let doc = serde_json::json!({
            "kind": "repro-report",
            "results": dir.display().to_string(),
            "wrote": files,
            "run_id": r.run_id,
            "verdict": r.verdict.as_ref().map(|v| v.outcome),
            "exit_code": r.exit_code,
            "left_out": rendered.skipped,
        });
        let _ = super::common::write_stdout(&format!("{doc:#}\n"));
    }
    let verdict = rendered
        .result
        .verdict
        .as_ref()
        .map(|v| v.outcome.as_str())
        .unwrap_or("no verdict");
    errln_or_outln(
        a.format,
        &format!(
            "wrote {}, {}, {} and {} in {} (verdict: {verdict})",
            files[0],
            files[1],
            files[2],
            files[3],
            dir.display()
        ),
    );
    for s in &rendered.skipped {
        errln!("warning: left {s} out of the bundle: not a text file, so it cannot be redacted");
    }
    Ok(Exit::Ok)
}

/// `--validation DIR…`: the pair picked from the folders given (the newest run per version; see
/// [`validation::pick`]), then the comment.
fn validate(
    dirs: &[PathBuf],
    out: Option<&Path>,
    secrets: &[String],
    format: Format,
) -> Result<Exit, Error> {
    super::common::check_out(out)?;
    let mut folders = Vec::new();
    let mut results = Vec::new();
    for dir in dirs {
        let folder = report::load(dir).map_err(|e| Error::usage(e.to_string()))?;
        let r: crate::result::RunResult =
            serde_json::from_value(folder.result.clone()).map_err(|e| {
                Error::usage(format!(
                    "{}: result.json is not a run's result: {e}",
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
    let pick = validation::pick(&runs).map_err(|why| Error::usage(why.to_string()))?;
    for (left, kept) in &pick.set_aside {
        errln!(
            "warning: {} is an older run of {} than {}: using the newest",
            names[*left],
            results[*left].k3s.version,
            names[*kept]
        );
    }
    let (b, f) = (pick.buggy, pick.fixed);
    let json = format == Format::Json;
    let (outcome, comment) = write_validation(
        (Path::new(&names[b]), &folders[b]),
        (Path::new(&names[f]), &folders[f]),
        out,
        secrets,
        !json,
    )?;
    if json {
        let doc = serde_json::json!({
            "kind": "repro-validation",
            "validated": outcome == validation::Outcome::Validated,
            "buggy": names[b],
            "fixed": names[f],
            "set_aside": pick.set_aside.iter().map(|(left, _)| &names[*left]).collect::<Vec<_>>(),
            "out": out.map(|p| p.display().to_string()),
            "comment": comment,
        });
        let _ = super::common::write_stdout(&format!("{doc:#}\n"));
    }
    Ok(validation_exit(outcome))
}

/// A line for people: stdout, or stderr when stdout holds a JSON document.
fn errln_or_outln(format: Format, line: &str) {
    match format {
        Format::Text => outln!("{line}"),
        Format::Json => errln!("{line}"),
    }
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
/// distributions are bad input (exit 2). Returns the outcome and the comment as written; with
/// `print` false and no `out`, the comment is only returned (`--format json` carries it).
pub(crate) fn write_validation(
    (buggy, buggy_folder): (&Path, &report::RunFolder),
    (fixed, fixed_folder): (&Path, &report::RunFolder),
    out: Option<&Path>,
    secrets: &[String],
    print: bool,
) -> Result<(validation::Outcome, String), Error> {
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
        return Err(Error::usage(format!(
            "{} and {}: {why}",
            buggy.display(),
            fixed.display()
        )));
    }
    let (text, outcome) = validation::render(b, f);
    // The comment is rendered from redacted data; this is the last line of defence.
    let text = ctx.scrub(&text, false);
    match out {
        Some(path) => {
            super::common::write_out(path, text.as_bytes())?;
            errln!("repro: wrote {}", path.display());
        }
        None if print => out!("{text}"),
        None => {}
    }
    Ok((outcome, text))
}
