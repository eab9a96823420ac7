//! Reading files out of folders repro is handed — a project's `checks/` and `topologies/`, a
//! results folder for `repro report`, a folder for `repro redact` or `repro inspect` — when the
//! folder may come from someone else (a bundle attached to an issue, a pull request).
//!
//! The rules, the same for every reader:
//! - A symbolic link is followed only when its target is inside the folder being read (a
//!   `nodes -> ../nodes-v2` link works); one leading out of it (`nodes -> ~/.ssh`) is refused
//!   with its path and target, never read.
//! - Only regular files are read: a named pipe would block forever, `/dev/zero` never ends, a
//!   socket cannot be read. They are refused by path before they are opened.
//! - Every read has a size limit, and never reads past it even when the file grows while being
//!   read (the limits are below, named after what they hold).
//! - A file named on the command line (`repro validate x.yaml`) is the user's choice: symlinks
//!   to it are followed, but it must still be a regular file within its limit.
//!
//! Checking and then opening leaves a window in which a folder changed by someone else at the
//! same moment could swap a file for a pipe; the opened file is checked again, so the worst
//! case is a refusal, and the size limit holds whatever is read.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

const MIB: u64 = 1024 * 1024;

/// A file a flag names for repro to read whole or stream (`--k3s-binary`, `--image-archive`):
/// it must exist and be a regular file (links followed), since `/dev/zero` or a FIFO would be
/// read forever once the run had begun. Refused at parsing (exit 2), saying what to `give`.
pub(crate) fn regular_file_arg(s: &str, give: &str) -> Result<PathBuf, String> {
    let p = PathBuf::from(s);
    let meta = fs::metadata(&p).map_err(|e| format!("cannot read {s}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{s} is not a regular file; give {give}"));
    }
    Ok(p)
}

/// A scenario file (check, topology, signals): the shipped ones are a few KiB.
pub(crate) const SCENARIO_LIMIT: u64 = MIB;
/// A run's `result.json`: configs, plans and evidence lines of every step (a few hundred KiB
/// for a big run).
pub(crate) const RESULT_LIMIT: u64 = 64 * MIB;
/// One file under a results folder's `nodes/` (a boot's log, a config, inspect.json); the
/// bundle holds them in memory, so this bounds what `repro report` takes.
pub(crate) const NODE_FILE_LIMIT: u64 = 256 * MIB;
/// One file `repro redact` rewrites (it holds the file and its redacted copy in memory).
pub(crate) const REDACT_LIMIT: u64 = 256 * MIB;

/// Why a file was not read; shown as `<path>: <reason>`.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// A symbolic link whose target is outside the folder being read.
    LinkOut {
        path: PathBuf,
        target: PathBuf,
        root: PathBuf,
    },
    /// A pipe, device, socket (or a file where a folder was expected).
    NotRegular {
        path: PathBuf,
        kind: &'static str,
    },
    TooLarge {
        path: PathBuf,
        limit: u64,
    },
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path().display(), self.reason())
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReadError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl ReadError {
    /// The file concerned.
    pub(crate) fn path(&self) -> &Path {
        match self {
            ReadError::LinkOut { path, .. }
            | ReadError::NotRegular { path, .. }
            | ReadError::TooLarge { path, .. }
            | ReadError::Io { path, .. } => path,
        }
    }

    /// Why it was not read, without the path.
    pub(crate) fn reason(&self) -> String {
        match self {
            ReadError::LinkOut { target, root, .. } => format!(
                "a symbolic link to {}, outside {}: not followed",
                target.display(),
                root.display()
            ),
            ReadError::NotRegular { kind, .. } => format!("{kind}, not a regular file: not read"),
            ReadError::TooLarge { limit, .. } => format!(
                "larger than the {} MiB a file of this kind may have: not read",
                limit / MIB
            ),
            ReadError::Io { source, .. } => source.to_string(),
        }
    }

    /// What the user can do about it.
    pub(crate) fn help(&self) -> &'static str {
        match self {
            ReadError::LinkOut { .. } => {
                "replace the link by the file itself, or link only to files inside the folder"
            }
            ReadError::NotRegular { .. } => {
                "only regular files are read; remove it or replace it by a file"
            }
            ReadError::TooLarge { .. } => {
                "this is not a file repro wrote or reads; remove it or trim it"
            }
            ReadError::Io { .. } => "check that the file exists and is readable",
        }
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ReadError + '_ {
    move |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What a file that is not a regular file is, in words.
pub(crate) fn kind_of(t: fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a named pipe (FIFO)";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() {
        "a folder"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "a special file"
    }
}

