//! Everything a run hands on, rendered from its results folder alone: `junit.xml` for CI,
//! `report.md` for a k3s issue, `timeline.html` for a person, and `bundle.tar.gz` to attach.
//!
//! Rendering reads `result.json` and the files under `nodes/` (boot logs, config per step,
//! `docker inspect`), redacts all of it in one context *first*, and renders from the redacted
//! data — so no output can carry a secret, and placeholders in markup never need escaping
//! afterwards. Because only the folder is read, `repro report <dir>` can redo every output later
//! (after a fix to a renderer, or on a folder copied from CI).

mod cases;
mod junit;
mod markdown;
mod mermaid;
pub(crate) mod step_summary;
pub(crate) mod summary;
pub(crate) mod text;
mod timeline;
pub(crate) mod validation;
mod words;

pub(crate) use junit::github_annotations;
pub(crate) use summary::json as summary_json;
/// The one escaper of XML/HTML documents, for every renderer outside `report` too (matrix JUnit).
pub(crate) use text::{code_block, fence_for, markup_safe};

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_md;
#[cfg(test)]
mod tests_rke2;

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context;
use indexmap::IndexMap;
use serde_json::Value;

use crate::result::{RunResult, SCHEMA_VERSION};

use crate::redact::Redactor;

pub(crate) use crate::archive as bundle;
use crate::results_folder::write_atomic;
pub(crate) use crate::results_folder::{
    BUNDLE_FILE, JUNIT_FILE, NODES_DIR, REPORT_FILE, RESULT_FILE, TIMELINE_FILE,
};

/// Why a results folder could not be read: the user's input is wrong (exit 2), not repro.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LoadError {
    #[error("{0}: not a results folder (no such folder)")]
    NoFolder(PathBuf),
    #[error("{0}: not a results folder (it has no result.json)")]
    NoResult(PathBuf),
    /// A link out of the folder, a pipe or device, an oversized file (`safe_fs`).
    #[error(transparent)]
    Refused(#[from] crate::safe_fs::ReadError),
    #[error("failed to read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: invalid result.json: {message}")]
    Json {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{path}: schema_version {found} is newer than this repro reads ({SCHEMA_VERSION}); update repro")]
    Version { path: PathBuf, found: u64 },
}

/// A results folder as read from disk, before redaction.
#[derive(Debug, Clone)]
pub(crate) struct RunFolder {
    pub(crate) result: Value,
    /// Files under `nodes/`, as (path relative to the folder, content), sorted by path.
    pub(crate) node_files: Vec<(String, Vec<u8>)>,
}

/// Reads and checks a results folder.
pub(crate) fn load(dir: &Path) -> Result<RunFolder, LoadError> {
    let result = load_result_value(dir)?;
    let mut node_files = Vec::new();
    collect_nodes(dir, &dir.join(NODES_DIR), &mut node_files)?;
    node_files.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(RunFolder { result, node_files })
}

/// A results folder's result.json alone, checked as [`load`] checks it and read as the typed
/// record (what `repro runs` lists: no node file is read).
pub(crate) fn load_result(dir: &Path) -> Result<RunResult, LoadError> {
    let value = load_result_value(dir)?;
    // `parse_result` has parsed it as the typed model already: this cannot fail on its shape.
    serde_json::from_value(value).map_err(|e| LoadError::Json {
        path: dir.join(RESULT_FILE),
        line: 0,
        column: 0,
        message: e.to_string(),
    })
}

/// The run folders in `base` and one level further down (a matrix's, a bisection's or a
/// campaign's own runs), each with its record or why it could not be read, by path. Links are
/// not followed: a results folder may come from anyone.
pub(crate) fn runs_in(base: &Path) -> Vec<(PathBuf, Result<RunResult, LoadError>)> {
    let subfolders = |dir: &Path| -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .collect();
        out.sort();
        out
    };
    let is_run = |d: &Path| fs::symlink_metadata(d.join(RESULT_FILE)).is_ok();
    let mut out = Vec::new();
    for d in subfolders(base) {
        if is_run(&d) {
            out.push(d);
        } else {
            out.extend(subfolders(&d).into_iter().filter(|s| is_run(s)));
        }
    }
    out.into_iter()
        .map(|d| {
            let r = load_result(&d);
            (d, r)
        })
        .collect()
}

/// A results folder's result.json, checked: syntax, shape and schema version.
fn load_result_value(dir: &Path) -> Result<Value, LoadError> {
    if !dir.is_dir() {
        return Err(LoadError::NoFolder(dir.to_path_buf()));
    }
    let path = dir.join(RESULT_FILE);
    if fs::symlink_metadata(&path).is_err() {
        return Err(LoadError::NoResult(dir.to_path_buf()));
    }
    // A results folder may come from anyone (a bundle on an issue): links out of it, pipes and
    // oversized files are refused (see `safe_fs`).
    let bytes = crate::safe_fs::read_in(dir, &path, crate::safe_fs::RESULT_LIMIT)?;
    let text = String::from_utf8(bytes).map_err(|e| LoadError::Read {
        path: path.clone(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error()),
    })?;
    parse_result(&path, &text)
}

