//! The search of `repro bisect`, without Docker: whether the endpoints can be searched between,
//! which release to run next, and the answer.
//!
//! The releases of one line, oldest first, are positions `0..n`. The endpoints are the user's
//! `--good` and `--bad`. The rule (documented in docs/nightly.md):
//!
//! - the `--bad` endpoint is run first, to learn the verdict that counts as "bad" (it must be
//!   `fixed` or `reproduced`); the `--good` endpoint is trusted, not run, to show the other one;
//! - then a plain binary search over the positions strictly between them: each probe is on the
//!   old side (same verdict as the older endpoint) or the new side;
//! - an inconclusive probe is neither: the search stops there and says so (never guessed).
//!
//! The search needs at most ⌈log2(n−1)⌉ probes, so with the endpoint run at most
//! ⌈log2(n−1)⌉ + 1 ≤ ⌈log2 n⌉ + 1 runs in all — the limit issue #6 sets.

/// Which side of the change a probed release is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// Same verdict as the older endpoint.
    Old,
    /// Same verdict as the newer endpoint.
    New,
}

/// Binary search state over positions `0..n`: `lo` is known (or trusted) Old, `hi` New.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Bisection {
    pub(crate) lo: usize,
    pub(crate) hi: usize,
    pub(crate) probes: usize,
}

impl Bisection {
    /// A search over `n ≥ 2` positions whose endpoints differ.
    pub(crate) fn new(n: usize) -> Bisection {
        Bisection {
            lo: 0,
            hi: n.saturating_sub(1).max(1),
            probes: 0,
        }
    }

    /// The next position to run, or None when the change is pinned (`hi` is the answer).
    pub(crate) fn next(&self) -> Option<usize> {
        (self.hi - self.lo > 1).then(|| self.lo + (self.hi - self.lo) / 2)
    }

    /// Records the side of the position `next()` gave.
    pub(crate) fn record(&mut self, at: usize, side: Side) {
        self.probes += 1;
        match side {
            Side::Old => self.lo = at,
            Side::New => self.hi = at,
        }
    }

    /// The first position on the new side, once `next()` is None.
    pub(crate) fn answer(&self) -> Option<usize> {
        self.next().is_none().then_some(self.hi)
    }
}

/// ⌈log2 n⌉ + 1: the most runs a bisection over `n` releases may take (issue #6).
pub(crate) fn run_limit(n: usize) -> usize {
    ceil_log2(n) + 1
}

pub(crate) fn ceil_log2(n: usize) -> usize {
    let mut bits = 0;
    while (1usize << bits) < n {
        bits += 1;
    }
    bits
}

/// Refuses endpoints the search cannot take: a release the list lacks (with the releases of its
/// line it has), two releases of different lines (k3s backports fixes line by line, so they are
/// not one history), or one release twice.
pub(crate) fn check_endpoints(
    list: &crate::releases::ReleaseList,
    good: &distro::Version,
    bad: &distro::Version,
) -> Result<(), crate::error::Error> {
    use crate::diag::Diagnostic;
    for (flag, v) in [("--good", good), ("--bad", bad)] {
        if !list.contains(v) {
            let line: Vec<String> = list.line_of(v).iter().map(ToString::to_string).collect();
            return Err(Diagnostic::general(
                format!(
                    "{flag} {v} is not in the release list {}",
                    list.path.display()
                ),
                if line.is_empty() {
                    format!(
                        "the list has no {}.{} release; add the line there or pass --versions FILE",
                        v.major, v.minor
                    )
                } else {
                    format!(
                        "releases of {}.{} listed: {} (add it there or pass --versions FILE)",
                        v.major,
                        v.minor,
                        line.join(", ")
                    )
                },
            )
            .into());
        }
    }
    if good.line() != bad.line() {
        return Err(Diagnostic::general(
            format!("--good {good} and --bad {bad} are in different release lines"),
            "bisect inside one line: k3s backports fixes line by line, so releases of different lines are not one history",
        )
        .into());
    }
    if good == bad {
        return Err(Diagnostic::general(
            format!("--good and --bad are both {good}"),
            "give two different releases of one line",
        )
        .into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a whole bisection against a fake oracle: positions below `change` are Old. Returns
    /// the answer and the runs made (the endpoint run counts as one).
    fn bisect(n: usize, change: usize) -> (usize, usize) {
        let mut calls = 1; // the --bad endpoint
        let mut b = Bisection::new(n);
        while let Some(at) = b.next() {
            assert!(
                at > 0 && at < n - 1,
                "never probes an endpoint: {at} of {n}"
            );
            calls += 1;
            b.record(at, if at < change { Side::Old } else { Side::New });
        }
        assert_eq!(b.probes + 1, calls);
        (b.answer().expect("pinned"), calls)
    }

    #[test]
    fn log2() {
        assert_eq!(ceil_log2(1), 0);
        assert_eq!(ceil_log2(2), 1);
        assert_eq!(ceil_log2(7), 3);
        assert_eq!(ceil_log2(8), 3);
        assert_eq!(ceil_log2(9), 4);
        assert_eq!(run_limit(7), 4);
    }

    #[test]
    fn finds_every_change_point_within_the_run_limit() {
        for n in 2..=300 {
            for change in 1..n {
                let (answer, runs) = bisect(n, change);
                assert_eq!(answer, change, "n={n} change={change}");
                assert!(
                    runs <= run_limit(n),
                    "n={n} change={change}: {runs} runs > {}",
                    run_limit(n)
                );
            }
        }
    }

    #[test]
    fn the_acceptance_case() {
        // v1.33.0 … v1.33.6: first fixed v1.33.5 (position 5), at most 4 runs.
        let (answer, runs) = bisect(7, 5);
        assert_eq!(answer, 5);
        assert!(runs <= 4);
    }

    #[test]
    fn a_commit_list_is_searched_with_none_differing_as_one_more_answer() {
        // `bisect --commits`: the first of n commits is run, then positions 0..=n are searched,
        // n meaning "none differs" (never run): still at most ⌈log2 n⌉ + 1 runs.
        for n in 2..=300 {
            for change in 1..=n {
                let mut runs = 1;
                let mut b = Bisection::new(n + 1);
                while let Some(at) = b.next() {
                    assert!(at > 0 && at < n, "runs a listed commit: {at} of {n}");
                    runs += 1;
                    b.record(at, if at < change { Side::Old } else { Side::New });
                }
                assert_eq!(b.answer(), Some(change), "n={n} change={change}");
                assert!(runs <= run_limit(n), "n={n} change={change}: {runs} runs");
            }
        }
    }

    #[test]
    fn two_releases_need_only_the_endpoint_run() {
        let b = Bisection::new(2);
        assert_eq!(b.next(), None);
        assert_eq!(b.answer(), Some(1));
    }
}
