//! The cells of a check × version matrix, the status of each (its verdict against the verdict
//! the check's `fixed-in` predicts), their totals, the exit code and `summary.json`.

use serde::{Deserialize, Serialize};

use crate::exit;
use crate::result::Outcome;

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

    /// The exit code this cell alone would give (see [`crate::exit`]).
    pub fn exit_code(self) -> i32 {
        match self {
            Status::Ok => exit::OK,
            Status::Regression | Status::UnexpectedFix => exit::OUTCOME_DIFFERS,
            Status::Inconclusive => exit::INCONCLUSIVE,
            Status::Broken | Status::NotRun => exit::INFRA,
        }
    }

    /// Compares a verdict (None: the run broke) with the expected one.
    pub fn of(expected: Outcome, verdict: Option<Outcome>) -> Status {
        match verdict {
            None => Status::Broken,
            Some(v) if v == expected => Status::Ok,
            Some(Outcome::Reproduced) if expected == Outcome::Fixed => Status::Regression,
            Some(Outcome::Fixed) if expected == Outcome::Reproduced => Status::UnexpectedFix,
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
    pub expected: Outcome,
    /// Why that is expected, in words (which `fixed-in` entry decides it).
    pub expected_because: String,
    /// None when the run broke or never ran.
    pub verdict: Option<Outcome>,
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

/// The exit code of a set of cells: the worst of theirs, 3 > 1 > 4 > 0 (a run that broke or
/// never ran leaves the set incomplete, so it wins over a finding; an interrupted matrix exits
/// 130 whatever its cells say). See [`exit::worst`].
pub fn exit_code(cells: &[Cell]) -> i32 {
    exit::worst(cells.iter().map(|c| c.status.exit_code()))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::expected;
    use crate::version::{K3sVersion, ReleaseSet};

    fn v(s: &str) -> K3sVersion {
        s.parse().expect("valid version")
    }

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
            ("v1.33.5-rc1+k3s1", Outcome::Reproduced),
            ("v1.33.5+k3s1", Outcome::Fixed),
            ("v1.34.1+k3s1", Outcome::Fixed),
            ("v1.35.0+k3s1", Outcome::Fixed),
        ];
        for (ver, want) in cases {
            let (got, why) = expected(&fixed, &v(ver));
            assert_eq!(got, want, "{ver}: {why}");
            assert!(why.contains(ver) || why.contains("line"), "{why}");
        }
        // Without fixed-in: the documented behaviour is expected everywhere.
        assert_eq!(
            expected(&ReleaseSet::default(), &v("v1.33.4+k3s1")).0,
            Outcome::Fixed
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
        assert_eq!(exit_code(std::slice::from_ref(&ok)), 0);
        assert_eq!(exit_code(&[ok.clone(), unsure.clone()]), 4);
        // A real difference wins over an inconclusive run...
        assert_eq!(exit_code(&[ok.clone(), unsure.clone(), bad.clone()]), 1);
        // ...and a broken run over both: the set is incomplete.
        assert_eq!(exit_code(&[ok.clone(), broken.clone()]), 3);
        assert_eq!(exit_code(&[ok, unsure, broken, bad]), 3);
        assert_eq!(exit_code(&[]), 0);
    }
}
