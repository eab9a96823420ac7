//! What `repro inspect` reports, as data: the table, `--format json` (described by
//! `schema/inspect.schema.json`) and `--format markdown` are all rendered from a [`Report`].

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// Bumped when a field changes meaning or goes away (adding fields keeps it).
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub schema_version: u32,
    pub tool: Tool,
    /// The settle window used for the settle rule, in seconds.
    pub settle_seconds: f64,
    /// The checks whose bug signatures were looked for.
    pub checks: Vec<CheckRef>,
    pub inputs: Vec<InputReport>,
    pub findings: Vec<Finding>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    pub version: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckRef {
    pub name: String,
    pub issue: String,
    pub fixed_in: Vec<String>,
    /// How many distinct bug signatures the check's steps give.
    pub signatures: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InputReport {
    /// As given on the command line (`-` for standard input).
    pub path: String,
    /// `log`, `stdin`, `folder`, `archive`, `repro-results`, `repro-bundle`, `log-collector`.
    pub kind: String,
    pub files: Vec<FileReport>,
    /// Lines were left out (grep markers, a filtering command, `--excerpt`): the settle rule is
    /// not applied and nothing is `down` without a `down` line or a death.
    pub excerpt: bool,
    pub nodes: Vec<NodeReport>,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileReport {
    pub path: String,
    /// The format recognised (empty for a file that was skipped).
    pub format: String,
    pub lines: u64,
    pub bytes: u64,
    /// Why the file was not read, if it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NodeReport {
    pub name: String,
    /// Where the name comes from: `--node`, `journal host`, `file name`, `results folder`, …
    pub name_from: String,
    pub boots: Vec<BootReport>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BootReport {
    /// 1-based, in the order the log shows them (a results folder's own numbers).
    pub boot: u32,
    /// The start banner, or null when the log begins inside this boot.
    pub start: Option<Mark>,
    pub end: EndReport,
    /// Log lines of k3s in this boot.
    pub lines: u64,
    /// The boot's log is whole enough for the settle rule (see `partial_because` otherwise).
    pub whole: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partial_because: Option<String>,
    pub version: Option<String>,
    /// Server components this boot showed (the `roles` signal's values).
    pub roles: Vec<String>,
    /// The node's role as far as it can be told: from its config, else from a complete `roles`.
    pub role: Option<String>,
    pub role_from: Option<String>,
    /// The config file(s) that apply to this boot, if known.
    pub config: Option<String>,
    pub signals: IndexMap<String, SignalReport>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Mark {
    pub file: Option<String>,
    pub line: Option<u64>,
    pub time: Option<String>,
    pub text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EndReport {
    /// `next-boot` (another banner follows), `log-ends`, `died`, `stopped`, `host-reboot`.
    pub how: String,
    pub time: Option<String>,
    pub exit_code: Option<i64>,
    /// The line (or record) that tells how it ended, when there is one.
    pub evidence: Option<EvidenceLine>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SignalReport {
    /// `up`, `down` or `unknown` for state signals; the value(s) for value signals.
    pub state: String,
    /// Value signals: whether the boot got far enough for more values to be ruled out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub complete: Option<bool>,
    /// Which rule decided, in words.
    pub reason: String,
    pub evidence: Vec<EvidenceLine>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvidenceLine {
    /// `log` (a k3s line), `unit` (systemd about the unit), `probe-output` (a probe's output
    /// pasted in the text), `record` (a repro results folder's record of the boot), `config`.
    pub source: String,
    pub file: Option<String>,
    pub line: Option<u64>,
    pub time: Option<String>,
    pub text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Finding {
    pub check: String,
    pub issue: String,
    pub summary: String,
    /// `matches`: every part of the bug signature holds. `possible`: the feature's state and
    /// what is known match, but some part is unknown (see `needs`).
    pub verdict: String,
    /// One line: "matches <issue> (fixed in <version>)".
    pub message: String,
    pub input: usize,
    pub node: String,
    pub boot: u32,
    pub signal: String,
    pub observed: String,
    /// Why the signal has that state (the rule that decided it).
    pub reason: String,
    /// What a fixed k3s shows instead.
    pub expected: String,
    pub version: Option<String>,
    /// The first fixed version on the boot's release line, if the check names one.
    pub fixed_in: Option<String>,
    pub conditions: Vec<Condition>,
    /// What `inspect` would need to know to say `matches`.
    pub needs: Vec<String>,
    /// What the check's own cluster had that a log cannot show (e.g. a file every node got).
    pub assumes: Vec<String>,
    pub evidence: Vec<EvidenceLine>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Condition {
    pub what: String,
    pub want: String,
    pub found: Option<String>,
    /// true / false, or null when it cannot be told.
    pub holds: Option<bool>,
    pub from: Option<String>,
}
