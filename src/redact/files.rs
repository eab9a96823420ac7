//! `repro redact`: the redaction rules applied to files a user already has — one file, a folder
//! (e.g. an old results folder) or a `.tar.gz` bundle — in place or into `--out`.
//!
//! One redaction context covers everything given, so `<REDACTED-1>` is the same secret in every
//! file; every file is read and learned from before any is written.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use crate::archive as bundle;

use super::Redactor;

/// What `redact_path` did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct RedactSummary {
    /// Files written (archives count once).
    pub(crate) files: usize,
    /// Distinct secrets found (and replaced) across all of them.
    pub(crate) secrets: usize,
    /// Files neither redacted nor copied because they are not text (relative paths).
    pub(crate) skipped_binary: Vec<String>,
    /// Archive members that are not text, redacted as bytes (`archive!member`).
    pub(crate) redacted_bytes: Vec<String>,
}

enum Content {
    Text(String),
    Archive(Vec<(String, Vec<u8>)>),
    Binary,
}

struct Item {
    /// Path relative to the input (the file name when the input is a file).
    rel: PathBuf,
    content: Content,
}

/// Redacts `path` (a file or a folder) in place, or into `out` (a file for a file, a folder for
/// a folder). `extra_secrets` are values to hide wherever they occur, whatever their shape.
pub(crate) fn redact_path(
    path: &Path,
    out: Option<&Path>,
    extra_secrets: &[String],
) -> anyhow::Result<RedactSummary> {
    let meta =
        fs::symlink_metadata(path).with_context(|| format!("failed to read {}", path.display()))?;
    let items = if meta.is_dir() {
        let mut items = Vec::new();
        collect(path, path, out, &mut items)?;
        items
    } else if meta.is_file() {
        let name = path
            .file_name()
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("file"));
        vec![load(path, name)?]
    } else {
        bail!("{}: not a file or folder", path.display());
    };

    let mut ctx = Redactor::new(extra_secrets);
    for it in &items {
        match &it.content {
            Content::Text(t) => ctx.learn_file(&name_of(&it.rel), t),
            Content::Archive(entries) => {
                for (p, data) in entries {
                    match std::str::from_utf8(data) {
                        Ok(t) => ctx.learn_file(p, t),
                        Err(_) => ctx.learn_bytes(data),
                    }
                }
            }
            Content::Binary => {}
        }
    }

    let mut summary = RedactSummary::default();
    for it in &items {
        let target = match (out, meta.is_dir()) {
            (None, true) => path.join(&it.rel),
            (None, false) => path.to_path_buf(),
            (Some(o), true) => o.join(&it.rel),
            (Some(o), false) => o.to_path_buf(),
        };
        let bytes = match &it.content {
            Content::Text(t) => ctx.redact_file(&name_of(&it.rel), t).into_bytes(),
            Content::Archive(entries) => {
                let mut red: Vec<(String, Vec<u8>)> = Vec::with_capacity(entries.len());
                for (p, data) in entries {
                    match std::str::from_utf8(data) {
                        Ok(t) => red.push((p.clone(), ctx.redact_file(p, t).into_bytes())),
                        // Never copied unchecked: known secrets and the shapes found in its
                        // readable parts are replaced in the bytes, and the member is named.
                        Err(_) => {
                            summary
                                .redacted_bytes
                                .push(format!("{}!{p}", it.rel.display()));
                            red.push((p.clone(), ctx.redact_bytes(data)));
                        }
                    }
                }
                bundle::build(&red, 0)
                    .with_context(|| format!("failed to rebuild {}", it.rel.display()))?
            }
            // Not copied to `--out` either: a redacted copy must not carry anything unchecked.
            Content::Binary => {
                summary.skipped_binary.push(it.rel.display().to_string());
                continue;
            }
        };
        crate::results_folder::write_atomic(&target, &bytes)?;
        summary.files += 1;
    }
    summary.secrets = ctx.secret_count();
    Ok(summary)
}

fn name_of(rel: &Path) -> String {
    rel.to_string_lossy().into_owned()
}

/// Every regular file under `dir`, sorted so numbering is stable; symlinks are not followed (a
/// link could point anywhere) and `out`, when inside `dir`, is not read back.
fn collect(
    root: &Path,
    dir: &Path,
    out: Option<&Path>,
    items: &mut Vec<Item>,
) -> anyhow::Result<()> {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .with_context(|| format!("failed to list {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for p in entries {
        if out.is_some_and(|o| same_path(o, &p)) {
            continue;
        }
        let meta =
            fs::symlink_metadata(&p).with_context(|| format!("failed to read {}", p.display()))?;
        if meta.is_dir() {
            collect(root, &p, out, items)?;
        } else if meta.is_file() {
            let rel = p.strip_prefix(root).unwrap_or(&p).to_path_buf();
            items.push(load(&p, rel)?);
        }
    }
    Ok(())
}

fn same_path(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

fn load(path: &Path, rel: PathBuf) -> anyhow::Result<Item> {
    // Callers listed it without following links; this read refuses a pipe or device swapped in
    // since, and bounds the size (`safe_fs`).
    let data = crate::safe_fs::read_named(path, crate::safe_fs::REDACT_LIMIT)?;
    let name = path.to_string_lossy();
    let content = if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
        match bundle::read(&data) {
            Ok(entries) => Content::Archive(entries),
            Err(e) => bail!("{}: not a readable .tar.gz: {e}", path.display()),
        }
    } else {
        match String::from_utf8(data) {
            Ok(t) => Content::Text(t),
            Err(_) => Content::Binary,
        }
    };
    Ok(Item { rel, content })
}
