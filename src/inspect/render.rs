//! The report as a table (a terminal), JSON (`--format json`) or Markdown (to paste into an
//! issue). Everything printed has been through the redactor first (see [`redact`]).

use std::fmt::Write as _;

use super::deps::{Observed, Redactor, ROLES_SIGNAL, VERSION_SIGNAL};
use super::model::{BootReport, EvidenceLine, Finding, FindingVerdict, InputReport, Report};

/// Replaces every secret in the report (evidence, config values, messages) by `<REDACTED-n>`,
/// with the same rules as bundles: every text is learned from first, then redacted, so a secret
/// seen keyed in one line is hidden where it shows up bare in another.
pub(crate) fn redact(report: &mut Report, r: &mut Redactor) {
    texts(report, &mut |t| r.learn_text(t));
    texts(report, &mut |t| *t = r.redact_text(t));
}

/// Every free text of the report (not names, paths or states, which come from the input's
/// layout and the signal definitions).
fn texts(report: &mut Report, f: &mut dyn FnMut(&mut String)) {
    let ev = |e: &mut EvidenceLine, f: &mut dyn FnMut(&mut String)| f(&mut e.text);
    for i in &mut report.inputs {
        i.notes.iter_mut().for_each(&mut *f);
        for n in &mut i.nodes {
            for b in &mut n.boots {
                if let Some(m) = b.start.as_mut() {
                    f(&mut m.text);
                }
                if let Some(e) = b.end.evidence.as_mut() {
                    ev(e, f);
                }
                for s in b.signals.values_mut() {
                    // Only a value carries text of the log; the states are repro's words.
                    if let Observed::Value(v) = &mut s.state {
                        f(v);
                    }
                    f(&mut s.reason);
                    s.evidence.iter_mut().for_each(|e| ev(e, f));
                }
            }
        }
    }
    for x in &mut report.findings {
        f(&mut x.message);
        f(&mut x.reason);
        x.needs.iter_mut().for_each(&mut *f);
        x.assumes.iter_mut().for_each(&mut *f);
        for c in &mut x.conditions {
            f(&mut c.want);
            if let Some(found) = c.found.as_mut() {
                f(found);
            }
        }
        x.evidence.iter_mut().for_each(|e| ev(e, f));
    }
}

