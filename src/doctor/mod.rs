//! What this host and its Docker engine can do for a run (`repro doctor`), each answer a
//! [`Line`]: ok, warn or fail, with the fix. The run asks the fast part ([`preflight`]) before
//! it creates a node, so a host that cannot run privileged nodes stops with the same line
//! instead of a cluster that never boots.
//!
//! Thresholds and their sources (docs/k3s-review-2026-12.md §10): memory per node is the
//! distribution's (`Facts::memory`, each with its source); the inotify numbers follow
//! public reports of k3s/k3d clusters failing at the common default of 128 instances (no k3s
//! source states a per-node number, so they are inferred and only warn).

use std::collections::HashMap;
use std::time::Duration;

use serde::Serialize;

use crate::docker::{self, DockerApi, NodeSpec};
use crate::raw::Role;
use distro::{Facts, Version};

mod budget;
mod engine;
mod host;
mod kernel;
mod limits;
mod report;
#[cfg(test)]
mod tests;
mod trial;

pub(crate) use budget::{claim as claim_inotify, Claim as InotifyClaim};
pub(crate) use engine::run_network_mtu;
pub(crate) use host::{inotify_in_use, is_local};
pub(crate) use limits::inotify_per_node;
pub(crate) use report::{Line, Status};

use report::first_line;

use engine::*;
use host::*;
use kernel::*;
use limits::*;
use trial::*;

/// What the doctor is asked about.
pub(crate) struct Request<'a> {
    pub(crate) facts: &'static Facts,
    pub(crate) version: Version,
    pub(crate) topology: &'a str,
    pub(crate) roles: Vec<Role>,
    /// The stand-in instead of real k3s.
    pub(crate) sim: bool,
    /// The image a run would use instead of the distribution's for the version (`--image`).
    pub(crate) image: Option<String>,
}

/// Every check, in the order a reader fixes them: the engine first (nothing else can be
/// asked without it), then what real k3s needs of it, then the host's limits.
pub(crate) async fn diagnose(req: &Request<'_>) -> Vec<Line> {
    let mut lines = vec![docker_host_line(&docker::endpoint())];
    let engine = match docker::connect().await {
        Ok(e) => e,
        Err(e) => {
            lines.push(Line::fail(
                "engine",
                first_line(&e.to_string()),
                "start Docker (`systemctl start docker`) or point DOCKER_HOST at a reachable engine",
            ));
            return lines;
        }
    };
    let env = engine.describe().await;
    // Now that the engine has said what it is, DOCKER_HOST's line can name it.
    lines[0] = docker_host_line_of(&docker::endpoint(), Some(engine.kind()));
    lines.push(Line::ok(
        "engine",
        format!(
            "{} {} (API {}) at {}",
            engine.kind().name(),
            env.docker_version.as_deref().unwrap_or("(version unknown)"),
            env.docker_api_version.as_deref().unwrap_or("?"),
            env.docker_host
        ),
    ));
    let local = is_local(&docker::endpoint());
    lines.push(image_store_line(
        env.storage_driver.as_deref(),
        env.containerd_store.unwrap_or(false),
    ));
    let host = local.then(host_route_mtu).flatten();
    lines.push(mtu_line(
        env.bridge_mtu,
        host.as_ref().map(|(i, m)| (i.as_str(), *m)),
        None,
    ));
    let image = req
        .image
        .clone()
        .unwrap_or_else(|| req.facts.image(&req.version));
    if req.sim {
        lines.push(Line::ok(
            "privileged",
            "not needed: the stand-in runs unprivileged (its image says io.repro.privileged=false)",
        ));
    } else {
        let trial = trial_image(&engine, &image, &req.version).await;
        lines.push(match trial {
            Ok(trial) => try_privileged(&engine, &trial, req.facts, &doctor_run_id()).await,
            Err(why) => Line::warn(
                "privileged",
                format!("not tried: {why}"),
                "build the stand-in (`make sim`) or pull the image, then run `repro doctor` again",
            ),
        });
    }
    let controllers = local
        .then(|| std::fs::read_to_string("/sys/fs/cgroup/cgroup.controllers").ok())
        .flatten();
    lines.push(cgroup_line(
        env.cgroup_version.as_deref(),
        env.cgroup_driver.as_deref(),
        controllers.as_deref(),
        req.sim,
    ));
    lines.extend(host_limits(&engine, req, &env, local).await);
    lines.push(image_line(&engine, req, &image).await);
    lines.push(kernel_config_line(&engine, req, &image).await);
    lines
}

