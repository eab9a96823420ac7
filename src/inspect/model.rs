//! What `repro inspect` reports, as data: the table, `--format json` (described by
//! `schema/inspect.schema.json`) and `--format markdown` are all rendered from a [`Report`].

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use super::deps::Observed;

/// Bumped when a field changes meaning or goes away (adding fields keeps it).
pub(crate) const SCHEMA_VERSION: u32 = 1;

/// The closed sets of the report, each a string only in the JSON (`as_str` is that string, for
/// the table and Markdown).
macro_rules! json_names {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
        pub(crate) enum $name {
            $($(#[$vdoc])* #[serde(rename = $text)] $variant,)*
        }

        impl $name {
            pub(crate) fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

json_names! {
    /// What an input turned out to be.
    InputKind {
        Log = "log",
        Stdin = "stdin",
        Folder = "folder",
        Archive = "archive",
        ReproResults = "repro-results",
        ReproBundle = "repro-bundle",
        LogCollector = "log-collector",
    }
}

json_names! {
    /// How a boot ended.
    EndHow {
        /// Another banner follows.
        NextBoot = "next-boot",
        LogEnds = "log-ends",
        Died = "died",
        Stopped = "stopped",
        HostReboot = "host-reboot",
    }
}

json_names! {
    /// Where an evidence line comes from.
    Source {
        /// A k3s line.
        Log = "log",
        /// systemd about the unit.
        Unit = "unit",
        /// A probe's command and output pasted in the text.
        ProbeOutput = "probe-output",
        /// A repro results folder's record of the boot.
        Record = "record",
        /// The node's config.
        Config = "config",
        /// A probe's output as a repro results folder recorded it (`result::EvidenceSource`'s
        /// `probe`, passed on as it was; the schema does not list it yet).
        Probe = "probe",
        /// Docker's state as a results folder recorded it (passed on like `probe`).
        Docker = "docker",
    }
}

json_names! {
    /// How far a bug signature holds.
    FindingVerdict {
        /// Every part of the bug signature holds (exit 1).
        Matches = "matches",
        /// The feature's state and what is known match, but some part is unknown (see `needs`).
        Possible = "possible",
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub(crate) schema_version: u32,
    pub(crate) tool: Tool,
    /// The settle window used for the settle rule, in seconds.
    pub(crate) settle_seconds: f64,
    /// The checks whose bug signatures were looked for.
    pub(crate) checks: Vec<CheckRef>,
    pub inputs: Vec<InputReport>,
    pub(crate) findings: Vec<Finding>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Tool {
    pub(crate) name: String,
    pub(crate) version: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct CheckRef {
    pub(crate) name: String,
    pub(crate) issue: String,
    pub(crate) fixed_in: Vec<String>,
    /// How many distinct bug signatures the check's steps give.
    pub(crate) signatures: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InputReport {
    /// As given on the command line (`-` for standard input).
    pub(crate) path: String,
    pub(crate) kind: InputKind,
    pub(crate) files: Vec<FileReport>,
    /// Lines were left out (grep markers, a filtering command, `--excerpt`): the settle rule is
    /// not applied and nothing is `down` without a `down` line or a death.
    pub(crate) excerpt: bool,
    pub nodes: Vec<NodeReport>,
    pub(crate) notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct FileReport {
    pub(crate) path: String,
    /// The format recognised (empty for a file that was skipped).
    pub(crate) format: String,
    pub(crate) lines: u64,
    pub(crate) bytes: u64,
    /// Why the file was not read, if it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) skipped: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NodeReport {
    pub(crate) name: String,
    /// Where the name comes from: `--node`, `journal host`, `file name`, `results folder`, …
    pub(crate) name_from: String,
    pub boots: Vec<BootReport>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BootReport {
    /// 1-based, in the order the log shows them (a results folder's own numbers).
    pub(crate) boot: u32,
    /// The start banner, or null when the log begins inside this boot.
    pub(crate) start: Option<Mark>,
    pub(crate) end: EndReport,
    /// Log lines of k3s in this boot.
    pub(crate) lines: u64,
    /// The boot's log is whole enough for the settle rule (see `partial_because` otherwise).
    pub(crate) whole: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) partial_because: Option<String>,
    pub(crate) version: Option<String>,
    /// The distribution the boot's lines tell (its banner, journal identifier or unit, its
    /// paths): `k3s` or `rke2`; None when nothing tells (the boot is judged as k3s's).
    #[serde(default)]
    pub(crate) distribution: Option<String>,
    /// Server components this boot showed (the `roles` signal's values).
    pub(crate) roles: Vec<String>,
    /// The node's role as far as it can be told: from its config, else from a complete `roles`.
    pub(crate) role: Option<String>,
    pub(crate) role_from: Option<String>,
    /// The config file(s) that apply to this boot, if known.
    pub(crate) config: Option<String>,
    pub(crate) signals: IndexMap<String, SignalReport>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Mark {
    pub(crate) file: Option<String>,
    pub(crate) line: Option<u64>,
    pub(crate) time: Option<String>,
    pub(crate) text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct EndReport {
    pub(crate) how: EndHow,
    pub(crate) time: Option<String>,
    pub(crate) exit_code: Option<i64>,
    /// The line (or record) that tells how it ended, when there is one.
    pub(crate) evidence: Option<EvidenceLine>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SignalReport {
    /// `up`, `down`, `dead` or `unknown` for state signals; the value(s) for value signals.
    pub(crate) state: Observed,
    /// Value signals: whether the boot got far enough for more values to be ruled out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) complete: Option<bool>,
    /// Which rule decided, in words.
    pub(crate) reason: String,
    pub(crate) evidence: Vec<EvidenceLine>,
    /// `dead` only: what the death stands for where one is expected (the signal's `on-death`
    /// value), as `run` records it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) counts_as: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct EvidenceLine {
    pub(crate) source: Source,
    pub(crate) file: Option<String>,
    pub(crate) line: Option<u64>,
    pub(crate) time: Option<String>,
    pub(crate) text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Finding {
    pub(crate) check: String,
    pub(crate) issue: String,
    pub(crate) summary: String,
    pub(crate) verdict: FindingVerdict,
    /// One line: "matches <issue> (fixed in <version>)".
    pub(crate) message: String,
    pub(crate) input: usize,
    pub(crate) node: String,
    pub(crate) boot: u32,
    pub(crate) signal: String,
    pub(crate) observed: Observed,
    /// Why the signal has that state (the rule that decided it).
    pub(crate) reason: String,
    /// What a fixed k3s shows instead.
    pub(crate) expected: String,
    pub(crate) version: Option<String>,
    /// The first fixed version on the boot's release line, if the check names one.
    pub(crate) fixed_in: Option<String>,
    pub(crate) conditions: Vec<Condition>,
    /// What `inspect` would need to know to say `matches`.
    pub(crate) needs: Vec<String>,
    /// What the check's own cluster had that a log cannot show (e.g. a file every node got).
    pub(crate) assumes: Vec<String>,
    pub(crate) evidence: Vec<EvidenceLine>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Condition {
    pub(crate) what: String,
    pub(crate) want: String,
    pub(crate) found: Option<String>,
    /// true / false, or null when it cannot be told.
    pub(crate) holds: Option<bool>,
    pub(crate) from: Option<String>,
}
