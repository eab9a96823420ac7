//! `junit.xml`: one testsuite per run, one testcase per expectation (step × node × signal), plus
//! `setup`, `teardown` and `verdict`.
//!
//! Each expectation case asserts the *correct* (fixed) behaviour, so on a buggy k3s the bug shows
//! up as failures whose message says they match the documented bug. Whether that outcome was the
//! one asked for (`--expect reproduced`) is the `verdict` case, which is what the exit code says.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use super::cases::{self, Case, Outcome};
use super::text;
use crate::result::RunResult;

pub fn render(r: &RunResult) -> anyhow::Result<String> {
    let class = format!("repro.{}", r.check.name);
    let mut suite = TestSuite::new(format!("{} (k3s {})", r.check.name, r.k3s.version));
    if let Some(t) = text::time_fixed(&r.started_at) {
        suite.set_timestamp(t);
    }
    if let Some(secs) = r
        .finished_at
        .as_deref()
        .and_then(|f| text::seconds_between(&r.started_at, f))
    {
        if let Ok(d) = Duration::try_from_secs_f64(secs.max(0.0)) {
            suite.set_time(d);
        }
    }
    suite.add_properties(properties(r));

    let all = cases::cases(r);
    suite.add_test_case(with_class(setup(r), &class));
    for c in &all {
        suite.add_test_case(with_class(expectation(r, c), &class));
    }
    suite.add_test_case(with_class(teardown(r), &class));
    suite.add_test_case(with_class(verdict(r), &class));
    // quick-junit counts skipped cases as `disabled`; GitLab and Jenkins read `skipped`.
    let skipped = suite.disabled;
    suite
        .extra
        .insert("skipped".into(), skipped.to_string().into());

    let mut report = Report::new("repro");
    if let Some(t) = text::time_fixed(&r.started_at) {
        report.set_timestamp(t);
    }
    if let Some(t) = suite.time {
        report.set_time(t);
    }
    report.add_test_suite(suite);
    Ok(report.to_string()?)
}

fn properties(r: &RunResult) -> Vec<Property> {
    let mut p = vec![
        Property::new("run_id", r.run_id.as_str()),
        Property::new("check", r.check.name.as_str()),
        Property::new("issue", r.check.issue.as_str()),
        Property::new("k3s_version", r.k3s.version.as_str()),
        Property::new("image", r.k3s.image.as_str()),
        Property::new("stand_in", r.k3s.stand_in.to_string()),
        Property::new("expect", r.expect.as_str()),
    ];
    if let Some(v) = &r.verdict {
        p.push(Property::new("verdict", v.outcome.as_str()));
    }
    p.push(Property::new("rerun", r.rerun.as_str()));
    p
}

fn with_class(mut c: TestCase, class: &str) -> TestCase {
    c.set_classname(class);
    c
}

fn non_success(
    kind: NonSuccessKind,
    ty: &str,
    message: String,
    description: String,
) -> TestCaseStatus {
    let mut s = TestCaseStatus::non_success(kind);
    s.set_type(ty);
    s.set_message(message);
    if !description.is_empty() {
        s.set_description(description);
    }
    s
}

/// Cluster creation: passed when the first step began (every node came up), errored otherwise.
fn setup(r: &RunResult) -> TestCase {
    let first_boots: Vec<_> = r.boots.iter().filter(|b| b.step == 0).collect();
    let came_up = !r.steps.is_empty()
        || (!first_boots.is_empty() && first_boots.iter().all(|b| b.ready_at.is_some()));
    let status = if came_up {
        TestCaseStatus::success()
    } else {
        let mut lines: Vec<String> = first_boots
            .iter()
            .map(|b| match &b.ready_at {
                Some(t) => format!("{} boot {}: ready at {}", b.node, b.boot, text::clock(t)),
                None => format!(
                    "{} boot {}: never ready ({}), log {}",
                    b.node, b.boot, b.end, b.log
                ),
            })
            .collect();
        if let Some(e) = &r.error {
            lines.insert(0, format!("run error: {e}"));
        }
        let message = match &r.error {
            Some(e) => format!("the cluster did not come up: {e}"),
            None => "the cluster did not come up".to_string(),
        };
        non_success(NonSuccessKind::Error, "setup", message, lines.join("\n"))
    };
    let mut c = TestCase::new("setup", status);
    if let Some(d) = r
        .timings
        .get("cluster-up")
        .and_then(|t| Duration::try_from_secs_f64(t.max(0.0)).ok())
    {
        c.set_time(d);
    }
    c
}

