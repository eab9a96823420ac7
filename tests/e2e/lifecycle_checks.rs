//! The split-role availability checks of #41 on the stand-in: each shipped check `reproduced` on
//! a release the change table places before its fix and `fixed` on one after it (the verdict
//! the plan expects from `fixed-in`, asked with `--expect auto`), with the evidence that tells
//! the bug from any other death.

use crate::runs::{observation, only_dir, read_json, Run};

/// `repro run <check> --sim --version <version>`, expecting what `fixed-in` says.
fn sim(check: &str, version: &str) -> Run {
    Run::check(check).sim().version(version)
}

#[test]
fn split_restart_all_panics_a_control_plane_node_on_the_january_2026_candidate() {
    // k3s #13533 was reported on v1.33.7-rc1+k3s3.
    let run = sim("split-restart-all", "v1.33.7-rc1+k3s3")
        .expect("auto")
        .finish();
    run.out.code(0);
    assert_eq!(run.outcome(), "reproduced");
    for cp in ["cp-1", "cp-2"] {
        let o = observation(&run.result, 1, cp, "panic");
        assert_eq!(o["observed"], "up", "{o}");
        let banner = o["evidence"][0]["text"].as_str().unwrap_or_default();
        assert_eq!(banner, "panic: failed to open database", "{o}");
        // A panic is its own death: no logrus fatal came before the banner.
        let fatal = observation(&run.result, 1, cp, "ready");
        assert_eq!(fatal["observed"], "dead", "{fatal}");
    }
    // The etcd members came back: only the control-plane-only nodes are hit.
    for etcd in ["etcd-1", "etcd-2", "etcd-3"] {
        assert_eq!(observation(&run.result, 1, etcd, "ready")["observed"], "up");
    }
}

#[test]
fn split_restart_all_is_fixed_on_the_january_2026_release() {
    let run = sim("split-restart-all", "v1.33.7+k3s3")
        .expect("auto")
        .finish();
    run.out.code(0);
    assert_eq!(run.outcome(), "fixed");
    for cp in ["cp-1", "cp-2"] {
        assert_eq!(observation(&run.result, 1, cp, "ready")["observed"], "up");
        assert_eq!(observation(&run.result, 1, cp, "panic")["observed"], "down");
    }
}

#[test]
fn split_join_server_down_kills_the_control_plane_nodes_before_the_fix() {
    // The last 1.32 release before k3s #11333's backport (#11913).
    let run = sim("split-join-server-down", "v1.32.2+k3s1")
        .expect("auto")
        .finish();
    run.out.code(0);
    assert_eq!(run.outcome(), "reproduced");
    for cp in ["cp-1", "cp-2"] {
        let o = observation(&run.result, 1, cp, "fatal");
        let line = o["evidence"][0]["text"].as_str().unwrap_or_default();
        // The issue's fatal: the CA fetched from the stopped join server.
        assert!(
            line.contains(
                r#"msg="starting kubernetes: preparing server: failed to get CA certs: Get \"https://etcd-1:6443/cacerts\""#
            ),
            "{o}"
        );
    }
    // The stopped node is down because it was stopped, the etcd members came back.
    assert_eq!(
        observation(&run.result, 1, "etcd-1", "ready")["observed"],
        "down"
    );
    for etcd in ["etcd-2", "etcd-3"] {
        assert_eq!(observation(&run.result, 1, etcd, "ready")["observed"], "up");
    }
}

#[test]
fn split_join_server_down_is_fixed_through_the_saved_etcd_members() {
    let run = sim("split-join-server-down", "v1.32.3+k3s1")
        .expect("auto")
        .finish();
    run.out.code(0);
    assert_eq!(run.outcome(), "fixed");
    // cp-1 came back without its join server: it skipped the config check and reached the
    // datastore through another member.
    let log = run.boot_log("cp-1", 2);
    assert!(
        log.contains("Skipping cluster configuration validation"),
        "{log}"
    );
    assert!(log.contains("etcd data store connection OK"), "{log}");
    assert!(!log.contains("/cacerts"), "the CA came from disk: {log}");
}

