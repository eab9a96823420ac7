//! `repro audit --change KEY=VALUE`: an order of config edits and restarts that brings every
//! server to the new values with no refused start and no server running another server's
//! value, found by walking explore's model (`predict`) and the bug world's reach one restart at
//! a time — or why none exists. Written as a check file `repro run` rehearses.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::explore::model::{self, Boot, Config, NodeInfo, Rules};
use crate::raw::Role;

use super::{borrows, Cluster, Member};

/// One restart of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct PlanStep {
    pub(crate) node: String,
    /// The edits of its config file before the restart.
    pub(crate) set: BTreeMap<String, String>,
    pub(crate) why: String,
}

/// A safe order, or why there is none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct ChangePlan {
    pub(crate) changes: BTreeMap<String, String>,
    pub(crate) steps: Vec<PlanStep>,
    /// Empty when the order is safe; else why no order is (each node left, and what stops it).
    pub(crate) impossible: Vec<String>,
}

/// The order servers are tried in: nodes that join nobody, then apiserver nodes, then etcd
/// joiners (who may read served keys from the apiservers and the node they joined).
fn rank(m: &Member) -> u8 {
    match (m.join.is_some(), m.role) {
        (false, _) => 0,
        (true, r) if r.runs_apiserver() => 1,
        _ => 2,
    }
}

/// Why restarting `m` with `target` now is not safe, or `None` when it is.
fn blocked(
    c: &Cluster,
    rules: &Rules,
    nodes: &[NodeInfo],
    m: &Member,
    target: &Config,
    running: &BTreeMap<String, Config>,
    changes: &BTreeMap<String, String>,
) -> Option<String> {
    let keys: Vec<String> = changes.keys().cloned().collect();
    let info = nodes.iter().find(|n| n.name == m.name)?;
    if let Boot::Refused(k) = model::predict(rules, nodes, info, false, target, running, &keys) {
        return Some(format!(
            "its start would be refused: {} differs from {}",
            k.join(", "),
            m.join.as_deref().unwrap_or("its server")
        ));
    }
    let served: Vec<&String> = (keys.iter())
        .filter(|k| c.distro.facts().served_agent_keys.contains(&k.as_str()))
        .collect();
    if served.is_empty() || borrows(c, m) == Some(false) {
        return None;
    }
    let joined = m.join.as_deref()?;
    let apiservers: Vec<String> = (c.members.iter())
        .filter(|n| n.role.runs_apiserver())
        .map(|n| n.name.clone())
        .collect();
    let reach = crate::bug_world::live_reach(&m.name, joined, &apiservers);
    for s in reach.servers() {
        for k in &served {
            let theirs = running.get(&s).and_then(|cfg| rules.value(cfg, k));
            if theirs.as_ref() != changes.get(*k) {
                return Some(format!(
                    "on its version it takes `{k}` from whichever server its agent reaches, and {s} does not run the new value yet"
                ));
            }
        }
    }
    None
}

/// The plan for `changes` on `c` (see the module doc).
pub(crate) fn plan(c: &Cluster, changes: &BTreeMap<String, String>) -> ChangePlan {
    let rules = Rules::of(c.distro);
    let nodes: Vec<NodeInfo> = c.members.iter().map(Member::info).collect();
    let mut running: BTreeMap<String, Config> = (c.members.iter())
        .filter(|m| m.role.is_server())
        .filter_map(|m| m.now().map(|cfg| (m.name.clone(), cfg.clone())))
        .collect();
    let mut left: Vec<&Member> = (c.members.iter())
        .filter(|m| m.role != Role::Agent)
        .collect();
    left.sort_by_key(|m| rank(m));
    let target = |m: &Member| {
        let mut cfg = m.next().cloned().unwrap_or_default();
        cfg.extend(changes.clone());
        cfg
    };
    let mut steps = Vec::new();
    while !left.is_empty() {
        let pick = left
            .iter()
            .position(|m| blocked(c, &rules, &nodes, m, &target(m), &running, changes).is_none());
        let Some(i) = pick else {
            let impossible = left
                .iter()
                .filter_map(|m| {
                    blocked(c, &rules, &nodes, m, &target(m), &running, changes)
                        .map(|why| format!("{}: {why}", m.name))
                })
                .collect();
            return ChangePlan {
                changes: changes.clone(),
                steps,
                impossible,
            };
        };
        let m = left.remove(i);
        let why = match (m.join.as_deref(), rank(m)) {
            (None, _) => "it joins no server: nothing checks it".to_string(),
            (Some(j), 1) => {
                format!("it checks critical keys against {j}, which runs the new value")
            }
            (Some(_), _) => {
                "every server it may read served keys from runs the new value".to_string()
            }
        };
        running.insert(m.name.clone(), target(m));
        steps.push(PlanStep {
            node: m.name.clone(),
            set: changes.clone(),
            why,
        });
    }
    ChangePlan {
        changes: changes.clone(),
        steps,
        impossible: Vec::new(),
    }
}

/// The plan as a check file for `repro run` on `topology`: one step per restart, each expecting
/// the node up with no fatal, and on a served boolean key its feature as the new value says.
pub(crate) fn check_file(c: &Cluster, p: &ChangePlan, topology: &str) -> String {
    let mut o = String::new();
    let what: Vec<String> = p.changes.iter().map(|(k, v)| format!("{k}={v}")).collect();
    o.push_str(&format!(
        "# Written by `repro audit --change {}`: the order audit found safe on this version.\n",
        what.join(" --change ")
    ));
    o.push_str("name: audit-change\n");
    o.push_str(&format!("topology: {topology}\n"));
    o.push_str("issue: https://github.com/k3s-io/k3s/issues/12753\n");
    o.push_str(&format!(
        "summary: {} on every server in the order repro audit planned, no start refused\n",
        what.join(", ")
    ));
    o.push_str("steps:\n");
    let served = c.distro.facts().served_agent_keys;
    for s in &p.steps {
        o.push_str(&format!(
            "  - name: set {} on {} and restart it\n",
            what.join(", "),
            s.node
        ));
        o.push_str(&format!(
            "    why: {}\n",
            serde_json::Value::String(s.why.clone())
        ));
        let set: Vec<String> = (s.set.iter())
            .map(|(k, v)| format!("{k}: {}", yaml_scalar(v)))
            .collect();
        o.push_str(&format!(
            "    config:\n      {}: {{{}}}\n",
            s.node,
            set.join(", ")
        ));
        o.push_str(&format!("    restart: [{}]\n", s.node));
        let mut expect = vec!["ready: up".to_string(), "fatal: down".to_string()];
        // A served key's signal is told on etcd-only nodes (checks/signals.yaml), where the
        // bug shows.
        let etcd_only = (c.members.iter()).any(|m| m.name == s.node && m.role == Role::Etcd);
        for (k, v) in s.set.iter().filter(|_| etcd_only) {
            if served.contains(&k.as_str()) && (v == "true" || v == "false") {
                expect.push(format!("{k}: {}", if v == "true" { "up" } else { "down" }));
            }
        }
        o.push_str(&format!(
            "    expect:\n      {}: {{{}}}\n",
            s.node,
            expect.join(", ")
        ));
    }
    o
}

/// A value as YAML: booleans and numbers bare, anything else a JSON string.
fn yaml_scalar(v: &str) -> String {
    if v == "true" || v == "false" || v.parse::<i64>().is_ok() {
        v.to_string()
    } else {
        serde_json::Value::String(v.to_string()).to_string()
    }
}
