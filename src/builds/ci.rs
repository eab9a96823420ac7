//! `--k3s-commit SHA`: the CI build of a commit, fetched where k3s's install script fetches it
//! for `INSTALL_K3S_COMMIT` (install.sh at v1.34.1+k3s1: `${STORAGE_URL}/k3s${SUFFIX}-${COMMIT}`
//! and `.sha256sum` beside it, whose line for `k3s${SUFFIX}` holds the sum; see
//! docs/k3s-review-2026-12.md §2). The sum is checked before anything else happens, and the
//! verified file is cached under the user's cache folder (checked again on reuse).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use distro::Distro;
use sha2::{Digest, Sha256};

/// Overrides the CI storage's base URL (a mirror, or a local server in tests).
pub(crate) const URL_ENV: &str = "REPRO_K3S_CI_URL";

/// The most a `.sha256sum` file may hold (it is one line).
const MAX_SUM_BYTES: u64 = 64 * 1024;
/// The most a binary may be (a k3s binary is about 70 MB).
const MAX_BINARY_BYTES: u64 = 1 << 30;

/// A verified commit build on disk.
#[derive(Debug, Clone)]
pub(crate) struct Fetched {
    pub(crate) path: PathBuf,
    /// Where it came from.
    pub(crate) url: String,
}

/// Why a commit build could not be had.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FetchError {
    /// The storage has no build of that commit (404/403): the commit given is the problem.
    #[error("{0}")]
    NoBuild(String),
    /// The download does not match its published sum: refused.
    #[error("{0}")]
    Mismatch(String),
    /// The network, the storage or the cache folder failed.
    #[error("{0}")]
    Failed(String),
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
            FetchError::NoBuild(format!(
                "no CI storage of {distro} commit builds is known; set {URL_ENV}"
            ))
        })
}

/// `$XDG_CACHE_HOME/repro/builds`, else `~/.cache/repro/builds`.
fn cache_root() -> Result<PathBuf, FetchError> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .ok_or_else(|| {
            FetchError::Failed("no cache folder: neither XDG_CACHE_HOME nor HOME is set".into())
        })?;
    Ok(base.join("repro").join("builds"))
}

/// The sum for `name` in a `sha256sum` file (`<hex>  <name>`, `*<name>` in binary mode).
fn sum_for(text: &str, name: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (sum, file) = l.trim().split_once(char::is_whitespace)?;
        let file = file.trim_start().trim_start_matches('*');
        (file == name && sum.len() == 64 && sum.chars().all(|c| c.is_ascii_hexdigit()))
            .then(|| sum.to_ascii_lowercase())
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
    let dir = cache_root()?.join(sha);
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
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_connect(Some(Duration::from_secs(30)))
        .timeout_recv_response(Some(Duration::from_secs(60)))
        .build()
        .into();
    let get = |real: &str| {
        let u = without_userinfo(real);
        agent.get(real).call().map_err(|e| match e {
            ureq::Error::StatusCode(code @ (403 | 404)) => FetchError::NoBuild(format!(
                "no CI build of commit {sha} at {u} (HTTP {code}); k3s's CI uploaded builds of every commit it built until about November 2025 (later ones are GitHub Actions artifacts, which need a token); check the SHA, or set {URL_ENV} to the storage that has it"
            )),
            e => FetchError::Failed(format!("cannot download {u}: {e}")),
        })
    };
    let mut resp = get(&sum_url)?;
    let mut text = String::new();
    resp.body_mut()
        .with_config()
        .limit(MAX_SUM_BYTES)
        .reader()
        .read_to_string(&mut text)
        .map_err(|e| FetchError::Failed(format!("cannot read {shown_sum}: {e}")))?;
    let expected = sum_for(&text, &name).ok_or_else(|| {
        FetchError::Failed(format!(
            "{shown_sum} has no sha256 line for `{name}` (expected `<64 hex>  {name}`, as sha256sum writes it)"
        ))
    })?;
    let mkdir = |p: &Path| {
        crate::results_folder::private_dir(p)
            .map_err(|e| FetchError::Failed(format!("cannot create {}: {e}", p.display())))
    };
    mkdir(&dir)?;
    let part = dir.join(format!("{name}.part-{}", std::process::id()));
    let got = download(get(&url)?, &shown, &part, live);
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

/// `scheme://host/…` without a `user:password@` (kept only in the request itself).
fn without_userinfo(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            match authority.rsplit_once('@') {
                Some((_, host)) => format!("{scheme}://{host}{path}"),
                None => url.to_string(),
            }
        }
        None => url.to_string(),
    }
}

