//! The oracle: a pure function from one recorded run (result.json: the topology, each step's
//! configs, each boot and each observation) to the ways it left the model of k3s's rules
//! (`model.rs`). Nothing here reads the engine, so `repro explore --recheck` re-judges runs made
//! anywhere. Findings group many pieces of evidence under one cause (class, key, role, source).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::raw::Role;
use crate::result::{BootEnd, BootRecord, Observation, Observed, Rule, RunResult};
use crate::scenario::Shows;

use super::model::{self, Boot, Config, NodeInfo, Rules};

/// How a boot left the model: the finding classes of docs/explore.md. Serialised by name
/// (`taken-from-cp-1`, `stale`, `wrongly-refused`, `died`, `unguarded-divergence`,
/// `inconclusive`, `not-ready`), as findings.json and campaign ids spell them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Class {
    /// The node showed another server's value (`taken-from-<node>`; `elsewhere` when no
    /// running server holds it).
    TakenFrom(String),
    /// It showed its own previous value, which no other server holds.
    Stale,
    /// It died naming keys the model does not refuse.
    WronglyRefused,
    /// It died where the model says it comes up, naming no key.
    Died,
    /// Servers run with different critical values and nothing refused it (by design).
    UnguardedDivergence,
    /// The value was decided by the settle rule alone, or not at all.
    Inconclusive,
    /// A node the liveness rules keep Ready was not, or an upgraded node runs another version
    /// than its target (the lifecycle strategy, `liveness.rs`).
    NotReady,
}

const TAKEN_FROM: &str = "taken-from-";