#[test]
fn bisect_over_split_join_server_down_names_the_first_fixed_1_32_release() {
    crate::docker::docker_ok();
    let (out, results) = Run::command(["bisect", "split-join-server-down", "--sim"])
        .args(["--good", "v1.32.5+k3s1", "--bad", "v1.32.0+k3s1"])
        .output();
    let dir = only_dir(&results.path(), "bisect-split-join-server-down-");
    out.code(0);
    out.stdout_has("answer: v1.32.3+k3s1 is the first release showing `fixed`");
    let record = read_json(&dir.join("bisect.json"));
    assert_eq!(record["answer"], "v1.32.3+k3s1");
    assert_eq!(record["bad_verdict"], "reproduced");
    // Six releases (v1.32.0 … v1.32.5): at most ⌈log2 6⌉ + 1 = 4 runs.
    assert!(record["runs"].as_u64().unwrap() <= 4, "{record}");
}

#[test]
fn split_upgrade_tells_the_release_under_test_and_ends_on_every_etcd_nodes_own_registry() {
    for (version, outcome) in [("v1.33.4+k3s1", "reproduced"), ("v1.33.5+k3s1", "fixed")] {
        let run = sim("split-upgrade", version).expect("auto").finish();
        run.out.code(0);
        assert_eq!(run.outcome(), outcome, "{version}");
        // After Rancher's order (etcd, control plane, agent) every etcd node runs the fixed
        // release and its own registry, whatever it started on.
        for etcd in ["etcd-1", "etcd-2", "etcd-3"] {
            let o = observation(&run.result, 3, etcd, "version");
            assert_eq!(o["observed"], "v1.33.5+k3s1", "{version}: {o}");
            let o = observation(&run.result, 5, etcd, "embedded-registry");
            assert_eq!(o["observed"], "up", "{version}: {o}");
        }
    }
}

#[test]
fn split_cp_stop_leaves_every_other_server_ready() {
    // k3s #9910 never affected k3s (its issue says so): a guard, `fixed` on every release.
    let run = sim("split-cp-stop", "v1.33.5+k3s1").expect("auto").finish();
    run.out.code(0);
    assert_eq!(run.outcome(), "fixed");
    for node in ["etcd-1", "etcd-2", "etcd-3", "cp-1"] {
        assert_eq!(
            observation(&run.result, 1, node, "node-ready")["observed"],
            "up"
        );
    }
}

/// The same check on RKE2 stand-in nodes (systemd units; rke2 vendors k3s): split-roles is
/// re-read on the version's distribution, as `repro matrix` and the nightly run it, and the
/// RKE2 change table (releases/rke2-changes.yaml: control-plane-only-known-servers, the k3s
/// bump of 2025-03-12) places v1.32.2+rke2r1 before the fix and v1.32.3+rke2r1 after it.
#[test]
fn split_join_server_down_on_rke2_reproduces_then_fixed() {
    for (version, outcome) in [
        ("v1.32.2+rke2r1", "reproduced"),
        ("v1.32.3+rke2r1", "fixed"),
    ] {
        let run = sim("split-join-server-down", version)
            .expect("auto")
            .finish();
        run.out.code(0);
        assert_eq!(run.outcome(), outcome, "{version}: {}", run.out);
        assert_eq!(run.result["distribution"], "rke2");
        assert_eq!(
            observation(&run.result, 1, "etcd-1", "ready")["observed"],
            "down"
        );
        for cp in ["cp-1", "cp-2"] {
            let o = observation(&run.result, 1, cp, "fatal");
            let want = if outcome == "reproduced" {
                "up"
            } else {
                "down"
            };
            assert_eq!(o["observed"], want, "{version}: {o}");
            if outcome == "reproduced" {
                let line = o["evidence"][0]["text"].as_str().unwrap_or_default();
                // rke2's supervisor port: the CA fetched from the stopped join server.
                assert!(line.contains("failed to get CA certs"), "{o}");
                assert!(line.contains("https://etcd-1:9345/cacerts"), "{o}");
            }
        }
        // The stopped etcd-1 runs nothing; every other node ran the release under test.
        let versions = &run.result["steps"][0]["versions"];
        assert!(versions.get("etcd-1").is_none(), "{versions}");
        assert_eq!(versions["etcd-2"], version);
    }
}

