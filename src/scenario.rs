//! Validated scenario types: what `load` builds from the user's files once every check passed.
//! Everything downstream (plan, run, verdict, reports) works on these, never on raw YAML.

use std::path::PathBuf;
use std::time::Duration;

use indexmap::IndexMap;
use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::raw::{ConfigValue, Role};
use distro::{ReleaseSet, Version};

#[derive(Debug, Clone)]
pub(crate) struct Topology {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) path: PathBuf,
    /// Resolved once here: everything downstream reads the distribution's facts from it.
    pub(crate) distro: distro::Distro,
    pub(crate) default_version: Version,
    pub(crate) config: IndexMap<String, ConfigValue>,
    pub(crate) files: IndexMap<String, String>,
    pub(crate) nodes: Vec<Node>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Node {
    pub(crate) name: String,
    pub(crate) role: Role,
    pub(crate) init: bool,
    pub(crate) join: Option<String>,
    pub(crate) deferred: bool,
    pub(crate) config: IndexMap<String, ConfigValue>,
    pub(crate) files: IndexMap<String, String>,
    pub(crate) env: IndexMap<String, String>,
}

impl Topology {
    pub(crate) fn node(&self, name: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// Each node's config keys before the first step: the topology-wide ones, then the node's
    /// own over them. With [`Step::apply_keys`], the one reading of "the keys the check gave a
    /// node by then" (the plan renders them, the bug world reads its served keys from them,
    /// inspect matches a log's config against them).
    pub(crate) fn node_keys(&self) -> NodeKeys {
        (self.nodes.iter())
            .map(|n| {
                let mut m = self.config.clone();
                m.extend(n.config.clone());
                (n.name.clone(), m)
            })
            .collect()
    }
}

/// node -> its config keys (the user's, not the ones its role stands for), in the order set.
pub(crate) type NodeKeys = IndexMap<String, IndexMap<String, ConfigValue>>;

#[derive(Debug, Clone)]
pub(crate) struct Check {
    pub(crate) name: String,
    pub(crate) topology: String,
    pub(crate) issue: String,
    pub(crate) summary: String,
    pub(crate) description: String,
    pub(crate) sources: Vec<String>,
    pub(crate) path: PathBuf,
    /// Empty when the check documents behaviour that never changed (always expected `fixed`).
    pub(crate) fixed_in: ReleaseSet,
    /// The change of `releases/k3s-changes.yaml` that `fixed-in` names, if it names one.
    pub(crate) fixed_in_change: Option<String>,
    /// `introduced-in:` — for a regression, the releases that have the bug's cause; a version
    /// without it is expected `fixed`. `None`: the bug was always there before `fixed-in`.
    pub(crate) introduced_in: Option<ReleaseSet>,
    /// The change `introduced-in` names, if it names one.
    pub(crate) introduced_in_change: Option<String>,
    /// `settle:` as the check sets it: a margin after every deciding line (None: the defaults
    /// of [`DEFAULT_SETTLE`] after a hint, none after an ordered line).
    pub(crate) settle: Option<Duration>,
    pub(crate) steps: Vec<Step>,
}

/// Settle window after a `settled-by` *hint* (a line k3s does not order after the feature's
/// own): a few seconds after such a line is ample on a laptop. Lines k3s prints after the
/// feature's line need none (docs/k3s-behaviour.md).
pub const DEFAULT_SETTLE: Duration = Duration::from_secs(3);

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Step {
    pub(crate) name: String,
    pub(crate) why: String,
    pub(crate) config: IndexMap<String, IndexMap<String, ConfigValue>>,
    pub(crate) remove: IndexMap<String, Vec<String>>,
    pub(crate) files: IndexMap<String, IndexMap<String, Option<String>>>,
    /// Running nodes stopped at once (before `start:`); each stays down until a later `start:`.
    pub(crate) stop: Vec<String>,
    pub(crate) start: Vec<String>,
    /// Restart groups in order; every node of a group restarts at once.
    pub(crate) restart: Vec<Vec<String>>,
    /// Nodes re-created on another version's image over their volumes, one after another
    /// (after the restarts), each waited for like a restart.
    pub(crate) upgrade: Vec<Upgrade>,
    pub(crate) expect: Expectations,
    pub(crate) bug: Expectations,
    /// Where the step is in its check file (1-based line of its `- name:`), and where each
    /// expectation is (node -> signal -> line): JUnit points CI annotations at them.
    pub(crate) line: usize,
    pub(crate) expect_lines: ExpectLines,
    /// Where each expectation of `expect:` and of `bug:` is, as (line, column): the bug world's
    /// refusals name them (src/bug_world.rs).
    pub(crate) expect_places: Places,
    pub(crate) bug_places: Places,
}

impl Step {
    /// The step's edits of the nodes' keys, in the order a run applies them: `config:` set (a
    /// key set again keeps its place), then `remove:`. A node the topology lacks is passed over
    /// (validation reported it).
    pub(crate) fn apply_keys(&self, keys: &mut NodeKeys) {
        for (node, kv) in &self.config {
            if let Some(k) = keys.get_mut(node) {
                k.extend(kv.clone());
            }
        }
        for (node, ks) in &self.remove {
            if let Some(k) = keys.get_mut(node) {
                for key in ks {
                    k.shift_remove(key);
                }
            }
        }
    }
}

/// One node's `upgrade:`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Upgrade {
    pub(crate) node: String,
    /// The release the node runs from this step on: the one named, or the one a local build
    /// reports (a commit build: the first release of its Kubernetes patch, whose image it runs
    /// in). Skew, the image and the bug world go by it.
    pub(crate) version: Version,
    /// A build copied over the image's binary (`{binary: PATH}`, as `--k3s-binary`'s; or
    /// `{commit: SHA}`, fetched as `--k3s-commit`'s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) binary: Option<UpgradeBinary>,
}

