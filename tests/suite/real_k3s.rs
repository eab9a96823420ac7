//! checks/signals.yaml against real k3s logs: every excerpt in tests/fixtures/real-k3s/ (copied
//! unaltered from public issues, pull requests and docs) goes through the code `repro run` uses
//! to decide a signal from a boot's lines (`observe::eval_log`), and each signal must conclude
//! what a careful reader of the excerpt concludes, as its sidecar `NAME.yaml` records.
//!
//! An excerpt is a boot seen from outside, so two of the runner's rules are applied as a reader
//! of a pasted log must apply them:
//! - `boot-end: died` — the excerpt shows the process ending (a fatal line, systemd's exit):
//!   the boot is given a death, so `on-death` applies as in a run;
//! - `boot-end: cut` — the log goes on past the excerpt: settle windows never pass inside it
//!   (no `down` from the settle rule, only from a `down` line), so an undecided state signal
//!   is `unknown`. Not even a line k3s orders after the feature's own decides here: a pasted
//!   excerpt may leave lines out, so the runner's margin is set beyond the excerpt. Value signals read the lines there are: `none` means no line shows one.

use std::path::Path;

use distro::Version;

use crate::real_logs::{
    check_corpus, check_index, load_signals, observe_excerpt, EndKind, Sidecar,
};

/// The version the excerpt's patterns are judged for (`since`/`until` on a pattern). Sources
/// that name no release (CI builds, "n/a") are judged as the newest line.
fn judge_version(side: &Sidecar) -> Version {
    side.version
        .split_whitespace()
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| "v1.34.1+k3s1".parse().expect("fallback version"))
}

#[test]
fn signals_conclude_what_a_reader_of_each_real_excerpt_concludes() {
    check_corpus("real-k3s", 12, judge_version);
}

#[test]
fn every_excerpt_is_described_and_indexed() {
    check_index("real-k3s");
}

/// The stand-in must print what the signals match: the boots of a stored stand-in run
/// (tests/fixtures/run-etcd-split-buggy, Docker-timestamped lines) give each node its role.
#[test]
fn stand_in_boots_give_the_roles_and_version_of_their_nodes() {
    let signals = load_signals();
    let ready = signals.get("ready").expect("signals.yaml defines `ready`");
    let nodes =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/run-etcd-split-buggy/nodes");
    let v: Version = "v1.33.4+k3s1".parse().expect("version");
    for (node, role) in [
        ("etcd-1", "etcd"),
        ("etcd-2", "etcd"),
        ("etcd-3", "etcd"),
        ("cp-1", "control-plane"),
    ] {
        let text = std::fs::read_to_string(nodes.join(node).join("boot-1.log")).expect("boot log");
        let lines: Vec<String> = text
            .lines()
            .filter_map(|l| repro::run::watch::parse_line(l.as_bytes()))
            .map(|l| l.text)
            .collect();
        assert!(!lines.is_empty(), "{node}: no Docker-timestamped lines");
        for (signal, want) in [
            ("roles", role),
            ("version", "v1.33.4+k3s1"),
            ("config-mismatch", "none"),
        ] {
            let sig = signals.get(signal).expect("signal");
            let (got, _) = observe_excerpt(sig, ready, &lines, EndKind::Cut, &v);
            assert_eq!(got, want, "{node} boot 1: `{signal}`");
        }
    }
}
