//! k3s's own text inside whatever prefix a tool put before it: logrus (`time="…" level=info
//! msg="…"`), the old `INFO[…]` form of 2019 releases, klog (`I0913 10:00:00.123456 …`), and
//! the Go runtime's report of a crash; its form, its time, whether it ends the process.

use std::sync::LazyLock;

use chrono::{DateTime, NaiveDateTime, TimeZone, Utc};
use regex::Regex;

use super::{Entry, Inner, Normaliser};

impl Normaliser {
    /// Fills in what k3s's own text says: its form, its time, whether it is fatal.
    pub(super) fn k3s_text(&mut self, text: String, e: &mut Entry) {
        self.k3s_text_timed(text, e, false);
    }

    /// `k3s_text` for a line whose tool prefix gives the time (`prefix_time`): klog's own time is
    /// not parsed then (the prefix's wins); returns logrus's own time, which places the prefix's.
    pub(super) fn k3s_text_timed(
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
        // The line search found neither fatal level: no logrus text taken from the line is
        // fatal (the other forms' tests are a prefix's).
        if e.inner == Inner::Logrus && self.line_scan.is_some_and(|f| f.extra & FATAL_BITS == 0) {
            e.fatal = false;
        } else {
            refresh_level(e);
        }
        inner
    }

    /// klog prints `I0926 10:38:36.608000` in the process's local time, without year or zone:
    /// placed with the year and zone of k3s's own logrus lines before it, when there are any.
    pub(super) fn klog_time(&mut self, e: &mut Entry) {
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
}

/// The time inside k3s's own text: logrus `time="…"` or old `INFO[2019-…]`.
pub(super) fn inner_time_of(text: &str) -> Option<DateTime<chrono::FixedOffset>> {
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
pub(super) fn logrus_stamp(t: &str) -> Option<DateTime<chrono::FixedOffset>> {
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

/// The words that make a logrus line fatal (`logrus_fatal`), among the prescan's words so that
/// a line without them needs no search of its own: the first extra words the line search is
/// given (`inspect::SCAN_WORDS`), `Found::extra`'s bits `FATAL_BITS`.
pub(crate) const FATAL_WORDS: [&str; 2] = ["level=fatal", "level=panic"];
pub(super) const FATAL_BITS: u64 = (1 << FATAL_WORDS.len()) - 1;

/// logrus Fatal and Panic end the process: the boot is over.
/// `KLOG`'s match, read by hand: every line of kubelet's chatter asks, and the regex's
/// `[^\]]+\]` walk cost more than the rest of the line's reading. Where a byte the regex's
/// Unicode `\d`/`\s` might take is not ASCII, the regex answers.
pub(super) fn is_klog(text: &str) -> bool {
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

/// Whether the line says the process ends: logrus's Fatal and Panic levels, or the Go runtime's
/// own report of a crash, which it writes to stderr before exiting with status 2 — an uncaught
/// panic (`panic: …`, runtime/panic.go `printpanics`) or a fatal runtime error (`fatal error:
/// …`, `runtime.throw`/`fatal`). A panic that something recovered is reported otherwise
/// (apimachinery's `Observed a panic: …`, a stack frame `panic(0x…)`) and is no end.
pub(super) fn refresh_level(e: &mut Entry) {
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
pub(super) fn logrus_fatal(text: &str) -> bool {
    if !text.is_ascii() {
        return LOGRUS_FATAL.is_match(text);
    }
    let b = text.as_bytes();
    // The regex's `\s` on ASCII: tab, line feed, vertical tab, form feed, carriage return, space.
    let space = |c: u8| matches!(c, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ');
    // The searcher is built once: building it was a tenth of a logrus line's cost.
    static LEVEL: LazyLock<memchr::memmem::Finder<'static>> =
        LazyLock::new(|| memchr::memmem::Finder::new("level="));
    LEVEL.find_iter(b).any(|i| {
        let rest = &b[i + 6..];
        (i == 0 || space(b[i - 1]))
            && (rest.starts_with(b"fatal") || rest.starts_with(b"panic"))
            && rest
                .get(5)
                .is_none_or(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
    })
}

/// The first line of the Go runtime's report of a crash (`refresh_level`).
pub(super) fn go_crash(text: &str) -> bool {
    text.starts_with("panic: ") || text.starts_with("fatal error: ")
}

/// An odd number of unescaped double quotes: a logrus value was cut by a line wrap.
pub(super) fn open_quote(s: &str) -> bool {
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

pub(super) static LOGRUS_LEVEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:time=\S+ )?level=(?:trace|debug|info|warning|warn|error|fatal|panic) ")
        .expect("static regex")
});

pub(super) static LOGRUS_FATAL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:^|\s)level=(?:fatal|panic)\b").expect("static regex"));

pub(super) static LOGRUS_TIME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"^time="([^"]+)""#).expect("static regex"));

pub(super) static OLD_LOGRUS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(INFO|WARN|ERRO|FATA|DEBU|TRAC|PANI)\[([^\]]*)\]").expect("static regex")
});

pub(super) static KLOG_TIME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[IWEF](\d\d)(\d\d) (\d\d:\d\d:\d\d\.\d+)").expect("static regex")
});

pub(super) static KLOG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [^\]]+\] ").expect("static regex")
});
