//! Helpers shared by the Docker-backed test binaries (`e2e`, `matrix`).

use std::process::{Command, Output, Stdio};

/// The real `repro` binary, run in the crate root, with no environment that would change what
/// it reads or where it writes.
pub fn repro() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_repro"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    for v in [
        "REPRO_ROOT",
        "REPRO_RESULTS",
        "REPRO_K3S_VERSION",
        "REPRO_CHANNEL_SERVER",
    ] {
        c.env_remove(v);
    }
    c
}

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

/// Nothing labelled with this run's id may outlive the run.
pub fn assert_no_leftovers(run_id: &str) {
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
        let left = String::from_utf8_lossy(&out.stdout);
        assert!(
            left.trim().is_empty(),
            "run {run_id} left docker objects ({kind:?}): {left}"
        );
    }
}

/// Both output streams, for assertion messages.
pub fn text(o: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}
