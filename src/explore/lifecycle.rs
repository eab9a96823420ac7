//! The lifecycle strategy (#41 point 5): sequences that stop, start, restart together and
//! upgrade nodes, and each one written as an ordinary check whose `expect:` is the liveness
//! rules' (`liveness.rs`). Pure.
//!
//! Generated (interchangeable nodes — `generate.rs`'s twins — stand for each other, so one node
//! per class is stopped), each numbered in this order, then run in an order the seed draws:
//! - every node restarted at once (k3s #13533's shape);
//! - each role group restarted at once, in Rancher's order (etcd, control plane, agents);
//! - per class: stop one node, restart every other node one by one (agents and control plane
//!   first), start it again (k3s #11333's shape);
//! - per class: stop one node, restart every other node at once, start it again;
//! - with a target version: every node upgraded one by one in Rancher's order.

use std::collections::BTreeMap;

use crate::raw::Role;

use super::generate::{
    bug_items, check_head, judge_only_the_death, quote, twins, Bug, Context, Rng, SeqStep, Sequence,
};
use super::liveness::{self, Action, Want};
use super::model::NodeInfo;

pub(crate) const STRATEGY: &str = "lifecycle";

/// Rancher's upgrade order: etcd members (the init node first), control-plane nodes, agents;
/// topology order within each.
fn rancher_order(nodes: &[NodeInfo]) -> Vec<&NodeInfo> {
    let rank = |n: &NodeInfo| match n.role {
        Role::Etcd | Role::All => u8::from(!n.init),
        Role::ControlPlane => 2,
        Role::Agent => 3,
    };
    let mut out: Vec<&NodeInfo> = nodes.iter().collect();
    out.sort_by_key(|n| rank(n));
    out
}

/// One node of each class of interchangeable nodes, in Rancher's order.
fn representatives(nodes: &[NodeInfo]) -> Vec<&NodeInfo> {
    let mut reps: Vec<&NodeInfo> = Vec::new();
    for n in rancher_order(nodes) {
        if !reps.iter().any(|r| twins(r, n, nodes)) {
            reps.push(n);
        }
    }
    reps
}

fn step(action: Action) -> SeqStep {
    SeqStep {
        node: action
            .nodes()
            .first()
            .map_or_else(String::new, |n| n.to_string()),
        set: BTreeMap::new(),
        action: Some(action),
    }
}

/// The lifecycle sequences over the topology's nodes, with an upgrade sequence when
/// `upgrade_to` is given, in the run order `seed` draws: the same seed gives the same
/// sequences in the same order; another seed another order, so a `--budget` that cuts the
/// campaign runs another sample of them. Each keeps the number of its place in the generation
/// order (`l3-stop-etcd-1-one-by-one` whatever the seed), so `--sequences` names the same
/// sequence under every seed.
pub(crate) fn sequences(nodes: &[NodeInfo], upgrade_to: Option<&str>, seed: u64) -> Vec<Sequence> {
    let order = rancher_order(nodes);
    let names = |ns: &[&NodeInfo]| ns.iter().map(|n| n.name.clone()).collect::<Vec<_>>();
    let mut out: Vec<(String, Vec<SeqStep>)> = Vec::new();
    out.push((
        "restart-all".into(),
        vec![step(Action::Restart(vec![names(&order)]))],
    ));
    let groups: Vec<Vec<String>> = [
        &[Role::Etcd, Role::All][..],
        &[Role::ControlPlane],
        &[Role::Agent],
    ]
    .iter()
    .map(|roles| {
        names(
            &(order.iter().copied())
                .filter(|n| roles.contains(&n.role))
                .collect::<Vec<_>>(),
        )
    })
    .filter(|g| !g.is_empty())
    .collect();
    out.push((
        "restart-roles".into(),
        groups
            .into_iter()
            .map(|g| step(Action::Restart(vec![g])))
            .collect(),
    ));
    let reps = representatives(nodes);
    for (together, tag) in [(false, "one-by-one"), (true, "together")] {
        for x in &reps {
            // The others in reverse Rancher order (agents, control plane, etcd members): the
            // nodes that depend on the stopped one restart first, so a death shows at the
            // earliest step and ddmin has the fewest steps to cut (on etcd-split #11333's
            // restart of cp-1 is step 2, not step 4: 2 ddmin runs instead of 15).
            let others: Vec<&NodeInfo> = (order.iter().rev().copied())
                .filter(|n| n.name != x.name)
                .collect();
            let mut steps = vec![step(Action::Stop(vec![x.name.clone()]))];
            if together {
                steps.push(step(Action::Restart(vec![names(&others)])));
            } else {
                steps.extend(
                    others
                        .iter()
                        .map(|o| step(Action::Restart(vec![vec![o.name.clone()]]))),
                );
            }
            steps.push(step(Action::Start(vec![x.name.clone()])));
            out.push((format!("stop-{}-{tag}", x.name), steps));
        }
    }
    if let Some(to) = upgrade_to {
        let steps = (order.iter())
            .map(|n| {
                step(Action::Upgrade {
                    nodes: vec![n.name.clone()],
                    to: to.to_string(),
                })
            })
            .collect();
        out.push(("upgrade".into(), steps));
    }
    let mut seqs: Vec<Sequence> = (out.into_iter().enumerate())
        .map(|(i, (what, steps))| Sequence {
            id: format!("l{}-{what}", i + 1),
            strategy: STRATEGY.into(),
            steps,
        })
        .collect();
    shuffle(&mut seqs, &mut Rng::new(seed));
    seqs
}

