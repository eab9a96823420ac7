//! `repro redact`: the redaction rules applied to files a user already has — one file, a folder
//! (e.g. an old results folder) or a `.tar.gz` bundle — in place or into `--out`.
//!
//! One redaction context covers everything given, so `<REDACTED-1>` is the same secret in every
//! file; every file is read and learned from, and every redacted copy made in memory (archives
//! rebuilt), before any is written. A file that is not UTF-8 is redacted as bytes, never kept
//! as it was.
//!
//! A folder redacted in place is all or nothing: the redacted folder is written as a temporary
//! sibling and swapped with the original at the end, so a failure leaves the original as it was
//! and names the file that failed. Anything the redacted folder could not hold the same way (a
//! pipe, a device) is refused before anything is written; symbolic links are kept as links.

use std::fs;
use std::path::{Path, PathBuf};

use crate::archive::{self, Kind, Member};
use crate::diag::Diagnostic;
use crate::safe_fs::{self, ReadError, WriteError};

/// How `repro redact` fails: input refused before anything is written (exit 2, a diagnostic),
/// or anything else (exit 3). Its own type, so redaction sits below the commands;
/// `crate::error::Error` takes it as it is.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    #[error("{0}")]
    BadInput(Diagnostic),
    #[error("{0:#}")]
    Other(#[from] anyhow::Error),
}

impl Error {
    /// `error: {message}`, with no help.
    fn bad_input(message: impl Into<String>) -> Error {
        Error::BadInput(Diagnostic::usage(message))
    }
}

use super::Redactor;

/// What `redact_path` did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct RedactSummary {
    /// Files written (archives count once).
    pub(crate) files: usize,
    /// Distinct secrets found (and replaced) across all of them.
    pub(crate) secrets: usize,
    /// What was left out of a `--out` copy, with why (relative paths): pipes, devices.
    pub(crate) skipped: Vec<String>,
    /// Files and archive members that are not UTF-8, redacted as bytes (`file`,
    /// `archive!member`).
    pub(crate) redacted_bytes: Vec<String>,
}

enum Content {
    Text(String),
    Bytes(Vec<u8>),
    Archive(Vec<Member>),
    /// A folder (kept even when empty).
    Dir,
    /// A symbolic link, kept as a link (its target is not read).
    Link(PathBuf),
    /// A pipe, device or socket: nothing to redact, and nothing a copy can hold.
    Special(&'static str),
}

struct Item {
    /// Path relative to the input (the file name when the input is a file).
    rel: PathBuf,
    content: Content,
}

/// Redacts `path` (a file or a folder) in place, or into `out` (a file for a file, a folder for
/// a folder). `extra_secrets` are values to hide wherever they occur, whatever their shape.
/// Hostile input (an archive member it cannot keep, a link planted in `out`, a pipe in a folder
/// redacted in place) is [`Error::BadInput`], with nothing written.
pub(crate) fn redact_path(
    path: &Path,
    out: Option<&Path>,
    extra_secrets: &[String],
) -> Result<RedactSummary, Error> {
    let meta = fs::symlink_metadata(path)
        .map_err(|e| Error::bad_input(format!("{}: {e}", path.display())))?;
    let is_dir = meta.is_dir();
    let items = read_items(path, &meta, out)?;
    if out.is_none() {
        refuse_special_in_place(path, &items)?;
    }
    let mut ctx = Redactor::new(extra_secrets);
    learn(&mut ctx, &items);
    // Every redacted copy, in memory, before anything is written.
    let mut summary = RedactSummary::default();
    let outputs = redacted(&mut ctx, &items, &mut summary)?;
    summary.secrets = ctx.secret_count();

    match (out, is_dir) {
        (None, false) => crate::results_folder::write_atomic(path, only_file(&outputs))?,
        // A user-named file: replaced when a file, written through when a device, refused
        // (never replaced) when a link, a FIFO or a folder (#42).
        (Some(o), false) => crate::safe_fs::write_out(o, only_file(&outputs)).map_err(|e| {
            if e.is_hostile() {
                Error::bad_input(format!("--out {e}"))
            } else {
                Error::Other(anyhow::anyhow!("--out {e}"))
            }
        })?,
        (Some(o), true) => write_tree(o, &outputs)?,
        (None, true) => swap_in(path, &outputs)?,
    }
    Ok(summary)
}

/// What is at `path`: the file, or every entry of the folder (`out` is left out of a folder it
/// is inside).
fn read_items(path: &Path, meta: &fs::Metadata, out: Option<&Path>) -> Result<Vec<Item>, Error> {
    if meta.is_dir() {
        let mut items = Vec::new();
        collect(path, path, out, &mut items)?;
        Ok(items)
    } else if meta.is_file() {
        let name = path
            .file_name()
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("file"));
        Ok(vec![load(path, name)?])
    } else {
        Err(Error::bad_input(format!(
            "{}: not a file or folder",
            path.display()
        )))
    }
}

