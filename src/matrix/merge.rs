//! `repro merge`: read runs made elsewhere (CI runners, other machines) back into matrix cells.
//!
//! Inputs are run folders (`result.json`), matrix folders (`summary.json`), or any folder that
//! holds them at some depth — `actions/download-artifact` puts each artifact in its own folder.
//! A folder with `summary.json` is taken whole (its run folders are already its cells). Only the
//! fields merge needs are read, so a result.json from a newer repro with more fields still
//! merges. A file that is not valid is an error naming it, with the JSON line and column.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::result::Outcome;
use crate::results_folder::{JUNIT_FILE, RESULT_FILE, SUMMARY_FILE};
use distro::Version;

use super::model::{Cell, Status, Summary, SUMMARY_KIND, SUMMARY_SCHEMA_VERSION};
/// How deep below an argument to look for result.json / summary.json.
const MAX_DEPTH: usize = 8;

#[derive(Debug, thiserror::Error)]
pub(crate) enum MergeError {
    #[error("{path}: error: {message}")]
    Input { path: String, message: String },
}

fn err(path: &Path, message: impl Into<String>) -> MergeError {
    MergeError::Input {
        path: path.display().to_string(),
        message: message.into(),
    }
}

/// The part of result.json that merge reads.
#[derive(Debug, Deserialize)]
struct RunDigest {
    schema_version: u32,
    run_id: String,
    check: CheckDigest,
    k3s: K3sDigest,
    expect: Outcome,
    #[serde(default)]
    expected_for_version: Option<Outcome>,
    #[serde(default)]
    verdict: Option<VerdictDigest>,
    #[serde(default)]
    timings: indexmap::IndexMap<String, f64>,
    #[serde(default)]
    exit_code: Option<i32>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    finished_at: Option<String>,
}

#[derive(Debug, Deserialize)]
struct CheckDigest {
    name: String,
}

#[derive(Debug, Deserialize)]
struct K3sDigest {
    version: String,
    #[serde(default)]
    stand_in: bool,
}

#[derive(Debug, Deserialize)]
struct VerdictDigest {
    outcome: Outcome,
    #[serde(default)]
    reason: String,
}

/// Parses JSON, or says where in the file it is wrong.
fn parse_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, MergeError> {
    // Artifacts from CI: a regular file of bounded size only (a FIFO would block, `/dev/zero`
    // never end; `crate::safe_fs`).
    let bytes = crate::safe_fs::read_named(path, crate::safe_fs::RESULT_LIMIT)
        .map_err(|e| err(path, format!("cannot read: {}", e.reason())))?;
    let text = String::from_utf8(bytes).map_err(|e| err(path, format!("cannot read: {e}")))?;
    serde_json::from_str(&text).map_err(|e| {
        // serde_json appends " at line L column C" to its message; we print ours in front.
        let msg = e.to_string();
        let msg = msg
            .rsplit_once(" at line ")
            .map_or(msg.as_str(), |(m, _)| m)
            .to_string();
        let what = match e.classify() {
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
                "invalid JSON"
            }
            _ => "unexpected content",
        };
        MergeError::Input {
            // serde_json counts columns from 0 at a line start; editors count from 1.
            path: format!("{}:{}:{}", path.display(), e.line(), e.column().max(1)),
            message: format!("{what}: {msg} (is this file complete and made by repro?)"),
        }
    })
}

/// A run folder's result.json as a cell; `results` is the folder as the user named it.
pub(crate) fn cell_from_result(file: &Path) -> Result<Cell, MergeError> {
    let r: RunDigest = parse_json(file)?;
    // Version 1 differs only by lacking `distribution` (k3s): both read the same.
    if !(1..=crate::result::SCHEMA_VERSION).contains(&r.schema_version) {
        return Err(err(
            file,
            format!(
                "result.json schema_version {} is not one this repro reads (1 to {})",
                r.schema_version,
                crate::result::SCHEMA_VERSION
            ),
        ));
    }
    let (expected, because) = match r.expected_for_version {
        Some(e) => (
            e,
            "what the check's fixed-in predicted when the run was made".to_string(),
        ),
        None => (r.expect, "asked for with --expect".to_string()),
    };
    let verdict = r.verdict.as_ref().map(|v| v.outcome);
    let unfinished = r.finished_at.is_none() || r.exit_code.is_none();
    let status = if unfinished {
        Status::Broken
    } else {
        Status::of(expected, verdict)
    };
    let error = if unfinished {
        Some(match &r.error {
            Some(e) => format!("the run never finished: {e}"),
            None => "the run never finished (its result.json is incomplete)".to_string(),
        })
    } else {
        r.error.clone().or_else(|| {
            r.verdict
                .as_ref()
                .filter(|v| v.outcome == Outcome::Inconclusive)
                .map(|v| v.reason.clone())
        })
    };
    Ok(Cell {
        check: r.check.name,
        k3s_version: r.k3s.version,
        expected,
        expected_because: because,
        verdict: if unfinished { None } else { verdict },
        status,
        seconds: r.timings.get("total").copied().unwrap_or(0.0),
        exit_code: r.exit_code,
        run_id: Some(r.run_id),
        results: file.parent().map(|p| p.display().to_string()),
        stand_in: r.k3s.stand_in,
        error,
    })
}

