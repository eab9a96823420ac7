//! The oracle: a pure function from one recorded run (result.json: the topology, each step's
//! configs, each boot and each observation) to the ways it left the model of k3s's rules
//! (`model.rs`). Nothing here reads the engine, so `repro explore --recheck` re-judges runs made
//! anywhere. Findings group many pieces of evidence under one cause (class, key, role, source).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::raw::Role;
use crate::result::{BootEnd, BootRecord, Observed, Rule, RunResult};
use crate::scenario::Shows;

use super::model::{self, Boot, Config, NodeInfo, Rules};

/// One way one boot of one run left the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Piece {
    /// `taken-from-<node>`, `stale`, `wrongly-refused`, `unguarded-divergence`, `inconclusive`.
    pub(crate) class: String,
    pub(crate) key: String,
    pub(crate) node: String,
    pub(crate) role: String,
    /// Where the node's config comes from, in words ([`NodeInfo::config_source`]).
    pub(crate) source: String,
    pub(crate) step: usize,
    pub(crate) signal: String,
    pub(crate) observed: String,
    pub(crate) predicted: String,
    /// The lines (or probe output) that decided the observation.
    pub(crate) evidence: Vec<String>,
    pub(crate) version: String,
    /// The results folder, relative to the campaign (set by the caller).
    #[serde(default)]
    pub(crate) run: String,
}

impl Piece {
    /// What makes two pieces one finding.
    pub(crate) fn cause(&self) -> (String, String, String, String) {
        (
            self.class.clone(),
            self.key.clone(),
            self.role.clone(),
            self.source.clone(),
        )
    }
}

fn nodes_of(r: &RunResult) -> Vec<NodeInfo> {
    r.topology
        .nodes
        .iter()
        .map(|n| NodeInfo {
            name: n.name.clone(),
            role: n.role,
            init: n.init,
            join: n.join.clone(),
        })
        .collect()
}

/// Each node's config as of step `step` (result.json's `configs`; the nearest earlier step
/// that recorded it).
fn config_at(r: &RunResult, step: usize, node: &str) -> Config {
    (0..=step)
        .rev()
        .find_map(|s| r.configs.get(&s.to_string()).and_then(|m| m.get(node)))
        .map(|t| model::parse_config(t))
        .unwrap_or_default()
}

fn died(b: &BootRecord) -> bool {
    matches!(b.end, BootEnd::Exited | BootEnd::Lost)
}

/// The config every live server runs with when `booting` starts its boot in step `step`: each
/// other node's latest boot started before it.
fn running_before(r: &RunResult, step: usize, booting: &BootRecord) -> BTreeMap<String, Config> {
    let mut latest: BTreeMap<&str, &BootRecord> = BTreeMap::new();
    for b in &r.boots {
        if b.node == booting.node || b.step > step {
            continue;
        }
        let newer = latest
            .get(b.node.as_str())
            .is_none_or(|x| (b.step, b.boot) > (x.step, x.boot));
        if newer {
            latest.insert(&b.node, b);
        }
    }
    latest
        .into_iter()
        .filter(|(_, b)| !died(b))
        .map(|(n, b)| (n.to_string(), config_at(r, b.step, n)))
        .collect()
}

/// The signals of the run that show a key, by name.
fn showing(r: &RunResult) -> BTreeMap<String, Shows> {
    r.signals
        .iter()
        .filter_map(|(name, s)| {
            s.shows.as_ref().map(|sh| {
                (
                    name.clone(),
                    Shows {
                        key: sh.key.clone(),
                        up_when: sh.up_when,
                    },
                )
            })
        })
        .collect()
}

/// The key's value an observation stands for: `up`/`down` of a state signal → the `up-when`
/// value or its opposite; a value signal's text as is; `None` for what shows no value.
pub(crate) fn shown_value(s: &Shows, observed: &Observed) -> Option<String> {
    match (s.up_when, observed) {
        (Some(w), Observed::Up) => Some(w.to_string()),
        (Some(w), Observed::Down) => Some((!w).to_string()),
        (None, Observed::Value(v)) => Some(v.clone()),
        _ => None,
    }
}

