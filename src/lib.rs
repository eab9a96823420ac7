//! `repro`: reproduce k3s configuration-order bugs on real k3s containers.

pub mod catalog;
pub mod cli;
pub mod cmd;
pub mod diag;
pub mod exit;
pub mod load;
pub mod model;
pub mod plan;
pub mod report;
pub mod result;
pub mod scenario;
pub mod version;