impl Class {
    pub(crate) fn name(&self) -> String {
        match self {
            Class::TakenFrom(n) => format!("{TAKEN_FROM}{n}"),
            Class::Stale => "stale".into(),
            Class::WronglyRefused => "wrongly-refused".into(),
            Class::Died => "died".into(),
            Class::UnguardedDivergence => "unguarded-divergence".into(),
            Class::Inconclusive => "inconclusive".into(),
            Class::NotReady => "not-ready".into(),
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Class> {
        Some(match s {
            "stale" => Class::Stale,
            "wrongly-refused" => Class::WronglyRefused,
            "died" => Class::Died,
            "unguarded-divergence" => Class::UnguardedDivergence,
            "inconclusive" => Class::Inconclusive,
            "not-ready" => Class::NotReady,
            _ => Class::TakenFrom(s.strip_prefix(TAKEN_FROM).filter(|n| !n.is_empty())?.into()),
        })
    }

    /// The distribution broke its own rule (not by design, not undecided): minimised.
    pub(crate) fn is_defect(&self) -> bool {
        matches!(
            self,
            Class::TakenFrom(_)
                | Class::Stale
                | Class::WronglyRefused
                | Class::Died
                | Class::NotReady
        )
    }

    /// The node died where the model says it comes up.
    pub(crate) fn is_death(&self) -> bool {
        matches!(self, Class::WronglyRefused | Class::Died)
    }
}

impl std::fmt::Display for Class {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

impl PartialEq<&str> for Class {
    fn eq(&self, other: &&str) -> bool {
        self.name() == *other
    }
}

impl Serialize for Class {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

impl<'de> Deserialize<'de> for Class {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Class, D::Error> {
        let s = String::deserialize(d)?;
        Class::parse(&s)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown finding class `{s}`")))
    }
}

/// One way one boot of one run left the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Piece {
    pub(crate) class: Class,
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
    /// Whether the key is critical (a `CriticalControlArgs` field every server must share):
    /// tells the #12753 class from a non-critical key an agent takes from its server.
    #[serde(default)]
    pub(crate) critical: bool,
}

impl Piece {
    /// What makes two pieces one finding.
    pub(crate) fn cause(&self) -> (Class, String, String, String) {
        (
            self.class.clone(),
            self.key.clone(),
            self.role.clone(),
            self.source.clone(),
        )
    }
}

/// The topology's nodes as the model knows them (the liveness rules read them too).
pub(super) fn nodes_of(r: &RunResult) -> Vec<NodeInfo> {
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

/// Whether the boot died: its container exited on its own, or its log broke before it was
/// ever ready. A stream lost after the node was ready is no death (on systemd nodes the journal
/// follower breaks when teardown removes the container, and the state can no longer be read):
/// counting it made every RKE2 campaign report a `died/exit` its confirmation never showed.
fn died(b: &BootRecord) -> bool {
    match b.end {
        BootEnd::Exited => true,
        BootEnd::Lost => b.ready_at.is_none(),
        BootEnd::Running | BootEnd::Stopped => false,
    }
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

/// Judges one run: every boot of every step, against what the model predicts for it.
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
    let run = RunView {
        r,
        rules: &rules,
        nodes: &nodes,
        shows: &shows,
        keys: &keys,
        version: &version,
    };
    let mut out = Vec::new();
    for step in &r.steps {
        for b in r.boots.iter().filter(|b| b.step == step.index) {
            let Some(node) = nodes.iter().find(|n| n.name == b.node) else {
                continue;
            };
            let obs: Vec<&Observation> = step
                .observations
                .iter()
                .filter(|o| o.node == node.name && o.boot == b.boot)
                .collect();
            let boot = BootView {
                run: &run,
                node,
                b,
                step: step.index,
                own: config_at(r, step.index, &node.name),
                running: running_before(r, step.index, b),
                dead: died(b) || obs.iter().any(|o| o.observed == Observed::Dead),
                obs,
            };
            out.extend(boot.judge());
        }
    }
    out
}

/// The causes that explain `p`, a value shown off the model (`taken-from-…` or `stale`), in
/// its run: the node's own previous value when it is the one shown (first), then each other
/// server running with it when the boot started — the node's join server, the server its load
/// balancer reached, the rest in topology order. One candidate: nothing to tell apart.
pub(crate) fn candidates(r: &RunResult, p: &Piece) -> Vec<Class> {
    let rules = Rules::of(r.distribution);
    let nodes = nodes_of(r);
    let Some(node) = nodes.iter().find(|n| n.name == p.node) else {
        return Vec::new();
    };
    let Some(b) = (r.boots.iter())
        .filter(|b| b.node == p.node && b.step == p.step)
        .max_by_key(|b| b.boot)
    else {
        return Vec::new();
    };
    let running = running_before(r, p.step, b);
    let holds = |m: &str| {
        (running.get(m))
            .and_then(|c| rules.value(c, &p.key))
            .as_deref()
            == Some(p.observed.as_str())
    };
    let previous = (r.boots.iter())
        .filter(|q| q.node == p.node && q.boot < b.boot)
        .max_by_key(|q| q.boot)
        .map(|q| config_at(r, q.step, &p.node))
        .and_then(|c| rules.value(&c, &p.key));
    let mut out = Vec::new();
    if previous.as_deref() == Some(p.observed.as_str()) {
        out.push(Class::Stale);
    }
    let reached = b.lb_server.as_ref().and_then(|l| l.node.clone());
    let first = [node.join.clone(), reached].into_iter().flatten();
    let rest = nodes
        .iter()
        .filter(|m| m.is_server())
        .map(|m| m.name.clone());
    for m in first.chain(rest) {
        let c = Class::TakenFrom(m.clone());
        if m != p.node && holds(&m) && !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

/// What every boot of one run is judged against.
struct RunView<'a> {
    r: &'a RunResult,
    rules: &'a Rules,
    nodes: &'a [NodeInfo],
    shows: &'a BTreeMap<String, Shows>,
    keys: &'a [String],
    version: &'a str,
}

/// One boot of one node in one step, with the configs around it.
struct BootView<'a> {
    run: &'a RunView<'a>,
    node: &'a NodeInfo,
    b: &'a BootRecord,
    step: usize,
    /// The node's own config in this step.
    own: Config,
    /// The config of every live server when this boot started.
    running: BTreeMap<String, Config>,
    /// The boot's observations.
    obs: Vec<&'a Observation>,
    dead: bool,
}

/// The lines (or probe output) behind an observation, the first three.
fn lines_of(o: &Observation) -> Vec<String> {
    o.evidence.iter().take(3).map(|e| e.text.clone()).collect()
}

impl BootView<'_> {
    fn judge(&self) -> Vec<Piece> {
        let rules = self.run.rules;
        let predicted = model::predict(
            rules,
            self.run.nodes,
            self.node,
            self.b.boot == 1,
            &self.own,
            &self.running,
            self.run.keys,
        );
        match predicted {
            Boot::Refused(diff) if !self.dead => self.came_up_unrefused(&diff),
            Boot::Refused(diff) => self.refused_otherwise(&diff),
            // k3s dies before any config check (its join server is down): nothing to judge.
            Boot::Fails(_) => Vec::new(),
            Boot::Up(_) if self.dead => self.died_unexpectedly(),
            Boot::Up(values) => {
                let mut out = self.shown_values(&values);
                out.extend(self.divergent_member());
                out
            }
        }
    }

    fn piece(
        &self,
        class: Class,
        key: &str,
        signal: &str,
        observed: String,
        predicted: String,
        evidence: Vec<String>,
    ) -> Piece {
        Piece {
            class,
            key: key.to_string(),
            node: self.node.name.clone(),
            role: self.node.role.as_str().to_string(),
            source: self.node.config_source(self.run.nodes),
            step: self.step,
            signal: signal.to_string(),
            observed,
            predicted,
            evidence,
            version: self.run.version.to_string(),
            run: String::new(),
            critical: self.run.rules.critical.contains(key),
        }
    }

    /// The evidence of this boot's observation of `signal`, if any.
    fn lines_of_signal(&self, signal: &str) -> Vec<String> {
        self.obs
            .iter()
            .find(|o| o.signal == signal)
            .map(|o| lines_of(o))
            .unwrap_or_default()
    }

    /// The model says k3s refuses this boot (a bootstrap with critical keys different from its
    /// server's), and it came up: nothing guarded the divergence.
    fn came_up_unrefused(&self, diff: &[String]) -> Vec<Piece> {
        diff.iter()
            .map(|k| {
                self.piece(
                    Class::UnguardedDivergence,
                    k,
                    "ready",
                    "up".into(),
                    format!("refused: critical configuration mismatched: {k}"),
                    self.lines_of_signal("ready"),
                )
            })
            .collect()
    }

    /// The keys this boot's refusal named (`critical configuration mismatched: <key>`).
    fn named_keys(&self) -> Vec<String> {
        let named = self.obs.iter().filter(|o| o.signal == "config-mismatch");
        named
            .filter_map(|o| match &o.observed {
                Observed::Value(v) => Some(v.split(',').map(str::to_string).collect::<Vec<_>>()),
                _ => None,
            })
            .flatten()
            .collect()
    }

    /// The model says the boot comes up, and it died: refused naming keys (k3s #4768) is
    /// `wrongly-refused`; any other death (a Go panic, another fatal, an exit with no line) is
    /// `died`, with its lines.
    fn died_unexpectedly(&self) -> Vec<Piece> {
        let named = self.named_keys();
        if named.is_empty() {
            return vec![self.died(&format!(
                "{} comes up (k3s's rules refuse no key here)",
                self.node.name
            ))];
        }
        self.wrongly_refused(&named)
    }

    /// The model says k3s refuses this boot naming `diff`, and it died: keys named beyond
    /// those are a wrong refusal of each, and a death that named none of them (a panic, another
    /// fatal) is `died`.
    fn refused_otherwise(&self, diff: &[String]) -> Vec<Piece> {
        let named = self.named_keys();
        // Died naming none of the keys k3s compares: a panic, or a death without k3s's fatal.
        let fatal = (self.obs.iter()).any(|o| o.signal == "fatal" && o.observed == Observed::Up);
        if named.is_empty() && (self.panicked() || !fatal) {
            return vec![self.died(&format!(
                "{} refused naming {} (critical configuration mismatched, then k3s's fatal)",
                self.node.name,
                diff.join(",")
            ))];
        }
        let extra: Vec<String> = named.into_iter().filter(|k| !diff.contains(k)).collect();
        self.wrongly_refused(&extra)
    }

    fn panicked(&self) -> bool {
        (self.obs.iter()).any(|o| o.signal == "panic" && o.observed == Observed::Up)
    }

    /// A death the model does not predict, keyed by how it showed: `panic` (Go's banner),
    /// `fatal` (a fatal line) or `exit` (neither), with its lines and exit status.
    fn died(&self, predicted: &str) -> Piece {
        let fatal = (self.obs.iter()).any(|o| o.signal == "fatal" && o.observed == Observed::Up);
        let (key, signal) = if self.panicked() {
            ("panic", "panic")
        } else if fatal {
            ("fatal", "fatal")
        } else {
            ("exit", "ready")
        };
        let mut evidence = self.lines_of_signal(signal);
        evidence.push(match self.b.exit_code {
            Some(c) => format!("{} exited with status {c}", self.node.name),
            None => format!("{} died (no exit status recorded)", self.node.name),
        });
        let observed = match signal {
            "ready" => "died".to_string(),
            s => format!("{s}: up"),
        };
        self.piece(
            Class::Died,
            key,
            signal,
            observed,
            predicted.to_string(),
            evidence,
        )
    }

    /// The boot died naming `named` where the model predicts no refusal of them (k3s #4768).
    fn wrongly_refused(&self, named: &[String]) -> Vec<Piece> {
        named
            .iter()
            .map(|k| {
                self.piece(
                    Class::WronglyRefused,
                    k,
                    "config-mismatch",
                    k.clone(),
                    format!("{k} equal on {} and its server: no refusal", self.node.name),
                    self.lines_of_signal("config-mismatch"),
                )
            })
            .collect()
    }

    /// The key's value in `node`'s running config.
    fn running_value(&self, node: &str, key: &str) -> Option<String> {
        (self.running.get(node)).and_then(|c| self.run.rules.value(c, key))
    }

    /// Each observation of a signal that shows a key, against the model's value: a server's
    /// own, an agent's from the server it reached (by design).
    fn shown_values(&self, values: &BTreeMap<String, Option<String>>) -> Vec<Piece> {
        let reached = self.b.lb_server.as_ref().and_then(|l| l.node.clone());
        let mut out = Vec::new();
        for o in &self.obs {
            let Some(sh) = self.run.shows.get(&o.signal) else {
                continue;
            };
            let predicted = match values.get(&sh.key).cloned().flatten() {
                Some(v) => Some(v),
                None => reached
                    .as_ref()
                    .and_then(|m| self.running_value(m, &sh.key)),
            };
            let Some(predicted) = predicted else {
                continue;
            };
            let observed = shown_value(sh, &o.observed);
            if observed.as_deref() == Some(predicted.as_str()) {
                continue;
            }
            // No positive evidence: the settle rule decided, or nothing did.
            let Some(x) =
                observed.filter(|_| !matches!(o.rule, Rule::SettleWindow | Rule::Undecided))
            else {
                let shown = shown_value(sh, &o.observed).unwrap_or_else(|| o.observed.to_string());
                out.push(self.piece(
                    Class::Inconclusive,
                    &sh.key,
                    &o.signal,
                    shown,
                    predicted,
                    lines_of(o),
                ));
                continue;
            };
            let class = self.whose(&sh.key, &x, reached.as_deref());
            let mut e = lines_of(o);
            if let Some(l) = &self.b.lb_server {
                e.push(format!(
                    "load balancer reached {} ({})",
                    l.address,
                    l.node.as_deref().unwrap_or("?")
                ));
            }
            out.push(self.piece(class, &sh.key, &o.signal, x, predicted, e));
        }
        out
    }

    /// Whose value `x` of `key` the node shows: the server its load balancer reached, when the
    /// log says; else the node it joins, else any server holding it; its own previous value only
    /// when no other server holds it (then nothing else explains it).
    fn whose(&self, key: &str, x: &str, reached: Option<&str>) -> Class {
        let holds = |m: &str| self.running_value(m, key).as_deref() == Some(x);
        let me = self.b.node.as_str();
        let join = self.node.join.as_deref().filter(|j| holds(j));
        let any = (self.run.nodes.iter())
            .find(|m| m.name != me && m.is_server() && holds(&m.name))
            .map(|m| m.name.as_str());
        let r = self.run.r;
        let previous = (r.boots.iter())
            .filter(|p| p.node == me && p.boot < self.b.boot)
            .max_by_key(|p| p.boot)
            .map(|p| config_at(r, p.step, me))
            .and_then(|c| self.run.rules.value(&c, key));
        if let Some(m) = reached.filter(|m| *m != me && holds(m)).or(join).or(any) {
            Class::TakenFrom(m.to_string())
        } else if previous.as_deref() == Some(x) {
            Class::Stale
        } else {
            Class::TakenFrom("elsewhere".into())
        }
    }

    /// Servers that hold different critical values with nothing refusing it: an etcd member
    /// that already has data is never checked again (by design).
    fn divergent_member(&self) -> Vec<Piece> {
        let node = self.node;
        if !matches!(node.role, Role::Etcd | Role::All) || node.bootstraps(self.b.boot == 1) {
            return Vec::new();
        }
        let rules = self.run.rules;
        let mut out = Vec::new();
        for k in self.run.keys.iter().filter(|k| rules.critical.contains(*k)) {
            let mine = rules.value(&self.own, k);
            let other = (self.run.nodes.iter())
                .filter(|m| m.name != node.name && m.is_server())
                .find(|m| {
                    self.running
                        .get(&m.name)
                        .is_some_and(|c| rules.value(c, k) != mine)
                });
            if let Some(m) = other {
                let theirs = self.running_value(&m.name, k);
                out.push(self.piece(
                    Class::UnguardedDivergence,
                    k,
                    "ready",
                    format!(
                        "{}={} up beside {}={}",
                        node.name,
                        mine.unwrap_or_default(),
                        m.name,
                        theirs.unwrap_or_default()
                    ),
                    "k3s checks critical keys only at bootstrap: no refusal expected".into(),
                    self.lines_of_signal("ready"),
                ));
            }
        }
        out
    }
}
