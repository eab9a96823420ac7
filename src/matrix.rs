//! A check × version matrix: its cells, the status of each (verdict against the verdict the
//! check's `fixed-in` predicts), the table people read, `summary.json` and the merged JUnit
//! file CI reads. All pure: `cmd::matrix` runs the cells, `merge` reads them back from files.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::exit;

/// `kind` of a summary.json, so `repro merge` can tell it from other JSON.
pub const SUMMARY_KIND: &str = "repro-matrix-summary";
pub const SUMMARY_SCHEMA_VERSION: u32 = 1;

/// How one cell's verdict compares with the expected one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// The verdict is the expected one.
    Ok,
    /// Expected `fixed` (the release has the fix per `fixed-in`), got `reproduced`.
    Regression,
    /// Expected `reproduced` (the release predates the fix per `fixed-in`), got `fixed`.
    UnexpectedFix,
    /// The run worked but the observations match neither behaviour.
    Inconclusive,
    /// The run produced no verdict (Docker, image, timeout): infrastructure.
    Broken,
    /// Never ran (the matrix was interrupted first).
    NotRun,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Regression => "REGRESSION",
            Status::UnexpectedFix => "UNEXPECTED FIX",
            Status::Inconclusive => "INCONCLUSIVE",
            Status::Broken => "BROKEN",
            Status::NotRun => "NOT RUN",
        }
    }

    /// A verdict that differs from the expected one (exit 1).
    pub fn differs(self) -> bool {
        matches!(
            self,
            Status::Regression | Status::UnexpectedFix | Status::Inconclusive
        )
    }

    /// Compares a verdict (None: the run broke) with the expected one.
    pub fn of(expected: &str, verdict: Option<&str>) -> Status {
        match verdict {
            None => Status::Broken,
            Some(v) if v == expected => Status::Ok,
            Some("reproduced") if expected == "fixed" => Status::Regression,
            Some("fixed") if expected == "reproduced" => Status::UnexpectedFix,
            Some(_) => Status::Inconclusive,
        }
    }
}

/// One check on one k3s version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    pub check: String,
    pub k3s_version: String,
    /// `fixed` or `reproduced`, from the check's `fixed-in`.
    pub expected: String,
    /// Why that is expected, in words (which `fixed-in` entry decides it).
    pub expected_because: String,
    /// `fixed`, `reproduced`, `inconclusive`; None when the run broke or never ran.
    pub verdict: Option<String>,
    pub status: Status,
    pub seconds: f64,
    /// The run's own exit code (`repro run` semantics), when it ran.
    pub exit_code: Option<i32>,
    pub run_id: Option<String>,
    /// The run's results folder: relative to the summary's folder when inside it.
    pub results: Option<String>,
    /// True when the stand-in ran instead of real k3s.
    pub stand_in: bool,
    /// Why there is no verdict, or why it is inconclusive.
    pub error: Option<String>,
}

