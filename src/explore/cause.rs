//! Distinguishing sequences (#38 point 5): a node that shows a value its own config does not
//! hold may have kept its own previous value (`stale`) or taken it from any server running with
//! it (`taken-from-<server>`), and the run that found it cannot tell which when several hold it.
//! For each candidate cause, a sequence that gives that cause alone the shown value — every
//! other server, and the node itself, the other value — then restarts the node again: the
//! candidate whose run still shows the value is the cause. Pure, apart from the runs the
//! campaign makes of the sequences (`mod.rs`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::result::{Observed, Rule, RunResult};
use crate::scenario::Shows;

use super::generate::{KeySpace, SeqStep, Sequence};
use super::model::{self, Boot, Config, NodeInfo, Rules};
use super::oracle::{self, Class};

/// One candidate cause and the run that tested it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Probe {
    pub(crate) cause: Class,
    /// The run folder (relative to the campaign), when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) run: Option<String>,
    /// What the node showed at its last boot of that run (none: nothing decided it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) showed: Option<String>,
    /// Whether the node showed the value with this cause alone holding it; none when the
    /// sequence could not be built (k3s's rules refuse it) or its run decided nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) explains: Option<bool>,
    /// Why it was not run, or why its run decided nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) note: Option<String>,
}

/// How one defect's cause was decided: the class the oracle named from the run that found it,
/// the class the distinguishing runs decided, and those runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Decided {
    pub(crate) named: Class,
    pub(crate) class: Class,
    pub(crate) node: String,
    pub(crate) key: String,
    /// The value the node showed (its config held the other one).
    pub(crate) value: String,
    pub(crate) probes: Vec<Probe>,
}

impl Decided {
    /// The cause in words, for findings.md and the progress line.
    pub(crate) fn summary(&self) -> String {
        let runs: Vec<String> = (self.probes.iter())
            .map(|p| {
                let verdict = match p.explains {
                    Some(true) => "explains it",
                    Some(false) => "does not",
                    None => "not decided",
                };
                let at = p.run.as_deref().or(p.note.as_deref()).unwrap_or("-");
                format!("{}: {verdict} ({at})", p.cause)
            })
            .collect();
        let how = if self.probes.iter().any(|p| p.explains == Some(true)) {
            ""
        } else if self.probes.iter().any(|p| p.explains.is_none()) {
            ", by elimination"
        } else {
            ", undecided: no candidate alone showed it (the cause depends on more than who holds the value), the oracle's naming stands"
        };
        format!(
            "{} (the run that found it named {}{how}; {} distinguishing: {})",
            self.class,
            self.named,
            self.probes.iter().filter(|p| p.run.is_some()).count(),
            runs.join("; ")
        )
    }
}

/// The class the probes decide: the first candidate whose run showed the value with it alone
/// holding it; else, by elimination, the first candidate no run ruled out (one k3s's rules do
/// not let hold the value alone, or whose run decided nothing); else the oracle's own naming
/// (every candidate ruled out: the cause depends on more than who holds the value — said so in
/// the summary).
pub(crate) fn decide(named: &Class, probes: &[Probe]) -> Class {
    let first = |want: Option<bool>| probes.iter().find(|p| p.explains == want);
    first(Some(true))
        .or_else(|| first(None))
        .map_or_else(|| named.clone(), |p| p.cause.clone())
}

/// The other of a key's two values, if `x` is one of them.
pub(crate) fn other_value(k: &KeySpace, x: &str) -> Option<String> {
    match (k.values[0] == x, k.values[1] == x) {
        (true, false) => Some(k.values[1].clone()),
        (false, true) => Some(k.values[0].clone()),
        _ => None,
    }
}

/// The value `node` showed of `signal` at its last boot in `r`, by positive evidence only (not
/// the settle rule alone).
pub(crate) fn showed(r: &RunResult, node: &str, signal: &str, shows: &Shows) -> Option<String> {
    let last = r.steps.iter().rev().find(|s| {
        s.observations
            .iter()
            .any(|o| o.node == node && o.signal == signal)
    })?;
    let o = (last.observations.iter())
        .filter(|o| o.node == node && o.signal == signal)
        .max_by_key(|o| o.boot)?;
    if matches!(o.rule, Rule::SettleWindow | Rule::Undecided) || o.observed == Observed::Dead {
        return None;
    }
    oracle::shown_value(shows, &o.observed)
}

