//! The first start of a cluster: which nodes each node waits for (k3s's rules), and the stages
//! `repro plan` shows. Below both the plan and the bug world, which each read it.

use indexmap::IndexMap;
use serde::Serialize;

use crate::raw::Role;

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub(crate) struct PlannedNode {
    pub(crate) name: String,
    pub(crate) role: Role,
    pub(crate) init: bool,
    pub(crate) join: Option<String>,
    pub(crate) deferred: bool,
    /// Extra container env from the topology (the token is added at run time, never planned).
    pub(crate) env: IndexMap<String, String>,
}

impl From<&crate::scenario::Node> for PlannedNode {
    /// A topology's node as the plan (and the start order) knows it.
    fn from(n: &crate::scenario::Node) -> PlannedNode {
        PlannedNode {
            name: n.name.clone(),
            role: n.role,
            init: n.init,
            join: n.join.clone(),
            deferred: n.deferred,
            env: n.env.clone(),
        }
    }
}

/// What each node of the first start waits for: the nodes whose boot must be ready before it
/// may start, as k3s's source allows (docs/k3s-behaviour.md §10). Deferred nodes are
/// left out: steps start them.
///
/// - The init node waits for nothing.
/// - A server that runs etcd waits for the server it joins and for the etcd joiner before it
///   in file order: etcd admits one learner at a time (`MemberAddAsLearner`; a second is
///   refused with "too many learner members"), and a joiner's ready line comes only once it is
///   promoted, so the next joiner starts after it.
/// - A control-plane-only server waits only for the server it joins: it reaches etcd through
///   its own etcd proxy, whose first endpoint is that server (pkg/etcd/etcdproxy.go), so it
///   needs no other joiner.
/// - An agent waits for the server it joins and, when that server runs no apiserver (an
///   etcd-only node only proxies to one), for every server that runs one.
pub(crate) fn start_needs(nodes: &[PlannedNode]) -> IndexMap<String, Vec<String>> {
    let live: Vec<&PlannedNode> = nodes.iter().filter(|n| !n.deferred).collect();
    let known = |name: &str| live.iter().any(|n| n.name == name);
    let apiservers: Vec<&str> = live
        .iter()
        .filter(|n| n.role.runs_apiserver())
        .map(|n| n.name.as_str())
        .collect();
    let mut needs = IndexMap::new();
    let mut previous_joiner: Option<&str> = None;
    for n in &live {
        let mut want: Vec<String> = Vec::new();
        let add = |name: &str, want: &mut Vec<String>| {
            if known(name) && name != n.name && !want.iter().any(|w| w == name) {
                want.push(name.to_string());
            }
        };
        if let Some(j) = &n.join {
            add(j, &mut want);
        }
        if !n.init && n.role.runs_etcd() {
            if let Some(p) = previous_joiner {
                add(p, &mut want);
            }
            previous_joiner = Some(&n.name);
        }
        if n.role == Role::Agent {
            let joins_apiserver = n
                .join
                .as_deref()
                .and_then(|j| live.iter().find(|m| m.name == j))
                .is_some_and(|m| m.role.runs_apiserver());
            if !joins_apiserver {
                for a in &apiservers {
                    add(a, &mut want);
                }
            }
        }
        needs.insert(n.name.clone(), want);
    }
    needs
}

/// The stages `repro plan` shows: a node's stage is one after the latest of the nodes it needs
/// (the init node's is the first), nodes of a stage in file order. The runner does not wait for
/// whole stages: each node starts as soon as the nodes it needs are ready. A node whose needs
/// cannot be met (a cycle, which validation rules out) cannot make it loop: the relaxation is
/// bounded.
pub(crate) fn start_order(nodes: &[PlannedNode]) -> Vec<Vec<String>> {
    stages(&start_needs(nodes))
}

pub(crate) fn stages(needs: &IndexMap<String, Vec<String>>) -> Vec<Vec<String>> {
    let mut stage: IndexMap<&str, usize> = IndexMap::new();
    // Longest path by relaxation, at most one round per node.
    for _ in 0..=needs.len() {
        let mut changed = false;
        for (n, want) in needs {
            let s = want
                .iter()
                .map(|w| stage.get(w.as_str()).map(|s| s + 1))
                .try_fold(0, |acc, s| s.map(|s| acc.max(s)));
            if let Some(s) = s {
                if stage.get(n.as_str()) != Some(&s) {
                    stage.insert(n, s);
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    let depth = stage.values().max().map_or(0, |m| m + 1);
    (0..depth)
        .map(|d| {
            needs
                .keys()
                .filter(|n| stage.get(n.as_str()) == Some(&d))
                .cloned()
                .collect()
        })
        .filter(|g: &Vec<String>| !g.is_empty())
        .collect()
}
