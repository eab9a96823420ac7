//! The one parser of a distribution's release tables, embedded at build time:
//!
//! - the changes table (`releases/k3s-changes.yaml`): which release of each line first has a
//!   change (a fix, a feature), with its evidence. A check's `fixed-in: <change>` names an entry,
//!   and the stand-in decides its version-dependent behaviour from the same entries.
//! - the flags table (`releases/k3s-flags.yaml`): the flags of the server and agent commands,
//!   i.e. the keys a config file may hold.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

use crate::version::{ReleaseSet, Version};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChangesFile {
    changes: BTreeMap<String, Change>,
}

/// One change: what it is and the first release per line that has it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Change {
    /// For people reading the file (and its test); repro prints the evidence.
    pub description: String,
    pub first: Vec<FirstRelease>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FirstRelease {
    pub version: String,
    pub evidence: String,
    /// `read` (stated by a source) or `inferred`.
    pub confidence: String,
    /// The first release candidate of `version` that has the change, where evidence places one.
    #[serde(default)]
    pub rc: Option<FirstCandidate>,
}

/// The first release candidate of a first release that has the change (`v1.33.5-rc1+k3s1`), and
/// why it is known (the backport merged before the candidate's tag, QA's "Validated on ...").
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FirstCandidate {
    pub version: String,
    pub evidence: String,
    /// `read` or `inferred`, as for the release.
    pub confidence: String,
}

impl Change {
    /// The first release per line, parsed (entries that do not parse are skipped; the table's
    /// unit test rejects them).
    pub fn firsts(&self) -> Vec<Version> {
        self.first
            .iter()
            .filter_map(|f| f.version.parse().ok())
            .collect()
    }

    pub fn release_set(&self) -> ReleaseSet {
        let candidates = self
            .first
            .iter()
            .filter_map(|f| f.rc.as_ref()?.version.parse().ok())
            .collect();
        ReleaseSet::new(self.firsts()).with_candidates(candidates)
    }

    /// The evidence and confidence of the entry for `v`'s release line, trimmed: for a release
    /// candidate of the line's first release, the candidate's evidence (none if no evidence
    /// places candidates of it).
    pub fn evidence_for(&self, v: &Version) -> Option<(String, String)> {
        self.first.iter().find_map(|f| {
            let first: Version = f.version.parse().ok()?;
            if first.line() != v.line() {
                return None;
            }
            let candidate_of_first = v.pre.is_some()
                && (first.major, first.minor, first.patch) == (v.major, v.minor, v.patch);
            if candidate_of_first {
                let rc = f.rc.as_ref()?;
                return Some((rc.evidence.trim().to_string(), rc.confidence.clone()));
            }
            Some((f.evidence.trim().to_string(), f.confidence.clone()))
        })
    }
}

/// Change name → change, in name order.
pub type ChangeTable = BTreeMap<String, Change>;

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

/// The command a flag belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlagCommand {
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
    pub commands: Vec<FlagCommand>,
    /// A change of the changes table that brought the flag.
    #[serde(default)]
    pub since_change: Option<String>,
    /// Or the first release per line that has it, when no change names it (rke2's table).
    #[serde(default)]
    pub since: Vec<String>,
    /// Accepted but hidden from `--help` (rke2's hideFlag); for people reading the table.
    #[serde(default)]
    pub hidden: bool,
    /// A `CriticalControlArgs` field: compared with the joined server's by `compareConfig` when
    /// a node bootstraps (the table's header cites the source).
    #[serde(default)]
    pub critical: bool,
    /// The agent builds its node config with the value of the server it reaches
    /// (pkg/agent/config/config.go `get()`), not its own.
    #[serde(default)]
    pub from_server: bool,
    /// For a key that is not a boolean: the two values `repro explore` searches, the
    /// distribution's default first (`try:` in the table). Empty: explore searches the key only
    /// if it is a boolean (`false`, `true`).
    #[serde(default, rename = "try")]
    pub try_values: Vec<String>,
}

