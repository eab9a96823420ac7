//! Everything `inspect` uses from the rest of repro, in one place.
//!
//! `inspect` judges old logs with the runner's own signal model and decision rules, so it
//! depends on them — but only through this file. When those modules move, only the paths here
//! change.

pub use crate::catalog::{find_root, Catalog};
pub(crate) use crate::diag::Diagnostic;
pub(crate) use crate::raw::{ConfigValue, Role};
pub(crate) use crate::redact::Redactor;
pub(crate) use crate::report::fence_for;
pub(crate) use crate::result::{Evidence, EvidenceSource, Observed, Rule};
pub(crate) use crate::results_folder::{self as folder, BUNDLE_FILE, NODES_DIR, RESULT_FILE};
pub(crate) use crate::run::observe::{eval_log, Eval, Settle};
pub(crate) use crate::run::shell_quote;
pub(crate) use crate::run::watch::{Boot, Ended as BootEnd, LogLine};
pub(crate) use crate::safe_fs;
pub use crate::scenario::{Expected, Signal, Signals, DEFAULT_SETTLE};
pub(crate) use distro::{ReleaseSet, Version};

/// Name of the signal whose `up` lines mean "the boot is ready" (the runner uses the same one to
/// wait for a boot, and value signals are decided once it is seen).
pub(crate) const READY_SIGNAL: &str = "ready";
/// Name of the value signal that reports the k3s version of a boot.
pub(crate) const VERSION_SIGNAL: &str = "version";
/// Name of the value signal that reports the server components a boot ran.
pub(crate) const ROLES_SIGNAL: &str = "roles";
