//! What a run is asked to do, decided once before it starts: built from the command line by
//! `cli` (raw flags → this), or by hand (the benchmark). Nothing under `run/` reads flags.

use std::path::PathBuf;
use std::time::Duration;

use crate::plan::Plan;
use crate::result::Outcome;

/// What to run: a check, on which topology, k3s version and image.
#[derive(Debug, Clone)]
pub struct Target {
    /// A check name from the catalog, or a path to a check file.
    pub check: String,
    /// A topology to use instead of the check's own.
    pub topology: Option<String>,
    /// The k3s version (default: the topology's).
    pub k3s_version: Option<String>,
    /// An image to run instead of `rancher/k3s:<version>`.
    pub image: Option<String>,
    /// Run repro's k3s stand-in image for the version.
    pub sim: bool,
}

/// The outcome that counts as success (exit 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// What the check's `fixed-in` predicts for the version (`repro plan` shows it); `fixed`
    /// when the check has no `fixed-in`.
    Auto,
    Outcome(Outcome),
}

impl Expect {
    /// The outcome asked for this plan, and why.
    pub fn resolve(self, plan: &Plan) -> (Outcome, String) {
        match (self, plan.expected_verdict) {
            (Expect::Outcome(o), _) => (o, "asked for with --expect".to_string()),
            (Expect::Auto, Some(o)) => (o, plan.expected_because.clone()),
            (Expect::Auto, None) => (
                Outcome::Fixed,
                "the check's fixed-in does not predict this version: the correct behaviour is expected"
                    .to_string(),
            ),
        }
    }
}

/// Whether node containers run privileged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Privileged {
    /// Privileged unless the image says it needs no privileges (`io.repro.privileged=false`).
    Auto,
    Always,
    Never,
}

/// Everything a run needs besides its scenario and plan.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub target: Target,
    /// The outcome that counts as success (exit 0).
    pub expect: Expect,
    /// How long one node may take to become ready (or die) after a start or restart.
    pub timeout: Duration,
    /// An explicit margin after settled-by lines (overrides the check's `settle:`).
    pub settle: Option<Duration>,
    /// Leave the cluster running afterwards.
    pub keep: bool,
    /// An image archive to load before the run.
    pub image_archive: Option<PathBuf>,
    /// Where the run's results folder goes.
    pub results: PathBuf,
    /// Rebuild the stand-in image even if it exists (with `target.sim`).
    pub rebuild_sim: bool,
    pub privileged: Privileged,
    /// The command line that started the run, as recorded in result.json.
    pub argv: Vec<String>,
}
