//! `result.json`: the record of one run, written as the run goes and finished at the end.
//! Versioned (`schema_version`); `schema/result.schema.json` describes it. Reports are rendered
//! from this file and the per-boot logs alone, so `repro report` can redo them later.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::plan::{PlannedNode, PlannedStep};
use crate::scenario::Expected;

/// 2: `distribution` (version-1 files are read as k3s runs).
pub(crate) const SCHEMA_VERSION: u32 = 2;

pub(crate) use crate::docker::EnvInfo;
pub(crate) use crate::outcome::Outcome;

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

display_as_str!(BootEnd, ActionKind, EvidenceSource, Rule);

/// How a boot ended, as result.json records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum BootEnd {
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
    pub(crate) fn as_str(self) -> &'static str {
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
pub(crate) enum ActionKind {
    /// Files written (or deleted) on a node.
    Edit,
    /// A deferred node started for the first time.
    Start,
    /// A group of nodes restarted at once.
    Restart,
    /// Nodes stopped by a step (they stay down until a start).
    Stop,
    /// A node re-created on another version's image over its volumes.
    Upgrade,
}

impl ActionKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ActionKind::Edit => "edit",
            ActionKind::Start => "start",
            ActionKind::Restart => "restart",
            ActionKind::Stop => "stop",
            ActionKind::Upgrade => "upgrade",
        }
    }
}

/// Which observation rule decided a value (run/observe.rs; docs/k3s-behaviour.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Rule {
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
    /// The node was stopped by a step: `down`, not read from the node.
    Stopped,
    /// Read from the Kubernetes API on a node serving it (a signal's `api:`).
    Api,
    /// Nothing decided it (the value is `unknown`), or an older result.json without rules.
    #[default]
    Undecided,
}

impl Rule {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Rule::UpLine => "up-line",
            Rule::DownLine => "down-line",
            Rule::OnDeath => "on-death",
            Rule::AfterFeature => "after-feature",
            Rule::SettleWindow => "settle-window",
            Rule::ValueLines => "value-lines",
            Rule::Probe => "probe",
            Rule::Stopped => "stopped",
            Rule::Api => "api",
            Rule::Undecided => "undecided",
        }
    }
}

/// Where a piece of evidence comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum EvidenceSource {
    /// A line of the boot's log.
    Log,
    /// A command's output (a probe).
    Probe,
    /// The container's state as Docker reports it.
    Docker,
}