/// `path` with its symbolic links resolved, refused when that leaves `root` (itself resolved).
/// A path without links comes back resolved too.
pub(crate) fn inside(root: &Path, path: &Path) -> Result<PathBuf, ReadError> {
    let real_root = fs::canonicalize(root).map_err(io(root))?;
    let real = fs::canonicalize(path).map_err(io(path))?;
    if real.starts_with(&real_root) {
        Ok(real)
    } else {
        Err(ReadError::LinkOut {
            path: path.to_path_buf(),
            target: real,
            root: root.to_path_buf(),
        })
    }
}

/// Reads the regular file `path` of the folder `root`, at most `limit` bytes.
pub(crate) fn read_in(root: &Path, path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let real = inside(root, path)?;
    read_regular(path, &real, limit)
}

/// Reads a file named by the user (links followed), regular only, at most `limit` bytes.
pub(crate) fn read_named(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    read_regular(path, path, limit)
}

/// Opens a file named by the user (links followed) for reading: opened without blocking
/// (`O_NONBLOCK`: a FIFO swapped in after any check cannot hang the open), then checked on the
/// open file (`fstat`): a regular file of at most `limit` bytes, or refused. Reading it is the
/// caller's, within `limit` (see [`read_named`]); for a file too large to hold in memory (a
/// release tarball, hashed as it streams).
pub(crate) fn open_named(path: &Path, limit: u64) -> Result<fs::File, ReadError> {
    open_regular(path, path, limit)
}

fn open_regular(shown: &Path, real: &Path, limit: u64) -> Result<fs::File, ReadError> {
    use std::os::unix::fs::OpenOptionsExt;
    let not_regular = |t: fs::FileType| ReadError::NotRegular {
        path: shown.to_path_buf(),
        kind: kind_of(t),
    };
    let f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(real)
        .map_err(io(shown))?;
    let meta = f.metadata().map_err(io(shown))?;
    if !meta.is_file() {
        return Err(not_regular(meta.file_type()));
    }
    if meta.len() > limit {
        return Err(ReadError::TooLarge {
            path: shown.to_path_buf(),
            limit,
        });
    }
    Ok(f)
}

/// Reads `real` (shown as `shown`): checked to be a regular file before opening and again once
/// open (opened without blocking, so a FIFO cannot hang the open); never more than `limit`
/// bytes.
fn read_regular(shown: &Path, real: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let not_regular = |t: fs::FileType| ReadError::NotRegular {
        path: shown.to_path_buf(),
        kind: kind_of(t),
    };
    let meta = fs::metadata(real).map_err(io(shown))?;
    if !meta.is_file() {
        return Err(not_regular(meta.file_type()));
    }
    let too_large = || ReadError::TooLarge {
        path: shown.to_path_buf(),
        limit,
    };
    if meta.len() > limit {
        return Err(too_large());
    }
    let f = open_regular(shown, real, limit)?;
    let meta = f.metadata().map_err(io(shown))?;
    let mut data = Vec::with_capacity(meta.len().min(limit) as usize);
    f.take(limit + 1)
        .read_to_end(&mut data)
        .map_err(io(shown))?;
    if data.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(data)
}

/// One entry of a folder being read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Entry {
    /// A regular file (or a link to one inside the folder): its path as listed.
    File(PathBuf),
    /// A folder (or a link to one inside the folder).
    Dir(PathBuf),
}