/// A local build an `upgrade:` names, as read when the check loaded.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct UpgradeBinary {
    /// The file, the check file's folder joined to a relative path.
    pub(crate) path: PathBuf,
    pub(crate) sha256: String,
    pub(crate) size: u64,
    /// What it says it is (`k3s -v`'s version): the banner of the node's new boot must say it.
    pub(crate) reported: String,
    /// A CI build's (`{commit: SHA}`) commit, and where it was fetched from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) commit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) url: Option<String>,
}

/// node -> signal -> 1-based line in the check file.
pub(crate) type ExpectLines = IndexMap<String, IndexMap<String, usize>>;

/// node -> signal -> 1-based (line, column) in the check file.
pub(crate) type Places = IndexMap<String, IndexMap<String, (u64, u64)>>;

impl Step {
    /// Nodes whose boot changes in this step, in order.
    pub(crate) fn booted_nodes(&self) -> Vec<&str> {
        self.start
            .iter()
            .map(String::as_str)
            .chain(self.restart.iter().flatten().map(String::as_str))
            .chain(self.upgrade.iter().map(|u| u.node.as_str()))
            .collect()
    }

    /// Nodes whose config or files this step edits.
    pub(crate) fn edited_nodes(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for n in self
            .config
            .keys()
            .chain(self.remove.keys())
            .chain(self.files.keys())
        {
            if !out.contains(&n.as_str()) {
                out.push(n);
            }
        }
        out
    }
}

/// The `bug:` value that says the bug world cannot tell (see `Expected::Any`).
pub(crate) const ANY: &str = "any";

/// node -> signal -> expected value.
pub(crate) type Expectations = IndexMap<String, IndexMap<String, Expected>>;

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", from = "String")]
pub enum Expected {
    Up,
    Down,
    Value(String),
    /// Only under `bug:`: the bug world can show either value here (it depends on which
    /// server a buggy joiner's load balancer reaches), so `reproduced` does not judge it.
    Any,
}

impl Expected {
    pub(crate) fn parse(s: &str) -> Expected {
        match s {
            "up" => Expected::Up,
            "down" => Expected::Down,
            other => Expected::Value(other.to_string()),
        }
    }

    pub(crate) fn as_str(&self) -> &str {
        match self {
            Expected::Up => "up",
            Expected::Down => "down",
            Expected::Value(v) => v,
            Expected::Any => ANY,
        }
    }
}

/// Read back from result.json: `any` is [`Expected::Any`] there (the loader has refused it
/// under `expect:` already).
impl From<&str> for Expected {
    fn from(s: &str) -> Expected {
        if s == ANY {
            Expected::Any
        } else {
            Expected::parse(s)
        }
    }
}

impl From<String> for Expected {
    fn from(s: String) -> Expected {
        Expected::from(s.as_str())
    }
}

