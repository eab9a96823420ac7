//! `--k3s-commit SHA`: the CI build of a commit, fetched where k3s's install script fetches it
//! for `INSTALL_K3S_COMMIT` (install.sh at v1.34.1+k3s1: `${STORAGE_URL}/k3s${SUFFIX}-${COMMIT}`
//! and `.sha256sum` beside it, whose line for `k3s${SUFFIX}` holds the sum; see
//! docs/k3s-review-2026-12.md §2). The sum is checked before anything else happens, and the
//! verified file is cached under the user's cache folder (checked again on reuse).

use std::path::{Path, PathBuf};

use distro::Distro;

pub(crate) use super::fetch::FetchError;
use super::fetch::{self, GetError};
use crate::redact::without_userinfo;

/// Overrides the CI storage's base URL (a mirror, or a local server in tests).
pub(crate) const URL_ENV: &str = "REPRO_K3S_CI_URL";

/// A verified commit build on disk.
#[derive(Debug, Clone)]
pub(crate) struct Fetched {
    pub(crate) path: PathBuf,
    /// Where it came from.
    pub(crate) url: String,
}

/// `k3s`, `k3s-arm64`, …: install.sh's `SUFFIX` for the architecture the nodes run on (this
/// host's: the engine is local or of the same kind).
fn file_name(distro: Distro) -> String {
    let suffix = match std::env::consts::ARCH {
        "aarch64" => "-arm64",
        "arm" => "-armhf",
        "s390x" => "-s390x",
        _ => "",
    };
    format!("{}{suffix}", distro.facts().binary)
}

/// The storage's base URL: `REPRO_K3S_CI_URL`, else the distribution's.
pub(crate) fn base_url(distro: Distro) -> Result<String, FetchError> {
    if let Some(u) = std::env::var(URL_ENV).ok().filter(|u| !u.trim().is_empty()) {
        return Ok(u.trim().trim_end_matches('/').to_string());
    }
    distro
        .facts()
        .ci_builds_url
        .map(str::to_string)
        .ok_or_else(|| {
            FetchError::NotFound(format!(
                "no CI storage of {distro} commit builds is known; set {URL_ENV}"
            ))
        })
}

/// The commit build of `sha` (full, lowercase), from the cache if a verified copy is there,
/// else downloaded and verified. `live`: a progress bar on stderr.
pub(crate) fn fetch(distro: Distro, sha: &str, live: bool) -> Result<Fetched, FetchError> {
    let name = file_name(distro);
    let base = base_url(distro)?;
    let url = format!("{base}/{name}-{sha}");
    let sum_url = format!("{url}.sha256sum");
    // What is said and recorded: a `user:password@` in REPRO_K3S_CI_URL never reaches output.
    let (shown, shown_sum) = (without_userinfo(&url), without_userinfo(&sum_url));
    let dir = fetch::cache_root("builds")
        .map_err(FetchError::Failed)?
        .join(sha);
    let (bin, sum_file) = (dir.join(&name), dir.join(format!("{name}.sha256sum")));
    if let Some(sum) = cached(&bin, &sum_file, &name) {
        errln!(
            "repro: the build of {sha} is cached and verified (sha256 {sum}): {}",
            bin.display()
        );
        return Ok(Fetched {
            path: bin,
            url: shown,
        });
    }
    let agent = fetch::agent();
    let get = |real: &str| {
        fetch::get(&agent, real).map_err(|e| match e {
            GetError::Missing(code) => FetchError::NotFound(format!(
                "no CI build of commit {sha} at {} (HTTP {code}); k3s's CI uploaded builds of every commit it built until about November 2025 (later ones are GitHub Actions artifacts, which need a token); check the SHA, or set {URL_ENV} to the storage that has it",
                without_userinfo(real)
            )),
            GetError::Failed(m) => FetchError::Failed(m),
        })
    };
    let text = fetch::read_text(get(&sum_url)?, &shown_sum).map_err(FetchError::Failed)?;
    let expected = fetch::sum_for(&text, &name).ok_or_else(|| {
        FetchError::Failed(format!(
            "{shown_sum} has no sha256 line for `{name}` (expected `<64 hex>  {name}`, as sha256sum writes it)"
        ))
    })?;
    let mkdir = |p: &Path| {
        crate::safe_fs::private_dir(p)
            .map_err(|e| FetchError::Failed(format!("cannot create {}: {e}", p.display())))
    };
    mkdir(&dir)?;
    let part = dir.join(format!("{name}.part-{}", std::process::id()));
    let got = fetch::download(get(&url)?, &shown, &part, live, fetch::MAX_DOWNLOAD_BYTES)
        .map_err(FetchError::Failed);
    let got = match got {
        Ok(got) => got,
        Err(e) => {
            let _ = std::fs::remove_file(&part);
            return Err(e);
        }
    };
    if got != expected {
        let _ = std::fs::remove_file(&part);
        return Err(FetchError::Mismatch(format!(
            "the download of {shown} has sha256 {got}, but {shown_sum} says {expected}: refused, nothing was created (a corrupted or replaced file; try again, or check the storage)"
        )));
    }
    let failed =
        |e: std::io::Error| FetchError::Failed(format!("cannot write {}: {e}", dir.display()));
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&part, std::fs::Permissions::from_mode(0o755)).map_err(failed)?;
    }
    std::fs::rename(&part, &bin).map_err(failed)?;
    std::fs::write(&sum_file, format!("{expected}  {name}\n")).map_err(failed)?;
    errln!("repro: downloaded and verified the build of {sha} (sha256 {got})");
    Ok(Fetched {
        path: bin,
        url: shown,
    })
}

/// The cached binary's sum if it still matches the sum file beside it; a stale or damaged copy
/// is removed (and downloaded again).
fn cached(bin: &Path, sum_file: &Path, name: &str) -> Option<String> {
    let text = std::fs::read_to_string(sum_file).ok()?;
    let want = fetch::sum_for(&text, name);
    let have = fetch::file_sha256(bin)?;
    if want.as_deref() == Some(have.as_str()) {
        return Some(have);
    }
    errln!(
        "repro: the cached {} does not match its sum; downloading it again",
        bin.display()
    );
    let _ = std::fs::remove_file(bin);
    let _ = std::fs::remove_file(sum_file);
    None
}
