//! `junit.xml`: one testsuite per run, one testcase per expectation (step × node × signal), plus
//! `setup`, `teardown` and `verdict`.
//!
//! Cases are judged against what the run was asked to show (`expect` in result.json): asked for
//! `fixed`, a case passes on the correct value; asked for `reproduced`, on the documented bug's
//! value (the bug's observation is kept as the case's properties and output). So the file says
//! what the exit code says: exit 0 has no failures and no errors; a regression or an unexpected
//! fix fails the cases that differ and the verdict; an inconclusive run fails or errors them.
//! A run that stopped (Docker unreachable, a node never ready, an interrupt) has one error, on
//! the case where it stopped (`setup`, else `verdict`), and the cases it never reached are
//! skipped pointing at it: one cause, one error, one annotation (issue #32).
//!
//! Every case carries its time and `file`/`line` attributes pointing at the check's YAML (the
//! expectation's line, else its step's), which CI annotations (GitHub checks) put the message on.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use super::cases::{self, Case, Outcome};
use super::text;
use crate::result::{self as res, RunResult};

pub(crate) fn render(r: &RunResult) -> anyhow::Result<String> {
    let mut suite = TestSuite::new(format!(
        "{} ({} {})",
        r.check.name,
        r.distribution.name(),
        r.k3s.version
    ));
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
    suite.add_test_cases(test_cases(r));
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

/// Every case of the run, judged, with its class, time and place in the check file.
fn test_cases(r: &RunResult) -> Vec<TestCase> {
    let class = format!("repro.{}", r.check.name);
    let asked = asked(r);
    let at = Location::of(r);
    let stop = Stop::of(r);
    let mut out = vec![at.whole(with_class(setup(r), &class))];
    for c in &cases::cases(r) {
        out.push(at.case(c, with_class(expectation(r, asked, c, &stop), &class)));
    }
    out.push(at.whole(with_class(teardown(r, &stop), &class)));
    out.push(at.whole(with_class(verdict(r, asked, &stop), &class)));
    out
}

/// Why a run has no verdict, when it stopped before one: its error, or (killed before it
/// could record one) that it did not finish. The one case that errors for it is `setup` when
/// the cluster never came up, else `verdict`; every case the run never reached is skipped.
struct Stop {
    cause: String,
    /// The cluster never came up: `setup` carries the error.
    at_setup: bool,
}

impl Stop {
    fn of(r: &RunResult) -> Option<Stop> {
        if r.verdict.is_some() {
            return None;
        }
        let cause = match (&r.error, &r.finished_at) {
            (Some(e), _) => e.clone(),
            (None, None) => {
                "the run did not finish (repro was stopped before it could record why)".to_string()
            }
            (None, Some(_)) => "the run stopped before deciding".to_string(),
        };
        Some(Stop {
            cause,
            at_setup: !came_up(r),
        })
    }

    /// The message of a case the run never reached.
    fn skipped(&self, what: &str) -> TestCaseStatus {
        let where_ = if self.at_setup { "setup" } else { "verdict" };
        let first = self.cause.lines().next().unwrap_or_default();
        let mut s = TestCaseStatus::skipped();
        s.set_message(format!(
            "{what}: never reached, the run stopped (the `{where_}` case has the error: {first})"
        ));
        s
    }
}

/// The cases that did not pass as GitHub Actions workflow commands (`::error file=…,line=…`),
/// so a CI job shows each on the check's YAML line without a third-party report action.
/// Failures and errors are `error`s; a skipped teardown (`--keep`) is not reported.
pub(crate) fn github_annotations(r: &RunResult) -> Vec<String> {
    let title = format!(
        "repro {} on {} {}",
        r.check.name,
        r.distribution.name(),
        r.k3s.version
    );
    test_cases(r)
        .into_iter()
        .filter_map(|tc| {
            let TestCaseStatus::NonSuccess { message, .. } = &tc.status else {
                return None;
            };
            let mut props = Vec::new();
            for key in ["file", "line"] {
                if let Some(v) = tc.extra.get(key) {
                    props.push(format!("{key}={}", escape_property(v.as_str())));
                }
            }
            props.push(format!(
                "title={}",
                escape_property(&format!("{title}: {}", tc.name.as_str()))
            ));
            let message = message.as_ref().map(|m| m.as_str()).unwrap_or("failed");
            Some(format!(
                "::error {}::{}",
                props.join(","),
                escape_data(message)
            ))
        })
        .collect()
}

/// Workflow-command data: `%`, CR and LF are escaped (GitHub's toolkit rules).
fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Workflow-command property values: as data, plus `:` and `,`.
fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// The outcome the run was asked to show: `expect` as recorded; a result that recorded `auto`
/// means what the check's `fixed-in` predicts for the version (`fixed` when it says nothing).
pub(crate) fn asked(r: &RunResult) -> res::Outcome {
    match r.expect {
        res::Outcome::Fixed | res::Outcome::Reproduced => r.expect,
        res::Outcome::Inconclusive => r.expected_for_version.unwrap_or(res::Outcome::Fixed),
    }
}

/// Where a case points in the check file: `file` always, `line` when result.json recorded it
/// (older results did not).
struct Location<'a> {
    file: &'a str,
    r: &'a RunResult,
}

