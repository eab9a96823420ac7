//! `journalctl`'s text forms: a prefix of time, host and identifier before each message
//! (short, short-precise, short-iso, short-full, short-unix, short-monotonic, syslog's own
//! form, a grep's `k3s[1]: …`), the host's reboot markers, and the time each form gives.

use std::sync::LazyLock;

use chrono::{DateTime, Datelike, Duration, NaiveDateTime, TimeZone, Utc};
use regex::Regex;

use super::k3s_text::inner_time_of;
use super::units::{distro_in_unit_line, distro_named, is_distribution_binary, UNIT};
use super::{parse_rfc3339, Entry, Kind, Normaliser, Outer};

impl Normaliser {
    /// A journal line in one of its text forms (`Sep 26 10:38:36 host k3s[1]: …`, short-iso,
    /// short-full, short-unix, short-monotonic, `k3s[1]: …`); fills `e` and returns true when
    /// it is one.
    pub(super) fn split_journal(&mut self, text: &str, e: &mut Entry) -> bool {
        // The journal's short form is by far the most common: read by hand (a regex capture
        // and chrono's format parser cost more than the rest of a line's work together).
        let first = text.as_bytes().first().copied().unwrap_or(0);
        // The reading thread's preread, of this very text (`push_scanned`): its prefix and
        // the patterns matching its message.
        let (given, hits) = match self.preread.take() {
            Some(p) => (Some(p.prefix), p.hits),
            None => (None, None),
        };
        let found = if first.is_ascii_uppercase() {
            match given.or_else(|| short_prefix(text)) {
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
        let found = found.or_else(|| localised_prefix(text).map(|p| (Outer::JournalShort, p)));
        if let Some((outer, p)) = found {
            let ts_text = &text[p.ts.clone()];
            let ident = &text[p.ident.clone()];
            let msg = text[p.end..].to_string();
            e.outer = outer;
            e.hits = hits;
            e.host = p.host.clone().map(|h| self.host(&text[h]));
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
        false
    }

    pub(super) fn journal_kind(&mut self, ident: &str, msg: &str) -> Kind {
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
        if crate::inspect::banner::is_banner(msg) {
            self.k3s_idents.push(ident.to_string());
            return Kind::Log;
        }
        Kind::Foreign
    }

    pub(super) fn journal_time(
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
    pub(super) fn local(
        &mut self,
        e: &mut Entry,
        naive: NaiveDateTime,
        inner: Option<DateTime<Utc>>,
    ) {
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
}

/// Where the parts of a journal line's prefix are.
#[derive(Debug, Clone)]
pub(super) struct Prefix {
    pub(super) ts: std::ops::Range<usize>,
    /// None for a journal line without host (`k3s[123]: …`).
    pub(super) host: Option<std::ops::Range<usize>>,
    pub(super) pid: Option<u32>,
    pub(super) ident: std::ops::Range<usize>,
    /// Where the message starts.
    pub(super) end: usize,
    /// The short form's stamp, already read.
    pub(super) stamp: Option<Stamp>,
}

/// `Sep 26 10:38:36.123456` without its year.
#[derive(Debug, Clone, Copy)]
pub(super) struct Stamp {
    pub(super) month: u32,
    pub(super) day: u32,
    pub(super) h: u32,
    pub(super) m: u32,
    pub(super) s: u32,
    pub(super) nanos: u32,
}

impl Stamp {
    pub(super) fn at(self, year: i32) -> Option<NaiveDateTime> {
        chrono::NaiveDate::from_ymd_opt(year, self.month, self.day)?
            .and_hms_nano_opt(self.h, self.m, self.s, self.nanos)
    }
}

pub(super) fn regex_prefix(re: &Regex, text: &str) -> Option<Prefix> {
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
pub(super) fn short_prefix(text: &str) -> Option<Prefix> {
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
        // `str::parse` of the digits, without its set-up (this runs several times a line).
        (*i > start)
            .then(|| {
                b[start..*i].iter().try_fold(0u32, |acc, c| {
                    acc.checked_mul(10)?.checked_add(u32::from(c - b'0'))
                })
            })
            .flatten()
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

/// journalctl's short form with a month `short_prefix` does not read: printed in another locale
/// (journalctl's `%b` is the locale's: `Mär`, `févr.`, ` 9月`, `2월`), or with the date lost in a
/// paste (` 12:09:42 node k3s[22385]: …`, as k3s #6119 shows it). The host and identifier
/// count (the node, k3s's lines, systemd's about the unit); the stamp gives no time (no month).
/// Asked only of lines no other prefix fits, and cheap to refuse: the time must come within the
/// first 24 bytes, after nothing but spaces or a month word and a day.
pub(super) fn localised_prefix(text: &str) -> Option<Prefix> {
    let b = text.as_bytes();
    let colon = memchr::memchr(b':', &b[..b.len().min(24)])?;
    let start = colon.checked_sub(2)?;
    let is_time = |t: &[u8]| {
        t.len() >= 8
            && t[2] == b':'
            && t[5] == b':'
            && [0, 1, 3, 4, 6, 7].iter().all(|&i| t[i].is_ascii_digit())
    };
    if !is_time(&b[start..]) {
        return None;
    }
    let date = text[..start].trim_start_matches(' ');
    if !date.is_empty() {
        // `<month> <day> `: a word, one or two spaces, one or two digits, one space.
        let (month, day) = date.trim_end_matches(' ').rsplit_once(' ')?;
        let month = month.trim_end_matches(' ');
        let word = month.chars().count() <= 6
            && !month.is_empty()
            && month.chars().all(|c| c.is_alphanumeric() || c == '.')
            // A word of the locale's: letters not all ASCII (`Mär`, `9月`), or `févr.`-like.
            && (!month.is_ascii() || month.ends_with('.'));
        let day_ok = (1..=2).contains(&day.len()) && day.bytes().all(|c| c.is_ascii_digit());
        if !word || !day_ok || !date.ends_with(' ') || date.ends_with("  ") {
            return None;
        }
    }
    // The rest is the short form's: read it as `short_prefix` does, after an English stamp.
    let rest = &text[start..];
    let shown = format!("Jan 01 {rest}");
    let p = short_prefix(&shown)?;
    let shift = |i: usize| i + start - "Jan 01 ".len();
    let ts_end = shift(p.ts.end);
    Some(Prefix {
        ts: 0..ts_end,
        host: p.host.map(|h| shift(h.start)..shift(h.end)),
        pid: p.pid,
        ident: shift(p.ident.start)..shift(p.ident.end),
        end: shift(p.end),
        stamp: None,
    })
}

/// `1700000000.123456` (or `  12.345678`) as a duration.
pub(super) fn seconds(text: &str) -> Option<Duration> {
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
pub(super) fn with_colon_offset(s: &str) -> String {
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

pub(super) static REBOOT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:Boot [0-9a-f]{32} --|Reboot --)").expect("static regex"));

// The prefix only: the message is the rest of the line (matching it too would make every line
// cost a capture over its whole length).
pub(super) const IDENT: &str =
    r"(?P<host>\S+) (?P<ident>[A-Za-z_][\w.@/-]*)(?:\[(?P<pid>\d+)\])?: ?";

/// The short form as a regex: the specification `short_prefix` is tested against.
#[cfg(test)]
pub(super) static JOURNAL_SHORT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"^(?P<ts>[A-Z][a-z]{{2}} {{1,2}}\d{{1,2}} \d\d:\d\d:\d\d(?:\.\d{{1,9}})?) {IDENT}"
    ))
    .expect("static regex")
});

pub(super) static JOURNAL_ISO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"^(?P<ts>\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d{{1,9}})?(?:Z|[+-]\d\d:?\d\d)) {IDENT}"
    ))
    .expect("static regex")
});

pub(super) static JOURNAL_FULL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"^(?P<ts>[A-Z][a-z]{{2}} \d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{{1,9}})? [A-Za-z0-9+-]{{1,6}}) {IDENT}"
    ))
    .expect("static regex")
});

pub(super) static JOURNAL_UNIX: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(r"^(?P<ts>\d{{9,12}}\.\d{{1,9}}) {IDENT}")).expect("static regex")
});

pub(super) static JOURNAL_MONOTONIC: LazyLock<Regex> = LazyLock::new(|| {
    // `-o short-delta` adds the time since the entry before: `[  12.345678 <   0.000123>]`.
    Regex::new(&format!(
        r"^\[(?P<ts> *\d+\.\d{{1,9}})(?: <[ \d.]+>)?\] {IDENT}"
    ))
    .expect("static regex")
});

/// `k3s[2513]: …`: the pid is required (prose has `word: text` too).
pub(super) static JOURNAL_IDENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?P<ts>)(?P<ident>[A-Za-z_][\w.@/-]*)\[(?P<pid>\d+)\]: ?").expect("static regex")
});
