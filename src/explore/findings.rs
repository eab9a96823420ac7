//! Findings: pieces of evidence grouped by cause, and their outputs — findings.json (versioned,
//! schema/findings.schema.json), findings.md and JUnit (one case per class × key). Pure over
//! the pieces and the campaign's minimal checks.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::oracle::{Class, Piece};
use crate::result::FailCause;

pub(crate) const FINDINGS_SCHEMA_VERSION: u32 = 1;

/// A minimised, confirmed reproduction of a finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Minimal {
    /// The check file, relative to the campaign folder.
    pub(crate) check: String,
    pub(crate) steps: usize,
    /// Fresh-cluster re-runs of the minimal check, and how many showed the finding again.
    pub(crate) confirm_runs: usize,
    pub(crate) confirmed: usize,
    /// Runs the minimisation made.
    pub(crate) minimise_runs: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Finding {
    pub(crate) class: Class,
    pub(crate) key: String,
    pub(crate) role: String,
    pub(crate) source: String,
    /// Whether the class says the distribution broke its own rule (not by design, not undecided).
    pub(crate) defect: bool,
    pub(crate) versions: Vec<String>,
    pub(crate) runs: usize,
    pub(crate) evidence: Vec<Piece>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) minimal: Option<Minimal>,
    /// Whether the key is critical (every server must share it; `compareConfig` checks it).
    #[serde(default)]
    pub(crate) critical: bool,
    /// What kind of taken-from finding this is, in words ([`label`]); none for other classes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) label: Option<String>,
    /// How its cause was decided when several explained it (the distinguishing runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cause: Option<super::cause::Decided>,
}

/// A server showing another server's value of a critical key: k3s #12753's kind.
pub(crate) const CRITICAL_TAKEN: &str =
    "critical key taken from another server: the k3s #12753 class (a server must run with its own value)";
/// A server showing another server's value of a key no server compares: k3s's agent reads
/// such keys from the server it reaches (disable-kube-proxy through `getKubeProxyDisabled`,
/// docs/explore.md), so it is the distribution's design or a candidate bug, for a person to judge.
pub(crate) const NON_CRITICAL_TAKEN: &str =
    "non-critical key taken from the server the agent reached: k3s's design for agent-side keys, or a candidate bug";

/// The words that tell the two kinds of taken-from finding apart; none for other classes.
pub(crate) fn label(class: &Class, critical: bool) -> Option<&'static str> {
    matches!(class, Class::TakenFrom(_)).then_some(if critical {
        CRITICAL_TAKEN
    } else {
        NON_CRITICAL_TAKEN
    })
}

impl Minimal {
    /// `checks/….yaml (1 step, confirmed 1/1)`: how every output names it. A check no
    /// confirmation run reproduced says so in the same breath: at real pace a judge's race
    /// (docs/performance.md, the network-policy race) once made such a "defect", and a
    /// maintainer reading the one line must not take it for one.
    pub(crate) fn summary(&self) -> String {
        let steps = if self.steps == 1 { "step" } else { "steps" };
        let unconfirmed = if self.confirmed == 0 && self.confirm_runs > 0 {
            ": NOT reproduced by any confirmation run, likely a flaky observation, not a defect to act on"
        } else {
            ""
        };
        format!(
            "{} ({} {steps}, confirmed {}/{}{unconfirmed})",
            self.check, self.steps, self.confirmed, self.confirm_runs
        )
    }
}

