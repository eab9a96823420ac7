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

use super::error::RecordError;

/// Called for every new line of a node (for progress display).
pub type OnLine = Arc<dyn Fn(&str, &LogLine) + Send + Sync>;
/// Applied to every line before it is kept or written (removes the run's secrets).
pub(crate) type Scrub = Arc<dyn Fn(String) -> String + Send + Sync>;

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

/// Where a follower is in a container's log: the last line's time and how many lines with
/// exactly that time it has seen. Engines differ in timestamp precision (Docker gives
/// nanoseconds, Podman 4.x whole seconds), so a time alone cannot say which of several lines
/// within one second were seen; with the count, a stream reopened from that second skips
/// exactly those and keeps the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogPosition {
    pub(crate) ts: DateTime<Utc>,
    pub(crate) count: usize,
}

impl LogPosition {
    /// The position after one more kept line at `ts`. A line stamped before the position
    /// (stdout and stderr are stamped apart) leaves it: a replay drops it as older anyway.
    fn advance(pos: Option<LogPosition>, ts: DateTime<Utc>) -> LogPosition {
        match pos {
            Some(p) if p.ts == ts => LogPosition {
                ts,
                count: p.count + 1,
            },
            Some(p) if p.ts > ts => p,
            _ => LogPosition { ts, count: 1 },
        }
    }
}

/// A follower's place in the log across the streams it opens. The engine's `since` has whole
/// seconds, so a stream opened at a [`LogPosition`] sends again the lines before the
/// position's time, then the first `count` at it: those are dropped. After the first line past
/// them every line is new, whatever its timestamp (lines of one second, or a stderr line
/// stamped a moment before the stdout line ahead of it, are all kept).
struct Cursor {
    pos: Option<LogPosition>,
    replay: Option<LogPosition>,
    skipped: usize,
}

impl Cursor {
    fn new(after: Option<LogPosition>) -> Cursor {
        Cursor {
            pos: after,
            replay: after,
            skipped: 0,
        }
    }

    /// A stream is (re)opened: the `since` to open it with.
    fn reopen(&mut self) -> i64 {
        self.replay = self.pos;
        self.skipped = 0;
        self.pos.map_or(0, |p| p.ts.timestamp())
    }

    /// Whether the line at `ts` is new; if it is, the position moves past it.
    fn keep(&mut self, ts: DateTime<Utc>) -> bool {
        if let Some(p) = self.replay {
            if ts < p.ts {
                return false;
            }
            if ts == p.ts && self.skipped < p.count {
                self.skipped += 1;
                return false;
            }
            self.replay = None;
        }
        self.pos = Some(LogPosition::advance(self.pos, ts));
        true
    }
}

/// One boot, shared between its follower and its waiters.
#[derive(Clone)]
pub struct BootHandle {
    pub(crate) boot: Arc<Mutex<Boot>>,
    changed: watch::Receiver<u64>,
    /// The follower's position in the container's log (the next boot starts after it).
    position: Arc<Mutex<Option<LogPosition>>>,
}

