//! The bug world (src/bug_world.rs) over every shipped check × every shipped topology: a check
//! either holds on a topology whichever server a buggy etcd-only joiner's load balancer reaches,
//! or `repro plan` refuses it naming the prediction (file:line:col), or it does not fit the
//! topology's nodes at all. The table is a snapshot: a new check or topology, or a changed
//! prediction, shows up in review.

use crate::repro::Repro;
use crate::util::root;

/// Shipped names of one folder (`checks/` holds signals.yaml too, which is no check).
fn names(dir: &str) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(root().join(dir))
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .filter_map(|e| {
            let name = e.ok()?.file_name().to_string_lossy().into_owned();
            let stem = name.strip_suffix(".yaml")?.to_string();
            (stem != "signals").then_some(stem)
        })
        .collect();
    out.sort();
    out
}

/// `file:line:col` at the start of a line, then `error: on a buggy release`.
fn refusal_places(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.contains(": error: on a buggy release"))
        .map(|l| {
            let place = l.split(": error:").next().unwrap_or_default();
            let parts: Vec<&str> = place.rsplitn(3, ':').collect();
            assert!(
                parts.len() == 3
                    && parts[0].parse::<u32>().is_ok()
                    && parts[1].parse::<u32>().is_ok(),
                "a refusal without file:line:col: {l}"
            );
            place.to_string()
        })
        .collect()
}

#[test]
fn every_shipped_check_on_every_shipped_topology() {
    let (checks, topologies) = (names("checks"), names("topologies"));
    assert!(
        checks.len() >= 4 && topologies.len() >= 5,
        "{checks:?} {topologies:?}"
    );
    let mut table = String::new();
    for check in &checks {
        for topo in &topologies {
            let out = Repro::new().args(["plan", check, "--topology", topo]).run();
            let places = refusal_places(&out.stderr);
            let verdict = match out.code {
                0 => {
                    // It holds: the plan lists what the joiners may reach when it has joiners.
                    assert!(places.is_empty(), "{}", out.stderr);
                    "holds".to_string()
                }
                2 if !places.is_empty() => {
                    out.stderr_has("help: if either value is the bug, write `bug:");
                    format!("refused at {}", places.join(", "))
                }
                2 => {
                    assert!(
                        out.stderr.contains("does not fit topology")
                            || out.stderr.contains("cannot run on"),
                        "{}",
                        out.stderr
                    );
                    "does not fit".to_string()
                }
                _ => {
                    out.code(0);
                    unreachable!()
                }
            };
            table.push_str(&format!("{check} × {topo}: {verdict}\n"));
        }
    }
    // Every check holds on the topology it was written for.
    for check in &checks {
        let own = Repro::new().args(["plan", check]).run();
        own.code(0);
    }
    insta::assert_snapshot!("bug-world-checks-by-topologies", table);
}

#[test]
fn the_plan_shows_what_each_joiner_may_reach() {
    let out = Repro::new()
        .args(["plan", "etcd-split", "--topology", "etcd-split-2cp"])
        .run();
    out.code(0);
    out.stdout_has("    etcd-2: etcd-1 (no saved servers yet)\n");
    out.stdout_has("    etcd-2: one of cp-1, cp-2, else etcd-1\n");
}

#[test]
fn a_metrics_check_on_two_control_planes_is_refused_with_the_prediction() {
    let out = Repro::new()
        .args(["plan", "metrics-order", "--topology", "etcd-split-2cp"])
        .run();
    out.code(2);
    out.stderr_has("checks/metrics-order.yaml:50:27: error: on a buggy release `etcd-2: {supervisor-metrics: up}` in step 4 depends on which server etcd-2's load balancer reaches on topology `etcd-split-2cp`: its boot may read supervisor-metrics from cp-1 (up), cp-2 (down), etcd-1 (up)");
}