/// The cached binary's sum if it still matches the sum file beside it; a stale or damaged copy
/// is removed (and downloaded again).
fn cached(bin: &Path, sum_file: &Path, name: &str) -> Option<String> {
    let text = std::fs::read_to_string(sum_file).ok()?;
    let want = sum_for(&text, name);
    let mut f = std::fs::File::open(bin).ok()?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).ok()?;
    let have = hex(&h.finalize());
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

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Streams the body into `part`, hashing as it goes; returns the sum.
fn download(
    resp: ureq::http::Response<ureq::Body>,
    url: &str,
    part: &Path,
    live: bool,
) -> Result<String, FetchError> {
    let len = resp.body().content_length();
    if len.is_some_and(|l| l > MAX_BINARY_BYTES) {
        return Err(FetchError::Failed(format!(
            "{url} is {} bytes, more than any k3s binary",
            len.unwrap_or_default()
        )));
    }
    let bar = if live {
        let bar = indicatif::ProgressBar::new(len.unwrap_or(0));
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {eta}",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message("downloading");
        bar
    } else {
        errln!("repro: downloading {url}");
        indicatif::ProgressBar::hidden()
    };
    let failed = |e: std::io::Error| FetchError::Failed(format!("cannot download {url}: {e}"));
    // Unlimited by ureq (its default limit is for text): bounded here instead.
    let mut reader = resp.into_body().into_reader().take(MAX_BINARY_BYTES + 1);
    let mut out = std::fs::File::create(part)
        .map_err(|e| FetchError::Failed(format!("cannot write {}: {e}", part.display())))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    let mut total = 0u64;
    loop {
        let n = reader.read(&mut buf).map_err(failed)?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > MAX_BINARY_BYTES {
            return Err(FetchError::Failed(format!(
                "{url} is more than {MAX_BINARY_BYTES} bytes"
            )));
        }
        h.update(&buf[..n]);
        out.write_all(&buf[..n])
            .map_err(|e| FetchError::Failed(format!("cannot write {}: {e}", part.display())))?;
        bar.inc(n as u64);
    }
    out.sync_all()
        .map_err(|e| FetchError::Failed(format!("cannot write {}: {e}", part.display())))?;
    bar.finish_and_clear();
    Ok(hex(&h.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_in_the_url_are_never_shown() {
        assert_eq!(
            without_userinfo("https://user:s3cret@mirror.local:8443/k3s/k3s-abc"),
            "https://mirror.local:8443/k3s/k3s-abc"
        );
        assert_eq!(
            without_userinfo("http://127.0.0.1:1/k3s-abc"),
            "http://127.0.0.1:1/k3s-abc"
        );
        // An `@` in the path is not userinfo.
        assert_eq!(
            without_userinfo("https://host/a@b/k3s"),
            "https://host/a@b/k3s"
        );
    }

    #[test]
    fn the_sum_is_found_by_the_file_name() {
        let sum = "ab".repeat(32);
        assert_eq!(sum_for(&format!("{sum}  k3s\n"), "k3s"), Some(sum.clone()));
        assert_eq!(sum_for(&format!("{sum} *k3s\n"), "k3s"), Some(sum.clone()));
        assert_eq!(sum_for(&format!("{sum}  k3s-arm64\n"), "k3s"), None);
        assert_eq!(sum_for("xyz  k3s\n", "k3s"), None);
    }
}
