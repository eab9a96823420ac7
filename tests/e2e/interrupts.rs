//! SIGINT and SIGTERM to the commands that make several runs (#42): `explore`, `verify` and
//! `bisect` have one listener for the whole process, so a signal during a run or between two
//! runs stops the command with exit 130, every run's containers, networks and volumes removed,
//! and an explore campaign that `--resume` continues.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::running::Running;
use crate::runs::{assert_no_leftovers, read_json, read_result};
use crate::util::repro;

/// When the signal is sent.
#[derive(Clone, Copy, Debug)]
enum Moment {
    /// While a run's cluster is up (its first step began, or its result.json exists).
    During,
    /// Once a run ended, before the next one began (the line the command says in between).
    Between,
}

/// Every result.json under `dir`, at any depth up to 5.
fn result_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), 0)];
    while let Some((d, depth)) = stack.pop() {
        let f = d.join("result.json");
        if f.is_file() {
            out.push(f);
        }
        if depth < 5 {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push((e.path(), depth + 1));
                }
            }
        }
    }
    out
}

/// Waits until a run under `dir` has recorded its id (its result.json exists: the run began),
/// polling the folder (an event on disk, not a fixed sleep), at most two minutes.
fn wait_run_started(dir: &Path) {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(120) {
        if result_files(dir)
            .iter()
            .any(|f| std::fs::read_to_string(f).is_ok_and(|t| t.contains("\"run_id\"")))
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no run began under {}", dir.display());
}

/// Exit 130, and no run under `dir` left a container, network or volume; the signal landed
/// where it was meant to: `During`, a run stopped by it (its result.json says exit 130);
/// `Between`, a run that reached its verdict before it.
fn assert_stopped_clean(code: Option<i32>, seen: &str, dir: &Path, moment: Moment) {
    assert_eq!(code, Some(130), "{seen}");
    assert!(!seen.contains("panicked"), "{seen}");
    let files = result_files(dir);
    assert!(!files.is_empty(), "no run began:\n{seen}");
    let results: Vec<_> = files
        .iter()
        .map(|f| read_result(f.parent().unwrap()))
        .collect();
    for r in &results {
        assert_no_leftovers(r["run_id"].as_str().unwrap());
    }
    let hit = match moment {
        Moment::During => results.iter().any(|r| r["exit_code"] == 130),
        Moment::Between => results.iter().any(|r| !r["verdict"].is_null()),
    };
    assert!(hit, "{moment:?}: {results:#?}\n{seen}");
}

/// `repro explore` of two sequences (`--jobs 2`: both at once), interrupted: exit 130, nothing
/// left, and `--resume` finishes the campaign (both sequences judged).
fn explore_interrupted(sig: &str, moment: Moment, jobs: &str) {
    crate::docker::docker_ok();
    let results = tempfile::tempdir().unwrap();
    let seqs = "o4-embedded-registry,o5-embedded-registry";
    let args = |c: &mut std::process::Command| {
        c.args(["explore", "--keys", "embedded-registry", "--sim"])
            .args(["--version", "v1.33.4+k3s1", "--no-minimise"])
            .args(["--sequences", seqs, "--jobs", jobs]);
    };
    let mut c = repro();
    args(&mut c);
    c.args(["--topology", "etcd-split", "--results"])
        .arg(results.path());
    let mut r = Running::spawn(c);
    match moment {
        Moment::During => {
            assert!(r.wait_line("campaign folder"), "{:?}", r.seen);
            wait_run_started(results.path());
        }
        Moment::Between => assert!(r.wait_line("[1/"), "{:?}", r.seen),
    }
    r.signal(sig);
    let (code, seen) = r.finish();
    assert_stopped_clean(code, &seen, results.path(), moment);
    assert!(seen.contains("--resume"), "{seen}");
    let dir = std::fs::read_dir(results.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("campaign.json").is_file())
        .expect("a campaign folder");
    // The campaign is saved as far as it got, and --resume finishes it.
    let mut c = repro();
    args(&mut c);
    c.arg("--resume").arg(&dir);
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", crate::util::text(&out));
    let state = read_json(&dir.join("campaign.json"));
    let ran = state["sequences"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["run"].is_string())
        .count();
    assert_eq!(ran, 2, "{state:#}");
    for f in result_files(&dir) {
        assert_no_leftovers(read_result(f.parent().unwrap())["run_id"].as_str().unwrap());
    }
}

#[test]
fn explore_sigint_during_a_run_exits_130_and_resumes() {
    explore_interrupted("INT", Moment::During, "1");
}

/// #39: with both sequences in flight, an interrupt stops both runs, cleans both up and leaves
/// a campaign `--resume` finishes.
#[test]
fn explore_jobs_sigint_during_runs_exits_130_and_resumes() {
    explore_interrupted("INT", Moment::During, "2");
}

#[test]
fn explore_sigterm_between_runs_exits_130_and_resumes() {
    explore_interrupted("TERM", Moment::Between, "1");
}

/// `repro verify` (two runs), interrupted during the buggy run or once it ended.
fn verify_interrupted(sig: &str, moment: Moment) {
    crate::docker::docker_ok();
    let results = tempfile::tempdir().unwrap();
    let mut c = repro();
    c.args(["verify", "etcd-split", "--sim", "--progress", "never"])
        .args(["--buggy", "v1.33.4+k3s1", "--fixed", "v1.33.5+k3s1"])
        .arg("--results")
        .arg(results.path());
    let mut r = Running::spawn(c);
    match moment {
        Moment::During => wait_run_started(results.path()),
        Moment::Between => assert!(r.wait_line("buggy run on"), "{:?}", r.seen),
    }
    r.signal(sig);
    let (code, seen) = r.finish();
    assert_stopped_clean(code, &seen, results.path(), moment);
    // (a signal between the runs may land as the fixed run begins: that run stops too)
    assert!(
        !seen.contains(": fixed (asked for: fixed)"),
        "verify went on:\n{seen}"
    );
}

#[test]
fn verify_sigterm_during_a_run_exits_130() {
    verify_interrupted("TERM", Moment::During);
}

#[test]
fn verify_sigint_between_runs_exits_130() {
    verify_interrupted("INT", Moment::Between);
}

/// `repro bisect` (a run per release probed), interrupted during its first run or once it ended.
fn bisect_interrupted(sig: &str, moment: Moment) {
    crate::docker::docker_ok();
    let results = tempfile::tempdir().unwrap();
    let mut c = repro();
    // (`--format json`: the lines for people, "run 1/≤4: … → fixed" too, on stderr)
    c.args([
        "bisect",
        "etcd-split",
        "--sim",
        "--progress",
        "never",
        "--format",
        "json",
    ])
    .args(["--good", "v1.33.6+k3s1", "--bad", "v1.33.0+k3s1"])
    .arg("--results")
    .arg(results.path());
    let mut r = Running::spawn(c);
    match moment {
        Moment::During => wait_run_started(results.path()),
        Moment::Between => assert!(r.wait_line("→"), "{:?}", r.seen),
    }
    r.signal(sig);
    let (code, seen) = r.finish();
    assert_stopped_clean(code, &seen, results.path(), moment);
    assert!(!seen.contains("answer:"), "bisect went on:\n{seen}");
}

#[test]
fn bisect_sigint_during_a_run_exits_130() {
    bisect_interrupted("INT", Moment::During);
}

#[test]
fn bisect_sigterm_between_runs_exits_130() {
    bisect_interrupted("TERM", Moment::Between);
}
