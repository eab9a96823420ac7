//! The liveness oracle of the lifecycle strategy (#41 point 5): what the distribution's rules
//! say each node does after a step that stops, starts, restarts or upgrades nodes, and how a
//! recorded run (result.json) left those rules. Pure: `plan` writes a check's `expect:`
//! (`lifecycle.rs`), `judge` re-reads a run, with no engine.
//!
//! The rules (docs/explore.md "Lifecycle strategy"; docs/k3s-behaviour.md §18, §19):
//! - an etcd member (an etcd-only or full server) comes back while the etcd members up after
//!   its restart group are a quorum (a majority, the group counted as restarting together);
//!   with quorum lost it may legitimately stay down;
//! - a control-plane-only server has no etcd data and needs the datastore: it comes back while
//!   the etcd quorum holds — through its join server, or (k3s #11333's fix) any etcd member it
//!   knew, kept in its etcd proxy's load balancer;
//! - an agent comes back while a server with an apiserver is up (its load balancer keeps every
//!   server it knew);
//! - no boot panics; a stopped node is down;
//! - readiness (the API's Ready condition, `node-ready`), asked only while an apiserver the
//!   step did not touch answers and the etcd quorum holds: when a node is stopped, a running
//!   node the step did not touch — server or agent — stays Ready; an agent the step (re)started
//!   and wanted back is Ready again (its kubelet posts its status through any server it knows:
//!   the join server, every apiserver; with none up it goes NotReady, but then no API answers
//!   either);
//! - after an upgrade the node runs its target version.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::raw::Role;
use crate::result::{ActionKind, Observation, Observed, RunResult};

use super::model::NodeInfo;
use super::oracle::{Class, Piece};

/// A lifecycle action: what one step of a lifecycle sequence does (a check's `stop:`,
/// `start:`, `restart:` or `upgrade:`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Action {
    Stop(Vec<String>),
    Start(Vec<String>),
    /// Groups restarted in order, each at once.
    Restart(Vec<Vec<String>>),
    /// Nodes upgraded one after another to `to`.
    Upgrade {
        nodes: Vec<String>,
        to: String,
    },
}

impl Action {
    /// Every node the action names, in order.
    pub(crate) fn nodes(&self) -> Vec<&str> {
        match self {
            Action::Stop(n) | Action::Start(n) | Action::Upgrade { nodes: n, .. } => {
                n.iter().map(String::as_str).collect()
            }
            Action::Restart(g) => g.iter().flatten().map(String::as_str).collect(),
        }
    }
}

/// What the rules want of one node after a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Want {
    /// The step stopped it: down.
    Stopped,
    /// (Re)booted, and the rules say it must come back (the rule, in words).
    Back(&'static str),
    /// (Re)booted, and the rules let it stay down (why): only "no panic" is asked.
    Either(&'static str),
    /// Running, not touched by the step, and an untouched apiserver can tell: stays Ready.
    StaysReady,
}

/// One node's want after a step, with the version an upgrade put it on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodeWant {
    pub(crate) want: Want,
    pub(crate) version: Option<String>,
    /// An agent wanted back while an apiserver the step did not touch answers: Ready again
    /// (`node-ready: up`), besides up in its log.
    pub(crate) ready: bool,
}

impl NodeWant {
    fn new(want: Want, version: Option<String>) -> NodeWant {
        NodeWant {
            want,
            version,
            ready: false,
        }
    }
}

pub(crate) const QUORUM: &str = "the etcd members up are a quorum";
pub(crate) const QUORUM_LOST: &str = "the etcd quorum is lost";
pub(crate) const JOIN_UP: &str = "its join server is up";
pub(crate) const KNOWN_UP: &str = "its join server is down, an etcd member it knew is up";
pub(crate) const API_UP: &str = "a server with an apiserver is up";
pub(crate) const NO_API: &str = "no server with an apiserver is up";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    Up,
    Down,
    /// Booted where the rules let it stay down: counted on by nobody.
    Unsure,
}

fn is_etcd(n: &NodeInfo) -> bool {
    matches!(n.role, Role::Etcd | Role::All)
}

