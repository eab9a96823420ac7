#![allow(clippy::unwrap_used)] // tests panic on purpose when something is wrong

//! End to end on a Docker engine, in one binary: the real `repro` binary against real containers
//! of the k3s stand-in (`make sim`) — runs (`run`), matrix/bisect/merge (`matrix`), `--format
//! json` (`json_output`), runs read back by `inspect` (`inspect`) and secrets planted in a run
//! (`secrets`). Apart from the no-Docker suite (`tests/suite/`) because these need an engine and
//! the stand-in's images, fail (never skip) without them, and take minutes; `make test` runs two
//! at a time (`--test-threads=2`). After every run, nothing labelled with its run id may be left.
//! `make test-podman` runs a subset of them against Podman (`DOCKER_HOST` at a private service,
//! `REPRO_TEST_ENGINE=podman`: every result.json read must name that engine).

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

#[path = "../util/docker.rs"]
mod docker;
#[path = "../util/fixtures.rs"]
mod fixtures;
#[path = "../util/http_files.rs"]
mod http_files;
#[path = "../util/junit.rs"]
mod junit;
#[path = "../util/running.rs"]
mod running;
#[path = "../util/schema.rs"]
mod schema;
#[path = "../util/tcp_proxy.rs"]
mod tcp_proxy;
#[path = "../util/mod.rs"]
mod util;

mod agents;
mod bug_world;
mod builds;
mod doctor;
mod explore;
mod inspect;
mod json_output;
mod learners;
mod matrix;
mod rke2;
mod rke2_faults;
mod run;
mod secrets;
mod teardown;
mod verify;

/// Runs `repro run <args>` on the stand-in with plain progress into a fresh results folder; checks
/// its result.json against the schema and that the run left nothing. Returns the output, the
/// result, the run folder and the results folder (kept until dropped).
fn sim_run(args: &[&str]) -> (Output, Value, PathBuf, tempfile::TempDir) {
    docker::docker_ok();
    let tmp = tempfile::tempdir().unwrap();
    let out = util::repro()
        .arg("run")
        .args(args)
        .args(["--sim", "--progress", "never", "--results"])
        .arg(tmp.path())
        .output()
        .unwrap();
    let dir = only_run_dir(tmp.path());
    let result: Value = read_result(&dir);
    assert_no_leftovers(result["run_id"].as_str().unwrap());
    (out, result, dir, tmp)
}

/// Nothing labelled with this run's id may outlive the run.
fn assert_no_leftovers(run_id: &str) {
    let left = docker::leftovers(run_id);
    assert!(
        left.is_empty(),
        "run {run_id} left docker objects: {left:?}"
    );
}

/// Reads `<dir>/result.json`, failing the test if it does not match the schema.
fn read_result(dir: &Path) -> Value {
    let path = dir.join("result.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let v: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    schema::assert_valid("schema/result.schema.json", &v, &path.display().to_string());
    // `make test-podman` runs this binary against Podman: the run must have said so.
    if let Some(engine) = v["environment"]["engine"].as_str() {
        let expected = std::env::var("REPRO_TEST_ENGINE").unwrap_or_else(|_| "docker".into());
        assert_eq!(engine, expected, "{}", path.display());
    }
    v
}

/// The one run folder under `base`.
fn only_run_dir(base: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(base)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(
        dirs.len(),
        1,
        "one run folder expected in {}",
        base.display()
    );
    dirs[0].clone()
}
