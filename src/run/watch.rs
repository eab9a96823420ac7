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
        let mut bufs: [Vec<u8>; 2] = [Vec::new(), Vec::new()];
        let mut tick = 0u64;
        let mut push = |raw: &[u8], last: &mut Option<DateTime<Utc>>| {
            let Some(mut line) = parse_line(raw) else {
                return;
            };
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
            while let Some(item) = stream.next().await {
                match item {
                    Ok(chunk) => {
                        let buf = &mut bufs[usize::from(chunk.stderr)];
                        buf.extend_from_slice(&chunk.bytes);
                        while let Some(pos) = buf.iter().position(|&c| c == b'\n') {
                            let raw: Vec<u8> = buf.drain(..=pos).collect();
                            push(&raw[..raw.len() - 1], &mut last);
                        }
                    }
                    Err(e) => {
                        broke = Some(e.to_string());
                        break;
                    }
                }
            }
            for buf in &mut bufs {
                if !buf.is_empty() {
                    let raw = std::mem::take(buf);
                    push(&raw, &mut last);
                }
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
