//! The verdict, from observations alone (pure).
//!
//! `fixed`: every expectation holds. `reproduced`: every observation matches the bug world
//! (`expect` with the `bug` entries replacing theirs) and the check has a bug signature.
//! Anything else is `inconclusive`, with each observation that matched neither listed.
//! Zero evaluated expectations is never success.

use crate::result::{Observation, Observed, Outcome, Verdict};
use crate::scenario::{Expectations, Expected};

/// Whether a world of a step (`expect`, or the bug world) expects `node` to die in it: it asks
/// the node's `ready` to be `down`. Only there may a death stand for a signal's `on-death`
/// value; anywhere else it is a death, and the run cannot be judged from it.
pub(crate) fn death_expected(world: &Expectations, node: &str) -> bool {
    world
        .get(node)
        .and_then(|sigs| sigs.get("ready"))
        .is_some_and(|e| *e == Expected::Down)
}

pub(crate) fn decide(
    observations: &[Observation],
    has_bug_signature: bool,
    notes: &[String],
) -> Verdict {
    let judged: Vec<&Observation> = observations
        .iter()
        .filter(|o| o.expected.is_some())
        .collect();
    let matched_expected = judged.iter().filter(|o| o.matches_expected()).count();
    let matched_bug = judged.iter().filter(|o| o.matches_bug()).count();
    let n = judged.len();
    let differences: Vec<String> = judged
        .iter()
        .filter(|o| !o.matches_expected() && !o.matches_bug())
        .map(|o| {
            format!(
                "{} {}: observed {}, expected {}{}{}",
                o.node,
                o.signal,
                o.observed,
                o.expected.as_ref().map_or("-", |e| e.as_str()),
                match &o.bug {
                    Some(b) if Some(b) != o.expected.as_ref() => format!(" (bug: {b})"),
                    _ => String::new(),
                },
                death_words(o)
            )
        })
        .collect();
    let deaths: Vec<&&Observation> = judged
        .iter()
        .filter(|o| o.observed == Observed::Dead && !o.matches_expected() && !o.matches_bug())
        .collect();
    let (outcome, reason) = if n == 0 {
        (
            Outcome::Inconclusive,
            "no expectation was evaluated".to_string(),
        )
    } else if matched_expected == n {
        (Outcome::Fixed, format!("all {n} expectations hold"))
    } else if has_bug_signature && matched_bug == n {
        (
            Outcome::Reproduced,
            format!("all {n} observations match the documented bug signature"),
        )
    } else {
        let mut r = format!(
            "{} of {n} observations match neither the correct behaviour nor the bug signature",
            n - judged
                .iter()
                .filter(|o| o.matches_expected() || o.matches_bug())
                .count()
        );
        if matched_expected != n && matched_bug != n && differences.is_empty() {
            r = format!("observations mix the correct behaviour ({matched_expected}/{n}) and the bug ({matched_bug}/{n})");
        }
        if !deaths.is_empty() {
            let mut nodes: Vec<&str> = deaths.iter().map(|o| o.node.as_str()).collect();
            nodes.dedup();
            r.push_str(&format!(
                "; {} died where the check expects no death, so the run cannot say whether the bug is there",
                nodes.join(", ")
            ));
        }
        for note in notes {
            r.push_str("; ");
            r.push_str(note);
        }
        (Outcome::Inconclusive, r)
    };
    Verdict {
        outcome,
        reason,
        differences,
        expectations: n,
        matched_expected,
        matched_bug,
    }
}