impl EvidenceSource {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EvidenceSource::Log => "log",
            EvidenceSource::Probe => "probe",
            EvidenceSource::Docker => "docker",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RunResult {
    pub(crate) schema_version: u32,
    pub(crate) tool: ToolInfo,
    pub(crate) run_id: String,
    /// The exact command line, and one that re-runs the same thing.
    pub(crate) command: Vec<String>,
    pub(crate) rerun: String,
    pub(crate) check: CheckInfo,
    pub(crate) topology: TopologyInfo,
    /// The distribution the nodes ran (`k3s`); version-1 files lack it and were k3s runs.
    #[serde(default)]
    pub(crate) distribution: distro::Distro,
    pub(crate) k3s: K3sInfo,
    /// The build under test (`--k3s-binary`, `--k3s-commit`) copied over the image's binary;
    /// absent when the image's own binary ran. Its base image is `k3s.image`/`k3s.image_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) build: Option<BuildInfo>,
    pub(crate) environment: EnvInfo,
    /// What the run was asked to show (`--expect`), resolved: `auto` is recorded as the
    /// outcome `fixed-in` predicts.
    pub(crate) expect: Outcome,
    /// Why that outcome was asked for (`--expect`, or which `fixed-in` entry decides it).
    /// Optional: older results lack it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) expect_because: Option<String>,
    /// What the check's `fixed-in` predicts for this version, if it says.
    pub(crate) expected_for_version: Option<Outcome>,
    pub(crate) started_at: String,
    pub(crate) finished_at: Option<String>,
    /// Each node's `config.yaml` as of each step: step index as a string ("0" = before first
    /// start) -> node -> file content (the same text as `nodes/<node>/config-step-<k>.yaml`).
    pub(crate) configs: IndexMap<String, IndexMap<String, String>>,
    /// What every step was going to do and check, recorded before the first step runs. Optional
    /// (added after schema 1 shipped): reports use it to list the steps a run never reached as
    /// errored test cases and to write "Steps To Reproduce" in full.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) planned_steps: Vec<PlannedStepRecord>,
    /// Every file written on each node before its first start (`Plan::initial`: node -> path ->
    /// content), e.g. the `registries.yaml` the embedded registry needs. Optional, like
    /// `planned_steps`; the bug report lists these files so a reader can reproduce by hand.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub(crate) initial_files: IndexMap<String, IndexMap<String, Option<String>>>,
    /// How each signal the check expects is told, as it applied to this version (patterns from
    /// signals.yaml). Optional (added after schema 1 shipped): reports say in words what was
    /// looked for, e.g. which line a `down` by the settle rule never saw.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub(crate) signals: IndexMap<String, SignalRecord>,
    /// The stand-in's load-balancer seed of the run (`REPRO_SIM_SEED`, `--sim-seed`), and each
    /// node's, derived from it: replaying the run's seed replays every node's server picks.
    /// Absent on real k3s and in older results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) sim_seed: Option<u64>,
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub(crate) sim_seeds: IndexMap<String, u64>,
    pub(crate) steps: Vec<StepResult>,
    pub(crate) boots: Vec<BootRecord>,
    pub(crate) verdict: Option<Verdict>,
    /// Seconds per phase (`images`, `cluster-up`, `step-1`, ..., `teardown`).
    pub(crate) timings: IndexMap<String, f64>,
    pub(crate) exit_code: Option<i32>,
    /// Why the run stopped early, if it did.
    pub(crate) error: Option<String>,
    /// Why the run gave nothing to judge, when it failed (exit 3 or 130): what a campaign of
    /// many runs counts it as. Absent for a run that reached its verdict, and in older results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) failure: Option<FailCause>,
}

/// Why a run gave nothing to judge, as a campaign of many runs (`repro explore`) counts it:
/// a cause of the environment stops the whole campaign (every further run would fail the same
/// way), a cause of this run alone is counted and the campaign goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum FailCause {
    /// The engine could not be reached or answered with an error.
    Engine,
    /// The node image could not be had or built.
    Image,
    /// The host cannot run the nodes (a `repro doctor` line), or systemd in a node failed.
    Host,
    /// The nodes do not run the build or version of record.
    WrongVersion,
    /// The results folder could not be written.
    Results,
    /// A node was not ready within the timeout.
    NotReady,
    /// A node's log was lost while it ran.
    LogLost,
    /// Cleanup or reports failed after the run (its objects may be left).
    Cleanup,
    /// A bug in repro.
    Internal,
    /// Ctrl-C or SIGTERM.
    Interrupted,
    /// repro refused the check before anything ran (validation).
    CheckRefused,
}

impl FailCause {
    /// Its name in campaign.json, findings.json and every summary line.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            FailCause::Engine => "engine",
            FailCause::Image => "image",
            FailCause::Host => "host",
            FailCause::WrongVersion => "wrong-version",
            FailCause::Results => "results-folder",
            FailCause::NotReady => "not-ready",
            FailCause::LogLost => "log-lost",
            FailCause::Cleanup => "cleanup",
            FailCause::Internal => "internal",
            FailCause::Interrupted => "interrupted",
            FailCause::CheckRefused => "check-refused",
        }
    }

    /// Whether every further run would fail the same way (the engine, the image, the host, the
    /// version, the results folder): a campaign stops at once, with the infrastructure exit.
    pub(crate) fn stops_campaign(self) -> bool {
        matches!(
            self,
            FailCause::Engine
                | FailCause::Image
                | FailCause::Host
                | FailCause::WrongVersion
                | FailCause::Results
                | FailCause::Interrupted
        )
    }

    pub(crate) const ALL: [FailCause; 11] = [
        FailCause::Engine,
        FailCause::Image,
        FailCause::Host,
        FailCause::WrongVersion,
        FailCause::Results,
        FailCause::NotReady,
        FailCause::LogLost,
        FailCause::Cleanup,
        FailCause::Internal,
        FailCause::Interrupted,
        FailCause::CheckRefused,
    ];
}

impl std::fmt::Display for FailCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for FailCause {
    type Err = String;
    fn from_str(s: &str) -> Result<FailCause, String> {
        FailCause::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| format!("unknown failure cause `{s}`"))
    }
}

