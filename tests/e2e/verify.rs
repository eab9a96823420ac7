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
/// stand-in; both runs leave their folders and nothing in the engine. `--events FILE` holds
/// both runs' events, each run's lines under its own id; the job summary gets the comment.
#[test]
fn verify_etcd_split_on_the_stand_in_validates_the_fix() {
    crate::docker::docker_ok();
    let side = tempfile::tempdir().unwrap();
    let events = side.path().join("events.jsonl");
    let job_summary = side.path().join("summary.md");
    let (out, results) = verify("v1.33.4+k3s1", "v1.33.5+k3s1")
        .env("GITHUB_STEP_SUMMARY", &job_summary)
        .arg("--events")
        .arg(&events)
        .output();
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
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&events)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ids: Vec<String> = runs
        .iter()
        .map(|d| read_result(d)["run_id"].as_str().unwrap().to_string())
        .collect();
    let finished: Vec<&serde_json::Value> =
        lines.iter().filter(|l| l["event"] == "finished").collect();
    assert_eq!(finished.len(), 2);
    for id in &ids {
        let of_run: Vec<&serde_json::Value> = lines
            .iter()
            .filter(|l| l["run_id"] == id.as_str())
            .collect();
        assert_eq!(of_run.first().unwrap()["event"], "started", "{id}");
        assert_eq!(of_run.last().unwrap()["event"], "finished", "{id}");
    }
    assert_eq!(
        lines.len(),
        lines
            .iter()
            .filter(|l| ids.iter().any(|i| l["run_id"] == i.as_str()))
            .count()
    );
    let md = std::fs::read_to_string(&job_summary).unwrap();
    assert!(
        md.contains("### Validated on v1.33.5+k3s1 (repro stand-in, not real k3s)"),
        "{md}"
    );
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

/// #42 attack 2: `verify --out` to a FIFO, a link or a folder is refused (exit 2) before
/// anything runs — no results folder, nothing in the engine; to a character device (made with
/// mknod) both runs are made and the comment is written through it, the device kept.
#[test]
fn verify_out_is_checked_before_anything_runs_and_never_replaced() {
    crate::docker::docker_ok();
    let tmp = tempfile::tempdir().unwrap();
    let targets = crate::out_targets::out_targets(tmp.path());
    for (path, refused) in &targets {
        let Some(word) = refused else { continue };
        let (out, results) = verify("v1.33.4+k3s1", "v1.33.5+k3s1")
            .arg("--out")
            .arg(path)
            .output();
        out.code(2).stderr_has("--out").stderr_has(word);
        assert!(
            !results.path().exists() || dirs(&results.path(), "").is_empty(),
            "a run began"
        );
    }
    let (out, results) = verify("v1.33.4+k3s1", "v1.33.5+k3s1")
        .arg("--out")
        .arg(&targets[0].0)
        .output();
    out.code(0);
    for d in dirs(&results.path(), "") {
        assert_no_leftovers(read_result(&d)["run_id"].as_str().unwrap());
    }
    crate::out_targets::assert_kept(tmp.path(), &targets);
}