fn expectation(r: &RunResult, c: &Case<'_>) -> TestCase {
    let bug_note = match (&c.bug, c.in_bug_signature()) {
        (Some(b), true) if c.shows_bug() => format!(" — the documented bug ({b})"),
        (Some(b), true) => format!(" (the bug would show {b})"),
        _ => String::new(),
    };
    let head = format!(
        "expected {}={} on {}, observed {}{}",
        c.signal,
        c.expected,
        c.node,
        c.observed(),
        bug_note
    );
    let status = match c.outcome {
        Outcome::Pass => TestCaseStatus::success(),
        Outcome::Fail => {
            let ty = if c.shows_bug() {
                "bug-reproduced"
            } else {
                "unexpected-value"
            };
            non_success(NonSuccessKind::Failure, ty, head.clone(), details(c))
        }
        Outcome::Undecided => non_success(
            NonSuccessKind::Error,
            "undecided",
            format!("{head} (could not be decided)"),
            details(c),
        ),
        Outcome::NotRun => {
            let why = match &r.error {
                Some(e) => format!(
                    "not observed: the run stopped before step {} finished: {e}",
                    c.step
                ),
                None => format!(
                    "not observed: step {} did not record this expectation",
                    c.step
                ),
            };
            non_success(NonSuccessKind::Error, "not-run", why, String::new())
        }
    };
    let mut tc = TestCase::new(c.name(), status);
    // Failures carry the evidence in their own text; passes keep it in system-out for the record.
    if let (Some(o), Outcome::Pass) = (c.obs, c.outcome) {
        let mut out = format!("{}\nboot {}: {}\n", head, o.boot, o.reason);
        for e in &o.evidence {
            out.push_str(&evidence_line(e));
        }
        tc.set_system_out(out);
    }
    tc
}

/// Expected vs observed, the bug's value, how it was judged and the evidence lines.
fn details(c: &Case<'_>) -> String {
    let mut d = format!(
        "step {}: {}\nnode:     {}\nsignal:   {}\nexpected: {}\nobserved: {}\n",
        c.step,
        c.step_name,
        c.node,
        c.signal,
        c.expected,
        c.observed()
    );
    if let Some(b) = &c.bug {
        d.push_str(&format!("bug:      {b}\n"));
    }
    if let Some(o) = c.obs {
        d.push_str(&format!(
            "boot:     {}\nreason:   {}\nevidence:\n",
            o.boot, o.reason
        ));
        if o.evidence.is_empty() {
            d.push_str("  (none recorded)\n");
        }
        for e in &o.evidence {
            d.push_str(&format!("  {}", evidence_line(e)));
        }
    }
    d
}

fn evidence_line(e: &crate::result::Evidence) -> String {
    match &e.time {
        Some(t) => format!("[{} boot {} {}] {}\n", e.source, e.boot, t, e.text),
        None => format!("[{} boot {}] {}\n", e.source, e.boot, e.text),
    }
}

/// Teardown: skipped under `--keep`, errored when the run never finished.
fn teardown(r: &RunResult) -> TestCase {
    let kept = r.command.iter().any(|a| a == "--keep");
    let status = if kept {
        let mut s = TestCaseStatus::skipped();
        s.set_message("the cluster was kept (--keep); remove it with `repro clean --run <id>`");
        s
    } else if r.finished_at.is_none() {
        non_success(
            NonSuccessKind::Error,
            "teardown",
            "the run did not finish; containers may be left (`repro clean --all`)".to_string(),
            String::new(),
        )
    } else {
        TestCaseStatus::success()
    };
    let mut c = TestCase::new("teardown", status);
    if let Some(d) = r
        .timings
        .get("teardown")
        .and_then(|t| Duration::try_from_secs_f64(t.max(0.0)).ok())
    {
        c.set_time(d);
    }
    c
}

/// The run's outcome against the one asked for: this case fails exactly when the exit code is 1.
fn verdict(r: &RunResult) -> TestCase {
    let status = match &r.verdict {
        None => non_success(
            NonSuccessKind::Error,
            "no-verdict",
            format!(
                "no verdict: {}",
                r.error
                    .as_deref()
                    .unwrap_or("the run stopped before deciding")
            ),
            String::new(),
        ),
        Some(v) if v.outcome == r.expect => TestCaseStatus::success(),
        Some(v) => {
            let mut d = format!("{}\n", v.reason);
            for line in &v.differences {
                d.push_str(&format!("- {line}\n"));
            }
            non_success(
                NonSuccessKind::Failure,
                "outcome-differs",
                format!(
                    "expected the outcome {}, got {}: {}",
                    r.expect, v.outcome, v.reason
                ),
                d,
            )
        }
    };
    let mut c = TestCase::new("verdict", status);
    if let Some(v) = &r.verdict {
        c.set_system_out(format!("{}: {}\n", v.outcome, v.reason));
    }
    c
}