impl BootHandle {
    /// Runs `f` on the boot; the lock is held only for `f`.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&Boot) -> R) -> R {
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

    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.clone()
    }

    /// Where this boot's follower is in the container's log (after its last line), carried
    /// from the boot before it if this one has no line yet.
    pub(crate) fn position(&self) -> Option<LogPosition> {
        *self.position.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes the error of writing this boot's log file, if there was one.
    pub(crate) fn take_write_error(&self) -> Option<RecordError> {
        let mut b = self.boot.lock().unwrap_or_else(|p| p.into_inner());
        let source = b.write_error.take()?;
        Some(RecordError::Write {
            path: b.log_path.clone(),
            source,
        })
    }

    /// Waits until the follower has finished (the container stopped and its log drained).
    pub(crate) async fn ended(&self) {
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
    /// Where the previous boot's follower stopped: lines up to it belong to earlier boots.
    pub after: Option<LogPosition>,
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
    let (handle, boot, tx) = new_boot(number, step, started_at, log_path.clone(), after);
    let position = handle.position.clone();
    tokio::spawn(async move {
        let mut sink = Sink::open(boot, tx, log_path, ready, on_line, container.clone());
        let mut cursor = Cursor::new(after);
        let mut bufs = [LineSplitter::default(), LineSplitter::default()];
        let mut push = |raw: &[u8], cut: usize, cursor: &mut Cursor| {
            let Some(line) = parse_line(raw) else {
                return;
            };
            let line = sink.scrubbed(line, cut, &scrub);
            if !cursor.keep(line.ts) {
                return;
            }
            *position.lock().unwrap_or_else(|p| p.into_inner()) = cursor.pos;
            sink.keep(line);
        };
        // The stream ends when the container stops; a broken stream is reopened where it was.
        let mut attempts = 0;
        let end = loop {
            let since = cursor.reopen();
            let mut stream = Box::pin(docker.follow_logs(&container, since));
            let mut broke = None;
            let mut stalled = false;
            loop {
                // Docker 20.10's follower can stop delivering while the container goes on
                // writing (a flood at boot): after a silence, the stream is reopened from the
                // last line's position. The lines it replays are dropped by the cursor, and a
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
                        let buf = &mut bufs[usize::from(chunk.stderr)];
                        buf.feed(continuation(buf, &chunk.bytes), |raw, cut| {
                            push(raw, cut, &mut cursor)
                        });
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
                continue;
            }
            for buf in &mut bufs {
                buf.finish(|raw, cut| push(raw, cut, &mut cursor));
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
        sink.end(end);
    });
    handle
}

/// Where a follower puts a boot's lines: the boot (waiters woken), its log file, the progress
/// callback. Shared by every log source (the container's log here, a unit's journal in
/// `journal.rs`), so a line is kept the same way whatever it came from.
pub(crate) struct Sink {
    boot: Arc<Mutex<Boot>>,
    tx: watch::Sender<u64>,
    tick: u64,
    file: Option<std::fs::File>,
    /// A log file that cannot be written is kept as the boot's `write_error` for the run to
    /// report; the lines stay in memory, so the verdict does not depend on it.
    write_error: Option<std::io::Error>,
    ready: Vec<Regex>,
    on_line: OnLine,
    container: String,
}

impl Sink {
    pub(crate) fn open(
        boot: Arc<Mutex<Boot>>,
        tx: watch::Sender<u64>,
        log_path: PathBuf,
        ready: Vec<Regex>,
        on_line: OnLine,
        container: String,
    ) -> Sink {
        let (file, write_error) = match crate::results_folder::private_file(&log_path) {
            Ok(f) => (Some(f), None),
            Err(e) => (None, Some(e)),
        };
        Sink {
            boot,
            tx,
            tick: 0,
            file,
            write_error,
            ready,
            on_line,
            container,
        }
    }

    /// The line as it is kept: the note of a cut, then the run's secrets removed.
    pub(crate) fn scrubbed(&self, mut line: LogLine, cut: usize, scrub: &Scrub) -> LogLine {
        if cut > 0 {
            line.text
                .push_str(&format!(" [repro: {cut} more bytes of this line not kept]"));
        }
        line.text = scrub(std::mem::take(&mut line.text));
        line
    }

    /// Keeps one (scrubbed) line of the boot.
    pub(crate) fn keep(&mut self, line: LogLine) {
        if let Some(f) = self.file.as_mut() {
            if let Err(e) = writeln!(
                f,
                "{} {}",
                line.ts.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true),
                line.text
            ) {
                self.write_error = Some(e);
                self.file = None;
            }
        }
        (self.on_line)(&self.container, &line);
        let mut b = self.boot.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = self.write_error.take() {
            b.write_error.get_or_insert(e);
        }
        if b.ready.is_none() && self.ready.iter().any(|r| r.is_match(&line.text)) {
            b.ready = Some(b.lines.len());
        }
        b.lines.push(line);
        drop(b);
        self.tick += 1;
        let _ = self.tx.send(self.tick);
    }

    /// The boot is over: records how, and wakes every waiter.
    pub(crate) fn end(mut self, end: Ended) {
        {
            let mut b = self.boot.lock().unwrap_or_else(|p| p.into_inner());
            b.end = Some(end);
            if let Some(e) = self.write_error.take() {
                b.write_error.get_or_insert(e);
            }
        }
        self.tick += 1;
        let _ = self.tx.send(self.tick);
    }
}

/// A new boot's shared state and its handle (the follower keeps the sender).
pub(crate) fn new_boot(
    number: u32,
    step: usize,
    started_at: DateTime<Utc>,
    log_path: PathBuf,
    after: Option<LogPosition>,
) -> (BootHandle, Arc<Mutex<Boot>>, watch::Sender<u64>) {
    let (tx, rx) = watch::channel(0u64);
    let boot = Arc::new(Mutex::new(Boot {
        number,
        step,
        started_at,
        lines: Vec::new(),
        ready: None,
        end: None,
        log_path,
        write_error: None,
    }));
    let handle = BootHandle {
        boot: boot.clone(),
        changed: rx,
        position: Arc::new(Mutex::new(after)),
    };
    (handle, boot, tx)
}

/// How long a follow stream may be silent before it is reopened (see `follow`).
const STALL: std::time::Duration = std::time::Duration::from_secs(5);

/// The longest line kept, in bytes: the rest of a longer line is counted, not kept, so a
/// 100 MB line costs linear time and this much memory (the timestamp and k3s's fields come
/// first, so what matters is kept).
pub(crate) const MAX_LINE: usize = 64 * 1024;

/// Cuts a byte stream into lines, each kept up to [`MAX_LINE`] bytes. Every byte is looked at
/// once (no rescanning of a growing buffer).
#[derive(Default)]
pub(crate) struct LineSplitter {
    buf: Vec<u8>,
    /// Bytes of the current line beyond `MAX_LINE`, dropped.
    cut: usize,
}

impl LineSplitter {
    /// Feeds bytes; calls `line(bytes, cut)` for every complete line (without its newline).
    pub(crate) fn feed(&mut self, mut bytes: &[u8], mut line: impl FnMut(&[u8], usize)) {
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
    pub(crate) fn finish(&mut self, mut line: impl FnMut(&[u8], usize)) {
        if !self.buf.is_empty() || self.cut > 0 {
            line(&self.buf, self.cut);
        }
        self.discard();
    }

    /// Whether part of a line is held (its newline has not come yet).
    pub(crate) fn pending(&self) -> bool {
        !self.buf.is_empty() || self.cut > 0
    }

    /// Forgets a partial line (a reopened stream sends it again, whole).
    pub(crate) fn discard(&mut self) {
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

/// The bytes of one log frame to feed to `buf`. Every frame of a timestamped stream starts
/// with its entry's time, and an entry is not always a whole line: Podman's conmon stores a
/// line it read in pieces as several entries (the k8s-file `P` records), each sent as a frame
/// with its own time and no newline but the last. A frame that continues a pending line
/// loses its time, so the line is whole and keeps its first piece's time.
fn continuation<'a>(buf: &LineSplitter, frame: &'a [u8]) -> &'a [u8] {
    if !buf.pending() {
        return frame;
    }
    let head = &frame[..frame.len().min(40)];
    match head.iter().position(|&c| c == b' ') {
        Some(i)
            if std::str::from_utf8(&frame[..i])
                .is_ok_and(|t| DateTime::parse_from_rfc3339(t).is_ok()) =>
        {
            &frame[i + 1..]
        }
        _ => frame,
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

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    /// Follows `log` (timestamps) as the follower does: a stream from the position's second,
    /// reopened after each `breaks` count of delivered lines; returns the indexes kept.
    fn follow_in_pieces(
        log: &[DateTime<Utc>],
        after: Option<LogPosition>,
        breaks: &[usize],
    ) -> Vec<usize> {
        let mut cursor = Cursor::new(after);
        let mut kept = Vec::new();
        let mut breaks = breaks.iter().copied();
        loop {
            let since = cursor.reopen();
            let stop = breaks.next();
            let mut new = 0;
            // Podman's and Docker's `since` both keep lines at or after that second.
            for (i, ts) in log
                .iter()
                .enumerate()
                .filter(|(_, t)| t.timestamp() >= since)
            {
                if !cursor.keep(*ts) {
                    continue;
                }
                kept.push(i);
                new += 1;
                if Some(new) == stop {
                    break;
                }
            }
            if stop.is_none() {
                return kept;
            }
        }
    }

    #[test]
    fn lines_of_one_second_are_all_kept_and_a_reopened_stream_doubles_none() {
        // Podman 4.3 stamps lines with whole seconds: ten lines in one second, the readiness
        // line last (the case that hid every node's readiness on Podman).
        let mut log: Vec<DateTime<Utc>> = vec![at("2026-12-01T14:46:56Z"); 10];
        log.extend(vec![at("2026-12-01T14:46:57Z"); 3]);
        let all: Vec<usize> = (0..log.len()).collect();
        assert_eq!(follow_in_pieces(&log, None, &[]), all);
        // A stall in the middle of a second, another right at a second's end.
        assert_eq!(follow_in_pieces(&log, None, &[4, 6, 1]), all);
    }

    #[test]
    fn the_next_boot_starts_after_the_previous_one_within_one_second() {
        // Boot 1 ended with 3 lines in second :56; boot 2 wrote 2 more in that second.
        let s = at("2026-12-01T14:46:56Z");
        let log = vec![
            at("2026-12-01T14:46:55Z"),
            s,
            s,
            s,
            s,
            s,
            at("2026-12-01T14:46:57Z"),
        ];
        let after = Some(LogPosition { ts: s, count: 4 });
        assert_eq!(follow_in_pieces(&log, after, &[]), vec![5, 6]);
        // Nanosecond stamps (Docker): the count is 1 and the old rule ("after the last time").
        let n = |s: &str| at(s);
        let log = vec![
            n("2026-12-01T14:46:56.1Z"),
            n("2026-12-01T14:46:56.2Z"),
            n("2026-12-01T14:46:56.3Z"),
        ];
        let after = Some(LogPosition {
            ts: log[1],
            count: 1,
        });
        assert_eq!(follow_in_pieces(&log, after, &[]), vec![2]);
    }

    #[test]
    fn a_line_stamped_before_the_one_ahead_of_it_is_kept() {
        // stdout and stderr are stamped apart: order in the stream is what counts.
        let log = vec![
            at("2026-12-01T14:46:56.2Z"),
            at("2026-12-01T14:46:56.1Z"),
            at("2026-12-01T14:46:56.3Z"),
        ];
        assert_eq!(follow_in_pieces(&log, None, &[]), vec![0, 1, 2]);
        // Reopened after it: neither it nor the one ahead of it comes twice.
        assert_eq!(follow_in_pieces(&log, None, &[2, 1]), vec![0, 1, 2]);
    }

    #[test]
    fn a_line_sent_in_pieces_is_one_line_with_the_first_pieces_time() {
        // What Podman 4.3 sent for a flood line its conmon read in two pieces.
        let frames: [&[u8]; 3] = [
            b"2026-12-01T16:58:19Z msg=\"repro-sim flood line",
            b"2026-12-01T16:58:20Z  8275 of 40000\"\n",
            b"2026-12-01T16:58:20Z next 2026-12-01T16:58:20Z stays\n",
        ];
        let mut sp = LineSplitter::default();
        let mut lines = Vec::new();
        for f in frames {
            let bytes = continuation(&sp, f);
            sp.feed(bytes, |l, _| lines.push(parse_line(l).unwrap()));
        }
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].text, "msg=\"repro-sim flood line 8275 of 40000\"");
        assert_eq!(lines[0].ts, at("2026-12-01T16:58:19Z"));
        // A frame that starts a line keeps its time, and text that looks like one stays.
        assert_eq!(lines[1].text, "next 2026-12-01T16:58:20Z stays");
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
