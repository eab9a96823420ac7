//! The Docker engine as the Docker-backed tests see it, through the `docker` CLI (never through
//! repro's own client, so a bug there cannot hide what it left).

use std::process::{Command, Stdio};

/// Docker-backed tests fail (never skip) without an engine, so CI cannot pass without them.
pub fn docker_ok() {
    let ok = Command::new("docker")
        .arg("info")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "these tests need a reachable Docker engine (docker info failed)"
    );
}

/// What is left labelled with the run id `run_id`: containers, networks and volumes, one
/// `<kind> <id>` each (`ps 3f2a…`, `network 9c1d…`).
pub fn leftovers(run_id: &str) -> Vec<String> {
    let mut left = Vec::new();
    for kind in [
        &["ps", "-aq"][..],
        &["network", "ls", "-q"],
        &["volume", "ls", "-q"],
    ] {
        let out = Command::new("docker")
            .args(kind)
            .args(["--filter", &format!("label=io.repro.run={run_id}")])
            .output()
            .expect("docker runs");
        assert!(out.status.success(), "docker {kind:?} failed");
        for l in String::from_utf8_lossy(&out.stdout).lines() {
            left.push(format!("{} {l}", kind[0]));
        }
    }
    left
}
