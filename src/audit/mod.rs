//! `repro audit`: whether a running k3s or RKE2 split-role cluster is affected by k3s #12753, and
//! how to change a critical key safely (docs/audit.md).
//!
//! What each node runs with and which start is refused are explore's model
//! (`crate::explore::model`: `Rules`, `predict`), and which servers a buggy etcd-only joiner may
//! have read its served keys from is the bug world's (`crate::bug_world::live_reach`): this
//! module only gathers a cluster into their terms and says what they answer. Its inputs
//! (`input.rs`: config files, a saved node list; `live.rs`: a live cluster through a
//! kubeconfig), the answer (here), the safe order of a change (`change.rs`) and the outputs
//! (`render.rs`) are pure but for reading files and the cluster.

pub(crate) mod change;
pub(crate) mod input;
pub(crate) mod live;
pub(crate) mod render;

use std::collections::{BTreeMap, BTreeSet};

use distro::{Distro, Version};
use serde::Serialize;

use crate::bug_world::BOOTSTRAP_FIX;
use crate::explore::model::{self, Boot, Config, NodeInfo, Rules};
use crate::raw::Role;

/// The schema version of `--format json` (schema/audit.schema.json).
pub(crate) const SCHEMA_VERSION: u32 = 1;

/// One node of the audited cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Member {
    pub(crate) name: String,
    pub(crate) role: Role,
    pub(crate) version: Option<Version>,
    /// The node it joined (its `server:` URL's host, as a node name), if any.
    pub(crate) join: Option<String>,
    /// What it was last started with (its node-args annotation): what it runs now.
    pub(crate) running: Option<Config>,
    /// What its config files say: what it starts with next.
    pub(crate) configured: Option<Config>,
}

impl Member {
    fn info(&self) -> NodeInfo {
        NodeInfo {
            name: self.name.clone(),
            role: self.role,
            init: self.join.is_none(),
            join: self.join.clone(),
        }
    }

    /// What it runs now: the annotation, else (files only) its files.
    fn now(&self) -> Option<&Config> {
        self.running.as_ref().or(self.configured.as_ref())
    }

    /// What it starts with next: its files, else the annotation.
    fn next(&self) -> Option<&Config> {
        self.configured.as_ref().or(self.running.as_ref())
    }
}

/// A cluster as audit reads it.
#[derive(Debug, Clone)]
pub(crate) struct Cluster {
    pub(crate) distro: Distro,
    /// Where it was read from, in words (a kubeconfig's context, files, a node list).
    pub(crate) source: String,
    pub(crate) members: Vec<Member>,
}

/// Whether `v` of `d` has the etcd-only bootstrap fix: `None` when the table cannot place it.
pub(crate) fn has_fix(d: Distro, v: &Version) -> Option<bool> {
    d.changes().get(BOOTSTRAP_FIX)?.release_set().placement(v)
}

/// The first release of `v`'s line with the fix, if the table lists the line.
pub(crate) fn fix_release(d: Distro, v: &Version) -> Option<Version> {
    let set = d.changes().get(BOOTSTRAP_FIX)?.release_set();
    set.first_in_line(v).cloned()
}

/// Where a value a node runs with comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Source {
    /// The server whose config gives it (the node itself for its own).
    pub(crate) server: String,
    pub(crate) value: Option<String>,
}

/// One server's line of one key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct KeyOnNode {
    pub(crate) node: String,
    /// In its config files (what its next start uses); `None`: not given, or the key's default.
    pub(crate) configured: Option<String>,
    /// What it was last started with.
    pub(crate) started_with: Option<String>,
    /// The value it runs with: its own, or (a buggy etcd-only joiner, a served key) the value
    /// of each server its agent may have reached.
    pub(crate) runs_with: Vec<Source>,
    /// Runs with another server's value that differs from its own.
    pub(crate) borrowed: bool,
    /// Configured differently from what it was started with (edited, not restarted).
    pub(crate) pending: bool,
    /// An etcd member whose value of this critical key the other members do not share.
    pub(crate) unshared: bool,
    /// What the node's last boot in the logs showed of the key's feature (`up`, `down`,
    /// `unknown`), or `not observed` (no log of it, or no signal of that name); absent when no
    /// logs were given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) observed: Option<String>,
}

/// One key across the servers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct KeyReport {
    pub(crate) key: String,
    pub(crate) critical: bool,
    /// The agent takes it from the config its server serves.
    pub(crate) served: bool,
    pub(crate) nodes: Vec<KeyOnNode>,
}

/// A start the model says is refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Refusal {
    pub(crate) node: String,
    /// The server its start is checked against.
    pub(crate) against: String,
    pub(crate) keys: Vec<String>,
    pub(crate) why: String,
}

