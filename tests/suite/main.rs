//! Every integration test that needs no Docker engine, in one binary: the CLI and its snapshots
//! (`snapshots/`), validation, plans, reports, `inspect`, merge plans, the nightly's scripts and
//! workflow, the real-k3s corpus, the browser test of timeline.html and the stable fuzz loop.
//! It runs anywhere `cargo test` does, in seconds to a few minutes; the Docker-backed tests are
//! in `tests/e2e/`, the fault injection in `tests/faults/`.

#[path = "../util/fixtures.rs"]
mod fixtures;
#[path = "../util/http_files.rs"]
mod http_files;
#[path = "../util/junit.rs"]
mod junit;
#[path = "../util/out_targets.rs"]
mod out_targets;
#[path = "../util/raw_tar.rs"]
mod raw_tar;
#[path = "../util/repro.rs"]
mod repro;
#[path = "../util/schema.rs"]
mod schema;
#[path = "../util/mod.rs"]
mod util;
#[macro_use]
mod snap;

mod audit;
mod bug_world;
mod builds;
mod cli;
mod doc_links;
mod docs_cli;
mod explore_cells;
mod explore_checks;
mod explore_plan;
mod facts_in_data;
mod fn_length;
mod fuzz_stable;
mod hardening;
mod hostile_files;
mod inspect;
mod installed;
mod json_cli;
mod junit_ci;
mod layers;
mod merge_plan;
mod nightly;
mod real_k3s;
mod real_logs;
mod real_rke2;
mod report_cli;
mod rke2;
mod rke2_fetch;
mod runs_cli;
mod secrets_cli;
mod timeline_browser;
mod validation_cli;
mod workflow;
