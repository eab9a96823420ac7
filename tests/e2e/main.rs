#![allow(clippy::unwrap_used)] // tests panic on purpose when something is wrong

//! End to end on a Docker engine, in one binary: the real `repro` binary against real containers
//! of the k3s stand-in (`make sim`) — runs (`run`), matrix/bisect/merge (`matrix`), `--format
//! json` (`json_output`), runs read back by `inspect` (`inspect`) and secrets planted in a run
//! (`secrets`), kept clusters reached by `repro runs` (`kept_runs`). Apart from the no-Docker
//! suite (`tests/suite/`) because these need an engine and
//! the stand-in's images, fail (never skip) without them, and take minutes; `make test` runs two
//! at a time (`--test-threads=2`). After every run, nothing labelled with its run id may be left.
//! `make test-podman` runs a subset of them against Podman (`DOCKER_HOST` at a private service,
//! `REPRO_TEST_ENGINE=podman`: every result.json read must name that engine).

#[path = "../util/docker.rs"]
mod docker;
#[path = "../util/fixtures.rs"]
mod fixtures;
#[path = "../util/http_files.rs"]
mod http_files;
#[path = "../util/images.rs"]
mod images;
#[path = "../util/junit.rs"]
mod junit;
#[path = "../util/out_targets.rs"]
mod out_targets;
#[path = "../util/repro.rs"]
mod repro;
#[path = "../util/running.rs"]
mod running;
#[path = "../util/runs.rs"]
mod runs;
#[path = "../util/schema.rs"]
mod schema;
#[path = "../util/tcp_proxy.rs"]
mod tcp_proxy;
#[path = "../util/mod.rs"]
mod util;

mod agents;
mod audit;
mod bug_world;
mod builds;
mod doctor;
mod explore;
mod explore_lifecycle;
mod inspect;
mod interrupts;
mod json_output;
mod kept_runs;
mod learners;
mod lifecycle;
mod lifecycle_checks;
mod matrix;
mod restore;
mod rke2;
mod rke2_faults;
mod run;
mod secrets;
mod teardown;
mod verify;
