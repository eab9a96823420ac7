//! How a node's container is made (#39): the one builder of the [`NodeSpec`] a run creates for
//! each node (`run::node::spec::Place::container`) and the doctor's privileged trial creates
//! for its throwaway node, so the trial asks the engine for the container a run would ask
//! for — its mounts, data volume, stop signal and grace, systemd's tmpfs — not a lookalike.
//! It sits below both (the doctor is below the run): what it needs is given, not looked up.

use std::collections::HashMap;
use std::time::Duration;

use crate::docker::NodeSpec;
use distro::Facts;

/// How long `docker stop` lets the distribution shut down before it is killed. The shipped k3s
/// tags, as PID 1, exit at once on SIGTERM (the stop takes no grace); releases with k3s's PID-1
/// signal fix (v1.32.10+, v1.34.2+) stop etcd and kine first, which this leaves room for.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(20);

/// One node's container, as its caller knows it.
pub(crate) struct NodeContainer<'a> {
    /// The distribution: where its data volume goes, how it is stopped.
    pub(crate) facts: &'a Facts,
    pub(crate) name: &'a str,
    pub(crate) hostname: &'a str,
    pub(crate) image: &'a str,
    /// The command after the image's entrypoint and the environment (the way of running's), and
    /// whether systemd is PID 1 (its tmpfs mounts and cgroup differ: `NodeSpec::systemd`).
    pub(crate) process: (Vec<String>, Vec<String>, bool),
    pub(crate) labels: HashMap<String, String>,
    /// The network, the node's fixed address on it, and `name:ip` of every node it may reach.
    pub(crate) network: &'a str,
    pub(crate) ip: String,
    pub(crate) hosts: Vec<String>,
    /// The data volume (at the distribution's data dir) and the named volumes (name, path) over
    /// the image's other `VOLUME`s.
    pub(crate) volumes: (String, Vec<(String, String)>),
    pub(crate) privileged: bool,
}

impl NodeContainer<'_> {
    pub(crate) fn spec(self) -> NodeSpec {
        let (cmd, env, systemd) = self.process;
        NodeSpec {
            name: self.name.to_string(),
            hostname: self.hostname.to_string(),
            image: self.image.to_string(),
            cmd,
            env,
            labels: self.labels,
            network: self.network.to_string(),
            ip: self.ip,
            extra_hosts: self.hosts,
            data_volume: self.volumes.0,
            data_dir: self.facts.data_dir.to_string(),
            image_volumes: self.volumes.1,
            privileged: self.privileged,
            stop_grace: STOP_GRACE,
            stop_signal: self.facts.stop_signal.to_string(),
            systemd,
            // Only the doctor's check-config helper reads the host's paths; a node gets none.
            host_ro: vec![],
        }
    }
}
