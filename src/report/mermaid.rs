//! The run's timeline as a Mermaid Gantt chart inside report.md: GitHub draws it where the
//! report is pasted (an issue, a comment), so a reader sees the order of boots and steps
//! without opening timeline.html. One section for the steps, one per node with a bar per boot,
//! and a milestone at the time of each observation that differed or belongs to the bug
//! signature (`crit` when it differed from the correct value).

use std::fmt::Write as _;

use chrono::{DateTime, Utc};

use super::cases::{Case, Outcome};
use super::text::{self, human_secs};
use crate::result::RunResult;

/// Step names are cut to this many characters in the chart (the report lists them in full).
const NAME_MAX: usize = 48;

/// The chart as a fenced `mermaid` block, or nothing when the run has no usable times.
pub(crate) fn gantt(r: &RunResult, all: &[Case<'_>]) -> String {
    let Some(t0) = text::time(&r.started_at) else {
        return String::new();
    };
    if r.boots.is_empty() {
        return String::new();
    }
    let end = run_end(r).unwrap_or(t0);
    let mut o = String::from("```mermaid\ngantt\n");
    let outcome = r
        .verdict
        .as_ref()
        .map(|v| v.outcome.as_str())
        .unwrap_or("no verdict");
    let _ = writeln!(
        o,
        "    title {} on {} {} - {}",
        label(&r.check.name),
        r.distribution.name(),
        label(&r.k3s.version),
        label(outcome)
    );
    o.push_str("    dateFormat x\n    axisFormat %H:%M:%S\n    todayMarker off\n");

    steps_section(&mut o, r, t0, end);
    for n in &r.topology.nodes {
        let boots: Vec<_> = r.boots.iter().filter(|b| b.node == n.name).collect();
        if boots.is_empty() {
            continue;
        }
        let _ = writeln!(o, "    section {}", label(&n.name));
        for b in boots {
            boot_bar(&mut o, b, end);
        }
        milestones(&mut o, &n.name, all);
    }
    o.push_str("```\n");
    o
}

fn ms(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

/// The steps section: the cluster's creation, then a bar per step until the next one starts.
fn steps_section(o: &mut String, r: &RunResult, t0: DateTime<Utc>, end: DateTime<Utc>) {
    o.push_str("    section steps\n");
    let first_step = r
        .steps
        .first()
        .and_then(|s| text::time(&s.started_at))
        .unwrap_or(end);
    let _ = writeln!(o, "    cluster up :{}, {}", ms(t0), ms(first_step.max(t0)));
    for (i, s) in r.steps.iter().enumerate() {
        let Some(a) = text::time(&s.started_at) else {
            continue;
        };
        let b = r
            .steps
            .get(i + 1)
            .and_then(|n| text::time(&n.started_at))
            .or_else(|| text::opt_time(s.finished_at.as_ref()))
            .unwrap_or(end);
        let _ = writeln!(
            o,
            "    step {} {} :{}, {}",
            s.index,
            label(&cut(&s.name, NAME_MAX)),
            ms(a),
            ms(b.max(a))
        );
    }
}

/// One boot's bar: when it was ready, how it ended (`crit` when it died or hung).
fn boot_bar(o: &mut String, b: &crate::result::BootRecord, end: DateTime<Utc>) {
    let Some(a) = text::time(&b.started_at) else {
        return;
    };
    let z = text::opt_time(b.ended_at.as_ref()).unwrap_or(end).max(a);
    let ready = match b
        .ready_at
        .as_deref()
        .and_then(|t| text::seconds_between(&b.started_at, t))
    {
        Some(s) => format!("ready +{}", human_secs(s)),
        None => "never ready".to_string(),
    };
    let how = match b.end.as_str() {
        "exited" => format!(
            ", exited {}",
            b.exit_code.map(|c| c.to_string()).unwrap_or("?".into())
        ),
        "timeout" => ", not ready in time".to_string(),
        _ => String::new(),
    };
    let tag = if matches!(b.end.as_str(), "exited" | "timeout") {
        "crit, "
    } else {
        ""
    };
    let _ = writeln!(
        o,
        "    boot {} ({ready}{how}) :{tag}{}, {}",
        b.boot,
        ms(a),
        ms(z)
    );
}

/// A node's milestones: one per observed fact that differed or belongs to the bug signature;
/// a later step re-observing the same boot adds its step number instead of a second mark at
/// the same time.
fn milestones(o: &mut String, node: &str, all: &[Case<'_>]) {
    let mut marks: Vec<(Vec<usize>, String, &str, DateTime<Utc>)> = Vec::new();
    for c in all.iter().filter(|c| c.node == node) {
        let Some(ob) = c.obs else { continue };
        if c.outcome == Outcome::Pass && !c.in_bug_signature() {
            continue;
        }
        let Some(t) = ob
            .evidence
            .iter()
            .find_map(|e| e.time.as_deref())
            .and_then(text::time)
        else {
            continue;
        };
        let (tag, note) = match c.outcome {
            Outcome::Pass => ("", "as expected".to_string()),
            Outcome::Fail if c.shows_bug() => ("crit, ", "the bug".to_string()),
            _ => ("crit, ", format!("expected {}", c.expected)),
        };
        // No clock time in the name: Mermaid reads `:` as the start of the task's data.
        let what = format!(
            "{} {} - {note}",
            label(&c.signal),
            label(ob.observed.as_str())
        );
        match marks.iter_mut().find(|m| m.1 == what && m.3 == t) {
            Some(m) => m.0.push(c.step),
            None => marks.push((vec![c.step], what, tag, t)),
        }
    }
    for (steps, what, tag, t) in marks {
        let steps: Vec<String> = steps.iter().map(|s| s.to_string()).collect();
        let _ = writeln!(
            o,
            "    step {} {what} :{tag}milestone, {}, 1s",
            steps.join("+"),
            ms(t)
        );
    }
}

/// The last time the run recorded, for bars that never ended.
fn run_end(r: &RunResult) -> Option<DateTime<Utc>> {
    let mut end = text::opt_time(r.finished_at.as_ref());
    for b in &r.boots {
        for t in [
            Some(&b.started_at),
            b.ready_at.as_ref(),
            b.ended_at.as_ref(),
        ] {
            if let Some(t) = text::opt_time(t) {
                end = Some(end.map_or(t, |e| e.max(t)));
            }
        }
    }
    end
}

/// Mermaid reads `:` as the start of a task's data, `#` and `;` as comment and line end, and a
/// line break ends the task: keep task names to plain text.
fn label(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            ':' | '#' | ';' | '\n' | '\r' => ' ',
            c => c,
        })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(max - 1).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_cannot_break_the_chart() {
        assert_eq!(label("a: b # c; d\ne"), "a b c d e");
    }
}
