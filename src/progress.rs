//! What the user sees while a run goes: on a terminal one live line per node (state, boot,
//! last event) under the current step; in CI or a pipe, plain timestamped lines on stderr.
//! A receiver of the run's events; `matrix` and `bisect` do not attach it.

use std::collections::HashMap;
use std::sync::Mutex;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::run::{Receiver, RunEvent};

pub(crate) struct Progress {
    live: Option<Live>,
    /// Last state per node, for plain mode's "boot N" prefix.
    boots: Mutex<HashMap<String, u32>>,
}

struct Live {
    multi: MultiProgress,
    header: ProgressBar,
    nodes: HashMap<String, ProgressBar>,
}

impl Progress {
    /// Live lines (`live`) or plain ones, for these nodes.
    pub(crate) fn new(live: bool, nodes: &[String]) -> Progress {
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
            boots: Mutex::new(HashMap::new()),
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
    fn node(&self, node: &str, state: &str, boot: u32, event: &str) {
        self.boots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(node.to_string(), boot);
        match self.live.as_ref().and_then(|l| l.nodes.get(node)) {
            Some(pb) => pb.set_message(clean(&format!(
                "{state:<9} boot {boot}  {}",
                truncate(event, 100)
            ))),
            None => self.plain(node, &format!("boot {boot} {state}: {event}")),
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

    fn finish(&self) {
        if let Some(l) = &self.live {
            l.header.finish_and_clear();
            for pb in l.nodes.values() {
                pb.finish();
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
            RunEvent::Phase(p) => self.step(&p.to_string()),
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