impl FlagEntry {
    /// The releases from which the flag exists, per line, when the table says: its
    /// `since-change:` entry of `changes`, or its own `since:` list.
    pub fn since_set(&self, changes: &ChangeTable) -> Option<ReleaseSet> {
        if let Some(c) = &self.since_change {
            return changes.get(c).map(Change::release_set);
        }
        (!self.since.is_empty())
            .then(|| ReleaseSet::new(self.since.iter().filter_map(|s| s.parse().ok()).collect()))
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FlagsFile {
    flags: Vec<FlagEntry>,
}

/// A distribution's embedded tables, parsed on first use.
#[derive(Debug)]
pub(crate) struct Tables {
    changes_yaml: &'static str,
    flags_yaml: &'static str,
    changes: OnceLock<Result<ChangeTable, String>>,
    flags: OnceLock<Result<Vec<FlagEntry>, String>>,
}

impl Tables {
    pub(crate) const fn new(changes_yaml: &'static str, flags_yaml: &'static str) -> Tables {
        Tables {
            changes_yaml,
            flags_yaml,
            changes: OnceLock::new(),
            flags: OnceLock::new(),
        }
    }

    fn changes_parsed(&self) -> &Result<ChangeTable, String> {
        self.changes.get_or_init(|| {
            serde_saphyr::from_str::<ChangesFile>(self.changes_yaml)
                .map(|f| f.changes)
                .map_err(|e| format!("the embedded changes table is invalid: {e}"))
        })
    }

    fn flags_parsed(&self) -> &Result<Vec<FlagEntry>, String> {
        self.flags.get_or_init(|| {
            serde_saphyr::from_str::<FlagsFile>(self.flags_yaml)
                .map(|f| f.flags)
                .map_err(|e| format!("the embedded flags table is invalid: {e}"))
        })
    }

    /// The changes; empty if the embedded file is invalid (a build defect, see [`Self::error`]).
    pub(crate) fn changes(&self) -> &ChangeTable {
        static EMPTY: ChangeTable = BTreeMap::new();
        self.changes_parsed().as_ref().unwrap_or(&EMPTY)
    }

    pub(crate) fn flags(&self) -> &[FlagEntry] {
        self.flags_parsed().as_deref().unwrap_or(&[])
    }

    pub(crate) fn error(&self) -> Option<String> {
        [
            self.changes_parsed().as_ref().err(),
            self.flags_parsed().as_ref().err(),
        ]
        .into_iter()
        .flatten()
        .next()
        .cloned()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use crate::Distro;

    fn v(s: &str) -> crate::Version {
        s.parse().expect("valid version")
    }

    #[test]
    fn every_change_has_evidence_and_one_entry_per_line() {
        for d in Distro::ALL {
            let changes = d.changes();
            assert!(changes.contains_key("etcd-only-bootstrap-fix"));
            for (name, c) in changes {
                assert!(!c.description.trim().is_empty(), "{name}");
                let mut lines = HashSet::new();
                for f in &c.first {
                    let v: crate::Version = f.version.parse().expect("version");
                    assert_eq!(v.distro, *d, "{name} {}", f.version);
                    assert!(lines.insert(v.line()), "{name}: two entries for one line");
                    assert!(!f.evidence.trim().is_empty(), "{name} {}", f.version);
                    assert!(matches!(f.confidence.as_str(), "read" | "inferred"));
                    if let Some(rc) = &f.rc {
                        let c: crate::Version = rc.version.parse().expect("rc version");
                        assert!(c.pre.is_some(), "{name}: {} is no candidate", rc.version);
                        assert_eq!(
                            (c.distro, c.major, c.minor, c.patch),
                            (v.distro, v.major, v.minor, v.patch),
                            "{name}: {} is no candidate of {}",
                            rc.version,
                            f.version
                        );
                        assert!(!rc.evidence.trim().is_empty(), "{name} {}", rc.version);
                        assert!(matches!(rc.confidence.as_str(), "read" | "inferred"));
                    }
                }
            }
        }
    }

    #[test]
    fn every_flag_names_a_known_change_and_a_command() {
        for d in Distro::ALL {
            for f in d.flags() {
                if let Some(c) = &f.since_change {
                    assert!(d.changes().contains_key(c), "flag {} names {c}", f.name);
                    assert!(f.since.is_empty(), "flag {}: since-change or since", f.name);
                }
                for s in &f.since {
                    assert_eq!(v(s).distro, *d, "flag {} since {s}", f.name);
                }
                assert!(!f.commands.is_empty(), "{}", f.name);
            }
        }
    }

    #[test]
    fn critical_and_from_server_keys_are_server_flags() {
        for d in Distro::ALL {
            let crit: Vec<&str> = d
                .flags()
                .iter()
                .filter(|f| f.critical)
                .map(|f| f.name.as_str())
                .collect();
            let from: Vec<&str> = d
                .flags()
                .iter()
                .filter(|f| f.from_server)
                .map(|f| f.name.as_str())
                .collect();
            for n in [
                "embedded-registry",
                "supervisor-metrics",
                "cluster-dns",
                "service-cidr",
            ] {
                assert!(crit.contains(&n) && from.contains(&n), "{d} {n}");
            }
            // not critical, but the agent takes it from its server
            assert!(
                from.contains(&"disable-kube-proxy") && !crit.contains(&"disable-kube-proxy"),
                "{d}"
            );
            // critical, but every agent keeps its own
            assert!(
                crit.contains(&"secrets-encryption") && !from.contains(&"secrets-encryption"),
                "{d}"
            );
            for f in d.flags().iter().filter(|f| f.critical || f.from_server) {
                assert!(
                    f.commands.contains(&crate::FlagCommand::Server),
                    "{d} {}",
                    f.name
                );
            }
        }
        assert_eq!(
            Distro::K3s.flags().iter().filter(|f| f.critical).count(),
            15
        );
    }

    #[test]
    fn try_values_are_two_values_of_a_key_that_is_not_a_boolean() {
        for d in Distro::ALL {
            for f in d.flags().iter().filter(|f| !f.try_values.is_empty()) {
                assert_eq!(
                    f.try_values.len(),
                    2,
                    "{d} {}: the default, then one other",
                    f.name
                );
                assert_ne!(f.try_values[0], f.try_values[1], "{d} {}", f.name);
                assert_ne!(
                    f.kind,
                    crate::FlagKind::Bool,
                    "{d} {}: booleans try false/true",
                    f.name
                );
            }
        }
        let k3s = Distro::K3s.flags();
        let flannel = k3s
            .iter()
            .find(|f| f.name == "flannel-backend")
            .expect("flag");
        assert_eq!(flannel.try_values, ["vxlan", "host-gw"]);
    }

    #[test]
    fn the_fix_of_8465_on_rke2() {
        let fixed = Distro::Rke2.changes()["etcd-only-bootstrap-fix"].release_set();
        for (s, has) in [
            ("v1.31.12+rke2r1", false),
            ("v1.31.13+rke2r1", true),
            // rancher/rke2#8465 was reported on v1.32.5+rke2r1.
            ("v1.32.5+rke2r1", false),
            ("v1.32.8+rke2r1", false),
            ("v1.32.9+rke2r1", true),
            ("v1.33.4+rke2r1", false),
            ("v1.33.5+rke2r1", true),
            ("v1.34.1+rke2r1", true),
        ] {
            assert_eq!(fixed.contains(&v(s)), has, "{s}");
        }
        // rke2 drops cluster-init and every flannel flag; it keeps supervisor-metrics.
        let has = |n: &str| Distro::Rke2.flags().iter().any(|f| f.name == n);
        assert!(!has("cluster-init") && !has("disable-helm-controller") && !has("flannel-backend"));
        assert!(has("supervisor-metrics") && has("embedded-registry") && has("disable-apiserver"));
    }

    #[test]
    fn the_fix_of_12753() {
        let fixed = Distro::K3s.changes()["etcd-only-bootstrap-fix"].release_set();
        for (s, has) in [
            ("v1.30.14+k3s1", false),
            ("v1.31.12+k3s1", false),
            ("v1.31.13+k3s1", true),
            ("v1.32.8+k3s1", false),
            ("v1.32.9+k3s1", true),
            ("v1.33.4+k3s1", false),
            ("v1.33.5+k3s1", true),
            // k3s never published v1.34.0+k3s1; the table lists v1.34.1+k3s1.
            ("v1.34.0+k3s1", false),
            ("v1.34.1+k3s1", true),
            ("v1.35.0+k3s1", true),
        ] {
            assert_eq!(fixed.contains(&v(s)), has, "{s}");
        }
        // QA validated the fix on the rc1s (k3s #12816, #12817); an rc of a buggy release has
        // the bug.
        for (s, has) in [
            ("v1.33.5-rc1+k3s1", Some(true)),
            ("v1.32.9-rc1+k3s1", Some(true)),
            ("v1.31.13-rc1+k3s1", Some(true)),
            ("v1.34.1-rc1+k3s1", Some(true)),
            ("v1.33.4-rc1+k3s1", Some(false)),
            ("v1.32.8-rc2+k3s1", Some(false)),
        ] {
            assert_eq!(fixed.placement(&v(s)), has, "{s}");
        }
        assert!(
            Distro::K3s.changes()["flannel-ip-masq-disable-random-fully"]
                .firsts()
                .is_empty()
        );
    }
}
