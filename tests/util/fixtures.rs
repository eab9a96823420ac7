//! Run folders as `repro run` writes them, for the commands that read them back (`merge`,
//! `nightly-issues`) without a cluster.

use std::path::Path;

use serde_json::{json, Value};

/// Writes `<dir>/result.json` (creating `dir`) as `repro run` writes it — schema version 1,
/// etcd-split on k3s `version` expecting `expected` — for a run that ended with `verdict`, or
/// (`None`) one that infrastructure stopped before a verdict: exit 3 and why.
pub fn write_result(
    dir: &Path,
    run_id: &str,
    version: &str,
    expected: &str,
    verdict: Option<&str>,
) {
    let (exit, error) = match verdict {
        Some(v) if v == expected => (0, Value::Null),
        Some(_) => (1, Value::Null),
        None => (
            3,
            json!("Docker is not reachable at unix:///var/run/docker.sock: connection refused"),
        ),
    };
    let r = json!({
        "schema_version": 1,
        "tool": {"name": "repro", "version": "0.1.0"},
        "run_id": run_id,
        "command": ["repro", "run", "etcd-split"],
        "rerun": "repro run etcd-split",
        "check": {"name": "etcd-split", "issue": "", "summary": "", "description": "", "sources": [], "file": ""},
        "k3s": {"version": version, "image": "rancher/k3s", "image_id": null, "stand_in": false},
        "expect": expected,
        "expected_for_version": expected,
        "started_at": "2026-01-01T00:00:00Z",
        "finished_at": "2026-01-01T00:01:00Z",
        "verdict": verdict.map(|v| json!({"outcome": v, "reason": "r", "differences": [], "expectations": 9, "matched_expected": 9, "matched_bug": 0})),
        "timings": {"total": 61.5},
        "exit_code": exit,
        "error": error
    });
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let text = serde_json::to_string_pretty(&r).expect("JSON");
    std::fs::write(dir.join("result.json"), text)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
}