impl serde::Serialize for FailCause {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for FailCause {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<FailCause, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// A build under test: where it came from, what it is and what it says it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct BuildInfo {
    pub(crate) source: BuildSource,
    /// The file on the host that was copied in (for a commit: the verified cached download).
    pub(crate) path: String,
    /// The full commit (`--k3s-commit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) commit: Option<String>,
    /// Where the commit build was downloaded from (`--k3s-commit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) url: Option<String>,
    /// sha256 of the binary, lowercase hex.
    pub(crate) sha256: String,
    pub(crate) size: u64,
    /// The version the binary says it is (`v1.33.5+k3s1`, `v1.30.6+k3s-48a3b849`): the version of
    /// record. `k3s.version` is the same for a release or candidate; for a commit build it is
    /// the release whose image it ran in.
    pub(crate) reported: String,
    /// Where in each node it was copied (the image's own binary's path).
    pub(crate) installed_at: String,
}

/// How the build under test was handed over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum BuildSource {
    /// `--k3s-binary PATH`.
    Binary,
    /// `--k3s-commit SHA`: the distribution's CI build of the commit.
    Commit,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ToolInfo {
    pub(crate) name: String,
    pub(crate) version: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct CheckInfo {
    pub(crate) name: String,
    pub(crate) issue: String,
    pub(crate) summary: String,
    pub(crate) description: String,
    pub(crate) sources: Vec<String>,
    pub(crate) file: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct TopologyInfo {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) file: String,
    pub(crate) nodes: Vec<PlannedNode>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct K3sInfo {
    pub(crate) version: String,
    pub(crate) image: String,
    pub(crate) image_id: Option<String>,
    /// True when the image is repro's stand-in, not real k3s.
    pub(crate) stand_in: bool,
    /// Whether node containers ran privileged (as k3d runs real k3s). Older results lack it.
    #[serde(default = "default_true")]
    pub(crate) privileged: bool,
    /// The full output of `k3s -v` inside a node container (both lines: k3s and go versions),
    /// as the bug template asks for it. Optional: older results and runs that never got a node
    /// up lack it; reports then fall back to the banner in the logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) version_output: Option<String>,
}

fn default_true() -> bool {
    true
}

/// One step of the plan as recorded in `result.json` (see [`crate::plan::PlannedStep`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct PlannedStepRecord {
    /// 1-based; matches the check file's order.
    pub(crate) index: usize,
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) why: String,
    /// node -> path -> new content, or `null` for a deleted file.
    #[serde(default)]
    pub(crate) edits: IndexMap<String, IndexMap<String, Option<String>>>,
    /// Nodes stopped at once, first (each stays down until a later start).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) stop: Vec<String>,
    /// Deferred or stopped nodes started, at once.
    #[serde(default)]
    pub(crate) start: Vec<String>,
    /// Restart groups in order; the nodes of one group restart at once.
    #[serde(default)]
    pub(crate) restart: Vec<Vec<String>>,
    /// Nodes upgraded, one after another, last.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) upgrade: Vec<UpgradeRecord>,
    /// node -> signal -> correct value.
    #[serde(default)]
    pub(crate) expect: IndexMap<String, IndexMap<String, String>>,
    /// node -> signal -> the documented bug's value.
    #[serde(default)]
    pub(crate) bug: IndexMap<String, IndexMap<String, String>>,
    /// 1-based line of the step in the check file (`check.file`). Optional (added after schema 1
    /// shipped): JUnit cases carry it as `file`/`line` for CI annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) line: Option<usize>,
    /// node -> signal -> 1-based line of that expectation in the check file. Optional, like `line`.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub(crate) expect_lines: IndexMap<String, IndexMap<String, usize>>,
}

/// One node's planned upgrade: the version and the image it is re-created on.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct UpgradeRecord {
    pub(crate) node: String,
    pub(crate) version: String,
    pub(crate) image: Option<String>,
    /// A local build copied over the image's binary (`upgrade: {node: {binary: PATH}}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) binary: Option<UpgradeBinaryRecord>,
}

/// The local build of an upgrade: where it came from and what it said it was.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct UpgradeBinaryRecord {
    pub(crate) path: String,
    pub(crate) sha256: String,
    pub(crate) size: u64,
    /// The version it reports (`k3s -v`).
    pub(crate) reported: String,
    /// A CI build's commit, and where it was fetched from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) commit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) url: Option<String>,
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
            stop: s.stop.clone(),
            start: s.start.clone(),
            restart: s.restart.clone(),
            upgrade: (s.upgrade.iter())
                .map(|u| UpgradeRecord {
                    node: u.node.clone(),
                    version: u.version.to_string(),
                    image: u.image.clone(),
                    binary: u.binary.as_ref().map(|b| UpgradeBinaryRecord {
                        path: b.path.display().to_string(),
                        sha256: b.sha256.clone(),
                        size: b.size,
                        reported: b.reported.clone(),
                        commit: b.commit.clone(),
                        url: b.url.clone(),
                    }),
                })
                .collect(),
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
pub(crate) struct SignalRecord {
    #[serde(default)]
    pub(crate) description: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) up: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) down: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) settled_by: Vec<String>,
    /// The probe's command, for signals a command decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) probe: Option<Vec<String>>,
    /// The config key whose effective value the signal shows (`shows:` in signals.yaml), so
    /// `repro explore --recheck` judges a run from its folder alone. Absent in older results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) shows: Option<ShowsRecord>,
}