/// ` — the node died (exit 137; last line …)`: the evidence of an unexpected death.
fn death_words(o: &Observation) -> String {
    if o.observed != Observed::Dead {
        return String::new();
    }
    let ev: Vec<&str> = o.evidence.iter().map(|e| e.text.as_str()).collect();
    format!(" — the node died in boot {}: {}", o.boot, ev.join(" / "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(expected: &str, bug: &str, observed: &str) -> Observation {
        Observation {
            node: "etcd-2".into(),
            signal: "embedded-registry".into(),
            expected: Some(expected.into()),
            bug: Some(bug.into()),
            observed: observed.into(),
            asked: None,
            boot: 2,
            evidence: vec![],
            reason: String::new(),
            rule: Default::default(),
            settle_ms: None,
            decided_at: None,
            death: None,
        }
    }

    #[test]
    fn all_expected_is_fixed() {
        let v = decide(&[obs("up", "down", "up"), obs("up", "up", "up")], true, &[]);
        assert_eq!(v.outcome, Outcome::Fixed);
    }

    #[test]
    fn bug_world_is_reproduced() {
        let v = decide(
            &[obs("up", "down", "down"), obs("up", "up", "up")],
            true,
            &[],
        );
        assert_eq!(v.outcome, Outcome::Reproduced);
    }

    #[test]
    fn unknown_or_mixed_is_inconclusive() {
        let v = decide(&[obs("up", "down", "unknown")], true, &[]);
        assert_eq!(v.outcome, Outcome::Inconclusive);
        assert_eq!(v.differences.len(), 1);
        let mixed = decide(
            &[obs("up", "down", "down"), obs("down", "up", "down")],
            true,
            &[],
        );
        assert_eq!(mixed.outcome, Outcome::Inconclusive);
    }

    #[test]
    fn bug_any_is_not_judged_for_reproduced_but_still_for_fixed() {
        // The bug world cannot tell here: either observation still reproduces.
        for seen in ["up", "down"] {
            let v = decide(
                &[obs("up", "down", "down"), obs("up", "any", seen)],
                true,
                &[],
            );
            assert_eq!(v.outcome, Outcome::Reproduced, "{seen}");
        }
        // A fixed k3s is judged on it as on everything else.
        let v = decide(
            &[obs("up", "down", "up"), obs("up", "any", "down")],
            true,
            &[],
        );
        assert_eq!(v.outcome, Outcome::Inconclusive);
    }

    /// A death: `counts_as` is the signal's on-death; `expected`/`bug`: whether that world of
    /// the step asks the node's ready to be down.
    fn dead(
        expected: &str,
        bug: &str,
        counts_as: &str,
        in_expect: bool,
        in_bug: bool,
    ) -> Observation {
        Observation {
            evidence: vec![crate::result::Evidence {
                source: crate::result::EvidenceSource::Docker,
                boot: 2,
                time: None,
                text: "container exited on its own with code 137".into(),
            }],
            death: Some(crate::result::Death {
                counts_as: Some(counts_as.into()),
                expected: in_expect,
                bug: in_bug,
            }),
            ..obs(expected, bug, "dead")
        }
    }

    /// Each row: (expected, bug, on-death, death expected in expect / bug world) → outcome.
    #[test]
    fn a_death_counts_only_where_the_step_expects_one() {
        use Outcome::*;
        let rows = [
            // a crash after ready where the bug says `down`: never "reproduced"
            ("up", "down", "down", false, false, Inconclusive),
            // nor "fixed" where the fix says `down`
            ("down", "up", "down", false, false, Inconclusive),
            // the bug world expects the node to die (it asks ready: down): the death is its down
            ("up", "down", "down", false, true, Reproduced),
            // the correct behaviour is the node dying (bootstrap-check's joiner)
            ("down", "up", "down", true, false, Fixed),
            // expected to die, but on-death gives another value than asked
            ("up", "up", "down", true, true, Inconclusive),
            // `bug: any` is either value, never a death
            ("up", "any", "down", false, false, Inconclusive),
        ];
        for (exp, bug, counts, in_e, in_b, want) in rows {
            let v = decide(&[dead(exp, bug, counts, in_e, in_b)], true, &[]);
            assert_eq!(
                v.outcome, want,
                "{exp}/{bug} on-death {counts} {in_e}/{in_b}"
            );
            if want == Inconclusive {
                assert!(
                    v.reason
                        .contains("etcd-2 died where the check expects no death"),
                    "{}",
                    v.reason
                );
                assert!(
                    v.differences[0].contains("observed dead"),
                    "{:?}",
                    v.differences
                );
                assert!(
                    v.differences[0].contains("code 137"),
                    "the evidence: {:?}",
                    v.differences
                );
            }
        }
    }

    #[test]
    fn a_world_expects_a_death_where_it_asks_ready_down() {
        let mut w = Expectations::new();
        w.entry("etcd-3".into())
            .or_default()
            .insert("ready".into(), Expected::Down);
        w.entry("etcd-2".into())
            .or_default()
            .insert("ready".into(), Expected::Up);
        w.entry("etcd-1".into())
            .or_default()
            .insert("embedded-registry".into(), Expected::Down);
        assert!(death_expected(&w, "etcd-3"));
        assert!(!death_expected(&w, "etcd-2"));
        assert!(
            !death_expected(&w, "etcd-1"),
            "a feature down is not a death"
        );
        assert!(!death_expected(&w, "cp-1"));
    }

    #[test]
    fn nothing_evaluated_is_never_success() {
        assert_eq!(decide(&[], true, &[]).outcome, Outcome::Inconclusive);
    }

    #[test]
    fn no_signature_never_reproduces() {
        let v = decide(&[obs("up", "up", "down")], false, &[]);
        assert_eq!(v.outcome, Outcome::Inconclusive);
    }
}
