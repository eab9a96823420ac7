//! Many runs: a check × version matrix (its cells, how they render, merging cells from results
//! folders made elsewhere) and the search of `repro bisect`. All pure over cells and files:
//! `cmd::matrix` and `cmd::bisect` run the cells.

pub mod bisect;
pub mod merge;
pub mod model;
pub mod render;

pub use model::{Cell, Status, Summary};