impl Cell {
    /// One sentence on why a cell is not ok: which version, expected vs got, and why expected.
    pub fn explain(&self) -> Option<String> {
        let got = self.verdict.as_deref().unwrap_or("no verdict");
        let at = self
            .results
            .as_deref()
            .map(|r| format!("; results: {r}"))
            .unwrap_or_default();
        let err = self
            .error
            .as_deref()
            .map(|e| format!(" ({e})"))
            .unwrap_or_default();
        let text = match self.status {
            Status::Ok => return None,
            Status::Regression => format!(
                "{} on {}: expected fixed, got reproduced — the bug is back in a release that should have the fix ({}){at}",
                self.check, self.k3s_version, self.expected_because
            ),
            Status::UnexpectedFix => format!(
                "{} on {}: expected reproduced, got fixed — a fix where none was expected ({}); if the fix reached this release, correct the check's fixed-in{at}",
                self.check, self.k3s_version, self.expected_because
            ),
            Status::Inconclusive => format!(
                "{} on {}: expected {}, got {got}{err} ({}){at}",
                self.check, self.k3s_version, self.expected, self.expected_because
            ),
            Status::Broken => format!(
                "{} on {}: the run broke before a verdict{err}{at}",
                self.check, self.k3s_version
            ),
            Status::NotRun => format!(
                "{} on {}: not run to the end{err}{at}",
                self.check, self.k3s_version
            ),
        };
        Some(text)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    pub cells: usize,
    pub ok: usize,
    pub regression: usize,
    pub unexpected_fix: usize,
    pub inconclusive: usize,
    pub broken: usize,
    pub not_run: usize,
}

impl Totals {
    pub fn of(cells: &[Cell]) -> Totals {
        let n = |s: Status| cells.iter().filter(|c| c.status == s).count();
        Totals {
            cells: cells.len(),
            ok: n(Status::Ok),
            regression: n(Status::Regression),
            unexpected_fix: n(Status::UnexpectedFix),
            inconclusive: n(Status::Inconclusive),
            broken: n(Status::Broken),
            not_run: n(Status::NotRun),
        }
    }
}

/// The exit code of a set of cells: 1 when any verdict differs, else 3 when any run broke or
/// did not run, else 0. A verdict that differs wins over a broken run: it is a finding, and a
/// CI that retries on 3 must not retry it away.
pub fn exit_code(cells: &[Cell]) -> i32 {
    if cells.iter().any(|c| c.status.differs()) {
        exit::OUTCOME_DIFFERS
    } else if cells
        .iter()
        .any(|c| matches!(c.status, Status::Broken | Status::NotRun))
    {
        exit::INFRA
    } else {
        exit::OK
    }
}

/// `summary.json` of a matrix (or a merge of several).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    pub schema_version: u32,
    pub kind: String,
    pub tool: crate::result::ToolInfo,
    pub created_at: String,
    /// The command that made it.
    pub command: Vec<String>,
    /// For a merge: the inputs, as given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<String>,
    pub totals: Totals,
    pub exit_code: i32,
    pub cells: Vec<Cell>,
}

impl Summary {
    pub fn new(command: Vec<String>, merged_from: Vec<String>, cells: Vec<Cell>) -> Summary {
        Summary {
            schema_version: SUMMARY_SCHEMA_VERSION,
            kind: SUMMARY_KIND.into(),
            tool: crate::result::ToolInfo {
                name: "repro".into(),
                version: env!("CARGO_PKG_VERSION").into(),
            },
            created_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            command,
            merged_from,
            totals: Totals::of(&cells),
            exit_code: exit_code(&cells),
            cells,
        }
    }
}

/// The table people read: one row per check × version.
pub fn render_table(cells: &[Cell]) -> String {
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
            c.expected.clone(),
            c.verdict.clone().unwrap_or_else(|| "-".into()),
            if c.status == Status::NotRun {
                "-".into()
            } else {
                format!("{:.1}s", c.seconds)
            },
            c.status.label().into(),
        ]);
    }
    let mut o = String::new();
    crate::cmd::plan::table(&mut o, "", &rows);
    o
}