/// `shows:` as recorded: the key, and for an up/down signal the key's value when `up`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ShowsRecord {
    pub(crate) key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) up_when: Option<bool>,
}

impl From<&crate::scenario::Shows> for ShowsRecord {
    fn from(s: &crate::scenario::Shows) -> ShowsRecord {
        ShowsRecord {
            key: s.key.clone(),
            up_when: s.up_when,
        }
    }
}

/// The records of the signals `check` expects, in first-use order, with the patterns that apply
/// to `version`.
pub(crate) fn signal_records(
    signals: &crate::scenario::Signals,
    check: &crate::scenario::Check,
    version: &distro::Version,
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
                shows: sig.shows.as_ref().map(ShowsRecord::from),
            },
        );
    }
    out
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct StepResult {
    /// 1-based; matches the check file's order.
    pub(crate) index: usize,
    pub(crate) name: String,
    pub(crate) why: String,
    pub(crate) started_at: String,
    pub(crate) finished_at: Option<String>,
    pub(crate) actions: Vec<Action>,
    pub(crate) observations: Vec<Observation>,
    /// The version each running node ran at the end of the step (its current boot's banner);
    /// absent in older results.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub(crate) versions: IndexMap<String, String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Action {
    pub(crate) kind: ActionKind,
    pub(crate) nodes: Vec<String>,
    pub(crate) at: String,
    /// Files written, for `edit`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) files: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Observation {
    pub(crate) node: String,
    pub(crate) signal: String,
    /// The correct value from `expect`, if the step states one.
    pub(crate) expected: Option<Expected>,
    /// The bug's value from `bug` (or `expected` when the bug does not change it).
    pub(crate) bug: Option<Expected>,
    pub(crate) observed: Observed,
    /// The value the asked outcome (`expect`) wants here: `expected` when the run expects
    /// `fixed`, the bug's value when it expects `reproduced`. Optional: older results lack it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) asked: Option<Expected>,
    pub(crate) boot: u32,
    pub(crate) evidence: Vec<Evidence>,
    /// How the value was decided (which rule), in words.
    pub(crate) reason: String,
    /// The rule that decided it.
    #[serde(default)]
    pub(crate) rule: Rule,
    /// For `after-feature`, `settle-window` and `value-lines`: how long repro waited after the
    /// deciding line (ms), so a reader sees whether a window was needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) settle_ms: Option<u64>,
    /// When repro decided it (RFC 3339, repro's clock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) decided_at: Option<String>,
    /// Set when `observed` is [`Observed::Dead`]: what the death may count as, and where.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) death: Option<Death>,
}

/// What a signal was observed to be: a state, a death, or a value signal's value(s). A string
/// only in the JSON (`up`, `down`, `unknown`, `dead`, `none`, or the values).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    Up,
    Down,
    /// The boot ended before the signal could be decided.
    Unknown,
    /// The node died in the boot before the signal was decided.
    Dead,
    /// A value signal that showed no value (`none`).
    NoValue,
    /// A value signal's values, sorted and comma-separated.
    Value(String),
}

impl Observed {
    pub(crate) fn as_str(&self) -> &str {
        match self {
            Observed::Up => "up",
            Observed::Down => "down",
            Observed::Unknown => "unknown",
            Observed::Dead => "dead",
            Observed::NoValue => "none",
            Observed::Value(v) => v,
        }
    }
}

// Here, beside `Observed`, so the scenario's types stay below the record.
impl Expected {
    /// Whether `observed` is this value. `any` is either value the world can show; a death
    /// is neither (it counts only through `on-death`, see [`Observation`]).
    pub(crate) fn matches(&self, observed: &Observed) -> bool {
        match self {
            Expected::Any => *observed != Observed::Dead,
            e => e.as_str() == observed.as_str(),
        }
    }
}

/// Read back from its text: each word above is its variant, anything else a value.
impl From<&str> for Observed {
    fn from(s: &str) -> Observed {
        match s {
            "up" => Observed::Up,
            "down" => Observed::Down,
            "unknown" => Observed::Unknown,
            "dead" => Observed::Dead,
            "none" => Observed::NoValue,
            v => Observed::Value(v.to_string()),
        }
    }
}

