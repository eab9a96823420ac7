//! Validated scenario types: what `load` builds from the user's files once every check passed.
//! Everything downstream (plan, run, verdict, reports) works on these, never on raw YAML.

use std::path::PathBuf;
use std::time::Duration;

use indexmap::IndexMap;
use regex::Regex;
use serde::Serialize;

use crate::raw::{ConfigValue, Role};
use crate::version::{K3sVersion, ReleaseSet};

#[derive(Debug, Clone)]
pub struct Topology {
    pub name: String,
    pub description: String,
    pub source: Option<String>,
    pub path: PathBuf,
    pub default_version: K3sVersion,
    pub config: IndexMap<String, ConfigValue>,
    pub files: IndexMap<String, String>,
    pub nodes: Vec<Node>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Node {
    pub name: String,
    pub role: Role,
    pub init: bool,
    pub join: Option<String>,
    pub deferred: bool,
    pub config: IndexMap<String, ConfigValue>,
    pub files: IndexMap<String, String>,
    pub env: IndexMap<String, String>,
}

impl Topology {
    pub fn node(&self, name: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.name == name)
    }
}

#[derive(Debug, Clone)]
pub struct Check {
    pub name: String,
    pub topology: String,
    pub issue: String,
    pub summary: String,
    pub description: String,
    pub sources: Vec<String>,
    pub path: PathBuf,
    /// Empty when the check documents behaviour that never changed (always expected `fixed`).
    pub fixed_in: ReleaseSet,
    /// The change of `releases/k3s-changes.yaml` that `fixed-in` names, if it names one.
    pub fixed_in_change: Option<String>,
    /// `settle:` as the check sets it: a margin after every deciding line (None: the defaults
    /// of [`DEFAULT_SETTLE`] after a hint, none after an ordered line).
    pub settle: Option<Duration>,
    pub steps: Vec<Step>,
}

/// Settle window after a `settled-by` *hint* (a line k3s does not order after the feature's
/// own): a few seconds after such a line is ample on a laptop. Lines k3s prints after the
/// feature's line need none (docs/k3s-behaviour.md).
pub const DEFAULT_SETTLE: Duration = Duration::from_secs(3);

#[derive(Debug, Clone, Serialize)]
pub struct Step {
    pub name: String,
    pub why: String,
    pub config: IndexMap<String, IndexMap<String, ConfigValue>>,
    pub remove: IndexMap<String, Vec<String>>,
    pub files: IndexMap<String, IndexMap<String, Option<String>>>,
    pub start: Vec<String>,
    /// Restart groups in order; every node of a group restarts at once.
    pub restart: Vec<Vec<String>>,
    pub expect: Expectations,
    pub bug: Expectations,
    /// Where the step is in its check file (1-based line of its `- name:`), and where each
    /// expectation is (node -> signal -> line): JUnit points CI annotations at them.
    pub line: usize,
    pub expect_lines: ExpectLines,
}

/// node -> signal -> 1-based line in the check file.
pub type ExpectLines = IndexMap<String, IndexMap<String, usize>>;

impl Step {
    /// Nodes whose boot changes in this step, in order.
    pub fn booted_nodes(&self) -> Vec<&str> {
        self.start
            .iter()
            .map(String::as_str)
            .chain(self.restart.iter().flatten().map(String::as_str))
            .collect()
    }

    /// Nodes whose config or files this step edits.
    pub fn edited_nodes(&self) -> Vec<&str> {
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
pub const ANY: &str = "any";

/// node -> signal -> expected value.
pub type Expectations = IndexMap<String, IndexMap<String, Expected>>;

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(into = "String")]
pub enum Expected {
    Up,
    Down,
    Value(String),
    /// Only under `bug:`: the bug world can show either value here (it depends on which
    /// server a buggy joiner's load balancer reaches), so `reproduced` does not judge it.
    Any,
}

impl Expected {
    pub fn parse(s: &str) -> Expected {
        match s {
            "up" => Expected::Up,
            "down" => Expected::Down,
            other => Expected::Value(other.to_string()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Expected::Up => "up",
            Expected::Down => "down",
            Expected::Value(v) => v,
            Expected::Any => ANY,
        }
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
    pub path: PathBuf,
    pub by_name: IndexMap<String, Signal>,
}

impl Signals {
    pub fn get(&self, name: &str) -> Option<&Signal> {
        self.by_name.get(name)
    }
}

#[derive(Debug, Clone)]
pub struct Signal {
    pub name: String,
    pub description: String,
    /// Versions from which k3s has the feature; `None` = always.
    pub since: Option<ReleaseSet>,
    pub up: Vec<LinePattern>,
    pub down: Vec<LinePattern>,
    pub value: Vec<LinePattern>,
    pub settled_by: Vec<LinePattern>,
    pub probe: Option<Probe>,
    pub on_death: Option<Expected>,
    /// Roles on which the signal is observable; empty = all.
    pub roles: Vec<Role>,
}

impl Signal {
    pub fn observable_on(&self, role: Role) -> bool {
        self.roles.is_empty() || self.roles.contains(&role)
    }

    /// Value signals report text (a version, a role list); the others are up or down.
    pub fn is_value(&self) -> bool {
        !self.value.is_empty()
    }

    pub fn exists_in(&self, v: &K3sVersion) -> bool {
        self.since.as_ref().is_none_or(|s| s.contains(v))
    }
}

#[derive(Debug, Clone)]
pub struct LinePattern {
    pub regex: Regex,
    pub since: Option<ReleaseSet>,
    pub until: Option<ReleaseSet>,
    pub value: Option<String>,
    /// `settled-by` only: k3s prints this line after the feature's own line in the same start-up
    /// sequence, so its arrival without an `up` line proves `down` (no settle window needed).
    pub ordered: bool,
}

impl LinePattern {
    /// Whether this k3s version prints the line at all.
    pub fn applies_to(&self, v: &K3sVersion) -> bool {
        self.since.as_ref().is_none_or(|s| s.contains(v))
            && self.until.as_ref().is_none_or(|u| !u.contains(v))
    }
}

#[derive(Debug, Clone)]
pub struct Probe {
    pub command: Vec<String>,
    pub after: Vec<LinePattern>,
    pub up: Vec<ProbeRule>,
    pub down: Vec<ProbeRule>,
    pub timeout: Duration,
}

#[derive(Debug, Clone)]
pub struct ProbeRule {
    pub exit: Option<i64>,
    pub output: Option<Regex>,
}

impl ProbeRule {
    pub fn matches(&self, exit: i64, output: &str) -> bool {
        self.exit.is_none_or(|e| e == exit)
            && self.output.as_ref().is_none_or(|r| r.is_match(output))
    }
}

/// A check with everything it needs, ready to plan.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub check: Check,
    pub topology: Topology,
    pub signals: Signals,
}
