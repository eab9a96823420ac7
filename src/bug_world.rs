//! The bug world of k3s #12753, read from a check and its topology without Docker: which
//! servers each buggy etcd-only joiner's load balancer may reach at every boot, and whether a
//! `bug` prediction depends on which one it reaches.
//!
//! Before the fix, an etcd-only server with `server:` bootstraps its agent off the joined node
//! through its load balancer, whose saved servers (the control-plane nodes it has seen, kept in
//! `k3s-agent-load-balancer.json`) come before the joined node; among the saved ones k3s picks
//! at random (Go map order, docs/k3s-review-2026-12.md §6); the joined node is the last resort.
//! The agent turns on the distribution's `served_agent_keys` (embedded-registry,
//! supervisor-metrics) from the config that server serves, which is the server's own config
//! as of its last boot. So a prediction on such a signal holds on every buggy run only when
//! every server the joiner may reach gives the same value; otherwise the check is refused,
//! naming the prediction, unless it says `any` there.
//!
//! The model is deliberately wide (every possibility the real load balancer has, never fewer):
//! a joiner has seen every apiserver node that ran while it ran; the joined node counts even
//! when a saved server is up (a dial can fail, and k3s #12753's steps read that world); a
//! server restarting in the same group as the joiner may give its old or its new value.
//! Every node starts on a buggy release (the world the `bug:` cells describe); a node an
//! `upgrade:` moved to a release with the fix ([`BOOTSTRAP_FIX`] in the distribution's changes
//! table) bootstraps from its own supervisor from that boot on, so it reads its own values.
//! Pure: no Docker, no clock.

use indexmap::{IndexMap, IndexSet};
use serde::Serialize;

use crate::diag::{Diagnostic, Diagnostics};
use crate::raw::{ConfigValue, Role};
use crate::scenario::{Expected, NodeKeys, Scenario};
use crate::start_order::PlannedNode;

/// The change of the changes table whose absence makes an etcd-only joiner borrow its served
/// keys (k3s #12753, PR #12754).
pub(crate) const BOOTSTRAP_FIX: &str = "etcd-only-bootstrap-fix";

/// The servers one boot of a buggy etcd-only joiner may read its served config from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Reach {
    /// The step that boots it (0: creating the cluster).
    pub(crate) step: usize,
    pub(crate) node: String,
    /// Saved control-plane nodes the load balancer picks among at random.
    pub(crate) saved: Vec<String>,
    /// The joined node (`server:`), the last resort: reached when no saved server answers the
    /// dial (none saved yet, or down, or slow) — and the server k3s #12753's own steps assume
    /// (the stand-in's `REPRO_SIM_CONFIG_SOURCE=joined`), so it is always counted.
    pub(crate) joined: String,
}

impl Reach {
    /// Every server in the order k3s tries them: the saved ones (random among themselves), then
    /// the joined node.
    pub(crate) fn servers(&self) -> Vec<String> {
        self.saved
            .iter()
            .cloned()
            .chain([self.joined.clone()])
            .collect()
    }
}

/// The servers a running buggy etcd-only joiner (`node`, which joined `joined`) may have read
/// its served config from on a live cluster (`repro audit`): as wide as the walk of a check, a
/// joiner that ran while every apiserver node ran has seen them all (saved, picked at random),
/// and the joined node is the last resort.
pub(crate) fn live_reach(node: &str, joined: &str, apiservers: &[String]) -> Reach {
    Reach {
        step: 0,
        node: node.to_string(),
        saved: apiservers.to_vec(),
        joined: joined.to_string(),
    }
}

/// What the bug world shows of a check on its topology.
#[derive(Debug, Clone, Default)]
pub(crate) struct BugWorld {
    pub(crate) reach: Vec<Reach>,
    /// Predictions that depend on the pick (empty: the check holds whichever server is reached).
    pub(crate) problems: Diagnostics,
}

#[derive(Clone, Default)]
struct NodeState {
    started: bool,
    /// Its own served-key values as of its last boot (what it serves).
    serves: IndexMap<String, bool>,
    /// A joiner's possible values of each served key, from its last boot.
    took: IndexMap<String, IndexSet<bool>>,
    /// A joiner's apiserver nodes seen while it ran (its saved load-balancer list).
    seen: IndexSet<String>,
    /// Where its last boot read from.
    reached: Vec<String>,
}