impl<'a> Location<'a> {
    fn of(r: &'a RunResult) -> Location<'a> {
        Location {
            file: r.check.file.as_str(),
            r,
        }
    }

    /// Cases about the whole run (setup, teardown, verdict) point at the file's first line.
    fn whole(&self, mut tc: TestCase) -> TestCase {
        self.set(&mut tc, Some(1));
        tc
    }

    /// An expectation's case points at its line, else its step's line.
    fn case(&self, c: &Case<'_>, mut tc: TestCase) -> TestCase {
        let step = self.r.planned_steps.iter().find(|p| p.index == c.step);
        let line = step.and_then(|p| {
            p.expect_lines
                .get(&c.node)
                .and_then(|m| m.get(&c.signal))
                .copied()
                .or(p.line)
        });
        self.set(&mut tc, line);
        tc
    }

    fn set(&self, tc: &mut TestCase, line: Option<usize>) {
        if self.file.is_empty() {
            return;
        }
        tc.extra.insert("file".into(), self.file.into());
        if let Some(l) = line {
            tc.extra.insert("line".into(), l.to_string().into());
        }
    }
}

fn secs(s: f64) -> Option<Duration> {
    Duration::try_from_secs_f64(s.max(0.0)).ok()
}

/// How long a step took: its `step-N` timing, else its recorded start and end.
fn step_time(r: &RunResult, index: usize) -> Option<Duration> {
    r.timings
        .get(&format!("step-{index}"))
        .copied()
        .or_else(|| {
            let s = r.steps.iter().find(|s| s.index == index)?;
            text::seconds_between(&s.started_at, s.finished_at.as_deref()?)
        })
        .and_then(secs)
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

/// Whether the first step began (every node came up).
fn came_up(r: &RunResult) -> bool {
    let mut first_boots = r.boots.iter().filter(|b| b.step == 0).peekable();
    !r.steps.is_empty()
        || (first_boots.peek().is_some() && first_boots.all(|b| b.ready_at.is_some()))
}

/// Cluster creation: passed when the first step began (every node came up), errored otherwise.
fn setup(r: &RunResult) -> TestCase {
    let first_boots: Vec<_> = r.boots.iter().filter(|b| b.step == 0).collect();
    let status = if came_up(r) {
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
    c.set_time(
        r.timings
            .get("cluster-up")
            .copied()
            .and_then(secs)
            .unwrap_or_default(),
    );
    c
}

/// One expectation judged against `asked`: the value to see is the correct one when asked for
/// `fixed`, the bug's when asked for `reproduced` (the same value where the bug changes nothing).
fn expectation(r: &RunResult, asked: res::Outcome, c: &Case<'_>, stop: &Option<Stop>) -> TestCase {
    let bug_run = asked == res::Outcome::Reproduced;
    // The run records what the asked outcome wants per observation (`asked`); older results
    // do not, and it follows from `expect` the same way.
    let wanted = match c.obs.and_then(|o| o.asked.as_ref()) {
        Some(a) => a,
        None if bug_run => c.bug.as_ref().unwrap_or(&c.expected),
        None => &c.expected,
    };
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
    let status = match (c.outcome, c.obs) {
        // What was asked for, `any` included (whatever was observed, even undecided): the
        // verdict counts it as matching, so the case passes as the exit code says.
        (_, Some(o)) if o.matches_asked(bug_run) => TestCaseStatus::success(),
        (Outcome::NotRun, _) | (_, None) => match stop {
            Some(s) => s.skipped(&format!("not observed in step {}", c.step)),
            // A run that decided without it: a gap in the record, an error of its own.
            None => non_success(
                NonSuccessKind::Error,
                "not-run",
                format!(
                    "not observed: step {} did not record this expectation",
                    c.step
                ),
                String::new(),
            ),
        },
        (Outcome::Undecided, Some(_)) => non_success(
            NonSuccessKind::Error,
            "undecided",
            format!("{head} (could not be decided)"),
            details(c),
        ),
        (_, Some(_)) => {
            let (ty, message) = if !bug_run && c.shows_bug() {
                ("bug-reproduced", head.clone())
            } else if bug_run && c.outcome == Outcome::Pass {
                (
                    "unexpected-fix",
                    format!(
                        "asked to reproduce the bug: expected {}={} on {} (the bug), observed {} (the correct value)",
                        c.signal,
                        wanted,
                        c.node,
                        c.observed()
                    ),
                )
            } else if bug_run {
                (
                    "unexpected-value",
                    format!(
                        "asked to reproduce the bug: expected {}={} on {}, observed {}",
                        c.signal,
                        wanted,
                        c.node,
                        c.observed()
                    ),
                )
            } else {
                ("unexpected-value", head.clone())
            };
            non_success(NonSuccessKind::Failure, ty, message, details(c))
        }
    };
    let passed = matches!(status, TestCaseStatus::Success { .. });
    let mut tc = TestCase::new(c.name(), status);
    tc.set_time(step_time(r, c.step).unwrap_or_default());
    if let Some(o) = c.obs {
        // The observation stays on the case whatever the judgement, so a pass under
        // `--expect reproduced` still says that (and how) the bug showed.
        let mut props = vec![
            Property::new("expected", c.expected.as_str()),
            Property::new("observed", o.observed.as_str()),
            Property::new("boot", o.boot.to_string()),
        ];
        if let Some(b) = &c.bug {
            props.push(Property::new("bug", b.as_str()));
        }
        props.push(Property::new("shows_bug", c.shows_bug().to_string()));
        tc.properties.extend(props);
        // Failures carry the evidence in their own text; passes keep it in system-out.
        if passed {
            let mut out = format!("{}\nboot {}: {}\n", head, o.boot, o.reason);
            for e in &o.evidence {
                out.push_str(&evidence_line(e));
            }
            tc.set_system_out(out);
        }
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

/// Teardown: skipped under `--keep`, errored when the run never finished (skipped when that is
/// the cause the run stopped on, whose case has the error).
fn teardown(r: &RunResult, stop: &Option<Stop>) -> TestCase {
    let kept = r.command.iter().any(|a| a == "--keep");
    let left = format!("containers may be left (`repro clean --run {}`)", r.run_id);
    let status = if kept {
        let mut s = TestCaseStatus::skipped();
        s.set_message("the cluster was kept (--keep); remove it with `repro clean --run <id>`");
        s
    } else if r.finished_at.is_none() {
        match stop {
            Some(s) => s.skipped(&format!("teardown not recorded: {left}")),
            None => non_success(
                NonSuccessKind::Error,
                "teardown",
                format!("the run did not finish; {left}"),
                String::new(),
            ),
        }
    } else {
        TestCaseStatus::success()
    };
    let mut c = TestCase::new("teardown", status);
    c.set_time(
        r.timings
            .get("teardown")
            .copied()
            .and_then(secs)
            .unwrap_or_default(),
    );
    c
}

/// The run's outcome against the one asked for: passed exactly when the exit code is 0; a
/// different outcome is a failure typed like the exit code's meaning (a regression or an
/// unexpected fix: exit 1; inconclusive: exit 4); no verdict is an error (exit 3 or 130).
fn verdict(r: &RunResult, asked: res::Outcome, stop: &Option<Stop>) -> TestCase {
    let status = match (&r.verdict, stop) {
        (None, Some(s)) if s.at_setup => s.skipped("no verdict"),
        (None, s) => non_success(
            NonSuccessKind::Error,
            "no-verdict",
            format!(
                "no verdict: {}",
                s.as_ref()
                    .map_or("the run stopped before deciding", |s| s.cause.as_str())
            ),
            String::new(),
        ),
        (Some(v), _) if v.outcome == asked => TestCaseStatus::success(),
        (Some(v), _) => {
            let mut d = format!("{}\n", v.reason);
            for line in &v.differences {
                d.push_str(&format!("- {line}\n"));
            }
            let ty = match (asked, v.outcome) {
                (res::Outcome::Fixed, res::Outcome::Reproduced) => "regression",
                (res::Outcome::Reproduced, res::Outcome::Fixed) => "unexpected-fix",
                (_, res::Outcome::Inconclusive) => "inconclusive",
                _ => "outcome-differs",
            };
            non_success(
                NonSuccessKind::Failure,
                ty,
                format!(
                    "expected the outcome {asked}, got {}: {}",
                    v.outcome, v.reason
                ),
                d,
            )
        }
    };
    let mut c = TestCase::new("verdict", status);
    // Deciding takes no time of its own: the steps' cases carry it.
    c.set_time(Duration::ZERO);
    if let Some(v) = &r.verdict {
        c.set_system_out(format!("{}: {}\n", v.outcome, v.reason));
    }
    c
}
