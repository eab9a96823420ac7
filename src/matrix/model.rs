//! The cells of a check × version matrix, the status of each (its verdict against the verdict
//! the check's `fixed-in` predicts), their totals, the exit code and `summary.json`.

use serde::{Deserialize, Serialize};

use crate::exit::Exit;
use crate::result::Outcome;

/// `kind` of a summary.json, so `repro merge` can tell it from other JSON.
pub(crate) const SUMMARY_KIND: &str = "repro-matrix-summary";
pub(crate) const SUMMARY_SCHEMA_VERSION: u32 = 1;

/// How one cell's verdict compares with the expected one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Status {
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
    pub(crate) fn label(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Regression => "REGRESSION",
            Status::UnexpectedFix => "UNEXPECTED FIX",
            Status::Inconclusive => "INCONCLUSIVE",
            Status::Broken => "BROKEN",
            Status::NotRun => "NOT RUN",
        }
    }

    /// The exit this cell alone would give.
    pub(crate) fn exit(self) -> Exit {
        match self {
            Status::Ok => Exit::Ok,
            Status::Regression | Status::UnexpectedFix => Exit::OutcomeDiffers,
            Status::Inconclusive => Exit::Inconclusive,
            Status::Broken | Status::NotRun => Exit::Infra,
        }
    }

    /// Compares a verdict (None: the run broke) with the expected one.
    /// The comparison is a run's own (`Exit::of_outcome`); a cell names which way it differs.
    pub(crate) fn of(expected: Outcome, verdict: Option<Outcome>) -> Status {
        let Some(v) = verdict else {
            return Status::Broken;
        };
        match (Exit::of_outcome(v, expected), v) {
            (Exit::Ok, _) => Status::Ok,
            (Exit::OutcomeDiffers, Outcome::Reproduced) if expected == Outcome::Fixed => {
                Status::Regression
            }
            (Exit::OutcomeDiffers, Outcome::Fixed) if expected == Outcome::Reproduced => {
                Status::UnexpectedFix
            }
            _ => Status::Inconclusive,
        }
    }
}

/// One check on one k3s version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Cell {
    pub(crate) check: String,
    pub(crate) k3s_version: String,
    /// `fixed` or `reproduced`, from the check's `fixed-in`.
    pub(crate) expected: Outcome,
    /// Why that is expected, in words (which `fixed-in` entry decides it).
    pub(crate) expected_because: String,
    /// None when the run broke or never ran.
    pub(crate) verdict: Option<Outcome>,
    pub(crate) status: Status,
    pub(crate) seconds: f64,
    /// The run's own exit code (`repro run` semantics), when it ran.
    pub(crate) exit_code: Option<i32>,
    pub(crate) run_id: Option<String>,
    /// The run's results folder: relative to the summary's folder when inside it.
    pub(crate) results: Option<String>,
    /// True when the stand-in ran instead of real k3s.
    pub(crate) stand_in: bool,
    /// Why there is no verdict, or why it is inconclusive.
    pub(crate) error: Option<String>,
}

impl Cell {
    /// A cell without a run (`NOT RUN`), saying why in `error`.
    pub(crate) fn not_run(
        check: String,
        k3s_version: String,
        expected: Outcome,
        expected_because: String,
        stand_in: bool,
        error: &str,
    ) -> Cell {
        Cell {
            check,
            k3s_version,
            expected,
            expected_because,
            verdict: None,
            status: Status::NotRun,
            seconds: 0.0,
            exit_code: None,
            run_id: None,
            results: None,
            stand_in,
            error: Some(error.to_string()),
        }
    }

