//! What people and CI read of a matrix: the table, the totals line, the merged JUnit file, and
//! the `--emit github-matrix` JSON.

use std::time::Duration;

use crate::result::Outcome;
use crate::table::table;

use super::model::{Cell, Status, Totals};

/// The table people read: one row per check × version.
pub(crate) fn render_table(cells: &[Cell]) -> String {
    let mut rows = vec![vec![
        "CHECK".to_string(),
        "K3S VERSION".into(),
        "EXPECTED".into(),
        "VERDICT".into(),
        "TIME".into(),
        "STATUS".into(),
    ]];
    for c in cells {
        rows.push(vec![
            c.check.clone(),
            c.k3s_version.clone(),
            c.expected.to_string(),
            c.verdict.map_or_else(|| "-".into(), |v| v.to_string()),
            if c.status == Status::NotRun {
                "-".into()
            } else {
                format!("{:.1}s", c.seconds)
            },
            c.status.label().into(),
        ]);
    }
    let mut o = String::new();
    table(&mut o, "", &rows);
    o
}

/// The counts line under the table.
pub(crate) fn render_totals(t: &Totals) -> String {
    let mut parts = vec![format!("{} ok", t.ok)];
    for (n, what) in [
        (t.regression, "regression"),
        (t.unexpected_fix, "unexpected fix"),
        (t.inconclusive, "inconclusive"),
        (t.broken, "broken"),
        (t.not_run, "not run"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    format!(
        "{} run{}: {}",
        t.cells,
        if t.cells == 1 { "" } else { "s" },
        parts.join(", ")
    )
}

/// The matrix for a GitHub Actions job's summary page (`$GITHUB_STEP_SUMMARY`): the totals as
/// a heading, then the table, each cell's results folder beside a row that is not ok.
pub(crate) fn markdown(name: &str, cells: &[Cell], totals: &Totals) -> String {
    use crate::report::step_summary::cell as md;
    let mark = if super::model::exit(cells) == crate::exit::Exit::Ok {
        "✅"
    } else {
        "❌"
    };
    let mut o = format!(
        "### {mark} {name}: {}

",
        render_totals(totals)
    );
    o.push_str(
        "| Check | Version | Expected | Verdict | Time | Status | Results |
|---|---|---|---|---|---|---|
",
    );
    for c in cells {
        let status = match c.status {
            Status::Ok => "ok".to_string(),
            s => format!("**{}**", s.label()),
        };
        o.push_str(&format!(
            "| {} | {} | {} | {} | {:.1}s | {status} | {} |
",
            md(&c.check),
            md(&c.k3s_version),
            c.expected,
            c.verdict.map_or("—", Outcome::as_str),
            c.seconds,
            match (&c.results, c.status) {
                (Some(r), s) if s != Status::Ok => format!("`{}`", md(r).replace('`', "'")),
                _ => String::new(),
            }
        ));
    }
    o.push('\n');
    crate::report::markup_safe(o)
}

/// One JUnit test case per check × version, one suite per check: pass when the verdict is the
/// expected one; a differing verdict is a failure, a broken run an error, a run never made a
/// skip. Messages say expected vs got and where the run's results are. Valid XML whatever text
/// the cells carry (a step or check name with U+FFFE, an error with a control character):
/// through the same escaper as a run's junit.xml.
pub(crate) fn junit(name: &str, cells: &[Cell]) -> Result<String, quick_junit::SerializeError> {
    use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
    let mut report = Report::new(name);
    let mut checks: Vec<&str> = Vec::new();
    for c in cells {
        if !checks.contains(&c.check.as_str()) {
            checks.push(&c.check);
        }
    }
    // One error per cause: a broken cell whose error an earlier broken cell already has (Docker
    // unreachable breaks every cell alike) is skipped, pointing at that cell.
    let mut causes: Vec<(&str, String)> = Vec::new();
    for check in checks {
        let mut suite = TestSuite::new(format!("repro.{check}"));
        for c in cells.iter().filter(|c| c.check == check) {
            let name = format!("{check} on {}", c.k3s_version);
            let same = match (c.status, c.error.as_deref()) {
                (Status::Broken, Some(e)) => match causes.iter().find(|(cause, _)| *cause == e) {
                    Some((_, first)) => Some(first.clone()),
                    None => {
                        causes.push((e, name.clone()));
                        None
                    }
                },
                _ => None,
            };
            let mut status = match (c.status, &same) {
                (Status::Ok, _) => TestCaseStatus::success(),
                (Status::Broken, None) => TestCaseStatus::non_success(NonSuccessKind::Error),
                (Status::NotRun, _) | (Status::Broken, Some(_)) => TestCaseStatus::skipped(),
                _ => TestCaseStatus::non_success(NonSuccessKind::Failure),
            };
            if let Some(why) = c.explain() {
                match &same {
                    Some(first) => status.set_message(format!(
                        "not run to a verdict, for the cause `{first}` has as its error: {why}"
                    )),
                    None => status.set_message(why),
                };
                status.set_type(c.status.label());
            }
            let mut tc = TestCase::new(name, status);
            tc.set_classname(format!("repro.{check}"));
            tc.set_time(Duration::from_secs_f64(c.seconds.max(0.0)));
            let mut out = format!(
                "expected {} ({}); verdict {}",
                c.expected,
                c.expected_because,
                c.verdict.map_or("none", Outcome::as_str)
            );
            if let Some(r) = &c.results {
                out.push_str(&format!("\nresults: {r}"));
            }
            if c.stand_in {
                out.push_str("\nran on the repro stand-in, not real k3s");
            }
            tc.set_system_out(out);
            suite.add_test_case(tc);
        }
        report.add_test_suite(suite);
    }
    report.to_string().map(crate::report::markup_safe)
}

/// The `--emit github-matrix` JSON: one `include` entry per cell, on one line (for
/// `$GITHUB_OUTPUT`).
pub(crate) fn github_matrix(cells: &[(String, String, Outcome)]) -> String {
    let include: Vec<serde_json::Value> = cells
        .iter()
        .map(|(check, v, expected)| {
            serde_json::json!({"check": check, "k3s_version": v, "expected": expected})
        })
        .collect();
    serde_json::json!({ "include": include }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(s: &str) -> Outcome {
        match s {
            "fixed" => Outcome::Fixed,
            "reproduced" => Outcome::Reproduced,
            _ => Outcome::Inconclusive,
        }
    }

    fn cell(version: &str, expected: &str, verdict: Option<&str>) -> Cell {
        Cell {
            check: "etcd-split".into(),
            k3s_version: version.into(),
            expected: outcome(expected),
            expected_because: "because".into(),
            verdict: verdict.map(outcome),
            status: Status::of(outcome(expected), verdict.map(outcome)),
            seconds: 9.25,
            exit_code: Some(0),
            run_id: Some("abcd1234".into()),
            results: Some(format!("etcd-split-{version}")),
            stand_in: true,
            error: None,
        }
    }

    #[test]
    fn table_rendering() {
        let cells = vec![
            cell("v1.33.4+k3s1", "reproduced", Some("reproduced")),
            cell("v1.33.5+k3s1", "reproduced", Some("fixed")),
            cell("v1.34.1+k3s1", "fixed", None),
        ];
        let t = render_table(&cells);
        assert_eq!(
            t,
            "CHECK       K3S VERSION   EXPECTED    VERDICT     TIME  STATUS\n\
             etcd-split  v1.33.4+k3s1  reproduced  reproduced  9.2s  ok\n\
             etcd-split  v1.33.5+k3s1  reproduced  fixed       9.2s  UNEXPECTED FIX\n\
             etcd-split  v1.34.1+k3s1  fixed       -           9.2s  BROKEN\n"
        );
        assert_eq!(
            render_totals(&Totals::of(&cells)),
            "3 runs: 1 ok, 1 unexpected fix, 1 broken"
        );
    }

    #[test]
    fn junit_one_case_per_cell_with_reasons() {
        let cells = vec![
            cell("v1.33.4+k3s1", "reproduced", Some("reproduced")),
            cell("v1.33.5+k3s1", "reproduced", Some("fixed")),
            cell("v1.34.1+k3s1", "fixed", None),
        ];
        let x = junit("repro matrix", &cells).expect("serializes");
        assert_eq!(x.matches("<testcase ").count(), 3, "{x}");
        assert!(x.contains("tests=\"3\""), "{x}");
        assert!(x.contains("failures=\"1\""), "{x}");
        assert!(x.contains("errors=\"1\""), "{x}");
        assert!(
            x.contains("expected reproduced, got fixed")
                && x.contains("results: etcd-split-v1.33.5+k3s1"),
            "{x}"
        );
    }

    /// Docker unreachable breaks every cell alike: one error for the cause, the other cells
    /// skipped naming the cell that has it; a different cause is an error of its own. The
    /// Markdown summary lists every cell.
    #[test]
    fn one_error_per_cause_across_cells() {
        let mut cells = vec![
            cell("v1.33.4+k3s1", "reproduced", None),
            cell("v1.33.5+k3s1", "fixed", None),
            cell("v1.34.1+k3s1", "fixed", None),
        ];
        for c in &mut cells[..2] {
            c.error = Some("cannot reach the Docker engine".into());
        }
        cells[2].error = Some("etcd-1 (boot 1) was not ready within 5m".into());
        let x = junit("repro matrix", &cells).expect("serializes");
        assert!(x.contains("errors=\"2\""), "{x}");
        assert!(
            x.contains("skipped=\"1\"") || x.contains("disabled=\"1\""),
            "{x}"
        );
        assert!(
            x.contains("for the cause `etcd-split on v1.33.4+k3s1` has as its error"),
            "{x}"
        );
        let totals = super::super::model::Totals::of(&cells);
        let md = markdown("repro matrix", &cells, &totals);
        assert!(
            md.starts_with("### ❌ repro matrix: 3 runs: 0 ok, 3 broken"),
            "{md}"
        );
        assert_eq!(
            md.lines().filter(|l| l.starts_with("| etcd-split")).count(),
            3,
            "{md}"
        );
    }

    /// Any text in a cell (a check name with U+FFFE/U+FFFF, an error with controls and an
    /// escape sequence) gives a junit.xml a real XML parser reads, with the text visible.
    #[test]
    fn junit_is_valid_xml_for_any_text() {
        let mut bad = cell("v1.33.5+k3s1", "reproduced", Some("fixed"));
        bad.check = "etcd\u{fffe}split\u{ffff} <&\"'>".into();
        bad.error = Some("boom \u{1b}[31mred\u{0} \u{7} \u{fdd0} ]]> end".into());
        bad.status = Status::Broken;
        let x = junit("repro matrix", &[bad]).expect("serializes");
        let doc = roxmltree::Document::parse(&x).unwrap_or_else(|e| panic!("{e}: {x}"));
        let case = doc
            .descendants()
            .find(|n| n.has_tag_name("testcase"))
            .expect("a case");
        assert_eq!(
            case.attribute("name"),
            Some("etcd\\ufffesplit\\uffff <&\"'> on v1.33.5+k3s1")
        );
        let err = doc
            .descendants()
            .find(|n| n.has_tag_name("error"))
            .expect("an error");
        let msg = err.attribute("message").expect("message");
        // quick-junit drops the controls and the escape sequence itself; the noncharacters it
        // keeps are written visibly by markup_safe.
        assert!(
            msg.contains("boom ") && msg.contains("\\ufdd0 ]]> end"),
            "{msg}"
        );
        assert!(!msg.chars().any(|c| c.is_control()), "{msg:?}");
    }

    #[test]
    fn github_matrix_shape() {
        let j = github_matrix(&[(
            "etcd-split".into(),
            "v1.33.4+k3s1".into(),
            Outcome::Reproduced,
        )]);
        assert_eq!(
            j,
            r#"{"include":[{"check":"etcd-split","k3s_version":"v1.33.4+k3s1","expected":"reproduced"}]}"#
        );
    }
}