impl From<Expected> for String {
    fn from(e: Expected) -> String {
        e.as_str().to_string()
    }
}

impl std::fmt::Display for Expected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Default)]
pub struct Signals {
    pub by_name: IndexMap<String, Signal>,
}

impl Signals {
    pub fn get(&self, name: &str) -> Option<&Signal> {
        self.by_name.get(name)
    }

    /// The signals as a run on `d` sees them: each one's probe is the one written for `d`, else
    /// the unqualified one (the supervisor-metrics probe differs by port and path on rke2).
    pub(crate) fn for_distro(&self, d: distro::Distro) -> Signals {
        let mut out = self.clone();
        for sig in out.by_name.values_mut() {
            let pick = |want: Option<distro::Distro>| {
                sig.probes
                    .iter()
                    .find(|(x, _)| *x == want)
                    .map(|(_, p)| p.clone())
            };
            sig.probe = pick(Some(d)).or_else(|| pick(None));
        }
        out
    }
}

/// The signal whose `up` says a node of `role` is ready: the runner waits for it at a start,
/// and value signals are read once it came (`observe::eval_value`).
pub(crate) fn readiness_signal(role: Role) -> &'static str {
    if role.is_server() {
        READY_SIGNAL
    } else {
        AGENT_READY_SIGNAL
    }
}

/// A server's ready line (`k3s is up and running`).
pub(crate) const READY_SIGNAL: &str = "ready";
/// An agent's ready line (the kubelet's registration on k3s, the agent's own line on rke2).
pub(crate) const AGENT_READY_SIGNAL: &str = "agent-ready";

impl Signals {
    /// Why a node of `role` running `d` can never show `want` for signal `name` — no line it
    /// prints, no probe and no death brings that value, so a run would only wait out its
    /// timeout —, or `None` when something can. Unknown signals, roles the signal cannot be
    /// told on (`Signal::observable_on`, reported on its own) and `any` are not judged here.
    pub(crate) fn never_shows(
        &self,
        name: &str,
        want: &Expected,
        role: Role,
        d: distro::Distro,
    ) -> Option<String> {
        let sig = self.get(name)?;
        if !sig.observable_on(role) || *want == Expected::Any {
            return None;
        }
        if sig.is_value() {
            let ready = readiness_signal(role);
            let shown = self
                .get(ready)
                .is_some_and(|r| r.up.iter().any(|p| p.printed_on(role, d)));
            return (!shown).then(|| {
                format!(
                    "`{name}` is read once the node is ready, and no `{ready}: up` line is printed by {}",
                    on(role, d)
                )
            });
        }
        sig.never_shows(want, role, d)
    }
}

/// "an agent node of k3s"
fn on(role: Role, d: distro::Distro) -> String {
    let a = if role == Role::Agent || role == Role::All || role == Role::Etcd {
        "an"
    } else {
        "a"
    };
    format!("{a} {} node of {d}", role.as_str())
}

/// The regexes of `ps` that `d` prints, each with the roles that print it: "`k3s is up and
/// running` (only etcd, control-plane, all nodes)".
fn described(ps: &[LinePattern], d: distro::Distro) -> Vec<String> {
    ps.iter()
        .filter(|p| p.distro.is_none_or(|x| x == d))
        .map(|p| {
            let re = p.regex.as_str();
            if p.roles.is_empty() {
                format!("`{re}`")
            } else {
                let roles: Vec<&str> = p.roles.iter().map(|r| r.as_str()).collect();
                format!("`{re}` (only {} nodes)", roles.join(", "))
            }
        })
        .collect()
}

#[derive(Debug, Clone)]
pub struct Signal {
    pub(crate) description: String,
    /// Versions from which k3s has the feature; `None` = always.
    pub(crate) since: Option<ReleaseSet>,
    pub up: Vec<LinePattern>,
    pub down: Vec<LinePattern>,
    pub value: Vec<LinePattern>,
    pub settled_by: Vec<LinePattern>,
    /// `undecided-by:` lines: the feature is on but cannot run; the state stays undecided.
    pub(crate) undecided_by: Vec<LinePattern>,
    /// The probe a run on this scenario's distribution uses (see `Signals::for_distro`).
    pub(crate) probe: Option<Probe>,
    /// Every probe written, with the distribution it is for (`None`: every other one).
    pub(crate) probes: Vec<(Option<distro::Distro>, Probe)>,
    pub(crate) on_death: Option<Expected>,
    /// Roles on which the signal is observable; empty = all.
    pub(crate) roles: Vec<Role>,
    /// The config key whose effective value this signal shows (`shows:`), if any.
    pub(crate) shows: Option<Shows>,
    /// Read from the Kubernetes API on a node that serves it (`api:`), not from the node.
    pub(crate) api: Option<ApiRead>,
}

