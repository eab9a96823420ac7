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

use std::borrow::Cow;
use std::sync::LazyLock;

use chrono::{DateTime, Datelike, Duration, NaiveDateTime, TimeZone, Utc};
use regex::Regex;
use serde::Serialize;

use super::prefilter::plain_ascii;
use super::reader::Found;
use super::reader::LineInfo;

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
journalctl -u k3s (short, short-precise, short-iso, short-iso-precise, short-full, short-monotonic, short-unix, json, export, -o cat, -xe), \
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
    /// A shell prompt with its command (`$ journalctl -u k3s`).
    Prompt(Prompt),
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
    pub(crate) host: Option<String>,
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
    pub(crate) stats: Stats,
}

/// The fields of one journal entry, from `-o json` or `-o export`.
#[derive(Debug, Default)]
struct JournalFields {
    message: Option<Vec<u8>>,
    host: Option<String>,
    /// `__REALTIME_TIMESTAMP`: microseconds since the epoch.
    realtime: Option<i64>,
    ident: Option<String>,
    comm: Option<String>,
    /// `_SYSTEMD_UNIT`: the unit that wrote the line.
    unit: Option<String>,
    /// `UNIT`: the unit systemd (PID 1) writes about.
    object_unit: Option<String>,
    /// `_SYSTEMD_INVOCATION_ID` (the unit's own lines) or `INVOCATION_ID` (PID 1's about it).
    invocation: Option<String>,
    pid: Option<String>,
}

impl JournalFields {
    fn set(&mut self, key: &[u8], value: Vec<u8>) {
        let text = |v: Vec<u8>| String::from_utf8_lossy(&v).into_owned();
        match key {
            b"MESSAGE" => self.message = Some(value),
            b"_HOSTNAME" => self.host = Some(text(value)),
            b"__REALTIME_TIMESTAMP" => self.realtime = text(value).trim().parse().ok(),
            b"SYSLOG_IDENTIFIER" => self.ident = Some(text(value)),
            b"_COMM" => self.comm = Some(text(value)),
            b"_SYSTEMD_UNIT" => self.unit = Some(text(value)),
            b"UNIT" => self.object_unit = Some(text(value)),
            b"_SYSTEMD_INVOCATION_ID" => self.invocation = Some(text(value)),
            b"INVOCATION_ID" => {
                self.invocation.get_or_insert(text(value));
            }
            b"_PID" => self.pid = Some(text(value)),
            _ => {}
        }
    }
}

/// An export record being read: its fields so far, and a binary field's bytes still arriving.
#[derive(Debug)]
struct ExportRecord {
    line: u64,
    fields: JournalFields,
    /// A binary field: its name and the bytes read so far (length, data, and the physical line
    /// breaks inside them, which the line reader took out).
    binary: Option<Binary>,
}

#[derive(Debug)]
struct Binary {
    key: Vec<u8>,
    bytes: Vec<u8>,
    /// Physical lines read into `bytes` (each after the first follows a `\n` the reader took).
    pieces: usize,
}

/// Longest binary export field read (the line limit of the reader, a little more).
const MAX_BINARY_FIELD: u64 = 512 * 1024;

/// One `-o json` line's fields: a string, an array of bytes (a message that is not UTF-8), or
/// anything else (an array of several values), which is left out.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum JsonField {
    Text(String),
    Bytes(Vec<u8>),
    #[allow(dead_code)]
    Other(serde::de::IgnoredAny),
}

impl JsonField {
    fn bytes(self) -> Option<Vec<u8>> {
        match self {
            JsonField::Text(s) => Some(s.into_bytes()),
            JsonField::Bytes(b) => Some(b),
            JsonField::Other(_) => None,
        }
    }
}

#[derive(serde::Deserialize)]
struct JsonEntry {
    #[serde(rename = "MESSAGE")]
    message: Option<JsonField>,
    #[serde(rename = "_HOSTNAME")]
    host: Option<JsonField>,
    #[serde(rename = "__REALTIME_TIMESTAMP")]
    realtime: Option<JsonField>,
    #[serde(rename = "SYSLOG_IDENTIFIER")]
    ident: Option<JsonField>,
    #[serde(rename = "_COMM")]
    comm: Option<JsonField>,
    #[serde(rename = "_SYSTEMD_UNIT")]
    unit: Option<JsonField>,
    #[serde(rename = "UNIT")]
    object_unit: Option<JsonField>,
    #[serde(rename = "_SYSTEMD_INVOCATION_ID")]
    invocation: Option<JsonField>,
    #[serde(rename = "INVOCATION_ID")]
    object_invocation: Option<JsonField>,
    #[serde(rename = "_PID")]
    pid: Option<JsonField>,
}

/// A `-o json` (or `-o json-seq`) line's fields; None when the line is not a journal entry.
fn json_fields(raw: &[u8]) -> Option<JournalFields> {
    let raw = raw.strip_prefix(b"\x1e").unwrap_or(raw);
    if raw.first() != Some(&b'{')
        || memchr::memmem::find(raw, b"\"__REALTIME_TIMESTAMP\"").is_none()
    {
        return None;
    }
    let j: JsonEntry = serde_json::from_slice(raw).ok()?;
    let mut f = JournalFields::default();
    for (key, v) in [
        (&b"MESSAGE"[..], j.message),
        (b"_HOSTNAME", j.host),
        (b"__REALTIME_TIMESTAMP", j.realtime),
        (b"SYSLOG_IDENTIFIER", j.ident),
        (b"_COMM", j.comm),
        (b"_SYSTEMD_UNIT", j.unit),
        (b"UNIT", j.object_unit),
        (b"_SYSTEMD_INVOCATION_ID", j.invocation),
        (b"INVOCATION_ID", j.object_invocation),
        (b"_PID", j.pid),
    ] {
        if let Some(b) = v.and_then(JsonField::bytes) {
            f.set(key, b);
        }
    }
    Some(f)
}

/// The distribution a journal identifier, unit name or unit line names (`rke2`, `k3s-agent`,
/// `rke2-server.service`), from every distribution's binary name.
pub(crate) fn distro_named(word: &str) -> Option<distro::Distro> {
    // The longest binary that names the word, so a name that starts with another's is told
    // right (every journal line asks: no allocation).
    distro::Distro::ALL
        .iter()
        .copied()
        .filter(|d| {
            let b = d.facts().binary;
            word.starts_with(b)
                && word[b.len()..]
                    .chars()
                    .next()
                    .is_none_or(|c| !c.is_ascii_alphanumeric())
        })
        .max_by_key(|d| d.facts().binary.len())
}

