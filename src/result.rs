//! `result.json`: the record of one run, written as the run goes and finished at the end.
//! Versioned (`schema_version`); `schema/result.schema.json` describes it. Reports are rendered
//! from this file and the per-boot logs alone, so `repro report` can redo them later.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::plan::{PlannedNode, PlannedStep};

pub const SCHEMA_VERSION: u32 = 1;

/// What a run showed: the verdict's outcome, and what a user (or `fixed-in`) expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Every expectation held: the correct behaviour.
    Fixed,
    /// Every observation matched the documented bug signature.
    Reproduced,
    /// Anything else.
    Inconclusive,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Fixed => "fixed",
            Outcome::Reproduced => "reproduced",
            Outcome::Inconclusive => "inconclusive",
        }
    }
}

/// Text forms are the JSON ones.
macro_rules! display_as_str {
    ($($t:ty),*) => {$(
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}

display_as_str!(Outcome, BootEnd, ActionKind, EvidenceSource, Rule);

/// How a boot ended, as result.json records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BootEnd {
    /// Still running when the record was written.
    Running,
    /// Stopped by repro (a restart, or teardown).
    Stopped,
    /// The container exited on its own.
    Exited,
    /// The log stream broke and the container state could not be read.
    Lost,
}

impl BootEnd {
    pub fn as_str(self) -> &'static str {
        match self {
            BootEnd::Running => "running",
            BootEnd::Stopped => "stopped",
            BootEnd::Exited => "exited",
            BootEnd::Lost => "lost",
        }
    }
}

/// What a step did to its nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ActionKind {
    /// Files written (or deleted) on a node.
    Edit,
    /// A deferred node started for the first time.
    Start,
    /// A group of nodes restarted at once.
    Restart,
}

impl ActionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ActionKind::Edit => "edit",
            ActionKind::Start => "start",
            ActionKind::Restart => "restart",
        }
    }
}

/// Which observation rule decided a value (run/observe.rs; docs/k3s-behaviour.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// An `up` line in this boot.
    UpLine,
    /// A `down` line in this boot.
    DownLine,
    /// The boot died: the signal's `on-death` value.
    OnDeath,
    /// A `settled-by` line k3s prints after the feature's own line (`order: after-feature`)
    /// arrived with no `up` line before it (plus an explicit `--settle`/`settle:` margin).
    AfterFeature,
    /// A `settled-by` hint, and the settle window passed with no `up` line.
    SettleWindow,
    /// A value signal, read from the boot's lines once it was ready (or over).
    ValueLines,
    /// A probe rule matched.
    Probe,
    /// Nothing decided it (the value is `unknown`), or an older result.json without rules.
    #[default]
    Undecided,
}

impl Rule {
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::UpLine => "up-line",
            Rule::DownLine => "down-line",
            Rule::OnDeath => "on-death",
            Rule::AfterFeature => "after-feature",
            Rule::SettleWindow => "settle-window",
            Rule::ValueLines => "value-lines",
            Rule::Probe => "probe",
            Rule::Undecided => "undecided",
        }
    }
}

/// Where a piece of evidence comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EvidenceSource {
    /// A line of the boot's log.
    Log,
    /// A command's output (a probe).
    Probe,
    /// The container's state as Docker reports it.
    Docker,
}