/// `true`/`"true"` turn a feature on, as k3s's flag parsing reads a config file.
fn on(v: Option<&ConfigValue>) -> bool {
    match v {
        Some(ConfigValue::Bool(b)) => *b,
        Some(ConfigValue::Str(s)) => s.trim().eq_ignore_ascii_case("true"),
        _ => false,
    }
}

fn has_apiserver(role: Role) -> bool {
    matches!(role, Role::ControlPlane | Role::All)
}

/// Reads the check's bug world on its topology (see the module doc).
pub(crate) fn read(sc: &Scenario) -> BugWorld {
    let topo = &sc.topology;
    let mut w = Walk {
        sc,
        fixed: Default::default(),
        served: (topo.distro.facts().served_agent_keys.iter())
            .map(|k| k.to_string())
            .collect(),
        apiservers: (topo.nodes.iter())
            .filter(|n| has_apiserver(n.role))
            .map(|n| n.name.clone())
            .collect(),
    };
    let mut keys = topo.node_keys();
    let mut state: IndexMap<String, NodeState> = (topo.nodes.iter())
        .map(|n| (n.name.clone(), NodeState::default()))
        .collect();
    let mut world = BugWorld::default();

    let planned: Vec<PlannedNode> = topo.nodes.iter().map(PlannedNode::from).collect();
    for group in crate::start_order::start_order(&planned) {
        w.boot_group(0, &group, &keys, &mut state, &mut world.reach);
    }
    for (i, s) in sc.check.steps.iter().enumerate() {
        let step = i + 1;
        s.apply_keys(&mut keys);
        // A stopped server serves nothing and no load balancer reaches it until it starts.
        for n in &s.stop {
            if let Some(st) = state.get_mut(n.as_str()) {
                st.started = false;
            }
        }
        if !s.start.is_empty() {
            w.boot_group(step, &s.start, &keys, &mut state, &mut world.reach);
        }
        for group in &s.restart {
            w.boot_group(step, group, &keys, &mut state, &mut world.reach);
        }
        for u in &s.upgrade {
            let fix = topo.distro.changes().get(BOOTSTRAP_FIX);
            if fix.is_some_and(|c| c.release_set().contains(&u.version)) {
                w.fixed.insert(u.node.clone());
            } else {
                w.fixed.shift_remove(&u.node);
            }
            w.boot_group(
                step,
                std::slice::from_ref(&u.node),
                &keys,
                &mut state,
                &mut world.reach,
            );
        }
        judge(sc, step, &w.served, &state, &mut world.problems);
    }
    world
}

/// What the walk through a check's boots reads of its topology.
struct Walk<'a> {
    sc: &'a Scenario,
    /// The distribution's keys a joiner takes from the server it reaches.
    served: Vec<String>,
    /// The nodes that run an apiserver (what a joiner's load balancer learns).
    apiservers: Vec<String>,
    /// Nodes an `upgrade:` moved to a release with the fix: no longer buggy joiners.
    fixed: IndexSet<String>,
}

