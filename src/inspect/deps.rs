//! Everything `inspect` uses from the rest of repro, in one place.
//!
//! `inspect` judges old logs with the runner's own signal model and decision rules, so it
//! depends on them — but only through this file. When those modules move (the run path is being
//! split into `run/`, redaction into its own module), only the paths here change.

pub use crate::catalog::{find_root, Catalog};
pub use crate::model::{ConfigValue, Role};
pub use crate::observe::{eval_log, Eval};
pub use crate::report::Redactor;
pub use crate::result::Evidence;
pub use crate::scenario::{Signal, Signals, DEFAULT_SETTLE};
pub use crate::version::{K3sVersion, ReleaseSet};
pub use crate::watch::{Boot, BootEnd, LogLine};

/// Name of the signal whose `up` lines mean "the boot is ready" (the runner uses the same one to
/// wait for a boot, and value signals are decided once it is seen).
pub const READY_SIGNAL: &str = "ready";
/// Name of the value signal that reports the k3s version of a boot.
pub const VERSION_SIGNAL: &str = "version";
/// Name of the value signal that reports the server components a boot ran.
pub const ROLES_SIGNAL: &str = "roles";