/// Judges one run.
pub(crate) fn judge(r: &RunResult) -> Vec<Piece> {
    let rules = Rules::of(r.distribution);
    let nodes = nodes_of(r);
    let shows = showing(r);
    let mut keys: Vec<String> = shows.values().map(|s| s.key.clone()).collect();
    keys.sort();
    keys.dedup();
    let version = r
        .build
        .as_ref()
        .map_or(r.k3s.version.clone(), |b| b.reported.clone());
    let mut out = Vec::new();
    for step in &r.steps {
        let i = step.index;
        for b in r.boots.iter().filter(|b| b.step == i) {
            let Some(node) = nodes.iter().find(|n| n.name == b.node) else {
                continue;
            };
            let own = config_at(r, i, &node.name);
            let running = running_before(r, i, b);
            let piece = |class: String,
                         key: &str,
                         signal: &str,
                         observed: String,
                         predicted: String,
                         evidence: Vec<String>| Piece {
                class,
                key: key.to_string(),
                node: node.name.clone(),
                role: node.role.as_str().to_string(),
                source: node.config_source(&nodes),
                step: i,
                signal: signal.to_string(),
                observed,
                predicted,
                evidence,
                version: version.clone(),
                run: String::new(),
            };
            let obs: Vec<_> = step
                .observations
                .iter()
                .filter(|o| o.node == node.name && o.boot == b.boot)
                .collect();
            let dead = died(b) || obs.iter().any(|o| o.observed == Observed::Dead);
            let named: Vec<String> = obs
                .iter()
                .filter(|o| o.signal == "config-mismatch")
                .filter_map(|o| match &o.observed {
                    Observed::Value(v) => {
                        Some(v.split(',').map(str::to_string).collect::<Vec<_>>())
                    }
                    _ => None,
                })
                .flatten()
                .collect();
            let ev = |o: &crate::result::Observation| -> Vec<String> {
                o.evidence.iter().take(3).map(|e| e.text.clone()).collect()
            };
            match model::predict(&rules, &nodes, node, b.boot == 1, &own, &running, &keys) {
                Boot::Refused(diff) => {
                    if !dead {
                        for k in &diff {
                            let line = obs
                                .iter()
                                .find(|o| o.signal == "ready")
                                .map(|o| ev(o))
                                .unwrap_or_default();
                            out.push(piece(
                                "unguarded-divergence".into(),
                                k,
                                "ready",
                                "up".into(),
                                format!("refused: critical configuration mismatched: {k}"),
                                line,
                            ));
                        }
                    }
                }
                Boot::Up(values) => {
                    if dead {
                        for k in &named {
                            out.push(piece(
                                "wrongly-refused".into(),
                                k,
                                "config-mismatch",
                                k.clone(),
                                format!("{k} equal on {} and its server: no refusal", node.name),
                                obs.iter()
                                    .find(|o| o.signal == "config-mismatch")
                                    .map(|o| ev(o))
                                    .unwrap_or_default(),
                            ));
                        }
                        continue;
                    }
                    let reached = b.lb_server.as_ref().and_then(|l| l.node.clone());
                    for o in &obs {
                        let Some(sh) = shows.get(&o.signal) else {
                            continue;
                        };
                        // An agent takes the value of the server it reached (by design).
                        let predicted = match values.get(&sh.key).cloned().flatten() {
                            Some(v) => Some(v),
                            None => reached
                                .as_ref()
                                .and_then(|m| running.get(m))
                                .and_then(|c| rules.value(c, &sh.key)),
                        };
                        let Some(predicted) = predicted else {
                            continue;
                        };
                        let observed = shown_value(sh, &o.observed);
                        if observed.as_deref() == Some(predicted.as_str()) {
                            continue;
                        }
                        let shown = |v: &Option<String>| {
                            v.clone().unwrap_or_else(|| o.observed.to_string())
                        };
                        // No positive evidence: the settle rule decided, or nothing did.
                        if observed.is_none()
                            || o.rule == Rule::SettleWindow
                            || o.rule == Rule::Undecided
                        {
                            out.push(piece(
                                "inconclusive".into(),
                                &sh.key,
                                &o.signal,
                                shown(&observed),
                                predicted,
                                ev(o),
                            ));
                            continue;
                        }
                        let x = observed.clone().unwrap_or_default();
                        let holds = |m: &str| {
                            running
                                .get(m)
                                .and_then(|c| rules.value(c, &sh.key))
                                .as_deref()
                                == Some(x.as_str())
                        };
                        let previous = r
                            .boots
                            .iter()
                            .filter(|p| p.node == b.node && p.boot < b.boot)
                            .max_by_key(|p| p.boot)
                            .map(|p| config_at(r, p.step, &b.node))
                            .and_then(|c| rules.value(&c, &sh.key));
                        // The server its load balancer reached, when the log says; else the
                        // node it joins, else any server holding the value; its own previous
                        // value only when no other server holds it (then nothing else explains it).
                        let join = node.join.as_ref().filter(|j| holds(j));
                        let any = nodes
                            .iter()
                            .find(|m| m.name != b.node && m.is_server() && holds(&m.name))
                            .map(|m| &m.name);
                        let class = if let Some(m) =
                            reached.as_ref().filter(|m| **m != b.node && holds(m))
                        {
                            format!("taken-from-{m}")
                        } else if let Some(m) = join.or(any) {
                            format!("taken-from-{m}")
                        } else if previous.as_deref() == Some(x.as_str()) {
                            "stale".to_string()
                        } else {
                            "taken-from-elsewhere".to_string()
                        };
                        let mut e = ev(o);
                        if let Some(l) = &b.lb_server {
                            e.push(format!(
                                "load balancer reached {} ({})",
                                l.address,
                                l.node.as_deref().unwrap_or("?")
                            ));
                        }
                        out.push(piece(class, &sh.key, &o.signal, x, predicted, e));
                    }
                    // Servers that hold different critical values with nothing refusing it:
                    // an etcd member that already has data is never checked again.
                    if matches!(node.role, Role::Etcd | Role::All) && !node.bootstraps(b.boot == 1)
                    {
                        for k in keys.iter().filter(|k| rules.critical.contains(*k)) {
                            let mine = rules.value(&own, k);
                            let other = nodes
                                .iter()
                                .filter(|m| m.name != node.name && m.is_server())
                                .find(|m| {
                                    running
                                        .get(&m.name)
                                        .is_some_and(|c| rules.value(c, k) != mine)
                                });
                            if let Some(m) = other {
                                let theirs = running.get(&m.name).and_then(|c| rules.value(c, k));
                                out.push(piece(
                                    "unguarded-divergence".into(),
                                    k,
                                    "ready",
                                    format!("{}={} up beside {}={}", node.name, mine.unwrap_or_default(), m.name, theirs.unwrap_or_default()),
                                    "k3s checks critical keys only at bootstrap: no refusal expected".into(),
                                    obs.iter().find(|o| o.signal == "ready").map(|o| ev(o)).unwrap_or_default(),
                                ));
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// Finding classes that say the distribution broke its own rule (the rest are by design or
/// undecided).
pub(crate) fn is_defect(class: &str) -> bool {
    class.starts_with("taken-from-") || class == "stale" || class == "wrongly-refused"
}