/// In place, a pipe, device or socket in a folder would be lost (a redacted folder holds files,
/// folders and links only): refused before anything is written.
fn refuse_special_in_place(path: &Path, items: &[Item]) -> Result<(), Error> {
    let special: Vec<String> = items
        .iter()
        .filter_map(|it| match it.content {
            Content::Special(kind) => Some(format!("{} ({kind})", it.rel.display())),
            _ => None,
        })
        .collect();
    if !special.is_empty() {
        let them = if special.len() == 1 { "it" } else { "them" };
        return Err(Error::BadInput(
            Diagnostic::usage(format!(
                "{}: cannot redact in place: {} would be lost (a redacted folder holds \
                 files, folders and links only); nothing was written",
                path.display(),
                special.join(", "),
            ))
            .help(format!(
                "remove {them}, or redact into a copy with --out DIR (which leaves {them} out)"
            )),
        ));
    }
    Ok(())
}

/// Learns the secrets of every item first, so each copy hides them all, wherever they occur.
fn learn(ctx: &mut Redactor, items: &[Item]) {
    for it in items {
        match &it.content {
            Content::Text(t) => ctx.learn_file(&name_of(&it.rel), t),
            Content::Bytes(b) => ctx.learn_bytes(b),
            Content::Archive(members) => {
                for m in members {
                    if let Kind::File(data) = &m.kind {
                        match std::str::from_utf8(data) {
                            Ok(t) => ctx.learn_file(&m.name(), t),
                            Err(_) => ctx.learn_bytes(data),
                        }
                    }
                }
            }
            Content::Dir | Content::Link(_) | Content::Special(_) => {}
        }
    }
}

/// Every item's redacted copy, in memory; the binary files redacted and the special ones
/// skipped are noted in `summary`.
fn redacted(
    ctx: &mut Redactor,
    items: &[Item],
    summary: &mut RedactSummary,
) -> Result<Vec<(PathBuf, Output)>, Error> {
    let mut outputs: Vec<(PathBuf, Output)> = Vec::with_capacity(items.len());
    for it in items {
        let o = match &it.content {
            Content::Text(t) => Output::File(ctx.redact_file(&name_of(&it.rel), t).into_bytes()),
            // Never kept unchecked: known secrets and the shapes found in its readable parts
            // are replaced in the bytes, and the file is named.
            Content::Bytes(b) => {
                summary.redacted_bytes.push(it.rel.display().to_string());
                Output::File(ctx.redact_bytes(b))
            }
            Content::Archive(members) => {
                let mut red = members.clone();
                for m in &mut red {
                    let member = m.name();
                    if let Kind::File(data) = &mut m.kind {
                        *data = match std::str::from_utf8(data) {
                            Ok(t) => ctx.redact_file(&member, t).into_bytes(),
                            Err(_) => {
                                summary
                                    .redacted_bytes
                                    .push(format!("{}!{member}", it.rel.display()));
                                ctx.redact_bytes(data)
                            }
                        };
                    }
                }
                Output::File(archive::rebuild(&red).map_err(|e| {
                    Error::Other(anyhow::anyhow!(
                        "cannot rebuild {}: {e}; nothing was written",
                        it.rel.display()
                    ))
                })?)
            }
            Content::Dir => Output::Dir,
            Content::Link(t) => Output::Link(t.clone()),
            // Only with --out (refused above in place): a copy must not carry anything unchecked.
            Content::Special(kind) => {
                summary
                    .skipped
                    .push(format!("{} ({kind})", it.rel.display()));
                continue;
            }
        };
        if matches!(o, Output::File(_)) {
            summary.files += 1;
        }
        outputs.push((it.rel.clone(), o));
    }
    Ok(outputs)
}

