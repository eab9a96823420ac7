//! Exit codes. CI depends on them, so they live in one place and the README lists them.

/// The outcome is the one asked for (`--expect`, default `auto`: what `fixed-in` predicts).
pub const OK: i32 = 0;
/// A real difference: the run showed the other definite outcome (a regression, or an
/// unexpected fix).
pub const OUTCOME_DIFFERS: i32 = 1;
/// Bad input or usage: nothing was created.
pub const BAD_INPUT: i32 = 2;
/// Infrastructure: Docker unreachable, image missing, a node never ready in time, a results
/// folder that cannot be written.
pub const INFRA: i32 = 3;
/// The run worked, but the observations match neither behaviour (flaky or misconfigured):
/// not a finding about k3s.
pub const INCONCLUSIVE: i32 = 4;
/// Interrupted (SIGINT / Ctrl-C, SIGTERM, SIGHUP).
pub const INTERRUPTED: i32 = 130;

/// The exit code of many runs (`matrix`, `merge`): the worst of theirs, by priority
/// 130 > 3 > 1 > 4 > 0. An interrupt or a broken run means the set is incomplete, so it wins
/// over a finding; a real difference wins over an inconclusive run. Codes outside this list
/// (none should occur) count as infrastructure.
pub fn worst(codes: impl IntoIterator<Item = i32>) -> i32 {
    let rank = |c: i32| match c {
        INTERRUPTED => 5,
        OK => 0,
        INCONCLUSIVE => 1,
        OUTCOME_DIFFERS => 2,
        _ => 3,
    };
    let mut worst = OK;
    for c in codes {
        let c = match c {
            INTERRUPTED | OK | INCONCLUSIVE | OUTCOME_DIFFERS => c,
            _ => INFRA,
        };
        if rank(c) > rank(worst) {
            worst = c;
        }
    }
    worst
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_code_by_priority() {
        assert_eq!(worst([]), OK);
        assert_eq!(worst([OK, OK]), OK);
        assert_eq!(worst([OK, INCONCLUSIVE]), INCONCLUSIVE);
        assert_eq!(worst([INCONCLUSIVE, OUTCOME_DIFFERS, OK]), OUTCOME_DIFFERS);
        assert_eq!(worst([OUTCOME_DIFFERS, INFRA, INCONCLUSIVE]), INFRA);
        assert_eq!(worst([INFRA, INTERRUPTED, OUTCOME_DIFFERS]), INTERRUPTED);
        assert_eq!(worst([BAD_INPUT]), INFRA);
    }
}
