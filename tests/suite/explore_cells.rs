#![allow(clippy::unwrap_used)] // tests panic on purpose when something is wrong
//! #39: a campaign of the workflow's cells (`repro explore --resume` of the downloaded cells,
//! and `--recheck` of them) some of whose sequences no cell ran is not complete: its last line
//! says how many were not run and it exits 3, as a campaign whose runs failed does
//! (docs/explore.md "Runs judged, failed, not run"); with every sequence run it exits 0. No
//! engine: the cells hold campaign files only (no run was made, so nothing is judged or run).

use std::path::Path;

use crate::repro::{Output, Repro};
use crate::util::root;

/// The recorded campaign's plan as a cell that ran the sequences `ran` (by position), nothing
/// else: no minimal check, no cause, no counts.
fn cell(dir: &Path, name: &str, ran: std::ops::Range<usize>) {
    let fixture = root().join("tests/fixtures/explore-campaign-refused/campaign.json");
    let mut c: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    let o = c.as_object_mut().unwrap();
    for k in [
        "first_minimal_after",
        "first_minimal_runs",
        "first_minimal_at",
    ] {
        o.remove(k);
    }
    o.insert("minimal".into(), serde_json::json!({}));
    o.insert("causes".into(), serde_json::json!({}));
    o.insert("runs".into(), ran.len().into());
    o.insert("judged".into(), ran.len().into());
    for (i, s) in o["sequences"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .enumerate()
    {
        let run = ran.contains(&i).then(|| format!("runs/run-{i}"));
        s["run"] = run.into();
    }
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("campaign.json"), c.to_string()).unwrap();
}

fn explore(args: &[&str], dir: &Path) -> Output {
    Repro::without_docker()
        .arg("explore")
        .args(args)
        .arg(dir)
        .run()
}

fn last_line(out: &Output) -> &str {
    out.stdout.trim_end().lines().last().unwrap_or_default()
}

#[test]
fn cells_that_left_sequences_not_run_end_with_that_line_and_exit_3() {
    let tmp = tempfile::tempdir().unwrap();
    // Two cells of three: the third cell's job failed before it uploaded anything.
    cell(tmp.path(), "cell-0", 0..4);
    cell(tmp.path(), "cell-1", 4..8);
    let want = "4 sequences of the plan were not run (no cell ran them)";
    let out = explore(&["--recheck"], tmp.path());
    out.code(3);
    assert!(last_line(&out).starts_with(want), "{out}");
    // Merged and resumed: nothing is run (only the cells' sequences are taken in), and the
    // merged campaign says the same.
    let out = explore(&["--resume"], tmp.path());
    out.code(3);
    assert!(last_line(&out).starts_with(want), "{out}");
    assert!(out.stdout.contains("4 sequences not run"), "{out}");
    let out = explore(&["--recheck"], tmp.path());
    out.code(3);
    assert!(last_line(&out).starts_with(want), "{out}");
}

#[test]
fn cells_that_ran_every_sequence_exit_0() {
    let tmp = tempfile::tempdir().unwrap();
    cell(tmp.path(), "cell-0", 0..6);
    cell(tmp.path(), "cell-1", 6..12);
    let out = explore(&["--recheck"], tmp.path());
    out.code(0);
    assert!(!out.stdout.contains("not run"), "{out}");
    // A campaign of its own (not of cells) cut by its budget is not such a hole: as before.
    let own = root().join("tests/fixtures/explore-campaign-refused");
    let copy = tempfile::tempdir().unwrap();
    for sub in ["", "checks"] {
        std::fs::create_dir_all(copy.path().join(sub)).unwrap();
    }
    for f in [
        "campaign.json",
        "checks/taken-from-etcd-1-supervisor-metrics-etcd.yaml",
    ] {
        std::fs::copy(own.join(f), copy.path().join(f)).unwrap();
    }
    explore(&["--recheck"], copy.path()).code(0);
}