/// A matrix folder's summary.json as cells; relative results paths become relative to the
/// current directory (through the folder), so they still point at the runs.
pub(crate) fn cells_from_summary(file: &Path) -> Result<Vec<Cell>, MergeError> {
    let s: Summary = parse_json(file)?;
    if s.kind != SUMMARY_KIND || s.schema_version != SUMMARY_SCHEMA_VERSION {
        return Err(err(
            file,
            format!(
                "not a repro matrix summary this repro reads (kind `{}`, schema_version {})",
                s.kind, s.schema_version
            ),
        ));
    }
    let dir = file.parent().unwrap_or(Path::new("."));
    Ok(s.cells
        .into_iter()
        .map(|mut c| {
            if let Some(r) = &c.results {
                if Path::new(r).is_relative() {
                    c.results = Some(dir.join(r).display().to_string());
                }
            }
            c
        })
        .collect())
}

/// One cell of the planned matrix: what should have run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Planned {
    pub(crate) check: String,
    pub(crate) k3s_version: String,
    pub(crate) expected: Outcome,
    pub(crate) because: String,
}

/// The planned matrix from `--plan`: the `repro matrix --emit github-matrix` JSON
/// (`{"include":[{"check","k3s_version","expected"},…]}`) or a matrix's summary.json.
pub(crate) fn read_plan(file: &Path) -> Result<Vec<Planned>, MergeError> {
    #[derive(Deserialize)]
    struct Entry {
        check: String,
        k3s_version: String,
        expected: Outcome,
    }
    #[derive(Deserialize)]
    struct Fanout {
        include: Vec<Entry>,
    }
    let value: serde_json::Value = parse_json(file)?;
    if value.get("include").is_some() {
        let f: Fanout = serde_json::from_value(value).map_err(|e| {
            err(
                file,
                format!("not a `repro matrix --emit github-matrix` plan: {e}"),
            )
        })?;
        return Ok(f
            .include
            .into_iter()
            .map(|e| Planned {
                check: e.check,
                k3s_version: e.k3s_version,
                expected: e.expected,
                because: "planned by `repro matrix --emit github-matrix`".into(),
            })
            .collect());
    }
    if value.get("kind").and_then(|k| k.as_str()) == Some(SUMMARY_KIND) {
        return Ok(cells_from_summary(file)?
            .into_iter()
            .map(|c| Planned {
                check: c.check,
                k3s_version: c.k3s_version,
                expected: c.expected,
                because: c.expected_because,
            })
            .collect());
    }
    Err(err(
        file,
        "not a plan: expected the `repro matrix --emit github-matrix` JSON (with `include`) or a matrix summary.json",
    ))
}

/// Adds a NOT RUN cell for every planned check × version that no input wrote a result for (a job
/// that never started, was cancelled, or lost its artifact), then sorts like `collect`.
pub(crate) fn add_not_run(cells: &mut Vec<Cell>, plan: &[Planned]) {
    for p in plan {
        if cells
            .iter()
            .any(|c| c.check == p.check && c.k3s_version == p.k3s_version)
        {
            continue;
        }
        cells.push(Cell::not_run(
            p.check.clone(),
            p.k3s_version.clone(),
            p.expected,
            p.because.clone(),
            false,
            "wrote nothing: no result.json for it among the inputs (the job did not start, was cancelled, or its results were not uploaded)",
        ));
    }
    sort(cells);
}

fn sort(cells: &mut [Cell]) {
    cells.sort_by(|a, b| {
        let va = a.k3s_version.parse::<Version>().ok();
        let vb = b.k3s_version.parse::<Version>().ok();
        (&a.check, va, &a.k3s_version).cmp(&(&b.check, vb, &b.k3s_version))
    });
}

