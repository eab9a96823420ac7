//! `repro verify` and the version of record (#32, #30 item 2), on the stand-in: both runs and the
//! validation comment in one command; a run whose nodes print another version than the one of
//! record stops with exit 3 naming both; an image's tag sets the version.

use crate::images::{sim_image, Image};
use crate::runs::{assert_no_leftovers, dirs, read_result, Run};
use crate::util::sim_repo;

/// `repro verify etcd-split --buggy <buggy> --fixed <fixed>` on the stand-in.
fn verify(buggy: &str, fixed: &str) -> Run {
    Run::command(["verify", "etcd-split", "--buggy", buggy, "--fixed", fixed])
        .sim()
        .args(["--progress", "never"])
}

/// The "Done when": exits 0 and writes the comment, whose heading says it is the
/// stand-in; both runs leave their folders and nothing in the engine.
#[test]
fn verify_etcd_split_on_the_stand_in_validates_the_fix() {
    crate::docker::docker_ok();
    let (out, results) = verify("v1.33.4+k3s1", "v1.33.5+k3s1").output();
    out.code(0);
    out.stdout_has("\n### Validated on v1.33.5+k3s1 (repro stand-in, not real k3s)\n");
    out.stdout_has("| 1 | etcd-2 | embedded-registry | up | **down** (the bug, boot 2) |");
    assert!(
        out.stderr.contains(
            "repro verify: buggy run on v1.33.4+k3s1: reproduced (asked for: reproduced)"
        ) && out
            .stderr
            .contains("repro verify: fixed run on v1.33.5+k3s1: fixed (asked for: fixed)"),
        "{out}"
    );
    let runs = dirs(&results.path(), "");
    assert_eq!(runs.len(), 2, "{runs:?}");
    for d in &runs {
        let r = read_result(d);
        assert_no_leftovers(r["run_id"].as_str().unwrap());
        // The comment's re-run lines are the runs' own.
        out.stdout_has(r["rerun"].as_str().unwrap());
    }
}

/// Swapped or equal versions are refused before anything is created (exit 2, no folder).
#[test]
fn verify_refuses_swapped_versions_before_anything_runs() {
    for (buggy, fixed, says) in [
        (
            "v1.33.5+k3s1",
            "v1.33.4+k3s1",
            "error: --buggy v1.33.5+k3s1 is at or past the check's fixed-in",
        ),
        (
            "v1.33.4+k3s1",
            "v1.33.4+k3s1",
            "error: --buggy and --fixed are the same version (v1.33.4+k3s1)",
        ),
    ] {
        let (out, results) = verify(buggy, fixed).output();
        out.code(2);
        out.stderr_has(says);
        results.assert_untouched(&out);
    }
}

/// The v1.33.5 stand-in image, built by a plain --sim run of the version if missing.
fn v1_33_5_image() -> String {
    Run::check("etcd-split")
        .sim()
        .version("v1.33.5+k3s1")
        .finish()
        .out
        .code(0);
    sim_image("v1.33.5+k3s1")
}

/// `repro run etcd-split --image <image>`, past the doctor's trial.
fn image_run(image: &str) -> crate::runs::Finished {
    Run::check("etcd-split")
        .args(["--image", image, "--no-host-check"])
        .finish()
}

/// An image whose nodes run v1.33.5 under the version of record v1.33.4 (the topology's
/// default, the tag saying nothing): exit 3 naming both, no verdict, nothing left.
#[test]
fn nodes_that_print_another_version_stop_the_run_with_exit_3() {
    // A copy of the v1.33.5 stand-in under a tag that names no version.
    let image = Image::tagged(&v1_33_5_image(), format!("{}-retag:custom", sim_repo()));
    let run = image_run(&image.0);
    run.out.code(3);
    assert!(
        run.out
            .stderr
            .contains("says v1.33.5+k3s1, the run is of v1.33.4+k3s1"),
        "{}",
        run.out
    );
    assert!(run.result["verdict"].is_null(), "{}", run.result);
    assert_eq!(run.result["exit_code"], 3);
}

/// An image tagged with a version sets the version of record: the v1.33.5 stand-in under its
/// own tag, without --version, is planned, run and judged as v1.33.5 (expected fixed).
#[test]
fn an_image_tag_sets_the_version_of_record() {
    let run = image_run(&v1_33_5_image());
    run.out.code(0);
    assert_eq!(run.result["k3s"]["version"], "v1.33.5+k3s1");
    assert_eq!(run.result["expect"], "fixed");
    assert_eq!(run.outcome(), "fixed");
}
