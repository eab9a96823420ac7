//! A campaign's slots (`--jobs N`): N runs at once, each holding a numbered slot while it runs.
//! The number is what a run of the slot keeps between runs (its own cluster names come from
//! the run id; a kept per-slot baseline, `--restore`, would be keyed by it), so two runs never
//! hold one slot together, and a freed slot goes to the run that waited longest.
//!
//! Each run launched also holds a [`Claim`] until its task ends, whether it runs or still waits
//! for a slot: slots nobody holds or waits for are [`Slots::idle`], which is when the campaign
//! starts the next sequences ahead (#39: a slot never idles while a defect is minimised), and
//! never otherwise, so a ddmin candidate or confirmation that waits is not overtaken.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

/// The slots of one campaign: sequences, ddmin candidates and confirmations all draw from them,
/// so the campaign never has more than N runs on the engine.
#[derive(Clone)]
pub(crate) struct Slots {
    sem: Arc<Semaphore>,
    free: Arc<Mutex<Vec<usize>>>,
    count: usize,
    /// Runs launched whose task has not ended (running or waiting for a slot).
    claimed: Arc<AtomicUsize>,
    /// Told whenever a claimed run's task ends.
    ended: Arc<Notify>,
}

/// A launched run's claim on the campaign's slots, from its launch to the end of its task
/// (dropped there, or when the task is aborted).
pub(crate) struct Claim {
    claimed: Arc<AtomicUsize>,
    ended: Arc<Notify>,
    /// Set when this claim ends, before it is told: its task's output is then on its way, and
    /// the slot it freed is its caller's (not a sequence ahead's).
    pub(crate) done: Arc<AtomicBool>,
}

impl Drop for Claim {
    fn drop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
        self.claimed.fetch_sub(1, Ordering::SeqCst);
        // Stored when nobody waits: the campaign sees it at its next wait.
        self.ended.notify_one();
    }
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
            claimed: Arc::new(AtomicUsize::new(0)),
            ended: Arc::new(Notify::new()),
        }
    }

    /// A claim for a run being launched: held by its task until it ends.
    pub(crate) fn claim(&self) -> Claim {
        self.claimed.fetch_add(1, Ordering::SeqCst);
        Claim {
            claimed: self.claimed.clone(),
            ended: self.ended.clone(),
            done: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Slots no launched run holds or waits for: a run launched now starts at once.
    pub(crate) fn idle(&self) -> usize {
        self.count
            .saturating_sub(self.claimed.load(Ordering::SeqCst))
    }

    /// Returns once a claimed run's task has ended (at once if one ended since the last call).
    pub(crate) async fn ended(&self) {
        self.ended.notified().await;
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

    #[tokio::test]
    async fn a_claim_waiting_for_a_slot_leaves_none_idle_and_its_end_is_told() {
        let s = Slots::new(2);
        assert_eq!(s.idle(), 2);
        let (a, b) = (s.claim(), s.claim());
        // Claimed (running, or still waiting for a slot): nothing idle for a sequence ahead.
        assert_eq!(s.idle(), 0);
        let done = a.done.clone();
        drop(a);
        assert!(done.load(Ordering::SeqCst));
        assert_eq!(s.idle(), 1);
        tokio::time::timeout(std::time::Duration::from_secs(5), s.ended())
            .await
            .expect("the end of a claim is told");
        drop(b);
        assert_eq!(s.idle(), 2);
    }
}