/// What the probe of one candidate needs: the topology, its starting configs and rules, the
/// key, the node that showed the value, the value shown (`x`) and the other one (`y`).
pub(crate) struct Setting<'a> {
    pub(crate) nodes: &'a [NodeInfo],
    pub(crate) base: &'a BTreeMap<String, Config>,
    pub(crate) rules: &'a Rules,
    pub(crate) key: &'a KeySpace,
    pub(crate) node: &'a str,
    pub(crate) x: &'a str,
    pub(crate) y: &'a str,
}

impl Setting<'_> {
    fn value(&self, files: &BTreeMap<String, Config>, n: &str) -> Option<String> {
        let empty = Config::new();
        self.rules
            .value(files.get(n).unwrap_or(&empty), &self.key.key)
    }

    /// The distinguishing sequence of `cause`, or why k3s's rules do not let that cause alone
    /// hold the value when the node restarts (a control-plane-only server cannot run with a
    /// critical value its join server does not hold: it is refused).
    ///
    /// - `stale`: the node boots with `x` (unless it already runs it), every server, the node
    ///   included, is set to `y` in topology order, then the node is restarted again: no server
    ///   holds `x`, only the node's past does (a value kept from any earlier boot, not only the
    ///   previous one);
    /// - `taken-from-S`: every server, the node included, is set to `y` in topology order (a
    ///   joiner after its join server, so none is refused), then S back to `x`, then the node
    ///   is restarted again: S alone holds `x`, and the node's previous boot had `y`.
    pub(crate) fn sequence(&self, cause: &Class, id: &str) -> Result<Sequence, String> {
        let mut files = self.base.clone();
        let mut steps = Vec::new();
        let mut set = |n: &str, v: &str, files: &mut BTreeMap<String, Config>| {
            let mut s = BTreeMap::new();
            if !v.is_empty() {
                s.insert(self.key.key.clone(), v.to_string());
                files
                    .entry(n.to_string())
                    .or_default()
                    .insert(self.key.key.clone(), v.to_string());
            }
            steps.push(SeqStep {
                node: n.to_string(),
                set: s,
                action: None,
            });
        };
        let servers: Vec<&NodeInfo> = (self.nodes.iter()).filter(|n| n.is_server()).collect();
        match cause {
            Class::Stale => {
                if self.value(&files, self.node).as_deref() != Some(self.x) {
                    set(self.node, self.x, &mut files);
                }
                // Every server, the node in its place, so none bootstraps against a server
                // that still holds the value (a joiner of the node would be refused).
                for s in &servers {
                    if self.value(&files, &s.name).as_deref() != Some(self.y) {
                        set(&s.name, self.y, &mut files);
                    }
                }
                set(self.node, "", &mut files);
            }
            Class::TakenFrom(c) if servers.iter().any(|s| &s.name == c && s.name != self.node) => {
                for s in &servers {
                    if self.value(&files, &s.name).as_deref() != Some(self.y) {
                        set(&s.name, self.y, &mut files);
                    }
                }
                set(c, self.x, &mut files);
                // The restart that tells: nothing changes on the node.
                set(self.node, "", &mut files);
            }
            other => return Err(format!("{other} is no cause a sequence can isolate")),
        }
        let seq = Sequence {
            id: format!("{id}-{}", cause.name()),
            strategy: "distinguish".into(),
            steps,
        };
        self.isolates(&seq, cause)?;
        Ok(seq)
    }

    /// Whether, by the model, `seq` ends with the node restarting with `y` while `cause` alone
    /// holds `x` (every server up as planned), else why not.
    fn isolates(&self, seq: &Sequence, cause: &Class) -> Result<(), String> {
        let mut files = self.base.clone();
        let mut running = self.base.clone();
        let mut previous = files.get(self.node).cloned().unwrap_or_default();
        // Whether the node ever booted with `x` before its last boot.
        let mut had_x = self.value(&files, self.node).as_deref() == Some(self.x);
        let keys = [self.key.key.clone()];
        for st in &seq.steps {
            let Some(n) = self.nodes.iter().find(|n| n.name == st.node) else {
                return Err(format!("no node {}", st.node));
            };
            if st.node == self.node {
                previous = files.get(self.node).cloned().unwrap_or_default();
                had_x |= self.rules.value(&previous, &self.key.key).as_deref() == Some(self.x);
            }
            let file = files.entry(st.node.clone()).or_default();
            file.extend(st.set.clone());
            let own = file.clone();
            let mut others = running.clone();
            others.remove(&st.node);
            match model::predict(self.rules, self.nodes, n, false, &own, &others, &keys) {
                Boot::Up(_) => {
                    running.insert(st.node.clone(), own);
                }
                Boot::Refused(_) | Boot::Fails(_) => {
                    return Err(format!(
                        "k3s's rules refuse {} with {}={} there",
                        st.node,
                        self.key.key,
                        self.rules.value(&own, &self.key.key).unwrap_or_default()
                    ));
                }
            }
        }
        let holds = |n: &str| self.value(&running, n).as_deref() == Some(self.x);
        let holders: Vec<&str> = (self.nodes.iter())
            .filter(|n| n.is_server() && n.name != self.node && holds(&n.name))
            .map(|n| n.name.as_str())
            .collect();
        let mine = self.value(&running, self.node);
        let before = self.rules.value(&previous, &self.key.key);
        let alone = match cause {
            Class::Stale => holders.is_empty() && had_x,
            Class::TakenFrom(c) => holders == [c.as_str()] && before.as_deref() == Some(self.y),
            _ => false,
        };
        if alone && mine.as_deref() == Some(self.y) {
            Ok(())
        } else {
            Err(format!(
                "the sequence does not leave {cause} alone with {}={}",
                self.key.key, self.x
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::model::tests::etcd_split;

    fn key(name: &str) -> KeySpace {
        KeySpace {
            key: name.into(),
            values: ["false".into(), "true".into()],
            boolean: true,
            signal: name.into(),
            shows: Shows {
                key: name.into(),
                up_when: Some(true),
            },
            roles: vec![],
        }
    }

    /// Every node starting with `key: false`, as the topology's config gives it.
    fn base(nodes: &[NodeInfo], key: &KeySpace) -> BTreeMap<String, Config> {
        (nodes.iter())
            .map(|n| (n.name.clone(), [(key.key.clone(), "false".into())].into()))
            .collect()
    }

    fn steps(s: &Sequence) -> Vec<String> {
        (s.steps.iter())
            .map(|st| {
                let v: Vec<String> = st.set.values().cloned().collect();
                format!("{}={}", st.node, v.join(","))
            })
            .collect()
    }

    fn setting<'a>(
        nodes: &'a [NodeInfo],
        base: &'a BTreeMap<String, Config>,
        rules: &'a Rules,
        key: &'a KeySpace,
    ) -> Setting<'a> {
        // etcd-2 showed `false` where its config says `true`: the #12753 shape.
        Setting {
            nodes,
            base,
            rules,
            key,
            node: "etcd-2",
            x: "false",
            y: "true",
        }
    }

    /// A stale value: the node booted with the value (it runs it already), every server gets
    /// the other one in topology order, then the node restarts again: nobody but its past
    /// holds the value (the cached-flannel-backend plant keeps its first boot's, k3s #13388).
    #[test]
    fn the_stale_probe_leaves_only_the_nodes_past_holding_the_value() {
        let (nodes, rules, k) = (
            etcd_split(),
            Rules::of(distro::Distro::K3s),
            key("flannel-x"),
        );
        let base = base(&nodes, &k);
        let s = setting(&nodes, &base, &rules, &k)
            .sequence(&Class::Stale, "d")
            .expect("built");
        assert_eq!(s.id, "d-stale");
        assert_eq!(
            steps(&s),
            [
                "etcd-1=true",
                "etcd-2=true",
                "etcd-3=true",
                "cp-1=true",
                "etcd-2="
            ]
        );
        // etcd-1, cp-1's join server, on a critical key: cp-1 gets the value after it, so it is
        // not refused (the cached-flannel-backend bench row once found no stale sequence).
        let critical = key("supervisor-metrics");
        let base_c = self::base(&nodes, &critical);
        let set = Setting {
            node: "etcd-1",
            ..setting(&nodes, &base_c, &rules, &critical)
        };
        let s = set.sequence(&Class::Stale, "d").expect("built");
        assert_eq!(
            steps(&s),
            [
                "etcd-1=true",
                "etcd-2=true",
                "etcd-3=true",
                "cp-1=true",
                "etcd-1="
            ]
        );
    }

    /// Taken from the joined server (critical key supervisor-metrics): everyone to the other
    /// value in topology order (etcd-1 first, so cp-1, which bootstraps against it, is not
    /// refused), etcd-1 back, then etcd-2 restarted again: etcd-1 alone holds the value.
    #[test]
    fn the_taken_from_probe_gives_the_candidate_alone_the_value_and_restarts_again() {
        let (nodes, rules, k) = (
            etcd_split(),
            Rules::of(distro::Distro::K3s),
            key("supervisor-metrics"),
        );
        let base = base(&nodes, &k);
        let set = setting(&nodes, &base, &rules, &k);
        let s = set
            .sequence(&Class::TakenFrom("etcd-1".into()), "d")
            .expect("built");
        assert_eq!(s.id, "d-taken-from-etcd-1");
        assert_eq!(
            steps(&s),
            [
                "etcd-1=true",
                "etcd-2=true",
                "etcd-3=true",
                "cp-1=true",
                "etcd-1=false",
                "etcd-2="
            ]
        );
        let s = set
            .sequence(&Class::TakenFrom("etcd-3".into()), "d")
            .expect("built");
        assert_eq!(steps(&s)[4..], ["etcd-3=false", "etcd-2="]);
    }

    /// cp-1 cannot hold a critical value its join server does not: k3s refuses its boot, so
    /// that candidate has no distinguishing sequence (said, not run); a non-critical key it can.
    #[test]
    fn a_candidate_k3s_refuses_alone_with_the_value_has_no_sequence() {
        let (nodes, rules) = (etcd_split(), Rules::of(distro::Distro::K3s));
        let critical = key("supervisor-metrics");
        let base = base(&nodes, &critical);
        assert!(rules.critical.contains("supervisor-metrics"));
        let err = setting(&nodes, &base, &rules, &critical)
            .sequence(&Class::TakenFrom("cp-1".into()), "d")
            .expect_err("refused");
        assert!(err.contains("refuse cp-1"), "{err}");
        let plain = key("disable-kube-proxy");
        assert!(!rules.critical.contains("disable-kube-proxy"));
        let s = setting(&nodes, &base, &rules, &plain)
            .sequence(&Class::TakenFrom("cp-1".into()), "d")
            .expect("built");
        assert_eq!(steps(&s)[4..], ["cp-1=false", "etcd-2="]);
        // The node itself, or a class no sequence isolates, is no candidate.
        for c in [Class::TakenFrom("etcd-2".into()), Class::WronglyRefused] {
            assert!(setting(&nodes, &base, &rules, &plain)
                .sequence(&c, "d")
                .is_err());
        }
    }

    /// The decision is the first candidate whose run showed the value; none: the oracle's.
    #[test]
    fn the_cause_is_the_candidate_whose_run_still_shows_the_value() {
        let probe = |cause: Class, explains: Option<bool>| Probe {
            cause,
            run: Some("runs/x".into()),
            showed: None,
            explains,
            note: None,
        };
        let named = Class::TakenFrom("cp-1".into());
        let probes = [
            probe(Class::Stale, Some(false)),
            probe(Class::TakenFrom("cp-1".into()), None),
            probe(Class::TakenFrom("etcd-1".into()), Some(true)),
        ];
        assert_eq!(decide(&named, &probes), Class::TakenFrom("etcd-1".into()));
        // None showed it: the one not ruled out, by elimination; all ruled out: the oracle's.
        let cp1 = Class::TakenFrom("cp-1".into());
        assert_eq!(decide(&Class::Stale, &probes[..2]), cp1);
        assert_eq!(decide(&named, &probes[..1]), named);
        assert_eq!(
            decide(&named, &[probe(Class::Stale, Some(true))]),
            Class::Stale
        );
        let k = key("supervisor-metrics");
        assert_eq!(other_value(&k, "false").as_deref(), Some("true"));
        assert_eq!(other_value(&k, "maybe"), None);
    }
}
