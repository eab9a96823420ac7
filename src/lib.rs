//! `repro`: reproduce k3s configuration-order bugs on real k3s containers.

pub mod bisect;
pub mod catalog;
pub mod channels;
pub mod cli;
pub mod cmd;
pub mod diag;
pub mod docker;
pub mod exit;
pub mod inspect;
pub mod load;
pub mod matrix;
pub mod merge;
pub mod model;
pub mod observe;
pub mod plan;
pub mod progress;
pub mod releases;
pub mod report;
pub mod result;
pub mod run;
pub mod scenario;
pub mod sim_image;
pub mod verdict;
pub mod version;
pub mod watch;
