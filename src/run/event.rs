//! What a run tells the world while it goes: [`RunEvent`]s, sent to receivers.
//!
//! The runner only emits; it never prints. The live display, the result recorder, `matrix`'s
//! line per run and `bisect`'s output are receivers. The recorder is told first and is the only
//! one that can fail (a results folder that cannot be written stops the run: exit 3).

use std::fmt;
use std::path::PathBuf;

use crate::exit::Exit;
use crate::result::{BootRecord, EnvInfo, Observation, Outcome, StepResult, Verdict};

use super::error::RunError;

/// What the run is doing now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Phase {
    LoadArchive(PathBuf),
    PrepareSimImage(String),
    /// Building the node image from release artifacts (`--artifacts`, or fetched): the image
    /// and the tarball it is built from.
    BuildNodeImage {
        image: String,
        tarball: PathBuf,
    },
    Pull(String),
    Create,
    /// Starting a group of nodes at once (cluster creation).
    Start(Vec<String>),
    Step {
        index: usize,
        total: usize,
        name: String,
    },
    Teardown,
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Phase::LoadArchive(p) => write!(f, "loading image archive {}", p.display()),
            Phase::PrepareSimImage(i) => write!(f, "preparing the k3s stand-in image {i}"),
            Phase::BuildNodeImage { image, tarball } => {
                write!(
                    f,
                    "building the node image {image} from {}",
                    tarball.display()
                )
            }
            Phase::Pull(i) => write!(f, "pulling {i}"),
            Phase::Create => f.write_str("creating the cluster"),
            Phase::Start(group) => write!(f, "starting {}", group.join(" + ")),
            Phase::Step { index, total, name } => write!(f, "step {index}/{total}: {name}"),
            Phase::Teardown => f.write_str("removing the cluster"),
        }
    }
}

/// A node's state as the display shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NodeState {
    Pulling,
    Created,
    Starting,
    Running,
    Ready,
    Dead,
    Timeout,
    /// Taken down by a step's `stop:`.
    Stopped,
}

impl NodeState {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            NodeState::Pulling => "pulling",
            NodeState::Created => "created",
            NodeState::Starting => "starting",
            NodeState::Running => "running",
            NodeState::Ready => "ready",
            NodeState::Dead => "dead",
            NodeState::Timeout => "timeout",
            NodeState::Stopped => "stopped",
        }
    }
}

/// How a run ended: what `execute` returns and [`RunEvent::Finished`] carries.
#[derive(Debug)]
pub(crate) struct RunEnd {
    /// What its verdict means against the outcome asked for (`Ok`, `OutcomeDiffers`,
    /// `Inconclusive`), or why the run failed before one (Docker, image, timeout, a write,
    /// Ctrl-C): the error is the failure, there is no code beside it.
    pub(crate) status: Result<Exit, RunError>,
    /// The results folder, if it could be created.
    pub(crate) dir: Option<PathBuf>,
    /// The verdict, if the run got that far.
    pub(crate) verdict: Option<Verdict>,
    pub(crate) seconds: f64,
    /// result.json as written last, if there is a results folder.
    pub(crate) result: Option<crate::result::RunResult>,
}

impl RunEnd {
    pub(crate) fn outcome(&self) -> Option<Outcome> {
        self.verdict.as_ref().map(|v| v.outcome)
    }

    /// Why the run failed, if it did.
    pub(crate) fn error(&self) -> Option<&RunError> {
        self.status.as_ref().err()
    }

    /// What the run means for the exit, failed or not.
    pub(crate) fn exit(&self) -> Exit {
        match &self.status {
            Ok(exit) => *exit,
            Err(e) => e.exit(),
        }
    }

    /// Why there is no verdict, or why it is inconclusive.
    pub(crate) fn why(&self) -> Option<String> {
        match (self.error(), &self.verdict) {
            (Some(e), _) => Some(e.to_string()),
            (None, Some(v)) if v.outcome == Outcome::Inconclusive => Some(v.reason.clone()),
            _ => None,
        }
    }
}

/// The run's conclusion, before reports are rendered (what the recorder writes last).
#[derive(Debug, Clone)]
pub(crate) struct Conclusion {
    pub(crate) boots: Vec<BootRecord>,
    pub(crate) verdict: Option<Verdict>,
    /// What result.json's `exit_code` says (from the run's error, or its verdict).
    pub(crate) exit: Exit,
    pub(crate) error: Option<String>,
    /// Why the run failed, when it did (result.json's `failure`).
    pub(crate) failure: Option<crate::result::FailCause>,
    pub(crate) teardown_secs: f64,
    pub(crate) total_secs: f64,
}

#[derive(Debug)]
pub(crate) enum RunEvent<'a> {
    /// The run has an id and a results folder.
    Started {
        run_id: String,
        check: String,
        k3s_version: String,
        image: String,
        dir: PathBuf,
    },
    /// The Docker engine answered; these are its facts.
    Engine(EnvInfo),
    Phase(Phase),
    /// A node's state changed; `boot` is its boot number (0 before its first start).
    Node {
        node: String,
        state: NodeState,
        boot: u32,
        detail: String,
    },
    /// The image is there.
    ImageReady {
        image_id: Option<String>,
        stand_in: bool,
        privileged: bool,
        /// The run's load-balancer seed, when the image is the stand-in.
        sim_seed: Option<u64>,
        seconds: f64,
    },
    /// Every node of the start order is ready.
    ClusterUp {
        boots: Vec<BootRecord>,
        seconds: f64,
        /// `k3s -v` as the first node answers it (None when it could not be asked).
        version_output: Option<String>,
    },
    /// One expectation of a step was observed.
    Observed {
        step: usize,
        observation: Observation,
    },
    StepDone {
        step: StepResult,
        boots: Vec<BootRecord>,
        seconds: f64,
    },
    /// A line worth keeping (how to inspect a kept cluster, a cleanup problem).
    Note(String),
    Concluded(Conclusion),
    /// The run is over; nothing follows.
    Finished(&'a RunEnd),
}

/// Something that wants to hear a run's events. Must not block: it is called on the run's path.
pub(crate) trait Receiver: Send + Sync {
    fn receive(&self, event: &RunEvent<'_>);
}

impl<F: Fn(&RunEvent<'_>) + Send + Sync> Receiver for F {
    fn receive(&self, event: &RunEvent<'_>) {
        self(event)
    }
}
