//! Ctrl-C (or SIGTERM) during a run.

use tokio_util::sync::CancellationToken;

use crate::exit;

use super::event::{Events, RunEvent};

/// Once: cancel, so the run cleans up and exits 130. Twice: exit 130 at once — the one exit
/// outside `main`, because the user asked not to wait for the cleanup.
pub fn spawn_handler(
    cancel: CancellationToken,
    run_id: String,
    events: Events,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        let first = async {
            match term.as_mut() {
                Some(t) => tokio::select! { _ = tokio::signal::ctrl_c() => {}, _ = t.recv() => {} },
                None => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        };
        first.await;
        events.show(&RunEvent::Note(
            "repro: interrupted — removing the cluster (press Ctrl-C again to exit at once)".into(),
        ));
        cancel.cancel();
        if tokio::signal::ctrl_c().await.is_ok() {
            errln!("repro: exiting without cleanup; remove leftovers with `repro clean --run {run_id}`");
            std::process::exit(exit::INTERRUPTED);
        }
    })
}
