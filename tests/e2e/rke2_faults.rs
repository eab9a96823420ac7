//! Faults on RKE2's systemd nodes (issue #30 item 5): a journal follow that loses journalctl —
//! no inotify instance left on the host, or journalctl failing outright — is polled or reported
//! as a lost log (exit 3), never as the node's death; and `docker stop` of a ready node mid-run
//! is that node's death, judged as on k3s (exit 4), not an `exec … not running` error when a
//! later step restarts it.
//!
//! journalctl is replaced in one node by a script that answers `-f` the way journalctl does
//! when the host is out of inotify instances (systemd's journalctl.c: `sd_journal_get_fd` →
//! EMFILE prints "Insufficient watch descriptors available. Reverting to -n." and ends after
//! what it has) or when it cannot get its fd at all ("Failed to get journal fd: …", exit 1);
//! every other call goes to the real journalctl. Exhausting the host's real instances would
//! break every other run on this shared engine.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::running::Running;
use crate::teardown::docker;
use crate::util::{repro, text};

/// journalctl as a host out of inotify instances makes it answer `-f`.
const NO_INOTIFY: &str = r#"#!/bin/sh
for a in "$@"; do
  if [ "$a" = -f ]; then
    echo x >> /run/repro-test-follows
    echo "Insufficient watch descriptors available. Reverting to -n." >&2
    shift_args=""
    for b in "$@"; do [ "$b" = -f ] || shift_args="$shift_args '$b'"; done
    eval exec /usr/bin/journalctl $shift_args
  fi
done
exec /usr/bin/journalctl "$@"
"#;

/// journalctl failing to follow at all.
const NO_FOLLOW: &str = r#"#!/bin/sh
for a in "$@"; do
  if [ "$a" = -f ]; then
    echo "Failed to get journal fd: Too many open files" >&2
    exit 1
  fi
done
exec /usr/bin/journalctl "$@"
"#;

/// `repro run <check> --sim` on the RKE2 topology into `results`, watched as it goes.
fn rke2_run(check: &str, version: &str, results: &Path, extra: &[&str]) -> Running {
    crate::docker::docker_ok();
    let mut cmd = repro();
    cmd.args(["run", check, "--sim", "--version", version])
        .args(["--topology", "rke2-8465", "--expect", "auto"])
        .args(["--progress", "never", "--results"])
        .arg(results)
        .args(extra);
    Running::spawn(cmd)
}

/// Puts `script` in front of journalctl in `node`'s container once it is created (before its
/// first start), then ends the journalctl processes it runs once its first boot started, so the
/// follow attaches again through the script whatever the order.
fn break_journal(run: &mut Running, node: &str, script: &str) -> String {
    assert!(
        run.wait_line(&format!("{node:<8} boot 0 created")),
        "{:#?}",
        run.seen
    );
    let container = format!("repro-{}-{node}", run.run_id.clone().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("journalctl");
    std::fs::write(&file, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
    docker(&[
        "cp",
        &file.display().to_string(),
        &format!("{container}:/usr/local/bin/journalctl"),
    ]);
    assert!(
        run.wait_line(&format!("{node:<8} boot 1 starting")),
        "{:#?}",
        run.seen
    );
    docker(&[
        "exec",
        &container,
        "sh",
        "-c",
        "kill $(pidof journalctl) 2>/dev/null; true",
    ]);
    container
}

fn boots_of<'a>(r: &'a Value, node: &str) -> Vec<&'a Value> {
    (r["boots"].as_array().unwrap().iter())
        .filter(|b| b["node"] == node)
        .collect()
}

/// The host out of inotify instances while a node's journal is followed: journalctl reverts to
/// printing what it has, repro reads the journal again from its cursor, and the run ends with
/// its verdict — every boot whole, none lost or dead.
#[test]
fn a_journal_follow_without_inotify_is_polled_and_the_run_keeps_its_verdict() {
    let tmp = tempfile::tempdir().unwrap();
    let mut run = rke2_run("metrics-order", "v1.32.9+rke2r1", tmp.path(), &["--keep"]);
    let container = break_journal(&mut run, "etcd-2", NO_INOTIFY);
    let run_id = run.run_id.clone().unwrap();
    let (code, err) = run.finish();
    let follows = Command::new("docker")
        .args(["exec", &container, "cat", "/run/repro-test-follows"])
        .output()
        .unwrap();
    let clean = repro().args(["clean", "--run", &run_id]).output().unwrap();
    crate::runs::assert_no_leftovers(&run_id);
    assert!(clean.status.success(), "{}", text(&clean));
    assert_eq!(code, Some(0), "{err}");
    // The script answered several follows (each poll is one).
    let polls = String::from_utf8_lossy(&follows.stdout).lines().count();
    assert!(
        polls >= 2,
        "the follow never went through the script: {polls}"
    );
    let r = crate::runs::read_result(&crate::runs::only_run_dir(tmp.path()));
    assert_eq!(r["verdict"]["outcome"], "fixed", "{err}");
    let dir = crate::runs::only_run_dir(tmp.path());
    let etcd2 = boots_of(&r, "etcd-2");
    assert!(etcd2.len() >= 3, "{etcd2:?}");
    for b in &etcd2 {
        assert_ne!(b["end"], "lost", "{b}");
        assert_ne!(b["end"], "exited", "{b}");
        let log = std::fs::read_to_string(dir.join(b["log"].as_str().unwrap())).unwrap();
        assert_eq!(log.matches("Starting rke2 v").count(), 1, "{log}");
        assert!(log.contains("rke2 is up and running"), "{log}");
    }
}

