//! The teardown against what it cannot remove (issue #30 item 7): a run whose network the engine
//! keeps says so plainly — what is left, why, how to clear it — and exits 3, instead of a bare
//! "has active endpoints" after rounds of retries.

use std::process::Command;

use crate::running::Running;
use crate::util::repro;

/// `docker <args>`: its stdout, trimmed; the test fails if it does.
pub fn docker(args: &[&str]) -> String {
    let o = Command::new("docker").args(args).output().unwrap();
    assert!(
        o.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// `repro run etcd-split` on the stand-in's fixed release (`extra` flags added), its stderr
/// watched as it comes.
fn start_fixed_run(results: &std::path::Path, extra: &[&str]) -> Running {
    let mut cmd = repro();
    cmd.args([
        "run",
        "etcd-split",
        "--sim",
        "--k3s-version",
        "v1.33.5+k3s1",
    ])
    .args(["--expect", "fixed", "--progress", "never"])
    .args(extra)
    .arg("--results")
    .arg(results);
    Running::spawn(cmd)
}

/// A container that is not the run's is attached to the run's network while the run goes on
/// (`docker run --network repro-<id>`, as a user debugging a node would): the teardown removes
/// every node, cannot remove the network, and the run ends with exit 3 naming the network, the
/// container that holds it and the command that frees it. Once that container is gone, `repro
/// clean --run` removes the rest.
#[test]
fn a_network_held_by_a_foreign_container_is_named_with_how_to_free_it() {
    crate::docker::docker_ok();
    let tmp = tempfile::tempdir().unwrap();
    let mut run = start_fixed_run(tmp.path(), &[]);
    // The first node created: the run's network exists.
    assert!(run.wait_line("created: files written"), "{:#?}", run.seen);
    let run_id = run.run_id.clone().unwrap();
    let network = format!("repro-{run_id}");
    let foreign = format!("repro-test-foreign-{run_id}");
    // Not the stand-in (FROM scratch, nothing to keep it running): the systemd base, asleep.
    docker(&[
        "run",
        "-d",
        "--name",
        &foreign,
        "--network",
        &network,
        "--entrypoint",
        "sleep",
        "repro.local/systemd-base:bookworm",
        "600",
    ]);
    let (code, err) = run.finish();
    let attached = docker(&[
        "network",
        "inspect",
        "-f",
        "{{range .Containers}}{{.Name}} {{end}}",
        &network,
    ]);
    let _ = Command::new("docker").args(["rm", "-f", &foreign]).output();
    let clean = repro().args(["clean", "--run", &run_id]).output().unwrap();
    crate::runs::assert_no_leftovers(&run_id);
    assert_eq!(code, Some(3), "{err}");
    assert_eq!(attached, foreign, "only the foreign container was left");
    assert!(
        err.contains(&format!(
            "network {network} is left: container(s) {foreign} (not this run's) are attached to it"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("docker network disconnect -f {network} {foreign}")),
        "{err}"
    );
    assert!(!err.contains("has active endpoints"), "{err}");
    assert!(clean.status.success(), "{}", crate::util::text(&clean));
}

/// A run whose process is killed (SIGKILL: no cleanup is possible) leaves its cluster. `repro
/// clean --orphans` removes that run and only it: a run in progress beside it and a `--keep`
/// run are left, each named with why, and the run in progress goes on to its verdict.
#[test]
fn clean_orphans_removes_a_killed_runs_cluster_and_leaves_live_and_kept_runs() {
    crate::docker::docker_ok();
    let tmp = tempfile::tempdir().unwrap();
    let start = |extra: &[&str]| start_fixed_run(tmp.path(), extra);
    let first_node = "created: files written";
    let mut kept = start(&["--keep"]);
    assert!(kept.wait_line(first_node), "{:#?}", kept.seen);
    let kept_id = kept.run_id.clone().unwrap();
    let kept_cluster = crate::runs::KeptCluster::of(&kept_id);
    let (code, err) = kept.finish();
    assert_eq!(code, Some(0), "{err}");

    let mut killed = start(&[]);
    assert!(killed.wait_line(first_node), "{:#?}", killed.seen);
    let killed_id = killed.run_id.clone().unwrap();
    killed.signal("KILL");
    let (code, _) = killed.finish();
    assert_eq!(code, None, "killed by its signal");
    // The engine finishes the calls the killed process had in flight: its objects, once two
    // listings agree.
    let mut left = crate::docker::leftovers(&killed_id);
    loop {
        std::thread::sleep(std::time::Duration::from_millis(300));
        let now = crate::docker::leftovers(&killed_id);
        if now == left {
            break;
        }
        left = now;
    }
    assert!(!left.is_empty(), "the killed run left its cluster");

    let mut alive = start(&[]);
    assert!(alive.wait_line(first_node), "{:#?}", alive.seen);
    let alive_id = alive.run_id.clone().unwrap();
    let clean = repro().args(["clean", "--orphans"]).output().unwrap();
    let text = crate::util::text(&clean);
    assert!(clean.status.success(), "{text}");
    assert!(
        text.contains(&format!("removed run {killed_id} (etcd-split)")) && text.contains("is gone"),
        "{text}"
    );
    assert!(
        text.contains(&format!("left run {alive_id} (etcd-split)"))
            && text.contains("its process still runs"),
        "{text}"
    );
    assert!(
        text.contains(&format!("left run {kept_id} (etcd-split)"))
            && text.contains("kept with --keep"),
        "{text}"
    );
    crate::runs::assert_no_leftovers(&killed_id);
    assert!(
        !crate::docker::leftovers(&kept_id).is_empty(),
        "the kept run stays"
    );
    // The run in progress was not touched: it ends with its verdict and cleans up after itself.
    let (code, err) = alive.finish();
    assert_eq!(code, Some(0), "{err}");
    crate::runs::assert_no_leftovers(&alive_id);
    kept_cluster.done();
}