/// Parses `result.json` text; errors name the file, line and column, for syntax and for shape.
pub(crate) fn parse_result(path: &Path, text: &str) -> Result<Value, LoadError> {
    let json_err = |e: serde_json::Error| LoadError::Json {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message: strip_position(&e.to_string()),
    };
    let value: Value = serde_json::from_str(text).map_err(json_err)?;
    if let Some(found) = value.get("schema_version").and_then(Value::as_u64) {
        if found > u64::from(SCHEMA_VERSION) {
            return Err(LoadError::Version {
                path: path.to_path_buf(),
                found,
            });
        }
    }
    // Parse the text again as the typed model: serde_json only knows positions while reading text.
    serde_json::from_str::<RunResult>(text).map_err(json_err)?;
    Ok(value)
}

/// serde_json appends " at line L column C"; we print the position first, like every other
/// diagnostic of repro.
fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

fn collect_nodes(
    root: &Path,
    dir: &Path,
    out: &mut Vec<(String, Vec<u8>)>,
) -> Result<(), LoadError> {
    if fs::symlink_metadata(dir).is_err() {
        return Ok(()); // a run that never created a node
    }
    for p in crate::safe_fs::files_under(root, dir)? {
        let data = crate::safe_fs::read_in(root, &p, crate::safe_fs::NODE_FILE_LIMIT)?;
        let rel = p
            .strip_prefix(root)
            .unwrap_or(&p)
            .to_string_lossy()
            .replace('\\', "/");
        out.push((rel, data));
    }
    Ok(())
}

/// The outputs of one render, all already redacted.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub result: RunResult,
    pub junit: String,
    pub report: String,
    pub timeline: String,
    /// The bundle's entries, (path in the archive, content).
    pub(crate) bundle: Vec<(String, Vec<u8>)>,
    /// Files under `nodes/` left out of the bundle because they are not text.
    pub(crate) skipped: Vec<String>,
    /// Each boot's log (path as in `BootRecord::log` -> redacted text).
    pub(crate) logs: IndexMap<String, String>,
    pub(crate) mtime: u64,
    /// Files of the folder (path relative to it) that redaction changed, to write back.
    pub(crate) rewrites: Vec<(String, Vec<u8>)>,
}

/// Redacts a loaded folder in one context and renders every output from the redacted data.
///
/// A folder written by a run is redacted already: new secrets (`secrets`, or anything the rules
/// now find) are numbered after the placeholders it holds, so none is given an old number.
pub(crate) fn render(folder: &RunFolder, secrets: &[String]) -> anyhow::Result<Rendered> {
    let mut ctx = context_for(std::slice::from_ref(folder), secrets);
    render_with(folder, &mut ctx)
}

/// One redaction context for `folders` (rendered together, as a validation comment's two
/// runs): new numbers after every placeholder they hold, and every secret of each learned.
pub(crate) fn context_for(folders: &[RunFolder], secrets: &[String]) -> Redactor {
    let results: Vec<String> = folders.iter().map(|f| f.result.to_string()).collect();
    let texts = results
        .iter()
        .map(String::as_str)
        .chain(folders.iter().flat_map(|f| {
            f.node_files
                .iter()
                .filter_map(|(_, d)| std::str::from_utf8(d).ok())
        }));
    let mut ctx = Redactor::after_placeholders(secrets, texts);
    for f in folders {
        ctx.learn_json(&f.result);
        for (name, data) in &f.node_files {
            if let Ok(t) = std::str::from_utf8(data) {
                ctx.learn_file(name, t);
            }
        }
    }
    ctx
}

/// [`render`] in a given context: the run's own, so the reports number secrets as its files do.
/// An observation's evidence in words, as report.md and the validation comment say it ("no
/// `Starting distributed registry mirror` line in etcd-2 boot 2 (14 lines), which reached
/// `Running kubelet` at 07:56:21 …"), for the terminal summary; `logs` from [`boot_logs`].
pub(crate) fn evidence_in_words(
    r: &RunResult,
    o: &crate::result::Observation,
    logs: &IndexMap<String, String>,
) -> String {
    words::observation(r, o, logs)
}

/// Each boot's log of a run's folder, by its `log` path (the line counts of
/// [`evidence_in_words`]); a log that cannot be read is left out.
pub(crate) fn boot_logs(r: &RunResult, dir: &Path) -> IndexMap<String, String> {
    r.boots
        .iter()
        .filter_map(|b| {
            let bytes =
                crate::safe_fs::read_in(dir, &dir.join(&b.log), crate::safe_fs::NODE_FILE_LIMIT)
                    .ok()?;
            Some((b.log.clone(), String::from_utf8_lossy(&bytes).into_owned()))
        })
        .collect()
}