/// k3s #13533 on RKE2 nodes (rke2 vendors k3s): rancher/rke2's January 2026 candidates before
/// rc6 pin the k3s commit with the MVCC-store reconcile and without its fix
/// (releases/rke2-changes.yaml: etcd-mvcc-store-reconcile,
/// control-plane-only-restart-reconcile-fix). Every rke2 unit restarted at once (each
/// `systemctl stop`ped before any starts) panics the control-plane-only nodes on the candidate;
/// on the release they wait out the members' election, fall back to their join server and come
/// up.
#[test]
fn split_restart_all_on_rke2_panics_the_control_plane_nodes_on_the_candidate_not_the_release() {
    let run = sim("split-restart-all", "v1.32.11-rc1+rke2r3")
        .expect("auto")
        .finish();
    run.out.code(0);
    assert_eq!(run.outcome(), "reproduced", "{}", run.out);
    assert_eq!(run.result["distribution"], "rke2");
    for cp in ["cp-1", "cp-2"] {
        let o = observation(&run.result, 1, cp, "panic");
        assert_eq!(o["observed"], "up", "{o}");
    }
    for etcd in ["etcd-1", "etcd-2", "etcd-3"] {
        let o = observation(&run.result, 1, etcd, "ready");
        assert_eq!(o["observed"], "up", "{o}");
    }
    let run = sim("split-restart-all", "v1.32.11+rke2r3")
        .expect("auto")
        .finish();
    run.out.code(0);
    assert_eq!(run.outcome(), "fixed", "{}", run.out);
    for cp in ["cp-1", "cp-2"] {
        let o = observation(&run.result, 1, cp, "ready");
        assert_eq!(o["observed"], "up", "{o}");
    }
}

/// k3s #9910 was seen on RKE2 (rancher/rke2#5614); every RKE2 line the tables cover is past its
/// fix, so the check guards it: stopping cp-2 leaves every other server Ready in the API that
/// rke2's kubectl reads on a running server.
#[test]
fn split_cp_stop_on_rke2_leaves_every_other_server_ready() {
    let run = sim("split-cp-stop", "v1.32.9+rke2r1")
        .expect("auto")
        .finish();
    run.out.code(0);
    assert_eq!(run.outcome(), "fixed", "{}", run.out);
    assert_eq!(run.result["distribution"], "rke2");
    assert_eq!(
        observation(&run.result, 1, "cp-2", "ready")["observed"],
        "down"
    );
    for node in ["etcd-1", "etcd-2", "etcd-3", "cp-1"] {
        let o = observation(&run.result, 1, node, "node-ready");
        assert_eq!(o["observed"], "up", "{o}");
    }
}

/// split-upgrade-rke2: the verdict is the release under test's (its first step), and after
/// Rancher's order every etcd node runs v1.33.5+rke2r1 and its own registry.
#[test]
fn split_upgrade_on_rke2_tells_the_release_under_test_and_ends_on_every_etcd_nodes_own_registry() {
    for (version, outcome) in [
        ("v1.32.8+rke2r1", "reproduced"),
        ("v1.32.9+rke2r1", "fixed"),
    ] {
        let run = sim("split-upgrade-rke2", version).expect("auto").finish();
        run.out.code(0);
        assert_eq!(run.outcome(), outcome, "{version}: {}", run.out);
        for etcd in ["etcd-1", "etcd-2", "etcd-3"] {
            let o = observation(&run.result, 3, etcd, "version");
            assert_eq!(o["observed"], "v1.33.5+rke2r1", "{version}: {o}");
            let o = observation(&run.result, 5, etcd, "embedded-registry");
            assert_eq!(o["observed"], "up", "{version}: {o}");
        }
        assert_eq!(
            run.result["steps"][4]["versions"]["agent-1"],
            "v1.33.5+rke2r1"
        );
    }
}
