//! Which tool wrote a log, and the k3s line inside each physical line.
//!
//! People have k3s's log in many shapes: `docker logs` (with or without `--timestamps`),
//! `journalctl -u k3s` (short, short-precise, short-iso, short-full, `-o cat`, `-xe` with its
//! catalog lines, several hosts in one journal), k3s's own `--log` file (logrus text), the old
//! `INFO[…]` form of 2019 releases, `kubectl logs` (plain, `--timestamps`, `--prefix`), and lines
//! pasted into an issue (hard-wrapped, CRLF, ANSI colours, `$ ` prompts, grep excerpts, bytes
//! that are not UTF-8). A [`Normaliser`] turns each physical line into an [`Entry`]: the k3s line
//! exactly as k3s printed it (so the regexes of `signals.yaml` match as they do on a container's
//! log), its time, its host, and what kind of line it is.
//!
//! One file per form: [`journal_text`] (journalctl's text forms), [`journal_json`],
//! [`journal_export`] (with [`journal_fields`], what both structured forms give), [`docker`]
//! (`docker logs`/`kubectl logs` prefixes), [`k3s_text`] (logrus, old logrus, klog: the text
//! inside), [`paste`] (what pasting adds: prompts, colours, gaps), [`units`] (systemd's lines
//! about a unit, and which distribution a name is). This file holds the entry, the statistics
//! and the normaliser that tries them in turn.

mod docker;
mod journal_export;
mod journal_fields;
mod journal_json;
mod journal_text;
mod k3s_text;
mod paste;
mod units;

use std::borrow::Cow;
use std::sync::Arc;

use chrono::{DateTime, Datelike, Duration, Utc};
use serde::Serialize;

use super::reader::Found;
use super::reader::LineInfo;
use journal_export::ExportRecord;
use journal_json::json_fields;
use journal_text::REBOOT;
pub(crate) use k3s_text::{inner_form, FATAL_WORDS};
use k3s_text::{open_quote, refresh_level};
use paste::{is_log_command, may_be_gap, prompt, GAP, GREP_PREFIX};
use units::{distro_in_unit_line, UNIT_LINE};

/// The prefix a tool put before k3s's own text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Outer {
    /// `2026-11-30T09:00:01.123456789Z text` (`docker logs -t`, `kubectl logs --timestamps`).
    Docker,
    /// `Sep 13 10:00:00 host k3s[123]: text` (journalctl's default, also short-precise, syslog).
    JournalShort,
    /// `2024-09-13T10:00:00+0000 host k3s[123]: text` (short-iso, short-iso-precise).
    JournalIso,
    /// `Fri 2024-09-13 10:00:00 UTC host k3s[123]: text` (short-full).
    JournalFull,
    /// `[pod/name/container] text` (`kubectl logs --prefix`).
    KubectlPrefix,
    /// `journalctl -o json`: one JSON object per line (`MESSAGE`, `_HOSTNAME`, …).
    JournalJson,
    /// `journalctl -o export`: `KEY=value` blocks separated by blank lines, binary fields as
    /// `KEY`, a little-endian 64-bit length and the bytes.
    JournalExport,
    /// `[  12.345678] host k3s[123]: text` (short-monotonic: seconds since the host booted).
    JournalMonotonic,
    /// `1700000000.123456 host k3s[123]: text` (short-unix).
    JournalUnix,
    /// `k3s[123]: text`: a journal's lines without time and host (a grep of the message part).
    JournalIdent,
    /// No prefix: k3s's own text (`docker logs`, `journalctl -o cat`, `--log` file, `kubectl logs`).
    Bare,
}

impl Outer {
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Outer::Docker => "docker logs --timestamps (or kubectl logs --timestamps)",
            Outer::JournalShort => "journalctl (short / short-precise)",
            Outer::JournalIso => "journalctl -o short-iso",
            Outer::JournalFull => "journalctl -o short-full",
            Outer::KubectlPrefix => "kubectl logs --prefix",
            Outer::JournalJson => "journalctl -o json",
            Outer::JournalExport => "journalctl -o export",
            Outer::JournalMonotonic => "journalctl -o short-monotonic",
            Outer::JournalUnix => "journalctl -o short-unix",
            Outer::JournalIdent => "journal lines without time and host (`k3s[pid]: …`, a grep)",
            Outer::Bare => {
                "k3s text without prefix (docker logs, journalctl -o cat, k3s --log file, kubectl logs)"
            }
        }
    }
}