/// The paths in the folder `dir` (inside `root`), sorted, unchecked: read each with
/// [`read_in`], which applies the rules.
pub(crate) fn paths_in(root: &Path, dir: &Path) -> Result<Vec<PathBuf>, ReadError> {
    let real_dir = inside(root, dir)?;
    let meta = fs::metadata(&real_dir).map_err(io(dir))?;
    if !meta.is_dir() {
        return Err(ReadError::Io {
            path: dir.to_path_buf(),
            source: std::io::Error::other("not a folder"),
        });
    }
    let mut paths: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(io(dir))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(io(dir))?;
    paths.sort();
    Ok(paths)
}

/// The entries of `dir` (inside `root`), sorted by path: links resolved within `root`, links out
/// of it and special files refused (the first one found is the error).
pub(crate) fn list_in(root: &Path, dir: &Path) -> Result<Vec<Entry>, ReadError> {
    let mut out = Vec::new();
    for p in paths_in(root, dir)? {
        let real = inside(root, &p)?;
        let meta = fs::metadata(&real).map_err(io(&p))?;
        if meta.is_dir() {
            out.push(Entry::Dir(p));
        } else if meta.is_file() {
            out.push(Entry::File(p));
        } else {
            return Err(ReadError::NotRegular {
                path: p,
                kind: kind_of(meta.file_type()),
            });
        }
    }
    Ok(out)
}

/// Every regular file under `dir` (inside `root`), recursively, sorted. A link to a folder is
/// not descended: its target is inside `root` and listed under its own name (so nothing is
/// listed twice, and a link loop cannot recurse); links to files inside are listed.
pub(crate) fn files_under(root: &Path, dir: &Path) -> Result<Vec<PathBuf>, ReadError> {
    let mut out = Vec::new();
    walk(root, dir, &mut out)?;
    Ok(out)
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), ReadError> {
    for e in list_in(root, dir)? {
        match e {
            Entry::File(p) => out.push(p),
            Entry::Dir(d) => {
                let linked = fs::symlink_metadata(&d).map_err(io(&d))?.is_symlink();
                if !linked {
                    walk(root, &d, out)?;
                }
            }
        }
    }
    Ok(())
}

/// Why a file was not written into an output folder; shown as `<path>: <reason>`.
#[derive(Debug)]
pub(crate) enum WriteError {
    /// Something other than a real folder (a symbolic link planted there, a file) where a
    /// folder of the output goes: not followed, nothing written under it.
    NotAFolder { path: PathBuf, kind: &'static str },
    /// A name that is not a plain relative path below the output folder.
    BadName { path: PathBuf },
    /// A user-named output file that is not a regular file or a new path ([`check_out`]).
    Refused { path: PathBuf, why: String },
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteError::NotAFolder { path, kind } => write!(
                f,
                "{}: {kind} where a folder of the output belongs: not followed, nothing written \
                 under it (remove it, or choose another output folder)",
                path.display()
            ),
            WriteError::BadName { path } => write!(
                f,
                "{}: not a relative name inside the output folder: not written",
                path.display()
            ),
            WriteError::Refused { path, why } => write!(f, "{}: {why}", path.display()),
            WriteError::Io { path, source } => write!(f, "{}: {source}", path.display()),
        }
    }
}

impl std::error::Error for WriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WriteError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl WriteError {
    /// The I/O error itself (its path dropped, for an error type that names the path).
    pub(crate) fn into_io(self) -> std::io::Error {
        match self {
            WriteError::Io { source, .. } => source,
            other => std::io::Error::other(other.to_string()),
        }
    }

    /// The output folder itself is hostile (a link planted in it), not the machine failing.
    pub(crate) fn is_hostile(&self) -> bool {
        !matches!(self, WriteError::Io { .. })
    }
}

fn wio(path: &Path) -> impl FnOnce(std::io::Error) -> WriteError + '_ {
    move |source| WriteError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Creates a folder and its missing parents, each readable by its owner only (0700).
