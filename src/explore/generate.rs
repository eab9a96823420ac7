//! Sequences of config edits and restarts over a booted topology, and each one written as an
//! ordinary check file whose `expect:` is the model's prediction (`model.rs`). Pure.
//!
//! Strategies (docs/explore.md):
//! - `orders`: every restart order of one key's change over the servers, reduced by symmetry
//!   (nodes of one role joining the same node are interchangeable) and by config source (a
//!   step's outcome depends only on which of the nodes the restarted node may take config from
//!   were changed before it);
//! - `covering`: several keys at once, values chosen so every ordered pair of servers disagrees
//!   both ways on every key somewhere (binary codes and their complements);
//! - `random`: seeded random subsets, orders and values.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::raw::Role;
use crate::scenario::{Expected, Shows};

use super::liveness::Action;
use super::model::{self, Boot, Config, NodeInfo, Rules};

/// One key under search: its two values (the topology's, and the other one), and the signal
/// that shows it.
#[derive(Debug, Clone)]
pub(crate) struct KeySpace {
    pub(crate) key: String,
    /// `[the default, the changed value]`.
    pub(crate) values: [String; 2],
    /// Written unquoted in YAML (a boolean).
    pub(crate) boolean: bool,
    pub(crate) signal: String,
    pub(crate) shows: Shows,
    /// Roles on which the signal can be told (empty: every role).
    pub(crate) roles: Vec<Role>,
}

/// One step of a sequence: set keys on one node, then restart it; or, in a lifecycle sequence
/// (`lifecycle.rs`), a lifecycle action (`set` empty, `node` the first node it names).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SeqStep {
    pub(crate) node: String,
    pub(crate) set: BTreeMap<String, String>,
    /// Absent from the config-edit strategies' steps (campaign.json stays as it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) action: Option<Action>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Sequence {
    pub(crate) id: String,
    pub(crate) strategy: String,
    pub(crate) steps: Vec<SeqStep>,
}

/// SplitMix64: a seed replays the same campaign on every build (no dependence on `rand`'s
/// algorithm choices).
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// The servers a sequence may edit (started with the cluster; agents hold no server keys).
fn editable(nodes: &[NodeInfo]) -> Vec<&NodeInfo> {
    nodes.iter().filter(|n| n.is_server()).collect()
}

/// Interchangeable nodes share a class: the same role and the same join target.
pub(super) fn class_of(n: &NodeInfo) -> String {
    format!("{}<{}", n.role.as_str(), n.join.as_deref().unwrap_or("-"))
}

/// The nodes `n` may take config from: the node it joins and every node with an apiserver (the
/// agent load balancer's saved servers).
fn sources<'a>(n: &NodeInfo, nodes: &'a [NodeInfo]) -> Vec<&'a NodeInfo> {
    nodes
        .iter()
        .filter(|m| m.name != n.name)
        .filter(|m| {
            Some(&m.name) == n.join.as_ref() || matches!(m.role, Role::ControlPlane | Role::All)
        })
        .collect()
}

/// The most restart orders visited per key (#42): the search is bounded before it is built,
/// whatever the topology (an 11-server one has 39.9 million orders before reduction).
pub(crate) const MAX_ORDER_VISITS: usize = 10_000;

/// Whether `a` and `b` are twins: swapping them maps the topology onto itself (same class, the
/// same sources apart from each other, sources of the same nodes), so two orders that differ
/// only by their swap have the same signature.
pub(super) fn twins(a: &NodeInfo, b: &NodeInfo, nodes: &[NodeInfo]) -> bool {
    let has = |n: &NodeInfo, m: &str| sources(n, nodes).iter().any(|s| s.name == m);
    class_of(a) == class_of(b)
        && has(a, &b.name) == has(b, &a.name)
        && nodes
            .iter()
            .filter(|m| m.name != a.name && m.name != b.name)
            .all(|m| has(a, &m.name) == has(b, &m.name) && has(m, &a.name) == has(m, &b.name))
}

