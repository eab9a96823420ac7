//! What the user sees while a run goes: on a terminal one live line per node (state, boot,
//! last event) under the current step; in CI or a pipe, plain timestamped lines on stderr.
//! A receiver of the run's events; `matrix` and `bisect` do not attach it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::run::{Phase, Receiver, RunEvent};

pub(crate) struct Progress {
    live: Option<Live>,
    /// How long a boot may take to be ready (`--timeout`), shown beside each boot's time.
    timeout: Duration,
    /// Each node's current boot, as its lines tell it.
    boots: Mutex<HashMap<String, BootTime>>,
    /// The cluster is being removed (the teardown phase began): the node lines' last word.
    removing: std::sync::atomic::AtomicBool,
}

/// A node's current boot: when it started and how long it took to be ready.
#[derive(Clone, Copy)]
struct BootTime {
    number: u32,
    started: Instant,
    ready_in: Option<Duration>,
    /// The last state shown (for the line a finished run leaves).
    state: &'static str,
}

struct Live {
    multi: MultiProgress,
    header: ProgressBar,
    nodes: HashMap<String, ProgressBar>,
}

impl Progress {
    /// Live lines (`live`) or plain ones, for these nodes, whose boots may take `timeout`.
    pub(crate) fn new(live: bool, nodes: &[String], timeout: Duration) -> Progress {
        let live = live.then(|| {
            let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
            let header = multi.add(ProgressBar::new_spinner());
            header.set_style(
                ProgressStyle::with_template("{spinner} {wide_msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            header.enable_steady_tick(std::time::Duration::from_millis(120));
            let width = nodes.iter().map(String::len).max().unwrap_or(6);
            let nodes = nodes
                .iter()
                .map(|n| {
                    let pb = multi.add(ProgressBar::new_spinner());
                    let tpl = format!("  {{prefix:{width}}} {{wide_msg}}");
                    pb.set_style(
                        ProgressStyle::with_template(&tpl)
                            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                    );
                    pb.set_prefix(clean(n));
                    pb.set_message("created");
                    (n.clone(), pb)
                })
                .collect();
            Live {
                multi,
                header,
                nodes,
            }
        });
        Progress {
            live,
            timeout,
            boots: Mutex::new(HashMap::new()),
            removing: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn plain(&self, who: &str, msg: &str) {
        let now = chrono::Utc::now().format("%H:%M:%S%.3f");
        errln!("{now} {who:<8} {msg}");
    }

    /// The current step (or phase) of the run.
    fn step(&self, text: &str) {
        match &self.live {
            Some(l) => {
                l.header.set_message(clean(text));
                let _ = l.multi.println(clean(&format!("== {text}")));
            }
            None => self.plain("==", text),
        }
    }

    /// A node's state changed: `state` is short (starting, ready, dead...), `event` the detail.
    fn node(&self, node: &str, state: &'static str, boot: u32, event: &str) {
        // Before its first start (created, pulling) a node has no boot to time.
        let timing = match boot {
            0 => String::new(),
            _ => self.timing(node, state, boot),
        };
        match self.live.as_ref().and_then(|l| l.nodes.get(node)) {
            Some(pb) => pb.set_message(clean(&format!(
                "{state:<9} boot {boot}  {timing}{}{}",
                if timing.is_empty() { "" } else { "  " },
                truncate(event, 100)
            ))),
            None => self.plain(
                node,
                &format!(
                    "boot {boot} {state}{}{timing}: {event}",
                    if timing.is_empty() { "" } else { " " }
                ),
            ),
        }
    }

    /// How long the node's boot has taken, with the timeout it is held to (#32 item 8):
    /// `(timeout 5m)` at its start, `in 14.2s (timeout 5m)` once ready (the first ready line
    /// counts), `after 3.1s` when it died.
    fn timing(&self, node: &str, state: &'static str, boot: u32) -> String {
        let now = Instant::now();
        let mut boots = self.boots.lock().unwrap_or_else(|p| p.into_inner());
        let b = boots.entry(node.to_string()).or_insert(BootTime {
            number: boot,
            started: now,
            ready_in: None,
            state,
        });
        if b.number != boot || (state == "starting" && b.state != "starting") {
            *b = BootTime {
                number: boot,
                started: now,
                ready_in: None,
                state,
            };
        }
        b.state = state;
        let timeout = humantime::format_duration(self.timeout);
        match state {
            "starting" => format!("(timeout {timeout})"),
            "ready" => {
                let took = *b.ready_in.get_or_insert(now - b.started);
                format!("in {} (timeout {timeout})", seconds(took))
            }
            "dead" => format!("after {}", seconds(now - b.started)),
            "timeout" => format!("after {timeout}"),
            _ => match b.ready_in {
                Some(took) => format!("(ready in {})", seconds(took)),
                None => format!("at {} (timeout {timeout})", seconds(now - b.started)),
            },
        }
    }

    /// The line a node keeps once the run is over: the cluster removed, or kept running.
    fn last_line(&self, node: &str) -> String {
        let removed = self.removing.load(std::sync::atomic::Ordering::SeqCst);
        let boots = self.boots.lock().unwrap_or_else(|p| p.into_inner());
        let Some(b) = boots.get(node) else {
            return "not started".to_string();
        };
        let last = match b.ready_in {
            Some(took) => format!("boot {} was ready in {}", b.number, seconds(took)),
            None => format!("boot {} {}", b.number, b.state),
        };
        if removed {
            format!("{:<9} {last}", "removed")
        } else {
            format!("{:<9} {last}", "kept")
        }
    }

    /// A line that stays (results, warnings).
    fn info(&self, text: &str) {
        match &self.live {
            Some(l) => {
                let _ = l.multi.println(clean(text));
            }
            None => self.plain("", text),
        }
    }

    /// The live lines end: the header goes, and each node's line stays with its last word
    /// (removed with the cluster, or kept), so no line still says `ready` of a container that
    /// is gone.
    fn finish(&self) {
        if let Some(l) = &self.live {
            l.header.finish_and_clear();
            for (node, pb) in &l.nodes {
                pb.finish_with_message(clean(&self.last_line(node)));
            }
        }
    }
}

impl Receiver for Progress {
    fn receive(&self, event: &RunEvent<'_>) {
        match event {
            RunEvent::Started {
                run_id,
                check,
                k3s_version,
                image,
                dir,
            } => self.info(&format!(
                "run {run_id}: {check} on {} {k3s_version} ({image}) → {}",
                // The version names its distribution (`+rke2r1`).
                k3s_version
                    .parse::<distro::Version>()
                    .map_or(distro::Distro::K3s, |v| v.distro),
                dir.display()
            )),
            RunEvent::Phase(p) => {
                if *p == Phase::Teardown {
                    self.removing
                        .store(true, std::sync::atomic::Ordering::SeqCst);
                }
                self.step(&p.to_string())
            }
            RunEvent::Node {
                node,
                state,
                boot,
                detail,
            } => self.node(node, state.as_str(), *boot, detail),
            RunEvent::Observed {
                step,
                observation: o,
            } => {
                let mark = if o.matches_expected() {
                    "as expected"
                } else if o.bug == Some(crate::scenario::Expected::Any) {
                    // `bug: any`: the check does not judge this cell (#32 item 8).
                    "not judged (bug: any)"
                } else if o.matches_bug() {
                    "BUG"
                } else {
                    "DIFFERS"
                };
                self.info(&format!(
                    "  step {step} {:<8} {:<20} {:<8} expected {:<6} {mark}",
                    o.node,
                    o.signal,
                    o.observed,
                    o.expected.as_ref().map_or("-", |e| e.as_str())
                ));
            }
            RunEvent::Note(text) => self.info(text),
            RunEvent::Finished(_) => self.finish(),
            RunEvent::Engine(_)
            | RunEvent::ImageReady { .. }
            | RunEvent::ClusterUp { .. }
            | RunEvent::StepDone { .. }
            | RunEvent::Concluded(_) => {}
        }
    }
}

/// A boot's time as people read it: `14.2s`, `2m05s`.
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 60.0 {
        format!("{s:.1}s")
    } else {
        format!("{}m{:02}s", d.as_secs() / 60, d.as_secs() % 60)
    }
}

/// indicatif writes its lines itself, past `crate::term`: what carries data (node names, log
/// lines, step names) is sanitised first.
fn clean(s: &str) -> String {
    crate::term::sanitize(s).into_owned()
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_boot_is_timed_against_its_timeout_and_its_line_closed_with_the_cluster() {
        let p = Progress::new(false, &["etcd-2".to_string()], Duration::from_secs(300));
        assert_eq!(p.last_line("etcd-2"), "not started");
        assert_eq!(p.timing("etcd-2", "starting", 2), "(timeout 5m)");
        let ready = p.timing("etcd-2", "ready", 2);
        assert!(
            ready.starts_with("in ") && ready.ends_with("s (timeout 5m)"),
            "{ready}"
        );
        // A later ready line of the same boot keeps the first one's time.
        assert_eq!(p.timing("etcd-2", "ready", 2), ready);
        assert!(p.timing("etcd-2", "running", 2).starts_with("(ready in "));
        assert!(p
            .last_line("etcd-2")
            .starts_with("kept      boot 2 was ready in "));
        p.receive(&RunEvent::Phase(Phase::Teardown));
        assert!(p
            .last_line("etcd-2")
            .starts_with("removed   boot 2 was ready in "));
        // The next boot is timed afresh.
        assert_eq!(p.timing("etcd-2", "starting", 3), "(timeout 5m)");
        assert!(p.timing("etcd-2", "dead", 3).starts_with("after "));
        assert_eq!(p.timing("etcd-2", "timeout", 3), "after 5m");
    }

    #[test]
    fn seconds_as_people_read_them() {
        assert_eq!(seconds(Duration::from_millis(14_200)), "14.2s");
        assert_eq!(seconds(Duration::from_secs(125)), "2m05s");
    }
}
