//! `--format json` on `run` and `matrix` against real containers of the stand-in: stdout is one
//! JSON document a script can read (progress and tables stay on stderr), and it agrees with the
//! files the run wrote.

use std::path::{Path, PathBuf};

use crate::assert_no_leftovers;
use crate::docker::docker_ok;
use crate::util::{repro, text};

use serde_json::Value;

fn dirs(base: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(base)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect()
}

#[test]
fn run_summary_as_json() {
    docker_ok();
    let tmp = tempfile::tempdir().unwrap();
    let out = repro()
        .args([
            "run",
            "etcd-split",
            "--sim",
            "--k3s-version",
            "v1.33.4+k3s1",
            "--expect",
            "reproduced",
            "--progress",
            "never",
            "--format",
            "json",
            "--results",
        ])
        .arg(tmp.path())
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}):\n{}", text(&out)));
    assert_no_leftovers(v["run_id"].as_str().unwrap());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(v["kind"], "repro-run-summary");
    assert_eq!(v["verdict"], "reproduced");
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["stand_in"], true);
    let run_dir = PathBuf::from(v["results"].as_str().unwrap());
    assert_eq!(dirs(tmp.path()), std::slice::from_ref(&run_dir));
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("result.json")).unwrap())
            .unwrap();
    assert_eq!(v["run_id"], r["run_id"]);
    let bug = v["observations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["judged"] == "bug" && o["step"].as_u64() != Some(3))
        .count();
    // Steps 1 and 2: etcd-2 and etcd-3 without the registry. Step 3 is `bug: any` (a buggy
    // joiner reads cp-1 or etcd-1 there), so its observations may go either way.
    assert_eq!(bug, 4, "{v:#}");
}

#[test]
fn matrix_summary_as_json() {
    docker_ok();
    let tmp = tempfile::tempdir().unwrap();
    let out = repro()
        .args([
            "matrix",
            "--sim",
            "--checks",
            "etcd-split",
            "--k3s-versions",
            "v1.33.5+k3s1",
            "--format",
            "json",
            "--results",
        ])
        .arg(tmp.path())
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}):\n{}", text(&out)));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(v["kind"], "repro-matrix-summary");
    assert_eq!(v["totals"]["ok"], 1);
    assert_eq!(v["cells"][0]["verdict"], "fixed");
    assert_no_leftovers(v["cells"][0]["run_id"].as_str().unwrap());
    // The table still reaches a person, on stderr.
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("K3S VERSION"),
        "{}",
        text(&out)
    );
    let matrix_dir = dirs(tmp.path()).pop().unwrap();
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(matrix_dir.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(file["cells"], v["cells"]);
}