/// The form of k3s's own text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Inner {
    /// logrus text: `time="…" level=info msg="…"`.
    Logrus,
    /// logrus on a terminal, as 2019 releases logged: `INFO[2019-03-13T05:57:01.879Z] …`.
    OldLogrus,
    /// klog (kubelet, apiserver inside k3s): `I0913 10:00:00.123456    1234 file.go:12] …`.
    Klog,
    /// anything else.
    Other,
}

/// Every format `inspect` knows, for the message when none fits.
pub(crate) const TRIED: &str = "docker logs (with and without --timestamps), kubectl logs (plain, --timestamps, --prefix), \
journalctl -u k3s (short, short-precise, short-iso, short-iso-precise, short-full, short-monotonic, short-delta, short-unix, json, export, -o cat, -xe), \
journal lines without time and host (`k3s[pid]: …`), \
a k3s --log file or any logrus text (time=\"…\" level=… msg=\"…\"), the old INFO[…] form, klog lines";

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A line the k3s process printed.
    Log,
    /// systemd's own line about the k3s unit (start, stop, exit status).
    Unit,
    /// A journal line of another program.
    Foreign,
    /// A shell prompt with its command (`$ journalctl -u k3s`). Boxed: every entry is moved
    /// several times on its way in, and a prompt is rare but the largest kind.
    Prompt(Box<Prompt>),
    /// Text that is not a log line: a command's output, or pasted prose.
    Output,
    /// Nothing to read: blank line, code fence, journal header or catalog text.
    Meta,
    /// The journal says the host booted again (`-- Boot 1a2b… --`, `-- Reboot --`).
    HostReboot,
    /// A sign that lines were left out: grep's `--`, `...`, `[snip]`.
    Gap,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Prompt {
    pub(crate) command: String,
    /// The node whose log follows (`docker logs NAME`, `kubectl logs POD`).
    pub(crate) node: Option<String>,
    /// The command filters lines (`| grep`): what follows is an excerpt.
    pub(crate) filters: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) kind: Kind,
    /// Physical line number (the first one, for joined lines).
    pub(crate) line: u64,
    pub(crate) outer: Outer,
    pub(crate) inner: Inner,
    /// Shared by the lines of one host (`Normaliser::host`): no copy of the name per line.
    pub(crate) host: Option<Arc<str>>,
    pub(crate) ts: Option<DateTime<Utc>>,
    /// False when part of the time was guessed (the year or zone of a journal's short format).
    pub(crate) ts_exact: bool,
    /// The k3s line with the tool's prefix removed; the command for a prompt; the text otherwise.
    pub(crate) text: String,
    /// logrus `level=fatal`/`panic` (k3s exits after such a line).
    pub(crate) fatal: bool,
    /// The line carried a grep `-n`/`-H` prefix.
    pub(crate) grep_prefix: bool,
    /// Bytes dropped from over-long physical lines.
    pub(crate) dropped: u64,
    /// The systemd unit's invocation id (json and export carry it): one id is one start.
    pub(crate) invocation: Option<String>,
    /// The distribution the journal's identifier or unit names (`rke2[…]`, `k3s.service`).
    pub(crate) distro: Option<distro::Distro>,
    /// The process id a journal line carries (`k3s[1234]:`, `_PID`): one process is one boot.
    pub(crate) pid: Option<u32>,
    /// The signal patterns that may match the text (`Found::patterns`), when the line's one
    /// search told already.
    pub(crate) may_match: Option<u64>,
    /// The text comes whole from one physical line the prescan found clear of every searched
    /// word (`BatchLine::clear`): no pattern can match it, and it holds no secret cue and no
    /// start banner.
    pub(crate) clear: bool,
    /// The prescan's answer for the one physical line the text comes whole from
    /// (`BatchLine::scan`): an upper bound of `Prefilter::scan` of the text.
    pub(crate) scan: Option<Found>,
    /// Exactly which signal patterns match the text (`Found::patterns`' bits), when the reading
    /// thread already ran them on it (`Preread`).
    pub(crate) hits: Option<u64>,
}