/// Every result.json / summary.json under the arguments, as cells, deduplicated by run id and
/// sorted by check and version. `out` (the merge's own output folder) is never read. With
/// `allow_empty` (a plan names the missing cells), a folder holding no result is not an error.
pub(crate) fn collect_inputs(
    args: &[PathBuf],
    out: &Path,
    allow_empty: bool,
) -> Result<Vec<Cell>, MergeError> {
    let out_abs = std::fs::canonicalize(out).ok();
    let mut cells: Vec<Cell> = Vec::new();
    for a in args {
        let meta = std::fs::metadata(a).map_err(|e| err(a, format!("cannot read: {e}")))?;
        let before = cells.len();
        if meta.is_file() {
            match a.file_name().and_then(|n| n.to_str()) {
                Some(SUMMARY_FILE) => cells.extend(cells_from_summary(a)?),
                _ => cells.push(cell_from_result(a)?),
            }
        } else {
            if out_abs.is_some() && std::fs::canonicalize(a).ok() == out_abs {
                return Err(err(
                    a,
                    "this is also the output folder (--out); merge into another folder",
                ));
            }
            walk(a, 0, out_abs.as_deref(), &mut cells)?;
        }
        if cells.len() == before && !(allow_empty && meta.is_dir()) {
            return Err(err(
                a,
                "no result.json or summary.json found here (give run folders, matrix folders, or folders holding them)",
            ));
        }
    }
    let mut seen = std::collections::HashSet::new();
    cells.retain(|c| match &c.run_id {
        Some(id) => seen.insert(id.clone()),
        None => true,
    });
    sort(&mut cells);
    Ok(cells)
}

fn walk(
    dir: &Path,
    depth: usize,
    out: Option<&Path>,
    cells: &mut Vec<Cell>,
) -> Result<(), MergeError> {
    if out.is_some() && std::fs::canonicalize(dir).ok().as_deref() == out {
        return Ok(());
    }
    let summary = dir.join(SUMMARY_FILE);
    if summary.is_file() {
        cells.extend(cells_from_summary(&summary)?);
        return Ok(());
    }
    let result = dir.join(RESULT_FILE);
    if result.is_file() {
        cells.push(cell_from_result(&result)?);
        return Ok(());
    }
    if depth >= MAX_DEPTH {
        return Ok(());
    }
    let mut subdirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| err(dir, format!("cannot read the folder: {e}")))?
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    subdirs.sort();
    for d in subdirs {
        walk(&d, depth + 1, out, cells)?;
    }
    Ok(())
}

/// Writes `summary.json` and `junit.xml` into `dir` (atomically each: a reader never sees half;
/// owner-only, like every file of a results folder: they carry the cells' errors).
pub(crate) fn write_outputs(dir: &Path, summary: &Summary, junit_name: &str) -> anyhow::Result<()> {
    let json = serde_json::to_string_pretty(summary)?;
    let xml = super::render::junit(junit_name, &summary.cells)
        .map_err(|e| anyhow::anyhow!("cannot render junit.xml: {e}"))?;
    for (name, text) in [(SUMMARY_FILE, json), (JUNIT_FILE, xml)] {
        crate::results_folder::write_atomic(&dir.join(name), text.as_bytes())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corrupt_json_names_file_line_and_column() {
        let d = tempfile::tempdir().expect("tempdir");
        let f = d.path().join(RESULT_FILE);
        std::fs::write(&f, "{\n  \"schema_version\": 1,\n  \"run_id\": \n}").expect("write");
        let e = cell_from_result(&f).expect_err("corrupt").to_string();
        assert!(
            e.starts_with(&format!("{}:4:1: error: invalid JSON", f.display())),
            "{e}"
        );
        std::fs::write(&f, "{\"schema_version\": 1}").expect("write");
        let e = cell_from_result(&f).expect_err("incomplete").to_string();
        assert!(e.contains("unexpected content: missing field"), "{e}");
    }

    /// summary.json and junit.xml carry the cells' errors: 0600 in a 0700 folder (issue #24).
    #[cfg(unix)]
    #[test]
    fn outputs_are_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().expect("tempdir");
        let out = d.path().join("merged");
        let summary = Summary::new(vec!["repro".into()], vec![], vec![]);
        write_outputs(&out, &summary, "repro merge").expect("written");
        let mode = |p: &Path| std::fs::metadata(p).expect("metadata").permissions().mode() & 0o777;
        assert_eq!(mode(&out), 0o700);
        for f in [SUMMARY_FILE, JUNIT_FILE] {
            assert_eq!(mode(&out.join(f)), 0o600, "{f}");
        }
    }
}
