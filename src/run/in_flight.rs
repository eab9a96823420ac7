//! The engine calls of a run that change what a network or volume holds (creates, container
//! starts), each run as a task of its own that the teardown waits for before it removes
//! anything. A request already sent lands in the engine even if the run's steps are aborted
//! (Ctrl-C, the first failure of a start-up dropping the others): removal by label must come
//! after it landed. A container removed while its start — which attaches it to the run's
//! network — may still be in flight is the order that can leave a network with an endpoint no
//! container owns (#30 item 7); k3s-sized topologies also leaked objects created behind the
//! cleanup.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio_util::task::TaskTracker;

use super::error::RunError;

/// The calls in flight, and whether the teardown began (no new call starts then).
#[derive(Default)]
pub(crate) struct InFlight {
    tasks: TaskTracker,
    closing: AtomicBool,
}

impl InFlight {
    /// Runs `f` as a task the teardown waits for; refused once the teardown began.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        f: impl std::future::Future<Output = Result<T, RunError>> + Send + 'static,
    ) -> Result<T, RunError> {
        if self.closing() {
            return Err(RunError::Interrupted);
        }
        match self.tasks.spawn(f).await {
            Ok(r) => r,
            Err(e) => Err(RunError::Internal(format!("an engine call failed: {e}"))),
        }
    }

    /// Whether the teardown began: a call about to be issued gives up.
    pub(crate) fn closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    /// Begins the teardown: no new call starts, and the ones in flight are waited for up to
    /// `limit`. The problem, if some were still running then.
    pub(crate) async fn drain(&self, limit: Duration) -> Option<String> {
        self.closing.store(true, Ordering::SeqCst);
        self.tasks.close();
        match tokio::time::timeout(limit, self.tasks.wait()).await {
            Ok(()) => None,
            Err(_) => Some(format!(
                "{} engine call(s) (create or start) still running after {}s",
                self.tasks.len(),
                limit.as_secs()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A call whose caller was dropped (the steps aborted) still finishes before the drain
    /// returns, and nothing starts after it began.
    #[tokio::test]
    async fn the_drain_waits_for_a_call_whose_caller_was_dropped_and_refuses_new_ones() {
        let calls = Arc::new(InFlight::default());
        let (release, wait) = tokio::sync::oneshot::channel::<()>();
        let (began, started) = tokio::sync::oneshot::channel::<()>();
        let landed = Arc::new(AtomicBool::new(false));
        let l = landed.clone();
        let c = calls.clone();
        let caller = tokio::spawn(async move {
            c.run(async move {
                let _ = began.send(());
                let _ = wait.await;
                l.store(true, Ordering::SeqCst);
                Ok(())
            })
            .await
        });
        started.await.expect("the call began");
        caller.abort();
        let drained = {
            let calls = calls.clone();
            tokio::spawn(async move { calls.drain(Duration::from_secs(10)).await })
        };
        tokio::task::yield_now().await;
        assert!(
            !drained.is_finished(),
            "the drain returned before the call landed"
        );
        release.send(()).expect("the call is waiting");
        assert_eq!(drained.await.expect("drain"), None);
        assert!(landed.load(Ordering::SeqCst));
        assert!(matches!(
            calls.run(async { Ok(()) }).await,
            Err(RunError::Interrupted)
        ));
    }
}
