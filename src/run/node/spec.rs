//! What a node's container is made of, whichever way it runs: its name and labels, its fixed
//! address and the hosts it knows, its data volume and the named volumes for the image's
//! `VOLUME`s, the environment the run gives it and the files it starts with.

use std::collections::HashMap;
use std::path::PathBuf;

use crate::docker::{self, NodeSpec};
use crate::node_spec::NodeContainer;
use crate::plan::{Plan, PlannedNode};
use distro::Facts;

use super::Process;

/// A node's container: `repro-<run id>-<node>`.
pub(crate) fn container_name(run_id: &str, node: &str) -> String {
    format!("repro-{run_id}-{node}")
}

/// The labels of an object of a run (a node's name it too): the teardown and `repro clean`
/// find everything by them, and `repro clean --orphans` its owner (`docker::owner`).
pub(crate) fn labels(run_id: &str, check: &str, node: Option<&str>) -> HashMap<String, String> {
    let mut l = HashMap::new();
    l.insert(docker::LABEL_MANAGED.to_string(), "true".to_string());
    l.insert(docker::LABEL_RUN.to_string(), run_id.to_string());
    l.insert(
        docker::owner::LABEL_OWNER.to_string(),
        docker::owner::this_process().to_string(),
    );
    l.insert(docker::LABEL_CHECK.to_string(), check.to_string());
    if let Some(n) = node {
        l.insert(docker::LABEL_NODE.to_string(), n.to_string());
    }
    l
}

/// What the runner needs of a build under test.
#[derive(Debug, Clone)]
pub(crate) struct BuildCopy {
    /// The file on the host.
    pub(crate) host: PathBuf,
    /// Where in each node it replaces the image's binary.
    pub(crate) path: String,
    /// The version it carries, which the nodes' `-v` must print.
    pub(crate) reported: String,
}

/// Where the plan's `i`-th node's container goes: the run's network and its /24's third octet.
pub(crate) struct Place<'a> {
    pub(crate) plan: &'a Plan,
    pub(crate) i: usize,
    pub(crate) net: &'a str,
    pub(crate) third: u8,
}

impl Place<'_> {
    /// The node's container `name` as `process` runs it, its data volume `volume` and the
    /// image's other volumes (`image_volume_mounts`), labelled `labels`.
    pub(crate) fn container(
        &self,
        name: &str,
        process: &Process,
        volumes: (String, Vec<(String, String)>),
        labels: HashMap<String, String>,
        privileged: bool,
    ) -> NodeSpec {
        let n = &self.plan.nodes[self.i];
        NodeContainer {
            facts: self.plan.distro.facts(),
            name,
            hostname: &n.name,
            image: &self.plan.image,
            process: (process.cmd.clone(), process.env.clone(), process.systemd),
            labels,
            network: self.net,
            ip: node_ip(self.third, self.i),
            hosts: (self.plan.nodes.iter().enumerate())
                .map(|(j, m)| format!("{}:{}", m.name, node_ip(self.third, j)))
                .collect(),
            volumes,
            privileged,
        }
        .spec()
    }

    /// The files written into the node before its first start: the plan's (those it has) and
    /// the way of running's (`process`).
    pub(crate) fn files(&self, process: &Process) -> Vec<(String, String)> {
        let n = &self.plan.nodes[self.i];
        let mut files: Vec<(String, String)> = self.plan.initial[&n.name]
            .iter()
            .filter_map(|(p, c)| c.clone().map(|c| (p.clone(), c)))
            .collect();
        files.extend(process.files.iter().cloned());
        files
    }
}

/// The node of `plan` at `address` (`host:port`; the host its name or its fixed address on
/// the run's network, whose third octet is `third` once it exists), if it is one.
pub(crate) fn node_at(plan: &Plan, third: Option<u8>, address: &str) -> Option<String> {
    let host = address.rsplit_once(':').map_or(address, |(h, _)| h);
    (plan.nodes.iter().enumerate())
        .find(|(i, n)| n.name == host || third.is_some_and(|t| node_ip(t, *i) == host))
        .map(|(_, n)| n.name.clone())
}

/// The environment the run gives a node: the token, the stand-in's seed for this node, the
/// topology's variables, `--sim-pace` and `--sim-plant`.
pub(crate) fn env(
    facts: &Facts,
    token: &str,
    sim_seed: Option<u64>,
    n: &PlannedNode,
    (pace, plant): (Option<f64>, Option<&str>),
) -> Vec<String> {
    let mut env = vec![format!("{}={}", facts.token_env, token)];
    if let Some(seed) = sim_seed {
        env.push(format!(
            "{}={}",
            crate::sim_image::SIM_SEED_ENV,
            crate::sim_image::node_seed(seed, &n.name)
        ));
    }
    env.extend(n.env.iter().map(|(k, v)| format!("{k}={v}")));
    if let Some(f) = pace {
        env.push(format!("{}={f}", distro::pace::PACE_ENV));
    }
    if let Some(name) = plant {
        env.push(format!("{}={name}", distro::plant::PLANT_ENV));
    }
    env
}

/// The fixed address of the plan's `i`-th node on the run's network of third octet `third`
/// (the plan: `docker/address.rs`).
pub(crate) fn node_ip(third: u8, i: usize) -> String {
    docker::address::node_ip(third, i)
}

/// A named volume (name, path) for each `VOLUME` the image declares (`declared`) that nothing
/// else covers — not the data dir (its own volume, kept across restarts) nor a tmpfs — named
/// after the container, its place in the list and the path (Docker allows `[a-zA-Z0-9_.-]`).
pub(crate) fn image_volume_mounts(
    container: &str,
    declared: &[String],
    data_dir: &str,
    systemd: bool,
) -> Vec<(String, String)> {
    let covered = |p: &str| p == data_dir || crate::docker::tmpfs_paths(systemd).contains(&p);
    let mut paths: Vec<&str> = declared
        .iter()
        .map(|p| match p.trim_end_matches('/') {
            "" => "/",
            t => t,
        })
        .filter(|p| !covered(p))
        .collect();
    paths.sort_unstable();
    paths.dedup();
    paths
        .into_iter()
        .enumerate()
        .map(|(k, p)| {
            let slug: String = p
                .trim_start_matches('/')
                .chars()
                .map(|c| match c {
                    'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '.' | '-' => c,
                    _ => '-',
                })
                .collect();
            (format!("{container}-vol{k}-{slug}"), p.to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_image_volume_but_the_data_dir_and_tmpfs_gets_a_named_one() {
        let declared: Vec<String> = [
            "/var/lib/kubelet",
            "/var/lib/rancher/k3s",
            "/var/lib/cni/",
            "/var/log",
            "/run",
            "/data dir/x",
            "/var/log",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            image_volume_mounts(
                "repro-ab12-etcd-1",
                &declared,
                "/var/lib/rancher/k3s",
                false
            ),
            vec![
                (
                    "repro-ab12-etcd-1-vol0-data-dir-x".into(),
                    "/data dir/x".into()
                ),
                (
                    "repro-ab12-etcd-1-vol1-var-lib-cni".into(),
                    "/var/lib/cni".into()
                ),
                (
                    "repro-ab12-etcd-1-vol2-var-lib-kubelet".into(),
                    "/var/lib/kubelet".into()
                ),
                ("repro-ab12-etcd-1-vol3-var-log".into(), "/var/log".into()),
            ]
        );
        assert!(image_volume_mounts("c", &[], "/d", false).is_empty());
    }
}
