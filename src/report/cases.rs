//! The expectations of a run as one flat list (step × node × signal), shared by the JUnit file,
//! the bug report and the timeline so the three always count the same things.

use crate::result::{Observation, Observed, RunResult};
use crate::scenario::Expected;

/// How one expectation came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Observed the correct value.
    Pass,
    /// Observed something else (the bug's value or another one).
    Fail,
    /// Observed, but the signal could not be decided (`unknown`).
    Undecided,
    /// Never observed: the run stopped before it got there.
    NotRun,
}

#[derive(Debug, Clone)]
pub(crate) struct Case<'a> {
    pub(crate) step: usize,
    pub(crate) step_name: String,
    pub(crate) node: String,
    pub(crate) signal: String,
    pub(crate) expected: Expected,
    /// The documented bug's value, when the check gives one.
    pub(crate) bug: Option<Expected>,
    pub(crate) obs: Option<&'a Observation>,
    pub(crate) outcome: Outcome,
}

impl Case<'_> {
    /// `step-1/etcd-2/embedded-registry`: stable across runs, so CI can track it.
    pub(crate) fn name(&self) -> String {
        format!("step-{}/{}/{}", self.step, self.node, self.signal)
    }

    /// Whether the bug changes this expectation at all (part of the bug signature).
    pub(crate) fn in_bug_signature(&self) -> bool {
        self.bug.as_ref().is_some_and(|b| *b != self.expected)
    }

    /// Whether the observation is the documented bug's value.
    pub(crate) fn shows_bug(&self) -> bool {
        self.in_bug_signature()
            && self.obs.is_some_and(|o| {
                // `any` is not a bug's value: the bug world cannot tell there.
                self.bug
                    .as_ref()
                    .is_some_and(|b| *b != Expected::Any && b.matches(&o.observed))
                    || (o.observed == Observed::Dead && o.matches_bug())
            })
    }

    pub(crate) fn observed(&self) -> &str {
        self.obs
            .map(|o| o.observed.as_str())
            .unwrap_or("not observed")
    }
}

/// Every expectation of the run in step order: the observed ones as recorded, then any planned
/// ones the run never observed (a run that died early).
pub(crate) fn cases(r: &RunResult) -> Vec<Case<'_>> {
    let mut indexes: Vec<usize> = r.planned_steps.iter().map(|p| p.index).collect();
    for s in &r.steps {
        if !indexes.contains(&s.index) {
            indexes.push(s.index);
        }
    }
    indexes.sort_unstable();
    let mut out = Vec::new();
    for index in indexes {
        let planned = r.planned_steps.iter().find(|p| p.index == index);
        let step = r.steps.iter().find(|s| s.index == index);
        let step_name = step
            .map(|s| s.name.clone())
            .or_else(|| planned.map(|p| p.name.clone()))
            .unwrap_or_default();
        let mut seen: Vec<(String, String)> = Vec::new();
        for o in step.map(|s| s.observations.as_slice()).unwrap_or_default() {
            let Some(expected) = &o.expected else {
                continue;
            };
            seen.push((o.node.clone(), o.signal.clone()));
            // `matches_expected`: a death counts where the step expects one (result.rs).
            let outcome = if o.matches_expected() {
                Outcome::Pass
            } else if o.observed == Observed::Unknown {
                Outcome::Undecided
            } else {
                Outcome::Fail
            };
            out.push(Case {
                step: index,
                step_name: step_name.clone(),
                node: o.node.clone(),
                signal: o.signal.clone(),
                expected: expected.clone(),
                bug: o.bug.clone(),
                obs: Some(o),
                outcome,
            });
        }
        let Some(p) = planned else { continue };
        for (node, sigs) in &p.expect {
            for (signal, expected) in sigs {
                if seen.iter().any(|(n, s)| n == node && s == signal) {
                    continue;
                }
                let expected = Expected::from(expected.clone());
                let bug = p
                    .bug
                    .get(node)
                    .and_then(|b| b.get(signal))
                    .map(|b| Expected::from(b.clone()))
                    .or_else(|| Some(expected.clone()));
                out.push(Case {
                    step: index,
                    step_name: step_name.clone(),
                    node: node.clone(),
                    signal: signal.clone(),
                    expected: expected.clone(),
                    bug,
                    obs: None,
                    outcome: Outcome::NotRun,
                });
            }
        }
    }
    out
}

/// Counts by outcome: (pass, fail, undecided, not run).
pub(crate) fn tally(cases: &[Case<'_>]) -> (usize, usize, usize, usize) {
    let n = |o: Outcome| cases.iter().filter(|c| c.outcome == o).count();
    (
        n(Outcome::Pass),
        n(Outcome::Fail),
        n(Outcome::Undecided),
        n(Outcome::NotRun),
    )
}