/// The distribution a systemd line about a unit names: its unit (`rke2-server.service: …`) or
/// its unit's description (`Starting Rancher Kubernetes Engine v2 (server)...`, which systemd
/// prints without the unit's name).
fn distro_in_unit_line(msg: &str) -> Option<distro::Distro> {
    static UNITS: LazyLock<Vec<(distro::Distro, String)>> = LazyLock::new(|| {
        distro::Distro::ALL
            .iter()
            .flat_map(|&d| {
                d.facts()
                    .units
                    .iter()
                    .map(move |u| (d, format!("{u}.service")))
            })
            .collect()
    });
    let by_unit = msg.contains(".service").then(|| {
        UNITS
            .iter()
            .find(|(_, u)| msg.contains(u.as_str()))
            .map(|(d, _)| *d)
    });
    by_unit.flatten().or_else(|| {
        distro::Distro::ALL
            .iter()
            .copied()
            .find(|d| msg.contains(d.facts().unit_description))
    })
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
            short_cache: None,
            year: None,
            local_offset: None,
            last_ts: None,
            k3s_idents: Vec::new(),
            export: None,
            mono_offset: None,
            stats: Stats::default(),
        }
    }

    /// Feeds one physical line; finished entries are appended to `out`.
    pub(crate) fn push(&mut self, raw: &[u8], info: LineInfo, out: &mut Vec<Entry>) {
        self.push_scanned(raw, info, None, out);
    }

    /// `push` of a line with what the prescan found in it (`BatchLine::scan`).
    pub(crate) fn push_scanned(
        &mut self,
        raw: &[u8],
        info: LineInfo,
        scan: Option<Found>,
        out: &mut Vec<Entry>,
    ) {
        let clear = scan == Some(Found::NOTHING);
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

    /// A line of `journalctl -o export` output: consumed into the record being read (a record
    /// starts at `__CURSOR=` and ends at a blank line). False when the line is not one.
    fn export_line(&mut self, raw: &[u8], info: LineInfo, out: &mut Vec<Entry>) -> bool {
        let Some(rec) = self.export.as_mut() else {
            if raw.starts_with(b"__CURSOR=") {
                self.flush(out);
                self.export = Some(ExportRecord {
                    line: info.number,
                    fields: JournalFields::default(),
                    binary: None,
                });
                return true;
            }
            return false;
        };
        if let Some(bin) = rec.binary.as_mut() {
            // The line reader split the field's bytes at every `\n`: put them back.
            if bin.pieces > 0 {
                bin.bytes.push(b'\n');
            }
            bin.pieces += 1;
            bin.bytes.extend_from_slice(raw);
            let buf = &bin.bytes;
            if buf.len() >= 8 {
                let mut len = [0u8; 8];
                len.copy_from_slice(&buf[..8]);
                let len = u64::from_le_bytes(len);
                if len > MAX_BINARY_FIELD || buf.len() as u64 >= 8 + len {
                    let end = buf.len().min(8 + len.min(MAX_BINARY_FIELD) as usize);
                    let value = buf[8..end].to_vec();
                    let key = std::mem::take(&mut bin.key);
                    rec.binary = None;
                    rec.fields.set(&key, value);
                }
            }
            return true;
        }
        if raw.is_empty() || raw == b"\r" {
            if let Some(rec) = self.export.take() {
                self.end_export(rec, out);
            }
            return true;
        }
        match memchr::memchr(b'=', raw) {
            Some(i) => rec.fields.set(&raw[..i], raw[i + 1..].to_vec()),
            // `KEY` alone: a binary field, its length and bytes follow.
            None => {
                rec.binary = Some(Binary {
                    key: raw.to_vec(),
                    bytes: Vec::new(),
                    pieces: 0,
                })
            }
        }
        true
    }

    fn end_export(&mut self, rec: ExportRecord, out: &mut Vec<Entry>) {
        if rec.fields.message.is_none() {
            return;
        }
        let info = LineInfo {
            number: rec.line,
            dropped: 0,
        };
        let e = self.structured(rec.fields, Outer::JournalExport, info);
        self.flush(out);
        out.push(e);
    }

    /// One journal entry of the structured forms: its message, host, time, unit and invocation.
    fn structured(&mut self, f: JournalFields, outer: Outer, info: LineInfo) -> Entry {
        let mut e = Entry {
            kind: Kind::Foreign,
            line: info.number,
            outer,
            inner: Inner::Other,
            host: f.host,
            ts: None,
            ts_exact: false,
            text: String::new(),
            fatal: false,
            grep_prefix: false,
            dropped: info.dropped,
            invocation: f.invocation,
            distro: None,
            pid: f.pid.as_deref().and_then(|p| p.parse().ok()),
            may_match: None,
            clear: false,
            scan: None,
        };
        let raw = f.message.unwrap_or_default();
        // A message may hold line breaks: one line of text here.
        let raw: Vec<u8> = raw
            .into_iter()
            .map(|b| if b == b'\n' { b' ' } else { b })
            .collect();
        let msg = self.clean(&raw, false).0.into_owned();
        let ident = f.ident.or(f.comm).unwrap_or_default();
        let by_pid1 = f.pid.as_deref() == Some("1") || ident == "systemd";
        let about = f.object_unit.as_deref().and_then(distro_named);
        let own = f.unit.as_deref().and_then(distro_named);
        e.kind = if by_pid1 {
            if about.is_some() || UNIT.is_match(&msg) {
                Kind::Unit
            } else {
                Kind::Foreign
            }
        } else if own.is_some() {
            Kind::Log
        } else {
            self.journal_kind(&ident, &msg)
        };
        e.distro = about
            .or(own)
            .or_else(|| distro_named(&ident))
            .or_else(|| distro_in_unit_line(&msg));
        if e.kind == Kind::Foreign {
            self.stats.foreign += 1;
            e.text = msg;
        } else {
            self.k3s_text(msg, &mut e);
        }
        // The journal's own time wins over the text's (one clock for the whole file).
        if let Some(t) = f.realtime.and_then(DateTime::from_timestamp_micros) {
            self.set_exact(&mut e, t);
        }
        self.stats.count_outer(outer);
        self.in_output = false;
        e
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

    /// Lossy UTF-8 without the line end, colours and control characters; and its width.
    /// `plain`: the line is known to be printable ASCII already (the prescan scanned it).
    /// A printable-ASCII line is the text as it is, borrowed: most lines only lend a part of
    /// it to their entry (the message after a journal prefix), copied once there.
    fn clean<'r>(&mut self, raw: &'r [u8], plain: bool) -> (Cow<'r, str>, usize) {
        // Nearly every line is printable ASCII: one pass tells, and nothing is left to clean.
        if raw.first() != Some(&b'`') && (plain || plain_ascii(raw)) {
            let s = std::str::from_utf8(raw).unwrap_or_default();
            return (Cow::Borrowed(s), raw.len());
        }
        let mut s = match std::str::from_utf8(raw) {
            Ok(s) => s.to_string(),
            Err(_) => {
                self.stats.not_utf8 += 1;
                String::from_utf8_lossy(raw).into_owned()
            }
        };
        if s.ends_with('\r') {
            self.stats.crlf += 1;
            s.pop();
        }
        if s.contains('\u{1b}') {
            self.stats.ansi += 1;
            s = ANSI.replace_all(&s, "").into_owned();
        }
        let ascii = s.is_ascii();
        let controls = s.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f)
            || (!ascii && s.chars().any(|c| c.is_control() && c != '\t'));
        if controls {
            s.retain(|c| !c.is_control() || c == '\t');
        }
        // A line pasted in a Markdown code span: `Sep 26 10:38:36 node2 k3s[1]: …`
        if s.starts_with('`') && !s.starts_with("```") {
            s = s.trim_start_matches('`').to_string();
            if s.ends_with('`') {
                s.pop();
            }
        }
        let width = if s.is_ascii() {
            s.len()
        } else {
            s.chars().count()
        };
        (Cow::Owned(s), width)
    }

    fn classify(&mut self, text: Cow<'_, str>, info: LineInfo) -> Entry {
        let mut e = Entry {
            kind: Kind::Output,
            line: info.number,
            outer: Outer::Bare,
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
        };
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
            e.kind = Kind::Prompt(p.clone());
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

    /// Fills in what k3s's own text says: its form, its time, whether it is fatal.
    fn k3s_text(&mut self, text: String, e: &mut Entry) {
        self.k3s_text_timed(text, e, false);
    }

    /// `k3s_text` for a line whose tool prefix gives the time (`prefix_time`): klog's own time is
    /// not parsed then (the prefix's wins); returns logrus's own time, which places the prefix's.
    fn k3s_text_timed(
        &mut self,
        text: String,
        e: &mut Entry,
        prefix_time: bool,
    ) -> Option<DateTime<Utc>> {
        e.inner = inner_form(&text);
        match e.inner {
            Inner::Logrus => self.stats.logrus += 1,
            Inner::OldLogrus => self.stats.old_logrus += 1,
            Inner::Klog => self.stats.klog += 1,
            Inner::Other => {}
        }
        e.text = text;
        let mut inner = None;
        // Only logrus forms carry `time="…"` / `INFO[…]`.
        if matches!(e.inner, Inner::Logrus | Inner::OldLogrus) {
            if let Some(ts) = inner_time_of(&e.text) {
                self.text_offset = Some(*ts.offset());
                let utc = ts.with_timezone(&Utc);
                inner = Some(utc);
                self.set_exact(e, utc);
            }
        } else if e.inner == Inner::Klog && !prefix_time {
            self.klog_time(e);
        }
        refresh_level(e);
        inner
    }

    /// klog prints `I0926 10:38:36.608000` in the process's local time, without year or zone:
    /// placed with the year and zone of k3s's own logrus lines before it, when there are any.
    fn klog_time(&mut self, e: &mut Entry) {
        let (Some(year), Some(off)) = (self.year, self.text_offset) else {
            return;
        };
        let Some(c) = KLOG_TIME.captures(&e.text) else {
            return;
        };
        let stamp = format!("{year}-{}-{} {}", &c[1], &c[2], &c[3]);
        if let Ok(n) = NaiveDateTime::parse_from_str(&stamp, "%Y-%m-%d %H:%M:%S%.f") {
            if let Some(t) = off.from_local_datetime(&n).single() {
                self.set_exact(e, t.with_timezone(&Utc));
            }
        }
    }

    /// Recognises a tool prefix; fills `e` and returns true when one is found.
    fn split_outer(&mut self, text: &str, e: &mut Entry) -> bool {
        if let Some(c) = text
            .starts_with("[pod/")
            .then(|| KUBECTL_PREFIX.captures(text))
            .flatten()
        {
            let rest = text[c.get(0).map_or(0, |m| m.end())..].to_string();
            let pod = c.name("pod").map(|m| m.as_str().to_string());
            // `--prefix --timestamps` puts the time after the prefix.
            if !self.split_docker(&rest, e) {
                self.k3s_text(rest, e);
            }
            e.kind = Kind::Log;
            e.host = pod;
            e.outer = Outer::KubectlPrefix;
            self.stats.count_outer(Outer::KubectlPrefix);
            self.in_output = false;
            return true;
        }
        // The journal's short form is by far the most common: read by hand (a regex capture
        // and chrono's format parser cost more than the rest of a line's work together).
        let first = text.as_bytes().first().copied().unwrap_or(0);
        let found = if first.is_ascii_uppercase() {
            match short_prefix(text) {
                Some(p) => Some((Outer::JournalShort, p)),
                None => regex_prefix(&JOURNAL_FULL, text)
                    .map(|p| (Outer::JournalFull, p))
                    .or_else(|| {
                        regex_prefix(&JOURNAL_IDENT, text).map(|p| (Outer::JournalIdent, p))
                    }),
            }
        } else if first.is_ascii_digit() {
            regex_prefix(&JOURNAL_ISO, text)
                .map(|p| (Outer::JournalIso, p))
                .or_else(|| regex_prefix(&JOURNAL_UNIX, text).map(|p| (Outer::JournalUnix, p)))
        } else if first == b'[' {
            regex_prefix(&JOURNAL_MONOTONIC, text).map(|p| (Outer::JournalMonotonic, p))
        } else if first.is_ascii_lowercase() || first == b'_' {
            regex_prefix(&JOURNAL_IDENT, text).map(|p| (Outer::JournalIdent, p))
        } else {
            None
        };
        if let Some((outer, p)) = found {
            let ts_text = &text[p.ts.clone()];
            let ident = &text[p.ident.clone()];
            let msg = text[p.end..].to_string();
            e.outer = outer;
            e.host = p.host.clone().map(|h| text[h].to_string());
            e.pid = p.pid;
            e.kind = self.journal_kind(ident, &msg);
            let inner = if e.kind == Kind::Foreign {
                self.stats.foreign += 1;
                e.text = msg;
                inner_time_of(&e.text).map(|t| t.with_timezone(&Utc))
            } else {
                // The message itself: `e.text` is filled below.
                e.distro = distro_named(ident).or_else(|| distro_in_unit_line(&msg));
                // The prefix's time wins over the text's own (one clock for the whole file).
                self.k3s_text_timed(msg, e, true)
            };
            self.stats.count_outer(outer);
            self.journal_time(outer, ts_text, p.stamp, inner, e);
            self.in_output = false;
            return true;
        }
        if first.is_ascii_digit() && self.split_docker(text, e) {
            self.stats.count_outer(Outer::Docker);
            return true;
        }
        false
    }

    /// `2026-11-30T09:00:01.123456789Z text`.
    fn split_docker(&mut self, text: &str, e: &mut Entry) -> bool {
        let Some(c) = DOCKER.captures(text) else {
            return false;
        };
        let ts = c.name("ts").and_then(|m| parse_rfc3339(m.as_str()));
        let msg = text[c.get(0).map_or(0, |m| m.end())..].to_string();
        self.k3s_text(msg, e);
        e.kind = Kind::Log;
        e.outer = Outer::Docker;
        if let Some(ts) = ts {
            self.set_exact(e, ts);
        }
        self.in_output = false;
        true
    }

    fn journal_kind(&mut self, ident: &str, msg: &str) -> Kind {
        if is_distribution_binary(ident) || self.k3s_idents.iter().any(|i| i == ident) {
            return Kind::Log;
        }
        if ident == "systemd" || ident == "init" {
            return if UNIT.is_match(msg) {
                Kind::Unit
            } else {
                Kind::Foreign
            };
        }
        // k3s run under another name (a custom unit): its banner tells.
        if super::banner::is_banner(msg) {
            self.k3s_idents.push(ident.to_string());
            return Kind::Log;
        }
        Kind::Foreign
    }

    fn journal_time(
        &mut self,
        outer: Outer,
        ts_text: &str,
        stamp: Option<Stamp>,
        inner: Option<DateTime<Utc>>,
        e: &mut Entry,
    ) {
        match outer {
            Outer::JournalIso => {
                if let Some(ts) = parse_rfc3339(&with_colon_offset(ts_text)) {
                    self.set_exact(e, ts);
                }
            }
            Outer::JournalUnix => {
                if let Some(ts) =
                    seconds(ts_text).and_then(|d| DateTime::UNIX_EPOCH.checked_add_signed(d))
                {
                    self.set_exact(e, ts);
                }
            }
            Outer::JournalMonotonic => {
                // Seconds since the host booted: on the wall clock once a line carrying k3s's
                // own time tells the offset; until then on a clock of its own (not exact).
                let Some(mono) = seconds(ts_text) else { return };
                if let Some(t) = inner {
                    self.mono_offset = Some(t - (DateTime::UNIX_EPOCH + mono));
                }
                let ts = DateTime::UNIX_EPOCH + mono + self.mono_offset.unwrap_or_default();
                if self.mono_offset.is_some() {
                    self.set_exact(e, ts);
                } else {
                    e.ts = Some(ts);
                    e.ts_exact = false;
                    self.last_ts = Some(ts);
                }
            }
            Outer::JournalFull => {
                // `Fri 2024-09-13 10:00:00.123 UTC`: the zone is an abbreviation; only UTC is sure.
                let mut parts = ts_text.splitn(2, ' ');
                let _weekday = parts.next();
                let rest = parts.next().unwrap_or("");
                let (naive, zone) = rest.rsplit_once(' ').unwrap_or((rest, ""));
                if let Ok(n) = NaiveDateTime::parse_from_str(naive, "%Y-%m-%d %H:%M:%S%.f") {
                    if zone == "UTC" || zone == "GMT" {
                        self.set_exact(e, Utc.from_utc_datetime(&n));
                    } else {
                        self.local(e, n, inner);
                    }
                }
            }
            Outer::JournalShort => {
                // Many lines share a second: parse each stamp once.
                if inner.is_none() {
                    if let Some((text, ts, exact)) = &self.short_cache {
                        if text == ts_text {
                            e.ts = Some(*ts);
                            e.ts_exact = *exact;
                            return;
                        }
                    }
                }
                let year = inner
                    .map(|t| t.year())
                    .or(self.year)
                    .unwrap_or_else(|| Utc::now().year());
                if let Some(mut n) = stamp.and_then(|st| st.at(year)) {
                    // A journal that runs over New Year: times jump back by most of a year.
                    if inner.is_none() {
                        if let Some(last) = self.last_ts {
                            if last.naive_utc() - n > Duration::days(180) {
                                n = n.with_year(year + 1).unwrap_or(n);
                            }
                        }
                    }
                    self.local(e, n, inner);
                    if let Some(ts) = e.ts {
                        // The cache's string is reused: this runs on every journal line.
                        match &mut self.short_cache {
                            Some((text, at, exact)) => {
                                text.clear();
                                text.push_str(ts_text);
                                *at = ts;
                                *exact = e.ts_exact;
                            }
                            None => self.short_cache = Some((ts_text.to_string(), ts, e.ts_exact)),
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// A host-local time without zone: placed with the offset learned from lines that carry
    /// an exact time too, so every line of one journal sits on the same clock.
    fn local(&mut self, e: &mut Entry, naive: NaiveDateTime, inner: Option<DateTime<Utc>>) {
        if let Some(exact) = inner {
            let off = naive - exact.naive_utc();
            // Zones are whole quarter hours; anything else is two clocks disagreeing.
            let mins = off.num_minutes();
            if mins % 15 == 0 && mins.abs() <= 14 * 60 {
                self.local_offset = Some(Duration::minutes(mins));
            }
        }
        match self.local_offset {
            Some(off) => {
                let ts = Utc.from_utc_datetime(&(naive - off));
                self.set_exact(e, ts);
            }
            None => {
                let ts = Utc.from_utc_datetime(&naive);
                e.ts = Some(ts);
                e.ts_exact = false;
                self.last_ts = Some(ts);
            }
        }
    }

    fn set_exact(&mut self, e: &mut Entry, ts: DateTime<Utc>) {
        e.ts = Some(ts);
        e.ts_exact = true;
        self.year = Some(ts.year());
        self.last_ts = Some(ts);
    }
}

/// Where the parts of a journal line's prefix are.
struct Prefix {
    ts: std::ops::Range<usize>,
    /// None for a journal line without host (`k3s[123]: …`).
    host: Option<std::ops::Range<usize>>,
    pid: Option<u32>,
    ident: std::ops::Range<usize>,
    /// Where the message starts.
    end: usize,
    /// The short form's stamp, already read.
    stamp: Option<Stamp>,
}

/// `Sep 26 10:38:36.123456` without its year.
#[derive(Debug, Clone, Copy)]
struct Stamp {
    month: u32,
    day: u32,
    h: u32,
    m: u32,
    s: u32,
    nanos: u32,
}

impl Stamp {
    fn at(self, year: i32) -> Option<NaiveDateTime> {
        chrono::NaiveDate::from_ymd_opt(year, self.month, self.day)?
            .and_hms_nano_opt(self.h, self.m, self.s, self.nanos)
    }
}

fn regex_prefix(re: &Regex, text: &str) -> Option<Prefix> {
    let c = re.captures(text)?;
    Some(Prefix {
        ts: c.name("ts")?.range(),
        host: c.name("host").map(|m| m.range()),
        pid: c.name("pid").and_then(|m| m.as_str().parse().ok()),
        ident: c.name("ident")?.range(),
        end: c.get(0)?.end(),
        stamp: None,
    })
}

/// `Sep 26 10:38:36[.123456] host ident[pid]: ` read by hand (journalctl's default form, and
/// syslog's): the same shape `JOURNAL_SHORT` describes.
fn short_prefix(text: &str) -> Option<Prefix> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let b = text.as_bytes();
    // Any capitalised three-letter month, as the regex has it; only English ones give a time
    // (a journal printed in another locale is read, without times).
    let word = b.get(..3)?;
    if !(word[0].is_ascii_uppercase() && word[1..].iter().all(u8::is_ascii_lowercase)) {
        return None;
    }
    let month = MONTHS
        .iter()
        .position(|m| word == m.as_bytes())
        .map(|m| m as u32 + 1);
    let mut i = 3;
    let num = |i: &mut usize, max: usize| -> Option<u32> {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() && *i - start < max {
            *i += 1;
        }
        (*i > start).then(|| text[start..*i].parse().ok()).flatten()
    };
    let expect = |i: &mut usize, c: u8| -> Option<()> { (b.get(*i) == Some(&c)).then(|| *i += 1) };
    expect(&mut i, b' ')?;
    if b.get(i) == Some(&b' ') {
        i += 1;
    }
    let day = num(&mut i, 2)?;
    expect(&mut i, b' ')?;
    let h = num(&mut i, 2)?;
    expect(&mut i, b':')?;
    let m = num(&mut i, 2)?;
    expect(&mut i, b':')?;
    let sec = num(&mut i, 2)?;
    let mut nanos = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        let frac = num(&mut i, 9)?;
        nanos = frac * 10u32.pow(9 - (i - start) as u32);
    }
    let ts_end = i;
    expect(&mut i, b' ')?;
    let host_start = i;
    while i < b.len() && b[i] != b' ' {
        i += 1;
    }
    if i == host_start {
        return None;
    }
    let host = host_start..i;
    expect(&mut i, b' ')?;
    let ident_start = i;
    if !b
        .get(i)
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
    {
        return None;
    }
    while i < b.len() && (b[i].is_ascii_alphanumeric() || b"_.@/-".contains(&b[i])) {
        i += 1;
    }
    let ident = ident_start..i;
    let mut pid = None;
    if b.get(i) == Some(&b'[') {
        i += 1;
        pid = Some(num(&mut i, 10)?);
        expect(&mut i, b']')?;
    }
    expect(&mut i, b':')?;
    if b.get(i) == Some(&b' ') {
        i += 1;
    }
    Some(Prefix {
        ts: 0..ts_end,
        host: Some(host),
        pid,
        ident,
        end: i,
        stamp: month.map(|month| Stamp {
            month,
            day,
            h,
            m,
            s: sec,
            nanos,
        }),
    })
}

/// `1700000000.123456` (or `  12.345678`) as a duration.
fn seconds(text: &str) -> Option<Duration> {
    let t = text.trim();
    let (whole, frac) = t.split_once('.').unwrap_or((t, ""));
    let secs: i64 = whole.parse().ok()?;
    let digits = frac.len().min(9);
    let nanos: i64 = if digits == 0 {
        0
    } else {
        frac[..digits].parse::<i64>().ok()? * 10i64.pow(9 - digits as u32)
    };
    Duration::try_seconds(secs).map(|d| d + Duration::nanoseconds(nanos))
}

/// `+0000` → `+00:00`, so RFC 3339 parsing takes it.
fn with_colon_offset(s: &str) -> String {
    let b = s.as_bytes();
    if b.len() > 5 {
        let tail = &s[s.len() - 5..];
        if (tail.starts_with('+') || tail.starts_with('-'))
            && tail[1..].chars().all(|c| c.is_ascii_digit())
        {
            return format!("{}{}:{}", &s[..s.len() - 5], &tail[..3], &tail[3..]);
        }
    }
    s.to_string()
}

fn parse_rfc3339(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The time inside k3s's own text: logrus `time="…"` or old `INFO[2019-…]`.
fn inner_time_of(text: &str) -> Option<DateTime<chrono::FixedOffset>> {
    // Nearly every logrus line's time is RFC 3339 in the one shape logrus writes: read by hand
    // (the regex capture and chrono's parser were most of a logrus line's cost); any other
    // shape goes the general way.
    if let Some(t) = text.strip_prefix("time=\"").and_then(logrus_stamp) {
        return Some(t);
    }
    let t = match LOGRUS_TIME.captures(text) {
        Some(c) => c.get(1),
        None => OLD_LOGRUS.captures(text).and_then(|c| c.get(2)),
    }?;
    DateTime::parse_from_rfc3339(t.as_str()).ok()
}

/// `2025-09-26T10:38:36[.fraction](Z|±hh:mm)"`: the time logrus writes (RFC 3339, `T`, at
/// most nine digits of fraction), up to its closing quote; None for any other shape (then
/// `inner_time_of` asks the regex and chrono, whose answer this one always equals where it
/// gives one: `logrus_stamp_by_hand_agrees_with_chrono`).
fn logrus_stamp(t: &str) -> Option<DateTime<chrono::FixedOffset>> {
    let b = t.as_bytes();
    let digits = |at: usize, n: usize| -> Option<u32> {
        let d = b.get(at..at + n)?;
        d.iter()
            .all(u8::is_ascii_digit)
            .then(|| d.iter().fold(0u32, |acc, c| acc * 10 + u32::from(c - b'0')))
    };
    let sep = |at: usize, c: u8| b.get(at) == Some(&c);
    if !(sep(4, b'-') && sep(7, b'-') && sep(10, b'T') && sep(13, b':') && sep(16, b':')) {
        return None;
    }
    let (year, month, day) = (digits(0, 4)?, digits(5, 2)?, digits(8, 2)?);
    let (h, m, sec) = (digits(11, 2)?, digits(14, 2)?, digits(17, 2)?);
    let mut i = 19;
    let mut nanos = 0;
    if sep(i, b'.') {
        let start = i + 1;
        let mut end = start;
        while end < b.len() && b[end].is_ascii_digit() {
            end += 1;
        }
        let n = end - start;
        if n == 0 || n > 9 {
            return None;
        }
        nanos = digits(start, n)? * 10u32.pow(9 - n as u32);
        i = end;
    }
    let offset = match b.get(i)? {
        b'Z' => {
            i += 1;
            0
        }
        c @ (b'+' | b'-') => {
            if !sep(i + 3, b':') {
                return None;
            }
            let (oh, om) = (digits(i + 1, 2)?, digits(i + 4, 2)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let secs = (oh * 3600 + om * 60) as i32;
            i += 6;
            if *c == b'-' {
                -secs
            } else {
                secs
            }
        }
        _ => return None,
    };
    if !sep(i, b'"') || sec > 59 || h > 23 || m > 59 {
        return None;
    }
    let date = chrono::NaiveDate::from_ymd_opt(i32::try_from(year).ok()?, month, day)?;
    let naive = date.and_hms_nano_opt(h, m, sec, nanos)?;
    chrono::FixedOffset::east_opt(offset)?
        .from_local_datetime(&naive)
        .single()
}

pub(crate) fn inner_form(text: &str) -> Inner {
    // The first byte rules out most forms before any regex runs (every line asks).
    let first = text.as_bytes().first().copied().unwrap_or(0);
    if text.starts_with("time=\"") || (matches!(first, b't' | b'l') && LOGRUS_LEVEL.is_match(text))
    {
        Inner::Logrus
    } else if matches!(first, b'I' | b'W' | b'E' | b'F' | b'D' | b'T' | b'P')
        && text.as_bytes().get(4) == Some(&b'[')
        && OLD_LOGRUS.is_match(text)
    {
        Inner::OldLogrus
    } else if matches!(first, b'I' | b'W' | b'E' | b'F') && is_klog(text) {
        Inner::Klog
    } else {
        Inner::Other
    }
}

/// logrus Fatal and Panic end the process: the boot is over.
/// `KLOG`'s match, read by hand: every line of kubelet's chatter asks, and the regex's
/// `[^\]]+\]` walk cost more than the rest of the line's reading. Where a byte the regex's
/// Unicode `\d`/`\s` might take is not ASCII, the regex answers.
fn is_klog(text: &str) -> bool {
    let b = text.as_bytes();
    // `[IWEF]\d{4} \d\d:\d\d:\d\d\.`
    const SHAPE: &[u8] = b"X0000 00:00:00.";
    if b.len() < SHAPE.len() {
        return false;
    }
    for (&want, &c) in SHAPE.iter().zip(b) {
        let ok = match want {
            b'X' => matches!(c, b'I' | b'W' | b'E' | b'F'),
            b'0' => c.is_ascii_digit(),
            _ => c == want,
        };
        if !ok {
            return c >= 0x80 && KLOG.is_match(text);
        }
    }
    let mut i = SHAPE.len();
    // Runs of ASCII digits and whitespace; None where a non-ASCII byte ends the run.
    let run = |i: &mut usize, class: fn(&u8) -> bool| -> Option<bool> {
        let start = *i;
        while *i < b.len() && class(&b[*i]) {
            *i += 1;
        }
        if b.get(*i).is_some_and(|c| *c >= 0x80) {
            return None;
        }
        Some(*i > start)
    };
    let space = |c: &u8| matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r');
    // `\d+\s+\d+ `: the classes are disjoint, so each greedy run is the only way to match.
    for class in [
        u8::is_ascii_digit as fn(&u8) -> bool,
        space,
        u8::is_ascii_digit,
    ] {
        match run(&mut i, class) {
            Some(true) => {}
            Some(false) => return false,
            None => return KLOG.is_match(text),
        }
    }
    if b.get(i) != Some(&b' ') {
        return false;
    }
    i += 1;
    // `[^\]]+\] `: the first `]` after at least one other byte, then a space.
    memchr::memchr(b']', &b[i..]).is_some_and(|j| j > 0 && b.get(i + j + 1) == Some(&b' '))
}

/// False only where `GAP` cannot match: it is asked of every line, and a regex answering on
/// a second thread (inspect reads large files on two) costs a trip through the regex's shared
/// cache pool each time. A gap marker starts, after an optional `[`, `<` or `(` and spaces,
/// with `.`, `…`, a digit or one of its words.
fn may_be_gap(t: &str) -> bool {
    let s = t.trim_start_matches(['[', '<', '(']).trim_start();
    let b = s.as_bytes();
    // Unicode case folding has non-ASCII forms of `s` and `k` (ſ, the Kelvin sign), and `\d`
    // non-ASCII digits: a non-ASCII byte near the start goes to the regex.
    if b.iter().take(16).any(|c| *c >= 0x80) {
        return true;
    }
    match b.first() {
        Some(c) if *c == b'.' || c.is_ascii_digit() => true,
        Some(_) => ["snip", "trunc", "omit", "skip", "remov"]
            .iter()
            .any(|w| b.len() >= w.len() && b[..w.len()].eq_ignore_ascii_case(w.as_bytes())),
        None => true,
    }
}

/// Whether the line says the process ends: logrus's Fatal and Panic levels, or the Go runtime's
/// own report of a crash, which it writes to stderr before exiting with status 2 — an uncaught
/// panic (`panic: …`, runtime/panic.go `printpanics`) or a fatal runtime error (`fatal error:
/// …`, `runtime.throw`/`fatal`). A panic that something recovered is reported otherwise
/// (apimachinery's `Observed a panic: …`, a stack frame `panic(0x…)`) and is no end.
fn refresh_level(e: &mut Entry) {
    e.fatal = match e.inner {
        Inner::Logrus => logrus_fatal(&e.text),
        Inner::OldLogrus => e.text.starts_with("FATA[") || e.text.starts_with("PANI["),
        Inner::Other => go_crash(&e.text),
        Inner::Klog => false,
    };
}

/// `LOGRUS_FATAL`'s match, read by hand on ASCII text (every logrus line asks; the regex's
/// Unicode `\s` and `\b` answer the rest): `level=fatal` or `level=panic` at the start or
/// after whitespace, and no word character after it.
fn logrus_fatal(text: &str) -> bool {
    if !text.is_ascii() {
        return LOGRUS_FATAL.is_match(text);
    }
    let b = text.as_bytes();
    // The regex's `\s` on ASCII: tab, line feed, vertical tab, form feed, carriage return, space.
    let space = |c: u8| matches!(c, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ');
    memchr::memmem::find_iter(b, b"level=").any(|i| {
        let rest = &b[i + 6..];
        (i == 0 || space(b[i - 1]))
            && (rest.starts_with(b"fatal") || rest.starts_with(b"panic"))
            && rest
                .get(5)
                .is_none_or(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
    })
}

/// The first line of the Go runtime's report of a crash (`refresh_level`).
fn go_crash(text: &str) -> bool {
    text.starts_with("panic: ") || text.starts_with("fatal error: ")
}

/// An odd number of unescaped double quotes: a logrus value was cut by a line wrap.
fn open_quote(s: &str) -> bool {
    let mut open = false;
    let mut escaped = false;
    for c in s.chars() {
        match c {
            '\\' if !escaped => {
                escaped = true;
                continue;
            }
            '"' if !escaped => open = !open,
            _ => {}
        }
        escaped = false;
    }
    open
}

/// A shell prompt and its command: `$ cmd`, `user@host:~$ cmd`, `[root@host ~]# cmd`, or
/// `# cmd` for a handful of commands (a bare `# ` also starts Prometheus `# HELP` lines).
fn prompt(line: &str) -> Option<Prompt> {
    let cmd = if let Some(rest) = line.strip_prefix("$ ") {
        rest
    } else if let Some(c) = maybe_user_at_host(line)
        .then(|| PROMPT.captures(line))
        .flatten()
    {
        c.name("cmd").map_or("", |m| m.as_str())
    } else if let Some(rest) = line.strip_prefix("# ") {
        let first = rest.split_whitespace().next().unwrap_or("");
        if !ROOT_COMMANDS.contains(&first) && !is_distribution_binary(first) {
            return None;
        }
        rest
    } else {
        return None;
    };
    let command = cmd.trim().to_string();
    let words: Vec<&str> = command
        .split('|')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .filter(|w| *w != "sudo")
        .collect();
    let node = match words.as_slice() {
        ["docker" | "podman" | "nerdctl", "logs", rest @ ..]
        | ["docker" | "podman", "container", "logs", rest @ ..]
        | ["kubectl", "logs", rest @ ..] => last_operand(rest),
        _ => distribution_logs_operands(&words).and_then(last_operand),
    };
    let filters = command.split('|').skip(1).any(|stage| {
        let w = stage.split_whitespace().next().unwrap_or("");
        matches!(w, "grep" | "egrep" | "fgrep" | "rg" | "awk" | "sed")
    }) || words
        .first()
        .is_some_and(|w| matches!(*w, "grep" | "egrep" | "rg"));
    Some(Prompt {
        command,
        node,
        filters,
    })
}

/// Whether `PROMPT` can match: its `user@host` is the line's first word (`[\w.-]` holds no
/// space) or follows a `[`. Every line asks; only its first word is read.
fn maybe_user_at_host(line: &str) -> bool {
    line.starts_with('[')
        || line
            .split(char::is_whitespace)
            .next()
            .is_some_and(|w| w.contains('@'))
}

/// The name a `docker logs`/`kubectl logs` command reads: its last word that is not an option
/// or an option's value.
fn last_operand(words: &[&str]) -> Option<String> {
    const WITH_VALUE: [&str; 12] = [
        "--since",
        "--until",
        "-n",
        "--tail",
        "-c",
        "--container",
        "-n=",
        "--namespace",
        "-l",
        "--selector",
        "--context",
        "--kubeconfig",
    ];
    let mut out = None;
    let mut skip = false;
    for w in words {
        if skip {
            skip = false;
            continue;
        }
        if w.starts_with('>') || *w == "2>&1" {
            break;
        }
        if w.starts_with('-') {
            skip = WITH_VALUE.contains(w);
            continue;
        }
        out = Some(w.trim_start_matches("pod/").to_string());
    }
    out.filter(|n| !n.is_empty())
}

/// Commands whose output is a log (so what follows their prompt is log, not command output).
fn is_log_command(cmd: &str) -> bool {
    let first_stage = cmd.split('|').next().unwrap_or("");
    let words: Vec<&str> = first_stage
        .split_whitespace()
        .filter(|w| *w != "sudo")
        .collect();
    matches!(
        words.as_slice(),
        ["journalctl", ..]
            | ["docker" | "podman" | "nerdctl", "logs", ..]
            | ["docker" | "podman", "container", "logs", ..]
            | ["kubectl", "logs", ..]
            | [
                "cat" | "tail" | "head" | "less" | "zcat" | "grep" | "egrep",
                ..
            ]
    ) || distribution_logs_operands(&words).is_some()
}

/// Whether a journal identifier or command is a distribution's binary (`k3s`, `k3s-agent`…).
fn is_distribution_binary(word: &str) -> bool {
    distro::Distro::ALL
        .iter()
        .any(|d| word.starts_with(d.facts().binary))
}

/// The operands of a distribution's own logs command: `<binary> logs …` or its kubectl
/// (`k3s kubectl logs …`), from the facts of every distribution.
fn distribution_logs_operands<'a>(words: &'a [&'a str]) -> Option<&'a [&'a str]> {
    distro::Distro::ALL.iter().find_map(|d| {
        let f = d.facts();
        let after = |prefix: &[&str]| {
            (words.len() > prefix.len()
                && words[..prefix.len()] == *prefix
                && words[prefix.len()] == "logs")
                .then(|| &words[prefix.len() + 1..])
        };
        after(&[f.binary]).or_else(|| after(f.kubectl))
    })
}

const ROOT_COMMANDS: [&str; 11] = [
    "journalctl",
    "kubectl",
    "docker",
    "crictl",
    "cat",
    "grep",
    "systemctl",
    "tail",
    "curl",
    "sudo",
    "podman",
];

static ANSI: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
        .expect("static regex")
});
static REBOOT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:Boot [0-9a-f]{32} --|Reboot --)").expect("static regex"));
static GAP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^(?:\.{3,}|…|\[(?:\.{3}|…)\]|[<\[(]?\s*(?:\.{3}|…)?\s*(?:\d+\s+(?:more\s+)?lines?\s+)?(?:snip|snipped|truncated|omitted|skipped|removed)\b.*)$",
    )
    .expect("static regex")
});
static PROMPT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?:[\w.-]+@[\w.-]+(?::[^\s$#]*)?|\[[\w.-]+@[\w.-]+[^\]]*\])\s?[$#]\s+(?P<cmd>.+)$",
    )
    .expect("static regex")
});
static GREP_PREFIX: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:[^\s:]+:)?\d+[:-]").expect("static regex"));
static KUBECTL_PREFIX: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\[pod/(?P<pod>[^/\]\s]+)/[^\]\s]+\] ").expect("static regex"));
// The prefix only: the message is the rest of the line (matching it too would make every line
// cost a capture over its whole length).
const IDENT: &str = r"(?P<host>\S+) (?P<ident>[A-Za-z_][\w.@/-]*)(?:\[(?P<pid>\d+)\])?: ?";
/// The short form as a regex: the specification `short_prefix` is tested against.
#[cfg(test)]
static JOURNAL_SHORT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"^(?P<ts>[A-Z][a-z]{{2}} {{1,2}}\d{{1,2}} \d\d:\d\d:\d\d(?:\.\d{{1,9}})?) {IDENT}"
    ))
    .expect("static regex")
});
static JOURNAL_ISO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"^(?P<ts>\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d{{1,9}})?(?:Z|[+-]\d\d:?\d\d)) {IDENT}"
    ))
    .expect("static regex")
});
static JOURNAL_FULL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"^(?P<ts>[A-Z][a-z]{{2}} \d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{{1,9}})? [A-Za-z0-9+-]{{1,6}}) {IDENT}"
    ))
    .expect("static regex")
});
static JOURNAL_UNIX: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(r"^(?P<ts>\d{{9,12}}\.\d{{1,9}}) {IDENT}")).expect("static regex")
});
static JOURNAL_MONOTONIC: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(r"^\[(?P<ts> *\d+\.\d{{1,9}})\] {IDENT}")).expect("static regex")
});
/// `k3s[2513]: …`: the pid is required (prose has `word: text` too).
static JOURNAL_IDENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?P<ts>)(?P<ident>[A-Za-z_][\w.@/-]*)\[(?P<pid>\d+)\]: ?").expect("static regex")
});
static DOCKER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d)) ")
        .expect("static regex")
});
/// Every distribution's unit names (its `units`, and its binary with `-agent`/`-server`, as
/// custom units name it) and unit descriptions, as regex alternations.
fn unit_words() -> (String, String) {
    let mut names = Vec::new();
    let mut descriptions = Vec::new();
    for d in distro::Distro::ALL {
        let f = d.facts();
        for n in f.units.iter().map(|u| u.to_string()).chain(
            ["", "-agent", "-server"]
                .iter()
                .map(|s| format!("{}{s}", f.binary)),
        ) {
            let n = regex::escape(&n);
            if !names.contains(&n) {
                names.push(n);
            }
        }
        descriptions.push(regex::escape(f.unit_description));
    }
    (names.join("|"), descriptions.join("|"))
}