fn has_api(n: &NodeInfo) -> bool {
    matches!(n.role, Role::ControlPlane | Role::All)
}

/// Per step (in order), what the rules want of each node it concerns; every node starts up.
pub(crate) fn plan(nodes: &[NodeInfo], steps: &[Action]) -> Vec<BTreeMap<String, NodeWant>> {
    let mut st: BTreeMap<&str, St> = nodes.iter().map(|n| (n.name.as_str(), St::Up)).collect();
    let info = |name: &str| nodes.iter().find(|n| n.name == name);
    let mut out = Vec::new();
    for step in steps {
        let mut wants: BTreeMap<String, NodeWant> = BTreeMap::new();
        let touched: BTreeSet<&str> = step.nodes().into_iter().collect();
        let (groups, version): (Vec<Vec<String>>, Option<&str>) = match step {
            Action::Stop(ns) => {
                for n in ns {
                    st.insert(n, St::Down);
                    wants.insert(n.clone(), NodeWant::new(Want::Stopped, None));
                }
                (Vec::new(), None)
            }
            Action::Start(ns) => (vec![ns.clone()], None),
            Action::Restart(g) => (g.clone(), None),
            Action::Upgrade { nodes: ns, to } => {
                (ns.iter().map(|n| vec![n.clone()]).collect(), Some(to))
            }
        };
        for g in &groups {
            let group: Vec<&NodeInfo> = g.iter().filter_map(|n| info(n)).collect();
            let members: Vec<&NodeInfo> = nodes.iter().filter(|n| is_etcd(n)).collect();
            let alive = (members.iter())
                .filter(|m| st.get(m.name.as_str()) == Some(&St::Up) || g.contains(&m.name))
                .count();
            let quorum = !members.is_empty() && alive > members.len() / 2;
            let mut decided: Vec<(&NodeInfo, Want)> = Vec::new();
            for n in group.iter().filter(|n| is_etcd(n)) {
                decided.push((
                    n,
                    if quorum {
                        Want::Back(QUORUM)
                    } else {
                        Want::Either(QUORUM_LOST)
                    },
                ));
            }
            let up = |name: &str, decided: &[(&NodeInfo, Want)]| {
                (decided.iter()).any(|(d, w)| d.name == name && matches!(w, Want::Back(_)))
                    || (!g.iter().any(|x| x == name) && st.get(name) == Some(&St::Up))
            };
            for n in group.iter().filter(|n| n.role == Role::ControlPlane) {
                let join_up = n.join.as_deref().is_some_and(|j| up(j, &decided));
                let w = match (quorum, join_up) {
                    (false, _) => Want::Either(QUORUM_LOST),
                    (true, true) => Want::Back(JOIN_UP),
                    (true, false) => Want::Back(KNOWN_UP),
                };
                decided.push((n, w));
            }
            for n in group.iter().filter(|n| n.role == Role::Agent) {
                let api = (nodes.iter()).any(|m| has_api(m) && up(&m.name, &decided));
                decided.push((
                    n,
                    if api {
                        Want::Back(API_UP)
                    } else {
                        Want::Either(NO_API)
                    },
                ));
            }
            for (n, w) in decided {
                st.insert(
                    &n.name,
                    if matches!(w, Want::Back(_)) {
                        St::Up
                    } else {
                        St::Unsure
                    },
                );
                let version = version.map(str::to_string);
                wants.insert(n.name.clone(), NodeWant::new(w, version));
            }
        }
        // The API is read only through an apiserver the step did not touch, with the etcd
        // quorum up: an apiserver the step restarted may have died (the finding), and its API
        // would be waited on until the run's timeout.
        let members: Vec<&NodeInfo> = nodes.iter().filter(|n| is_etcd(n)).collect();
        let members_up = (members.iter())
            .filter(|m| st[m.name.as_str()] == St::Up)
            .count();
        let untouched_up =
            |n: &NodeInfo| !touched.contains(n.name.as_str()) && st[n.name.as_str()] == St::Up;
        let api =
            members_up > members.len() / 2 && (nodes.iter()).any(|m| has_api(m) && untouched_up(m));
        // An agent back: its kubelet posts its status again through a server it knows.
        for n in nodes.iter().filter(|n| api && n.role == Role::Agent) {
            if let Some(w) = wants.get_mut(&n.name) {
                w.ready = matches!(w.want, Want::Back(_));
            }
        }
        // When a node is stopped, every node the step did not touch stays Ready: k3s #9910's
        // shape, as QA checked it (after a stop; restart steps judge the restarted nodes).
        if matches!(step, Action::Stop(_)) && api {
            for n in nodes.iter().filter(|n| untouched_up(n)) {
                wants.insert(n.name.clone(), NodeWant::new(Want::StaysReady, None));
            }
        }
        out.push(wants);
    }
    out
}

