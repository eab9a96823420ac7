//! Downloading a published file and its sha256 sum into repro's cache: what `--k3s-commit`
//! ([`super::ci`]) and rke2's release artifacts ([`super::release`]) share — the HTTP agent, the
//! cache folder, reading a `sha256sum` file, a bounded streamed download hashed as it goes, and
//! URLs shown without their credentials.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use sha2::{Digest, Sha256};

/// The most a `sha256sum` file may hold (one line, or rke2's few dozen).
pub(crate) const MAX_SUM_BYTES: u64 = 64 * 1024;
/// The most a download may be: a k3s binary is about 70 MB, rke2's tarball about 40 MB.
pub(crate) const MAX_DOWNLOAD_BYTES: u64 = 1 << 30;
/// The most rke2's air-gap images tarball may be, downloaded or given in `--artifacts` (about
/// 800 MB at v1.32.5+rke2r1).
pub(crate) const MAX_IMAGES_BYTES: u64 = 4 << 30;

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

/// How long a server may send nothing — no headers, no byte of the body — before the download
/// is given up (`REPRO_DOWNLOAD_STALL`, e.g. `10s`, shortens or lengthens it).
pub(crate) const STALL_ENV: &str = "REPRO_DOWNLOAD_STALL";
const DEFAULT_STALL: Duration = Duration::from_secs(60);
/// The longest a whole download may take, however steadily it trickles in.
const MAX_BODY_TIME: Duration = Duration::from_secs(2 * 3600);

/// The stall timeout: [`STALL_ENV`] when it is a duration above zero, else 60 s.
pub(crate) fn stall() -> Duration {
    std::env::var(STALL_ENV)
        .ok()
        .and_then(|v| humantime::parse_duration(v.trim()).ok())
        .filter(|d| !d.is_zero())
        .unwrap_or(DEFAULT_STALL)
}

/// The agent every download uses: a connection within 30 s, headers within the stall timeout,
/// the whole body within two hours; each chunk of the body within the stall timeout is
/// [`download`]'s and [`read_text`]'s (ureq has no timeout per read).
pub(crate) fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_connect(Some(Duration::from_secs(30)))
        .timeout_recv_response(Some(stall()))
        .timeout_recv_body(Some(MAX_BODY_TIME))
        .build()
        .into()
}

/// Set by [`abandon`]: every download in progress stops at its next chunk.
static ABANDONED: AtomicBool = AtomicBool::new(false);
/// The partial files being written (`<name>.part-<pid>`), removed by [`abandon`].
static PARTS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// An interrupt during a download: stop every download and remove its partial file, so nothing
/// half-written is left in the cache (the command then exits 130).
pub(crate) fn abandon() {
    ABANDONED.store(true, Ordering::SeqCst);
    let parts = std::mem::take(&mut *PARTS.lock().unwrap_or_else(|p| p.into_inner()));
    for p in parts {
        let _ = std::fs::remove_file(p);
    }
}

/// The chunks of `body`, read on a thread of its own so that each can be waited for with a
/// timeout: a server that stops sending ends the download after [`stall`], with `shown`'s name,
/// instead of hanging. The thread, blocked in its read, ends with the process (or when ureq's
/// whole-body timeout fires).
fn chunks(
    body: impl Read + Send + 'static,
    shown: &str,
) -> impl Iterator<Item = Result<Vec<u8>, String>> {
    let (tx, rx) = std::sync::mpsc::sync_channel::<std::io::Result<Vec<u8>>>(4);
    std::thread::spawn(move || {
        let mut body = body;
        loop {
            let mut buf = vec![0u8; 256 * 1024];
            match body.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    buf.truncate(n);
                    if tx.send(Ok(buf)).is_err() {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let _ = tx.send(Err(e));
                    break;
                }
            }
        }
    });
    let (shown, stall) = (shown.to_string(), stall());
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        // Waited for in slices: an interrupt ([`abandon`]) is heard within a quarter second,
        // not after the whole stall timeout (the runtime waits for this thread at exit).
        let since = std::time::Instant::now();
        let next = loop {
            let left = stall.saturating_sub(since.elapsed());
            match rx.recv_timeout(left.min(Duration::from_millis(250))) {
                Err(std::sync::mpsc::RecvTimeoutError::Timeout)
                    if !left.is_zero() && !ABANDONED.load(Ordering::SeqCst) =>
                {
                    continue
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout)
                    if ABANDONED.load(Ordering::SeqCst) =>
                {
                    done = true;
                    return Some(Err(format!("the download of {shown} was interrupted")));
                }
                other => break other,
            }
        };
        match next {
            Ok(Ok(chunk)) => Some(Ok(chunk)),
            Ok(Err(e)) => {
                done = true;
                Some(Err(format!("cannot download {shown}: {e}")))
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                done = true;
                Some(Err(format!(
                    "cannot download {shown}: the server sent nothing for {} (stalled); try again, or set {STALL_ENV} to wait longer",
                    humantime::format_duration(stall)
                )))
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => None,
        }
    })
}