static UNIT: LazyLock<Regex> = LazyLock::new(|| {
    let (names, descriptions) = unit_words();
    Regex::new(&format!(r"(?i)\b(?:{names})\.service\b|{descriptions}")).expect("static regex")
});
/// systemd's own words about a distribution's unit, as `-o cat` shows them (no identifier).
static UNIT_LINE: LazyLock<Regex> = LazyLock::new(|| {
    let (names, descriptions) = unit_words();
    Regex::new(&format!(
        r"^(?:(?:{names})\.service: |(?:Started|Starting|Stopping|Stopped|Failed to start) .*(?:{descriptions}))"
    ))
    .expect("static regex")
});
static LOGRUS_LEVEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:time=\S+ )?level=(?:trace|debug|info|warning|warn|error|fatal|panic) ")
        .expect("static regex")
});
static LOGRUS_FATAL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:^|\s)level=(?:fatal|panic)\b").expect("static regex"));
static LOGRUS_TIME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"^time="([^"]+)""#).expect("static regex"));
static OLD_LOGRUS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(INFO|WARN|ERRO|FATA|DEBU|TRAC|PANI)\[([^\]]*)\]").expect("static regex")
});
static KLOG_TIME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[IWEF](\d\d)(\d\d) (\d\d:\d\d:\d\d\.\d+)").expect("static regex")
});
static KLOG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [^\]]+\] ").expect("static regex")
});

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

/// Whether the start of an input looks binary rather than text: a NUL byte or mostly control
/// bytes before the first NUL-padded stretch. Only the start counts: a log whose tail is a run
/// of NULs (a file system that lost its last blocks in a crash) is still a log.
pub(crate) fn looks_binary(sample: &[u8]) -> bool {
    // `journalctl -o export` writes binary fields with their length in 8 bytes: text all the same.
    if sample.starts_with(b"__CURSOR=") {
        return false;
    }
    let head = &sample[..sample.len().min(1024)];
    if head.is_empty() {
        return false;
    }
    if memchr::memchr(0, head).is_some() {
        return true;
    }
    let controls = head
        .iter()
        .filter(|&&b| b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t' | 0x1b))
        .count();
    controls * 10 > head.len()
}

#[cfg(test)]
#[path = "formats_tests.rs"]
mod tests;
