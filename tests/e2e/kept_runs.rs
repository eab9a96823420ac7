//! `repro runs` on a kept stand-in cluster (#32 item 8): the run is listed with its cluster
//! kept, a node's log is read and a command runs in a node (its exit status passed through),
//! then `repro clean` removes it, the listing says so and the node is no longer reachable.

use std::process::Command;

use crate::repro::Repro;
use crate::runs::{KeptCluster, Run};

#[test]
fn a_kept_run_is_listed_logged_and_execed_until_it_is_cleaned() {
    let run = Run::check("etcd-split")
        .sim()
        .version("v1.33.4+k3s1")
        .expect("reproduced")
        .keep()
        .finish();
    let id = run.run_id();
    let _cleanup = KeptCluster::of(&id);
    run.out.code(0);
    let results = run.dir.parent().expect("results folder").to_path_buf();
    let runs = |args: &[&str]| {
        Repro::new()
            .arg("runs")
            .args(args)
            .arg("--results")
            .arg(&results)
            .run()
    };

    let list = runs(&[]);
    list.code(0);
    let row = list
        .stdout
        .lines()
        .find(|l| l.starts_with(&id))
        .unwrap_or_else(|| panic!("no row for {id}:\n{list}"));
    for want in [
        "etcd-split",
        "v1.33.4+k3s1 (stand-in)",
        "reproduced",
        "kept: 4/4 running",
    ] {
        assert!(row.contains(want), "{want:?} not in {row:?}");
    }
    let json = runs(&["--format", "json"]);
    let v = json.code(0).json();
    assert_eq!(v["engine"]["asked"], true, "{v:#}");
    let ours = v["runs"]
        .as_array()
        .and_then(|rs| rs.iter().find(|r| r["id"] == id.as_str()))
        .unwrap_or_else(|| panic!("{id} not listed: {v:#}"));
    assert_eq!(ours["cluster"]["kept"], true);
    assert_eq!(ours["cluster"]["nodes"].as_array().map(Vec::len), Some(4));

    // The node's log through the engine holds what the run saved of its first boot.
    let logs = Repro::new()
        .args(["runs", "logs", &id[..4], "etcd-1", "--results"])
        .arg(&results)
        .run();
    logs.code(0).stdout_has("Starting k3s v1.33.4+k3s1");

    let exec = runs(&["exec", &id, "etcd-1", "--", "k3s", "-v"]);
    exec.code(0).stdout_has("k3s version v1.33.4+k3s1");
    // A failing command's exit status is repro's, as `docker exec` reports it.
    let bogus = ["k3s", "--no-such-flag"];
    let docker = Command::new("docker")
        .args(["exec", &format!("repro-{id}-etcd-1")])
        .args(bogus)
        .output()
        .expect("docker exec");
    let want = docker.status.code().expect("an exit code");
    assert_ne!(want, 0, "the stand-in took {bogus:?}");
    let failed = Repro::new()
        .args(["runs", "exec", &id, "etcd-1", "--results"])
        .arg(&results)
        .arg("--")
        .args(bogus)
        .run();
    assert_eq!(failed.code, want, "{failed}");
    runs(&["exec", &id, "etcd-9", "--", "k3s", "-v"])
        .code(2)
        .stderr_has("has no node `etcd-9`");

    run.clean();
    let after = runs(&[]);
    after.code(0);
    assert!(
        after
            .stdout
            .lines()
            .any(|l| l.starts_with(&id) && l.contains("removed")),
        "{after}"
    );
    runs(&["logs", &id, "etcd-1"])
        .code(2)
        .stderr_has(&format!("run {id} was not kept"));
}