/// A node as the report shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct NodeLine {
    pub(crate) name: String,
    pub(crate) role: &'static str,
    pub(crate) version: Option<String>,
    pub(crate) joins: Option<String>,
    /// An etcd-only joiner on a version without the fix (`None`: the table cannot place it).
    pub(crate) borrows_served_keys: Option<bool>,
}

/// What audit says of a cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Report {
    pub(crate) schema_version: u32,
    pub(crate) distribution: &'static str,
    pub(crate) source: String,
    pub(crate) consistent: bool,
    pub(crate) nodes: Vec<NodeLine>,
    pub(crate) keys: Vec<KeyReport>,
    pub(crate) refused_at_next_start: Vec<Refusal>,
    pub(crate) fixes: Vec<String>,
}

/// The keys audit reports: every served key of the distribution, and every critical or
/// from-server key some node sets.
fn keys_of(c: &Cluster, rules: &Rules) -> Vec<String> {
    let mut keys: BTreeSet<String> = (c.distro.facts().served_agent_keys.iter())
        .map(|k| k.to_string())
        .collect();
    for m in &c.members {
        for cfg in [&m.running, &m.configured].into_iter().flatten() {
            keys.extend(
                cfg.keys()
                    .filter(|k| rules.critical.contains(*k) || rules.from_server.contains(*k))
                    .filter(|k| !crate::redact::is_secret_key(k))
                    .cloned(),
            );
        }
    }
    keys.into_iter().collect()
}

/// Whether `m` is an etcd-only joiner that borrows served keys on its version.
fn borrows(c: &Cluster, m: &Member) -> Option<bool> {
    if m.role != Role::Etcd || m.join.is_none() {
        return Some(false);
    }
    m.version
        .as_ref()
        .map_or(Some(true), |v| has_fix(c.distro, v).map(|fixed| !fixed))
}

/// The values `m` may run `key` with (see [`KeyOnNode::runs_with`]).
fn runs_with(c: &Cluster, rules: &Rules, m: &Member, key: &str) -> Vec<Source> {
    let own = || Source {
        server: m.name.clone(),
        value: m.now().and_then(|cfg| rules.value(cfg, key)),
    };
    let served = c.distro.facts().served_agent_keys.contains(&key);
    let Some(joined) = m.join.as_deref().filter(|_| served) else {
        return vec![own()];
    };
    if borrows(c, m) == Some(false) {
        return vec![own()];
    }
    let apiservers: Vec<String> = (c.members.iter())
        .filter(|n| n.role.runs_apiserver())
        .map(|n| n.name.clone())
        .collect();
    let reach = crate::bug_world::live_reach(&m.name, joined, &apiservers);
    let mut out: Vec<Source> = Vec::new();
    for server in reach.servers() {
        if out.iter().any(|s| s.server == server) {
            continue;
        }
        let value = (c.members.iter())
            .find(|n| n.name == server)
            .and_then(Member::now)
            .and_then(|cfg| rules.value(cfg, key));
        out.push(Source { server, value });
    }
    out
}

/// The starts the model refuses: each server whose next start bootstraps, with its files'
/// config, against the servers as they run now.
fn refusals(c: &Cluster, rules: &Rules, keys: &[String]) -> Vec<Refusal> {
    let nodes: Vec<NodeInfo> = c.members.iter().map(Member::info).collect();
    let running: BTreeMap<String, Config> = (c.members.iter())
        .filter(|m| m.role.is_server())
        .filter_map(|m| m.now().map(|cfg| (m.name.clone(), cfg.clone())))
        .collect();
    let mut out = Vec::new();
    for (m, info) in c.members.iter().zip(&nodes) {
        let Some(next) = m.next() else { continue };
        if !info.bootstraps(false) {
            continue;
        }
        if let Boot::Refused(keys) =
            model::predict(rules, &nodes, info, false, next, &running, keys)
        {
            let against = m.join.clone().unwrap_or_default();
            let why = format!(
                "a {} node checks its critical keys against {against} on every start, and they differ: {}",
                m.role.as_str(),
                keys.join(", ")
            );
            out.push(Refusal {
                node: m.name.clone(),
                against,
                keys,
                why,
            });
        }
    }
    out
}

