#![allow(clippy::unwrap_used)] // tests panic on purpose when something is wrong
//! `repro explore … --plan` (#39): the campaign's cost with no engine — its sequences, runs with
//! minimisation and confirmation, and wall time at real pace with `--jobs`, with and without
//! restore, and on `--runners` — in text and JSON; nothing is created.

use crate::repro::Repro;

fn plan(args: &[&str]) -> crate::repro::Output {
    let results = tempfile::tempdir().unwrap();
    let out = Repro::without_docker()
        .args([
            "explore",
            "--topology",
            "etcd-split",
            "--keys",
            "embedded-registry",
        ])
        .args(["--version", "v1.33.4+k3s1", "--sim", "--plan"])
        .arg("--results")
        .arg(results.path().join("r"))
        .args(args)
        .run();
    assert!(
        !results.path().join("r").exists(),
        "--plan created a results folder:\n{out}"
    );
    out
}

#[test]
fn plan_prints_runs_and_wall_time_on_this_host_and_runners_without_an_engine() {
    let out = plan(&["--jobs", "2", "--runners", "3"]);
    out.code(0);
    for want in [
        "sequences to run: 12\n",
        "runs expected: 17 (12 sequences + 1 defects assumed × (2 distinguishing + 2 ddmin + 1 confirmation runs)",
        "this host    --jobs 1 ",
        "this host    --jobs 2 ",
        "3 runners    --jobs 2 ",
        "with restore",
        "measured on the stand-in",
        "nothing was run (no engine needed)",
    ] {
        assert!(out.stdout.contains(want), "lacks {want:?}:\n{out}");
    }
}

#[test]
fn plan_in_json_orders_serial_jobs_restore_and_runners() {
    let out = plan(&["--jobs", "3", "--runners", "4", "--format", "json"]);
    out.code(0);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let e = &v["estimate"];
    assert_eq!(e["sequences"], 12, "{v:#}");
    let runs = e["runs"].as_u64().unwrap();
    let per_defect = e["distinguish_runs_per_defect"].as_u64().unwrap()
        + e["ddmin_runs_per_defect"].as_u64().unwrap()
        + 1;
    assert_eq!(runs, 12 + per_defect, "{v:#}");
    let host = e["host"].as_array().unwrap();
    let secs = |w: &serde_json::Value| w["seconds"].as_f64().unwrap();
    let (serial, jobs) = (&host[0], &host[1]);
    assert_eq!(
        (serial["jobs"].as_u64(), jobs["jobs"].as_u64()),
        (Some(1), Some(3))
    );
    // At real pace a run is a minute or more (the first start alone is 20.9 s).
    assert!(e["seconds_per_run"].as_f64().unwrap() > 30.0, "{v:#}");
    assert!(secs(jobs) < secs(serial), "{v:#}");
    // Restore: each run ×restore_speedup faster, after the baseline its slots make first.
    let speedup = e["restore_speedup"].as_f64().unwrap();
    let restored = jobs["seconds_with_restore"].as_f64().unwrap();
    assert!(restored > secs(jobs) / speedup, "{v:#}");
    assert!(
        restored < secs(jobs) / speedup + 60.0,
        "one baseline: {v:#}"
    );
    assert!(secs(&e["runners"]) <= secs(jobs), "{v:#}");
    assert_eq!(v["first_start_seconds"], 20.9);
}

#[test]
fn runners_without_plan_is_refused() {
    let out = Repro::without_docker()
        .args([
            "explore",
            "--topology",
            "etcd-split",
            "--sim",
            "--runners",
            "2",
        ])
        .run();
    out.code(2);
    assert!(out.stderr.contains("--plan"), "{out}");
}

/// `--jobs auto` gives a one-sequence campaign the slots its minimisation can fill (a defect's
/// distinguishing runs, ddmin's candidates at once), not one slot; without minimisation one.
#[test]
fn auto_gives_one_sequence_the_slots_its_minimisation_fills() {
    let jobs = |extra: &[&str]| {
        let mut args = vec![
            "--sim-pace",
            "1",
            "--jobs",
            "auto",
            "--sequences",
            "o1-embedded-registry",
            "--format",
            "json",
        ];
        args.extend_from_slice(extra);
        let out = plan(&args);
        out.code(0);
        let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        let n = v["estimate"]["host"].as_array().unwrap().last().unwrap()["jobs"]
            .as_u64()
            .unwrap();
        (n, v)
    };
    let (n, v) = jobs(&[]);
    assert!(n > 1, "one sequence, minimised: more than one slot: {v:#}");
    let why = v["jobs_why"].as_str().unwrap();
    assert!(why.contains(&format!("fills at most {n}")), "{why}");
    let (n, v) = jobs(&["--no-minimise"]);
    assert_eq!(n, 1, "one sequence, not minimised: one slot: {v:#}");
}
