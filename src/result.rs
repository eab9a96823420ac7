//! `result.json`: the record of one run, written as the run goes and finished at the end.
//! Versioned (`schema_version`); `schema/result.schema.json` describes it. Reports are rendered
//! from this file and the per-boot logs alone, so `repro report` can redo them later.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::plan::PlannedNode;

pub const SCHEMA_VERSION: u32 = 1;

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
    /// What the user asked the run to show (`--expect`).
    pub expect: String,
    /// What the check's `fixed-in` predicts for this version, if it says.
    pub expected_for_version: Option<String>,
    pub started_at: String,
    pub finished_at: Option<String>,
    /// Each node's config files as of each step ("0" = before first start).
    pub configs: IndexMap<String, IndexMap<String, String>>,
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
    /// `edit`, `start` or `restart`.
    pub kind: String,
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
    pub boot: u32,
    pub evidence: Vec<Evidence>,
    /// How the value was decided (which rule), in words.
    pub reason: String,
}

impl Observation {
    pub fn matches_expected(&self) -> bool {
        self.expected.as_deref() == Some(self.observed.as_str())
    }

    pub fn matches_bug(&self) -> bool {
        self.bug.as_deref() == Some(self.observed.as_str())
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Evidence {
    /// `log` (a line of the boot's log), `probe` (a command's output) or `docker` (container state).
    pub source: String,
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
    /// `running`, `stopped` (by repro), `exited` (on its own), `timeout`.
    pub end: String,
    pub exit_code: Option<i64>,
    /// Relative path of this boot's log in the results folder.
    pub log: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Verdict {
    /// `fixed`, `reproduced` or `inconclusive`.
    pub outcome: String,
    pub reason: String,
    /// Human-readable lines, one per observation that matched neither world.
    pub differences: Vec<String>,
    pub expectations: usize,
    pub matched_expected: usize,
    pub matched_bug: usize,
}
