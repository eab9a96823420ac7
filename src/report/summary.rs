//! The summary of one run for scripts (`repro run --format json`): what was asked, the verdict,
//! every observation judged against the correct value and the bug's, where the results are and
//! the exit code. One JSON object on stdout; the full record stays result.json.

use std::path::Path;

use serde::Serialize;

use crate::result::{Outcome, RunResult};

/// `kind` of the summary object, so a reader can tell it from other JSON.
pub(crate) const KIND: &str = "repro-run-summary";

#[derive(Debug, Serialize)]
pub(crate) struct RunSummary<'a> {
    pub(crate) kind: &'static str,
    pub(crate) run_id: &'a str,
    pub(crate) check: &'a str,
    pub(crate) k3s_version: &'a str,
    pub(crate) image: &'a str,
    pub(crate) stand_in: bool,
    /// The outcome asked for (`--expect`), and what the check's `fixed-in` predicts.
    pub(crate) expect: Outcome,
    pub(crate) expected_for_version: Option<Outcome>,
    /// `fixed`, `reproduced`, `inconclusive`; null when the run stopped before a verdict.
    pub(crate) verdict: Option<Outcome>,
    pub(crate) reason: Option<&'a str>,
    pub(crate) differences: Vec<&'a str>,
    pub(crate) observations: Vec<ObservationSummary<'a>>,
    /// Why the run stopped early, if it did.
    pub(crate) error: Option<&'a str>,
    pub(crate) exit_code: Option<i32>,
    /// The results folder (result.json, junit.xml, report.md, timeline.html, bundle).
    pub(crate) results: String,
    pub(crate) rerun: &'a str,
}

#[derive(Debug, Serialize)]
pub(crate) struct ObservationSummary<'a> {
    pub(crate) step: usize,
    pub(crate) node: &'a str,
    pub(crate) signal: &'a str,
    pub(crate) expected: Option<&'a str>,
    pub(crate) bug: Option<&'a str>,
    pub(crate) observed: &'a str,
    /// `ok` (the correct value), `bug` (the documented bug's value) or `differs` (neither).
    pub(crate) judged: &'static str,
    pub(crate) boot: u32,
    pub(crate) reason: &'a str,
    /// The first evidence line, as k3s (or the probe, or Docker) wrote it.
    pub(crate) evidence: Option<&'a str>,
}

pub(crate) fn of<'a>(r: &'a RunResult, dir: &Path) -> RunSummary<'a> {
    let observations = r
        .steps
        .iter()
        .flat_map(|s| {
            s.observations.iter().map(move |o| ObservationSummary {
                step: s.index,
                node: &o.node,
                signal: &o.signal,
                expected: o.expected.as_ref().map(|e| e.as_str()),
                bug: o.bug.as_ref().map(|e| e.as_str()),
                observed: o.observed.as_str(),
                judged: o.judged(),
                boot: o.boot,
                reason: &o.reason,
                evidence: o.evidence.first().map(|e| e.text.as_str()),
            })
        })
        .collect();
    RunSummary {
        kind: KIND,
        run_id: &r.run_id,
        check: &r.check.name,
        k3s_version: &r.k3s.version,
        image: &r.k3s.image,
        stand_in: r.k3s.stand_in,
        expect: r.expect,
        expected_for_version: r.expected_for_version,
        verdict: r.verdict.as_ref().map(|v| v.outcome),
        reason: r.verdict.as_ref().map(|v| v.reason.as_str()),
        differences: r
            .verdict
            .iter()
            .flat_map(|v| v.differences.iter().map(String::as_str))
            .collect(),
        observations,
        error: r.error.as_deref(),
        exit_code: r.exit_code,
        results: dir.display().to_string(),
        rerun: &r.rerun,
    }
}

/// The summary as pretty JSON with a final newline.
pub(crate) fn json(r: &RunResult, dir: &Path) -> String {
    let mut s = serde_json::to_string_pretty(&of(r, dir)).unwrap_or_else(|e| {
        // Serialising plain strings and numbers cannot fail; say so rather than panic.
        format!("{{\"kind\": \"{KIND}\", \"error\": \"cannot serialise the summary: {e}\"}}")
    });
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixture_run_as_a_summary() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/run-etcd-split-buggy");
        let r: RunResult =
            serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).expect("read"))
                .expect("result");
        let v: serde_json::Value =
            serde_json::from_str(&json(&r, Path::new("results/x"))).expect("json");
        assert_eq!(v["kind"], KIND);
        assert_eq!(v["verdict"], "reproduced");
        assert_eq!(v["expect"], "reproduced");
        assert_eq!(v["exit_code"], 0);
        assert_eq!(v["results"], "results/x");
        let obs = v["observations"].as_array().expect("observations");
        assert_eq!(obs.len(), 13);
        let bug: Vec<_> = obs.iter().filter(|o| o["judged"] == "bug").collect();
        assert_eq!(bug.len(), 4);
        assert_eq!(bug[0]["node"], "etcd-2");
        assert_eq!(bug[0]["signal"], "embedded-registry");
        assert!(bug[0]["evidence"]
            .as_str()
            .expect("evidence")
            .contains("Running kubelet"));
    }
}
