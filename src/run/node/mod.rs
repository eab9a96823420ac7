//! How a node runs its distribution, one file per way (`distro::NodeProcess`), behind one trait:
//! the container's own process (`container.rs`: k3s; its log is the container's) or a systemd
//! unit under systemd as PID 1 (`systemd.rs`: RKE2; its boots are read from the journal,
//! `journal.rs`). [`of`] is the one place the way is chosen, from the distribution's facts;
//! the cluster (`cluster.rs`) holds only what both share and asks the way for the rest.

mod container;
mod journal;
pub(crate) mod spec;
mod systemd;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use regex::Regex;

use crate::docker::DockerApi;
use crate::raw::Role;
use distro::{Facts, NodeProcess};

use super::emit::Events;
use super::error::RunError;
use super::event::{NodeState, RunEvent};
use super::in_flight::InFlight;
use super::watch::{BootHandle, OnLine, Scrub};

pub(crate) use crate::node_spec::STOP_GRACE;

/// The way a node of `facts`'s distribution runs: the one match on `NodeProcess` outside the
/// facts (the rest of repro asks the facts: `NodeProcess::systemd_pid1`,
/// `Facts::unit_env_file`).
pub(crate) fn of(facts: &Facts) -> &'static dyn Mechanism {
    match facts.node_process {
        NodeProcess::Container => &container::ContainerProcess,
        NodeProcess::SystemdUnit { .. } => &systemd::SystemdUnit,
    }
}

/// What a node's container runs, as its way of running makes it.
pub(crate) struct Process {
    /// The container's command (after the image's entrypoint).
    pub(crate) cmd: Vec<String>,
    /// The container's environment.
    pub(crate) env: Vec<String>,
    /// Files written into the node before its first start, besides the plan's.
    pub(crate) files: Vec<(String, String)>,
    /// systemd is the container's PID 1 (its tmpfs mounts and cgroup differ: `NodeSpec`).
    pub(crate) systemd: bool,
}

/// One node as a way of running it sees it: the engine, its container and whether repro is
/// stopping it (so its exit is no death).
pub(crate) struct Node<'a> {
    pub(crate) docker: &'a Arc<dyn DockerApi>,
    pub(crate) name: &'a str,
    pub(crate) container: &'a str,
    pub(crate) stopping: &'a Arc<AtomicBool>,
    /// The run's calls in flight: a container start is one the teardown waits for.
    pub(crate) calls: &'a InFlight,
    /// Its current (last started) boot.
    pub(crate) current: Option<BootHandle>,
}

impl Node<'_> {
    /// Starts the node's container, as a call the teardown waits for before it removes
    /// anything: the start attaches the container to the run's network, and a removal racing
    /// it is what can leave the network with an endpoint no container owns (`InFlight`).
    pub(crate) async fn start_container(&self) -> Result<(), RunError> {
        let (docker, container) = (self.docker.clone(), self.container.to_string());
        self.calls
            .run(async move { Ok(docker.start(&container).await?) })
            .await
    }
}

/// A boot about to start: what its follower needs whatever the log's source.
pub(crate) struct Boot {
    pub(crate) number: u32,
    pub(crate) step: usize,
    /// Lines that say the boot is ready.
    pub(crate) ready: Vec<Regex>,
    /// Where the boot's own log is written.
    pub(crate) log_path: PathBuf,
    pub(crate) on_line: OnLine,
    pub(crate) scrub: Scrub,
    /// The node's role is an agent's (a unit distribution runs another unit for it).
    pub(crate) agent: bool,
    /// How long a start may take before the node counts as not started.
    pub(crate) timeout: Duration,
}

/// What the live display learns from a boot's lines: ready, or running with errors.
pub(crate) fn live_states(events: Events, node: &str, number: u32, ready: Vec<Regex>) -> OnLine {
    let name = node.to_string();
    Arc::new(move |_c, l| {
        let state = if ready.iter().any(|r| r.is_match(&l.text)) {
            NodeState::Ready
        } else if l.text.contains("level=fatal") || l.text.contains("level=error") {
            NodeState::Running
        } else {
            return;
        };
        events.show(&RunEvent::Node {
            node: name.clone(),
            state,
            boot: number,
            detail: l.text.clone(),
        });
    })
}

/// A boot being started: its handle, and what the live display says of the start.
pub(crate) type Started<'a> = BoxFuture<'a, Result<(BootHandle, &'static str), RunError>>;

/// A way of running a node: container process or systemd unit.
pub(crate) trait Mechanism: Send + Sync {
    /// What the node's container runs: `args` are the distribution's for the node's role, `env`
    /// what the run gives the node (token, seeds, the topology's).
    fn process(&self, facts: &Facts, role: Role, args: &[&str], env: Vec<String>) -> Process;

    /// Starts the node's next boot (`node.current` is the previous one) and follows its log
    /// from the boot's first line. The text is what the live display says of the start.
    fn start<'a>(&'a self, facts: &'static Facts, node: Node<'a>, boot: Boot) -> Started<'a>;

    /// The first half of a restart: the node's current boot (if running) stopped and its log
    /// drained. Every node of a restart group is stopped before any starts again.
    fn stop_for_restart<'a>(
        &'a self,
        facts: &'static Facts,
        node: Node<'a>,
        agent: bool,
    ) -> BoxFuture<'a, Result<(), RunError>>;

    /// How a person reads the node's log afterwards (`repro runs logs`, on a kept cluster):
    /// `None` is the container's own log; else the command to run in the node, whose output is
    /// the log (`follow`: it goes on until interrupted).
    fn log_command(&self, facts: &Facts, agent: bool, follow: bool) -> Option<Vec<String>>;
}

/// How to read the log of a node of `facts`'s distribution and `role`, by the way it runs
/// ([`Mechanism::log_command`]): what `repro runs logs` asks the engine for.
pub(crate) fn log_command(facts: &Facts, role: Role, follow: bool) -> Option<Vec<String>> {
    of(facts).log_command(facts, role == Role::Agent, follow)
}