/// Visits the restart orders of `servers` in lexicographic order of their positions, one per
/// arrangement of twins (a twin never goes before its twin of a lower position: the lowest
/// order of every signature is among those visited), at most [`MAX_ORDER_VISITS`].
fn each_order<'a>(
    servers: &[&'a NodeInfo],
    twin: &[Vec<bool>],
    mut visit: impl FnMut(&[&'a NodeInfo]),
) {
    fn go<'a>(
        servers: &[&'a NodeInfo],
        twin: &[Vec<bool>],
        used: &mut Vec<bool>,
        order: &mut Vec<&'a NodeInfo>,
        left: &mut usize,
        visit: &mut dyn FnMut(&[&'a NodeInfo]),
    ) {
        if order.len() == servers.len() {
            *left = left.saturating_sub(1);
            visit(order);
            return;
        }
        for i in 0..servers.len() {
            if *left == 0 {
                return;
            }
            if used[i] || (0..i).any(|j| !used[j] && twin[j][i]) {
                continue;
            }
            used[i] = true;
            order.push(servers[i]);
            go(servers, twin, used, order, left, visit);
            order.pop();
            used[i] = false;
        }
    }
    let mut left = MAX_ORDER_VISITS;
    let mut used = vec![false; servers.len()];
    go(
        servers,
        twin,
        &mut used,
        &mut Vec::new(),
        &mut left,
        &mut visit,
    );
}

/// Every restart order of the servers, one representative per class of equivalent orders (as
/// positions in `editable(nodes)`), enumerated by twins (never every permutation) and bounded by
/// [`MAX_ORDER_VISITS`]. The same for every key: a campaign computes it once.
pub(crate) fn order_classes(nodes: &[NodeInfo]) -> Vec<Vec<usize>> {
    let servers: Vec<&NodeInfo> = editable(nodes);
    let twin: Vec<Vec<bool>> = (servers.iter())
        .map(|a| servers.iter().map(|b| twins(a, b, nodes)).collect())
        .collect();
    let index = |n: &NodeInfo| servers.iter().position(|s| s.name == n.name).unwrap_or(0);
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    each_order(&servers, &twin, |order| {
        // A step's signature: the restarted node's class and, for each of its sources, its
        // class and whether it was changed already.
        let mut changed: BTreeSet<&str> = BTreeSet::new();
        let mut sig = Vec::new();
        for n in order {
            let mut src: Vec<(String, bool)> = sources(n, nodes)
                .iter()
                .map(|m| (class_of(m), changed.contains(m.name.as_str())))
                .collect();
            src.sort();
            sig.push((class_of(n), src));
            changed.insert(&n.name);
        }
        if seen.insert(sig) {
            out.push(order.iter().map(|n| index(n)).collect());
        }
    });
    out
}

/// The sequence of the `i`-th order class (`order`, from [`order_classes`]) for `key`.
pub(crate) fn order_sequence(
    nodes: &[NodeInfo],
    key: &KeySpace,
    i: usize,
    order: &[usize],
) -> Sequence {
    let servers = editable(nodes);
    Sequence {
        id: format!("o{}-{}", i + 1, key.key),
        strategy: "orders".into(),
        steps: (order.iter())
            .map(|&n| SeqStep {
                node: servers[n].name.clone(),
                set: [(key.key.clone(), key.values[1].clone())].into(),
                action: None,
            })
            .collect(),
    }
}

/// Every restart order of `key` changed on every server, one representative per class of
/// equivalent orders.
#[cfg(test)]
pub(crate) fn orders(nodes: &[NodeInfo], key: &KeySpace) -> Vec<Sequence> {
    (order_classes(nodes).iter().enumerate())
        .map(|(i, o)| order_sequence(nodes, key, i, o))
        .collect()
}

/// Rows of a covering array over the servers: every ordered pair of servers disagrees both ways
/// on every key in some row (each key reads the node index rotated by its own position, so keys
/// also differ from each other).
pub(crate) fn covering(nodes: &[NodeInfo], keys: &[KeySpace]) -> Vec<Sequence> {
    let servers = editable(nodes);
    let n = servers.len();
    let bits = (usize::BITS - (n.max(2) - 1).leading_zeros()) as usize;
    let mut out = Vec::new();
    for bit in 0..bits {
        for flip in [false, true] {
            let mut steps = Vec::new();
            for (i, s) in servers.iter().enumerate() {
                let set: BTreeMap<String, String> = keys
                    .iter()
                    .enumerate()
                    .filter_map(|(k, ks)| {
                        let on = (((i + k) % n) >> bit) & 1 == 1;
                        (on != flip).then(|| (ks.key.clone(), ks.values[1].clone()))
                    })
                    .collect();
                if !set.is_empty() {
                    steps.push(SeqStep {
                        node: s.name.clone(),
                        set,
                        action: None,
                    });
                }
            }
            if !steps.is_empty() {
                out.push(Sequence {
                    id: format!("c{}", out.len() + 1),
                    strategy: "covering".into(),
                    steps,
                });
            }
        }
    }
    out
}

/// `count` random sequences: a random non-empty run of servers in random order, each setting a
/// random value of each key.
pub(crate) fn random(
    nodes: &[NodeInfo],
    keys: &[KeySpace],
    rng: &mut Rng,
    count: usize,
) -> Vec<Sequence> {
    let servers = editable(nodes);
    (0..count)
        .map(|i| {
            let len = 1 + rng.below(servers.len() + 1);
            let steps = (0..len)
                .map(|_| {
                    let n = servers[rng.below(servers.len())];
                    let set = keys
                        .iter()
                        .map(|k| (k.key.clone(), k.values[rng.below(2)].clone()))
                        .collect();
                    SeqStep {
                        node: n.name.clone(),
                        set,
                        action: None,
                    }
                })
                .collect();
            Sequence {
                id: format!("r{}", i + 1),
                strategy: "random".into(),
                steps,
            }
        })
        .collect()
}

/// What the check of a sequence needs besides the sequence.
pub(crate) struct Context<'a> {
    pub(crate) topology: &'a str,
    pub(crate) nodes: &'a [NodeInfo],
    /// Each node's config as the topology starts it (the keys the model compares).
    pub(crate) base: BTreeMap<String, Config>,
    pub(crate) rules: &'a Rules,
    pub(crate) keys: &'a [KeySpace],
}

/// Per step (0-based) and node: the observed values to write under `bug:`.
pub(crate) type Bug = BTreeMap<(usize, String), BTreeMap<String, String>>;

fn yaml_value(k: &KeySpace, v: &str) -> String {
    if k.boolean {
        v.to_string()
    } else {
        serde_json::to_string(v).unwrap_or_default()
    }
}

/// A text value as a check writes it (a JSON string is a YAML one).
pub(super) fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// The head of a generated check, up to `steps:`: what wrote it (`by`, a comment), its name,
/// topology, issue, summary, description and sources.
pub(super) fn check_head(
    by: &str,
    name: &str,
    topology: &str,
    issue: &str,
    summary: &str,
    description: &str,
    sources: &[&str],
) -> String {
    let mut y = format!(
        "# {by}\nname: {name}\ntopology: {topology}\nissue: {issue}\nsummary: {}\ndescription: |\n",
        quote(summary)
    );
    for l in description.lines() {
        y.push_str(&format!("  {l}\n"));
    }
    y.push_str("sources:\n");
    for s in sources {
        y.push_str(&format!("  - {s}\n"));
    }
    y.push_str("steps:\n");
    y
}

/// A death the rules did not want (`observed` says the node's readiness `ready` went down):
/// the step judges only what the death showed (readiness, the fatal or panic line, the keys
/// named); a signal of a node that died before deciding it has no value in either world.
pub(super) fn judge_only_the_death(
    expect: &mut Vec<String>,
    observed: Option<&BTreeMap<String, String>>,
    ready: &[&str],
) {
    let died = |b: &&BTreeMap<String, String>| {
        (ready.iter()).any(|r| b.get(*r).map(String::as_str) == Some("down"))
    };
    if let Some(b) = observed.filter(died) {
        expect.retain(|e| e.split(':').next().is_some_and(|sig| b.contains_key(sig)));
    }
}

/// A node's `bug:` items: what a run observed, less what the step expects already (a panic
/// where k3s refuses: the node is down in both worlds; the validator refuses a `bug:` equal
/// to `expect:`).
pub(super) fn bug_items(expect: &[String], observed: &BTreeMap<String, String>) -> Vec<String> {
    let expected = |s: &str, v: &str| {
        expect.contains(&format!("{s}: {v}")) || expect.contains(&format!("{s}: {}", quote(v)))
    };
    (observed.iter())
        .filter(|(s, v)| !expected(s, v))
        .map(|(s, v)| match v.as_str() {
            ANY_VALUE => format!("{s}: {ANY_VALUE}"),
            v => format!("{s}: {}", quote(v)),
        })
        .collect()
}

/// The check file of `seq`: each step edits one node and restarts it, and expects what the model
/// predicts (`bug:` holds what a run observed instead, for a minimal finding's check).
pub(crate) fn render(
    ctx: &Context,
    seq: &Sequence,
    name: &str,
    summary: &str,
    description: &str,
    bug: &Bug,
) -> String {
    let key_names: Vec<String> = ctx.keys.iter().map(|k| k.key.clone()).collect();
    let mut files = ctx.base.clone();
    let mut running = ctx.base.clone();
    let mut y = check_head(
        "Written by `repro explore`: each step's expect is the model of k3s's rules (docs/explore.md).",
        name,
        ctx.topology,
        "https://github.com/k3s-io/k3s/blob/master/pkg/cluster/bootstrap.go",
        summary,
        description,
        &[
            "https://github.com/k3s-io/k3s/blob/master/pkg/agent/config/config.go",
            "https://github.com/k3s-io/k3s/blob/master/pkg/daemons/config/types.go",
        ],
    );
    for (i, st) in seq.steps.iter().enumerate() {
        let Some(node) = ctx.nodes.iter().find(|n| n.name == st.node) else {
            continue;
        };
        let file = files.entry(st.node.clone()).or_default();
        for (k, v) in &st.set {
            file.insert(k.clone(), v.clone());
        }
        let own = file.clone();
        let mut others = running.clone();
        others.remove(&st.node);
        y.push_str(&step_head(ctx, st));
        let ready = if node.role == Role::Agent {
            "agent-ready"
        } else {
            "ready"
        };
        let (mut expect, shown) =
            match model::predict(ctx.rules, ctx.nodes, node, false, &own, &others, &key_names) {
                Boot::Refused(diff) => {
                    running.remove(&st.node);
                    (refused_expect(ready, &diff), Vec::new())
                }
                // Its join server is down: k3s dies validating the token, naming no key.
                Boot::Fails(_) => {
                    running.remove(&st.node);
                    (fails_expect(ready), Vec::new())
                }
                Boot::Up(values) => {
                    running.insert(st.node.clone(), own);
                    up_expect(ctx, node, ready, &values)
                }
            };
        let observed = bug.get(&(i, st.node.clone()));
        judge_only_the_death(&mut expect, observed, &[ready]);
        y.push_str(&format!(
            "    expect:\n      {}: {{{}}}\n",
            st.node,
            expect.join(", ")
        ));
        if let Some(b) = observed {
            let items = bug_items(&expect, b);
            if !items.is_empty() {
                y.push_str(&format!(
                    "    bug:\n      {}: {{{}}}\n",
                    st.node,
                    items.join(", ")
                ));
            }
        } else if bug.is_empty() && !shown.is_empty() {
            // A search sequence predicts nothing about a bug world: on a buggy release the value
            // depends on which server the load balancer reaches (`any`; the oracle judges).
            let items: Vec<String> = shown.iter().map(|s| format!("{s}: any")).collect();
            y.push_str(&format!(
                "    bug:\n      {}: {{{}}}\n",
                st.node,
                items.join(", ")
            ));
        }
    }
    y
}

/// A step's name, config edit and restart, as the check writes them.
fn step_head(ctx: &Context, st: &SeqStep) -> String {
    if st.set.is_empty() {
        // A restart with nothing changed (a distinguishing sequence's last step): a check
        // refuses an empty config edit.
        return format!(
            "  - name: {}\n    restart: [{}]\n",
            quote(&format!("restart {} again, nothing changed", st.node)),
            st.node
        );
    }
    let sets: Vec<String> = (st.set.iter())
        .map(|(k, v)| {
            let ks = ctx.keys.iter().find(|x| &x.key == k);
            format!(
                "{k}: {}",
                ks.map_or_else(|| quote(v), |ks| yaml_value(ks, v))
            )
        })
        .collect();
    let what: Vec<String> = st.set.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!(
        "  - name: {}\n    config:\n      {}: {{{}}}\n    restart: [{}]\n",
        quote(&format!(
            "set {} on {} and restart it",
            what.join(", "),
            st.node
        )),
        st.node,
        sets.join(", "),
        st.node
    )
}

/// What a step expects of a node the model says k3s refuses: down, fatal, naming `diff`, and
/// no Go panic (asked so every death is observed: a panic where k3s refuses is a `died`
/// finding, #38 point 5).
fn refused_expect(ready: &str, diff: &[String]) -> Vec<String> {
    vec![
        format!("{ready}: down"),
        "fatal: up".into(),
        "panic: down".into(),
        format!("config-mismatch: {}", quote(&diff.join(","))),
    ]
}

/// What a step expects of a node whose join server is down: k3s dies in `shouldBootstrapLoad`
/// (`failed to validate token`) before any key is compared.
fn fails_expect(ready: &str) -> Vec<String> {
    vec![
        format!("{ready}: down"),
        "fatal: up".into(),
        "panic: down".into(),
        "config-mismatch: none".into(),
    ]
}

/// What a step expects of a node the model lets up: ready, no death of any kind on a server
/// (a refusal naming keys, a fatal, a Go panic: the oracle reports each one), and each key's
/// value where its signal can be told; with the signals that show a key.
fn up_expect<'k>(
    ctx: &'k Context,
    node: &NodeInfo,
    ready: &str,
    values: &BTreeMap<String, Option<String>>,
) -> (Vec<String>, Vec<&'k str>) {
    let mut expect = vec![format!("{ready}: up")];
    let mut shown = Vec::new();
    if node.is_server() {
        expect.push("fatal: down".into());
        expect.push("panic: down".into());
        expect.push("config-mismatch: none".into());
    }
    for k in ctx.keys {
        if !(k.roles.is_empty() || k.roles.contains(&node.role)) {
            continue;
        }
        if let Some(Some(v)) = values.get(&k.key) {
            let e: Expected = expected_for(&k.shows, v);
            expect.push(format!("{}: {}", k.signal, quote(e.as_str())));
            shown.push(k.signal.as_str());
        }
    }
    (expect, shown)
}

/// Marks `any` under `bug:` for each prediction of `text` (a check [`render`] wrote) that its
/// validation refused at (line, column): the signal named there, of the node of that line, in
/// that step. Whether anything changed (nothing left to try when not).
pub(crate) fn any_where_refused(
    text: &str,
    problems: &[(u64, u64, String)],
    bug: &mut Bug,
) -> bool {
    let lines: Vec<&str> = text.lines().collect();
    let mut changed = false;
    for (line, column, _) in problems {
        let Some(l) = (*line as usize).checked_sub(1).and_then(|i| lines.get(i)) else {
            continue;
        };
        let step = lines[..*line as usize]
            .iter()
            .filter(|x| x.starts_with("  - name: "))
            .count();
        let Some((node, _)) = l.trim_start().split_once(':') else {
            continue;
        };
        let at: String = l
            .chars()
            .skip((*column as usize).saturating_sub(1))
            .collect();
        let Some((signal, _)) = at.split_once(':') else {
            continue;
        };
        let (signal, node) = (signal.trim().to_string(), node.trim().to_string());
        if step == 0 || signal.is_empty() || signal.contains(['{', ' ', ',']) {
            continue;
        }
        let entry = bug.entry((step - 1, node)).or_default();
        if entry.get(&signal).map(String::as_str) != Some(ANY_VALUE) {
            entry.insert(signal, ANY_VALUE.to_string());
            changed = true;
        }
    }
    changed
}

/// `any` under `bug:`: the bug world can show either value there.
const ANY_VALUE: &str = "any";

/// The observation that stands for the key's `value` (`up`/`down` of a state signal).
pub(crate) fn expected_for(s: &Shows, value: &str) -> Expected {
    match s.up_when {
        Some(w) if value == w.to_string() => Expected::Up,
        Some(_) => Expected::Down,
        None => Expected::Value(value.to_string()),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::explore::model::tests::node;

    fn nodes() -> Vec<NodeInfo> {
        crate::explore::model::tests::etcd_split()
    }

    /// The context of a check over `nodes`, each starting with an empty config.
    pub(crate) fn context<'a>(
        topology: &'a str,
        nodes: &'a [NodeInfo],
        rules: &'a Rules,
        keys: &'a [KeySpace],
    ) -> Context<'a> {
        Context {
            topology,
            nodes,
            base: nodes
                .iter()
                .map(|n| (n.name.clone(), Config::new()))
                .collect(),
            rules,
            keys,
        }
    }

    /// A run's observation that `node` panicked in `step` (0-based): down, `panic: up`.
    pub(crate) fn panicked(step: usize, node: &str) -> Bug {
        [(
            (step, node.to_string()),
            [
                ("ready".to_string(), "down".to_string()),
                ("panic".to_string(), "up".to_string()),
            ]
            .into(),
        )]
        .into()
    }

    fn registry() -> KeySpace {
        KeySpace {
            key: "embedded-registry".into(),
            values: ["false".into(), "true".into()],
            boolean: true,
            signal: "embedded-registry".into(),
            shows: Shows {
                key: "embedded-registry".into(),
                up_when: Some(true),
            },
            roles: vec![],
        }
    }

    #[test]
    fn orders_are_reduced_by_symmetry_and_source() {
        let seqs = orders(&nodes(), &registry());
        // 4! = 24 orders; etcd-2 and etcd-3 are interchangeable: 12 classes.
        assert_eq!(seqs.len(), 12);
        // every representative changes every server once
        for s in &seqs {
            let mut names: Vec<&str> = s.steps.iter().map(|x| x.node.as_str()).collect();
            names.sort();
            assert_eq!(names, ["cp-1", "etcd-1", "etcd-2", "etcd-3"]);
        }
        // a joiner changed first is among them (the order that shows #12753)
        assert!(seqs
            .iter()
            .any(|s| s.steps[0].node == "etcd-2" || s.steps[0].node == "etcd-3"));
        // nothing in the reduced set is a mere swap of etcd-2 and etcd-3
        let swapped = |s: &Sequence| -> Vec<String> {
            s.steps
                .iter()
                .map(|x| match x.node.as_str() {
                    "etcd-2" => "etcd-3".to_string(),
                    "etcd-3" => "etcd-2".to_string(),
                    o => o.to_string(),
                })
                .collect()
        };
        for (i, a) in seqs.iter().enumerate() {
            for b in &seqs[i + 1..] {
                let bn: Vec<String> = b.steps.iter().map(|x| x.node.clone()).collect();
                assert_ne!(swapped(a), bn);
            }
        }
    }

    /// #42: orders are enumerated by twins, never as every permutation: 11 servers plan at
    /// once whether interchangeable (etcd-split grown: 11!/8! orders visited) or all distinct (a
    /// chain of joins: no twins, the visits bounded).
    #[test]
    fn eleven_servers_plan_in_bounded_time_and_memory() {
        let mut wide = vec![node("etcd-1", Role::Etcd, None)];
        wide.extend((2..=9).map(|i| node(&format!("etcd-{i}"), Role::Etcd, Some("etcd-1"))));
        wide.extend((1..=2).map(|i| node(&format!("cp-{i}"), Role::ControlPlane, Some("etcd-1"))));
        let mut chain = vec![node("etcd-1", Role::Etcd, None)];
        chain.extend((2..=11).map(|i| {
            let join = format!("etcd-{}", i - 1);
            node(&format!("etcd-{i}"), Role::Etcd, Some(&join))
        }));
        for nodes in [wide, chain] {
            assert_eq!(editable(&nodes).len(), 11);
            let t = std::time::Instant::now();
            let classes = order_classes(&nodes);
            assert!(
                t.elapsed() < std::time::Duration::from_secs(5),
                "{:?}",
                t.elapsed()
            );
            assert!(!classes.is_empty() && classes.len() <= MAX_ORDER_VISITS);
            assert!(classes.iter().all(|o| o.len() == 11));
        }
    }

    #[test]
    fn covering_rows_separate_every_pair_both_ways() {
        let mut second = registry();
        second.key = "supervisor-metrics".into();
        let keys = [registry(), second];
        let rows = covering(&nodes(), &keys);
        let servers = ["etcd-1", "etcd-2", "etcd-3", "cp-1"];
        for k in &keys {
            for a in servers {
                for b in servers {
                    if a == b {
                        continue;
                    }
                    let has = |s: &Sequence, n: &str| {
                        s.steps
                            .iter()
                            .any(|x| x.node == n && x.set.contains_key(&k.key))
                    };
                    assert!(
                        rows.iter().any(|r| has(r, a) && !has(r, b)),
                        "{}: no row with {a} changed and {b} not",
                        k.key
                    );
                }
            }
        }
    }

    #[test]
    fn a_seed_replays_the_same_sequences() {
        let keys = [registry()];
        let a = random(&nodes(), &keys, &mut Rng::new(7), 5);
        let b = random(&nodes(), &keys, &mut Rng::new(7), 5);
        let c = random(&nodes(), &keys, &mut Rng::new(8), 5);
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn the_check_expects_the_model() {
        let rules = Rules::of(distro::Distro::K3s);
        let nodes = nodes();
        let keys = [registry()];
        let ctx = context("etcd-split", &nodes, &rules, &keys);
        let seq = Sequence {
            id: "t".into(),
            strategy: "orders".into(),
            steps: vec![
                SeqStep {
                    node: "etcd-2".into(),
                    set: [("embedded-registry".into(), "true".into())].into(),
                    action: None,
                },
                SeqStep {
                    node: "cp-1".into(),
                    set: [("embedded-registry".into(), "true".into())].into(),
                    action: None,
                },
            ],
        };
        let bug: Bug = [(
            (0, "etcd-2".to_string()),
            [("embedded-registry".to_string(), "down".to_string())].into(),
        )]
        .into();
        let y = render(&ctx, &seq, "explore-t", "s", "d", &bug);
        // every server boot the model lets up is watched for a death of any kind
        assert!(
            y.contains("etcd-2: {ready: up, fatal: down, panic: down, config-mismatch: none, embedded-registry: \"up\"}"),
            "{y}"
        );
        // a minimal check of a death judges only what the death showed
        let died = panicked(0, "etcd-2");
        let yd = render(&ctx, &seq, "explore-t", "s", "d", &died);
        assert!(
            yd.contains("expect:\n      etcd-2: {ready: up, panic: down}\n    bug:\n      etcd-2: {panic: \"up\", ready: \"down\"}"),
            "{yd}"
        );
        assert!(
            y.contains("cp-1: {ready: down, fatal: up, panic: down, config-mismatch: \"embedded-registry\"}"),
            "{y}"
        );
        assert!(
            y.contains("bug:\n      etcd-2: {embedded-registry: \"down\"}"),
            "{y}"
        );
        // A panic where the model says k3s refuses (cp-1, step 2): down in both worlds, so the
        // bug is the panic alone (the validator refuses a bug equal to the expect).
        let cp1_panicked = panicked(1, "cp-1");
        let yp = render(&ctx, &seq, "explore-t", "s", "d", &cp1_panicked);
        assert!(
            yp.contains("expect:\n      cp-1: {ready: down, panic: down}\n    bug:\n      cp-1: {panic: \"up\"}\n"),
            "{yp}"
        );
        // A restart with nothing changed (a distinguishing sequence's last step): no config edit.
        let again = Sequence {
            id: "t".into(),
            strategy: "distinguish".into(),
            steps: vec![SeqStep {
                node: "etcd-2".into(),
                set: BTreeMap::new(),
                action: None,
            }],
        };
        let ya = render(&ctx, &again, "explore-t", "s", "d", &Bug::new());
        assert!(
            ya.contains("  - name: \"restart etcd-2 again, nothing changed\"\n    restart: [etcd-2]\n    expect:"),
            "{ya}"
        );
        assert!(!ya.contains("config:"), "{ya}");
    }

    #[test]
    fn a_refused_prediction_becomes_any_at_the_place_validation_names() {
        let rules = Rules::of(distro::Distro::K3s);
        let nodes = nodes();
        let keys = [registry()];
        let ctx = context("etcd-split", &nodes, &rules, &keys);
        let seq = Sequence {
            id: "t".into(),
            strategy: "minimal".into(),
            steps: vec![SeqStep {
                node: "etcd-2".into(),
                set: [("embedded-registry".into(), "true".into())].into(),
                action: None,
            }],
        };
        let mut bug: Bug = [(
            (0, "etcd-2".to_string()),
            [("embedded-registry".to_string(), "down".to_string())].into(),
        )]
        .into();
        let y = render(&ctx, &seq, "explore-t", "s", "d", &bug);
        let (i, l) = (y.lines().enumerate())
            .find(|(_, l)| l.contains("etcd-2: {embedded-registry: \"down\"}"))
            .expect("the bug line");
        let column = l.find("embedded-registry").expect("signal") as u64 + 1;
        let problems = vec![(i as u64 + 1, column, "depends on the pick".to_string())];
        assert!(any_where_refused(&y, &problems, &mut bug));
        let again = render(&ctx, &seq, "explore-t", "s", "d", &bug);
        assert!(
            again.contains("bug:\n      etcd-2: {embedded-registry: any}"),
            "{again}"
        );
        // nothing more to change: the caller stops trying
        assert!(!any_where_refused(&y, &problems, &mut bug));
        // a place that names no prediction changes nothing
        assert!(!any_where_refused(&y, &[(1, 1, "x".into())], &mut bug));
    }

    /// A control-plane node whose join server is down dies validating its token
    /// (`shouldBootstrapLoad` → `ParseAndValidateToken`, pkg/cluster/bootstrap.go:
    /// `pkgerrors.WithMessage(err, "failed to validate token")`), before compareConfig could
    /// skip: the check expects the death, naming no key.
    #[test]
    fn a_node_whose_join_server_is_down_is_expected_to_die() {
        let rules = Rules::of(distro::Distro::K3s);
        let mut nodes = nodes();
        nodes.push(node("cp-2", Role::ControlPlane, Some("cp-1")));
        let keys = [registry()];
        let ctx = context("t", &nodes, &rules, &keys);
        let set = |node: &str| SeqStep {
            node: node.into(),
            set: [("embedded-registry".into(), "true".into())].into(),
            action: None,
        };
        let seq = Sequence {
            id: "t".into(),
            strategy: "orders".into(),
            // cp-1 is refused (etcd-1 differs), then cp-2, which joins cp-1, restarts
            steps: vec![set("cp-1"), set("cp-2")],
        };
        let y = render(&ctx, &seq, "explore-t", "s", "d", &Bug::new());
        assert!(
            y.contains("cp-1: {ready: down, fatal: up, panic: down, config-mismatch: \"embedded-registry\"}"),
            "{y}"
        );
        assert!(
            y.contains("cp-2: {ready: down, fatal: up, panic: down, config-mismatch: none}"),
            "{y}"
        );
    }
}