impl EvidenceSource {
    pub fn as_str(self) -> &'static str {
        match self {
            EvidenceSource::Log => "log",
            EvidenceSource::Probe => "probe",
            EvidenceSource::Docker => "docker",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    pub schema_version: u32,
    pub tool: ToolInfo,
    pub run_id: String,
    /// The exact command line, and one that re-runs the same thing.
    pub command: Vec<String>,
    pub rerun: String,
    pub check: CheckInfo,
    pub topology: TopologyInfo,
    pub k3s: K3sInfo,
    pub environment: EnvInfo,
    /// What the run was asked to show (`--expect`), resolved: `auto` is recorded as the
    /// outcome `fixed-in` predicts.
    pub expect: Outcome,
    /// Why that outcome was asked for (`--expect`, or which `fixed-in` entry decides it).
    /// Optional: older results lack it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_because: Option<String>,
    /// What the check's `fixed-in` predicts for this version, if it says.
    pub expected_for_version: Option<Outcome>,
    pub started_at: String,
    pub finished_at: Option<String>,
    /// Each node's `config.yaml` as of each step: step index as a string ("0" = before first
    /// start) -> node -> file content (the same text as `nodes/<node>/config-step-<k>.yaml`).
    pub configs: IndexMap<String, IndexMap<String, String>>,
    /// What every step was going to do and check, recorded before the first step runs. Optional
    /// (added after schema 1 shipped): reports use it to list the steps a run never reached as
    /// errored test cases and to write "Steps To Reproduce" in full.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub planned_steps: Vec<PlannedStepRecord>,
    /// Every file written on each node before its first start (`Plan::initial`: node -> path ->
    /// content), e.g. the `registries.yaml` the embedded registry needs. Optional, like
    /// `planned_steps`; the bug report lists these files so a reader can reproduce by hand.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub initial_files: IndexMap<String, IndexMap<String, Option<String>>>,
    /// How each signal the check expects is told, as it applied to this version (patterns from
    /// signals.yaml). Optional (added after schema 1 shipped): reports say in words what was
    /// looked for, e.g. which line a `down` by the settle rule never saw.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub signals: IndexMap<String, SignalRecord>,
    pub steps: Vec<StepResult>,
    pub boots: Vec<BootRecord>,
    pub verdict: Option<Verdict>,
    /// Seconds per phase (`images`, `cluster-up`, `step-1`, ..., `teardown`).
    pub timings: IndexMap<String, f64>,
    pub exit_code: Option<i32>,
    /// Why the run stopped early, if it did.
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckInfo {
    pub name: String,
    pub issue: String,
    pub summary: String,
    pub description: String,
    pub sources: Vec<String>,
    pub file: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TopologyInfo {
    pub name: String,
    pub description: String,
    pub file: String,
    pub nodes: Vec<PlannedNode>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct K3sInfo {
    pub version: String,
    pub image: String,
    pub image_id: Option<String>,
    /// True when the image is repro's stand-in, not real k3s.
    pub stand_in: bool,
    /// Whether node containers ran privileged (as k3d runs real k3s). Older results lack it.
    #[serde(default = "default_true")]
    pub privileged: bool,
    /// The full output of `k3s -v` inside a node container (both lines: k3s and go versions),
    /// as the bug template asks for it. Optional: older results and runs that never got a node
    /// up lack it; reports then fall back to the banner in the logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_output: Option<String>,
}

fn default_true() -> bool {
    true
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct EnvInfo {
    pub docker_host: String,
    pub docker_version: Option<String>,
    pub docker_api_version: Option<String>,
    pub kernel: Option<String>,
    pub os: Option<String>,
    pub arch: Option<String>,
    pub cpus: Option<i64>,
    pub memory_bytes: Option<i64>,
    /// The engine's cgroup version (`1`, `2`) and driver (`cgroupfs`, `systemd`): on cgroup v2
    /// real k3s must be PID 1 in its container (it is, in repro). Older results lack them.
    #[serde(default)]
    pub cgroup_version: Option<String>,
    #[serde(default)]
    pub cgroup_driver: Option<String>,
}

/// One step of the plan as recorded in `result.json` (see [`crate::plan::PlannedStep`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlannedStepRecord {
    /// 1-based; matches the check file's order.
    pub index: usize,
    pub name: String,
    #[serde(default)]
    pub why: String,
    /// node -> path -> new content, or `null` for a deleted file.
    #[serde(default)]
    pub edits: IndexMap<String, IndexMap<String, Option<String>>>,
    /// Deferred nodes started for the first time, in order.
    #[serde(default)]
    pub start: Vec<String>,
    /// Restart groups in order; the nodes of one group restart at once.
    #[serde(default)]
    pub restart: Vec<Vec<String>>,
    /// node -> signal -> correct value.
    #[serde(default)]
    pub expect: IndexMap<String, IndexMap<String, String>>,
    /// node -> signal -> the documented bug's value.
    #[serde(default)]
    pub bug: IndexMap<String, IndexMap<String, String>>,
    /// 1-based line of the step in the check file (`check.file`). Optional (added after schema 1
    /// shipped): JUnit cases carry it as `file`/`line` for CI annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// node -> signal -> 1-based line of that expectation in the check file. Optional, like `line`.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub expect_lines: IndexMap<String, IndexMap<String, usize>>,
}

impl From<&PlannedStep> for PlannedStepRecord {
    fn from(s: &PlannedStep) -> Self {
        let values = |e: &crate::scenario::Expectations| {
            e.iter()
                .map(|(node, sigs)| {
                    let sigs = sigs
                        .iter()
                        .map(|(k, v)| (k.clone(), v.as_str().to_string()))
                        .collect();
                    (node.clone(), sigs)
                })
                .collect()
        };
        PlannedStepRecord {
            index: s.index,
            name: s.name.clone(),
            why: s.why.clone(),
            edits: s.edits.clone(),
            start: s.start.clone(),
            restart: s.restart.clone(),
            expect: values(&s.expect),
            bug: values(&s.bug),
            line: Some(s.line),
            expect_lines: s.expect_lines.clone(),
        }
    }
}

/// One signal's definition as a run used it (see [`crate::scenario::Signal`]): the regexes
/// that applied to the run's k3s version, as written in signals.yaml.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SignalRecord {
    #[serde(default)]
    pub description: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub up: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub down: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settled_by: Vec<String>,
    /// The probe's command, for signals a command decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<Vec<String>>,
}

/// The records of the signals `check` expects, in first-use order, with the patterns that apply
/// to `version`.
pub fn signal_records(
    signals: &crate::scenario::Signals,
    check: &crate::scenario::Check,
    version: &crate::version::K3sVersion,
) -> IndexMap<String, SignalRecord> {
    let pats = |ps: &[crate::scenario::LinePattern]| -> Vec<String> {
        ps.iter()
            .filter(|p| p.applies_to(version))
            .map(|p| p.regex.as_str().to_string())
            .collect()
    };
    let mut out = IndexMap::new();
    for name in check
        .steps
        .iter()
        .flat_map(|s| s.expect.values().flat_map(|m| m.keys()))
    {
        if out.contains_key(name) {
            continue;
        }
        let Some(sig) = signals.get(name) else {
            continue;
        };
        out.insert(
            name.clone(),
            SignalRecord {
                description: sig.description.clone(),
                up: pats(&sig.up),
                down: pats(&sig.down),
                settled_by: pats(&sig.settled_by),
                probe: sig.probe.as_ref().map(|p| p.command.clone()),
            },
        );
    }
    out
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepResult {
    /// 1-based; matches the check file's order.
    pub index: usize,
    pub name: String,
    pub why: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub actions: Vec<Action>,
    pub observations: Vec<Observation>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Action {
    pub kind: ActionKind,
    pub nodes: Vec<String>,
    pub at: String,
    /// Files written, for `edit`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Observation {
    pub node: String,
    pub signal: String,
    /// The correct value from `expect`, if the step states one.
    pub expected: Option<String>,
    /// The bug's value from `bug` (or `expected` when the bug does not change it).
    pub bug: Option<String>,
    /// `up`, `down`, `unknown`, or the observed text for value signals.
    pub observed: String,
    /// The value the asked outcome (`expect`) wants here: `expected` when the run expects
    /// `fixed`, the bug's value when it expects `reproduced`. Optional: older results lack it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked: Option<String>,
    pub boot: u32,
    pub evidence: Vec<Evidence>,
    /// How the value was decided (which rule), in words.
    pub reason: String,
    /// The rule that decided it.
    #[serde(default)]
    pub rule: Rule,
    /// For `after-feature`, `settle-window` and `value-lines`: how long repro waited after the
    /// deciding line (ms), so a reader sees whether a window was needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle_ms: Option<u64>,
    /// When repro decided it (RFC 3339, repro's clock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<String>,
    /// Set when `observed` is [`DEAD`]: what the death may count as, and where.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub death: Option<Death>,
}

/// The observed value of a signal whose node died in the boot before the signal was decided.
pub const DEAD: &str = "dead";

/// A death is its own observation: it stands for the signal's `on-death` value only in a world
/// (`expect`, `bug`) whose step expects the node to die — otherwise a crash after readiness
/// would pass for a feature being `down` (issue #14).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Death {
    /// The signal's `on-death` value, if it has one.
    pub counts_as: Option<String>,
    /// The step's `expect` expects this node to die (it asks `ready: down`).
    pub expected: bool,
    /// The bug world of the step expects it to die.
    pub bug: bool,
}

impl Observation {
    pub fn matches_expected(&self) -> bool {
        self.expected.as_deref() == Some(self.observed.as_str())
            || self.death_counts(self.expected.as_deref(), |d| d.expected)
    }

    /// `any` under `bug:` matches whatever value was observed: the bug world cannot tell there.
    pub fn matches_bug(&self) -> bool {
        // `any` is either value the bug world can show; a death is neither.
        (self.bug.as_deref() == Some(crate::scenario::ANY) && self.observed != DEAD)
            || self.bug.as_deref() == Some(self.observed.as_str())
            || self.death_counts(self.bug.as_deref(), |d| d.bug)
    }

    /// Whether a death stands for `want` in the world `in_world` picks.
    fn death_counts(&self, want: Option<&str>, in_world: impl Fn(&Death) -> bool) -> bool {
        match (&self.death, want) {
            (Some(d), Some(w)) if self.observed == DEAD => {
                in_world(d) && d.counts_as.as_deref() == Some(w)
            }
            _ => false,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Evidence {
    pub source: EvidenceSource,
    pub boot: u32,
    /// RFC 3339 time the line was written (Docker's timestamp), when known.
    pub time: Option<String>,
    pub text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BootRecord {
    pub node: String,
    /// 1-based count of this node's container starts.
    pub boot: u32,
    /// Step index that started this boot (0 = cluster creation).
    pub step: usize,
    pub started_at: String,
    pub ready_at: Option<String>,
    pub ended_at: Option<String>,
    pub end: BootEnd,
    pub exit_code: Option<i64>,
    /// Relative path of this boot's log in the results folder.
    pub log: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Verdict {
    pub outcome: Outcome,
    pub reason: String,
    /// Human-readable lines, one per observation that matched neither world.
    pub differences: Vec<String>,
    pub expectations: usize,
    pub matched_expected: usize,
    pub matched_bug: usize,
}

#[cfg(test)]
#[path = "result_schema_tests.rs"]
mod schema_tests;
