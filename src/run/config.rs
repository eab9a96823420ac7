//! What a run is asked to do, decided once before it starts: built from the command line by
//! `cli` (raw flags → this), or by hand (the benchmark). Nothing under `run/` reads flags.

use std::path::PathBuf;
use std::time::Duration;

use crate::plan::Plan;
use crate::result::Outcome;

pub(crate) use crate::target::Target;

/// The outcome that counts as success (exit 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expect {
    /// What the check's `fixed-in` predicts for the version (`repro plan` shows it); `fixed`
    /// when the check has no `fixed-in`.
    Auto,
    Outcome(Outcome),
}

impl Expect {
    /// The outcome asked for this plan, and why; an error (for the user) where `auto` cannot
    /// predict this version and `--expect` must say.
    pub(crate) fn resolve(self, plan: &Plan) -> Result<(Outcome, String), String> {
        match (self, plan.expected_verdict) {
            (Expect::Outcome(o), _) => Ok((o, "asked for with --expect".to_string())),
            (Expect::Auto, Some(o)) => Ok((o, plan.expected_because.clone())),
            (Expect::Auto, None) => Err(format!(
                "--expect auto cannot predict {} {}: {}",
                plan.check, plan.k3s_version, plan.expected_because
            )),
        }
    }
}

/// Whether node containers run privileged: `--privileged` as parsed (one type for the flag and
/// the run). `Auto`: privileged unless the image says it needs no privileges
/// (`io.repro.privileged=false`).
// No doc comments on the variants: clap would print them as a list in `--help`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Privileged {
    Auto,
    Always,
    Never,
}

/// Everything a run needs besides its scenario and plan.
#[derive(Debug, Clone)]
pub(crate) struct RunConfig {
    pub(crate) target: Target,
    /// The outcome that counts as success (exit 0).
    pub(crate) expect: Expect,
    /// How long one node may take to become ready (or die) after a start or restart.
    pub(crate) timeout: Duration,
    /// An explicit margin after settled-by lines (overrides the check's `settle:`).
    pub(crate) settle: Option<Duration>,
    /// Leave the cluster running afterwards.
    pub(crate) keep: bool,
    /// An image archive to load before the run.
    pub(crate) image_archive: Option<PathBuf>,
    /// Where the run's results folder goes.
    pub(crate) results: PathBuf,
    /// Rebuild the stand-in image even if it exists (with `target.sim`).
    pub(crate) rebuild_sim: bool,
    /// The stand-in's load-balancer seed of the run (`None`: drawn at random when the image is
    /// the stand-in); each node's is derived from it ([`crate::sim_image::node_seed`]).
    pub(crate) sim_seed: Option<u64>,
    pub(crate) privileged: Privileged,
    /// Try a privileged container before the first privileged node (`repro doctor`'s trial).
    pub(crate) host_check: bool,
    /// `--mtu`: the run network's MTU; `None`: the engine's (`doctor::run_network_mtu`).
    pub(crate) mtu: Option<u32>,
    /// The command line that started the run, as recorded in result.json.
    pub(crate) argv: Vec<String>,
    /// Restore the cluster from this slot's kept baseline instead of bringing it up fresh
    /// (`repro explore --restore`, src/run/baseline.rs).
    pub(crate) restore: Option<std::sync::Arc<super::baseline::Slot>>,
}