/// A redacted copy of one entry.
enum Output {
    File(Vec<u8>),
    Dir,
    Link(PathBuf),
}

fn only_file(outputs: &[(PathBuf, Output)]) -> &[u8] {
    match outputs.first() {
        Some((_, Output::File(b))) => b,
        _ => &[],
    }
}

/// A write that failed, naming the file of the input it was the copy of.
fn write_failed(rel: &Path, e: WriteError, untouched: Option<&Path>) -> Error {
    let tail = untouched.map_or(String::new(), |p| {
        format!("; nothing was changed in {}", p.display())
    });
    let msg = format!(
        "cannot write the redacted copy of {}: {e}{tail}",
        rel.display()
    );
    // Bad input is printed as it is, anything else after `repro: ` (`Error::render`).
    if e.is_hostile() {
        Error::bad_input(msg)
    } else {
        Error::Other(anyhow::anyhow!(msg))
    }
}

/// Writes every output below `root` without following a link planted there.
fn write_tree(root: &Path, outputs: &[(PathBuf, Output)]) -> Result<(), Error> {
    safe_fs::dir_in(root, Path::new("")).map_err(|e| write_failed(Path::new("."), e, None))?;
    write_below(root, outputs, None)
}

fn write_below(
    root: &Path,
    outputs: &[(PathBuf, Output)],
    untouched: Option<&Path>,
) -> Result<(), Error> {
    for (rel, o) in outputs {
        let done = match o {
            Output::File(b) => safe_fs::write_in(root, rel, b),
            Output::Dir => safe_fs::dir_in(root, rel),
            #[cfg(unix)]
            Output::Link(t) => safe_fs::symlink_in(root, rel, t),
            #[cfg(not(unix))]
            Output::Link(_) => Ok(root.join(rel)),
        };
        done.map_err(|e| write_failed(rel, e, untouched))?;
    }
    Ok(())
}

/// In-place redaction of the folder `path`, all or nothing: the redacted folder is written as a
/// temporary sibling, then the two are swapped by two renames (undone if the second fails) and
/// the original, which still holds the secrets, is removed.
fn swap_in(path: &Path, outputs: &[(PathBuf, Output)]) -> Result<(), Error> {
    let real = fs::canonicalize(path)
        .map_err(|e| Error::Other(anyhow::anyhow!("cannot resolve {}: {e}", path.display())))?;
    let (Some(parent), Some(name)) = (real.parent(), real.file_name()) else {
        return Err(Error::BadInput(Diagnostic::general(
            format!("{}: cannot redact the root folder in place", path.display()),
            "redact into a copy with --out DIR",
        )));
    };
    let name = name.to_string_lossy();
    let sibling = |what: &str| parent.join(format!(".{name}.repro-{what}-{}", std::process::id()));
    let (new, old) = (sibling("redacted"), sibling("original"));
    let fail = |msg: String| Error::Other(anyhow::anyhow!(msg));
    let mut b = fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(&new).map_err(|e| {
        fail(format!(
            "cannot create {} for the redacted copy: {e}; nothing was changed in {}",
            new.display(),
            path.display()
        ))
    })?;
    if let Err(e) = write_below(&new, outputs, Some(path)) {
        let _ = fs::remove_dir_all(&new);
        return Err(e);
    }
    if let Err(e) = fs::rename(&real, &old) {
        let _ = fs::remove_dir_all(&new);
        return Err(fail(format!(
            "cannot move {} aside to put its redacted copy in its place: {e}; nothing was \
             changed in it",
            path.display()
        )));
    }
    if let Err(e) = fs::rename(&new, &real) {
        let back = fs::rename(&old, &real);
        let _ = fs::remove_dir_all(&new);
        return Err(fail(match back {
            Ok(()) => format!(
                "cannot put the redacted copy in place of {}: {e}; nothing was changed in it",
                path.display()
            ),
            Err(b) => format!(
                "cannot put the redacted copy in place of {}: {e}; and cannot move the original \
                 back from {}: {b}",
                path.display(),
                old.display()
            ),
        }));
    }
    fs::remove_dir_all(&old).map_err(|e| {
        fail(format!(
            "{} is redacted, but its original (with the secrets) could not be removed from {}: \
             {e}; remove it by hand",
            path.display(),
            old.display()
        ))
    })
}