pub(crate) fn private_dir(path: &Path) -> std::io::Result<()> {
    let mut b = fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(path)
}

/// The folder `rel` below the output folder `root`, created (0700) where missing. `root` is the
/// user's choice (named on the command line: created with its parents, links to it followed);
/// below it, every component must be a real folder: a symbolic link planted there is refused,
/// never followed, so nothing is written outside `root`.
pub(crate) fn dir_in(root: &Path, rel: &Path) -> Result<PathBuf, WriteError> {
    private_dir(root).map_err(wio(root))?;
    let mut cur = root.to_path_buf();
    for c in rel.components() {
        match c {
            std::path::Component::Normal(n) => cur.push(n),
            std::path::Component::CurDir => continue,
            _ => {
                return Err(WriteError::BadName {
                    path: root.join(rel),
                })
            }
        }
        match fs::symlink_metadata(&cur) {
            Ok(m) if m.is_dir() => {}
            Ok(m) => {
                return Err(WriteError::NotAFolder {
                    path: cur,
                    kind: kind_of(m.file_type()),
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let mut b = fs::DirBuilder::new();
                #[cfg(unix)]
                std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
                match b.create(&cur) {
                    Ok(()) => {}
                    // Made by someone else meanwhile: checked again below.
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                        let m = fs::symlink_metadata(&cur).map_err(wio(&cur))?;
                        if !m.is_dir() {
                            return Err(WriteError::NotAFolder {
                                path: cur,
                                kind: kind_of(m.file_type()),
                            });
                        }
                    }
                    Err(e) => return Err(wio(&cur)(e)),
                }
            }
            Err(e) => return Err(wio(&cur)(e)),
        }
    }
    Ok(cur)
}

/// Writes `data` as the file `rel` below the output folder `root` (see [`dir_in`]), owner-only
/// (0600), atomically: into a temporary file created new (`O_CREAT|O_EXCL`, which refuses to
/// open through a link planted under its name), then renamed over the name — which replaces a
/// link found there instead of writing through it. Returns the path written.
pub(crate) fn write_in(root: &Path, rel: &Path, data: &[u8]) -> Result<PathBuf, WriteError> {
    let (Some(name), parent) = (rel.file_name(), rel.parent().unwrap_or(Path::new(""))) else {
        return Err(WriteError::BadName {
            path: root.join(rel),
        });
    };
    let dir = dir_in(root, parent)?;
    let path = dir.join(name);
    replace(&path, data)?;
    Ok(path)
}

/// The one atomic write of every file repro writes (result.json, reports, summaries, redacted
/// copies): `data` into a temporary file created new beside `path` (`O_CREAT|O_EXCL`, 0600,
/// never through a link planted under its name), synced, then renamed over `path` — which
/// replaces a link found there instead of writing through it. A reader (or a crash) sees the
/// old file or the new one, never half. The folder must exist.
pub(crate) fn replace(path: &Path, data: &[u8]) -> Result<(), WriteError> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let tmp = create_temp(dir, &name.unwrap_or_default())?;
    let written = (|| {
        let mut f = tmp.1;
        std::io::Write::write_all(&mut f, data)?;
        f.sync_all()
    })();
    if let Err(e) = written.and_then(|()| fs::rename(&tmp.0, path)) {
        let _ = fs::remove_file(&tmp.0);
        return Err(wio(path)(e));
    }
    Ok(())
}

/// What a file the user names for an output (`--out` of `verify`, `report --validation`,
/// `redact`) is, decided before anything runs ([`check_out`]) and again when written
/// ([`write_out`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OutFile {
    /// A new path or a regular file: written atomically (a temporary file renamed over it).
    Replace,
    /// A character device (`/dev/null`, a terminal): written through, never replaced.
    Device,
}

