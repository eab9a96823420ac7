//! The loader on lifecycle steps (`stop:`, `start:` of a stopped node, `upgrade:`, restart
//! groups across roles): each bad step refused at its file:line:col.

use super::*;

const SIGNALS: &str = include_str!("../../checks/signals.yaml");
const ETCD_SPLIT: &str = include_str!("../../topologies/etcd-split.yaml");
const AGENT: &str = include_str!("../../topologies/etcd-split-agent.yaml");

fn chk(body: &str) -> Result<Check, Vec<String>> {
    let topologies = vec![
        topology(Path::new("etcd-split.yaml"), ETCD_SPLIT).expect("valid"),
        topology(Path::new("etcd-split-agent.yaml"), AGENT).expect("valid"),
    ];
    let sig = signals(Path::new("signals.yaml"), SIGNALS).expect("valid");
    let text =
        format!("name: c\ntopology: etcd-split\nissue: https://x/1\nsummary: s\nsteps:\n{body}");
    check(Path::new("c.yaml"), &text, &topologies, &sig).map_err(|d| {
        d.0.into_iter()
            .map(|d| format!("{}:{}: {}", d.line, d.column, d.message))
            .collect()
    })
}

fn one_error(body: &str) -> String {
    let e = chk(body).expect_err("refused");
    assert_eq!(e.len(), 1, "{e:#?}");
    e[0].clone()
}

#[test]
fn stop_start_upgrade_and_a_cross_role_group_load_in_order() {
    let c = chk("  - name: stop etcd-1\n    stop: [etcd-1]\n    restart: [[etcd-2, etcd-3, cp-1]]\n    expect:\n      etcd-1: {ready: down}\n      cp-1: {ready: up}\n  - name: back\n    start: [etcd-1]\n    upgrade: {etcd-2: v1.33.5+k3s1, cp-1: v1.33.5+k3s1}\n    expect:\n      etcd-1: {ready: up}\n      cp-1: {ready: up}\n").expect("valid");
    let s = &c.steps[0];
    assert_eq!(s.stop, ["etcd-1"]);
    assert_eq!(s.restart, [vec!["etcd-2", "etcd-3", "cp-1"]]);
    let s = &c.steps[1];
    assert_eq!(s.start, ["etcd-1"]);
    let up: Vec<String> = s
        .upgrade
        .iter()
        .map(|u| format!("{}={}", u.node, u.version))
        .collect();
    assert_eq!(up, ["etcd-2=v1.33.5+k3s1", "cp-1=v1.33.5+k3s1"]);
    assert_eq!(s.booted_nodes(), ["etcd-1", "etcd-2", "cp-1"]);
}

#[test]
fn a_stopped_node_shows_only_down() {
    let e = one_error(
        "  - name: stop\n    stop: [etcd-2]\n    expect:\n      etcd-2: {embedded-registry: up}\n",
    );
    assert_eq!(
        e,
        "9:35: `etcd-2` is stopped at this step: `embedded-registry: up` cannot be observed on it"
    );
    // A later step still sees it stopped.
    let e = one_error("  - name: stop\n    stop: [etcd-2]\n    expect:\n      etcd-2: {ready: down}\n  - name: later\n    restart: [etcd-3]\n    expect:\n      etcd-2: {ready: up}\n");
    assert_eq!(
        e,
        "13:23: `etcd-2` is stopped at this step: `ready: up` cannot be observed on it"
    );
}

#[test]
fn stopping_a_stopped_node_and_starting_a_running_one_are_refused() {
    let e = one_error("  - name: a\n    stop: [etcd-2]\n    expect:\n      etcd-2: {ready: down}\n  - name: b\n    stop: [etcd-2]\n    expect:\n      etcd-1: {ready: up}\n");
    assert_eq!(e, "11:12: `etcd-2` is already stopped at this step");
    let e = one_error("  - name: a\n    start: [etcd-2]\n    expect:\n      etcd-2: {ready: up}\n");
    assert_eq!(e, "7:13: `etcd-2` is already running at this step");
    let e = one_error("  - name: a\n    stop: [etcd-2]\n    expect:\n      etcd-2: {ready: down}\n  - name: b\n    restart: [etcd-2]\n    expect:\n      etcd-1: {ready: up}\n");
    assert_eq!(
        e,
        "11:15: `etcd-2` is stopped at this step, so it cannot restart or upgrade"
    );
}

