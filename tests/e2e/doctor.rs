//! `repro doctor` on this engine, and the part of it a run makes before its first node. This
//! project's engines refuse privileged containers (Docker 20.10 in a sandbox: "unable to apply
//! caps"), so real k3s cannot run here and the stand-in can: the tests assert exactly that, and
//! would fail on an engine that allows privileged containers (there, `doctor` exits 0).

use std::process::Command;

use serde_json::Value;

use crate::docker::docker_ok;
use crate::util::{repro, text};
use crate::{assert_no_leftovers, only_run_dir, read_result};

/// What the doctor's throwaway containers left (their run ids start `doctor-`).
fn doctor_leftovers() -> Vec<String> {
    let mut left = Vec::new();
    for kind in [&["ps", "-a"][..], &["network", "ls"], &["volume", "ls"]] {
        let out = Command::new("docker")
            .args(kind)
            .args(["--filter", "label=io.repro.node=trial"])
            .args(["--format", "{{.Labels}}"])
            .output()
            .unwrap();
        assert!(out.status.success(), "docker {kind:?}");
        left.extend(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter(|l| l.contains("io.repro.run=doctor-"))
                .map(|l| format!("{} {l}", kind[0])),
        );
    }
    left
}

#[test]
fn doctor_says_real_k3s_cannot_run_here_and_the_stand_in_can() {
    docker_ok();
    let out = repro().args(["doctor"]).output().unwrap();
    let s = text(&out);
    assert_eq!(out.status.code(), Some(3), "{s}");
    assert!(
        s.contains("FAIL  privileged") && s.contains("refused a privileged container"),
        "{s}"
    );
    assert!(s.contains("but started it unprivileged"), "{s}");
    assert!(
        s.contains("inotify") && s.contains("max_user_instances"),
        "{s}"
    );
    assert!(s.contains("memory") && s.contains("MiB"), "{s}");
    assert!(s.contains("real k3s cannot run here"), "{s}");
    assert!(s.contains("--sim"), "{s}");
    assert_eq!(doctor_leftovers(), Vec::<String>::new());

    let out = repro().args(["doctor", "--sim"]).output().unwrap();
    let s = text(&out);
    assert_eq!(out.status.code(), Some(0), "{s}");
    assert!(!s.contains("FAIL"), "{s}");
    assert!(s.contains("the k3s stand-in can run here"), "{s}");
}

#[test]
fn doctor_json_is_one_document_with_every_check() {
    docker_ok();
    let out = repro()
        .args(["doctor", "--format", "json", "--topology", "etcd-split"])
        .args(["--version", "v1.33.5+k3s1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], false);
    assert_eq!(v["topology"], "etcd-split");
    assert_eq!(v["version"], "v1.33.5+k3s1");
    assert_eq!(v["nodes"], 4);
    let checks = v["checks"].as_array().unwrap();
    let status = |name: &str| {
        checks
            .iter()
            .find(|c| c["check"] == name)
            .unwrap_or_else(|| panic!("no {name} in {v}"))["status"]
            .clone()
    };
    assert_eq!(status("privileged"), "fail");
    assert_eq!(status("engine"), "ok");
    for c in ["docker-host", "cgroup", "inotify", "memory", "image"] {
        assert!(status(c).is_string(), "{c}");
    }
    assert!(checks
        .iter()
        .all(|c| c["status"] == "ok" || c["fix"].is_string()));

    let out = repro()
        .args(["doctor", "--topology", "nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("etcd-split"), "{}", text(&out));
    assert_eq!(doctor_leftovers(), Vec::<String>::new());
}

/// A run whose nodes need privileges makes the doctor's trial first: refused here, it stops
/// with exit 3 and the doctor's line before any node container exists.
#[test]
fn a_privileged_run_stops_at_the_doctors_line_before_any_node() {
    docker_ok();
    let tmp = tempfile::tempdir().unwrap();
    let out = repro()
        .args(["run", "etcd-split", "--sim", "--privileged", "always"])
        .args(["--progress", "never", "--results"])
        .arg(tmp.path())
        .output()
        .unwrap();
    let s = text(&out);
    assert_eq!(out.status.code(), Some(3), "{s}");
    assert!(
        s.contains("this host cannot run the nodes (repro doctor): FAIL privileged"),
        "{s}"
    );
    assert!(s.contains("--sim"), "{s}");
    let dir = only_run_dir(tmp.path());
    let r = read_result(&dir);
    let run_id = r["run_id"].as_str().unwrap();
    assert!(
        r["error"]
            .as_str()
            .unwrap_or_default()
            .contains("privileged"),
        "{}",
        r["error"]
    );
    // No node was ever created: no boot log, no container.
    assert!(
        !dir.join("nodes").join("etcd-1").join("boot-1.log").exists(),
        "{s}"
    );
    assert_no_leftovers(run_id);
}
