#![allow(clippy::unwrap_used)] // tests panic on purpose when something is wrong

//! `repro merge --plan`: the planned matrix against what the runs wrote. A planned cell that
//! wrote nothing is a NOT RUN row; a run that stopped on infrastructure shows why. No Docker.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::fixtures::write_result;
use crate::util::{repro, text};

use serde_json::{json, Value};

fn merge(args: &[&Path]) -> Output {
    let mut c: Command = repro();
    c.env("DOCKER_HOST", "unix:///nonexistent/docker.sock");
    c.arg("merge");
    for a in args {
        c.arg(a);
    }
    c.output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A run folder's result.json: a finished run with a verdict, or one stopped by infrastructure.
fn run_folder(base: &Path, version: &str, expected: &str, verdict: Option<&str>) -> PathBuf {
    let dir = base.join(format!("etcd-split-{version}"));
    write_result(&dir, &format!("id-{version}"), version, expected, verdict);
    dir
}

fn fanout(path: &Path) {
    let plan = json!({"include": [
        {"check": "etcd-split", "k3s_version": "v1.33.4+k3s1", "expected": "reproduced"},
        {"check": "etcd-split", "k3s_version": "v1.33.5+k3s1", "expected": "fixed"},
        {"check": "etcd-split", "k3s_version": "v1.34.1+k3s1", "expected": "fixed"}
    ]});
    std::fs::write(path, plan.to_string()).unwrap();
}

#[test]
fn planned_cells_that_wrote_nothing_are_not_run_and_infra_errors_say_why() {
    let tmp = tempfile::tempdir().unwrap();
    let artifacts = tmp.path().join("artifacts");
    run_folder(
        &artifacts.join("results-etcd-split-v1.33.4+k3s1"),
        "v1.33.4+k3s1",
        "reproduced",
        Some("reproduced"),
    );
    run_folder(
        &artifacts.join("results-etcd-split-v1.33.5+k3s1"),
        "v1.33.5+k3s1",
        "fixed",
        None,
    );
    // v1.34.1 wrote nothing at all.
    let plan = tmp.path().join("matrix.json");
    fanout(&plan);
    let out_dir = tmp.path().join("merged");
    let out = merge(&[
        &artifacts,
        Path::new("--plan"),
        &plan,
        Path::new("--out"),
        &out_dir,
    ]);
    // Nothing differs, but cells broke or never ran: infrastructure.
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let o = stdout(&out);
    assert!(
        o.contains("merged 2 runs from 1 input; 1 of the cells planned in"),
        "{o}"
    );
    let row = |v: &str| {
        o.lines()
            .find(|l| l.starts_with("etcd-split") && l.contains(v))
            .unwrap_or_else(|| panic!("no row for {v}:\n{o}"))
            .to_string()
    };
    assert!(row("v1.33.4+k3s1").ends_with("ok"), "{o}");
    assert!(row("v1.33.5+k3s1").ends_with("BROKEN"), "{o}");
    assert!(row("v1.34.1+k3s1").ends_with("NOT RUN"), "{o}");
    assert!(
        o.contains("Docker is not reachable at unix:///var/run/docker.sock: connection refused"),
        "the infrastructure error is shown: {o}"
    );
    assert!(
        o.contains("NOT RUN: etcd-split on v1.34.1+k3s1") && o.contains("wrote nothing"),
        "{o}"
    );
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(s["totals"]["cells"], 3);
    assert_eq!(s["totals"]["broken"], 1);
    assert_eq!(s["totals"]["not_run"], 1);
    let junit = std::fs::read_to_string(out_dir.join("junit.xml")).unwrap();
    assert!(junit.contains(r#"tests="3""#), "{junit}");

    // A summary.json is a plan too: the merged one names all three cells.
    let out = merge(&[
        &artifacts,
        Path::new("--plan"),
        &out_dir.join("summary.json"),
        Path::new("--out"),
        &tmp.path().join("merged2"),
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(stdout(&out).contains("NOT RUN"), "{}", text(&out));
}

/// Every job died before uploading: the (empty) download folder and the plan still give a table.
#[test]
fn a_plan_with_no_results_at_all_is_all_not_run() {
    let tmp = tempfile::tempdir().unwrap();
    let artifacts = tmp.path().join("artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let plan = tmp.path().join("matrix.json");
    fanout(&plan);
    let out = merge(&[
        &artifacts,
        Path::new("--plan"),
        &plan,
        Path::new("--out"),
        &tmp.path().join("merged"),
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert_eq!(
        stdout(&out).matches("NOT RUN").count(),
        3 * 2,
        "row and reason each:\n{}",
        text(&out)
    );
    // Without a plan, an empty folder is still a mistake.
    let out = merge(&[&artifacts, Path::new("--out"), &tmp.path().join("m2")]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

#[test]
fn a_bad_plan_exits_2_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = tmp.path().join("plan.json");
    std::fs::write(&plan, "{\"cells\": []}").unwrap();
    let out = merge(&[
        tmp.path(),
        Path::new("--plan"),
        &plan,
        Path::new("--out"),
        &tmp.path().join("merged"),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains(&format!("{}: error: not a plan", plan.display())),
        "{e}"
    );
}