pub(crate) fn render_with(folder: &RunFolder, ctx: &mut Redactor) -> anyhow::Result<Rendered> {
    ctx.learn_json(&folder.result);
    for (name, data) in &folder.node_files {
        if let Ok(t) = std::str::from_utf8(data) {
            ctx.learn_file(name, t);
        }
    }
    let red_value = ctx.redact_json(&folder.result);
    let result: RunResult = serde_json::from_value(red_value.clone())
        .context("failed to read result.json back after redaction")?;
    let mut nodes: Vec<(String, String)> = Vec::new();
    let mut skipped = Vec::new();
    // Files of the folder that still held a secret (one learned late, a token split over two
    // log lines, a folder of an older repro): written back redacted.
    let mut rewrites: Vec<(String, Vec<u8>)> = Vec::new();
    for (name, data) in &folder.node_files {
        match std::str::from_utf8(data) {
            Ok(t) => {
                let red = ctx.redact_file(name, t);
                if changed(name, t, &red) {
                    rewrites.push((name.clone(), red.clone().into_bytes()));
                }
                nodes.push((name.clone(), red));
            }
            Err(_) => skipped.push(name.clone()),
        }
    }
    if red_value != folder.result {
        let mut text = serde_json::to_string_pretty(&red_value)?;
        text.push('\n');
        rewrites.push((RESULT_FILE.to_string(), text.into_bytes()));
    }
    let logs: IndexMap<String, String> = result
        .boots
        .iter()
        .filter_map(|b| {
            nodes
                .iter()
                .find(|(n, _)| *n == b.log)
                .map(|(n, t)| (n.clone(), t.clone()))
        })
        .collect();

    let junit = junit::render(&result)?;
    let report = markdown::render(&result, &logs);
    let timeline = timeline::render(&result);
    let mut result_json = serde_json::to_string_pretty(&red_value)?;
    result_json.push('\n');

    // Everything was rendered from redacted data; this is the last line of defence.
    let junit = text::markup_safe(ctx.scrub(&junit, true));
    let timeline = text::markup_safe(ctx.scrub(&timeline, true));
    let report = text::markup_safe(ctx.scrub(&report, false));

    let top = format!("repro-{}", sanitize(&result.run_id));
    let mut bundle = vec![
        (format!("{top}/{REPORT_FILE}"), report.clone().into_bytes()),
        (format!("{top}/{RESULT_FILE}"), result_json.into_bytes()),
        (format!("{top}/{JUNIT_FILE}"), junit.clone().into_bytes()),
        (
            format!("{top}/{TIMELINE_FILE}"),
            timeline.clone().into_bytes(),
        ),
    ];
    bundle.extend(
        nodes
            .into_iter()
            .map(|(n, t)| (format!("{top}/{n}"), t.into_bytes())),
    );
    let mtime = result
        .finished_at
        .as_deref()
        .and_then(text::time)
        .or_else(|| text::time(&result.started_at))
        .map(|t| t.timestamp().max(0) as u64)
        .unwrap_or(0);
    Ok(Rendered {
        result,
        junit,
        report,
        timeline,
        bundle,
        skipped,
        logs,
        mtime,
        rewrites,
    })
}

/// Whether redaction changed a file: for JSON, its value (a re-indented file is not a change).
fn changed(name: &str, before: &str, after: &str) -> bool {
    if name.ends_with(".json") {
        if let (Ok(a), Ok(b)) = (
            serde_json::from_str::<Value>(before),
            serde_json::from_str::<Value>(after),
        ) {
            return a != b;
        }
    }
    before != after
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// (Re)writes `junit.xml`, `report.md`, `timeline.html` and `bundle.tar.gz` in `dir` from its
/// `result.json` and `nodes/`. `secrets` are values to hide whatever their shape (the run token).
#[cfg(test)]
pub(crate) fn render_all(dir: &Path, secrets: &[String]) -> anyhow::Result<()> {
    let folder = load(dir)?;
    write_rendered(dir, &render(&folder, secrets)?)
}

/// [`render_all`] in the run's own redaction context.
pub(crate) fn render_all_with(dir: &Path, ctx: &mut Redactor) -> anyhow::Result<()> {
    let folder = load(dir)?;
    write_rendered(dir, &render_with(&folder, ctx)?)
}

/// Writes a render's outputs into a results folder, and the folder's own files that redaction
/// changed.
pub(crate) fn write_rendered(dir: &Path, r: &Rendered) -> anyhow::Result<()> {
    for (rel, data) in &r.rewrites {
        write_atomic(&dir.join(rel), data)?;
    }
    write_atomic(&dir.join(JUNIT_FILE), r.junit.as_bytes())?;
    write_atomic(&dir.join(REPORT_FILE), r.report.as_bytes())?;
    write_atomic(&dir.join(TIMELINE_FILE), r.timeline.as_bytes())?;
    let tgz = bundle::build(&r.bundle, r.mtime).context("failed to build bundle.tar.gz")?;
    write_atomic(&dir.join(BUNDLE_FILE), &tgz)?;
    Ok(())
}
