//! `releases/k3s-changes.yaml`: which k3s release first has each change, with its evidence.
//!
//! The one version table of the project: a check's `fixed-in: <change>` names an entry, and the
//! stand-in (sim/) embeds the same file to decide its version-dependent behaviour, so a check's
//! expected verdict and the stand-in's idea of "fixed" cannot drift apart. The table is built into
//! repro (edit the file and rebuild to change it).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

use crate::version::K3sVersion;

const BUILTIN: &str = include_str!("../releases/k3s-changes.yaml");
/// Where the table lives in the source tree (for messages).
pub const PATH: &str = "releases/k3s-changes.yaml";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChangesFile {
    changes: BTreeMap<String, Change>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Change {
    /// For people reading the file (and its test); repro prints the evidence, not this.
    #[allow(dead_code)]
    pub description: String,
    pub first: Vec<FirstRelease>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FirstRelease {
    pub version: String,
    pub evidence: String,
    pub confidence: String,
}

fn table() -> &'static BTreeMap<String, Change> {
    static CELL: OnceLock<BTreeMap<String, Change>> = OnceLock::new();
    CELL.get_or_init(|| {
        // Compiled in and checked by a unit test: a parse error is a build defect.
        serde_saphyr::from_str::<ChangesFile>(BUILTIN)
            .map(|f| f.changes)
            .unwrap_or_default()
    })
}

pub fn get(name: &str) -> Option<&'static Change> {
    table().get(name)
}

pub fn names() -> Vec<String> {
    table().keys().cloned().collect()
}

/// The evidence and confidence of `name`'s entry for `v`'s release line.
pub fn evidence(name: &str, v: &K3sVersion) -> Option<(String, String)> {
    get(name)?.first.iter().find_map(|f| {
        let first: K3sVersion = f.version.parse().ok()?;
        (first.line() == v.line()).then(|| (f.evidence.trim().to_string(), f.confidence.clone()))
    })
}

/// The first release per line of `name`, parsed.
pub fn firsts(name: &str) -> Option<Vec<K3sVersion>> {
    get(name).map(|c| {
        c.first
            .iter()
            .filter_map(|f| f.version.parse().ok())
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::ReleaseSet;

    #[test]
    fn the_builtin_table_parses_and_every_entry_has_evidence() {
        let parsed: ChangesFile = serde_saphyr::from_str(BUILTIN).expect("k3s-changes.yaml");
        assert!(parsed.changes.contains_key("etcd-only-bootstrap-fix"));
        for (name, c) in &parsed.changes {
            assert!(!c.description.trim().is_empty(), "{name}");
            let mut lines = std::collections::HashSet::new();
            for f in &c.first {
                let v: K3sVersion = f.version.parse().expect("version");
                assert!(lines.insert(v.line()), "{name}: two entries for one line");
                assert!(!f.evidence.trim().is_empty(), "{name} {}", f.version);
                assert!(matches!(f.confidence.as_str(), "read" | "inferred"));
            }
        }
    }

    #[test]
    fn the_fix_of_12753() {
        let fixed = ReleaseSet::new(firsts("etcd-only-bootstrap-fix").expect("listed"));
        for (v, has) in [
            ("v1.31.12+k3s1", false),
            ("v1.31.13+k3s1", true),
            ("v1.32.8+k3s1", false),
            ("v1.32.9+k3s1", true),
            ("v1.33.4+k3s1", false),
            ("v1.33.5+k3s1", true),
            ("v1.34.1+k3s1", true),
            ("v1.30.14+k3s1", false),
        ] {
            assert_eq!(fixed.contains(&v.parse().expect("v")), has, "{v}");
        }
    }
}