/// A run's steps read back as lifecycle actions (result.json's actions; an upgrade's target is
/// not recorded there: its `version` expectation is judged as written).
pub(crate) fn actions_of(r: &RunResult) -> Vec<Action> {
    (r.steps.iter())
        .map(|s| {
            let mut groups = Vec::new();
            let mut out = None;
            for a in &s.actions {
                match a.kind {
                    ActionKind::Stop => out = Some(Action::Stop(a.nodes.clone())),
                    ActionKind::Start => out = Some(Action::Start(a.nodes.clone())),
                    ActionKind::Restart => groups.push(a.nodes.clone()),
                    ActionKind::Upgrade => {
                        let mut nodes = match out.take() {
                            Some(Action::Upgrade { nodes, .. }) => nodes,
                            _ => Vec::new(),
                        };
                        nodes.extend(a.nodes.iter().cloned());
                        out = Some(Action::Upgrade {
                            nodes,
                            to: String::new(),
                        })
                    }
                    ActionKind::Edit => {}
                }
            }
            out.unwrap_or(Action::Restart(groups))
        })
        .collect()
}

fn lines_of(o: &Observation) -> Vec<String> {
    o.evidence.iter().take(3).map(|e| e.text.clone()).collect()
}

/// The node's `version` observation, when it differs from the version the check expects.
fn off_version<'a>(obs: &[&'a Observation]) -> Option<&'a Observation> {
    obs.iter().copied().find(|o| {
        o.signal == "version"
            && (o.expected.as_ref()).is_some_and(|e| e.as_str() != o.observed.to_string())
    })
}