impl Entry {
    /// An entry of line `info` as a form first sees it: nothing read from its text yet.
    pub(super) fn bare(kind: Kind, outer: Outer, info: &LineInfo) -> Entry {
        Entry {
            kind,
            line: info.number,
            outer,
            inner: Inner::Other,
            host: None,
            ts: None,
            ts_exact: false,
            text: String::new(),
            fatal: false,
            grep_prefix: false,
            dropped: info.dropped,
            invocation: None,
            distro: None,
            pid: None,
            may_match: None,
            clear: false,
            scan: None,
            hits: None,
        }
    }
}

/// What the thread that reads a journal works out of a line for the thread that takes it in:
/// the short form's prefix (`short_prefix`) and which signal patterns match the message after
/// it. Both are pure functions of the line's bytes, so the taker uses them instead of working
/// them out again (`Normaliser::push_scanned`), and what inspect decides is the same. On a
/// journal whose every line carries a signal the taker's work is the longer of the two; this
/// shares it out.
#[derive(Debug, Clone)]
pub(crate) struct Preread {
    prefix: journal_text::Prefix,
    hits: Option<u64>,
}

impl Preread {
    /// The preread of a line the prescan found printable ASCII (`scan`): its short prefix, and
    /// `hits(message, may)`, the patterns among `may` that match the message (None when it
    /// cannot tell); None for any other line (the taker reads it whole).
    pub(crate) fn of(
        raw: &[u8],
        scan: Option<Found>,
        hits: impl FnOnce(&str, u64) -> Option<u64>,
    ) -> Option<Preread> {
        let scan = scan?;
        // The line as `clean` gives it (a plain line is its own text: no quote, no backtick),
        // and as `split_journal` reads it (`short_prefix` is tried on a capital first).
        if !raw.first().is_some_and(u8::is_ascii_uppercase) {
            return None;
        }
        let text = std::str::from_utf8(raw).ok()?;
        let prefix = journal_text::short_prefix(text)?;
        let hits = match scan.patterns {
            0 => Some(0),
            may => hits(&text[prefix.end..], may),
        };
        Some(Preread { prefix, hits })
    }
}

/// What the normaliser saw, for the report and for telling a known format from an unknown one.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Stats {
    pub(crate) lines: u64,
    /// Lines per prefix form (only forms seen).
    pub(crate) prefixes: Vec<(Outer, u64)>,
    pub(crate) logrus: u64,
    pub(crate) old_logrus: u64,
    pub(crate) klog: u64,
    pub(crate) journal_catalog: u64,
    pub(crate) crlf: u64,
    pub(crate) ansi: u64,
    pub(crate) not_utf8: u64,
    pub(crate) joined: u64,
    pub(crate) prompts: u64,
    pub(crate) gaps: u64,
    pub(crate) truncated: u64,
    pub(crate) foreign: u64,
}

impl Stats {
    fn count_outer(&mut self, o: Outer) {
        match self.prefixes.iter_mut().find(|(k, _)| *k == o) {
            Some((_, n)) => *n += 1,
            None => self.prefixes.push((o, 1)),
        }
    }

    /// Lines in a form `inspect` recognises as a log line (any prefix, logrus, klog).
    pub(crate) fn recognised(&self) -> u64 {
        self.prefixes
            .iter()
            .filter(|(o, _)| *o != Outer::Bare)
            .map(|(_, n)| n)
            .sum::<u64>()
            + self.logrus
            + self.old_logrus
            + self.klog
    }

    /// The most common prefix form (Bare when no line had one).
    pub(crate) fn dominant(&self) -> Outer {
        self.prefixes
            .iter()
            .filter(|(o, _)| *o != Outer::Bare)
            .max_by_key(|(_, n)| *n)
            .map_or(Outer::Bare, |(o, _)| *o)
    }

    /// One phrase for the report: the prefix form and what else was seen.
    pub(crate) fn describe(&self) -> String {
        let d = self.dominant();
        let mut s = if d == Outer::Bare && self.logrus == 0 && self.old_logrus > 0 {
            "old k3s INFO[…] text".to_string()
        } else {
            d.describe().to_string()
        };
        let mut extra = Vec::new();
        for (o, n) in &self.prefixes {
            if *o != d && *o != Outer::Bare {
                extra.push(format!("{n} line(s) of {}", o.describe()));
            }
        }
        for (n, what) in [
            (self.journal_catalog, "journal catalog/-xe lines"),
            (self.crlf, "CRLF line ends"),
            (self.ansi, "ANSI colours"),
            (self.not_utf8, "lines that are not UTF-8"),
            (self.joined, "hard-wrapped lines joined"),
            (self.prompts, "shell prompts"),
            (self.gaps, "gap markers (grep `--`, `...`)"),
            (self.truncated, "over-long lines cut"),
        ] {
            if n > 0 {
                extra.push(format!("{n} {what}"));
            }
        }
        if !extra.is_empty() {
            s.push_str("; ");
            s.push_str(&extra.join(", "));
        }
        s
    }
}