    /// One sentence on why a cell is not ok: which version, expected vs got, and why expected.
    pub(crate) fn explain(&self) -> Option<String> {
        let got = self.verdict.map_or("no verdict", Outcome::as_str);
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
pub(crate) struct Totals {
    pub(crate) cells: usize,
    pub(crate) ok: usize,
    pub(crate) regression: usize,
    pub(crate) unexpected_fix: usize,
    pub(crate) inconclusive: usize,
    pub(crate) broken: usize,
    pub(crate) not_run: usize,
}

impl Totals {
    pub(crate) fn of(cells: &[Cell]) -> Totals {
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

/// The exit of a set of cells: the worst of theirs, 3 > 1 > 4 > 0 (a run that broke or never
/// ran leaves the set incomplete, so it wins over a finding; an interrupted matrix exits 130
/// whatever its cells say). See [`Exit::worst`].
pub(crate) fn exit(cells: &[Cell]) -> Exit {
    Exit::worst(cells.iter().map(|c| c.status.exit()))
}

/// summary.json, junit.xml, the table and GitHub's annotations carry the command line and each
/// cell's `error` (a run's own words, read back from a result.json a merge did not write): all
/// redacted here, in one context, before anything is rendered (issue #24).
fn redact_summary_text(command: Vec<String>, cells: &mut [Cell]) -> Vec<String> {
    let mut ctx = crate::redact::Redactor::new(&[]);
    let command = serde_json::Value::from(command);
    ctx.learn_json(&command);
    for c in cells.iter() {
        for t in [c.error.as_deref(), Some(c.expected_because.as_str())]
            .into_iter()
            .flatten()
        {
            ctx.learn_text(t);
        }
    }
    for c in cells.iter_mut() {
        if let Some(e) = &c.error {
            c.error = Some(ctx.redact_text(e));
        }
        c.expected_because = ctx.redact_text(&c.expected_because);
    }
    match ctx.redact_json(&command) {
        serde_json::Value::Array(items) => items
            .into_iter()
            .map(|v| v.as_str().unwrap_or_default().to_string())
            .collect(),
        _ => Vec::new(),
    }
}

/// `summary.json` of a matrix (or a merge of several).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Summary {
    pub(crate) schema_version: u32,
    pub(crate) kind: String,
    pub(crate) tool: crate::result::ToolInfo,
    pub(crate) created_at: String,
    /// The command that made it.
    pub(crate) command: Vec<String>,
    /// For a merge: the inputs, as given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) merged_from: Vec<String>,
    pub(crate) totals: Totals,
    pub(crate) exit_code: i32,
    pub(crate) cells: Vec<Cell>,
}

impl Summary {
    pub(crate) fn new(
        command: Vec<String>,
        merged_from: Vec<String>,
        mut cells: Vec<Cell>,
    ) -> Summary {
        let command = redact_summary_text(command, &mut cells);
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
            exit_code: exit(&cells).code(),
            cells,
        }
    }

    /// The exit its cells give (what `exit_code` records).
    pub(crate) fn exit(&self) -> Exit {
        Exit::of_code(self.exit_code)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::plan::expected;
    use distro::{ReleaseSet, Version};

    fn v(s: &str) -> Version {
        s.parse().expect("valid version")
    }

    pub(crate) fn outcome(s: &str) -> Outcome {
        match s {
            "fixed" => Outcome::Fixed,
            "reproduced" => Outcome::Reproduced,
            _ => Outcome::Inconclusive,
        }
    }

    /// A cell of etcd-split on `version`, as a matrix records it (the render tests use it too).
    pub(crate) fn cell(version: &str, expected: &str, verdict: Option<&str>) -> Cell {
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
            ("v1.30.14+k3s2", Outcome::Reproduced),
            ("v1.31.12+k3s1", Outcome::Reproduced),
            ("v1.31.13+k3s1", Outcome::Fixed),
            ("v1.32.8+k3s1", Outcome::Reproduced),
            ("v1.32.9+k3s1", Outcome::Fixed),
            ("v1.33.4+k3s1", Outcome::Reproduced),
            ("v1.33.4-rc1+k3s1", Outcome::Reproduced),
            ("v1.33.6-rc1+k3s1", Outcome::Fixed),
            ("v1.33.5+k3s1", Outcome::Fixed),
            ("v1.34.1+k3s1", Outcome::Fixed),
            ("v1.35.0+k3s1", Outcome::Fixed),
        ];
        for (ver, want) in cases {
            let (got, why) = expected(&fixed, &v(ver));
            assert_eq!(got, Some(want), "{ver}: {why}");
            assert!(why.contains(ver) || why.contains("line"), "{why}");
        }
        // Without fixed-in: the documented behaviour is expected everywhere.
        assert_eq!(
            expected(&ReleaseSet::default(), &v("v1.33.4+k3s1")).0,
            Some(Outcome::Fixed)
        );
    }

    #[test]
    fn status_and_exit_code() {
        assert_eq!(
            Status::of(outcome("fixed"), Some(outcome("fixed"))),
            Status::Ok
        );
        assert_eq!(
            Status::of(outcome("fixed"), Some(outcome("reproduced"))),
            Status::Regression
        );
        assert_eq!(
            Status::of(outcome("reproduced"), Some(outcome("fixed"))),
            Status::UnexpectedFix
        );
        assert_eq!(
            Status::of(outcome("reproduced"), Some(outcome("inconclusive"))),
            Status::Inconclusive
        );
        assert_eq!(Status::of(outcome("fixed"), None), Status::Broken);
        let ok = cell("v1.33.5+k3s1", "fixed", Some("fixed"));
        let bad = cell("v1.33.4+k3s1", "fixed", Some("reproduced"));
        let broken = cell("v1.33.3+k3s1", "reproduced", None);
        let unsure = cell("v1.33.2+k3s1", "reproduced", Some("inconclusive"));
        assert_eq!(exit(std::slice::from_ref(&ok)).code(), 0);
        assert_eq!(exit(&[ok.clone(), unsure.clone()]).code(), 4);
        // A real difference wins over an inconclusive run...
        assert_eq!(exit(&[ok.clone(), unsure.clone(), bad.clone()]).code(), 1);
        // ...and a broken run over both: the set is incomplete.
        assert_eq!(exit(&[ok.clone(), broken.clone()]).code(), 3);
        assert_eq!(exit(&[ok, unsure, broken, bad]).code(), 3);
        assert_eq!(exit(&[]).code(), 0);
    }
}