/// Judges a run of a lifecycle check against [`plan`]: a node that had to come back and did
/// not, or any boot that panicked, is `died` (keyed `panic`, `fatal` or `exit` by how it
/// died, with its lines); an untouched server not Ready, or an upgraded node on another
/// version, is `not-ready`.
pub(crate) fn judge(r: &RunResult) -> Vec<Piece> {
    let nodes = super::oracle::nodes_of(r);
    let version = (r.build.as_ref()).map_or(r.k3s.version.clone(), |b| b.reported.clone());
    let wants = plan(&nodes, &actions_of(r));
    let mut out = Vec::new();
    for (step, wants) in r.steps.iter().zip(&wants) {
        for (name, w) in wants {
            let Some(node) = nodes.iter().find(|n| &n.name == name) else {
                continue;
            };
            let obs: Vec<&Observation> = (step.observations.iter())
                .filter(|o| &o.node == name)
                .collect();
            let seen = |s: &str| obs.iter().find(|o| o.signal == s).map(|o| &o.observed);
            // `rule` groups findings (the liveness rule that held, the same for every node);
            // `why` says it of this node.
            let piece = |class: Class,
                         (key, signal): (&str, &str),
                         observed: String,
                         (rule, why): (&str, &str)| {
                let o = obs.iter().find(|o| o.signal == signal);
                let mut evidence = o.map(|o| lines_of(o)).unwrap_or_default();
                let boot = (r.boots.iter())
                    .filter(|b| &b.node == name && b.step == step.index)
                    .max_by_key(|b| b.boot);
                if let Some(c) = boot.and_then(|b| b.exit_code) {
                    evidence.push(format!("{name} exited with status {c}"));
                }
                Piece {
                    class,
                    key: key.into(),
                    node: name.clone(),
                    role: node.role.as_str().into(),
                    source: rule.into(),
                    step: step.index,
                    signal: signal.into(),
                    observed,
                    predicted: why.into(),
                    evidence,
                    version: version.clone(),
                    run: String::new(),
                    critical: false,
                }
            };
            let panicked = seen("panic") == Some(&Observed::Up);
            let fatal = seen("fatal") == Some(&Observed::Up);
            let ready = if node.role == Role::Agent {
                "agent-ready"
            } else {
                "ready"
            };
            let gone = matches!(seen(ready), Some(Observed::Down | Observed::Dead));
            match &w.want {
                Want::Back(rule) | Want::Either(rule) if panicked => {
                    let why = format!("{name} does not panic ({rule})");
                    let p = piece(
                        Class::Died,
                        ("panic", "panic"),
                        "panic: up".into(),
                        (rule, &why),
                    );
                    out.push(p);
                }
                Want::Back(rule) if gone => {
                    let why = format!("{name} comes back: {rule}");
                    let (key, signal) = if fatal {
                        ("fatal", "fatal")
                    } else {
                        ("exit", ready)
                    };
                    let observed = if fatal { "fatal: up" } else { "died" };
                    out.push(piece(
                        Class::Died,
                        (key, signal),
                        observed.into(),
                        (rule, &why),
                    ));
                }
                Want::StaysReady if seen("node-ready") == Some(&Observed::Down) => {
                    let why = format!("{name} stays Ready: no step touched it");
                    let rule = "a running node no step touched stays Ready";
                    let p = piece(
                        Class::NotReady,
                        ("node-ready", "node-ready"),
                        "down".into(),
                        (rule, &why),
                    );
                    out.push(p);
                }
                _ => {}
            }
            if w.ready && !gone && seen("node-ready") == Some(&Observed::Down) {
                let why = format!("{name} is Ready again: a server it knows is up");
                let rule = "a node back while a server it knows is up is Ready";
                let p = piece(
                    Class::NotReady,
                    ("node-ready", "node-ready"),
                    "down".into(),
                    (rule, &why),
                );
                out.push(p);
            }
            if let Some(o) = off_version(&obs).filter(|_| w.version.is_some()) {
                let why = format!(
                    "{name} runs {} after its upgrade",
                    o.expected.as_ref().map_or("", |e| e.as_str())
                );
                let rule = "an upgraded node runs its target version";
                let p = piece(
                    Class::NotReady,
                    ("version", "version"),
                    o.observed.to_string(),
                    (rule, &why),
                );
                out.push(p);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::model::tests as model;

    /// etcd-split with an agent joining cp-1.
    fn nodes() -> Vec<NodeInfo> {
        let mut n = model::etcd_split();
        n.push(model::agent_1());
        n
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn want(p: &BTreeMap<String, NodeWant>, n: &str) -> Option<Want> {
        p.get(n).map(|w| w.want.clone())
    }

    /// k3s #11333: the join server stopped, a control-plane-only node must still come back
    /// (an etcd member it knew is up); the untouched etcd members stay Ready while cp-1's
    /// apiserver is untouched.
    #[test]
    fn a_node_whose_join_server_is_down_must_come_back_while_a_known_server_is_up() {
        let p = plan(
            &nodes(),
            &[
                Action::Stop(names(&["etcd-1"])),
                Action::Restart(vec![names(&["cp-1"])]),
                Action::Start(names(&["etcd-1"])),
            ],
        );
        assert_eq!(want(&p[0], "etcd-1"), Some(Want::Stopped));
        assert_eq!(want(&p[0], "etcd-2"), Some(Want::StaysReady));
        assert_eq!(want(&p[0], "agent-1"), Some(Want::StaysReady));
        assert_eq!(want(&p[1], "cp-1"), Some(Want::Back(KNOWN_UP)));
        // cp-1 itself restarted: no apiserver untouched in that step to tell readiness
        assert_eq!(want(&p[1], "etcd-2"), None);
        assert_eq!(want(&p[2], "etcd-1"), Some(Want::Back(QUORUM)));
    }

    /// k3s #13533: every node at once — the members restart together, a quorum; every node
    /// must come back.
    #[test]
    fn every_node_restarted_at_once_must_come_back() {
        let all = names(&["etcd-1", "etcd-2", "etcd-3", "cp-1", "agent-1"]);
        let p = plan(&nodes(), &[Action::Restart(vec![all])]);
        assert_eq!(want(&p[0], "etcd-1"), Some(Want::Back(QUORUM)));
        assert_eq!(want(&p[0], "cp-1"), Some(Want::Back(JOIN_UP)));
        assert_eq!(want(&p[0], "agent-1"), Some(Want::Back(API_UP)));
    }

    /// No false alarm: with two of three members stopped the quorum is lost, and a node whose
    /// every server is down may stay down; a later start brings the quorum back.
    #[test]
    fn a_lost_quorum_or_no_server_lets_a_node_stay_down() {
        let p = plan(
            &nodes(),
            &[
                Action::Stop(names(&["etcd-1", "etcd-2"])),
                Action::Restart(vec![names(&["etcd-3"]), names(&["cp-1"])]),
                Action::Stop(names(&["cp-1"])),
                Action::Restart(vec![names(&["agent-1"])]),
                Action::Start(names(&["etcd-1", "etcd-2"])),
            ],
        );
        assert_eq!(want(&p[1], "etcd-3"), Some(Want::Either(QUORUM_LOST)));
        assert_eq!(want(&p[1], "cp-1"), Some(Want::Either(QUORUM_LOST)));
        assert_eq!(want(&p[3], "agent-1"), Some(Want::Either(NO_API)));
        assert_eq!(want(&p[4], "etcd-1"), Some(Want::Back(QUORUM)));
    }

    /// Agents' readiness (the kubelet posts its status through any server it knows): an agent
    /// no step touched stays Ready while a node is stopped, one restarted is Ready again — each
    /// asked only while an apiserver the step did not touch answers with the etcd quorum up.
    #[test]
    fn agents_stay_ready_and_come_back_ready_while_a_server_they_know_answers() {
        let ready = |p: &BTreeMap<String, NodeWant>, n: &str| p.get(n).map(|w| w.ready);
        let p = plan(
            &nodes(),
            &[
                Action::Stop(names(&["etcd-2"])),
                Action::Restart(vec![names(&["agent-1"])]),
                Action::Stop(names(&["agent-1"])),
                Action::Start(names(&["agent-1"])),
            ],
        );
        assert_eq!(want(&p[0], "agent-1"), Some(Want::StaysReady));
        assert_eq!(want(&p[1], "agent-1"), Some(Want::Back(API_UP)));
        assert_eq!(ready(&p[1], "agent-1"), Some(true));
        // a stopped agent is down, and the servers stay Ready
        assert_eq!(want(&p[2], "agent-1"), Some(Want::Stopped));
        assert_eq!(want(&p[2], "cp-1"), Some(Want::StaysReady));
        assert_eq!(ready(&p[3], "agent-1"), Some(true));
        // restarted with the only apiserver: back, but no untouched apiserver can tell
        let together = plan(
            &nodes(),
            &[Action::Restart(vec![names(&["cp-1", "agent-1"])])],
        );
        assert_eq!(want(&together[0], "agent-1"), Some(Want::Back(API_UP)));
        assert_eq!(ready(&together[0], "agent-1"), Some(false));
        // the only apiserver stopped: nobody's readiness is asked (every agent goes NotReady
        // in k3s then, and no API answers to say so); the agent may stay down
        let no_api = plan(
            &nodes(),
            &[
                Action::Stop(names(&["cp-1"])),
                Action::Restart(vec![names(&["agent-1"])]),
            ],
        );
        assert_eq!(want(&no_api[0], "agent-1"), None);
        assert_eq!(want(&no_api[0], "etcd-1"), None);
        assert_eq!(want(&no_api[1], "agent-1"), Some(Want::Either(NO_API)));
        assert_eq!(ready(&no_api[1], "agent-1"), Some(false));
        // the etcd quorum lost: the apiserver cannot answer either
        let lost = plan(&nodes(), &[Action::Stop(names(&["etcd-1", "etcd-2"]))]);
        assert_eq!(want(&lost[0], "agent-1"), None);
        assert_eq!(want(&lost[0], "cp-1"), None);
    }

    #[test]
    fn an_upgrade_names_the_target_version() {
        let up = Action::Upgrade {
            nodes: names(&["etcd-1", "etcd-2"]),
            to: "v1.33.5+k3s1".into(),
        };
        let p = plan(&nodes(), &[up]);
        let w = &p[0]["etcd-2"];
        assert_eq!(w.want, Want::Back(QUORUM));
        assert_eq!(w.version.as_deref(), Some("v1.33.5+k3s1"));
        // no stop in the step: the untouched nodes are not asked (an apiserver restarted earlier may have died)
        assert_eq!(want(&p[0], "etcd-3"), None);
    }

    /// The recorded etcd-split run, its steps replaced by k3s #11333's (stop the join server,
    /// restart cp-1) and #13533's (every node at once): a death where the rules want the node
    /// back is `died` keyed by how it died, grouped by the rule; a panic is `died/panic` even
    /// where the node may stay down; an untouched server not Ready is `not-ready`.
    #[test]
    fn the_judge_reads_deaths_panics_and_readiness_off_a_run() {
        use serde_json::json;
        let mut v = crate::explore::oracle_tests::fixture("buggy");
        let obs = |node: &str, signal: &str, expected: &str, observed: &str| {
            json!({"node": node, "signal": signal, "expected": expected, "bug": expected,
                   "observed": observed, "boot": 2, "evidence": [], "reason": ""})
        };
        let step = |index: usize, kind: &str, nodes: &[&str], o: Vec<serde_json::Value>| {
            json!({"index": index, "name": "s", "why": "", "started_at": "2026-11-30T09:01:24Z",
                   "actions": [{"kind": kind, "nodes": nodes, "at": "2026-11-30T09:01:24Z"}],
                   "observations": o})
        };
        v["steps"] = json!([
            step(
                1,
                "stop",
                &["etcd-1"],
                vec![
                    obs("etcd-1", "ready", "down", "down"),
                    obs("etcd-2", "node-ready", "up", "down"),
                ]
            ),
            step(
                2,
                "restart",
                &["cp-1"],
                vec![
                    obs("cp-1", "ready", "up", "dead"),
                    obs("cp-1", "fatal", "down", "up"),
                ]
            ),
            step(
                3,
                "restart",
                &["etcd-1", "etcd-2", "etcd-3", "cp-1"],
                vec![
                    obs("cp-1", "ready", "up", "dead"),
                    obs("cp-1", "panic", "down", "up"),
                    obs("etcd-3", "ready", "up", "up"),
                ]
            ),
            step(
                4,
                "upgrade",
                &["etcd-2"],
                vec![
                    obs("etcd-2", "ready", "up", "up"),
                    obs("etcd-2", "version", "v1.33.5+k3s1", "v1.33.4+k3s1"),
                ]
            ),
        ]);
        let r: RunResult = serde_json::from_value(v).expect("a result");
        let got: Vec<(String, String, String, usize, String)> = judge(&r)
            .into_iter()
            .map(|p| (p.class.name(), p.key, p.node, p.step, p.source))
            .collect();
        let row = |c: &str, k: &str, n: &str, s: usize, src: &str| {
            (
                c.to_string(),
                k.to_string(),
                n.to_string(),
                s,
                src.to_string(),
            )
        };
        assert_eq!(
            got,
            vec![
                row(
                    "not-ready",
                    "node-ready",
                    "etcd-2",
                    1,
                    "a running node no step touched stays Ready"
                ),
                row("died", "fatal", "cp-1", 2, KNOWN_UP),
                // etcd-1 was stopped: the join server of cp-1 is back in the same group
                row("died", "panic", "cp-1", 3, JOIN_UP),
                row(
                    "not-ready",
                    "version",
                    "etcd-2",
                    4,
                    "an upgraded node runs its target version"
                ),
            ]
        );
    }
}