/// Turns physical lines into entries. Holds one entry back, because the next physical line may
/// continue it (a hard-wrapped paste, a journal's multi-line message).
pub(crate) struct Normaliser {
    /// Lines without a prefix are k3s lines (the input has no prefixes at all).
    bare_is_log: bool,
    pending: Option<Entry>,
    /// Characters in the last physical piece of `pending` (to tell a terminal wrap).
    pending_width: usize,
    /// Physical lines joined into `pending` so far.
    pending_parts: usize,
    /// After a prompt whose command is not a log command, plain lines are its output.
    in_output: bool,
    /// The text has Markdown code fences (a paste from an issue): plain lines outside them are
    /// prose, not log.
    fences: bool,
    in_fence: bool,
    /// The zone of k3s's own logrus times, for klog lines (local time without year or zone).
    text_offset: Option<chrono::FixedOffset>,
    /// The host name the last line gave (most lines name the host the line before did).
    last_host: Option<Arc<str>>,
    /// The last journal short stamp parsed, and its time.
    short_cache: Option<(String, DateTime<Utc>, bool)>,
    /// Year for journal short times (which print none), learned from exact times.
    year: Option<i32>,
    /// Local time minus UTC on the journal's host, learned from lines carrying both times.
    local_offset: Option<Duration>,
    last_ts: Option<DateTime<Utc>>,
    /// Journal identifiers that printed a k3s banner or start with `k3s`.
    k3s_idents: Vec<String>,
    /// The `journalctl -o export` record being read.
    export: Option<ExportRecord>,
    /// Wall time minus the monotonic clock of a short-monotonic journal, learned from lines that
    /// carry both (k3s's logrus time); reset when the host boots again.
    mono_offset: Option<Duration>,
    /// The reading thread's preread of the line being taken in, while its text is the line
    /// itself (`split_journal` takes it).
    preread: Option<Preread>,
    /// What the prescan found in the line being taken in, while every text taken from it is a
    /// part of it (`k3s_text_timed` reads its `FATAL_WORDS` bits).
    line_scan: Option<Found>,
    pub(crate) stats: Stats,
}

/// Longest joined entry; a stray quote must not glue a whole file together.
const MAX_JOINED: usize = 512 * 1024;

const MAX_PARTS: usize = 64;

/// Physical widths of terminals people copy from: a wrap at one of these cut a word in two.
const TERMINAL_WIDTHS: [usize; 8] = [80, 100, 120, 132, 160, 180, 200, 240];

impl Normaliser {
    pub(crate) fn new(dominant: Outer) -> Self {
        Normaliser {
            bare_is_log: dominant == Outer::Bare,
            pending: None,
            pending_width: 0,
            pending_parts: 0,
            in_output: false,
            fences: false,
            in_fence: false,
            text_offset: None,
            last_host: None,
            short_cache: None,
            year: None,
            local_offset: None,
            last_ts: None,
            k3s_idents: Vec::new(),
            export: None,
            mono_offset: None,
            preread: None,
            line_scan: None,
            stats: Stats::default(),
        }
    }

    /// Feeds one physical line; finished entries are appended to `out`.
    pub(crate) fn push(&mut self, raw: &[u8], info: LineInfo, out: &mut Vec<Entry>) {
        self.push_scanned(raw, info, None, None, out);
    }

