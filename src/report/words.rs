//! Evidence in words a k3s maintainer reads without knowing repro: what was seen (or not seen)
//! in which boot of which node, quoting k3s's own messages — e.g. "no `Starting distributed
//! registry mirror at https://` line in etcd-2 boot 2 (412 lines), which reached `Running
//! kubelet` at 09:01:45 and went on past the 3s settle window".
//!
//! Which rule decided an observation is read from its evidence and its `reason` (written by
//! `crate::observe`); what a rule looked for comes from the run's `signals` record. Results
//! without that record (older runs) still get a sentence, only less specific.

use indexmap::IndexMap;

use super::text::{clock, shorten, split_docker_time};
use crate::result::{Evidence, EvidenceSource, Observation, Observed, Rule, RunResult};

/// Quoted messages longer than this are cut.
const QUOTE_MAX: usize = 140;

/// One observation as a sentence (no trailing full stop).
pub(crate) fn observation(
    r: &RunResult,
    o: &Observation,
    logs: &IndexMap<String, String>,
) -> String {
    let at = format!("{} boot {}", o.node, o.boot);
    let sig = r.signals.get(&o.signal);
    let first_log = o.evidence.iter().find(|e| e.source == EvidenceSource::Log);

    if let Some(p) = o
        .evidence
        .iter()
        .find(|e| e.source == EvidenceSource::Probe)
    {
        return probe(&at, p);
    }
    if o.observed == Observed::Unknown {
        return format!(
            "could not be decided in {at}: {}",
            o.reason.trim_end_matches('.')
        );
    }
    if let Some(d) = o
        .evidence
        .iter()
        .find(|e| e.source == EvidenceSource::Docker)
    {
        let last = o
            .evidence
            .iter()
            .rev()
            .find(|e| e.source == EvidenceSource::Log)
            .map(|e| format!("; its last line: {}", quote(&message(&e.text))))
            .unwrap_or_default();
        return format!("{at} {}{}{last}", d.text, when(d));
    }
    if o.reason.contains("settle") {
        let missing = sig
            .map(|s| patterns(&s.up))
            .filter(|p| !p.is_empty())
            .or_else(|| backticked(&o.reason).get(1).map(|p| quote(p)))
            .unwrap_or_else(|| "`up`".to_string());
        let reached = sig
            .map(|s| patterns(&s.settled_by))
            .filter(|p| !p.is_empty())
            .or_else(|| backticked(&o.reason).first().map(|p| quote(p)))
            .or_else(|| first_log.map(|e| quote(&message(&e.text))))
            .unwrap_or_else(|| "its settle line".to_string());
        let window = settle_window(&o.reason)
            .map(|w| format!(" and went on past the {w} settle window"))
            .unwrap_or_default();
        return format!(
            "no {missing} line in {at}{}, which reached {reached}{}{window}",
            line_count(r, o, logs),
            first_log.map(when).unwrap_or_default()
        );
    }
    // The after-feature rule: the boot reached a line k3s prints only after the feature's own
    // up line, and that up line never came — an absence, said with the line that bounds it.
    if o.rule == Rule::AfterFeature {
        let missing = sig
            .map(|s| patterns(&s.up))
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| "`up`".to_string());
        let bound = sig
            .map(|s| patterns(&s.settled_by))
            .filter(|p| !p.is_empty())
            .or_else(|| first_log.map(|e| quote(&message(&e.text))))
            .unwrap_or_else(|| "its settle line".to_string());
        return format!(
            "no {missing} line in {at}{} before {bound}{}, which {} prints after the feature's own",
            line_count(r, o, logs),
            first_log.map(when).unwrap_or_default(),
            r.distribution
        );
    }
    if o.reason.starts_with("values from") {
        let lines: Vec<String> = o
            .evidence
            .iter()
            .map(|e| format!("{}{}", quote(&message(&e.text)), when(e)))
            .collect();
        return if lines.is_empty() {
            format!("no line giving a value in {at}{}", line_count(r, o, logs))
        } else {
            format!("{} in {at}", lines.join(", "))
        };
    }
    match first_log {
        Some(e) => format!("{} in {at}{}", quote(&message(&e.text)), when(e)),
        None => format!("{at}: {}", o.reason.trim_end_matches('.')),
    }
}

/// ` at 09:01:45` for evidence with a time.
fn when(e: &Evidence) -> String {
    e.time
        .as_deref()
        .map(|t| format!(" at {}", clock(t)))
        .unwrap_or_default()
}

/// ` (412 lines)`: how much of the boot's log there was to look through.
fn line_count(r: &RunResult, o: &Observation, logs: &IndexMap<String, String>) -> String {
    r.boots
        .iter()
        .find(|b| b.node == o.node && b.boot == o.boot)
        .and_then(|b| logs.get(&b.log))
        .map(|t| {
            let n = t.lines().count();
            format!(" ({n} line{})", if n == 1 { "" } else { "s" })
        })
        .unwrap_or_default()
}