/// What a signal reads from the Kubernetes API (`api:` in checks/signals.yaml).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ApiRead {
    /// The node's `Ready` condition in `GET /api/v1/nodes`: `up` when `True`, `down` when
    /// `False`/`Unknown` or when the API lists no such node.
    NodeReady,
}

impl ApiRead {
    pub(crate) const NAMES: &'static [&'static str] = &["node-ready"];

    pub(crate) fn parse(s: &str) -> Option<ApiRead> {
        (s == "node-ready").then_some(ApiRead::NodeReady)
    }
}

/// What a signal says about a config key's effective value on a node (`shows:` in
/// checks/signals.yaml; read by `repro explore`'s oracle).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shows {
    /// A key of the distribution's flags table.
    pub(crate) key: String,
    /// State signals: the key's value when the signal is `up` (`down` is the other one);
    /// `None` for a value signal, whose observed value is the key's value.
    pub(crate) up_when: Option<bool>,
}

impl Signal {
    pub(crate) fn observable_on(&self, role: Role) -> bool {
        self.roles.is_empty() || self.roles.contains(&role)
    }

    /// Value signals report text (a version, a role list); the others are up or down.
    /// Whether logs can show it: not a signal read from the Kubernetes API during a run
    /// (`api:`, node-ready), which `repro inspect` and the real-log corpus leave out.
    pub fn in_logs(&self) -> bool {
        self.api.is_none()
    }

    pub fn is_value(&self) -> bool {
        !self.value.is_empty() || self.probes.iter().any(|(_, p)| !p.value.is_empty())
    }

    /// The probe a node of `v` runs for this signal (its distribution's, where the release has
    /// it); `None`: the lines decide.
    pub(crate) fn probe_for(&self, v: &Version) -> Option<&Probe> {
        self.probe.as_ref().filter(|p| p.applies_to(v))
    }

    /// Whether this distribution has a probe for the signal (its own, or the unqualified one).
    fn probed_on(&self, d: distro::Distro) -> bool {
        self.probes.iter().any(|(x, _)| x.is_none_or(|x| x == d))
    }

    /// A state signal's `Signals::never_shows`: which lines, probe or death could show `want`
    /// on a node of `role` running `d`, and why none can.
    pub(crate) fn never_shows(
        &self,
        want: &Expected,
        role: Role,
        d: distro::Distro,
    ) -> Option<String> {
        if self.is_value() || self.probed_on(d) || self.api.is_some() {
            return None;
        }
        let printed = |ps: &[LinePattern]| ps.iter().any(|p| p.printed_on(role, d));
        let by_death = self.on_death.as_ref() == Some(want);
        let lines = |ps: &[LinePattern], what: &str| {
            let all = described(ps, d);
            if all.is_empty() {
                format!("it has no `{what}` line")
            } else {
                format!("its `{what}` lines are {}", all.join(", "))
            }
        };
        let death = match &self.on_death {
            Some(v) => format!("a death counts as `{v}`"),
            None => "a death decides nothing".to_string(),
        };
        let why = match want {
            Expected::Up if !(printed(&self.up) || by_death) => {
                format!("{}, and {death}", lines(&self.up, "up"))
            }
            Expected::Down if !(printed(&self.down) || printed(&self.settled_by) || by_death) => {
                format!(
                    "{}; {}; and {death}",
                    lines(&self.down, "down"),
                    lines(&self.settled_by, "settled-by")
                )
            }
            _ => return None,
        };
        Some(format!(
            "nothing {} prints shows it `{want}`: {why}",
            on(role, d)
        ))
    }