    /// `push` of a line with what the prescan found in it (`BatchLine::scan`).
    pub(crate) fn push_scanned(
        &mut self,
        raw: &[u8],
        info: LineInfo,
        scan: Option<Found>,
        preread: Option<Preread>,
        out: &mut Vec<Entry>,
    ) {
        let clear = scan == Some(Found::NOTHING);
        // Not of a structured entry's message, which is decoded from the line (and may end a
        // record begun lines before).
        self.line_scan = None;
        self.stats.lines += 1;
        if info.dropped > 0 {
            self.stats.truncated += 1;
        }
        // The journal's structured forms: whole entries, not lines of text.
        if self.export_line(raw, info, out) {
            return;
        }
        if raw.first().is_some_and(|&b| b == b'{' || b == 0x1e) {
            if let Some(f) = json_fields(raw) {
                let e = self.structured(f, Outer::JournalJson, info);
                self.flush(out);
                out.push(e);
                return;
            }
        }
        // A prescanned line is printable ASCII (`BatchLine::scan`).
        let (text, width) = self.clean(raw, scan.is_some());
        // The preread is of the line's bytes: it holds while the text is they.
        let whole = matches!(&text, Cow::Borrowed(t) if std::ptr::eq(t.as_bytes(), raw));
        self.preread = preread.filter(|_| whole);
        self.line_scan = scan;
        let mut e = self.classify(text, info);
        // Every text the normaliser takes from a line is a part of it (a joined line below
        // is more than one line's, and loses the marks).
        e.clear = clear;
        e.scan = scan;
        let plain = e.outer == Outer::Bare && e.inner == Inner::Other;
        match e.kind {
            Kind::Output | Kind::Log if plain && self.continues(&e) => {
                self.stats.joined += 1;
                let sep = if TERMINAL_WIDTHS.contains(&self.pending_width)
                    && !e.text.starts_with(char::is_whitespace)
                {
                    ""
                } else {
                    " "
                };
                if let Some(p) = self.pending.as_mut() {
                    // Words can form across the join.
                    p.clear = false;
                    p.scan = None;
                    p.hits = None;
                    p.text.push_str(sep);
                    p.text.push_str(e.text.trim_start());
                    p.dropped += e.dropped;
                    refresh_level(p);
                }
                self.pending_width = width;
                self.pending_parts += 1;
                return;
            }
            _ => {}
        }
        self.flush(out);
        match &e.kind {
            Kind::Log => {
                self.pending = Some(e);
                self.pending_width = width;
                self.pending_parts = 1;
            }
            Kind::Prompt(p) => {
                self.stats.prompts += 1;
                self.in_output = !is_log_command(&p.command);
                out.push(e);
            }
            _ => out.push(e),
        }
    }

    /// Emits the entry held back.
    pub(crate) fn finish(&mut self, out: &mut Vec<Entry>) {
        self.flush(out);
        if let Some(rec) = self.export.take() {
            self.end_export(rec, out);
        }
    }

    fn flush(&mut self, out: &mut Vec<Entry>) {
        if let Some(p) = self.pending.take() {
            out.push(p);
        }
    }

    /// Whether a line without a prefix continues the entry held back.
    fn continues(&self, e: &Entry) -> bool {
        let Some(p) = &self.pending else {
            return false;
        };
        if self.pending_parts >= MAX_PARTS || p.text.len() + e.text.len() > MAX_JOINED {
            return false;
        }
        // A logrus line whose msg="… has not closed was cut by a wrap, whatever the format.
        if p.inner == Inner::Logrus && open_quote(&p.text) {
            return true;
        }
        e.kind == Kind::Output && !self.bare_is_log && !self.in_output && p.outer != Outer::Bare
    }

