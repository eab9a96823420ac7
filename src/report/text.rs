//! Small helpers the renderers share: times, escaping, log lines.

use chrono::{DateTime, FixedOffset, Utc};

/// An RFC 3339 time from `result.json`; `None` when absent or malformed (reports degrade, they
/// do not fail, on a bad timestamp).
pub(crate) fn time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

pub(crate) fn time_fixed(s: &str) -> Option<DateTime<FixedOffset>> {
    DateTime::parse_from_rfc3339(s).ok()
}

pub(crate) fn opt_time(s: Option<&String>) -> Option<DateTime<Utc>> {
    s.and_then(|s| time(s))
}

/// `09:01:45` (UTC), the form people compare with k3s's own `time="…"`.
pub(crate) fn clock(s: &str) -> String {
    time(s)
        .map(|t| t.format("%H:%M:%S").to_string())
        .unwrap_or_else(|| s.to_string())
}

/// Seconds from `a` to `b`, when both parse.
pub(crate) fn seconds_between(a: &str, b: &str) -> Option<f64> {
    let (a, b) = (time(a)?, time(b)?);
    Some((b - a).num_milliseconds() as f64 / 1000.0)
}

/// `41s`, `1m 23s`.
pub(crate) fn human_secs(s: f64) -> String {
    let total = s.round().max(0.0) as i64;
    if total >= 60 {
        format!("{}m {:02}s", total / 60, total % 60)
    } else {
        format!("{total}s")
    }
}

/// Escapes text for HTML/SVG/XML content and attribute values.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Whether XML 1.0 cannot hold a character at all, escaped or not (C0 controls but tab, LF
/// and CR), or HTML reads it as a parse error (DEL, C1 controls, noncharacters such as
/// U+FFFE and U+FFFF).
fn unfit_for_markup(c: char) -> bool {
    let n = c as u32;
    (c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
        || (0xFDD0..=0xFDEF).contains(&n)
        || n & 0xFFFE == 0xFFFE
}

/// A whole XML or HTML document made valid whatever text went into it: each character markup
/// cannot hold is written as its JSON spelling `\uXXXX`, visible, as the terminal shows it
/// (`term::sanitize`). Run on the rendered document, so no field can be forgotten.
pub(crate) fn markup_safe(doc: String) -> String {
    if !doc.chars().any(unfit_for_markup) {
        return doc;
    }
    let mut out = String::with_capacity(doc.len() + 16);
    for c in doc.chars() {
        if unfit_for_markup(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// A fenced code block of `body` (its lines, each after `indent`, e.g. two spaces inside a
/// list item): the fence is one backtick longer than the longest run of backticks in `body`
/// (at least three), so no line of recorded output (`k3s -v`, a config, a log) can close it
/// early and turn the rest of report.md into Markdown of its own.
pub(crate) fn code_block(info: &str, body: &str, indent: &str) -> String {
    let fence = fence_for(body);
    let mut s = format!("{indent}{fence}{info}\n");
    let lines = body.strip_suffix('\n').unwrap_or(body);
    for l in lines.split('\n').filter(|_| !body.is_empty()) {
        s.push_str(indent);
        s.push_str(l);
        s.push('\n');
    }
    s.push_str(indent);
    s.push_str(&fence);
    s.push('\n');
    s
}

/// A code fence longer than any run of backticks in `body` (at least three).
pub(crate) fn fence_for(body: &str) -> String {
    let (mut longest, mut run) = (0, 0);
    for c in body.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat(longest.max(2) + 1)
}

/// A field Markdown shows on one line (a heading, a table cell, a list item): line breaks
/// become spaces, so text from result.json cannot start a heading, a list or a table of its
/// own in report.md.
pub(crate) fn one_line(s: &mut String) {
    if s.contains(['\n', '\r']) {
        *s = s
            .split(['\r', '\n'])
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
    }
}

/// Splits Docker's timestamp prefix off a log line: (`Some(time)`, rest) or (`None`, line).
pub(crate) fn split_docker_time(line: &str) -> (Option<&str>, &str) {
    match line.split_once(' ') {
        Some((t, rest)) if time(t).is_some() => (Some(t), rest),
        _ => (None, line),
    }
}

/// Shortens a long line (kubelet command lines run to 2,000 characters) for a report, keeping
/// its start, where k3s puts the message.
pub(crate) fn shorten(line: &str, max: usize) -> String {
    if line.chars().count() <= max {
        return line.to_string();
    }
    let cut: String = line.chars().take(max).collect();
    format!("{cut} …")
}

/// Joins names as people write them: `a`, `a and b`, `a, b and c`.
pub(crate) fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}
