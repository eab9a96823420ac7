//! `checks/signals.yaml`: what each observable fact about a node boot looks like, as data.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_saphyr::Spanned;

use super::SpannedMap;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct SignalsFile {
    pub(crate) signals: SpannedMap<SignalFile>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct SignalFile {
    pub(crate) description: String,
    /// Versions (first per release line) from which k3s has this feature at all.
    #[serde(default)]
    pub(crate) since: Vec<Spanned<String>>,
    /// Lines that prove the signal is up in this boot.
    #[serde(default)]
    pub(crate) up: Vec<Pattern>,
    /// Lines that prove it is down in this boot.
    #[serde(default)]
    pub(crate) down: Vec<Pattern>,
    /// Lines whose `value` (named group or fixed text) is the observed value (e.g. version).
    #[serde(default)]
    pub(crate) value: Vec<Pattern>,
    /// Lines that show the node got past the point where the feature would have started. A line
    /// k3s prints causally after the feature's own line (`order: after-feature`) proves `down`
    /// when it arrives without an `up` line before it; a mere hint (`order: hint`, the default)
    /// proves it only once the settle window has passed as well.
    #[serde(default)]
    pub(crate) settled_by: Vec<Pattern>,
    /// Lines k3s prints where the feature is on but cannot run (a missing kernel tool): with
    /// no `up`/`down` line, the boot cannot show the state, so it stays undecided.
    #[serde(default)]
    pub(crate) undecided_by: Vec<Pattern>,
    /// A command run inside the node that decides the signal: one probe, or a list of probes
    /// each for the distribution it names (`distribution:`; unqualified: every other one).
    #[serde(default)]
    pub(crate) probe: Option<ProbesFile>,
    /// The container dying (or a fatal line) counts as this state.
    #[serde(default)]
    pub(crate) on_death: Option<Spanned<String>>,
    /// Roles on which the signal can be told at all (empty: every role). E.g. supervisor
    /// metrics: on nodes with an apiserver, /metrics answers from the same registry either way.
    #[serde(default)]
    pub(crate) roles: Vec<Spanned<crate::raw::Role>>,
    /// The config key whose effective value on a node this signal shows (`repro explore`).
    #[serde(default)]
    pub(crate) shows: Option<Spanned<ShowsFile>>,
    /// Read from the Kubernetes API instead of the node's log: `node-ready`, the node's
    /// `Ready` condition as a node serving the API reports it.
    #[serde(default)]
    pub(crate) api: Option<Spanned<String>>,
}

/// `shows: {key: embedded-registry, up-when: true}` (a state signal: `up` means the key's
/// effective value is `up-when`) or `shows: {key: cluster-dns}` (a value signal: the observed
/// value is the key's value).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct ShowsFile {
    pub(crate) key: Spanned<String>,
    #[serde(default)]
    pub(crate) up_when: Option<Spanned<bool>>,
}

/// A log-line pattern: a bare regex, or a map with `match:` and its version range or value.
#[derive(Debug, Clone)]
pub(crate) enum PatternFile {
    Plain(String),
    Full(Box<FullPattern>),
}

/// A pattern with its position (the regex string, or the start of the `{match: ...}` map).
pub(crate) type Pattern = Spanned<PatternFile>;

