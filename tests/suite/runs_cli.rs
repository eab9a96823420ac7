//! `repro runs` over results folders made from the fixtures, with no engine (#32 item 8): the
//! listing as text and JSON, the engine said not asked, unknown ids with the known ones and a
//! `did you mean`, and run-id completion. The kept-cluster half (logs, exec) is in
//! tests/e2e/runs.rs.

use std::path::Path;

use crate::repro::Repro;

/// A results folder: the k3s buggy and fixed runs at its top, the RKE2 run inside a matrix's
/// folder, and a folder whose result.json is broken.
fn results(root: &Path) -> std::path::PathBuf {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let results = root.join("results");
    for (from, to) in [
        (
            "run-etcd-split-buggy",
            "etcd-split-v1.33.4-k3s1-20261130T090000Z-a1b2c3d4",
        ),
        (
            "run-etcd-split-fixed",
            "etcd-split-v1.33.5-k3s1-20261130T090000Z-e5f6a7b8",
        ),
        (
            "run-rke2-etcd-split-buggy",
            "matrix-20261130T090000Z/etcd-split-v1.32.5-rke2r1-20261130T090000Z-b2c3d4e5",
        ),
    ] {
        let dir = results.join(to);
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::copy(
            fixtures.join(from).join("result.json"),
            dir.join("result.json"),
        )
        .expect("copy");
    }
    let broken = results.join("broken-run");
    std::fs::create_dir_all(&broken).expect("mkdir");
    std::fs::write(broken.join("result.json"), "{\"schema_version\": 2,").expect("write");
    results
}

#[test]
fn runs_lists_every_folder_and_says_the_engine_was_not_asked() {
    let tmp = tempfile::tempdir().expect("tmp");
    let results = results(tmp.path());
    let out = Repro::without_docker()
        .current_dir(tmp.path())
        .arg("runs")
        .run();
    out.code(0);
    snap!("runs-without-engine", out);
    // A folder named by the flag is the same listing.
    let flag = Repro::without_docker()
        .args(["runs", "--results"])
        .arg(&results)
        .run();
    flag.code(0);
    assert_eq!(
        flag.stdout.lines().count(),
        out.stdout.lines().count(),
        "{flag}"
    );
}

#[test]
fn runs_as_json_carries_each_run_and_why_the_engine_was_not_asked() {
    let tmp = tempfile::tempdir().expect("tmp");
    results(tmp.path());
    let out = Repro::without_docker()
        .current_dir(tmp.path())
        .args(["runs", "--format", "json"])
        .run();
    out.code(0);
    let v = out.json();
    assert_eq!(v["kind"], "repro-runs");
    assert_eq!(v["engine"]["asked"], false);
    assert!(
        v["engine"]["why"]
            .as_str()
            .is_some_and(|w| w.contains("cannot reach the Docker engine")),
        "{v:#}"
    );
    let runs = v["runs"].as_array().expect("runs");
    let ids: Vec<&str> = runs.iter().filter_map(|r| r["id"].as_str()).collect();
    assert_eq!(ids, ["a1b2c3d4", "e5f6a7b8", "b2c3d4e5"], "{v:#}");
    let rke2 = &runs[2];
    assert_eq!(rke2["distribution"], "rke2");
    assert_eq!(rke2["version"], "v1.32.5+rke2r1");
    assert_eq!(rke2["verdict"], "reproduced");
    assert!(rke2["cluster"].is_null(), "{rke2}");
    assert!(
        rke2["folder"]
            .as_str()
            .is_some_and(|f| f.starts_with("results/matrix-20261130T090000Z/")),
        "{rke2}"
    );
    assert_eq!(v["problems"].as_array().map(Vec::len), Some(1), "{v:#}");
}

#[test]
fn an_empty_results_folder_says_so() {
    let tmp = tempfile::tempdir().expect("tmp");
    Repro::without_docker()
        .current_dir(tmp.path())
        .arg("runs")
        .run()
        .code(0)
        .stdout_has("no runs in results");
}

/// An id no run has is exit 2 with the ids known and the nearest one, engine or not; a
/// known id then needs the engine (exit 3 without one).
#[test]
fn unknown_run_ids_list_the_known_ones() {
    let tmp = tempfile::tempdir().expect("tmp");
    results(tmp.path());
    let out = Repro::without_docker()
        .current_dir(tmp.path())
        .args(["runs", "logs", "a1b2c3d5", "etcd-1"])
        .run();
    out.code(2)
        .stderr_has("error: no run `a1b2c3d5` in results or on the engine")
        .stderr_has("did you mean `a1b2c3d4`?")
        .stderr_has("known runs: a1b2c3d4, e5f6a7b8, b2c3d4e5");
    Repro::without_docker()
        .current_dir(tmp.path())
        .args(["runs", "exec", "zzzz", "etcd-1", "--", "k3s", "-v"])
        .run()
        .code(2)
        .stderr_has("no run `zzzz`");
    // A unique beginning is the run: known, so now the missing engine is the error.
    Repro::without_docker()
        .current_dir(tmp.path())
        .args(["runs", "logs", "e5f6"])
        .run()
        .code(3)
        .stderr_has("cannot reach the Docker engine");
}

#[test]
fn runs_help_has_examples_and_exec_its_exit_status() {
    let out = Repro::new().args(["runs", "exec", "--help"]).run();
    out.code(0)
        .stdout_has("repro runs exec 3e593824 etcd-1 -- k3s -v")
        .stdout_has("the command's own in the node");
    let out = Repro::new().args(["runs", "--help"]).run();
    out.code(0).stdout_has("logs").stdout_has("exec");
    // --results belongs to `runs` (and its subcommands), not to repro's globals.
    assert!(
        !out.stdout.contains("Global options:\n      --results"),
        "{out}"
    );
}

/// `repro runs logs <TAB>` and `clean --run <TAB>` offer the run ids, newest first.
#[test]
fn run_ids_are_completed() {
    let tmp = tempfile::tempdir().expect("tmp");
    results(tmp.path());
    let out = crate::util::repro()
        .current_dir(tmp.path())
        .env("COMPLETE", "fish")
        .args(["--", "repro", "runs", "logs", "a1"])
        .output()
        .expect("run repro");
    assert!(out.status.success(), "{}", crate::util::text(&out));
    let got: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split('\t').next().unwrap_or("").to_string())
        .collect();
    assert_eq!(got, ["a1b2c3d4"]);
    let out = crate::util::repro()
        .current_dir(tmp.path())
        .env("COMPLETE", "fish")
        .args(["--", "repro", "clean", "--run", ""])
        .output()
        .expect("run repro");
    let text = String::from_utf8_lossy(&out.stdout);
    for id in ["a1b2c3d4", "e5f6a7b8", "b2c3d4e5"] {
        assert!(text.contains(id), "{id} not offered:\n{text}");
    }
}