#[test]
fn the_api_needs_an_etcd_quorum() {
    // The only etcd member left of three... stopping two of three loses quorum: cp-1's restart
    // cannot become ready.
    let e = one_error("  - name: a\n    stop: [etcd-1, etcd-2]\n    restart: [cp-1]\n    expect:\n      cp-1: {ready: up}\n");
    assert_eq!(e, "10:21: `ready: up` on `cp-1` needs the Kubernetes API, which cannot answer at this step: etcd has no quorum: 1 of its 3 members run (etcd-1, etcd-2 stopped)");
    // One of three down keeps a quorum (k3s #11333's validation).
    chk("  - name: a\n    stop: [etcd-1]\n    restart: [cp-1]\n    expect:\n      cp-1: {ready: up}\n").expect("a quorum is left");
    // The API's node list needs it too.
    let e = one_error("  - name: a\n    stop: [etcd-1, etcd-2, etcd-3]\n    expect:\n      cp-1: {node-ready: up}\n");
    assert_eq!(e, "9:26: `node-ready: up` on `cp-1` needs the Kubernetes API, which cannot answer at this step: etcd has no quorum: 0 of its 3 members run (etcd-1, etcd-2, etcd-3 stopped)");
}

#[test]
fn upgrades_stay_within_the_skew_policy() {
    let e = one_error("  - name: a\n    upgrade: {etcd-2: v1.35.1+k3s1}\n    expect:\n      etcd-2: {ready: up}\n");
    assert_eq!(e, "7:23: `etcd-2` cannot be upgraded to v1.35.1+k3s1: v1.33.4+k3s1 to v1.35.1+k3s1 skips a minor version: upgrade through each minor in turn");
    let e = one_error("  - name: a\n    upgrade: {etcd-2: v1.33.3+k3s1}\n    expect:\n      etcd-2: {ready: up}\n");
    assert_eq!(e, "7:23: `etcd-2` cannot be upgraded to v1.33.3+k3s1: v1.33.3+k3s1 is older than v1.33.4+k3s1: the distribution does not support downgrades");
    let e = one_error("  - name: a\n    upgrade: {etcd-2: v1.33.5+rke2r1}\n    expect:\n      etcd-2: {ready: up}\n");
    assert_eq!(e, "7:23: `v1.33.5+rke2r1` is not a k3s version");
    // Release candidates are versions too; two steps of one minor each are fine.
    chk("  - name: a\n    upgrade: {etcd-2: v1.34.1-rc1+k3s1}\n    expect:\n      etcd-2: {ready: up}\n  - name: b\n    upgrade: {etcd-2: v1.35.0+k3s1}\n    expect:\n      etcd-2: {ready: up}\n").expect("one minor at a time");
}

#[test]
fn an_agent_is_upgraded_after_the_servers() {
    let body = "  - name: a\n    upgrade: {agent-1: v1.34.1+k3s1}\n    expect:\n      agent-1: {agent-ready: up}\n";
    let topologies = vec![topology(Path::new("t.yaml"), AGENT).expect("valid")];
    let sig = signals(Path::new("signals.yaml"), SIGNALS).expect("valid");
    let name = &topologies[0].name;
    let text = format!("name: c\ntopology: {name}\nissue: https://x/1\nsummary: s\nsteps:\n{body}");
    let e = check(Path::new("c.yaml"), &text, &topologies, &sig).expect_err("refused");
    assert_eq!(e.0.len(), 1);
    assert_eq!((e.0[0].line, e.0[0].column), (7, 24));
    assert!(
        e.0[0]
            .message
            .contains("newer minor than server version v1.33.4+k3s1"),
        "{}",
        e.0[0].message
    );
}

