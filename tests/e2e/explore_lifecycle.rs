//! `repro explore --strategy lifecycle` (#41 point 5) on etcd-split and the stand-in: on the
//! January 2026 candidate (v1.33.7-rc1+k3s3, buggy for both) it finds k3s #13533's class (every
//! node restarted at once: the control-plane-only node panics) and #11333's (its join server
//! stopped, an etcd member it knew up: it dies), each cut to a minimal check that replays
//! (`reproduced` there, `fixed` on v1.33.4+k3s1); the same sequences on v1.33.4+k3s1 report no
//! defect (no false alarm of the liveness rules; the whole plan's 8 runs there, measured in
//! docs/explore.md, take longer than this suite affords). With `--upgrade-to`, the upgrade
//! sequence alone on split-roles: every node, the agent last, runs its target, and the rules
//! find nothing.

use crate::repro::Repro;
use crate::runs::{read_json as json, Run};

const BUGGY: &str = "v1.33.7-rc1+k3s3";
const FIXED: &str = "v1.33.4+k3s1";
/// The two sequences of the plan that show the classes (`--emit github-matrix` lists ids).
const SHOWING: &str = "l1-restart-all,l3-stop-etcd-1-one-by-one";

/// The campaign's results folder (kept while the value lives), its folder and findings.json.
fn campaign(version: &str) -> (crate::runs::Results, std::path::PathBuf, serde_json::Value) {
    let (out, results) = Run::command(["explore", "--topology", "etcd-split"])
        .args(["--strategy", "lifecycle", "--confirm", "1"])
        .args(["--sequences", SHOWING])
        .version(version)
        .sim()
        .output();
    let dir = results.only_run_dir();
    out.code(0);
    let findings = json(&dir.join("findings.json"));
    crate::schema::assert_valid("schema/findings.schema.json", &findings, "findings.json");
    (results, dir, findings)
}

#[test]
fn lifecycle_exploration_finds_11333_and_13533_with_replayable_checks_and_nothing_when_fixed() {
    crate::docker::docker_ok();
    let (_kept, dir, findings) = campaign(BUGGY);
    let list = findings["findings"].as_array().unwrap().clone();
    let find = |key: &str| {
        (list.iter())
            .find(|f| f["class"] == "died" && f["key"] == key && f["role"] == "control-plane")
            .unwrap_or_else(|| panic!("no died/{key}/control-plane: {list:#?}"))
            .clone()
    };
    // #13533: every node at once, the control-plane-only node panics — one step.
    let panic = find("panic");
    assert_eq!(panic["minimal"]["steps"], 1, "{panic:#}");
    // #11333: the join server stopped, cp-1 restarted — two steps.
    let fatal = find("fatal");
    assert_eq!(fatal["minimal"]["steps"], 2, "{fatal:#}");
    for f in [&panic, &fatal] {
        assert_eq!(f["minimal"]["confirmed"], 1, "{f:#}");
        let check = dir.join(f["minimal"]["check"].as_str().unwrap());
        let check = check.to_str().unwrap();
        Repro::new().args(["validate", check]).run().code(0);
        for (version, outcome) in [(BUGGY, "reproduced"), (FIXED, "fixed")] {
            let run = Run::check(check)
                .sim()
                .version(version)
                .expect(outcome)
                .finish();
            run.out.code(0);
            assert_eq!(run.outcome(), outcome, "{check} on {version}");
        }
    }
    let text =
        std::fs::read_to_string(dir.join(fatal["minimal"]["check"].as_str().unwrap())).unwrap();
    assert!(
        text.contains("stop: [etcd-1]") && text.contains("restart: [cp-1]"),
        "{text}"
    );

    // The fixed release: the same sequences, no defect.
    let (_kept, _, findings) = campaign(FIXED);
    let list = findings["findings"].as_array().unwrap();
    assert!(
        list.iter().all(|f| f["defect"] == false),
        "false alarms on {FIXED}: {list:#?}"
    );
    assert_eq!(findings["runs"], 2, "{findings:#}");
}

/// `--upgrade-to`: the upgrade sequence (every node one by one in Rancher's order, the agent
/// last) on split-roles, v1.33.4+k3s1 → v1.33.5+k3s1. Each upgraded node comes back on its
/// target (the `version` the rules expect, and the banner's version in the step's record), the
/// agent Ready again through the apiservers it knows, and no finding.
#[test]
fn lifecycle_upgrade_campaign_runs_every_node_on_its_target_with_no_finding() {
    crate::docker::docker_ok();
    const TO: &str = "v1.33.5+k3s1";
    let (out, results) = Run::command(["explore", "--topology", "split-roles"])
        .args([
            "--strategy",
            "lifecycle",
            "--confirm",
            "1",
            "--upgrade-to",
            TO,
        ])
        .args(["--sequences", "l11-upgrade"])
        .version(FIXED)
        .sim()
        .output();
    out.code(0);
    let dir = results.only_run_dir();
    let findings = json(&dir.join("findings.json"));
    crate::schema::assert_valid("schema/findings.schema.json", &findings, "findings.json");
    assert_eq!(findings["runs"], 1, "{findings:#}");
    let list = findings["findings"].as_array().unwrap();
    assert!(list.is_empty(), "false findings: {list:#?}");
    let run = crate::runs::only_run_dir(&dir.join("runs"));
    let result = json(&run.join("result.json"));
    let steps = result["steps"].as_array().unwrap();
    let order: Vec<&str> = (steps.iter())
        .map(|s| s["actions"][0]["nodes"][0].as_str().unwrap())
        .collect();
    assert_eq!(
        order,
        ["etcd-1", "etcd-2", "etcd-3", "cp-1", "cp-2", "agent-1"]
    );
    for step in steps {
        assert_eq!(step["actions"][0]["kind"], "upgrade", "{step:#}");
        let node = step["actions"][0]["nodes"][0].as_str().unwrap();
        assert_eq!(step["versions"][node], TO, "{node}: {step:#}");
        let observed = |signal: &str| {
            (step["observations"].as_array().unwrap().iter())
                .find(|o| o["node"] == node && o["signal"] == signal)
                .unwrap_or_else(|| panic!("no {signal} of {node}: {step:#}"))["observed"]
                .clone()
        };
        assert_eq!(observed("version"), TO, "{node}");
        if node == "agent-1" {
            assert_eq!(observed("node-ready"), "up", "{step:#}");
        }
    }
    // every node ends on the target
    let last = &steps.last().unwrap()["versions"];
    assert!(
        last.as_object().unwrap().values().all(|v| v == TO),
        "{last:#}"
    );
}