/// Whether repro may write the user-named output file `path`, and how: a new path or a regular
/// file is replaced atomically, a character device is written through; a symbolic link, a
/// named pipe, a folder, a socket or a block device is refused (never replaced, never followed),
/// with the reason — checked before any run starts, so a run is not wasted on an unusable path.
pub(crate) fn check_out(path: &Path) -> Result<OutFile, WriteError> {
    use std::os::unix::fs::FileTypeExt;
    let refuse = |why: &str| {
        Err(WriteError::Refused {
            path: path.to_path_buf(),
            why: why.to_string(),
        })
    };
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(OutFile::Replace),
        Err(e) => return Err(wio(path)(e)),
    };
    let t = meta.file_type();
    if t.is_file() {
        Ok(OutFile::Replace)
    } else if t.is_char_device() {
        Ok(OutFile::Device)
    } else if t.is_symlink() {
        let target = fs::read_link(path).unwrap_or_default();
        refuse(&format!(
            "a symbolic link (to {}): not written through nor replaced; give the file itself",
            target.display()
        ))
    } else if t.is_dir() {
        refuse("a folder: give a file name (e.g. a file inside it)")
    } else {
        refuse(&format!(
            "{}: not written nor replaced; give a regular file or a new path",
            kind_of(t)
        ))
    }
}

/// Writes a user-named output file (see [`check_out`], checked again here): a regular file or a
/// new path replaced atomically (its missing folders created, owner-only), a character device
/// written through (opened without creating or truncating, and checked once open); anything
/// else refused and left as it is.
pub(crate) fn write_out(path: &Path, data: &[u8]) -> Result<(), WriteError> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    match check_out(path)? {
        OutFile::Replace => {
            let parent = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            private_dir(parent).map_err(wio(parent))?;
            replace(path, data)
        }
        OutFile::Device => {
            let mut f = fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NOCTTY | libc::O_NOFOLLOW)
                .open(path)
                .map_err(wio(path))?;
            let t = f.metadata().map_err(wio(path))?.file_type();
            if !t.is_char_device() {
                return Err(WriteError::Refused {
                    path: path.to_path_buf(),
                    why: format!("{} now: not written", kind_of(t)),
                });
            }
            std::io::Write::write_all(&mut f, data).map_err(wio(path))
        }
    }
}

/// A new, empty owner-only file in `dir` named after `name`, never an existing one.
pub(crate) fn create_temp(dir: &Path, name: &str) -> Result<(PathBuf, fs::File), WriteError> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEQ: AtomicU64 = AtomicU64::new(0);
    loop {
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{name}.tmp-{}-{n}", std::process::id()));
        let mut o = fs::OpenOptions::new();
        o.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
        match o.open(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(wio(&tmp)(e)),
        }
    }
}

