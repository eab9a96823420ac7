//! Observing one signal on one node's current boot: run the signal's probe (retrying until a
//! rule matches), or wait on the boot's log until `observe` decides. Always returns an
//! [`Observation`]; what could not be decided is `unknown`, with the reason.

use std::time::{Duration, Instant};

use crate::result::{Evidence, EvidenceSource, Observation, Observed, Rule};
use crate::scenario::{Expected, Probe, Signal};

use super::cluster::Cluster;
use super::observe::{self, Eval};
use super::record::now_rfc3339;
use super::watch::BootHandle;

/// The expectation being observed.
pub(crate) struct Expectation {
    pub(crate) node: String,
    pub(crate) signal: String,
    /// The correct value.
    pub(crate) expected: Expected,
    /// The documented bug's value (the correct one when the bug does not change it).
    pub(crate) bug: Option<Expected>,
    /// The value the asked outcome wants.
    pub(crate) asked: Option<Expected>,
    /// Whether the step's `expect` / bug world expects this node to die (`verdict::death_expected`).
    pub(crate) death_expected: (bool, bool),
}

/// A decided value: observed, evidence, reason, and the rule that decided it.
struct Decided {
    observed: Observed,
    boot: u32,
    evidence: Vec<Evidence>,
    reason: String,
    rule: Rule,
    waited: Option<Duration>,
}

impl Decided {
    fn unknown(boot: u32, evidence: Vec<Evidence>, reason: impl Into<String>) -> Decided {
        Decided {
            observed: Observed::Unknown,
            boot,
            evidence,
            reason: reason.into(),
            rule: Rule::Undecided,
            waited: None,
        }
    }
}

/// Observes `e.signal` on `e.node`'s current boot (`sig` is its definition, if it has one).
pub(crate) async fn observe(c: &Cluster, e: Expectation, sig: Option<&Signal>) -> Observation {
    let d = match (sig, c.current(&e.node)) {
        (None, _) => Decided::unknown(0, vec![], "signal not defined"),
        (Some(_), None) => Decided::unknown(0, vec![], "the node was never started"),
        (Some(sig), Some(h)) => decide(c, &e.node, &h, sig).await,
    };
    // A death is its own observation; `on-death` says what it stands for where one is expected.
    let (observed, death) = match (d.rule, sig) {
        (Rule::OnDeath, Some(sig)) => (
            Observed::Dead,
            Some(crate::result::Death {
                counts_as: sig.on_death.as_ref().map(|v| v.as_str().to_string()),
                expected: e.death_expected.0,
                bug: e.death_expected.1,
            }),
        ),
        _ => (d.observed, None),
    };
    Observation {
        node: e.node,
        signal: e.signal,
        expected: Some(e.expected),
        bug: e.bug,
        observed,
        death,
        asked: e.asked,
        boot: d.boot,
        evidence: d.evidence,
        reason: d.reason,
        rule: d.rule,
        settle_ms: d.waited.map(|w| w.as_millis() as u64),
        decided_at: Some(now_rfc3339()),
    }
}

async fn decide(c: &Cluster, node: &str, h: &BootHandle, sig: &Signal) -> Decided {
    let cap = Instant::now() + c.timeout;
    match sig.probe_for(&c.plan.k3s_version) {
        Some(probe) => by_probe(c, node, h, sig, probe, cap).await,
        None => {
            // What the wait was for, said when its bound passes: the lines, and a value that
            // can never come on this node's role (the validator refuses expecting one).
            let role = c.plan.nodes.iter().find(|n| n.name == node).map(|n| n.role);
            let what = match (sig.is_value(), role) {
                (false, Some(role)) => sig.waited_for(role, c.plan.distro),
                // a value k3s prints after its ready line: its line or the one after it
                (true, Some(role)) if !sig.settled_by.is_empty() => sig
                    .waited_for(role, c.plan.distro)
                    .replacen("waited for ", "waited for a value line or ", 1),
                _ => "waited for the node to be ready or its boot to end (values are read then)"
                    .to_string(),
            };
            by_log(c, h, sig, cap, &what).await
        }
    }
}

