//! Many runs: a check × version matrix (its cells, how they render, merging cells from results
//! folders made elsewhere, running them: `batch.rs`) and `repro bisect` (the search in
//! `bisect.rs`, its runs in `bisector.rs`), how many runs go at once (`jobs.rs`), a matrix settled
//! before Docker (`planning.rs`: its checks, versions, cells and their expected verdicts). `cmd::matrix`
//! and `cmd::bisect` parse the flags and print.

pub(crate) mod batch;
pub(crate) mod bisect;
pub(crate) mod bisector;
pub(crate) mod jobs;
pub(crate) mod merge;
pub(crate) mod model;
pub(crate) mod planning;
pub(crate) mod render;

pub(crate) use model::{Cell, Status, Summary};
