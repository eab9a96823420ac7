//! Interrupts during a run: Ctrl-C (SIGINT), SIGTERM and SIGHUP (the terminal closed) are all
//! the same request — stop, remove what the run created, exit 130.

use std::collections::BTreeSet;
use std::sync::{Mutex, OnceLock};

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

/// The process's one listener (#42): installed once, by the first command or run that asks
/// ([`listen_process`]), and never dropped — so a signal between two runs of `explore`,
/// `verify`, `bisect` or `matrix` is heard as well as one during a run. The first signal cancels
/// [`Process::token`] (each live run hears it through its handler and cleans up; the commands
/// start no run once it is cancelled and exit 130); a second one exits at once.
struct Process {
    token: CancellationToken,
    first: OnceLock<&'static str>,
    /// The live runs, for the second signal's "remove leftovers" line.
    runs: Mutex<BTreeSet<String>>,
}

static PROCESS: OnceLock<Process> = OnceLock::new();

/// Starts the process's listener if it is not listening yet (needs the runtime), and returns
/// the token its first signal cancels. Call it before anything is created: a signal from then
/// on is never lost.
pub(crate) fn listen_process() -> CancellationToken {
    let mut fresh = false;
    let p = PROCESS.get_or_init(|| {
        fresh = true;
        Process {
            token: CancellationToken::new(),
            first: OnceLock::new(),
            runs: Mutex::new(BTreeSet::new()),
        }
    });
    if fresh {
        // Registered now, before returning: a signal sent from here on is queued for it.
        let mut signals = Interrupts::listen();
        tokio::spawn(async move {
            let first = signals.next().await;
            let _ = p.first.set(first);
            p.token.cancel();
            let second = signals.next().await;
            let runs: Vec<String> = p
                .runs
                .lock()
                .map(|r| r.iter().cloned().collect())
                .unwrap_or_default();
            exit_now(second, &runs);
        });
    }
    p.token.clone()
}

/// The first signal the process received (SIGINT, SIGTERM or SIGHUP), if one came: a command
/// of several runs asks before each run and after it, and stops (exit 130).
pub(crate) fn interrupted() -> Option<&'static str> {
    PROCESS.get().and_then(|p| p.first.get().copied())
}

/// Removes a run from the live ones when its handler ends (the run is over, or aborted).
struct Live(String);

impl Drop for Live {
    fn drop(&mut self) {
        if let Some(p) = PROCESS.get() {
            if let Ok(mut r) = p.runs.lock() {
                r.remove(&self.0);
            }
        }
    }
}

/// A run's handler: once the process's listener hears a signal (or has heard one already),
/// say so and cancel the run, so it cleans up and exits 130. A second signal exits at once
/// (the listener, through `exit::now`), because the user asked not to wait for the cleanup.
/// Aborted when the run ends.
pub(crate) fn spawn_handler(
    cancel: CancellationToken,
    run_id: String,
    events: Events,
) -> tokio::task::JoinHandle<()> {
    let token = listen_process();
    if let Some(p) = PROCESS.get() {
        if let Ok(mut r) = p.runs.lock() {
            r.insert(run_id.clone());
        }
    }
    let live = Live(run_id);
    tokio::spawn(async move {
        let _live = live;
        token.cancelled().await;
        let first = interrupted().unwrap_or("SIGINT");
        events.show(&RunEvent::Note(format!(
            "repro: interrupted ({first}) — removing the cluster (press Ctrl-C again to exit at once)"
        )));
        cancel.cancel();
        std::future::pending::<()>().await;
    })
}

/// A second interrupt: leave at once, saying how to remove what is left (`run_ids`: the live
/// runs; none between runs).
pub(crate) fn exit_now(signal: &str, run_ids: &[String]) -> ! {
    if run_ids.is_empty() {
        errln!("repro: {signal} again: exiting at once");
    } else {
        let how: Vec<String> = run_ids
            .iter()
            .map(|id| format!("`repro clean --run {id}`"))
            .collect();
        errln!(
            "repro: {signal} again: exiting without cleanup; remove leftovers with {}",
            how.join(", ")
        );
    }
    exit::now(Exit::Interrupted.code());
}
