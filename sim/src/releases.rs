//! The version tables the stand-in shares with repro, embedded at build time:
//! `releases/k3s-changes.yaml` (which release first has each change, with its
//! evidence) and `releases/k3s-flags.yaml` (the flags of `k3s server`/`agent`).
//!
//! One source of truth: a check's `fixed-in` names a change of the same file,
//! so the stand-in's idea of "fixed" can never drift from the check's.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

use crate::version::K3sVersion;

const CHANGES: &str = include_str!("../../releases/k3s-changes.yaml");
const FLAGS: &str = include_str!("../../releases/k3s-flags.yaml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChangesFile {
    changes: BTreeMap<String, Change>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Change {
    // Read by repro and by the tests; the stand-in only needs `first`.
    #[cfg_attr(not(test), allow(dead_code))]
    pub description: String,
    pub first: Vec<FirstRelease>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FirstRelease {
    pub version: String,
    #[cfg_attr(not(test), allow(dead_code))]
    pub evidence: String,
    #[cfg_attr(not(test), allow(dead_code))]
    pub confidence: String,
}

/// How a flag takes its value (`kind:` in the table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlagKind {
    Bool,
    String,
    List,
    Int,
    Duration,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Command {
    Server,
    Agent,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FlagEntry {
    pub name: String,
    #[serde(default)]
    pub short: Option<String>,
    pub kind: FlagKind,
    pub commands: Vec<Command>,
    /// A change of `k3s-changes.yaml` that brought the flag.
    #[serde(default)]
    pub since_change: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FlagsFile {
    flags: Vec<FlagEntry>,
}

fn parse<T: serde::de::DeserializeOwned>(what: &str, text: &str) -> T {
    serde_saphyr::from_str(text).unwrap_or_else(|e| {
        // Both files are compiled in and parsed by a unit test: this is a build defect.
        crate::logs::fatal(format!("repro-sim: embedded {what} is invalid: {e}"))
    })
}

fn changes() -> &'static BTreeMap<String, Change> {
    static CELL: OnceLock<BTreeMap<String, Change>> = OnceLock::new();
    CELL.get_or_init(|| parse::<ChangesFile>("releases/k3s-changes.yaml", CHANGES).changes)
}

pub fn flags() -> &'static [FlagEntry] {
    static CELL: OnceLock<Vec<FlagEntry>> = OnceLock::new();
    CELL.get_or_init(|| parse::<FlagsFile>("releases/k3s-flags.yaml", FLAGS).flags)
}

pub fn change(name: &str) -> Option<&'static Change> {
    changes().get(name)
}

/// Whether `version` has change `name`: at or past its line's first release,
/// or on a line newer than every listed one (`fixed-in` semantics). An
/// unknown name is a build defect and counts as absent.
pub fn has(name: &str, version: &K3sVersion) -> bool {
    let Some(change) = change(name) else {
        return false;
    };
    let firsts: Vec<K3sVersion> = change
        .first
        .iter()
        .filter_map(|f| K3sVersion::parse(&f.version).ok())
        .collect();
    let line = (version.major, version.minor);
    if let Some(first) = firsts.iter().find(|f| (f.major, f.minor) == line) {
        return version.patch >= first.patch;
    }
    firsts
        .iter()
        .map(|f| (f.major, f.minor))
        .max()
        .is_some_and(|newest| line > newest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> K3sVersion {
        K3sVersion::parse(text).expect("valid version")
    }

    #[test]
    fn embedded_tables_parse_and_are_consistent() {
        assert!(!changes().is_empty());
        for (name, c) in changes() {
            assert!(!c.description.is_empty(), "{name}");
            for f in &c.first {
                K3sVersion::parse(&f.version).expect("version");
                assert!(
                    matches!(f.confidence.as_str(), "read" | "inferred"),
                    "{name}: {}",
                    f.confidence
                );
                assert!(!f.evidence.is_empty());
            }
        }
        assert!(flags().len() > 100);
        for f in flags() {
            if let Some(c) = &f.since_change {
                assert!(
                    change(c).is_some(),
                    "flag {} names unknown change {c}",
                    f.name
                );
            }
            assert!(!f.commands.is_empty(), "{}", f.name);
        }
    }

    #[test]
    fn changes_follow_fixed_in_semantics() {
        let fix = "etcd-only-bootstrap-fix";
        assert!(!has(fix, &v("v1.30.14+k3s1")), "older lines never");
        assert!(!has(fix, &v("v1.33.4+k3s1")));
        assert!(has(fix, &v("v1.33.5+k3s1")));
        assert!(has(fix, &v("v1.34.1+k3s1")));
        assert!(has(fix, &v("v1.35.0+k3s1")), "newer lines always");
        assert!(
            !has("flannel-ip-masq-disable-random-fully", &v("v1.34.1+k3s1")),
            "an empty `first:` is never"
        );
        assert!(!has("no-such-change", &v("v1.34.1+k3s1")));
    }
}
