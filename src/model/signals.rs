//! `checks/signals.yaml`: what each observable fact about a node boot looks like, as data.

use serde::Deserialize;
use serde_saphyr::Spanned;

use super::SpannedMap;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SignalsFile {
    pub signals: SpannedMap<SignalFile>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SignalFile {
    pub description: String,
    /// Versions (first per release line) from which k3s has this feature at all.
    #[serde(default)]
    pub since: Vec<Spanned<String>>,
    /// Lines that prove the signal is up in this boot.
    #[serde(default)]
    pub up: Vec<Pattern>,
    /// Lines that prove it is down in this boot.
    #[serde(default)]
    pub down: Vec<Pattern>,
    /// Lines whose `value` (named group or fixed text) is the observed value (e.g. version).
    #[serde(default)]
    pub value: Vec<Pattern>,
    /// Lines that show the node got past the point where the feature would have started; after
    /// one of them plus the settle window with no `up` line, the signal is down.
    #[serde(default)]
    pub settled_by: Vec<Pattern>,
    /// A command run inside the node that decides the signal.
    #[serde(default)]
    pub probe: Option<ProbeFile>,
    /// The container dying (or a fatal line) counts as this state.
    #[serde(default)]
    pub on_death: Option<Spanned<String>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum PatternFile {
    Plain(String),
    Full(FullPattern),
}

/// Untagged enums lose positions inside them, so patterns are kept whole with their position.
pub type Pattern = Spanned<PatternFile>;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FullPattern {
    #[serde(rename = "match")]
    pub regex: String,
    /// The line exists from these versions (first per release line).
    #[serde(default)]
    pub since: Vec<String>,
    /// The line exists only before these versions (first per release line without it).
    #[serde(default)]
    pub until: Vec<String>,
    /// Fixed value this line stands for (for `value` patterns without a named group).
    #[serde(default)]
    pub value: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ProbeFile {
    pub command: Vec<String>,
    /// Run the probe only once one of these lines is in the current boot.
    #[serde(default)]
    pub after: Vec<Pattern>,
    /// Any of these rules matching means up.
    pub up: Vec<ProbeRuleFile>,
    /// Any of these rules matching means down.
    pub down: Vec<ProbeRuleFile>,
    /// How long to keep re-running the probe while neither rule matches (humantime).
    #[serde(default)]
    pub timeout: Option<Spanned<String>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ProbeRuleFile {
    pub exit: Option<i64>,
    /// Regex over stdout and stderr together.
    pub output: Option<Spanned<String>>,
}
