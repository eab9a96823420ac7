//! Following one node's log, split into boots.
//!
//! `docker logs` of a restarted container still holds every earlier boot, so a wait that looks
//! at the whole log matches an old boot (k3d #1526). Here every boot has its own follower that
//! keeps only lines written after the previous boot's last line, and every wait looks at the
//! current boot only. Waiters are woken by a change counter, never by polling.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use regex::Regex;
use tokio::sync::watch;

use crate::docker::DockerApi;

use super::record::RecordError;

/// Called for every new line of a node (for progress display).
pub type OnLine = Arc<dyn Fn(&str, &LogLine) + Send + Sync>;
/// Applied to every line before it is kept or written (removes the run's secrets).
pub type Scrub = Arc<dyn Fn(String) -> String + Send + Sync>;

#[derive(Debug, Clone)]
pub struct LogLine {
    /// Docker's timestamp for the line (the engine's clock).
    pub ts: DateTime<Utc>,
    /// When repro saw it (for settle windows and latency figures).
    pub seen: Instant,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// The container exited while repro was not stopping it.
    Died {
        exit_code: Option<i64>,
        at: String,
        oom: bool,
    },
    /// repro stopped it (restart or teardown).
    Stopped { at: String },
    /// The log stream broke and the container state could not be read.
    Lost { reason: String },
}

#[derive(Debug)]
pub struct Boot {
    pub number: u32,
    pub step: usize,
    pub started_at: DateTime<Utc>,
    pub lines: Vec<LogLine>,
    /// Index into `lines` of the first readiness line.
    pub ready: Option<usize>,
    pub end: Option<Ended>,
    pub log_path: PathBuf,
    /// Why this boot's log file could not be written, if it could not (reported by the run).
    pub write_error: Option<std::io::Error>,
}

impl Boot {
    pub fn last_ts(&self) -> Option<DateTime<Utc>> {
        self.lines.last().map(|l| l.ts)
    }
}

/// One boot, shared between its follower and its waiters.
#[derive(Clone)]
pub struct BootHandle {
    pub boot: Arc<Mutex<Boot>>,
    changed: watch::Receiver<u64>,
}

impl BootHandle {
    /// Runs `f` on the boot; the lock is held only for `f`.
    pub fn with<R>(&self, f: impl FnOnce(&Boot) -> R) -> R {
        let b = self.boot.lock().unwrap_or_else(|p| p.into_inner());
        f(&b)
    }

    /// Waits until `done` returns Some, re-checking on every new line or end of the boot.
    /// Returns None if the boot's follower is gone and `done` still says None.
    pub async fn wait_for<R>(&self, mut done: impl FnMut(&Boot) -> Option<R>) -> Option<R> {
        let mut rx = self.changed.clone();
        loop {
            if let Some(r) = self.with(&mut done) {
                return Some(r);
            }
            if rx.changed().await.is_err() {
                return self.with(&mut done);
            }
        }
    }

    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.clone()
    }

    /// Takes the error of writing this boot's log file, if there was one.
    pub fn take_write_error(&self) -> Option<RecordError> {
        let mut b = self.boot.lock().unwrap_or_else(|p| p.into_inner());
        let source = b.write_error.take()?;
        Some(RecordError::Write {
            path: b.log_path.clone(),
            source,
        })
    }

    /// Waits until the follower has finished (the container stopped and its log drained).
    pub async fn ended(&self) {
        self.wait_for(|b| b.end.as_ref().map(|_| ())).await;
    }
}

/// A boot to follow: it has just been started.
pub struct Follow {
    pub docker: Arc<dyn DockerApi>,
    pub container: String,
    pub number: u32,
    pub step: usize,
    pub started_at: DateTime<Utc>,
    /// The last line time of the previous boot: lines at or before it belong to earlier boots.
    pub after: Option<DateTime<Utc>>,
    /// Lines that say the boot is ready.
    pub ready: Vec<Regex>,
    /// Where this boot's own log is written.
    pub log_path: PathBuf,
    pub on_line: OnLine,
    /// Set while repro stops the container: its exit is then not a death.
    pub stopping: Arc<std::sync::atomic::AtomicBool>,
    pub scrub: Scrub,
}