/// Printable on a terminal: no control characters (a log line could carry escape sequences).
fn clean(s: &str) -> String {
    // Shown, never interpreted: a journal `_HOSTNAME` with a line break must not print a row
    // of its own, nor an escape sequence move the cursor. A tab is a blank in a table.
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\t' => out.push(' '),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// The signals shown as columns: every state signal, in signals.yaml's order.
fn columns(report: &Report) -> Vec<String> {
    let mut cols: Vec<String> = Vec::new();
    for i in &report.inputs {
        for n in &i.nodes {
            for b in &n.boots {
                for name in b.signals.keys() {
                    if name != VERSION_SIGNAL && name != ROLES_SIGNAL && !cols.contains(name) {
                        cols.push(name.clone());
                    }
                }
            }
        }
    }
    cols
}

fn short_time(t: &Option<String>) -> String {
    match t {
        Some(t) => t
            .replacen('T', " ", 1)
            .trim_end_matches('Z')
            .split('.')
            .next()
            .unwrap_or("")
            .to_string(),
        None => "-".into(),
    }
}

fn role_cell(b: &BootReport) -> String {
    match (&b.role, b.roles.is_empty()) {
        (Some(r), _) => r.clone(),
        (None, false) => format!("{}?", b.roles.join("+")),
        (None, true) => "-".into(),
    }
}

fn state_cell(b: &BootReport, sig: &str) -> String {
    match b.signals.get(sig).map(|s| &s.state) {
        Some(Observed::Unknown) | None => "?".into(),
        Some(s) => s.to_string(),
    }
}

fn boot_started(b: &BootReport) -> String {
    match &b.start {
        Some(m) => short_time(&m.time),
        None => "(cut)".into(),
    }
}

fn pad_table(out: &mut String, indent: &str, rows: &[Vec<String>]) {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in rows {
        let mut line = indent.to_string();
        for (i, cell) in r.iter().enumerate() {
            line.push_str(cell);
            if i + 1 < r.len() {
                line.push_str(&" ".repeat(widths[i] - cell.chars().count() + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

fn where_of(e: &EvidenceLine) -> String {
    // The file's name and its folder's: enough to tell `etcd-2/boot-2.log` from `etcd-3/…`.
    let file = e.file.as_deref().map(|f| {
        let mut parts = f.rsplit(['/', '!']);
        let name = parts.next().unwrap_or(f);
        match parts.next().filter(|d| !d.is_empty() && *d != ".") {
            Some(dir) => format!("{dir}/{name}"),
            None => name.to_string(),
        }
    });
    match (file, e.line) {
        (Some(f), Some(l)) if l > 0 => format!("{f}:{l}"),
        (Some(f), _) => f,
        (None, Some(l)) => format!("line {l}"),
        (None, None) => e.source.as_str().to_string(),
    }
}

fn evidence_text(e: &EvidenceLine, max: usize) -> String {
    let t = clean(&e.text);
    if t.chars().count() > max {
        let cut: String = t.chars().take(max).collect();
        format!("{cut}…")
    } else {
        t
    }
}

/// The terminal table: per input, one row per node and boot; then the findings.
pub(crate) fn table(report: &Report, evidence: bool) -> String {
    let mut o = String::new();
    let cols = columns(report);
    for (i, input) in report.inputs.iter().enumerate() {
        if i > 0 {
            o.push('\n');
        }
        input_header(&mut o, input);
        let mut rows = vec![{
            let mut h: Vec<String> = ["NODE", "BOOT", "STARTED (UTC)", "VERSION", "ROLE"]
                .iter()
                .map(|s| s.to_string())
                .collect();
            h.extend(cols.iter().cloned());
            h
        }];
        for n in &input.nodes {
            for b in &n.boots {
                let mut r = vec![
                    clean(&n.name),
                    b.boot.to_string(),
                    boot_started(b),
                    clean(b.version.as_deref().unwrap_or("?")),
                    clean(&role_cell(b)),
                ];
                r.extend(cols.iter().map(|c| state_cell(b, c)));
                rows.push(r);
            }
        }
        pad_table(&mut o, "  ", &rows);
        if evidence {
            for n in &input.nodes {
                for b in &n.boots {
                    let _ = writeln!(o, "  {} boot {}:", clean(&n.name), b.boot);
                    if let Some(p) = &b.partial_because {
                        let _ = writeln!(o, "    (partial: {p})");
                    }
                    for (name, s) in &b.signals {
                        let _ = writeln!(
                            o,
                            "    {name}: {} — {}",
                            clean(s.state.as_str()),
                            clean(&s.reason)
                        );
                        for e in &s.evidence {
                            let _ = writeln!(o, "      {}  {}", where_of(e), evidence_text(e, 160));
                        }
                    }
                }
            }
        }
        for note in &input.notes {
            let _ = writeln!(o, "  note: {}", clean(note));
        }
    }
    o.push_str("  (? = unknown: the log cannot tell; --evidence or --format json says why)\n");
    findings_text(&mut o, &report.findings, report);
    o
}

fn input_header(o: &mut String, input: &InputReport) {
    let read: Vec<&super::model::FileReport> =
        input.files.iter().filter(|f| f.skipped.is_none()).collect();
    let _ = writeln!(o, "{} ({})", clean(&input.path), input.kind);
    if read.len() == 1 {
        let _ = writeln!(o, "  format: {}", read[0].format);
    } else {
        let mut formats: Vec<&str> = read.iter().map(|f| f.format.as_str()).collect();
        formats.dedup();
        let _ = writeln!(o, "  {} files; format: {}", read.len(), formats.join(" | "));
    }
    let skipped = input.files.iter().filter(|f| f.skipped.is_some()).count();
    if skipped > 0 {
        let _ = writeln!(o, "  {skipped} file(s) passed over (see --format json)");
    }
}

fn findings_text(o: &mut String, findings: &[Finding], report: &Report) {
    o.push('\n');
    if findings.is_empty() {
        let checks: Vec<String> = report
            .checks
            .iter()
            .filter(|c| c.signatures > 0)
            .map(|c| c.name.clone())
            .collect();
        let _ = writeln!(
            o,
            "no known bug matched (bug signatures of: {})",
            if checks.is_empty() {
                "none".into()
            } else {
                checks.join(", ")
            }
        );
        return;
    }
    let _ = writeln!(o, "findings:");
    for f in findings {
        let tag = if f.verdict == FindingVerdict::Matches {
            "MATCH"
        } else {
            "MAYBE"
        };
        let _ = writeln!(
            o,
            "  {tag}  {} boot {}: {} {} — {}",
            clean(&f.node),
            f.boot,
            f.signal,
            f.observed,
            clean(&f.message)
        );
        let _ = writeln!(o, "         check {}: {}", f.check, clean(&f.summary));
        let _ = writeln!(o, "         {} because: {}", f.signal, clean(&f.reason));
        for e in &f.evidence {
            let _ = writeln!(o, "         {}  {}", where_of(e), evidence_text(e, 140));
        }
        for a in &f.assumes {
            let _ = writeln!(o, "         assumes {}", clean(a));
        }
    }
}

pub(crate) fn json(report: &Report) -> String {
    let mut s = serde_json::to_string_pretty(report).unwrap_or_else(|_| "{}".into());
    s.push('\n');
    s
}

/// A Markdown cell: no pipes or line breaks.
fn cell(s: &str) -> String {
    clean(s).replace('|', "\\|").replace('\n', " ")
}

/// Markdown to paste into a k3s issue: findings first, then the table, evidence folded.
pub(crate) fn markdown(report: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "### What the logs show (`repro inspect`, repro {})\n",
        report.tool.version
    );
    if report.findings.is_empty() {
        o.push_str("No known bug matched.\n\n");
    } else {
        for f in &report.findings {
            let _ = writeln!(
                o,
                "- **{}, boot {}**: `{}` is {} — {}",
                cell(&f.node),
                f.boot,
                f.signal,
                f.observed,
                cell(&f.message)
            );
        }
        o.push('\n');
    }
    let cols = columns(report);
    for input in &report.inputs {
        let formats: Vec<&str> = input
            .files
            .iter()
            .filter(|f| f.skipped.is_none())
            .map(|f| f.format.as_str())
            .collect();
        let _ = writeln!(
            o,
            "**`{}`** — {}\n",
            cell(&input.path),
            cell(&formats.join("; "))
        );
        let mut head = vec!["node", "boot", "started (UTC)", "version", "role"]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>();
        head.extend(cols.iter().cloned());
        let _ = writeln!(o, "| {} |", head.join(" | "));
        let _ = writeln!(o, "|{}", "---|".repeat(head.len()));
        for n in &input.nodes {
            for b in &n.boots {
                let mut r = vec![
                    cell(&n.name),
                    b.boot.to_string(),
                    boot_started(b),
                    b.version.clone().unwrap_or_else(|| "?".into()),
                    role_cell(b),
                ];
                r.extend(cols.iter().map(|c| state_cell(b, c)));
                let _ = writeln!(o, "| {} |", r.join(" | "));
            }
        }
        o.push('\n');
        for note in &input.notes {
            let _ = writeln!(o, "> {}\n", cell(note));
        }
        let mut ev = String::new();
        for n in &input.nodes {
            for b in &n.boots {
                for (name, s) in &b.signals {
                    if s.evidence.is_empty() {
                        continue;
                    }
                    let _ = writeln!(
                        ev,
                        "{} boot {} {name}: {} ({})",
                        clean(&n.name),
                        b.boot,
                        clean(s.state.as_str()),
                        clean(&s.reason)
                    );
                    for e in &s.evidence {
                        let _ = writeln!(ev, "  {}  {}", where_of(e), evidence_text(e, 400));
                    }
                }
            }
        }
        if !ev.is_empty() {
            let f = super::deps::fence_for(&ev);
            let _ = writeln!(
                o,
                "<details><summary>Evidence</summary>\n\n{f}text\n{ev}{f}\n\n</details>\n"
            );
        }
    }
    let _ = writeln!(
        o,
        "<sub>? = the log cannot tell. Checks consulted: {}.</sub>",
        report
            .checks
            .iter()
            .map(|c| c.name.clone())
            .collect::<Vec<_>>()
            .join(", ")
    );
    o
}
