//! The split-role availability checks of #41 on the stand-in: each shipped check `reproduced` on
//! a release the change table places before its fix and `fixed` on one after it (the verdict
//! the plan expects from `fixed-in`, asked with `--expect auto`), with the evidence that tells
//! the bug from any other death.

use crate::runs::{observation, Run};

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