impl Walk<'_> {
    /// An etcd-only node that joins, on a buggy release: the one whose served keys come from
    /// the server it reaches.
    fn is_joiner(&self, name: &str) -> bool {
        !self.fixed.contains(name)
            && (self.sc.topology.node(name))
                .is_some_and(|n| n.role == Role::Etcd && !n.init && n.join.is_some())
    }

    /// A node's served-key values under `keys`.
    fn serves(&self, keys: &NodeKeys, name: &str) -> IndexMap<String, bool> {
        (self.served.iter())
            .map(|k| (k.clone(), on(keys.get(name).and_then(|m| m.get(k)))))
            .collect()
    }

    /// The nodes of `group` boot at once in `step`: each joiner among them takes each served
    /// key from any server it may reach, with any value that server may serve then; every
    /// running joiner's load balancer then learns the apiservers that are up.
    fn boot_group(
        &self,
        step: usize,
        group: &[String],
        keys: &NodeKeys,
        state: &mut IndexMap<String, NodeState>,
        reach: &mut Vec<Reach>,
    ) {
        // What a server may serve while `group` boots: its old value, or its new one if it
        // boots in this group too.
        let may_serve = |name: &str, state: &IndexMap<String, NodeState>, key: &str| {
            let mut out = IndexSet::new();
            let st = state.get(name);
            if let Some(v) = st.filter(|s| s.started).and_then(|s| s.serves.get(key)) {
                out.insert(*v);
            }
            if group.iter().any(|g| g == name) {
                out.insert(self.serves(keys, name).get(key).copied().unwrap_or(false));
            }
            out
        };
        let mut took: IndexMap<String, (Reach, IndexMap<String, IndexSet<bool>>)> = IndexMap::new();
        for name in group.iter().filter(|n| self.is_joiner(n)) {
            let Some(joined) = self.sc.topology.node(name).and_then(|n| n.join.clone()) else {
                continue;
            };
            let saved: Vec<String> = (state[name.as_str()].seen.iter()).cloned().collect();
            let r = Reach {
                step,
                node: name.clone(),
                saved,
                joined,
            };
            let values = (self.served.iter())
                .map(|k| {
                    let vs: IndexSet<bool> = (r.servers().iter())
                        .flat_map(|s| may_serve(s, state, k))
                        .collect();
                    (k.clone(), vs)
                })
                .collect();
            took.insert(name.clone(), (r, values));
        }
        for name in group {
            let serves = self.serves(keys, name);
            let st = state.entry(name.clone()).or_default();
            // A boot the step's bug world expects to die (refused) leaves the node down: it
            // serves nothing to a later boot and no load balancer learns it.
            st.started = !dies_in(self.sc, step, name);
            st.serves = serves;
            st.seen.clear();
            // A boot that reads its own values (not a buggy joiner now) forgets what the
            // node's earlier boots took.
            let (reached, values) = match took.shift_remove(name) {
                Some((r, values)) => {
                    let servers = r.servers();
                    reach.push(r);
                    (servers, values)
                }
                None => Default::default(),
            };
            st.reached = reached;
            st.took = values;
        }
        let up: Vec<String> = (self.apiservers.iter())
            .filter(|a| state.get(a.as_str()).is_some_and(|s| s.started))
            .cloned()
            .collect();
        for (name, st) in state.iter_mut() {
            if st.started && self.is_joiner(name) {
                st.seen.extend(up.iter().cloned());
            }
        }
    }
}

/// Whether the bug world of `step` (its `expect:` with `bug:` over it) expects `node`'s boot
/// there to die: it asks the node's readiness to be `down`.
fn dies_in(sc: &Scenario, step: usize, node: &str) -> bool {
    let Some(s) = step.checked_sub(1).and_then(|i| sc.check.steps.get(i)) else {
        return false;
    };
    let ready = |world: &IndexMap<String, IndexMap<String, Expected>>| {
        (world.get(node))
            .and_then(|sigs| ["ready", "agent-ready"].iter().find_map(|r| sigs.get(*r)))
            .cloned()
    };
    ready(&s.bug).or_else(|| ready(&s.expect)) == Some(Expected::Down)
}