    /// What a run waits for to decide this state signal on a node of `role` running `d`, and
    /// which value can never come there: the reason an undecided observation gives.
    pub(crate) fn waited_for(&self, role: Role, d: distro::Distro) -> String {
        let mut parts = Vec::new();
        for (want, ps) in [(Expected::Up, &self.up), (Expected::Down, &self.down)] {
            let ls = described(ps, d);
            if !ls.is_empty() {
                parts.push(format!("a `{want}` line ({})", ls.join(", ")));
            }
        }
        let settle = described(&self.settled_by, d);
        if !settle.is_empty() {
            parts.push(format!("a `settled-by` line ({})", settle.join(", ")));
        }
        if let Some(v) = &self.on_death {
            parts.push(format!("the node's death (`{v}`)"));
        }
        let mut out = format!("waited for {}", parts.join(" or "));
        for want in [Expected::Up, Expected::Down] {
            if let Some(why) = self.never_shows(&want, role, d) {
                out.push_str(&format!("; `{want}` can never come there ({why})"));
            }
        }
        out
    }

    pub(crate) fn exists_in(&self, v: &Version) -> bool {
        self.since.as_ref().is_none_or(|s| s.contains(v))
    }
}

#[derive(Debug, Clone)]
pub struct LinePattern {
    pub regex: Regex,
    pub(crate) since: Option<ReleaseSet>,
    pub(crate) until: Option<ReleaseSet>,
    pub(crate) value: Option<String>,
    /// `settled-by` only: k3s prints this line after the feature's own line in the same start-up
    /// sequence, so its arrival without an `up` line proves `down` (no settle window needed).
    pub(crate) ordered: bool,
    /// The only distribution that prints the line (`distribution:` on the pattern); `None`:
    /// every distribution.
    pub(crate) distro: Option<distro::Distro>,
    /// The roles whose nodes print the line (`roles:` on the pattern); empty: every role. Only
    /// the validator reads it (what a node can ever show): a line a role never prints does
    /// not need filtering out of that role's log.
    pub(crate) roles: Vec<Role>,
}

impl LinePattern {
    /// Whether this version (of its distribution) prints the line at all.
    pub fn applies_to(&self, v: &Version) -> bool {
        self.distro.is_none_or(|d| d == v.distro)
            && self.since.as_ref().is_none_or(|s| s.contains(v))
            && self.until.as_ref().is_none_or(|u| !u.contains(v))
    }

    /// Whether a node of `role` running `d` can print the line at all (any version).
    pub(crate) fn printed_on(&self, role: Role, d: distro::Distro) -> bool {
        self.distro.is_none_or(|x| x == d) && (self.roles.is_empty() || self.roles.contains(&role))
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Probe {
    pub(crate) command: Vec<String>,
    /// Releases whose nodes run it (`None`: every one); elsewhere the signal's lines decide.
    pub(crate) since: Option<ReleaseSet>,
    pub(crate) after: Vec<LinePattern>,
    pub(crate) up: Vec<ProbeRule>,
    pub(crate) down: Vec<ProbeRule>,
    /// A value probe's patterns (a `value` group each); empty for an up/down probe.
    pub(crate) value: Vec<Regex>,
    pub(crate) timeout: Duration,
}

impl Probe {
    /// Whether a node of version `v` runs this probe.
    pub(crate) fn applies_to(&self, v: &Version) -> bool {
        self.since.as_ref().is_none_or(|s| s.contains(v))
    }

    /// A value probe's value in `output`: the first pattern's `value` group that matches, a
    /// YAML list (`- a` / `- b` lines) joined as `a,b`, sorted as value lines are.
    pub(crate) fn value_in(&self, output: &str) -> Option<String> {
        let c = self.value.iter().find_map(|re| re.captures(output))?;
        let text = c.name("value")?.as_str();
        let mut items: Vec<&str> = text
            .lines()
            .map(|l| l.trim().trim_start_matches("- ").trim())
            .filter(|l| !l.is_empty())
            .collect();
        items.sort();
        (!items.is_empty()).then(|| items.join(","))
    }
}

#[derive(Debug, Clone)]
pub(crate) struct ProbeRule {
    pub(crate) exit: Option<i64>,
    pub(crate) output: Option<Regex>,
}

impl ProbeRule {
    pub(crate) fn matches(&self, exit: i64, output: &str) -> bool {
        self.exit.is_none_or(|e| e == exit)
            && self.output.as_ref().is_none_or(|r| r.is_match(output))
    }
}

/// A check with everything it needs, ready to plan.
#[derive(Debug, Clone)]
pub(crate) struct Scenario {
    pub(crate) check: Check,
    pub(crate) topology: Topology,
    pub(crate) signals: Signals,
}