/// The host's limits against what the topology needs: inotify, memory, disk (read only where
/// the engine is this machine, `local`).
async fn host_limits(
    engine: &docker::Engine,
    req: &Request<'_>,
    env: &crate::docker::EnvInfo,
    local: bool,
) -> Vec<Line> {
    let mut out = Vec::new();
    let nodes = req.roles.len() as u64;
    let inotify = |per_node: u64, watches: u64| {
        inotify_line(
            &Inotify {
                instances: read_number("/proc/sys/fs/inotify/max_user_instances"),
                watches: read_number("/proc/sys/fs/inotify/max_user_watches"),
                in_use: local.then(inotify_in_use).flatten(),
                claimed: if local { budget::claimed_now() } else { (0, 0) },
            },
            &InotifyNeed { per_node, watches },
            nodes,
            req.topology,
            local,
        )
    };
    if req.sim {
        out.push(match inotify_per_node(req.facts, true) {
            None => Line::ok(
                "inotify",
                "not needed: the stand-in runs no kubelet or containerd",
            ),
            // The stand-in of a unit distribution runs on systemd nodes, which hold inotify
            // instances of their own.
            Some(per_node) => inotify(per_node, 0),
        });
        out.push(Line::ok("memory", "the stand-in needs about 1 MiB a node"));
    } else {
        out.push(inotify(
            inotify_per_node(req.facts, false).unwrap_or(INOTIFY_INSTANCES_PER_NODE),
            INOTIFY_WATCHES,
        ));
        let need = memory_needed(req.facts, &req.roles);
        let available = local.then(mem_available_mib).flatten();
        out.push(memory_line(
            env.memory_bytes.map(|b| b.max(0) as u64 / (1 << 20)),
            available,
            need,
            req.topology,
            req.facts.memory.source,
        ));
    }
    if req.sim {
        out.push(Line::ok("disk", "the stand-in needs a few MiB a node"));
    } else if local {
        let dir = engine.root_dir().await;
        let free = dir.as_deref().and_then(disk_free_mib);
        out.push(disk_line(
            dir.as_deref(),
            free,
            req.facts.memory.disk_mib * nodes,
            nodes,
            req.topology,
        ));
    } else {
        out.push(Line::warn(
            "disk",
            "not read: the engine is remote, its disk is not this machine's",
            "run `repro doctor` on the engine's host",
        ));
    }
    out
}

/// The labels of the doctor's throwaway objects: repro's, of run `run_id` (removed by it, or
/// by `repro clean`), node `trial`.
fn trial_labels(run_id: &str) -> HashMap<String, String> {
    [
        (docker::LABEL_MANAGED, "true"),
        (docker::LABEL_RUN, run_id),
        (docker::LABEL_NODE, "trial"),
        (docker::owner::LABEL_OWNER, docker::owner::this_process()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// The fast part a run asks before it creates a node that needs privileges: a throwaway
/// privileged container of the run's own image. `Some` is the line the run stops with.
pub(crate) async fn preflight(
    docker: &dyn DockerApi,
    image: &str,
    facts: &Facts,
    run_id: &str,
) -> Option<Line> {
    let line = try_privileged(docker, image, facts, run_id).await;
    (line.status == Status::Fail).then_some(line)
}

/// The run id the doctor's throwaway objects are labelled with (`repro clean --run` finds
/// them if the doctor is killed mid-trial).
fn doctor_run_id() -> String {
    format!("doctor-{:08x}", rand::random::<u32>())
}
