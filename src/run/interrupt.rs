//! Interrupts during a run: Ctrl-C (SIGINT), SIGTERM and SIGHUP (the terminal closed) are all
//! the same request — stop, remove what the run created, exit 130.

use tokio::signal::unix::{signal, SignalKind};
use tokio_util::sync::CancellationToken;

use crate::exit::{self, Exit};

use super::emit::Events;
use super::event::RunEvent;

/// The signals that interrupt a run, as a stream of their names. A signal the process cannot
/// listen to (never on Linux) is left at its default.
pub(crate) struct Interrupts {
    int: Option<tokio::signal::unix::Signal>,
    term: Option<tokio::signal::unix::Signal>,
    hup: Option<tokio::signal::unix::Signal>,
}

impl Interrupts {
    pub(crate) fn listen() -> Interrupts {
        Interrupts {
            int: signal(SignalKind::interrupt()).ok(),
            term: signal(SignalKind::terminate()).ok(),
            hup: signal(SignalKind::hangup()).ok(),
        }
    }

    /// The next interrupt's name (SIGINT, SIGTERM or SIGHUP).
    pub(crate) async fn next(&mut self) -> &'static str {
        async fn recv(s: &mut Option<tokio::signal::unix::Signal>) {
            match s {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        tokio::select! {
            _ = recv(&mut self.int) => "SIGINT",
            _ = recv(&mut self.term) => "SIGTERM",
            _ = recv(&mut self.hup) => "SIGHUP",
        }
    }
}

/// Once: cancel, so the run cleans up and exits 130. Twice (any of the three): exit 130 at
/// once — the one exit outside `main` (through `exit::now`), because the user asked not to wait
/// for the cleanup.
pub(crate) fn spawn_handler(
    cancel: CancellationToken,
    run_id: String,
    events: Events,
) -> tokio::task::JoinHandle<()> {
    let mut signals = Interrupts::listen();
    tokio::spawn(async move {
        let first = signals.next().await;
        events.show(&RunEvent::Note(format!(
            "repro: interrupted ({first}) — removing the cluster (press Ctrl-C again to exit at once)"
        )));
        cancel.cancel();
        let second = signals.next().await;
        exit_now(second, &run_id);
    })
}

/// A second interrupt: leave at once, saying how to remove what is left.
pub(crate) fn exit_now(signal: &str, run_id: &str) -> ! {
    errln!(
        "repro: {signal} again: exiting without cleanup; remove leftovers with `repro clean --run {run_id}`"
    );
    exit::now(Exit::Interrupted.code());
}