/// GET `url` (which may carry credentials; messages name it without them).
pub(crate) fn get(
    agent: &ureq::Agent,
    url: &str,
) -> Result<ureq::http::Response<ureq::Body>, GetError> {
    agent.get(url).call().map_err(|e| match e {
        ureq::Error::StatusCode(code @ (403 | 404)) => GetError::Missing(code),
        e => GetError::Failed(format!(
            "cannot download {}: {e}",
            crate::redact::without_userinfo(url)
        )),
    })
}

/// The body of a small text file (a sum file), at most [`MAX_SUM_BYTES`].
pub(crate) fn read_text(
    resp: ureq::http::Response<ureq::Body>,
    shown: &str,
) -> Result<String, String> {
    let reader = resp
        .into_body()
        .into_with_config()
        .limit(MAX_SUM_BYTES)
        .reader();
    let mut bytes = Vec::new();
    for chunk in chunks(reader, shown) {
        bytes.extend_from_slice(&chunk.map_err(|e| e.replace("cannot download", "cannot read"))?);
    }
    String::from_utf8(bytes).map_err(|e| format!("cannot read {shown}: not text ({e})"))
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

/// The sum for `name` in a `sha256sum` file (`<hex>  <name>`, `*<name>` in binary mode). A
/// byte-order mark (a file saved by a Windows editor) is not part of the first sum.
pub(crate) fn sum_for(text: &str, name: &str) -> Option<String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text.lines().find_map(|l| {
        let (sum, file) = l.trim().split_once(char::is_whitespace)?;
        let file = file.trim_start().trim_start_matches('*');
        (file == name && sum.len() == 64 && sum.chars().all(|c| c.is_ascii_hexdigit()))
            .then(|| sum.to_ascii_lowercase())
    })
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

/// Streams the body into `part` (created new), hashing as it goes, never more than `max`
/// bytes ([`MAX_DOWNLOAD_BYTES`], or [`MAX_IMAGES_BYTES`] for rke2's images tarball); returns
/// the sum. `live`: a progress bar on stderr, else one line naming the URL. On an error `part`
/// may be left: the caller removes it.
pub(crate) fn download(
    resp: ureq::http::Response<ureq::Body>,
    url: &str,
    part: &Path,
    live: bool,
    max: u64,
) -> Result<String, String> {
    let len = resp.body().content_length();
    if len.is_some_and(|l| l > max) {
        return Err(format!(
            "{url} is {} bytes, more than repro downloads (at most {max})",
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
    let cannot_write = |e: std::io::Error| format!("cannot write {}: {e}", part.display());
    // Unlimited by ureq (its default limit is for text): bounded here instead.
    let reader = resp.into_body().into_reader().take(max + 1);
    if ABANDONED.load(Ordering::SeqCst) {
        return Err(format!("the download of {url} was interrupted"));
    }
    PARTS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(part.to_path_buf());
    let mut out = std::fs::File::create(part).map_err(cannot_write)?;
    let mut h = Sha256::new();
    let mut total = 0u64;
    let result = (|| {
        for chunk in chunks(reader, url) {
            let chunk = chunk?;
            if ABANDONED.load(Ordering::SeqCst) {
                return Err(format!("the download of {url} was interrupted"));
            }
            total += chunk.len() as u64;
            if total > max {
                return Err(format!("{url} is more than {max} bytes"));
            }
            h.update(&chunk);
            out.write_all(&chunk).map_err(cannot_write)?;
            bar.inc(chunk.len() as u64);
        }
        out.sync_all().map_err(cannot_write)
    })();
    PARTS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .retain(|p| p != part);
    if ABANDONED.load(Ordering::SeqCst) {
        let _ = std::fs::remove_file(part);
        return Err(format!("the download of {url} was interrupted"));
    }
    result?;
    bar.finish_and_clear();
    Ok(hex(&h.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sum_is_found_by_the_file_name() {
        let sum = "ab".repeat(32);
        assert_eq!(sum_for(&format!("{sum}  k3s\n"), "k3s"), Some(sum.clone()));
        assert_eq!(sum_for(&format!("{sum} *k3s\n"), "k3s"), Some(sum.clone()));
        assert_eq!(sum_for(&format!("{sum}  k3s-arm64\n"), "k3s"), None);
        assert_eq!(sum_for("xyz  k3s\n", "k3s"), None);
    }
}