/// Refuses the step's predictions on served keys of joiners that the pick decides.
fn judge(
    sc: &Scenario,
    step: usize,
    served: &[String],
    state: &IndexMap<String, NodeState>,
    out: &mut Diagnostics,
) {
    let Some(s) = sc.check.steps.get(step - 1) else {
        return;
    };
    let mut world = s.expect.clone();
    for (node, sigs) in &s.bug {
        let entry = world.entry(node.clone()).or_default();
        for (sig, v) in sigs {
            entry.insert(sig.clone(), v.clone());
        }
    }
    for (node, sigs) in &world {
        let Some(st) = state.get(node.as_str()) else {
            continue;
        };
        for (sig, want) in sigs {
            if !served.contains(sig) || !matches!(want, Expected::Up | Expected::Down) {
                continue;
            }
            let Some(values) = st.took.get(sig.as_str()) else {
                continue; // not a buggy joiner, or never booted
            };
            if values.len() < 2 {
                continue;
            }
            let from_bug = s.bug.get(node).is_some_and(|b| b.contains_key(sig));
            let places = if from_bug {
                &s.bug_places
            } else {
                &s.expect_places
            };
            let (line, column) = places
                .get(node)
                .and_then(|p| p.get(sig))
                .copied()
                .unwrap_or((s.line as u64, 1));
            let shows = |server: &String| {
                let v = state
                    .get(server.as_str())
                    .and_then(|x| x.serves.get(sig.as_str()))
                    .copied()
                    .unwrap_or(false);
                format!("{server} ({})", if v { "up" } else { "down" })
            };
            let servers: Vec<String> = st.reached.iter().map(shows).collect();
            let whose = if from_bug {
                "`bug:`"
            } else {
                "`expect:` (no `bug:` entry)"
            };
            out.push(Diagnostic {
                file: sc.check.path.clone(),
                line,
                column,
                message: format!(
                    "on a buggy release `{node}: {{{sig}: {want}}}` in step {step} depends on which server {node}'s load balancer reaches on topology `{}`: its boot may read {sig} from {} (k3s picks at random among saved control-plane nodes, then the joined node), so the {whose} prediction fails on some runs",
                    sc.topology.name,
                    servers.join(", ")
                ),
                help: Some(if sc.topology.name == sc.check.topology {
                    format!(
                        "if either value is the bug, write `bug: {{{node}: {{{sig}: any}}}}` in this step; or give every server it may reach the same {sig} before this step"
                    )
                } else {
                    format!(
                        "if either value is the bug, write `bug: {{{node}: {{{sig}: any}}}}` in this step; or run the check on a topology whose servers agree here (it was written for `{}`)",
                        sc.check.topology
                    )
                }),
            });
        }
    }
}

