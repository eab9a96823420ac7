//! Text pasted into an issue or a terminal: line ends, colours and control characters,
//! Markdown code spans, shell prompts and their commands, grep's prefixes and gap markers.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

use super::units::is_distribution_binary;
use super::{Normaliser, Prompt};
use crate::inspect::prefilter::plain_ascii;

impl Normaliser {
    /// Lossy UTF-8 without the line end, colours and control characters; and its width.
    /// `plain`: the line is known to be printable ASCII already (the prescan scanned it).
    /// A printable-ASCII line is the text as it is, borrowed: most lines only lend a part of
    /// it to their entry (the message after a journal prefix), copied once there.
    pub(super) fn clean<'r>(&mut self, raw: &'r [u8], plain: bool) -> (Cow<'r, str>, usize) {
        // A Markdown block quote (`> ` before each line: a log quoted in an issue's reply, or
        // by a mail client): the line without it. Nothing k3s prints starts with `>`.
        let mut raw = raw;
        while let Some(rest) = raw.strip_prefix(b">") {
            raw = rest.strip_prefix(b" ").unwrap_or(rest);
        }
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
}

/// False only where `GAP` cannot match: it is asked of every line, and a regex answering on
/// a second thread (inspect reads large files on two) costs a trip through the regex's shared
/// cache pool each time. A gap marker starts, after an optional `[`, `<` or `(` and spaces,
/// with `.`, `…`, a digit or one of its words.
pub(super) fn may_be_gap(t: &str) -> bool {
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

/// A shell prompt and its command: `$ cmd`, `user@host:~$ cmd`, `[root@host ~]# cmd`, or
/// `# cmd` for a handful of commands (a bare `# ` also starts Prometheus `# HELP` lines).
pub(super) fn prompt(line: &str) -> Option<Prompt> {
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
pub(super) fn maybe_user_at_host(line: &str) -> bool {
    line.starts_with('[')
        || line
            .split(char::is_whitespace)
            .next()
            .is_some_and(|w| w.contains('@'))
}

/// The name a `docker logs`/`kubectl logs` command reads: its last word that is not an option
/// or an option's value.
pub(super) fn last_operand(words: &[&str]) -> Option<String> {
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
pub(super) fn is_log_command(cmd: &str) -> bool {
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

/// The operands of a distribution's own logs command: `<binary> logs …` or its kubectl
/// (`k3s kubectl logs …`), from the facts of every distribution.
pub(super) fn distribution_logs_operands<'a>(words: &'a [&'a str]) -> Option<&'a [&'a str]> {
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

pub(super) const ROOT_COMMANDS: [&str; 11] = [
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

pub(super) static ANSI: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
        .expect("static regex")
});

pub(super) static GAP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^(?:\.{3,}|…|\[(?:\.{3}|…)\]|[<\[(]?\s*(?:\.{3}|…)?\s*(?:\d+\s+(?:more\s+)?lines?\s+)?(?:snip|snipped|truncated|omitted|skipped|removed)\b.*)$",
    )
    .expect("static regex")
});

pub(super) static PROMPT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?:[\w.-]+@[\w.-]+(?::[^\s$#]*)?|\[[\w.-]+@[\w.-]+[^\]]*\])\s?[$#]\s+(?P<cmd>.+)$",
    )
    .expect("static regex")
});

pub(super) static GREP_PREFIX: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:[^\s:]+:)?\d+[:-]").expect("static regex"));