/// Makes `rel` below `root` a symbolic link to `target` (a link kept as a link: its target is
/// neither read nor written), replacing a file or link of that name.
#[cfg(unix)]
pub(crate) fn symlink_in(root: &Path, rel: &Path, target: &Path) -> Result<PathBuf, WriteError> {
    let (Some(name), parent) = (rel.file_name(), rel.parent().unwrap_or(Path::new(""))) else {
        return Err(WriteError::BadName {
            path: root.join(rel),
        });
    };
    let dir = dir_in(root, parent)?;
    let path = dir.join(name);
    if let Ok(m) = fs::symlink_metadata(&path) {
        if m.is_dir() {
            return Err(WriteError::NotAFolder {
                path,
                kind: "a folder",
            });
        }
        fs::remove_file(&path).map_err(wio(&path))?;
    }
    std::os::unix::fs::symlink(target, &path).map_err(wio(&path))?;
    Ok(path)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;
    use std::sync::mpsc;
    use std::time::Duration;

    /// Runs `f` on a thread and fails (instead of hanging the suite) if it does not return
    /// within a generous bound; the bound is a guard, not a speed assertion.
    pub(crate) fn guarded<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(60))
            .expect("the read blocked: a FIFO or endless file was opened")
    }

    pub(crate) fn mkfifo(p: &Path) {
        let st = std::process::Command::new("mkfifo")
            .arg(p)
            .status()
            .expect("mkfifo runs");
        assert!(st.success());
    }

    fn folder() -> (tempfile::TempDir, tempfile::TempDir) {
        let root = tempfile::tempdir().expect("tmp");
        let outside = tempfile::tempdir().expect("tmp");
        fs::write(root.path().join("ok.yaml"), "name: ok\n").expect("write");
        fs::create_dir(root.path().join("sub")).expect("mkdir");
        fs::write(root.path().join("sub/inner.log"), "line\n").expect("write");
        fs::write(
            outside.path().join("id_ed25519"),
            "-----BEGIN OPENSSH PRIVATE KEY-----\n",
        )
        .expect("write");
        (root, outside)
    }

    #[test]
    fn reads_regular_files_and_links_inside() {
        let (root, _o) = folder();
        let r = root.path();
        assert_eq!(
            read_in(r, &r.join("ok.yaml"), 100).expect("read"),
            b"name: ok\n"
        );
        symlink("sub/inner.log", r.join("link.log")).expect("symlink");
        assert_eq!(
            read_in(r, &r.join("link.log"), 100).expect("read"),
            b"line\n"
        );
        symlink("sub", r.join("linkdir")).expect("symlink");
        let files = files_under(r, r).expect("walk");
        assert_eq!(
            files,
            vec![
                r.join("link.log"),
                r.join("ok.yaml"),
                r.join("sub/inner.log")
            ]
        );
    }

    #[test]
    fn links_out_of_the_folder_are_refused() {
        let (root, outside) = folder();
        let r = root.path();
        let key = outside.path().join("id_ed25519");
        symlink(&key, r.join("x.yaml")).expect("symlink");
        let e = read_in(r, &r.join("x.yaml"), 100).expect_err("refused");
        assert!(matches!(e, ReadError::LinkOut { .. }), "{e}");
        assert!(e.to_string().contains("outside"), "{e}");
        // A linked folder out, and `..` through a link inside.
        symlink(outside.path(), r.join("nodes")).expect("symlink");
        assert!(matches!(
            files_under(r, r).expect_err("refused"),
            ReadError::LinkOut { .. }
        ));
        assert!(matches!(
            read_in(r, &r.join("nodes/id_ed25519"), 100).expect_err("refused"),
            ReadError::LinkOut { .. }
        ));
    }

    #[test]
    fn dev_zero_is_refused_without_reading() {
        let (root, _o) = folder();
        let r = root.path().to_path_buf();
        symlink("/dev/zero", r.join("zero.yaml")).expect("symlink");
        let e = guarded(move || read_in(&r, &r.join("zero.yaml"), 100)).expect_err("refused");
        // Out of the folder, so refused before its type matters; named, it is a device.
        assert!(matches!(e, ReadError::LinkOut { .. }), "{e}");
        let e = guarded(|| read_named(Path::new("/dev/zero"), 100)).expect_err("refused");
        assert!(e.to_string().contains("character device"), "{e}");
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let (root, _o) = folder();
        let r = root.path().to_path_buf();
        mkfifo(&r.join("pipe.yaml"));
        let (r1, r2) = (r.clone(), r.clone());
        let e = guarded(move || read_in(&r1, &r1.join("pipe.yaml"), 100)).expect_err("refused");
        assert!(e.to_string().contains("named pipe (FIFO)"), "{e}");
        assert!(e.to_string().contains("pipe.yaml"), "{e}");
        let e = guarded(move || files_under(&r2, &r2)).expect_err("refused");
        assert!(matches!(e, ReadError::NotRegular { .. }), "{e}");
    }

    #[test]
    fn oversized_files_are_refused() {
        let (root, _o) = folder();
        let r = root.path();
        fs::write(r.join("big.yaml"), vec![b'a'; 101]).expect("write");
        let e = read_in(r, &r.join("big.yaml"), 100).expect_err("refused");
        assert!(matches!(e, ReadError::TooLarge { .. }), "{e}");
        assert_eq!(
            read_in(r, &r.join("big.yaml"), 101).expect("read").len(),
            101
        );
    }

    #[test]
    fn writes_never_follow_a_link_planted_in_the_output_folder() {
        use std::os::unix::fs::PermissionsExt;
        let (root, outside) = folder();
        let out = root.path().join("out");
        fs::create_dir(&out).expect("mkdir");
        let victim = outside.path().join("id_ed25519");
        let before = fs::read(&victim).expect("read");
        // A link where the file goes: replaced, its target untouched.
        symlink(&victim, out.join("repro.1")).expect("symlink");
        let p = write_in(&out, Path::new("repro.1"), b"page").expect("written");
        assert_eq!(fs::read(&victim).expect("read"), before);
        let m = fs::symlink_metadata(&p).expect("meta");
        assert!(m.is_file());
        assert_eq!(m.permissions().mode() & 0o777, 0o600);
        assert_eq!(fs::read(&p).expect("read"), b"page");
        // A link where a folder goes: refused, nothing written through it.
        symlink(outside.path(), out.join("nodes")).expect("symlink");
        let e = write_in(&out, Path::new("nodes/x.log"), b"x").expect_err("refused");
        assert!(e.is_hostile(), "{e}");
        assert!(
            e.to_string().contains("a symbolic link where a folder"),
            "{e}"
        );
        assert!(!outside.path().join("x.log").exists());
        // New folders are owner-only.
        write_in(&out, Path::new("a/b/c.txt"), b"x").expect("written");
        assert_eq!(
            fs::metadata(out.join("a/b"))
                .expect("meta")
                .permissions()
                .mode()
                & 0o777,
            0o700
        );
        let e = write_in(&out, Path::new("../x"), b"x").expect_err("refused");
        assert!(matches!(e, WriteError::BadName { .. }), "{e}");
    }

    /// `--out` (#42): a regular file or a new path replaced, a character device written
    /// through, a FIFO, a link and a folder refused and left as they are.
    #[test]
    fn a_user_named_output_is_never_replaced_unless_a_file() {
        use std::os::unix::fs::FileTypeExt;
        let d = tempfile::tempdir().expect("tmp");
        let new = d.path().join("new/comment.md");
        assert_eq!(check_out(&new).expect("new path"), OutFile::Replace);
        write_out(&new, b"c").expect("written");
        assert_eq!(fs::read(&new).expect("read"), b"c");
        write_out(&new, b"d").expect("replaced");
        assert_eq!(fs::read(&new).expect("read"), b"d");
        let fifo = d.path().join("fifo");
        mkfifo(&fifo);
        let victim = d.path().join("victim");
        fs::write(&victim, "keep").expect("write");
        let link = d.path().join("link");
        symlink(&victim, &link).expect("symlink");
        for (p, word) in [
            (&fifo, "named pipe"),
            (&link, "symbolic link"),
            (&d.path().to_path_buf(), "folder"),
        ] {
            let e = guarded({
                let p = p.clone();
                move || write_out(&p, b"x").expect_err("refused")
            });
            assert!(e.to_string().contains(word), "{e}");
            assert!(check_out(p).is_err());
        }
        assert!(fs::symlink_metadata(&fifo)
            .expect("meta")
            .file_type()
            .is_fifo());
        assert!(fs::symlink_metadata(&link)
            .expect("meta")
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(&victim).expect("read"), b"keep");
        // a character device (the machine's null device, made here when repro runs as root)
        let null = d.path().join("null");
        let made = std::process::Command::new("mknod")
            .args([null.to_str().expect("utf-8"), "c", "1", "3"])
            .status()
            .is_ok_and(|s| s.success());
        let dev = if made {
            null
        } else {
            PathBuf::from("/dev/null")
        };
        assert_eq!(check_out(&dev).expect("a device"), OutFile::Device);
        write_out(&dev, b"through").expect("written through");
        assert!(fs::symlink_metadata(&dev)
            .expect("meta")
            .file_type()
            .is_char_device());
    }
}