/// Starts following a boot.
pub fn follow(f: Follow) -> BootHandle {
    let Follow {
        docker,
        container,
        number,
        step,
        started_at,
        after,
        ready,
        log_path,
        on_line,
        stopping,
        scrub,
    } = f;
    let (tx, rx) = watch::channel(0u64);
    let boot = Arc::new(Mutex::new(Boot {
        number,
        step,
        started_at,
        lines: Vec::new(),
        ready: None,
        end: None,
        log_path: log_path.clone(),
        write_error: None,
    }));
    let handle = BootHandle {
        boot: boot.clone(),
        changed: rx,
    };
    tokio::spawn(async move {
        // A log file that cannot be written is kept as the boot's `write_error` for the run to
        // report; the lines stay in memory, so the verdict does not depend on it.
        let mut write_error = None;
        let mut file = match crate::report::private_file(&log_path) {
            Ok(f) => Some(f),
            Err(e) => {
                write_error = Some(e);
                None
            }
        };
        let mut since = after.map_or(0, |t| t.timestamp());
        let mut last = after;
        let mut bufs = [LineSplitter::default(), LineSplitter::default()];
        let mut tick = 0u64;
        let mut push = |raw: &[u8], cut: usize, last: &mut Option<DateTime<Utc>>| {
            let Some(mut line) = parse_line(raw) else {
                return;
            };
            if cut > 0 {
                line.text
                    .push_str(&format!(" [repro: {cut} more bytes of this line not kept]"));
            }
            line.text = scrub(std::mem::take(&mut line.text));
            if last.is_some_and(|t| line.ts <= t) {
                return;
            }
            *last = Some(line.ts);
            if let Some(f) = file.as_mut() {
                if let Err(e) = writeln!(
                    f,
                    "{} {}",
                    line.ts.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true),
                    line.text
                ) {
                    write_error = Some(e);
                    file = None;
                }
            }
            on_line(&container, &line);
            let mut b = boot.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(e) = write_error.take() {
                b.write_error.get_or_insert(e);
            }
            if b.ready.is_none() && ready.iter().any(|r| r.is_match(&line.text)) {
                b.ready = Some(b.lines.len());
            }
            b.lines.push(line);
            drop(b);
            tick += 1;
            let _ = tx.send(tick);
        };
        // The stream ends when the container stops; a broken stream is reopened where it was.
        let mut attempts = 0;
        let end = loop {
            let mut stream = Box::pin(docker.follow_logs(&container, since));
            let mut broke = None;
            let mut stalled = false;
            loop {
                // Docker 20.10's follower can stop delivering while the container goes on
                // writing (a flood at boot): after a silence, the stream is reopened from the
                // last line's time. Lines at or before it are dropped by timestamp below, and a
                // partial line is not flushed (the reopened stream sends it whole), so nothing
                // is doubled or lost. A quiet node costs one cheap reopen per silence.
                let item = match tokio::time::timeout(STALL, stream.next()).await {
                    Ok(Some(item)) => item,
                    Ok(None) => break,
                    Err(_) => {
                        stalled = true;
                        break;
                    }
                };
                match item {
                    Ok(chunk) => {
                        bufs[usize::from(chunk.stderr)]
                            .feed(&chunk.bytes, |raw, cut| push(raw, cut, &mut last));
                    }
                    Err(e) => {
                        broke = Some(e.to_string());
                        break;
                    }
                }
            }
            drop(stream);
            if stalled {
                // Also while repro stops it: the reopened stream drains and then ends.
                for buf in &mut bufs {
                    buf.discard();
                }
                since = last.map_or(since, |t| t.timestamp());
                continue;
            }
            for buf in &mut bufs {
                buf.finish(|raw, cut| push(raw, cut, &mut last));
            }
            // Repro is stopping it and the stream ended cleanly: the container is down and its
            // log drained. No inspect needed (it would sit on every restart's critical path).
            if broke.is_none() && stopping.load(std::sync::atomic::Ordering::SeqCst) {
                break Ended::Stopped {
                    at: Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Nanos, true),
                };
            }
            match docker.state(&container).await {
                Ok(s) if s.running && attempts < 5 => {
                    attempts += 1;
                    since = last.map_or(since, |t| t.timestamp());
                    continue;
                }
                Ok(s) if s.running => {
                    break Ended::Lost {
                        reason: broke.unwrap_or_else(|| "log stream ended while running".into()),
                    }
                }
                Ok(s) => {
                    let at = s.finished_at.unwrap_or_default();
                    if stopping.load(std::sync::atomic::Ordering::SeqCst) {
                        break Ended::Stopped { at };
                    }
                    break Ended::Died {
                        exit_code: s.exit_code,
                        at,
                        oom: s.oom_killed,
                    };
                }
                Err(e) => {
                    break Ended::Lost {
                        reason: e.to_string(),
                    }
                }
            }
        };
        {
            let mut b = boot.lock().unwrap_or_else(|p| p.into_inner());
            b.end = Some(end);
            if let Some(e) = write_error {
                b.write_error.get_or_insert(e);
            }
        }
        tick += 1;
        let _ = tx.send(tick);
    });
    handle
}

/// How long a follow stream may be silent before it is reopened (see `follow`).
const STALL: std::time::Duration = std::time::Duration::from_secs(5);

/// The longest line kept, in bytes: the rest of a longer line is counted, not kept, so a
/// 100 MB line costs linear time and this much memory (the timestamp and k3s's fields come
/// first, so what matters is kept).
pub const MAX_LINE: usize = 64 * 1024;