/// Fisher–Yates with the campaign's SplitMix64 (`generate::Rng`, as `--random` draws): a seed
/// replays the same order on every build.
fn shuffle<T>(v: &mut [T], rng: &mut Rng) {
    for i in (1..v.len()).rev() {
        v.swap(i, rng.below(i + 1));
    }
}

/// A step's name and its action, as the check writes them.
fn step_head(a: &Action) -> String {
    let list = |ns: &[String]| ns.join(", ");
    let (name, body) = match a {
        Action::Stop(ns) => (
            format!("stop {}", list(ns)),
            format!("stop: [{}]", list(ns)),
        ),
        Action::Start(ns) => (
            format!("start {}", list(ns)),
            format!("start: [{}]", list(ns)),
        ),
        Action::Restart(groups) => {
            let items: Vec<String> = (groups.iter())
                .map(|g| match g.as_slice() {
                    [one] => one.clone(),
                    many => format!("[{}]", list(many)),
                })
                .collect();
            let words: Vec<String> = (groups.iter())
                .map(|g| match g.as_slice() {
                    [one] => one.clone(),
                    many => format!("{} at once", list(many)),
                })
                .collect();
            (
                format!("restart {}", words.join(", then ")),
                format!("restart: [{}]", items.join(", ")),
            )
        }
        Action::Upgrade { nodes, to } => {
            let items: Vec<String> = nodes.iter().map(|n| format!("{n}: {to}")).collect();
            (
                format!("upgrade {} to {to}", list(nodes)),
                format!("upgrade: {{{}}}", items.join(", ")),
            )
        }
    };
    format!("  - name: {}\n    {body}\n", quote(&name))
}

/// What the check expects of a node the rules want `w` of.
fn expect_of(node: &NodeInfo, w: &liveness::NodeWant) -> Vec<String> {
    let server = node.is_server();
    let ready = if server { "ready" } else { "agent-ready" };
    let mut e = match &w.want {
        Want::Stopped => vec![format!("{ready}: down")],
        Want::Back(_) if server => vec![
            format!("{ready}: up"),
            "fatal: down".into(),
            "panic: down".into(),
        ],
        Want::Back(_) => vec![format!("{ready}: up")],
        Want::Either(_) if server => vec!["panic: down".into()],
        Want::Either(_) => Vec::new(),
        Want::StaysReady => vec!["node-ready: up".into()],
    };
    if w.ready {
        e.push("node-ready: up".into());
    }
    if let (Some(v), Want::Back(_)) = (&w.version, &w.want) {
        e.push(format!("version: {}", quote(v)));
    }
    e
}

