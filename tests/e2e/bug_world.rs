//! The bug world on two control-plane nodes (#21), on real stand-in containers: the metrics
//! checks are refused before anything is created, naming the prediction the load balancer's
//! pick decides; the same check saying `any` there runs to the expected verdict whatever the
//! seed, and the stand-in's picks (recorded per boot in result.json) vary with the seed and
//! decide exactly what a joiner shows.

use serde_json::Value;

use crate::runs::Run;
use crate::util::project;

#[test]
fn metrics_checks_on_two_control_planes_are_refused_with_the_reason() {
    for (check, line) in [("metrics-order", 50), ("metrics-right-order", 35)] {
        let (out, results) = Run::check(check)
            .topology("etcd-split-2cp")
            .sim()
            .version("v1.33.4+k3s1")
            .output();
        out.code(2);
        assert!(
            out.stderr.contains(&format!(
                "checks/{check}.yaml:{line}:27: error: on a buggy release `etcd-2: {{supervisor-metrics: up}}`"
            )) && out.stderr.contains("cp-1 (up), cp-2 (down)"),
            "{out}"
        );
        // Refused before Docker: no results folder, so no run and nothing to clean.
        results.assert_untouched(&out);
    }
}

/// metrics-order with `any` in its last step for the joiners, as the refusal's help suggests.
fn metrics_order_any() -> tempfile::TempDir {
    let root = project(&[
        "checks/signals.yaml",
        "checks/metrics-order.yaml",
        "topologies/etcd-split.yaml",
        "topologies/etcd-split-2cp.yaml",
    ]);
    let path = root.path().join("checks/metrics-order.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let last = "      etcd-3: {ready: up, supervisor-metrics: up}\n";
    assert!(text.ends_with(last), "metrics-order's last step changed");
    let edited = format!(
        "{text}    bug:\n      etcd-2: {{supervisor-metrics: any}}\n      etcd-3: {{supervisor-metrics: any}}\n"
    );
    std::fs::write(&path, edited).unwrap();
    root
}

/// The node a boot's load balancer reached first, from result.json.
fn picked(r: &Value, node: &str, boot: u64) -> Option<String> {
    r["boots"].as_array().unwrap().iter().find_map(|b| {
        (b["node"] == node && b["boot"] == boot)
            .then(|| b["lb_server"]["node"].as_str().map(str::to_string))
            .flatten()
    })
}

#[test]
fn seeded_picks_decide_what_a_buggy_joiner_shows_and_the_verdict_holds() {
    let root = metrics_order_any();
    let mut picks: Vec<String> = Vec::new();
    for seed in [1u64, 2, 3, 4] {
        let run = Run::check("metrics-order")
            .root(root.path())
            .topology("etcd-split-2cp")
            .sim()
            .version("v1.33.4+k3s1")
            .args(["--sim-seed", &seed.to_string()])
            .finish();
        run.out.code(0);
        let r = &run.result;
        assert_eq!(run.outcome(), "reproduced", "seed {seed}");
        assert_eq!(r["sim_seed"], seed, "seed {seed}");
        let seeds = r["sim_seeds"].as_object().unwrap();
        assert_eq!(seeds.len(), 5, "seed {seed}: one per node");
        assert_ne!(seeds["etcd-2"], seeds["etcd-3"], "seed {seed}");
        // Step 4's observations: what the joiner shows is what the server it reached serves.
        let step4 = r["steps"][3]["observations"].as_array().unwrap();
        for node in ["etcd-2", "etcd-3"] {
            let o = step4
                .iter()
                .find(|o| o["node"] == node && o["signal"] == "supervisor-metrics")
                .unwrap();
            let boot = o["boot"].as_u64().unwrap();
            let server = picked(r, node, boot)
                .unwrap_or_else(|| panic!("seed {seed}: {node} boot {boot} recorded no pick"));
            let want = if server == "cp-2" { "down" } else { "up" };
            assert_eq!(
                o["observed"], want,
                "seed {seed}: {node} reached {server} in boot {boot}"
            );
            picks.push(server);
        }
        // Its first boot had no saved servers: only the joined node (the default, standing
        // by), and the stand-in logs no state change for it.
        assert_eq!(picked(r, "etcd-2", 1), None, "seed {seed}");
    }
    eprintln!("step-4 picks over seeds 1-4 (etcd-2, etcd-3 per seed): {picks:?}");
    for server in ["cp-1", "cp-2"] {
        assert!(
            picks.iter().any(|p| p == server),
            "no seed made a joiner reach {server} in step 4: {picks:?}"
        );
    }
}