/// journalctl cannot follow a running node's journal at all: after its retries the run stops
/// with exit 3 naming the lost log, journalctl's words and the inotify limit — not "died",
/// not an inconclusive verdict — and result.json records the boot as lost.
#[test]
fn a_journal_follow_that_keeps_failing_is_a_lost_log_not_a_death() {
    let tmp = tempfile::tempdir().unwrap();
    let mut run = rke2_run("metrics-order", "v1.32.9+rke2r1", tmp.path(), &[]);
    break_journal(&mut run, "etcd-2", NO_FOLLOW);
    let run_id = run.run_id.clone().unwrap();
    let (code, err) = run.finish();
    crate::runs::assert_no_leftovers(&run_id);
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("lost the log of etcd-2"), "{err}");
    assert!(
        err.contains("Failed to get journal fd: Too many open files"),
        "{err}"
    );
    assert!(err.contains("not a death"), "{err}");
    assert!(err.contains("max_user_instances"), "{err}");
    assert!(!err.contains("died"), "{err}");
    let r = crate::runs::read_result(&crate::runs::only_run_dir(tmp.path()));
    assert_eq!(r["exit_code"], 3);
    assert!(r["verdict"].is_null(), "{}", r["verdict"]);
    let etcd2 = boots_of(&r, "etcd-2");
    assert!(etcd2.iter().any(|b| b["end"] == "lost"), "{etcd2:?}");
    assert!(etcd2.iter().all(|b| b["end"] != "exited"), "{etcd2:?}");
}

/// `docker stop` of a ready RKE2 node before the step that observes it: its boot ends as a
/// death, the step observes it `dead`, the next step's restart boots the stopped container
/// again (systemd first, then the unit) instead of failing on `exec … not running`, and the
/// run ends `inconclusive` with exit 4, as the same fault does on k3s.
#[test]
fn docker_stop_of_a_ready_rke2_node_is_its_death_and_the_run_is_inconclusive() {
    let tmp = tempfile::tempdir().unwrap();
    // A paced stand-in: step 2's restart of etcd-1 takes seconds, so etcd-2's stop has landed
    // before step 2 observes it.
    let mut run = rke2_run(
        "etcd-split",
        "v1.32.5+rke2r1",
        tmp.path(),
        &["--sim-pace", "0.25"],
    );
    assert!(run.wait_line("step 2/"), "{:#?}", run.seen);
    let run_id = run.run_id.clone().unwrap();
    docker(&["stop", &format!("repro-{run_id}-etcd-2")]);
    let (code, err) = run.finish();
    crate::runs::assert_no_leftovers(&run_id);
    assert_eq!(code, Some(4), "{err}");
    assert!(!err.contains("not running"), "{err}");
    let r = crate::runs::read_result(&crate::runs::only_run_dir(tmp.path()));
    assert_eq!(r["verdict"]["outcome"], "inconclusive", "{err}");
    let o = r["steps"][1]["observations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["node"] == "etcd-2" && o["signal"] == "embedded-registry")
        .unwrap();
    assert_eq!(o["observed"], "dead", "{o}");
    // Step 3 restarted the stopped node: a new boot, ready.
    let etcd2 = boots_of(&r, "etcd-2");
    let last = etcd2.last().unwrap();
    assert_eq!(last["step"], 3, "{etcd2:?}");
    assert!(!last["ready_at"].is_null(), "{last}");
}

/// Four RKE2 stand-in runs started at once (#30; five systemd nodes each, ~50 inotify instances
/// a run): each ends with its verdict, or is refused before its first node by the host's
/// inotify budget — exit 3 naming `fs.inotify.max_user_instances`, the numbers and the sysctl
/// fix — never a death, a lost log or a timeout; nothing is left. Where the limit cannot hold
/// four (the default 128), at least one is refused: the claims of runs starting at the same
/// moment count, not only what /proc shows (before the check, all four passed and all ran out).
#[test]
fn four_rke2_runs_at_once_finish_or_are_refused_by_the_inotify_budget() {
    let dirs: Vec<tempfile::TempDir> = (0..4).map(|_| tempfile::tempdir().unwrap()).collect();
    let runs: Vec<Running> = (dirs.iter())
        .map(|d| rke2_run("etcd-split", "v1.32.5+rke2r1", d.path(), &[]))
        .collect();
    let mut refused = 0;
    for (run, dir) in runs.into_iter().zip(&dirs) {
        let (code, err) = run.finish();
        let run_dir = crate::runs::only_run_dir(dir.path());
        let r = crate::runs::read_result(&run_dir);
        crate::runs::assert_no_leftovers(r["run_id"].as_str().unwrap());
        match code {
            Some(0) => assert_eq!(r["verdict"]["outcome"], "reproduced", "{err}"),
            Some(3) => {
                refused += 1;
                for says in [
                    "the host's inotify budget: fs.inotify.max_user_instances is ",
                    "this run's 5 systemd nodes need about 50",
                    "nothing was created",
                    "`sudo sysctl -w fs.inotify.max_user_instances=",
                ] {
                    assert!(err.contains(says), "{says:?} in {err}");
                }
                assert!(!err.contains(" boot 0 created"), "{err}");
                assert!(r["boots"].as_array().is_none_or(|b| b.is_empty()), "{r}");
            }
            other => panic!("exit {other:?}: {err}"),
        }
    }
    let limit: u64 = std::fs::read_to_string("/proc/sys/fs/inotify/max_user_instances")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    if limit < 4 * 50 {
        assert!(refused >= 1, "four runs of 50 fit under {limit}?");
    }
}