/// Cuts a byte stream into lines, each kept up to [`MAX_LINE`] bytes. Every byte is looked at
/// once (no rescanning of a growing buffer).
#[derive(Default)]
pub struct LineSplitter {
    buf: Vec<u8>,
    /// Bytes of the current line beyond `MAX_LINE`, dropped.
    cut: usize,
}

impl LineSplitter {
    /// Feeds bytes; calls `line(bytes, cut)` for every complete line (without its newline).
    pub fn feed(&mut self, mut bytes: &[u8], mut line: impl FnMut(&[u8], usize)) {
        while let Some(pos) = bytes.iter().position(|&c| c == b'\n') {
            self.keep(&bytes[..pos]);
            line(&self.buf, self.cut);
            self.buf.clear();
            self.cut = 0;
            bytes = &bytes[pos + 1..];
        }
        self.keep(bytes);
    }

    /// The last line if it had no newline (the stream ended).
    pub fn finish(&mut self, mut line: impl FnMut(&[u8], usize)) {
        if !self.buf.is_empty() || self.cut > 0 {
            line(&self.buf, self.cut);
        }
        self.discard();
    }

    /// Forgets a partial line (a reopened stream sends it again, whole).
    pub fn discard(&mut self) {
        self.buf.clear();
        self.cut = 0;
    }

    fn keep(&mut self, b: &[u8]) {
        let room = MAX_LINE.saturating_sub(self.buf.len());
        let n = room.min(b.len());
        self.buf.extend_from_slice(&b[..n]);
        self.cut += b.len() - n;
    }
}

/// `2026-11-30T09:00:01.123456789Z text` (Docker's timestamps=true form). Invalid UTF-8 (a
/// garbage-spewing process) is kept lossily rather than dropped, so evidence stays complete.
pub fn parse_line(raw: &[u8]) -> Option<LogLine> {
    let s = String::from_utf8_lossy(raw);
    let (ts, text) = s.split_once(' ').unwrap_or((&s, ""));
    let ts = DateTime::parse_from_rfc3339(ts).ok()?.with_timezone(&Utc);
    let text = text.trim_end_matches('\r').to_string();
    Some(LogLine {
        ts,
        seen: Instant::now(),
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_100_mb_line_is_cut_to_max_line_and_the_next_line_is_whole() {
        let mut sp = LineSplitter::default();
        let mut lines: Vec<(Vec<u8>, usize)> = Vec::new();
        let chunk = vec![b'x'; 1 << 20];
        sp.feed(b"2026-11-30T09:00:01Z ", |l, c| lines.push((l.to_vec(), c)));
        for _ in 0..100 {
            sp.feed(&chunk, |l, c| lines.push((l.to_vec(), c)));
            // Memory stays bounded while the line goes on.
            assert!(sp.buf.capacity() <= 2 * MAX_LINE, "{}", sp.buf.capacity());
        }
        sp.feed(b"\n2026-11-30T09:00:02Z next\npart", |l, c| {
            lines.push((l.to_vec(), c))
        });
        sp.finish(|l, c| lines.push((l.to_vec(), c)));
        assert_eq!(lines.len(), 3);
        let (long, cut) = &lines[0];
        assert_eq!(long.len(), MAX_LINE);
        assert_eq!(long.len() + cut, 21 + 100 * (1 << 20));
        assert!(parse_line(long).is_some(), "the timestamp is kept");
        assert_eq!(lines[1], (b"2026-11-30T09:00:02Z next".to_vec(), 0));
        assert_eq!(lines[2], (b"part".to_vec(), 0));
    }

    #[test]
    fn lines_split_across_chunks_are_joined_and_a_discarded_partial_is_gone() {
        let mut sp = LineSplitter::default();
        let mut lines = Vec::new();
        for c in [&b"a"[..], b"b\nc", b"d\n\n"] {
            sp.feed(c, |l, _| lines.push(l.to_vec()));
        }
        assert_eq!(lines, vec![b"ab".to_vec(), b"cd".to_vec(), b"".to_vec()]);
        sp.feed(b"half", |_, _| unreachable!());
        sp.discard();
        sp.finish(|_, _| panic!("a discarded partial line came back"));
    }

    #[test]
    fn parses_docker_timestamped_lines() {
        let l = parse_line(
            b"2026-11-30T09:00:01.123456789Z time=\"x\" level=info msg=\"k3s is up and running\"",
        )
        .unwrap();
        assert_eq!(
            l.text,
            "time=\"x\" level=info msg=\"k3s is up and running\""
        );
        assert_eq!(l.ts.timestamp_subsec_nanos(), 123456789);
        let g = parse_line(b"2026-11-30T09:00:01Z \xff\xfe garbage").unwrap();
        assert!(g.text.contains("garbage"));
        assert!(parse_line(b"no timestamp here").is_none());
    }
}
