//! A campaign's slots (`--jobs N`): N runs at once, each holding a numbered slot while it runs.
//! The number is what a run of the slot keeps between runs (its own cluster names come from
//! the run id; a kept per-slot baseline, `--restore`, would be keyed by it), so two runs never
//! hold one slot together, and a freed slot goes to the run that waited longest.

use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The slots of one campaign: sequences, ddmin candidates and confirmations all draw from them,
/// so the campaign never has more than N runs on the engine.
#[derive(Clone)]
pub(crate) struct Slots {
    sem: Arc<Semaphore>,
    free: Arc<Mutex<Vec<usize>>>,
    count: usize,
}

/// A slot held by one run; given back when dropped (the run ended, or its task was aborted).
pub(crate) struct Slot {
    pub(crate) index: usize,
    free: Arc<Mutex<Vec<usize>>>,
    _permit: OwnedSemaphorePermit,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Ok(mut f) = self.free.lock() {
            f.push(self.index);
        }
    }
}

impl Slots {
    /// `n` slots (at least one).
    pub(crate) fn new(n: usize) -> Slots {
        let n = n.max(1);
        Slots {
            sem: Arc::new(Semaphore::new(n)),
            // popped from the end: slot 0 first
            free: Arc::new(Mutex::new((0..n).rev().collect())),
            count: n,
        }
    }

    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// Runs on the engine now (slots held).
    pub(crate) fn busy(&self) -> usize {
        self.count - self.sem.available_permits()
    }

    /// Waits for a free slot (tokio's semaphore is fair: first asked, first served).
    pub(crate) async fn acquire(&self) -> Slot {
        let permit = (self.sem.clone().acquire_owned().await)
            .expect("the campaign's semaphore is never closed");
        let index = (self.free.lock().ok().and_then(|mut f| f.pop()))
            .expect("a permit always has a free slot number");
        Slot {
            index,
            free: self.free.clone(),
            _permit: permit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn slots_are_held_once_and_given_back() {
        let s = Slots::new(2);
        let a = s.acquire().await;
        let b = s.acquire().await;
        assert_eq!((a.index, b.index), (0, 1));
        assert_eq!(s.busy(), 2);
        // a third waits until one is given back, and gets that one's number
        let s2 = s.clone();
        let third = tokio::spawn(async move { s2.acquire().await.index });
        tokio::task::yield_now().await;
        assert!(!third.is_finished(), "no third slot while two are held");
        drop(b);
        assert_eq!(third.await.expect("joined"), 1);
        drop(a);
        assert_eq!(s.busy(), 0);
        assert_eq!(Slots::new(0).count(), 1, "never fewer than one");
    }
}
