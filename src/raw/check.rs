//! `checks/*.yaml`: a reproduction as ordered steps, each with what should happen (`expect`) and
//! what the documented bug does instead (`bug`).

use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use serde_saphyr::Spanned;

use super::{ConfigValue, SpannedMap};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct CheckFile {
    pub(crate) name: Spanned<String>,
    pub(crate) topology: Spanned<String>,
    /// The issue this check reproduces (URL).
    pub(crate) issue: Spanned<String>,
    pub(crate) summary: String,
    #[serde(default)]
    pub(crate) description: String,
    /// Other sources (issues, PRs, validation comments).
    #[serde(default)]
    pub(crate) sources: Vec<String>,
    /// First fixed version per release line — a list, or the name of a change of
    /// `releases/k3s-changes.yaml`; decides the expected verdict for any version.
    #[serde(default)]
    pub(crate) fixed_in: Option<Spanned<FixedIn>>,
    /// First version per release line that has the bug, for a regression: a version before it
    /// is expected `fixed` whatever `fixed-in` says. Same forms as `fixed-in`.
    #[serde(default)]
    pub(crate) introduced_in: Option<Spanned<FixedIn>>,
    /// How long a node may go on without an `up` line after it got past the point where the
    /// feature starts, before the feature counts as down (humantime, e.g. `3s`).
    #[serde(default)]
    pub(crate) settle: Option<Spanned<String>>,
    pub(crate) steps: Spanned<Vec<StepFile>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct StepFile {
    pub(crate) name: Spanned<String>,
    /// Why this step is there (shown in plans and reports).
    #[serde(default)]
    pub(crate) why: String,
    /// Config keys to set, per node. A `null` value is not allowed: use `remove`.
    #[serde(default)]
    pub(crate) config: SpannedMap<SpannedMap<ConfigValue>>,
    /// Config keys to remove, per node.
    #[serde(default)]
    pub(crate) remove: SpannedMap<Vec<Spanned<String>>>,
    /// Files to write (`path: content`) or delete (`path: null`), per node.
    #[serde(default)]
    pub(crate) files: SpannedMap<SpannedMap<Option<String>>>,
    /// Running nodes to stop gracefully, all at once; each stays down until a `start:`.
    #[serde(default)]
    pub(crate) stop: Vec<Spanned<String>>,
    /// Deferred nodes to start for the first time, or stopped nodes to start again, at once.
    #[serde(default)]
    pub(crate) start: Vec<Spanned<String>>,
    /// Nodes to restart, in order; a nested list restarts a group at once.
    #[serde(default)]
    pub(crate) restart: Vec<Spanned<RestartItem>>,
    /// Nodes to upgrade, one after another in this order: node -> a version, or
    /// `{binary: PATH}` (a local build).
    #[serde(default)]
    pub(crate) upgrade: SpannedMap<Spanned<UpgradeTo>>,
    /// The correct behaviour: node -> signal -> value.
    #[serde(default)]
    pub(crate) expect: SpannedMap<SpannedMap<Spanned<String>>>,
    /// The documented wrong behaviour (the bug signature), same shape.
    #[serde(default)]
    pub(crate) bug: SpannedMap<SpannedMap<Spanned<String>>>,
}

/// `fixed-in:` — a change of `releases/k3s-changes.yaml` by name, or versions listed inline.
#[derive(Debug, Clone)]
pub(crate) enum FixedIn {
    Change(String),
    List(Vec<Spanned<String>>),
}

impl<'de> Deserialize<'de> for FixedIn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let expecting =
            "the name of a change in releases/k3s-changes.yaml, or a list of k3s versions";
        Ok(match string_or_list(d, expecting)? {
            StringOrList::One(name) => FixedIn::Change(name),
            StringOrList::List(list) => FixedIn::List(list),
        })
    }
}

/// One entry of `restart:`: a node, or a list of nodes restarted at once.
#[derive(Debug, Clone)]
pub(crate) enum RestartItem {
    One(String),
    /// Members keep their own positions so an unknown name inside a group is pointed at exactly.
    Group(Vec<Spanned<String>>),
}

impl<'de> Deserialize<'de> for RestartItem {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let expecting = "a node name, or a list of node names restarted at once";
        Ok(match string_or_list(d, expecting)? {
            StringOrList::One(node) => RestartItem::One(node),
            StringOrList::List(group) => RestartItem::Group(group),
        })
    }
}

/// What an `upgrade:` entry moves a node to: a release or candidate (`v1.33.5+k3s1`), a
/// local build (`{binary: ./k3s}`, the file `--k3s-binary` takes for a whole run) or a CI
/// build (`{commit: SHA}`, what `--k3s-commit` takes).
#[derive(Debug, Clone)]
pub(crate) enum UpgradeTo {
    Version(String),
    /// The path as written (relative to the check file's folder unless absolute), with its
    /// own position for the errors about the file.
    Binary(Spanned<String>),
    /// The commit as written, with its own position.
    Commit(Spanned<String>),
}

/// `{binary: PATH}` or `{commit: SHA}`: one of the two.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Build {
    binary: Option<Spanned<String>>,
    commit: Option<Spanned<String>>,
}

impl<'de> Deserialize<'de> for UpgradeTo {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = UpgradeTo;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a version (v1.33.5+k3s1), {binary: PATH} for a local build or {commit: SHA} for a CI build")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<UpgradeTo, E> {
                Ok(UpgradeTo::Version(v.to_string()))
            }

            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<UpgradeTo, A::Error> {
                let b = Build::deserialize(de::value::MapAccessDeserializer::new(map))?;
                match (b.binary, b.commit) {
                    (Some(path), None) => Ok(UpgradeTo::Binary(path)),
                    (None, Some(sha)) => Ok(UpgradeTo::Commit(sha)),
                    _ => Err(de::Error::custom(
                        "give one of `binary: PATH` (a local build) and `commit: SHA` (a CI build)",
                    )),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// A string, or a list of strings that keep their own positions: `fixed-in:`, or an entry of
/// `restart:`.
enum StringOrList {
    One(String),
    List(Vec<Spanned<String>>),
}

// Hand-written rather than `#[serde(untagged)]`: untagged enums buffer the value, which loses
// positions inside it and reduces every mistake to "data did not match any variant".
fn string_or_list<'de, D: Deserializer<'de>>(
    d: D,
    expecting: &'static str,
) -> Result<StringOrList, D::Error> {
    struct V(&'static str);
    impl<'de> Visitor<'de> for V {
        type Value = StringOrList;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<StringOrList, E> {
            Ok(StringOrList::One(v.to_string()))
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<StringOrList, A::Error> {
            let mut list = Vec::new();
            while let Some(v) = seq.next_element::<Spanned<String>>()? {
                list.push(v);
            }
            Ok(StringOrList::List(list))
        }
    }
    d.deserialize_any(V(expecting))
}