/// `$ k3s kubectl … → exit 1: Error from server …` as "`k3s kubectl …` in etcd-2 boot 2 exited 1: `Error …`".
fn probe(at: &str, e: &Evidence) -> String {
    let text = e.text.trim_start_matches("$ ");
    match text.split_once(" → exit ") {
        Some((cmd, rest)) => {
            let (code, out) = rest.split_once(": ").unwrap_or((rest, ""));
            let answer = if out.trim().is_empty() {
                "no output".to_string()
            } else {
                quote(out.trim())
            };
            format!("{} in {at} exited {code}: {answer}", quote(cmd))
        }
        None => format!("a probe in {at} answered {}", quote(text)),
    }
}

/// The message of a log line: logrus's `msg="…"` when it has one, else the line without
/// Docker's timestamp.
pub(crate) fn message(line: &str) -> String {
    let line = split_docker_time(line).1;
    if let Some(i) = line.find("msg=\"") {
        let rest = &line[i + 5..];
        let mut out = String::new();
        let mut chars = rest.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => {
                    if let Some(n) = chars.next() {
                        out.push(n);
                    }
                }
                '"' => return out,
                c => out.push(c),
            }
        }
        return out;
    }
    line.to_string()
}

/// Text in Markdown code quotes, shortened; backticks inside cannot end the quote early.
pub fn quote(s: &str) -> String {
    let s = shorten(s.trim(), QUOTE_MAX);
    if s.contains('`') {
        format!("`` {s} ``")
    } else {
        format!("`{s}`")
    }
}

/// The patterns a rule looks for, as words: `` `A` or `B` ``.
fn patterns(ps: &[String]) -> String {
    ps.iter()
        .map(|p| quote(&pattern_words(p)))
        .collect::<Vec<_>>()
        .join(" or ")
}

/// A regex from signals.yaml as the text it matches, where that is plain: flags, anchors and
/// escapes dropped (`(?i)Running kubelet` → `Running kubelet`, `^FATA\[` → `FATA[`).
pub fn pattern_words(re: &str) -> String {
    let mut s = re;
    while let Some(rest) = s.strip_prefix("(?") {
        match rest.find(')') {
            Some(i) if rest[..i].chars().all(|c| c.is_ascii_alphabetic()) => s = &rest[i + 1..],
            _ => break,
        }
    }
    let s = s.strip_prefix('^').unwrap_or(s);
    let s = s.strip_suffix('$').unwrap_or(s);
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(n) if !n.is_ascii_alphanumeric() => out.push(n),
                Some(n) => {
                    out.push('\\');
                    out.push(n);
                }
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Texts between backticks, in order.
fn backticked(s: &str) -> Vec<&str> {
    s.split('`').skip(1).step_by(2).collect()
}

/// `3s` from "… within 3s …" / "… the 3s settle window".
fn settle_window(reason: &str) -> Option<String> {
    let words: Vec<&str> = reason.split_whitespace().collect();
    words.windows(2).find_map(|w| match w {
        ["within", d] | ["the", d] if is_duration(d) => Some(d.to_string()),
        _ => None,
    })
}

fn is_duration(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_digit()) && s.ends_with(['s', 'm', 'h'])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_read_as_the_text_they_match() {
        assert_eq!(pattern_words("(?i)Running kubelet"), "Running kubelet");
        assert_eq!(pattern_words("^FATA\\["), "FATA[");
        assert_eq!(
            pattern_words("Starting distributed registry mirror at https://"),
            "Starting distributed registry mirror at https://"
        );
        assert_eq!(pattern_words("(?m)^# (HELP|TYPE) "), "# (HELP|TYPE) ");
        assert_eq!(pattern_words("a\\d+"), "a\\d+");
    }

    #[test]
    fn messages_come_out_of_logrus_lines() {
        let l = r#"2026-11-30T09:01:45.1Z time="2026-11-30T09:01:45Z" level=info msg="Running kubelet \"x\" --a=b""#;
        assert_eq!(message(l), r#"Running kubelet "x" --a=b"#);
        assert_eq!(message("2026-11-30T09:01:45.1Z plain text"), "plain text");
        assert_eq!(quote("a `b` c"), "`` a `b` c ``");
    }

    #[test]
    fn settle_windows_in_both_reason_wordings() {
        assert_eq!(
            settle_window("settle rule: no `up` line within 3s after this line").as_deref(),
            Some("3s")
        );
        assert_eq!(
            settle_window(
                "`Running kubelet` at 09:00:20 and no `X` line within the 3s settle window"
            )
            .as_deref(),
            Some("3s")
        );
    }
}
