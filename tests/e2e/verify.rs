//! `repro verify` and the version of record (#32, #30 item 2), on the stand-in: both runs and the
//! validation comment in one command; a run whose nodes print another version than the one of
//! record stops with exit 3 naming both; an image's tag sets the version.

use std::process::Command;

use crate::docker::docker_ok;
use crate::util::{repro, sim_repo, text};
use crate::{assert_no_leftovers, only_run_dir, read_result};

/// The "Done when": exits 0 and writes the comment, whose heading says it is the
/// stand-in; both runs leave their folders and nothing in the engine. `--events FILE` holds
/// both runs' events, each run's lines under its own id; the job summary gets the comment.
#[test]
fn verify_etcd_split_on_the_stand_in_validates_the_fix() {
    docker_ok();
    let tmp = tempfile::tempdir().unwrap();
    let side = tempfile::tempdir().unwrap();
    let events = side.path().join("events.jsonl");
    let job_summary = side.path().join("summary.md");
    let out = repro()
        .env("GITHUB_STEP_SUMMARY", &job_summary)
        .args([
            "verify",
            "etcd-split",
            "--buggy",
            "v1.33.4+k3s1",
            "--fixed",
            "v1.33.5+k3s1",
            "--sim",
            "--progress",
            "never",
            "--results",
        ])
        .arg(tmp.path())
        .arg("--events")
        .arg(&events)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("\n### Validated on v1.33.5+k3s1 (repro stand-in, not real k3s)\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("| 1 | etcd-2 | embedded-registry | up | **down** (the bug, boot 2) |"),
        "{stdout}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "repro verify: buggy run on v1.33.4+k3s1: reproduced (asked for: reproduced)"
        ) && stderr.contains("repro verify: fixed run on v1.33.5+k3s1: fixed (asked for: fixed)"),
        "{stderr}"
    );
    let mut dirs: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    assert_eq!(dirs.len(), 2, "{dirs:?}");
    for d in &dirs {
        let r = read_result(d);
        assert_no_leftovers(r["run_id"].as_str().unwrap());
        // The comment's re-run lines are the runs' own.
        assert!(stdout.contains(r["rerun"].as_str().unwrap()), "{stdout}");
    }
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&events)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ids: Vec<String> = dirs
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
        let tmp = tempfile::tempdir().unwrap();
        let results = tmp.path().join("results");
        let out = repro()
            .args(["verify", "etcd-split", "--buggy", buggy, "--fixed", fixed])
            .args(["--sim", "--progress", "never", "--results"])
            .arg(&results)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(says),
            "{}",
            text(&out)
        );
        assert!(!results.exists(), "a folder was created before exit 2");
    }
}

/// A copy of the v1.33.5 stand-in under a tag that names no version, removed when dropped.
struct Retagged(String);

impl Retagged {
    fn new(suffix: &str) -> Retagged {
        // The stand-in image must exist: a run builds it if missing.
        let (out, ..) = crate::sim_run(&["etcd-split", "--version", "v1.33.5+k3s1"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let name = format!("{}-retag:{suffix}", sim_repo());
        let o = Command::new("docker")
            .args(["tag", &format!("{}:v1.33.5-k3s1", sim_repo()), &name])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
        Retagged(name)
    }
}

impl Drop for Retagged {
    fn drop(&mut self) {
        let _ = Command::new("docker").args(["rmi", &self.0]).output();
    }
}

/// An image whose nodes run v1.33.5 under the version of record v1.33.4 (the topology's
/// default, the tag saying nothing): exit 3 naming both, no verdict, nothing left.
#[test]
fn nodes_that_print_another_version_stop_the_run_with_exit_3() {
    docker_ok();
    let image = Retagged::new("custom");
    let tmp = tempfile::tempdir().unwrap();
    let out = repro()
        .args(["run", "etcd-split", "--image", &image.0, "--no-host-check"])
        .args(["--progress", "never", "--results"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("says v1.33.5+k3s1, the run is of v1.33.4+k3s1"),
        "{stderr}"
    );
    let dir = only_run_dir(tmp.path());
    let r = read_result(&dir);
    assert!(r["verdict"].is_null(), "{r}");
    assert_eq!(r["exit_code"], 3);
    assert_no_leftovers(r["run_id"].as_str().unwrap());
}

/// An image tagged with a version sets the version of record: the v1.33.5 stand-in under its
/// own tag, without --version, is planned, run and judged as v1.33.5 (expected fixed).
#[test]
fn an_image_tag_sets_the_version_of_record() {
    docker_ok();
    // Built (if missing) by a plain --sim run of the version first.
    let (out, ..) = crate::sim_run(&["etcd-split", "--version", "v1.33.5+k3s1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let tmp = tempfile::tempdir().unwrap();
    let image = format!("{}:v1.33.5-k3s1", sim_repo());
    let out = repro()
        .args(["run", "etcd-split", "--image", &image, "--no-host-check"])
        .args(["--progress", "never", "--results"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = read_result(&only_run_dir(tmp.path()));
    assert_eq!(r["k3s"]["version"], "v1.33.5+k3s1");
    assert_eq!(r["expect"], "fixed");
    assert_eq!(r["verdict"]["outcome"], "fixed");
    assert_no_leftovers(r["run_id"].as_str().unwrap());
}