    fn classify(&mut self, text: Cow<'_, str>, info: LineInfo) -> Entry {
        let mut e = Entry::bare(Kind::Output, Outer::Bare, &info);
        let trimmed = text.trim();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            self.fences = true;
            self.in_fence = !self.in_fence;
            self.in_output = false;
            e.kind = Kind::Meta;
            return e;
        }
        if trimmed.is_empty() {
            e.kind = Kind::Meta;
            return e;
        }
        if trimmed.starts_with("░░") {
            self.stats.journal_catalog += 1;
            e.kind = Kind::Meta;
            return e;
        }
        if let Some(rest) = text.strip_prefix("-- ") {
            self.stats.journal_catalog += 1;
            e.kind = if REBOOT.is_match(rest) {
                self.mono_offset = None;
                Kind::HostReboot
            } else {
                Kind::Meta
            };
            e.text = text.into_owned();
            return e;
        }
        if trimmed == "--" || (may_be_gap(trimmed) && GAP.is_match(trimmed)) {
            self.stats.gaps += 1;
            e.kind = Kind::Gap;
            return e;
        }
        if let Some(p) = prompt(trimmed) {
            e.kind = Kind::Prompt(Box::new(p.clone()));
            e.text = p.command;
            return e;
        }
        if self.split_outer(&text, &mut e) {
            return e;
        }
        // `grep -n` / `grep -H` put `12:` or `file:12:` before each line.
        if let Some(c) = GREP_PREFIX.captures(&text) {
            let rest = &text[c.get(0).map_or(0, |m| m.end())..];
            let before = e.clone();
            if self.split_outer(rest, &mut e) || inner_form(rest) != Inner::Other {
                self.stats.gaps += 1;
                e.grep_prefix = true;
                if e.kind != Kind::Output {
                    return e;
                }
                return self.bare(rest.to_string(), e);
            }
            e = before;
        }
        self.bare(text.into_owned(), e)
    }

    /// A line without a tool prefix: k3s text, or a line that is not a log line at all.
    fn bare(&mut self, text: String, mut e: Entry) -> Entry {
        e.outer = Outer::Bare;
        self.k3s_text(text, &mut e);
        let formatted = e.inner != Inner::Other;
        let prose = self.fences && !self.in_fence;
        // `journalctl -o cat` keeps systemd's lines about the unit, without their identifier.
        if !formatted && self.bare_is_log && !prose && UNIT_LINE.is_match(&e.text) {
            e.distro = distro_in_unit_line(&e.text);
            e.kind = Kind::Unit;
            return e;
        }
        e.kind = if formatted || (self.bare_is_log && !self.in_output && !prose) {
            self.stats.count_outer(Outer::Bare);
            Kind::Log
        } else {
            Kind::Output
        };
        if formatted {
            self.in_output = false;
        }
        e
    }

    /// Recognises a tool prefix; fills `e` and returns true when one is found.
    fn split_outer(&mut self, text: &str, e: &mut Entry) -> bool {
        if text.starts_with("[pod/") && self.split_kubectl(text, e) {
            return true;
        }
        if self.split_journal(text, e) {
            return true;
        }
        if text.as_bytes().first().is_some_and(u8::is_ascii_digit) && self.split_docker(text, e) {
            self.stats.count_outer(Outer::Docker);
            return true;
        }
        false
    }

    /// `name` as an entry's host: the last host's shared name when it is that one.
    pub(super) fn host(&mut self, name: &str) -> Arc<str> {
        match &self.last_host {
            Some(h) if **h == *name => h.clone(),
            _ => {
                let h: Arc<str> = Arc::from(name);
                self.last_host = Some(h.clone());
                h
            }
        }
    }

    pub(super) fn set_exact(&mut self, e: &mut Entry, ts: DateTime<Utc>) {
        e.ts = Some(ts);
        e.ts_exact = true;
        self.year = Some(ts.year());
        self.last_ts = Some(ts);
    }
}

fn parse_rfc3339(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Looks at the first lines of an input and tells its prefix form (the rest is read with it).
pub(crate) fn detect<'a>(sample: impl IntoIterator<Item = &'a [u8]>) -> Stats {
    let mut n = Normaliser::new(Outer::Bare);
    let mut sink = Vec::new();
    for (i, raw) in sample.into_iter().enumerate() {
        n.push(
            raw,
            LineInfo {
                number: i as u64 + 1,
                dropped: 0,
            },
            &mut sink,
        );
        sink.clear();
    }
    n.stats
}

/// journalctl's output forms that inspect does not read, told by their first lines when no line
/// had a prefix inspect reads: the form's name. Read as plain text they would be misread (every
/// field a line of its own, the host and the unit lost), so they are refused instead.
pub(crate) fn unread_journal_form<'a>(
    sample: impl IntoIterator<Item = &'a [u8]>,
) -> Option<&'static str> {
    const FIELDS: [&str; 4] = [
        "__CURSOR",
        "__REALTIME_TIMESTAMP",
        "MESSAGE",
        "_SYSTEMD_UNIT",
    ];
    for raw in sample {
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        let text = line.trim_ascii_start();
        let indent = line.len() - text.len();
        // `-o json-pretty`: `{`, then one `\t"FIELD" : value,` a line.
        if indent > 0
            && FIELDS.iter().any(|f| {
                text.strip_prefix(b"\"")
                    .and_then(|t| t.strip_prefix(f.as_bytes()))
                    .is_some_and(|t| t.starts_with(b"\" :") || t.starts_with(b"\":"))
            })
        {
            return Some("journalctl -o json-pretty");
        }
        // `-o verbose`: a header line, then `    FIELD=value` lines.
        if indent >= 4
            && FIELDS[2..].iter().any(|f| {
                text.strip_prefix(f.as_bytes())
                    .is_some_and(|t| t.starts_with(b"="))
            })
        {
            return Some("journalctl -o verbose");
        }
        // `-o json-sse`: `data: {…}` lines (server-sent events).
        if line.starts_with(b"data: {\"") {
            return Some("journalctl -o json-sse");
        }
    }
    None
}

