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

/// Also the CI files of a real run (#32 item 5): `--events FILE` and the folder's events.jsonl
/// are the run as it went — every line valid by schema/events.schema.json, each observation of
/// result.json once, the steps in order, the verdict and the exit last — and the job summary
/// (`$GITHUB_STEP_SUMMARY`) has the run's table.
#[test]
fn run_summary_as_json() {
    docker_ok();
    let tmp = tempfile::tempdir().unwrap();
    let side = tempfile::tempdir().unwrap();
    let live = side.path().join("live.jsonl");
    let job_summary = side.path().join("summary.md");
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
        .arg("--events")
        .arg(&live)
        .env("GITHUB_STEP_SUMMARY", &job_summary)
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
    events_agree_with_the_record(&run_dir, &r, &live);
    let md = std::fs::read_to_string(&job_summary).unwrap();
    assert!(
        md.starts_with("### ✅ repro run etcd-split on k3s v1.33.4+k3s1 (repro stand-in, not real k3s): reproduced"),
        "{md}"
    );
    let rows = md
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| Step"))
        .count();
    assert_eq!(rows, v["observations"].as_array().unwrap().len(), "{md}");
}

/// The live stream and the folder's events.jsonl hold the same events (each stamps its own
/// time), and they tell the run result.json records.
fn events_agree_with_the_record(run_dir: &Path, r: &Value, live: &Path) {
    let parse = |p: &Path| -> Vec<Value> {
        std::fs::read_to_string(p)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    };
    let lines = parse(&run_dir.join("events.jsonl"));
    let untimed = |v: &[Value]| -> Vec<Value> {
        let mut v = v.to_vec();
        v.iter_mut().for_each(|l| l["time"] = Value::Null);
        v
    };
    assert_eq!(untimed(&parse(live)), untimed(&lines));
    for l in &lines {
        crate::schema::assert_valid("schema/events.schema.json", l, "an event line");
        assert_eq!(l["run_id"], r["run_id"], "{l}");
    }
    let kinds: Vec<&str> = lines.iter().filter_map(|l| l["event"].as_str()).collect();
    assert_eq!(kinds.first(), Some(&"started"));
    assert_eq!(&kinds[kinds.len() - 2..], ["verdict", "finished"]);
    for k in [
        "phase",
        "node",
        "image",
        "cluster_up",
        "observation",
        "step",
    ] {
        assert!(kinds.contains(&k), "no {k} event: {kinds:?}");
    }
    // Each observation of the record, once, in the record's order.
    let observed: Vec<(u64, String, String, String)> = lines
        .iter()
        .filter(|l| l["event"] == "observation")
        .map(|l| {
            (
                l["step"].as_u64().unwrap(),
                l["node"].as_str().unwrap().to_string(),
                l["signal"].as_str().unwrap().to_string(),
                l["observed"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let recorded: Vec<(u64, String, String, String)> = r["steps"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| {
            s["observations"].as_array().unwrap().iter().map(move |o| {
                (
                    s["index"].as_u64().unwrap(),
                    o["node"].as_str().unwrap().to_string(),
                    o["signal"].as_str().unwrap().to_string(),
                    o["observed"].as_str().unwrap().to_string(),
                )
            })
        })
        .collect();
    let mut sorted = observed.clone();
    sorted.sort();
    let mut want = recorded.clone();
    want.sort();
    assert_eq!(sorted, want);
    let steps: Vec<u64> = lines
        .iter()
        .filter(|l| l["event"] == "step")
        .map(|l| l["step"].as_u64().unwrap())
        .collect();
    assert_eq!(steps, [1, 2, 3]);
    let verdict = &lines[lines.len() - 2];
    assert_eq!(verdict["outcome"], r["verdict"]["outcome"]);
    assert_eq!(verdict["exit_code"], r["exit_code"]);
    assert_eq!(lines[lines.len() - 1]["exit_code"], r["exit_code"]);
    let ready = lines
        .iter()
        .filter(|l| l["event"] == "node" && l["state"] == "ready")
        .count();
    assert!(
        ready >= r["boots"].as_array().unwrap().len() - 1,
        "{ready} ready lines"
    );
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
