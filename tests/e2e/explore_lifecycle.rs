//! `repro explore --strategy lifecycle` (#41 point 5) on etcd-split and the stand-in: on the
//! January 2026 candidate (v1.33.7-rc1+k3s3, buggy for both) it finds k3s #13533's class (every
//! node restarted at once: the control-plane-only node panics) and #11333's (its join server
//! stopped, an etcd member it knew up: it dies), each cut to a minimal check that replays
//! (`reproduced` there, `fixed` on v1.33.4+k3s1); the whole campaign on v1.33.4+k3s1 reports
//! no defect (no false alarm of the liveness rules).

use crate::repro::Repro;
use crate::runs::{read_json as json, Run};

const BUGGY: &str = "v1.33.7-rc1+k3s3";
const FIXED: &str = "v1.33.4+k3s1";

fn campaign(version: &str, sequences: Option<&str>) -> serde_json::Value {
    let mut cmd = Run::command(["explore", "--topology", "etcd-split"])
        .args(["--strategy", "lifecycle", "--confirm", "1"])
        .version(version)
        .sim();
    if let Some(s) = sequences {
        cmd = cmd.args(["--sequences", s]);
    }
    let (out, results) = cmd.output();
    let dir = results.only_run_dir();
    out.code(0);
    let findings = json(&dir.join("findings.json"));
    crate::schema::assert_valid("schema/findings.schema.json", &findings, "findings.json");
    serde_json::json!({"dir": dir.display().to_string(), "findings": findings})
}

#[test]
fn lifecycle_exploration_finds_11333_and_13533_with_replayable_checks_and_nothing_when_fixed() {
    crate::docker::docker_ok();
    // The two sequences of the plan that show the classes (`--emit github-matrix` lists ids).
    let c = campaign(BUGGY, Some("l1-restart-all,l3-stop-etcd-1-one-by-one"));
    let dir = std::path::PathBuf::from(c["dir"].as_str().unwrap());
    let list = c["findings"]["findings"].as_array().unwrap().clone();
    let find = |key: &str| {
        (list.iter())
            .find(|f| f["class"] == "died" && f["key"] == key && f["role"] == "control-plane")
            .unwrap_or_else(|| panic!("no died/{key}/control-plane: {list:#?}"))
            .clone()
    };
    // #13533: every node at once, the control-plane-only node panics — one step.
    let panic = find("panic");
    assert_eq!(panic["minimal"]["steps"], 1, "{panic:#}");
    // #11333: the join server stopped, cp-1 restarted — two steps, cut from five.
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

    // The fixed release: every sequence of the plan, no defect.
    let c = campaign(FIXED, None);
    let list = c["findings"]["findings"].as_array().unwrap();
    assert!(
        list.iter().all(|f| f["defect"] == false),
        "false alarms on {FIXED}: {list:#?}"
    );
    assert_eq!(c["findings"]["runs"], 8, "{:#}", c["findings"]);
}
