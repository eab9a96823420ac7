//! `repro inspect` reads back what a real `repro run` on the k3s stand-in wrote: every
//! observation the run made from log lines (and deaths) must come out the same from the kept
//! per-boot logs — the same signals, the same rules. Probe-decided observations must come out
//! `unknown`: a log cannot run a probe. Needs a Docker engine (fails, never skips, without one).

use std::path::Path;

use crate::repro::Repro;
use crate::runs::{Finished, Run};

use serde_json::Value;

/// `repro run <check> --sim --version <version>`, not run yet.
fn sim(check: &str, version: &str) -> Run {
    Run::check(check).sim().version(version)
}

/// Runs it into a fresh folder, to a verdict.
fn run(run: Run) -> Finished {
    let run = run.finish();
    assert!(matches!(run.out.code, 0 | 1), "the run broke:\n{}", run.out);
    run
}

fn inspect(path: &Path) -> (i32, Value) {
    let out = Repro::new()
        .args(["inspect", "--format", "json", "--progress", "never"])
        .arg(path)
        .run();
    assert!(matches!(out.code, 0 | 1), "inspect failed:\n{out}");
    (out.code, out.json())
}

/// Compares every observation of the run with what inspect reads from the same boot's log;
/// returns how many were compared, and how many of them a probe had decided.
fn same_observations(result: &Value, seen: &Value) -> (usize, usize) {
    let nodes = seen["inputs"][0]["nodes"].as_array().unwrap();
    let mut compared = 0;
    let mut probed = 0;
    let mut diffs = Vec::new();
    for step in result["steps"].as_array().unwrap() {
        for o in step["observations"].as_array().unwrap() {
            let (node, signal, boot) = (
                o["node"].as_str().unwrap(),
                o["signal"].as_str().unwrap(),
                o["boot"].as_u64().unwrap(),
            );
            let b = nodes
                .iter()
                .find(|n| n["name"] == node)
                .and_then(|n| {
                    n["boots"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|b| b["boot"] == boot)
                })
                .unwrap_or_else(|| panic!("inspect has no boot {boot} of {node}"));
            let report = &b["signals"][signal];
            let got = report["state"].as_str().unwrap();
            let by_probe = o["evidence"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["source"] == "probe");
            let want = if by_probe {
                "unknown"
            } else {
                o["observed"].as_str().unwrap()
            };
            // Both keep a death as its own observation, with what it stands for where one is
            // expected (the signal's `on-death`) as `counts_as`.
            let counts_as_differs =
                want == "dead" && report["counts_as"] != o["death"]["counts_as"];
            if got != want || counts_as_differs {
                diffs.push(format!(
                    "step {} {node} boot {boot} {signal}: the run observed {} ({}), inspect says {got} ({})",
                    step["index"], o["observed"], o["reason"], b["signals"][signal]["reason"]
                ));
            }
            compared += 1;
            probed += usize::from(by_probe);
        }
    }
    assert!(diffs.is_empty(), "{diffs:#?}");
    (compared, probed)
}

#[test]
fn inspect_reads_a_buggy_etcd_split_run_as_the_run_saw_it() {
    let run = run(sim("etcd-split", "v1.33.4+k3s1").expect("reproduced"));
    let (dir, result) = (&run.dir, &run.result);
    assert_eq!(run.outcome(), "reproduced");
    let (code, seen) = inspect(dir);
    assert!(same_observations(result, &seen).0 >= 10);
    // The bug is recognised on the boots the run showed it on, from the check file alone.
    assert_eq!(code, 1, "a known bug matched");
    let f: Vec<(String, u64)> = seen["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["verdict"] == "matches")
        .map(|f| {
            (
                f["node"].as_str().unwrap().to_string(),
                f["boot"].as_u64().unwrap(),
            )
        })
        .collect();
    // Every boot of a joiner whose own config enables the registry and that the run saw
    // without it (step 1, and step 3 when the buggy joiner read cp-1's config).
    let mut want: Vec<(String, u64)> = Vec::new();
    for step in result["steps"].as_array().unwrap() {
        for o in step["observations"].as_array().unwrap() {
            let key = (
                o["node"].as_str().unwrap().to_string(),
                o["boot"].as_u64().unwrap(),
            );
            if o["signal"] == "embedded-registry"
                && o["observed"] == "down"
                && key.0 != "etcd-1"
                && !want.contains(&key)
            {
                want.push(key);
            }
        }
    }
    want.sort();
    assert!(want.contains(&("etcd-2".to_string(), 2)), "{want:?}");
    assert_eq!(f, want);
    assert!(seen["inputs"][0]["notes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n.as_str().unwrap().contains("stand-in")));
    // The bundle of the same run reads the same.
    let (_, from_bundle) = inspect(&dir.join("bundle.tar.gz"));
    assert_eq!(from_bundle["inputs"][0]["kind"], "repro-bundle");
    same_observations(result, &from_bundle);
}

#[test]
fn inspect_reads_a_fixed_run_and_finds_nothing() {
    let run = run(sim("etcd-split", "v1.33.5+k3s1"));
    assert_eq!(run.outcome(), "fixed");
    let (code, seen) = inspect(&run.dir);
    same_observations(&run.result, &seen);
    assert_eq!(code, 0);
    assert!(seen["findings"].as_array().unwrap().is_empty());
}

#[test]
fn inspect_reads_deaths_of_a_bootstrap_check_run() {
    let run = run(sim("bootstrap-check", "v1.33.4+k3s1"));
    let (_, seen) = inspect(&run.dir);
    assert!(same_observations(&run.result, &seen).0 >= 6);
    let died = seen["inputs"][0]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|n| n["boots"].as_array().unwrap())
        .filter(|b| b["end"]["how"] == "died")
        .count();
    assert!(
        died >= 2,
        "the brand-new joiner and cp-1 die on the mismatch"
    );
}

#[test]
fn probe_observations_are_unknown_in_a_log() {
    let run = run(sim("metrics-order", "v1.33.4+k3s1").expect("reproduced"));
    let (_, seen) = inspect(&run.dir);
    let (compared, probed) = same_observations(&run.result, &seen);
    assert!(
        probed >= 3 && compared > probed,
        "{compared} compared, {probed} by probe"
    );
}
