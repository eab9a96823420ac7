//! #38 point 3: every check `repro explore` writes is one repro accepts. Over a recorded
//! campaign (tests/fixtures/explore-campaign-refused: etcd-split, supervisor-metrics,
//! v1.33.4+k3s1, sequence o12 — cp-1 first, refused because etcd-1, its join server, still holds
//! the other value, then etcd-2, etcd-3 and etcd-1 — with its distinguishing runs, minimisation
//! and minimal check, as `repro explore` wrote them; the run folders left out), every check file
//! it wrote is accepted by `repro validate` and planned by `repro plan` on the version it was
//! written for (the bug world's "which server may this node reach" rule knows cp-1 is down).

use std::path::PathBuf;

use crate::repro::Repro;
use crate::util::root;

const FIXTURE: &str = "tests/fixtures/explore-campaign-refused";
const VERSION: &str = "v1.33.4+k3s1";

/// Every check file of the campaign folder, by path relative to the crate root.
fn checks() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for sub in ["sequences", "distinguish", "minimise", "checks"] {
        let dir = root().join(FIXTURE).join(sub);
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            if e.path().extension().is_some_and(|x| x == "yaml") {
                out.push(PathBuf::from(FIXTURE).join(sub).join(e.file_name()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn repro_validate_accepts_every_check_of_a_recorded_campaign_with_a_refused_node() {
    let all = checks();
    let minimal: Vec<&PathBuf> = all
        .iter()
        .filter(|c| c.starts_with(format!("{FIXTURE}/checks")))
        .collect();
    assert!(
        !minimal.is_empty(),
        "the campaign wrote a minimal check: {all:?}"
    );
    // The sequence's check: cp-1's step expects its refusal, and later steps boot other nodes.
    let refused = all.iter().any(|c| {
        let text = std::fs::read_to_string(root().join(c)).unwrap();
        let at = text.find(
            "cp-1: {ready: down, fatal: up, panic: down, config-mismatch: \"supervisor-metrics\"}",
        );
        at.is_some_and(|i| text[i..].contains("restart: [etcd-2]"))
    });
    assert!(
        refused,
        "no check with cp-1 refused before etcd-2 restarts: {all:?}"
    );
    Repro::new().arg("validate").args(&all).run().code(0);
    for c in &all {
        Repro::new()
            .arg("plan")
            .arg(c)
            .args(["--sim", "--version", VERSION])
            .run()
            .code(0);
    }
}
