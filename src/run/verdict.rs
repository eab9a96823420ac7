//! The verdict, from observations alone (pure).
//!
//! `fixed`: every expectation holds. `reproduced`: every observation matches the bug world
//! (`expect` with the `bug` entries replacing theirs) and the check has a bug signature.
//! Anything else is `inconclusive`, with each observation that matched neither listed.
//! Zero evaluated expectations is never success.

use crate::result::{Observation, Outcome, Verdict};

pub fn decide(observations: &[Observation], has_bug_signature: bool, notes: &[String]) -> Verdict {
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
                "{} {}: observed {}, expected {}{}",
                o.node,
                o.signal,
                o.observed,
                o.expected.as_deref().unwrap_or("-"),
                match &o.bug {
                    Some(b) if Some(b) != o.expected.as_ref() => format!(" (bug: {b})"),
                    _ => String::new(),
                }
            )
        })
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
