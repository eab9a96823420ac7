//! Delta debugging (Zeller & Hildebrandt, TSE 2002) as a state machine: it proposes candidate
//! subsequences, the caller runs each (a fresh cluster) and reports whether the failure showed,
//! and it ends with a 1-minimal sequence. Pure, so it is tested without an engine.

#[derive(Debug, Clone)]
pub(crate) struct Ddmin<T: Clone> {
    current: Vec<T>,
    n: usize,
    /// The candidates of the current granularity, in the order they are tried, and the next.
    queue: Vec<Vec<T>>,
    next: usize,
    /// How many of `queue` are subsets (the rest are complements).
    subsets: usize,
    done: bool,
}

impl<T: Clone> Ddmin<T> {
    pub(crate) fn new(steps: Vec<T>) -> Ddmin<T> {
        let mut d = Ddmin {
            done: steps.len() < 2,
            current: steps,
            n: 2,
            queue: Vec::new(),
            next: 0,
            subsets: 0,
        };
        d.fill();
        d
    }

    /// Subsets first, then complements (ddmin's order), none empty nor the whole.
    fn fill(&mut self) {
        let len = self.current.len();
        self.queue.clear();
        self.next = 0;
        if len < 2 {
            self.done = true;
            return;
        }
        let size = len.div_ceil(self.n);
        let chunks: Vec<Vec<T>> = self.current.chunks(size).map(<[T]>::to_vec).collect();
        for c in &chunks {
            self.queue.push(c.clone());
        }
        self.subsets = chunks.len();
        if chunks.len() > 2 {
            for i in 0..chunks.len() {
                let complement: Vec<T> = chunks
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .flat_map(|(_, c)| c.clone())
                    .collect();
                self.queue.push(complement);
            }
        }
        self.queue.retain(|c| !c.is_empty() && c.len() < len);
    }

    /// The next candidate to run, or `None` when the sequence is 1-minimal.
    pub(crate) fn candidate(&self) -> Option<&[T]> {
        (!self.done)
            .then(|| self.queue.get(self.next).map(Vec::as_slice))
            .flatten()
    }

    /// The candidates still to try at this granularity, in ddmin's order, if none of them shows
    /// the failure: the first is [`Ddmin::candidate`]. `--jobs` runs several at once and reports
    /// them in this order up to the first that shows it, which is what serial ddmin decides.
    pub(crate) fn pending(&self) -> impl Iterator<Item = Vec<T>> + '_ {
        let rest = if self.done {
            &[][..]
        } else {
            self.queue.get(self.next..).unwrap_or_default()
        };
        rest.iter().cloned()
    }

    /// Whether the last candidate showed the failure.
    pub(crate) fn report(&mut self, failed: bool) {
        if self.done {
            return;
        }
        if failed {
            let c = self.queue[self.next].clone();
            // A subset: start over at granularity 2; a complement: one chunk fewer.
            self.n = if self.next < self.subsets {
                2
            } else {
                2.max(self.n - 1)
            };
            self.current = c;
            self.fill();
            return;
        }
        self.next += 1;
        if self.next >= self.queue.len() {
            if self.n >= self.current.len() {
                self.done = true;
                return;
            }
            self.n = (self.n * 2).min(self.current.len());
            self.fill();
        }
    }

    pub(crate) fn result(&self) -> &[T] {
        &self.current
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs ddmin with a predicate, counting the runs.
    fn minimise(steps: Vec<u32>, fails: impl Fn(&[u32]) -> bool) -> (Vec<u32>, usize) {
        let mut d = Ddmin::new(steps);
        let mut runs = 0;
        while let Some(c) = d.candidate().map(<[u32]>::to_vec) {
            runs += 1;
            d.report(fails(&c));
        }
        (d.result().to_vec(), runs)
    }

    #[test]
    fn one_step_that_matters_is_found() {
        let (r, runs) = minimise((1..=8).collect(), |c| c.contains(&5));
        assert_eq!(r, vec![5]);
        assert!(runs <= 8, "{runs}");
    }

    #[test]
    fn two_steps_that_matter_together_stay_in_order() {
        let (r, _) = minimise((1..=8).collect(), |c| c.contains(&2) && c.contains(&7));
        assert_eq!(r, vec![2, 7]);
    }

    #[test]
    fn an_order_dependent_failure_keeps_its_order() {
        // fails when 3 comes before 6 (both present, the sequence keeps the original order)
        let (r, _) = minimise(vec![6, 1, 3, 4, 6], |c| {
            let a = c.iter().position(|x| *x == 3);
            let b = c.iter().rposition(|x| *x == 6);
            matches!((a, b), (Some(a), Some(b)) if a < b)
        });
        assert_eq!(r, vec![3, 6]);
    }

    /// ddmin run `jobs` candidates at a time, each round's outcomes reported in order up to
    /// the first hit (the rest discarded), as the campaign does under `--jobs`.
    fn minimise_parallel(
        steps: Vec<u32>,
        jobs: usize,
        fails: impl Fn(&[u32]) -> bool,
    ) -> (Vec<u32>, usize) {
        let mut d = Ddmin::new(steps);
        let mut used = 0;
        loop {
            let batch: Vec<Vec<u32>> = d.pending().take(jobs).collect();
            if batch.is_empty() {
                return (d.result().to_vec(), used);
            }
            for c in batch {
                used += 1;
                let hit = fails(&c);
                d.report(hit);
                if hit {
                    break;
                }
            }
        }
    }

    /// Whatever `--jobs`, ddmin ends where serial ddmin does, with the runs serial ddmin makes.
    #[test]
    fn candidates_at_once_end_where_serial_ddmin_does() {
        type Fails = Box<dyn Fn(&[u32]) -> bool>;
        let cases: Vec<(Vec<u32>, Fails)> = vec![
            ((1..=8).collect(), Box::new(|c: &[u32]| c.contains(&5))),
            (
                (1..=8).collect(),
                Box::new(|c: &[u32]| c.contains(&2) && c.contains(&7)),
            ),
            (
                (1..=13).collect(),
                Box::new(|c: &[u32]| c.contains(&3) && c.contains(&11) && c.contains(&12)),
            ),
            (vec![9], Box::new(|_: &[u32]| true)),
        ];
        for (steps, fails) in &cases {
            let serial = minimise(steps.clone(), fails);
            for jobs in [1, 2, 3, 8] {
                assert_eq!(
                    minimise_parallel(steps.clone(), jobs, fails),
                    serial,
                    "--jobs {jobs} on {steps:?}"
                );
            }
        }
    }

    #[test]
    fn a_single_step_needs_no_run() {
        let (r, runs) = minimise(vec![9], |_| true);
        assert_eq!((r, runs), (vec![9], 0));
    }
}