/// The check's refusals on its topology, or nothing.
pub(crate) fn check(sc: &Scenario) -> Result<(), Diagnostics> {
    let w = read(sc);
    if w.problems.is_empty() {
        Ok(())
    } else {
        Err(w.problems.sorted())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    /// The shipped files of this checkout (the built-in set lacks some of them).
    fn shipped() -> Catalog {
        Catalog::load(Some(std::path::Path::new(env!("CARGO_MANIFEST_DIR")))).expect("catalog")
    }

    fn reach_of(check: &str, topo: Option<&str>) -> Vec<(usize, String, Vec<String>)> {
        let cat = shipped();
        let sc = cat.scenario(check, topo).expect("scenario");
        read(&sc)
            .reach
            .into_iter()
            .map(|r| (r.step, r.node.clone(), r.servers()))
            .collect()
    }

    /// A catalog folder with the shipped signals and etcd-split alone, for a test's own check.
    fn etcd_split_catalog() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        for f in ["checks/signals.yaml", "topologies/etcd-split.yaml"] {
            let to = dir.path().join(f);
            std::fs::create_dir_all(to.parent().expect("parent")).expect("dir");
            std::fs::copy(root.join(f), to).expect("copy");
        }
        dir
    }

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn first_boots_reach_the_joined_node_later_ones_the_saved_control_planes_first() {
        let got = reach_of("etcd-split", None);
        assert_eq!(got[0], (0, "etcd-2".into(), s(&["etcd-1"])));
        assert_eq!(got[1], (0, "etcd-3".into(), s(&["etcd-1"])));
        assert_eq!(got[2], (1, "etcd-2".into(), s(&["cp-1", "etcd-1"])));
        let two = reach_of("etcd-split", Some("etcd-split-2cp"));
        assert_eq!(two[2], (1, "etcd-2".into(), s(&["cp-1", "cp-2", "etcd-1"])));
    }

    #[test]
    fn a_prediction_the_pick_decides_is_refused_unless_it_says_any() {
        let cat = shipped();
        let err = cat
            .scenario("metrics-order", Some("etcd-split-2cp"))
            .expect_err("depends on the pick");
        let places: Vec<(u64, u64)> = err.0.iter().map(|d| (d.line, d.column)).collect();
        assert_eq!(places, vec![(50, 27), (51, 27)]);
        assert!(err.0[0]
            .message
            .contains("cp-1 (up), cp-2 (down), etcd-1 (up)"));
        // etcd-split's last step says `any` where cp-1 and etcd-1 disagree.
        assert!(cat.scenario("etcd-split", Some("etcd-split-2cp")).is_ok());
        for check in ["etcd-split", "metrics-order", "metrics-right-order"] {
            if let Err(e) = cat.scenario(check, None) {
                panic!("{check} on its own topology: {e:?}");
            }
        }
    }

    /// issue #38's refused replay: cp-1 is refused (down) in step 1, so when etcd-2 boots in
    /// step 2 it can reach only etcd-1 — cp-1's new value is served by nobody — and the `bug:`
    /// prediction holds on every buggy run. Refused before: "may read … from cp-1 (up)".
    #[test]
    fn a_server_the_step_expects_to_die_serves_nothing_to_later_boots() {
        let dir = etcd_split_catalog();
        let check = |cp_dies: bool| {
            let cp1 = if cp_dies {
                "cp-1: {ready: down, fatal: up, config-mismatch: \"supervisor-metrics\"}"
            } else {
                "cp-1: {ready: up}"
            };
            format!(
                "name: refused-then-joiner\ntopology: etcd-split\nissue: https://x/1\nsummary: s\nsteps:\n  - name: one\n    config:\n      cp-1: {{supervisor-metrics: true}}\n    restart: [cp-1]\n    expect:\n      {cp1}\n  - name: two\n    config:\n      etcd-2: {{supervisor-metrics: true}}\n    restart: [etcd-2]\n    expect:\n      etcd-2: {{ready: up, supervisor-metrics: up}}\n    bug:\n      etcd-2: {{supervisor-metrics: down}}\n"
            )
        };
        let load = |text: String| {
            std::fs::write(dir.path().join("checks/refused-then-joiner.yaml"), text)
                .expect("write");
            Catalog::load(Some(dir.path()))
        };
        let cat = load(check(true)).expect("cp-1 refused: etcd-2 reaches only etcd-1");
        assert!(cat.scenario("refused-then-joiner", None).is_ok());
        // cp-1 up in step 1 (not refused): etcd-2 may reach it, and the prediction depends
        // on the pick, as before.
        let err = load(check(false)).expect_err("cp-1 up: depends on the pick");
        assert!(
            format!("{err:?}").contains("cp-1 (up), etcd-1 (down)"),
            "{err:?}"
        );
    }

    /// An upgrade to a release with the fix ends the borrowing: the upgraded joiner reads its
    /// own value, so a prediction there holds on every buggy run without `any`; an upgrade to
    /// a release without it leaves the joiner borrowing, and the pick decides again.
    #[test]
    fn an_upgraded_joiner_plays_its_new_version() {
        let dir = etcd_split_catalog();
        // cp-1 enables the registry, etcd-1 (joined) and etcd-2 do not: a buggy etcd-2 may
        // borrow either value.
        let check = |to: &str| {
            format!(
                "name: upgraded\ntopology: etcd-split\nissue: https://x/1\nsummary: s\nsteps:\n  - name: one\n    config:\n      cp-1: {{embedded-registry: true}}\n    restart: [cp-1]\n    expect:\n      cp-1: {{ready: up}}\n  - name: two\n    upgrade: {{etcd-2: {to}}}\n    expect:\n      etcd-2: {{ready: up, embedded-registry: down}}\n"
            )
        };
        let load = |text: String| {
            std::fs::write(dir.path().join("checks/upgraded.yaml"), text).expect("write");
            Catalog::load(Some(dir.path())).and_then(|c| c.scenario("upgraded", None).map(|_| ()))
        };
        load(check("v1.33.5+k3s1")).expect("the fixed release reads its own (down)");
        let err = load(check("v1.33.4+k3s1")).expect_err("still buggy: the pick decides");
        assert!(
            format!("{err:?}").contains("cp-1 (up), etcd-1 (down)"),
            "{err:?}"
        );
    }

    #[test]
    fn config_values_read_as_k3s_reads_them() {
        assert!(on(Some(&ConfigValue::Bool(true))));
        assert!(on(Some(&ConfigValue::Str("True".into()))));
        assert!(!on(Some(&ConfigValue::Str("false".into()))));
        assert!(!on(Some(&ConfigValue::Int(1))));
        assert!(!on(None));
    }
}