// Hand-written rather than `#[serde(untagged)]`: untagged enums buffer the value, which loses the
// positions inside a `{match: ...}` map and turns a typo like `mtch:` into "data did not match
// any variant". Here the map goes straight to `FullPattern`, so its errors name the bad key.
impl<'de> Deserialize<'de> for PatternFile {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = PatternFile;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a regex string, or a map {match: <regex>, since: [...], until: [...], value: <text>, order: after-feature|hint, distribution: <name>, roles: [<role>, ...]}")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<PatternFile, E> {
                Ok(PatternFile::Plain(v.to_string()))
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<PatternFile, A::Error> {
                FullPattern::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(|f| PatternFile::Full(Box::new(f)))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct FullPattern {
    #[serde(rename = "match")]
    pub(crate) regex: Spanned<String>,
    /// The line exists from these versions (first per release line).
    #[serde(default)]
    pub(crate) since: Vec<Spanned<String>>,
    /// The line exists only before these versions (first per release line without it).
    #[serde(default)]
    pub(crate) until: Vec<Spanned<String>>,
    /// Fixed value this line stands for (for `value` patterns without a named group).
    #[serde(default)]
    pub(crate) value: Option<String>,
    /// The distribution that prints the line (`k3s`); unqualified: every distribution.
    #[serde(default)]
    pub(crate) distribution: Option<Spanned<String>>,
    /// The roles whose nodes print the line (`[etcd, control-plane, all]`: only servers print
    /// "k3s is up and running"); unqualified: every role. The validator reads it to refuse an
    /// expectation whose evidence can never come on a node (`Signals::never_shows`).
    #[serde(default)]
    pub(crate) roles: Vec<Spanned<crate::raw::Role>>,
    /// `settled-by` only: `after-feature` (k3s prints it after the feature's line, in the same
    /// sequence) or `hint` (no such order; needs the settle window). Default `hint`.
    #[serde(default)]
    pub(crate) order: Option<Spanned<String>>,
}

/// `probe:` as written: one map, or a list of maps.
#[derive(Debug, Clone)]
pub(crate) enum ProbesFile {
    One(Box<ProbeFile>),
    Many(Vec<Spanned<ProbeFile>>),
}

impl ProbesFile {
    /// Every probe written, in order.
    pub(crate) fn all(&self) -> Vec<&ProbeFile> {
        match self {
            ProbesFile::One(p) => vec![p.as_ref()],
            ProbesFile::Many(ps) => ps.iter().map(|p| &p.value).collect(),
        }
    }
}

// Hand-written for the same reason as `PatternFile`'s: the map's own errors keep their keys.
impl<'de> Deserialize<'de> for ProbesFile {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ProbesFile;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a probe {command: [...], up: [...], down: [...]}, or a list of them each with `distribution: <name>`")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ProbesFile, A::Error> {
                ProbeFile::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(|p| ProbesFile::One(Box::new(p)))
            }

            fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<ProbesFile, A::Error> {
                Vec::<Spanned<ProbeFile>>::deserialize(de::value::SeqAccessDeserializer::new(seq))
                    .map(ProbesFile::Many)
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct ProbeFile {
    /// The distribution whose nodes run this probe (`rke2`); unqualified: every other one.
    #[serde(default)]
    pub(crate) distribution: Option<Spanned<String>>,
    pub(crate) command: Spanned<Vec<String>>,
    /// Run the probe only once one of these lines is in the current boot.
    #[serde(default)]
    pub(crate) after: Vec<Pattern>,
    /// The releases whose nodes run the probe (a release set, as a signal's `since:`); empty:
    /// every one. Elsewhere the signal is read from its lines.
    #[serde(default)]
    pub(crate) since: Vec<Spanned<String>>,
    /// Any of these rules matching means up.
    #[serde(default)]
    pub(crate) up: Vec<Spanned<ProbeRuleFile>>,
    /// Any of these rules matching means down.
    #[serde(default)]
    pub(crate) down: Vec<Spanned<ProbeRuleFile>>,
    /// A value probe: regexes over the output with a `(?P<value>...)` group (instead of
    /// `up`/`down`); a captured YAML list (`- a` lines) reads as `a,b`.
    #[serde(default)]
    pub(crate) value: Vec<Spanned<String>>,
    /// How long to keep re-running the probe while neither rule matches (humantime).
    #[serde(default)]
    pub(crate) timeout: Option<Spanned<String>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct ProbeRuleFile {
    pub(crate) exit: Option<i64>,
    /// Regex over stdout and stderr together.
    pub(crate) output: Option<Spanned<String>>,
}