/// The check file of a lifecycle sequence: each step's action, and what the liveness rules
/// want of every node it concerns (`bug:` holds what a run observed instead, for a minimal
/// finding's check).
pub(crate) fn render(
    ctx: &Context,
    seq: &Sequence,
    name: &str,
    summary: &str,
    description: &str,
    bug: &Bug,
) -> String {
    let actions: Vec<Action> = seq.steps.iter().filter_map(|s| s.action.clone()).collect();
    let wants = liveness::plan(ctx.nodes, &actions);
    let mut y = check_head(
        "Written by `repro explore --strategy lifecycle`: each step's expect is the liveness rules (docs/explore.md).",
        name,
        ctx.topology,
        "https://github.com/k3s-io/k3s/issues/11333",
        summary,
        description,
        &[
            "https://github.com/k3s-io/k3s/issues/13533",
            "https://github.com/k3s-io/k3s/blob/master/pkg/cluster/bootstrap.go",
        ],
    );
    for (i, (a, wants)) in actions.iter().zip(&wants).enumerate() {
        y.push_str(&step_head(a));
        let mut expect_lines = Vec::new();
        let mut bug_lines = Vec::new();
        for n in ctx.nodes {
            let Some(w) = wants.get(&n.name) else {
                continue;
            };
            let mut expect = expect_of(n, w);
            let observed = bug.get(&(i, n.name.clone()));
            judge_only_the_death(&mut expect, observed, &["ready", "agent-ready"]);
            if !expect.is_empty() {
                expect_lines.push(format!("      {}: {{{}}}\n", n.name, expect.join(", ")));
            }
            if let Some(b) = observed {
                let items = bug_items(&expect, b);
                if !items.is_empty() {
                    bug_lines.push(format!("      {}: {{{}}}\n", n.name, items.join(", ")));
                }
            }
        }
        if !expect_lines.is_empty() {
            y.push_str("    expect:\n");
            y.push_str(&expect_lines.concat());
        }
        if !bug_lines.is_empty() {
            y.push_str("    bug:\n");
            y.push_str(&bug_lines.concat());
        }
    }
    y
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::generate::tests::{context, panicked};
    use crate::explore::model::tests::{etcd_split, split_roles};
    use crate::explore::model::Rules;

    /// The sequences in generation order (their numbers), whatever order the seed drew.
    fn generated(nodes: &[NodeInfo], upgrade_to: Option<&str>) -> Vec<Sequence> {
        let mut s = sequences(nodes, upgrade_to, 1);
        s.sort_by_key(|x| number(&x.id));
        s
    }

    fn number(id: &str) -> usize {
        (id[1..].split('-').next())
            .and_then(|n| n.parse().ok())
            .expect("l<N>-…")
    }

    fn ids(s: &[Sequence]) -> Vec<&str> {
        s.iter().map(|s| s.id.as_str()).collect()
    }

    #[test]
    fn one_node_per_class_is_stopped_and_the_count_is_small() {
        let s = generated(&etcd_split(), None);
        // etcd-2 and etcd-3 are twins: the init node, one joiner, the control-plane node.
        assert_eq!(
            ids(&s),
            [
                "l1-restart-all",
                "l2-restart-roles",
                "l3-stop-etcd-1-one-by-one",
                "l4-stop-etcd-2-one-by-one",
                "l5-stop-cp-1-one-by-one",
                "l6-stop-etcd-1-together",
                "l7-stop-etcd-2-together",
                "l8-stop-cp-1-together",
            ]
        );
        // split-roles: cp-1 and cp-2 are twins too; the agent is its own class.
        let r = generated(&split_roles(), Some("v1.33.5+k3s1"));
        assert_eq!(r.len(), 2 + 2 * 4 + 1);
        assert!(r.iter().all(|s| s.strategy == STRATEGY));
        // the stop sequence restarts every other node once, then starts the stopped one
        let l3 = &s[2];
        let acts: Vec<&Action> = l3.steps.iter().filter_map(|x| x.action.as_ref()).collect();
        assert_eq!(acts.first(), Some(&&Action::Stop(vec!["etcd-1".into()])));
        assert_eq!(acts.last(), Some(&&Action::Start(vec!["etcd-1".into()])));
        assert_eq!(acts.len(), 5);
        // the node that depends on the stopped one restarts first
        assert_eq!(acts[1], &Action::Restart(vec![vec!["cp-1".into()]]));
    }

    /// `--seed` draws the run order as it draws the config strategy's random sequences: the
    /// same seed the same sequences in the same order, another seed another order (so a budget
    /// that cuts the campaign runs another sample), and every seed the same set, each sequence
    /// under the same id.
    #[test]
    fn the_seed_draws_the_run_order() {
        let nodes = split_roles();
        let up = Some("v1.33.5+k3s1");
        let a = sequences(&nodes, up, 7);
        assert_eq!(a, sequences(&nodes, up, 7));
        let b = sequences(&nodes, up, 8);
        assert_ne!(ids(&a), ids(&b));
        // a budget of 3 runs: another sample
        assert_ne!(ids(&a[..3]), ids(&b[..3]));
        let mut sorted = b.clone();
        sorted.sort_by_key(|x| number(&x.id));
        assert_eq!(sorted, generated(&nodes, up));
        // many seeds put many sequences first: no sequence is the seed's favourite
        let firsts: std::collections::BTreeSet<String> = (0..64)
            .map(|seed| sequences(&nodes, up, seed)[0].id.clone())
            .collect();
        assert!(firsts.len() > 5, "{firsts:?}");
    }

    #[test]
    fn upgrades_go_in_rancher_order() {
        let s = generated(&split_roles(), Some("v1.33.5+k3s1"));
        let up = s.last().expect("the upgrade sequence");
        let order: Vec<&str> = up.steps.iter().map(|x| x.node.as_str()).collect();
        assert_eq!(
            order,
            ["etcd-1", "etcd-2", "etcd-3", "cp-1", "cp-2", "agent-1"]
        );
    }

    #[test]
    fn the_check_expects_the_liveness_rules() {
        let nodes = etcd_split();
        let rules = Rules::default();
        let ctx = context("etcd-split", &nodes, &rules, &[]);
        let seqs = generated(&nodes, None);
        let seq = &seqs[2];
        let y = render(&ctx, seq, "explore-t", "s", "d", &Bug::new());
        assert!(
            y.contains("  - name: \"stop etcd-1\"\n    stop: [etcd-1]\n    expect:\n      etcd-1: {ready: down}\n      etcd-2: {node-ready: up}\n"),
            "{y}"
        );
        assert!(
            y.contains("  - name: \"restart cp-1\"\n    restart: [cp-1]\n    expect:\n      cp-1: {ready: up, fatal: down, panic: down}\n"),
            "{y}"
        );
        let all = render(&ctx, &seqs[0], "explore-t", "s", "d", &Bug::new());
        assert!(
            all.contains("restart: [[etcd-1, etcd-2, etcd-3, cp-1]]"),
            "{all}"
        );
        // a minimal check of a panic: the death alone is judged
        let bug = panicked(0, "cp-1");
        let yb = render(&ctx, &seqs[0], "explore-t", "s", "d", &bug);
        assert!(
            yb.contains("      cp-1: {ready: up, panic: down}\n    bug:\n      cp-1: {panic: \"up\", ready: \"down\"}\n"),
            "{yb}"
        );
    }

    /// Agents' readiness is asked as the servers' is: untouched while a node is stopped, and
    /// again once the agent is restarted (split-roles: cp-2 answers while cp-1 is stopped).
    #[test]
    fn the_check_asks_agents_readiness() {
        let nodes = split_roles();
        let rules = Rules::default();
        let ctx = context("split-roles", &nodes, &rules, &[]);
        let seqs = generated(&nodes, None);
        let stop_cp1 = (seqs.iter())
            .find(|s| s.id.ends_with("-stop-cp-1-one-by-one"))
            .expect("the sequence");
        let y = render(&ctx, stop_cp1, "explore-t", "s", "d", &Bug::new());
        assert!(
            y.contains("  - name: \"stop cp-1\"\n    stop: [cp-1]\n    expect:\n      etcd-1: {node-ready: up}\n"),
            "{y}"
        );
        assert!(y.contains("      agent-1: {node-ready: up}\n"), "{y}");
        assert!(
            y.contains("  - name: \"restart agent-1\"\n    restart: [agent-1]\n    expect:\n      agent-1: {agent-ready: up, node-ready: up}\n"),
            "{y}"
        );
    }
}