fn name_of(rel: &Path) -> String {
    rel.to_string_lossy().into_owned()
}

/// Every entry under `dir`, sorted so numbering is stable; symlinks are not followed (a link
/// could point anywhere, it is kept as a link) and `out`, when inside `dir`, is not read back.
fn collect(
    root: &Path,
    dir: &Path,
    out: Option<&Path>,
    items: &mut Vec<Item>,
) -> Result<(), Error> {
    let listing = |e: std::io::Error| Error::bad_input(format!("{}: {e}", dir.display()));
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(listing)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(listing)?;
    entries.sort();
    for p in entries {
        if out.is_some_and(|o| same_path(o, &p)) {
            continue;
        }
        let meta = fs::symlink_metadata(&p)
            .map_err(|e| Error::bad_input(format!("{}: {e}", p.display())))?;
        let rel = p.strip_prefix(root).unwrap_or(&p).to_path_buf();
        let t = meta.file_type();
        if t.is_dir() {
            items.push(Item {
                rel,
                content: Content::Dir,
            });
            collect(root, &p, out, items)?;
        } else if t.is_file() {
            items.push(load(&p, rel)?);
        } else if t.is_symlink() {
            let target =
                fs::read_link(&p).map_err(|e| Error::bad_input(format!("{}: {e}", p.display())))?;
            items.push(Item {
                rel,
                content: Content::Link(target),
            });
        } else {
            items.push(Item {
                rel,
                content: Content::Special(safe_fs::kind_of(t)),
            });
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

fn read_refused(e: ReadError) -> Error {
    Error::BadInput(Diagnostic::general(e.to_string(), e.help()))
}

fn load(path: &Path, rel: PathBuf) -> Result<Item, Error> {
    // Callers listed it without following links; this read refuses a pipe or device swapped in
    // since, and bounds the size (`safe_fs`).
    let data = safe_fs::read_named(path, safe_fs::REDACT_LIMIT).map_err(read_refused)?;
    let name = path.to_string_lossy();
    let content = if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
        match archive::read_members(&data) {
            Ok(members) => Content::Archive(members),
            Err(e) => {
                return Err(Error::BadInput(Diagnostic::general(
                    format!("{}: {e}; nothing was written", path.display()),
                    "an archive is redacted only when every member can be kept as it is: \
                     files, folders and links, named inside the archive",
                )))
            }
        }
    } else {
        match String::from_utf8(data) {
            Ok(t) => Content::Text(t),
            Err(e) => Content::Bytes(e.into_bytes()),
        }
    };
    Ok(Item { rel, content })
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// A write that fails after others succeeded (here: a file where a later file's folder
    /// goes) leaves the folder as it was, names the file, and leaves nothing beside it.
    #[test]
    fn a_failure_midway_leaves_the_folder_untouched() {
        let tmp = tempfile::tempdir().expect("tmp");
        let d = tmp.path().join("r");
        fs::create_dir(&d).expect("mkdir");
        fs::write(d.join("a.log"), "token: midway-secret\n").expect("write");
        let outputs = vec![
            (
                PathBuf::from("a.log"),
                Output::File(b"token: <REDACTED-1>\n".to_vec()),
            ),
            (PathBuf::from("b"), Output::File(b"x".to_vec())),
            (PathBuf::from("b/c.log"), Output::File(b"y".to_vec())),
        ];
        let e = swap_in(&d, &outputs).expect_err("fails at b/c.log");
        let msg = crate::error::Error::from(e).render();
        assert!(
            msg.contains("cannot write the redacted copy of b/c.log"),
            "{msg}"
        );
        assert!(
            msg.contains(&format!("nothing was changed in {}", d.display())),
            "{msg}"
        );
        assert_eq!(
            fs::read_to_string(d.join("a.log")).expect("read"),
            "token: midway-secret\n"
        );
        let left: Vec<_> = fs::read_dir(tmp.path())
            .expect("ls")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(left, vec![std::ffi::OsString::from("r")]);

        swap_in(&d, &outputs[..2]).expect("swapped");
        assert_eq!(
            fs::read_to_string(d.join("a.log")).expect("read"),
            "token: <REDACTED-1>\n"
        );
        assert_eq!(fs::read(d.join("b")).expect("read"), b"x");
    }
}