/// What a binary input is when it is text packed or encoded in a form inspect does not read
/// (`inside_gzip`: the bytes came out of a gzip file): its name, and how to turn it into text
/// inspect reads (`FILE` stands for the file's name). None for other binary data.
pub(crate) fn packed_kind(head: &[u8], inside_gzip: bool) -> Option<(&'static str, &'static str)> {
    const TAR_HELP: &str =
        "extract it and name the folder, or name the archive with its .tar/.tar.gz/.tgz extension";
    let kind = if head.starts_with(&[0x1f, 0x8b]) && inside_gzip {
        (
            "gzip data inside a gzip file (compressed twice)",
            "decompress it once (`zcat FILE > FILE.log`) and name FILE.log",
        )
    } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
        (
            "xz-compressed data",
            "decompress it first: `xz -dc FILE > k3s.log` (a .tar.xz bundle: `tar -xJf FILE` and name the folder)",
        )
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        (
            "zstd-compressed data",
            "decompress it first: `zstd -dc FILE > k3s.log` (a .tar.zst bundle: `tar --zstd -xf FILE` and name the folder)",
        )
    } else if head.len() >= 4 && head.starts_with(b"BZh") && (b'1'..=b'9').contains(&head[3]) {
        (
            "bzip2-compressed data",
            "decompress it first: `bzip2 -dc FILE > k3s.log` (a .tar.bz2 bundle: `tar -xjf FILE` and name the folder)",
        )
    } else if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
        (
            "a zip archive",
            "unzip it (`unzip FILE -d bundle`) and name the folder or the log files in it",
        )
    } else if head.get(257..262) == Some(b"ustar") {
        ("a tar archive", TAR_HELP)
    } else if head.starts_with(b"LPKSHHRH") {
        (
            "a systemd journal file (journald's binary store)",
            "print the unit's lines as text: `journalctl --file FILE -u k3s -o short-iso > k3s.log` (RKE2: `-u rke2-server` or `-u rke2-agent`)",
        )
    } else if head.starts_with(&[0xff, 0xfe])
        || head.starts_with(&[0xfe, 0xff])
        || (head.len() >= 4 && head[0] != 0 && head[1] == 0 && head[2] != 0 && head[3] == 0)
    {
        (
            "UTF-16 text (as Windows PowerShell's `>` writes it)",
            "convert it to UTF-8: `iconv -f UTF-16 -t UTF-8 FILE > k3s.log` (PowerShell: `Get-Content FILE | Set-Content -Encoding utf8 k3s.log`)",
        )
    } else if head.starts_with(b"\x7fELF") {
        (
            "a program (ELF executable)",
            "give the log the program wrote, not the program",
        )
    } else {
        return None;
    };
    Some(kind)
}

/// Whether the start of an input looks binary rather than text: a NUL byte or mostly control
/// bytes before the first NUL-padded stretch. Only the start counts: a log whose tail is a run
/// of NULs (a file system that lost its last blocks in a crash) is still a log.
pub(crate) fn looks_binary(sample: &[u8]) -> bool {
    // `journalctl -o export` writes binary fields with their length in 8 bytes: text all the same.
    if sample.starts_with(b"__CURSOR=") {
        return false;
    }
    let mut head = &sample[..sample.len().min(1024)];
    if head.is_empty() {
        return false;
    }
    if let Some(nul) = memchr::memchr(0, head) {
        // NULs after whole lines of text are the blocks a crash lost in a log file (syslog,
        // `k3s.log` after a power cut): the text before them decides, and the normaliser drops
        // the NULs from the lines. NULs before the first line end are binary data.
        head = &head[..nul];
        if memchr::memchr(b'\n', head).is_none() {
            return true;
        }
    }
    let controls = head
        .iter()
        .filter(|&&b| b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t' | 0x1b))
        .count();
    controls * 10 > head.len()
}

#[cfg(test)]
mod tests;
