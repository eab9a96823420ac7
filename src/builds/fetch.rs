//! Downloading a published file and its sha256 sum into repro's cache: what `--k3s-commit`
//! ([`super::ci`]) and rke2's release artifacts ([`super::release`]) share — the HTTP agent, the
//! cache folder, reading a `sha256sum` file, a bounded streamed download hashed as it goes, and
//! URLs shown without their credentials.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

/// The most a `sha256sum` file may hold (one line, or rke2's few dozen).
pub(crate) const MAX_SUM_BYTES: u64 = 64 * 1024;
/// The most a download may be: a k3s binary is about 70 MB, rke2's tarball about 40 MB.
pub(crate) const MAX_DOWNLOAD_BYTES: u64 = 1 << 30;

/// Why a published file could not be had.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FetchError {
    /// The server has no such file (404/403): the input (a commit, a version) names nothing.
    #[error("{0}")]
    NotFound(String),
    /// The download does not match its published sum: refused.
    #[error("{0}")]
    Mismatch(String),
    /// The network, the server or the cache folder failed.
    #[error("{0}")]
    Failed(String),
}

/// Why a GET failed: the server has no such file (403/404: the input names nothing), or
/// anything else (the network, the server).
#[derive(Debug)]
pub(crate) enum GetError {
    Missing(u16),
    Failed(String),
}

/// The agent every download uses: a connection within 30 s, headers within 60 s (the body may
/// take as long as it takes; the bar shows it).
pub(crate) fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_connect(Some(Duration::from_secs(30)))
        .timeout_recv_response(Some(Duration::from_secs(60)))
        .build()
        .into()
}

/// GET `url` (which may carry credentials; messages name it without them).
pub(crate) fn get(
    agent: &ureq::Agent,
    url: &str,
) -> Result<ureq::http::Response<ureq::Body>, GetError> {
    agent.get(url).call().map_err(|e| match e {
        ureq::Error::StatusCode(code @ (403 | 404)) => GetError::Missing(code),
        e => GetError::Failed(format!("cannot download {}: {e}", without_userinfo(url))),
    })
}

/// The body of a small text file (a sum file), at most [`MAX_SUM_BYTES`].
pub(crate) fn read_text(
    mut resp: ureq::http::Response<ureq::Body>,
    shown: &str,
) -> Result<String, String> {
    let mut text = String::new();
    resp.body_mut()
        .with_config()
        .limit(MAX_SUM_BYTES)
        .reader()
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    Ok(text)
}

/// `$XDG_CACHE_HOME/repro/<kind>`, else `~/.cache/repro/<kind>`.
pub(crate) fn cache_root(kind: &str) -> Result<PathBuf, String> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .ok_or_else(|| "no cache folder: neither XDG_CACHE_HOME nor HOME is set".to_string())?;
    Ok(base.join("repro").join(kind))
}

/// The sum for `name` in a `sha256sum` file (`<hex>  <name>`, `*<name>` in binary mode).
pub(crate) fn sum_for(text: &str, name: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (sum, file) = l.trim().split_once(char::is_whitespace)?;
        let file = file.trim_start().trim_start_matches('*');
        (file == name && sum.len() == 64 && sum.chars().all(|c| c.is_ascii_hexdigit()))
            .then(|| sum.to_ascii_lowercase())
    })
}

/// `scheme://host/…` without a `user:password@` (kept only in the request itself).
pub(crate) fn without_userinfo(url: &str) -> String {
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

/// The sha256 of a file on disk, or `None` when it cannot be read.
pub(crate) fn file_sha256(path: &Path) -> Option<String> {
    let mut f = std::fs::File::open(path).ok()?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).ok()?;
    Some(hex(&h.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Streams the body into `part` (created new), hashing as it goes; returns the sum. `live`: a
/// progress bar on stderr, else one line naming the URL. On an error `part` may be left: the
/// caller removes it.
pub(crate) fn download(
    resp: ureq::http::Response<ureq::Body>,
    url: &str,
    part: &Path,
    live: bool,
) -> Result<String, String> {
    let len = resp.body().content_length();
    if len.is_some_and(|l| l > MAX_DOWNLOAD_BYTES) {
        return Err(format!(
            "{url} is {} bytes, more than repro downloads (at most {MAX_DOWNLOAD_BYTES})",
            len.unwrap_or_default()
        ));
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
    let failed = |e: std::io::Error| format!("cannot download {url}: {e}");
    let cannot_write = |e: std::io::Error| format!("cannot write {}: {e}", part.display());
    // Unlimited by ureq (its default limit is for text): bounded here instead.
    let mut reader = resp.into_body().into_reader().take(MAX_DOWNLOAD_BYTES + 1);
    let mut out = std::fs::File::create(part).map_err(cannot_write)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    let mut total = 0u64;
    loop {
        let n = reader.read(&mut buf).map_err(failed)?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > MAX_DOWNLOAD_BYTES {
            return Err(format!("{url} is more than {MAX_DOWNLOAD_BYTES} bytes"));
        }
        h.update(&buf[..n]);
        out.write_all(&buf[..n]).map_err(cannot_write)?;
        bar.inc(n as u64);
    }
    out.sync_all().map_err(cannot_write)?;
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