impl std::fmt::Display for Observed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Observed {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Observed {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Observed, D::Error> {
        String::deserialize(d).map(|s| Observed::from(s.as_str()))
    }
}

/// A death is its own observation: it stands for the signal's `on-death` value only in a world
/// (`expect`, `bug`) whose step expects the node to die — otherwise a crash after readiness
/// would pass for a feature being `down` (issue #14).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Death {
    /// The signal's `on-death` value, if it has one.
    pub(crate) counts_as: Option<String>,
    /// The step's `expect` expects this node to die (it asks `ready: down`).
    pub(crate) expected: bool,
    /// The bug world of the step expects it to die.
    pub(crate) bug: bool,
}

impl Observation {
    /// `ok` (the correct value), `bug` (the documented bug's value) or `differs` (neither): the
    /// word the JSON summary and the event stream give each observation.
    pub(crate) fn judged(&self) -> &'static str {
        if self.matches_expected() {
            "ok"
        } else if self.matches_bug() {
            "bug"
        } else {
            "differs"
        }
    }

    pub(crate) fn matches_expected(&self) -> bool {
        self.matches(self.expected.as_ref(), |d| d.expected)
    }

    /// `any` under `bug:` matches whatever value was observed: the bug world cannot tell there.
    pub(crate) fn matches_bug(&self) -> bool {
        self.matches(self.bug.as_ref(), |d| d.bug)
    }

    /// Whether the observation is what the asked outcome wants (`asked`); a result without
    /// it (older runs) is judged in the world `bug_run` picks.
    pub(crate) fn matches_asked(&self, bug_run: bool) -> bool {
        match &self.asked {
            Some(a) => self.matches(Some(a), |d| if bug_run { d.bug } else { d.expected }),
            None if bug_run => {
                self.matches(self.bug.as_ref().or(self.expected.as_ref()), |d| d.bug)
            }
            None => self.matches_expected(),
        }
    }

    /// Whether the observation is `want`: the value itself, or a death that stands for it in
    /// the world `in_world` picks.
    fn matches(&self, want: Option<&Expected>, in_world: impl Fn(&Death) -> bool) -> bool {
        let Some(w) = want else { return false };
        w.matches(&self.observed)
            || match &self.death {
                Some(d) if self.observed == Observed::Dead => {
                    in_world(d) && d.counts_as.as_deref() == Some(w.as_str())
                }
                _ => false,
            }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Evidence {
    pub(crate) source: EvidenceSource,
    pub(crate) boot: u32,
    /// RFC 3339 time the line was written (Docker's timestamp), when known.
    pub(crate) time: Option<String>,
    pub text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct BootRecord {
    pub(crate) node: String,
    /// 1-based count of this node's container starts.
    pub(crate) boot: u32,
    /// Step index that started this boot (0 = cluster creation).
    pub(crate) step: usize,
    pub(crate) started_at: String,
    pub(crate) ready_at: Option<String>,
    pub(crate) ended_at: Option<String>,
    pub(crate) end: BootEnd,
    pub(crate) exit_code: Option<i64>,
    /// Relative path of this boot's log in the results folder.
    pub(crate) log: String,
    /// The server this boot's agent load balancer reached first (k3s's first
    /// `Server …->RECOVERING from successful dial`): the one an etcd-only joiner read its
    /// served config from. Absent when the node logged none (nodes without a load balancer)
    /// and in older results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) lb_server: Option<LbServer>,
}

/// A server the load balancer reached: its address as logged, and the run's node at it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LbServer {
    pub(crate) address: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) node: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Verdict {
    pub(crate) outcome: Outcome,
    pub(crate) reason: String,
    /// Human-readable lines, one per observation that matched neither world.
    pub(crate) differences: Vec<String>,
    pub(crate) expectations: usize,
    pub(crate) matched_expected: usize,
    pub(crate) matched_bug: usize,
}

#[cfg(test)]
#[path = "result_schema_tests.rs"]
pub(crate) mod schema_tests;

#[cfg(test)]
mod observed_tests {
    use super::Observed;

    #[test]
    fn observed_is_its_word_in_json_and_back() {
        for (o, text) in [
            (Observed::Up, "up"),
            (Observed::Down, "down"),
            (Observed::Unknown, "unknown"),
            (Observed::Dead, "dead"),
            (Observed::NoValue, "none"),
            (Observed::Value("etcd,apiserver".into()), "etcd,apiserver"),
        ] {
            let json = serde_json::to_string(&o).expect("serialises");
            assert_eq!(json, format!("\"{text}\""));
            assert_eq!(serde_json::from_str::<Observed>(&json).expect("reads"), o);
            assert_eq!(Observed::from(text), o);
        }
    }
}