/// The counts line under the table.
pub fn render_totals(t: &Totals) -> String {
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

/// One JUnit test case per check × version, one suite per check: pass when the verdict is the
/// expected one; a differing verdict is a failure, a broken run an error, a run never made a
/// skip. Messages say expected vs got and where the run's results are.
pub fn junit(name: &str, cells: &[Cell]) -> Result<String, quick_junit::SerializeError> {
    use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
    let mut report = Report::new(name);
    let mut checks: Vec<&str> = Vec::new();
    for c in cells {
        if !checks.contains(&c.check.as_str()) {
            checks.push(&c.check);
        }
    }
    for check in checks {
        let mut suite = TestSuite::new(format!("repro.{check}"));
        for c in cells.iter().filter(|c| c.check == check) {
            let mut status = match c.status {
                Status::Ok => TestCaseStatus::success(),
                Status::Broken => TestCaseStatus::non_success(NonSuccessKind::Error),
                Status::NotRun => TestCaseStatus::skipped(),
                _ => TestCaseStatus::non_success(NonSuccessKind::Failure),
            };
            if let Some(why) = c.explain() {
                status.set_message(why);
                status.set_type(c.status.label());
            }
            let mut tc = TestCase::new(format!("{check} on {}", c.k3s_version), status);
            tc.set_classname(format!("repro.{check}"));
            tc.set_time(Duration::from_secs_f64(c.seconds.max(0.0)));
            let mut out = format!(
                "expected {} ({}); verdict {}",
                c.expected,
                c.expected_because,
                c.verdict.as_deref().unwrap_or("none")
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
    report.to_string()
}

/// The `--emit github-matrix` JSON: one `include` entry per cell, on one line (for
/// `$GITHUB_OUTPUT`).
pub fn github_matrix(cells: &[(String, String, String)]) -> String {
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
    use crate::plan::{expected, ExpectedVerdict};
    use crate::version::{K3sVersion, ReleaseSet};

    fn v(s: &str) -> K3sVersion {
        s.parse().expect("valid version")
    }

    fn cell(version: &str, expected: &str, verdict: Option<&str>) -> Cell {
        Cell {
            check: "etcd-split".into(),
            k3s_version: version.into(),
            expected: expected.into(),
            expected_because: "because".into(),
            verdict: verdict.map(str::to_string),
            status: Status::of(expected, verdict),
            seconds: 9.25,
            exit_code: Some(0),
            run_id: Some("abcd1234".into()),
            results: Some(format!("etcd-split-{version}")),
            stand_in: true,
            error: None,
        }
    }

    #[test]
    fn expected_verdict_per_version_from_fixed_in() {
        let fixed = ReleaseSet::new(
            [
                "v1.31.13+k3s1",
                "v1.32.9+k3s1",
                "v1.33.5+k3s1",
                "v1.34.1+k3s1",
            ]
            .iter()
            .map(|s| v(s))
            .collect(),
        );
        let cases = [
            ("v1.30.14+k3s2", ExpectedVerdict::Reproduced),
            ("v1.31.12+k3s1", ExpectedVerdict::Reproduced),
            ("v1.31.13+k3s1", ExpectedVerdict::Fixed),
            ("v1.32.8+k3s1", ExpectedVerdict::Reproduced),
            ("v1.32.9+k3s1", ExpectedVerdict::Fixed),
            ("v1.33.4+k3s1", ExpectedVerdict::Reproduced),
            ("v1.33.5-rc1+k3s1", ExpectedVerdict::Reproduced),
            ("v1.33.5+k3s1", ExpectedVerdict::Fixed),
            ("v1.34.1+k3s1", ExpectedVerdict::Fixed),
            ("v1.35.0+k3s1", ExpectedVerdict::Fixed),
        ];
        for (ver, want) in cases {
            let (got, why) = expected(&fixed, &v(ver));
            assert_eq!(got, want, "{ver}: {why}");
            assert!(why.contains(ver) || why.contains("line"), "{why}");
        }
        // Without fixed-in: the documented behaviour is expected everywhere.
        assert_eq!(
            expected(&ReleaseSet::default(), &v("v1.33.4+k3s1")).0,
            ExpectedVerdict::Fixed
        );
    }

    #[test]
    fn status_and_exit_code() {
        assert_eq!(Status::of("fixed", Some("fixed")), Status::Ok);
        assert_eq!(Status::of("fixed", Some("reproduced")), Status::Regression);
        assert_eq!(
            Status::of("reproduced", Some("fixed")),
            Status::UnexpectedFix
        );
        assert_eq!(
            Status::of("reproduced", Some("inconclusive")),
            Status::Inconclusive
        );
        assert_eq!(Status::of("fixed", None), Status::Broken);
        let ok = cell("v1.33.5+k3s1", "fixed", Some("fixed"));
        let bad = cell("v1.33.4+k3s1", "fixed", Some("reproduced"));
        let broken = cell("v1.33.3+k3s1", "reproduced", None);
        assert_eq!(exit_code(std::slice::from_ref(&ok)), 0);
        assert_eq!(exit_code(&[ok.clone(), broken.clone()]), 3);
        // A finding wins over a broken run.
        assert_eq!(exit_code(&[ok, broken, bad]), 1);
        assert_eq!(exit_code(&[]), 0);
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

    #[test]
    fn github_matrix_shape() {
        let j = github_matrix(&[(
            "etcd-split".into(),
            "v1.33.4+k3s1".into(),
            "reproduced".into(),
        )]);
        assert_eq!(
            j,
            r#"{"include":[{"check":"etcd-split","k3s_version":"v1.33.4+k3s1","expected":"reproduced"}]}"#
        );
    }
}