impl Finding {
    pub(crate) fn id(&self) -> String {
        format!("{}/{}/{}", self.class, self.key, self.role)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FindingsFile {
    pub(crate) schema_version: u32,
    pub(crate) campaign: String,
    pub(crate) topology: String,
    /// Runs judged: those that reached a verdict. A failed run is never among them.
    pub(crate) runs: usize,
    /// Runs (or generated checks) that gave nothing to judge, by cause.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) runs_failed: BTreeMap<FailCause, usize>,
    /// Sequences of the plan not run (a budget, an interrupt, a stop).
    #[serde(default)]
    pub(crate) runs_not_run: usize,
    pub(crate) findings: Vec<Finding>,
}

impl FindingsFile {
    pub(crate) fn failed(&self) -> usize {
        self.runs_failed.values().sum()
    }

    /// `24 runs judged, 2 failed (not-ready 2), 3 not run`: how every output counts the runs.
    pub(crate) fn tally(&self) -> String {
        let mut t = format!("{} runs judged", self.runs);
        if self.failed() > 0 {
            let by: Vec<String> = (self.runs_failed.iter())
                .map(|(c, n)| format!("{c} {n}"))
                .collect();
            t.push_str(&format!(", {} failed ({})", self.failed(), by.join(", ")));
        }
        if self.runs_not_run > 0 {
            t.push_str(&format!(", {} sequences not run", self.runs_not_run));
        }
        t
    }

    /// The last line of a campaign or a recheck when runs failed: the findings cover only the
    /// runs judged, so the command exits non-zero (None when every run was judged).
    pub(crate) fn failed_line(&self) -> Option<String> {
        (self.failed() > 0).then(|| {
            format!(
                "{} of {} runs failed and were not judged ({}): the findings cover only the {} runs judged",
                self.failed(),
                self.failed() + self.runs,
                (self.runs_failed.iter())
                    .map(|(c, n)| format!("{c} {n}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                self.runs
            )
        })
    }
}

/// Groups pieces by (class, key, role, source): many runs with one cause are one finding.
pub(crate) fn group(pieces: Vec<Piece>) -> Vec<Finding> {
    let mut by: BTreeMap<(Class, String, String, String), Vec<Piece>> = BTreeMap::new();
    for p in pieces {
        by.entry(p.cause()).or_default().push(p);
    }
    by.into_iter()
        .map(|((class, key, role, source), evidence)| {
            let mut versions: Vec<String> = evidence.iter().map(|p| p.version.clone()).collect();
            versions.sort();
            versions.dedup();
            let mut runs: Vec<&str> = evidence.iter().map(|p| p.run.as_str()).collect();
            runs.sort();
            runs.dedup();
            let critical = evidence.iter().any(|p| p.critical);
            Finding {
                defect: class.is_defect(),
                label: label(&class, critical).map(str::to_string),
                critical,
                class,
                key,
                role,
                source,
                versions,
                runs: runs.len(),
                evidence,
                minimal: None,
                cause: None,
            }
        })
        .collect()
}

/// A field of findings.md shown inline: on one line, its markup (`<`, `&`, backticks, link
/// brackets) written as text, so a value read from a campaign folder cannot start a heading,
/// a block of HTML or a link of its own.
fn md(s: &str) -> String {
    let mut t = s
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('`', "'")
        .replace('[', "\\[")
        .replace(']', "\\]");
    crate::report::text::one_line(&mut t);
    t
}

pub(crate) fn markdown(f: &FindingsFile, checks: &BTreeMap<String, String>) -> String {
    let mut m = format!(
        "# repro explore: {} on `{}`\n\n{}; {} findings ({} defects).\n\n",
        md(&f.campaign),
        md(&f.topology),
        f.tally(),
        f.findings.len(),
        f.findings.iter().filter(|x| x.defect).count()
    );
    if let Some(l) = f.failed_line() {
        m.push_str(&format!("**{l}.**\n\n"));
    }
    for x in &f.findings {
        m.push_str(&format!(
            "## {} — `{}` on {} nodes ({})\n\n- versions: {}\n- runs: {}, pieces of evidence: {}\n",
            md(&x.class.name()),
            md(&x.key),
            md(&x.role),
            md(&x.source),
            md(&x.versions.join(", ")),
            x.runs,
            x.evidence.len()
        ));
        if let Some(l) = &x.label {
            m.push_str(&format!("- kind: {}\n", md(l)));
        }
        if let Some(c) = &x.cause {
            m.push_str(&format!("- cause: {}\n", md(&c.summary())));
        }
        if let Some(min) = &x.minimal {
            m.push_str(&format!(
                "- minimal check: {} on fresh clusters; {} runs to minimise\n",
                md(&min.summary()),
                min.minimise_runs
            ));
            if let Some(text) = checks.get(&min.check) {
                m.push('\n');
                m.push_str(&crate::report::text::code_block("yaml", text, ""));
            }
        }
        m.push_str("\nEvidence (first 5):\n\n");
        for p in x.evidence.iter().take(5) {
            m.push_str(&format!(
                "- {} step {} {}: `{}` observed {}, model {} ({})\n",
                md(&p.run),
                p.step,
                md(&p.node),
                md(&p.signal),
                md(&p.observed),
                md(&p.predicted),
                md(&p.version)
            ));
            for e in p.evidence.iter().take(2) {
                m.push_str(&format!("  - `{}`\n", md(e)));
            }
        }
        m.push('\n');
    }
    m
}

/// One test case per finding class × key: a defect fails, an undecided one is skipped, a
/// by-design one (unguarded divergence) passes with its evidence in system-out. Written by the
/// JUnit library the run's junit.xml uses (`quick-junit`: escaping), then made valid XML
/// whatever the text held (`markup_safe`: control characters XML cannot carry).
pub(crate) fn junit(f: &FindingsFile) -> Result<String, String> {
    use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
    let mut cases: BTreeMap<(Class, String), Vec<&Finding>> = BTreeMap::new();
    for x in &f.findings {
        cases
            .entry((x.class.clone(), x.key.clone()))
            .or_default()
            .push(x);
    }
    let mut suite = TestSuite::new(f.campaign.clone());
    for ((class, key), xs) in &cases {
        let text: Vec<String> = xs
            .iter()
            .map(|x| {
                format!(
                    "{} on {} nodes ({}): {} runs, {} pieces{}",
                    x.class,
                    x.role,
                    x.source,
                    x.runs,
                    x.evidence.len(),
                    x.label
                        .as_ref()
                        .map(|l| format!(" — {l}"))
                        .unwrap_or_default()
                )
            })
            .collect();
        let status = if xs.iter().any(|x| x.defect) {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(text.join("; "));
            s.set_description(text.join("\n"));
            s
        } else if *class == Class::Inconclusive {
            let mut s = TestCaseStatus::skipped();
            s.set_message(text.join("; "));
            s
        } else {
            TestCaseStatus::success()
        };
        let passed = matches!(status, TestCaseStatus::Success { .. });
        let mut tc = TestCase::new(key.clone(), status);
        tc.set_classname(format!("explore.{class}"));
        if passed {
            tc.set_system_out(text.join("\n"));
        }
        suite.add_test_case(tc);
    }
    let mut report = Report::new("repro explore");
    report.add_test_suite(suite);
    let xml = report.to_string().map_err(|e| e.to_string())?;
    Ok(crate::report::text::markup_safe(xml))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(class: &str, run: &str) -> Piece {
        Piece {
            class: super::super::oracle::Class::parse(class).expect("a class"),
            key: "embedded-registry".into(),
            node: "etcd-2".into(),
            role: "etcd".into(),
            source: "its own config (joins an etcd node)".into(),
            step: 1,
            signal: "embedded-registry".into(),
            observed: "false".into(),
            predicted: "true".into(),
            evidence: vec!["Running kubelet".into()],
            version: "v1.33.4+k3s1".into(),
            run: run.into(),
            critical: true,
        }
    }

    /// A minimal check no confirmation run reproduced says so where it is named; a confirmed
    /// one reads as before.
    #[test]
    fn an_unconfirmed_minimal_check_says_it_is_likely_flaky() {
        let m = |confirmed| Minimal {
            check: "checks/x.yaml".into(),
            steps: 1,
            confirm_runs: 1,
            confirmed,
            minimise_runs: 0,
        };
        assert_eq!(m(1).summary(), "checks/x.yaml (1 step, confirmed 1/1)");
        let s = m(0).summary();
        assert!(
            s.starts_with("checks/x.yaml (1 step, confirmed 0/1: NOT reproduced"),
            "{s}"
        );
        assert!(s.contains("not a defect to act on"), "{s}");
    }

    fn file() -> FindingsFile {
        let mut found = group(vec![
            piece("taken-from-cp-1", "runs/a"),
            piece("taken-from-cp-1", "runs/b"),
            piece("taken-from-cp-1", "runs/b"),
            piece("unguarded-divergence", "runs/a"),
            piece("inconclusive", "runs/c"),
        ]);
        found[2].minimal = Some(Minimal {
            check: "checks/x.yaml".into(),
            steps: 1,
            confirm_runs: 2,
            confirmed: 2,
            minimise_runs: 0,
        });
        FindingsFile {
            schema_version: FINDINGS_SCHEMA_VERSION,
            campaign: "c".into(),
            topology: "etcd-split".into(),
            runs: 3,
            runs_failed: BTreeMap::new(),
            runs_not_run: 0,
            findings: found,
        }
    }

    #[test]
    fn pieces_with_one_cause_are_one_finding() {
        let f = file();
        assert_eq!(f.findings.len(), 3);
        let taken = f
            .findings
            .iter()
            .find(|x| x.class == "taken-from-cp-1")
            .expect("found");
        assert_eq!(
            (taken.runs, taken.evidence.len(), taken.defect),
            (2, 3, true)
        );
        assert!(
            !f.findings
                .iter()
                .find(|x| x.class == "unguarded-divergence")
                .expect("found")
                .defect
        );
    }

    #[test]
    fn a_taken_from_finding_says_whether_its_key_is_critical() {
        let mut kube_proxy = piece("taken-from-cp-1", "runs/a");
        kube_proxy.key = "disable-kube-proxy".into();
        kube_proxy.critical = false;
        let found = group(vec![
            piece("taken-from-cp-1", "runs/a"),
            kube_proxy,
            piece("unguarded-divergence", "runs/a"),
        ]);
        let of = |key: &str, class: &str| {
            let x = (found.iter().find(|x| x.key == key && x.class == class)).expect("found");
            (x.critical, x.label.as_deref())
        };
        assert_eq!(
            of("embedded-registry", "taken-from-cp-1"),
            (true, Some(CRITICAL_TAKEN))
        );
        assert_eq!(
            of("disable-kube-proxy", "taken-from-cp-1"),
            (false, Some(NON_CRITICAL_TAKEN))
        );
        assert_eq!(
            of("embedded-registry", "unguarded-divergence"),
            (true, None)
        );
        let f = FindingsFile {
            schema_version: FINDINGS_SCHEMA_VERSION,
            campaign: "c".into(),
            topology: "etcd-split".into(),
            runs: 1,
            runs_failed: BTreeMap::new(),
            runs_not_run: 0,
            findings: found,
        };
        let md = markdown(&f, &BTreeMap::new());
        assert!(
            md.contains(&format!("- kind: {NON_CRITICAL_TAKEN}")),
            "{md}"
        );
        assert!(junit(&f).expect("junit").contains("the k3s #12753 class"));
    }

    #[test]
    fn findings_json_matches_its_schema() {
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../schema/findings.schema.json"))
                .expect("schema json");
        let v = jsonschema::draft202012::new(&schema).expect("valid schema");
        let doc = serde_json::to_value(file()).expect("json");
        let errors: Vec<String> = v
            .iter_errors(&doc)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{errors:?}");
        // and the schema is not a blank check: an unknown class is refused
        let mut bad = doc.clone();
        bad["findings"][0]["class"] = serde_json::json!("weird");
        assert!(!v.is_valid(&bad));
    }

    #[test]
    fn junit_has_one_case_per_class_and_key() {
        let j = junit(&file()).expect("junit");
        assert_eq!(j.matches("<testcase ").count(), 3);
        assert_eq!(j.matches("<failure ").count(), 1);
        assert_eq!(j.matches("<skipped ").count(), 1);
    }

    #[test]
    fn failed_runs_are_counted_by_cause_and_never_as_judged() {
        let mut f = file();
        assert_eq!(f.failed_line(), None);
        assert_eq!(f.tally(), "3 runs judged");
        f.runs_failed = [(FailCause::NotReady, 2), (FailCause::CheckRefused, 1)].into();
        f.runs_not_run = 4;
        assert_eq!(
            f.tally(),
            "3 runs judged, 3 failed (not-ready 2, check-refused 1), 4 sequences not run"
        );
        let line = f.failed_line().expect("runs failed");
        assert!(line.starts_with("3 of 6 runs failed"), "{line}");
        let md = markdown(&f, &BTreeMap::new());
        assert!(
            md.contains("3 runs judged, 3 failed") && md.contains("**3 of 6 runs failed"),
            "{md}"
        );
        // the causes read back from findings.json by name
        let text = serde_json::to_string(&f).expect("json");
        assert!(
            text.contains(r#""runs_failed":{"not-ready":2,"check-refused":1}"#),
            "{text}"
        );
        let back: FindingsFile = serde_json::from_str(&text).expect("read back");
        assert_eq!(back, f);
    }
}