/// Runs the probe once its `after` lines are in the boot, until a rule matches or it times out.
async fn by_probe(
    c: &Cluster,
    node: &str,
    h: &BootHandle,
    sig: &Signal,
    probe: &Probe,
    cap: Instant,
) -> Decided {
    let number = h.with(|b| b.number);
    let v = &c.plan.k3s_version;
    let mut rx = h.subscribe();
    let mut first_try: Option<Instant> = None;
    loop {
        let (dead, ready_to_probe) = h.with(|b| {
            (
                observe::is_dead(b) || b.end.is_some(),
                observe::probe_ready(sig, b, v),
            )
        });
        if dead {
            let ev = h.with(observe::death_evidence);
            let val = sig.on_death.as_ref().map_or("unknown", |e| e.as_str());
            return Decided {
                observed: Observed::from(val),
                boot: number,
                evidence: ev,
                reason: "the node died in this boot".into(),
                rule: Rule::OnDeath,
                waited: None,
            };
        }
        if ready_to_probe {
            let started = *first_try.get_or_insert_with(Instant::now);
            let timed_out = || Instant::now() >= started + probe.timeout;
            match c.docker.exec(c.container(node), &probe.command).await {
                Ok((code, out)) => {
                    let out = (c.scrub)(out);
                    if let Some(state) = observe::eval_probe(sig, code, &out) {
                        let text = format!(
                            "$ {} → exit {code}: {}",
                            probe.command.join(" "),
                            observe::probe_excerpt(&out)
                        );
                        return Decided {
                            observed: state,
                            boot: number,
                            evidence: vec![probe_evidence(number, text)],
                            reason: "probe rule matched".into(),
                            rule: Rule::Probe,
                            waited: None,
                        };
                    }
                    if timed_out() {
                        let text = format!("exit {code}: {}", observe::probe_excerpt(&out));
                        return Decided::unknown(
                            number,
                            vec![probe_evidence(number, text)],
                            format!(
                                "no probe rule matched within the probe's timeout ({})",
                                humantime::format_duration(probe.timeout)
                            ),
                        );
                    }
                }
                Err(e) => {
                    if timed_out() {
                        return Decided::unknown(
                            number,
                            vec![],
                            format!(
                                "the probe failed until its timeout ({}): {e}",
                                humantime::format_duration(probe.timeout)
                            ),
                        );
                    }
                }
            }
            // A probe answers a question the log cannot; retrying it is the only way to
            // learn when the endpoint appears, so back off briefly between tries.
            tokio::time::sleep(Duration::from_millis(250)).await;
            continue;
        }
        if Instant::now() >= cap {
            let lines: Vec<&str> = probe.after.iter().map(|p| p.regex.as_str()).collect();
            return Decided::unknown(
                number,
                vec![],
                format!(
                    "the probe's `after` line ({}) never appeared within the timeout ({})",
                    lines.join(", "),
                    humantime::format_duration(c.timeout)
                ),
            );
        }
        // Wake on the next line; once the follower is gone nothing changes before the cap.
        let closed = tokio::time::timeout_at(cap.into(), rx.changed())
            .await
            .map(|r| r.is_err())
            .unwrap_or(false);
        if closed {
            tokio::time::sleep_until(cap.into()).await;
        }
    }
}

fn probe_evidence(boot: u32, text: String) -> Evidence {
    Evidence {
        source: EvidenceSource::Probe,
        boot,
        time: Some(now_rfc3339()),
        text,
    }
}

/// Waits on the boot's log until the observation rules decide, or the cap passes.
async fn by_log(c: &Cluster, h: &BootHandle, sig: &Signal, cap: Instant, what: &str) -> Decided {
    let number = h.with(|b| b.number);
    let v = &c.plan.k3s_version;
    let mut rx = h.subscribe();
    let mut closed = false;
    loop {
        match h.with(|b| observe::eval_log(sig, b, v, c.settle, Instant::now())) {
            Eval::Decided(o) => {
                return Decided {
                    observed: o.observed,
                    boot: number,
                    evidence: o.evidence,
                    reason: o.reason,
                    rule: o.rule,
                    waited: o.waited,
                }
            }
            Eval::Pending { until } => {
                if Instant::now() >= cap {
                    let ev = h.with(|b| {
                        b.lines
                            .iter()
                            .rev()
                            .take(2)
                            .map(|l| observe::evidence(b, l))
                            .collect()
                    });
                    let bound = humantime::format_duration(c.timeout);
                    return Decided::unknown(
                        number,
                        ev,
                        format!("not decided within the timeout ({bound}): {what}"),
                    );
                }
                let deadline = until.map_or(cap, |u| u.min(cap));
                if closed {
                    tokio::time::sleep_until(deadline.into()).await;
                } else {
                    tokio::select! {
                        r = rx.changed() => if r.is_err() { closed = true },
                        _ = tokio::time::sleep_until(deadline.into()) => {},
                    }
                }
            }
        }
    }
}