/// One key's lines across the servers.
fn key_report(c: &Cluster, rules: &Rules, key: &str) -> KeyReport {
    let servers: Vec<&Member> = c.members.iter().filter(|m| m.role.is_server()).collect();
    let critical = rules.critical.contains(key);
    // The etcd members' running values: the ones fewer members share are "unshared".
    let etcd_values: Vec<(String, Option<String>)> = (servers.iter())
        .filter(|m| m.role.runs_etcd())
        .map(|m| {
            (
                m.name.clone(),
                m.now().and_then(|cfg| rules.value(cfg, key)),
            )
        })
        .collect();
    let distinct: BTreeSet<&Option<String>> = etcd_values.iter().map(|(_, v)| v).collect();
    let majority = distinct
        .iter()
        .max_by_key(|v| etcd_values.iter().filter(|(_, x)| x == **v).count())
        .map(|v| (*v).clone());
    let nodes = servers
        .iter()
        .map(|m| {
            let configured = m.configured.as_ref().and_then(|cfg| rules.value(cfg, key));
            let started_with = m.running.as_ref().and_then(|cfg| rules.value(cfg, key));
            let own = m.now().and_then(|cfg| rules.value(cfg, key));
            let runs_with = runs_with(c, rules, m, key);
            let borrowed = runs_with
                .iter()
                .any(|s| s.server != m.name && s.value != own);
            let pending =
                m.configured.is_some() && m.running.is_some() && configured != started_with;
            let unshared = critical
                && distinct.len() > 1
                && m.role.runs_etcd()
                && majority.as_ref().is_some_and(|maj| *maj != own);
            KeyOnNode {
                node: m.name.clone(),
                configured: m.configured.as_ref().and(configured),
                started_with,
                runs_with,
                borrowed,
                pending,
                unshared,
                observed: None,
            }
        })
        .collect();
    KeyReport {
        key: key.to_string(),
        critical,
        served: rules.from_server.contains(key),
        nodes,
    }
}

/// The fix in words, for what the report found.
fn fixes(c: &Cluster, keys: &[KeyReport], refused: &[Refusal]) -> Vec<String> {
    let mut out = Vec::new();
    for r in refused {
        out.push(format!(
            "before restarting {}, give it the values {} runs with for {} (or change {} first: `repro audit --change KEY=VALUE` prints a safe order)",
            r.node,
            r.against,
            r.keys.join(", "),
            r.against
        ));
    }
    for k in keys {
        let unshared: Vec<&str> = (k.nodes.iter())
            .filter(|n| n.unshared)
            .map(|n| n.node.as_str())
            .collect();
        if !unshared.is_empty() {
            out.push(format!(
                "align `{}` on every server: {} run(s) a value the other etcd members do not share ({} never checks an etcd member with data again)",
                k.key,
                unshared.join(", "),
                c.distro.name()
            ));
        }
        let borrowed: Vec<&KeyOnNode> = k.nodes.iter().filter(|n| n.borrowed).collect();
        for n in borrowed {
            let m = c.members.iter().find(|m| m.name == n.node);
            let upgrade = m
                .and_then(|m| m.version.as_ref())
                .and_then(|v| fix_release(c.distro, v))
                .map_or_else(
                    || "a release with the fix of k3s #12753".to_string(),
                    |v| v.to_string(),
                );
            out.push(format!(
                "{} may run `{}` with another server's value: set it the same on {} and every server it may reach, or upgrade to {upgrade}",
                n.node,
                k.key,
                n.node
            ));
        }
    }
    out
}

/// The logs' evidence: `seen` maps (node, key) to what its last boot showed; every server's
/// key gets it, or `not observed`.
pub(crate) fn add_evidence(r: &mut Report, seen: &BTreeMap<(String, String), String>) {
    for k in &mut r.keys {
        for n in &mut k.nodes {
            let got = seen.get(&(n.node.clone(), k.key.clone()));
            n.observed = Some(got.cloned().unwrap_or_else(|| "not observed".to_string()));
        }
    }
}

/// What the model says of `c` (see [`Report`]).
pub(crate) fn audit(c: &Cluster) -> Report {
    let rules = Rules::of(c.distro);
    let keys = keys_of(c, &rules);
    let key_reports: Vec<KeyReport> = keys.iter().map(|k| key_report(c, &rules, k)).collect();
    let refused = refusals(c, &rules, &keys);
    let consistent = refused.is_empty()
        && key_reports
            .iter()
            .flat_map(|k| &k.nodes)
            .all(|n| !n.borrowed && !n.pending && !n.unshared);
    let fixes = fixes(c, &key_reports, &refused);
    Report {
        schema_version: SCHEMA_VERSION,
        distribution: c.distro.name(),
        source: c.source.clone(),
        consistent,
        nodes: c
            .members
            .iter()
            .map(|m| NodeLine {
                name: m.name.clone(),
                role: m.role.as_str(),
                version: m.version.as_ref().map(ToString::to_string),
                joins: m.join.clone(),
                borrows_served_keys: borrows(c, m),
            })
            .collect(),
        keys: key_reports,
        refused_at_next_start: refused,
        fixes,
    }
}

#[cfg(test)]
mod tests;
