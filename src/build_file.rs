//! A binary file that says it is a distribution's build: its sha256, size and the version it
//! carries, read once. Below the checks (an `upgrade:` to `{binary: PATH}` is validated when the
//! check loads) and the builds under test (`--k3s-binary`), which both read binaries this way.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use distro::reported::Reported;
use distro::sim_stamp::SimStamp;
use distro::Distro;
use sha2::{Digest, Sha256};

/// The largest binary taken: a k3s binary is about 70 MB; a bigger file is no k3s build (and a
/// device would be read without end).
const MAX_BINARY_BYTES: u64 = 1 << 30;

/// What a binary says it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BuildFile {
    /// Lowercase hex sha256 of the file.
    pub(crate) sha256: String,
    pub(crate) size: u64,
    pub(crate) reported: Reported,
}

impl BuildFile {
    /// Reads `path` (a regular file, at most 1 GiB): its sha256, and the version it carries;
    /// an error names the file.
    pub(crate) fn read(distro: Distro, path: &Path) -> Result<BuildFile, String> {
        let bytes = read_bounded(path)?;
        let text = version_text(distro, &bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        let reported =
            Reported::parse(distro, &text).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(BuildFile {
            sha256: sha256_hex(&bytes),
            size: bytes.len() as u64,
            reported,
        })
    }
}

impl BuildFile {
    /// Reads `path` as a build of whichever distribution it says it is (`--k3s-binary` takes
    /// k3s's and rke2's): the one distribution, among those whose builds run under test
    /// (`Facts::binary_path`), of which it carries exactly one version. A stand-in's stamp says
    /// its version, and so its distribution; a file that reads as none, or as more than one,
    /// is an error naming the file.
    pub(crate) fn read_any(path: &Path) -> Result<(Distro, BuildFile), String> {
        let bytes = read_bounded(path)?;
        let candidates: Vec<Distro> = (Distro::ALL.iter().copied())
            .filter(|d| d.facts().binary_path.is_some())
            .collect();
        let mut read: Vec<(Distro, Result<Reported, String>)> = (candidates.iter())
            .map(|&d| {
                (
                    d,
                    version_text(d, &bytes).and_then(|t| Reported::parse(d, &t)),
                )
            })
            .collect();
        let one = |(d, r): (Distro, Result<Reported, String>)| {
            r.map(|reported| {
                let b = BuildFile {
                    sha256: sha256_hex(&bytes),
                    size: bytes.len() as u64,
                    reported,
                };
                (d, b)
            })
            .map_err(|e| format!("{}: {e}", path.display()))
        };
        let ok: Vec<usize> = (0..read.len()).filter(|&i| read[i].1.is_ok()).collect();
        match ok.as_slice() {
            [i] => one(read.swap_remove(*i)),
            [] => {
                // Said as the first distribution's (k3s's) error: the usual build under test.
                one(read.swap_remove(0))
            }
            _ => Err(format!(
                "{}: it carries versions of {} at once, so it does not say which build it is",
                path.display(),
                ok.iter()
                    .map(|&i| read[i].0.to_string())
                    .collect::<Vec<_>>()
                    .join(" and ")
            )),
        }
    }
}

/// `--k3s-commit`, or an `upgrade:` to `{commit: SHA}`: the full 40-hex commit (lowercased).
/// k3s's CI names each build by the full hash (scripts/build-upload: `k3s-${COMMIT}`, COMMIT
/// from `git log --pretty=%H`), so a short one names no file.
pub(crate) fn parse_commit(s: &str) -> Result<String, String> {
    let t = s.trim();
    let hex = !t.is_empty() && t.chars().all(|c| c.is_ascii_hexdigit());
    if hex && t.len() == 40 {
        return Ok(t.to_ascii_lowercase());
    }
    if hex && t.len() < 40 {
        return Err(format!(
            "`{t}` is a short commit ({} hex digits); k3s's CI storage names builds by the full 40-hex commit, so give it in full (`git rev-parse {t}` in a k3s checkout)",
            t.len()
        ));
    }
    Err(format!(
        "`{t}` is not a commit; give the full 40-hex SHA, e.g. from `git log --format=%H` in a k3s checkout"
    ))
}

/// A commit's CI build on disk, verified, and where it came from.
pub(crate) type CommitBuild = Result<(PathBuf, String), String>;

/// How a check's `{commit: SHA}` finds its build: the commands set it once to their fetcher
/// (`builds::ci`: download, verify, cache), so checks load without reaching up to it.
static COMMIT_BUILDS: OnceLock<fn(Distro, &str) -> CommitBuild> = OnceLock::new();

/// Sets how commit builds are fetched (the first call wins).
pub(crate) fn set_commit_builds(fetch: fn(Distro, &str) -> CommitBuild) {
    let _ = COMMIT_BUILDS.set(fetch);
}

/// The CI build of `sha`, fetched as the commands do.
pub(crate) fn commit_build(distro: Distro, sha: &str) -> CommitBuild {
    match COMMIT_BUILDS.get() {
        Some(fetch) => fetch(distro, sha),
        None => Err("commit builds are fetched by repro's commands; none runs here".into()),
    }
}

fn read_bounded(path: &Path) -> Result<Vec<u8>, String> {
    let cannot = |e: std::io::Error| format!("cannot read {}: {e}", path.display());
    let file = std::fs::File::open(path).map_err(cannot)?;
    let meta = file.metadata().map_err(cannot)?;
    if !meta.is_file() {
        return Err(format!("{} is not a regular file", path.display()));
    }
    if meta.len() > MAX_BINARY_BYTES {
        return Err(format!(
            "{} is {} bytes, more than any k3s binary (at most {MAX_BINARY_BYTES})",
            path.display(),
            meta.len()
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_BINARY_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    Ok(bytes)
}

/// Lowercase hex sha256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The version a binary carries, as `-v` would print it after `<binary> version `. A stamped
/// stand-in says it in its stamp (`repro sim binary`). A k3s build carries it as the string
/// k3s's build sets with `-X …/pkg/version.Version=$VERSION` (scripts/package-cli), which the Go
/// linker stores verbatim: exactly one release, candidate or commit-build version must occur.
fn version_text(distro: Distro, bytes: &[u8]) -> Result<String, String> {
    let tail = &bytes[bytes.len().saturating_sub(SimStamp::TAIL_BYTES)..];
    if let Some(stamp) = SimStamp::find(tail) {
        return Ok(stamp.version);
    }
    let facts = distro.facts();
    let marker = regex::escape(facts.build_marker);
    let re = regex::bytes::Regex::new(&format!(
        r"v[0-9]{{1,3}}\.[0-9]{{1,3}}\.[0-9]{{1,4}}(?:-rc[0-9]{{1,3}})?\+{marker}(?:-[0-9a-f]{{8}}(?:-dirty)?|[0-9]{{1,3}})"
    ))
    .map_err(|e| e.to_string())?;
    let mut found: Vec<String> = Vec::new();
    for m in re.find_iter(bytes) {
        let s = String::from_utf8_lossy(m.as_bytes()).into_owned();
        if !found.contains(&s) {
            found.push(s);
        }
    }
    match found.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(format!(
            "no {} version in this file (a {} build carries one like {} or v1.30.6+{}-48a3b849); a plain `go build` without k3s's version flags reports `dev`, which no run can place: build with k3s's scripts (make, scripts/build)",
            facts.name, facts.name, facts.example_version, facts.build_marker
        )),
        many => Err(format!(
            "more than one {} version in this file ({}), so it does not say which it is",
            facts.name,
            many.join(", ")
        )),
    }
}