/// Loads `body` as the steps of a check at `<dir>/checks/c.yaml` (so a relative binary path is
/// from `<dir>/checks`).
fn chk_in(dir: &Path, body: &str) -> Result<Check, Vec<String>> {
    let topologies = vec![topology(Path::new("etcd-split.yaml"), ETCD_SPLIT).expect("valid")];
    let sig = signals(Path::new("signals.yaml"), SIGNALS).expect("valid");
    let text =
        format!("name: c\ntopology: etcd-split\nissue: https://x/1\nsummary: s\nsteps:\n{body}");
    let path = dir.join("checks/c.yaml");
    check(&path, &text, &topologies, &sig).map_err(|d| {
        d.0.into_iter()
            .map(|d| format!("{}:{}: {}", d.line, d.column, d.message))
            .collect()
    })
}

/// A stand-in build's bytes: its stamp says the version (as `repro sim binary` writes it).
fn stamped(version: &str) -> Vec<u8> {
    let mut b = b"\x7fELF stand-in v1.31.12+k3s1".to_vec();
    b.extend(
        distro::sim_stamp::SimStamp {
            version: version.into(),
            bootstrap_fix: true,
        }
        .to_bytes(),
    );
    b
}

#[test]
fn an_upgrade_to_a_local_build_reads_the_file_from_the_check_files_folder() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(dir.path().join("checks")).expect("dir");
    std::fs::write(dir.path().join("k3s"), stamped("v1.33.5+k3s1")).expect("write");
    let c = chk_in(
        dir.path(),
        "  - name: a\n    upgrade:\n      etcd-2: {binary: ../k3s}\n    expect:\n      etcd-2: {ready: up}\n",
    )
    .expect("valid");
    let u = &c.steps[0].upgrade[0];
    assert_eq!(
        (u.node.as_str(), u.version.to_string()),
        ("etcd-2", "v1.33.5+k3s1".into())
    );
    let b = u.binary.as_ref().expect("a local build");
    assert_eq!(b.path, dir.path().join("checks/../k3s"));
    assert_eq!(b.reported, "v1.33.5+k3s1");
    assert_eq!(
        b.sha256,
        crate::build_file::sha256_hex(&stamped("v1.33.5+k3s1"))
    );
    // The same release as the cluster's is an upgrade too (a patched build of it).
    std::fs::write(dir.path().join("k3s"), stamped("v1.33.4+k3s1")).expect("write");
    chk_in(dir.path(), "  - name: a\n    upgrade: {etcd-2: {binary: ../k3s}}\n    expect:\n      etcd-2: {ready: up}\n").expect("same release");
}

#[test]
fn a_local_build_that_is_missing_says_nothing_or_skips_a_minor_is_refused_at_its_path() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(dir.path().join("checks")).expect("dir");
    let step = |path: &str| {
        format!("  - name: a\n    upgrade:\n      etcd-2: {{binary: {path}}}\n    expect:\n      etcd-2: {{ready: up}}\n")
    };
    let e = chk_in(dir.path(), &step("../none")).expect_err("missing");
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].starts_with("8:24: `etcd-2`'s binary: cannot read "),
        "{e:?}"
    );
    std::fs::write(dir.path().join("plain"), b"\x7fELF plain").expect("write");
    let e = chk_in(dir.path(), &step("../plain")).expect_err("no version");
    assert!(
        e[0].starts_with("8:24: `etcd-2`'s binary: ")
            && e[0].contains("no k3s version in this file"),
        "{e:?}"
    );
    std::fs::write(dir.path().join("k3s"), stamped("v1.35.1+k3s1")).expect("write");
    let e = chk_in(dir.path(), &step("../k3s")).expect_err("skips 1.34");
    assert_eq!(e, ["8:15: `etcd-2` cannot be upgraded to v1.35.1+k3s1: v1.33.4+k3s1 to v1.35.1+k3s1 skips a minor version: upgrade through each minor in turn"]);
    // Only `binary:` is a key of the mapping.
    let e = chk_in(dir.path(), "  - name: a\n    upgrade:\n      etcd-2: {file: ../k3s}\n    expect:\n      etcd-2: {ready: up}\n").expect_err("unknown key");
    assert!(e[0].contains("file"), "{e:?}");
}
