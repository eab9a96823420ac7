//! Planted bugs (#38): the catalogue `--sim-plant NAME` picks from, so `repro explore`'s power
//! and its false alarms can be measured as Sieve and Acto measure theirs — plant one known bug
//! in a release the stand-in plays as fixed, run the search with its default keys and budget,
//! and see whether it reports that bug, with the planted class and key.
//!
//! One table, shared by repro (which refuses an unknown name, passes the name to every node as
//! [`PLANT_ENV`] and records it) and the stand-in (sim/src/plant.rs plays each entry where its
//! behaviour lives), and read by `make bench` for what a campaign should report. Each bug copies
//! the *shape* of a bug in k3s's history (the issue is in `shape`), not something explore
//! already finds; each shows only when servers' configs differ (a bug that shows always is not a
//! config-order bug); on a fixed release (v1.33.5+k3s1, v1.32.9+rke2r1) it is the only thing
//! wrong.

/// The environment variable that plants a bug in the stand-in: one name of [`CATALOGUE`].
/// Unset: no planted bug.
pub const PLANT_ENV: &str = "REPRO_SIM_PLANT";

/// One planted bug.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plant {
    /// An etcd-only server's agent takes `supervisor-metrics` from the `/v1-k3s/config` of the
    /// server it joined instead of its own supervisor's (the k3s #12753 shape, for one key, on a
    /// release with the #12754 fix). Explore should report `taken-from-<joined server>`
    /// (`taken-from-etcd-1` on etcd-split and rke2-8465), key `supervisor-metrics`.
    JoinedMetrics,
    /// The flannel backend is cached in the data dir on a node's first boot and not read again:
    /// a restart with a new `flannel-backend` keeps the old one (the k3s #13388 shape, a flannel
    /// setting changed and restarted with no effect; #3409 for the backend). Explore should
    /// report `stale`, key `flannel-backend`.
    CachedFlannelBackend,
    /// The bootstrap's critical-config check also compares `disable-kube-proxy`, which k3s lets
    /// servers disagree on: a joining (or control-plane-only) server whose value differs from its
    /// server's is refused naming it (the k3s #4768 shape: a false `critical configuration value
    /// mismatch` refusal). Explore should report `wrongly-refused`, key `disable-kube-proxy`.
    RefusedKubeProxy,
    /// A control-plane-only server whose `service-node-port-range` differs from its join
    /// server's panics at bootstrap (Go's `panic: runtime error: invalid memory address or nil
    /// pointer dereference` banner and goroutine trace, then exit status 2): the k3s #13533
    /// shape (split roles, the control-plane node panics on restart; #13167 another
    /// control-plane-only panic at start-up). Explore should report `died`, key `panic`.
    ControlPlanePanic,
}

/// A planted bug: its name, what explore should report, and the k3s bug whose shape it copies.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    pub plant: Plant,
    /// `--sim-plant`'s value.
    pub name: &'static str,
    /// The finding class explore should report; `taken-from-<joined>` names the server in the
    /// planted node's `server:` (etcd-1 on etcd-split and rke2-8465).
    pub class: &'static str,
    /// The finding's key.
    pub key: &'static str,
    /// The key whose difference between servers sets it off.
    pub trigger: &'static str,
    /// The k3s issue whose shape it copies.
    pub shape: &'static str,
}

/// Every planted bug (`--sim-plant`'s values, in this order in error messages and the bench).
pub static CATALOGUE: [Entry; 4] = [
    Entry {
        plant: Plant::JoinedMetrics,
        name: "joined-metrics",
        class: "taken-from-<joined>",
        key: "supervisor-metrics",
        trigger: "supervisor-metrics",
        shape: "k3s #12753 (etcd-only agent config from a remote server)",
    },
    Entry {
        plant: Plant::CachedFlannelBackend,
        name: "cached-flannel-backend",
        class: "stale",
        key: "flannel-backend",
        trigger: "flannel-backend",
        shape: "k3s #13388 (a flannel setting changed and restarted has no effect; #3409)",
    },
    Entry {
        plant: Plant::RefusedKubeProxy,
        name: "refused-kube-proxy",
        class: "wrongly-refused",
        key: "disable-kube-proxy",
        trigger: "disable-kube-proxy",
        shape: "k3s #4768 (a false critical-config refusal)",
    },
    Entry {
        plant: Plant::ControlPlanePanic,
        name: "control-plane-panic",
        class: "died",
        key: "panic",
        trigger: "service-node-port-range",
        shape: "k3s #13533 (split roles: the control-plane node panics on restart; #13167)",
    },
];

/// The entry named `name`, if any.
pub fn by_name(name: &str) -> Option<&'static Entry> {
    CATALOGUE.iter().find(|e| e.name == name)
}

/// The names, comma-separated, for error messages.
pub fn names() -> String {
    CATALOGUE
        .iter()
        .map(|e| e.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `--sim-plant`'s value parser: a name of the catalogue, or an error listing them.
pub fn parse_plant(s: &str) -> Result<String, String> {
    match by_name(s) {
        Some(e) => Ok(e.name.to_string()),
        None => Err(format!(
            "no planted bug named {s:?}: the catalogue has {}",
            names()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_parse() {
        for e in &CATALOGUE {
            assert_eq!(by_name(e.name).map(|f| f.plant), Some(e.plant));
            assert_eq!(parse_plant(e.name).as_deref(), Ok(e.name));
        }
        let err = parse_plant("nope").unwrap_err();
        assert!(
            err.contains("joined-metrics, cached-flannel-backend"),
            "{err}"
        );
    }

    #[test]
    fn the_catalogue_covers_every_defect_class_and_three_keys() {
        let classes: std::collections::BTreeSet<_> = CATALOGUE.iter().map(|e| e.class).collect();
        for c in ["taken-from-<joined>", "stale", "wrongly-refused", "died"] {
            assert!(classes.contains(c), "{c}");
        }
        let triggers: std::collections::BTreeSet<_> = CATALOGUE.iter().map(|e| e.trigger).collect();
        assert!(triggers.len() >= 3);
    }
}
