//! `repro explore --strategy lifecycle` (#41 point 5) on etcd-split and the stand-in: on the
//! January 2026 candidate (v1.33.7-rc1+k3s3, buggy for both) it finds k3s #13533's class (every
//! node restarted at once: the control-plane-only node panics) and #11333's (its join server
//! stopped, an etcd member it knew up: it dies), each cut to a minimal check that replays
//! (`reproduced` there, `fixed` on v1.33.4+k3s1); the same sequences on v1.33.4+k3s1 report no
//! defect (no false alarm of the liveness rules; the whole plan's 8 runs there, measured in
//! docs/explore.md, take longer than this suite affords).

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
