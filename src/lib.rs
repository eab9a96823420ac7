//! `repro`: reproduce k3s configuration-order bugs on real k3s containers.
//!
//! The flow, as folders: load (`catalog`, `load/`, `raw/` → `scenario`) → `plan` → `run/`
//! (cluster → steps → observe → verdict) → `report/`. `matrix/` builds many runs on `run`;
//! `cmd/` holds one module per subcommand and `cli` the flags.

#![deny(clippy::print_stdout, clippy::print_stderr)]

// First, so its macros (`outln!`, `errln!`...) are in scope in every module below.
#[macro_use]
pub mod term;
mod archive;
mod audit;
mod bug_world;
mod build_file;
mod builds;
mod catalog;
mod channels;
pub mod cli;
pub mod cmd;
mod diag;
pub mod docker;
mod doctor;
pub mod error;
pub mod exit;
mod explore;
mod flags;
#[doc(hidden)]
pub mod fuzzing;
pub mod help;
pub mod inspect;
pub mod load;
mod matrix;
mod nightly;
mod node_spec;
mod outcome;
mod plan;
mod progress;
mod raw;
mod redact;
mod releases;
mod report;
mod result;
mod results_folder;
pub mod run;
mod safe_fs;
pub mod scenario;
pub mod sim_image;
pub(crate) mod sim_node_image;
mod start_order;
mod table;
mod target;
