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

/// inotify instances a node of real k3s may hold (kubelet/cAdvisor, containerd and its shims):
/// 128 is reported to run out at 4–5 nodes, 256 to suffice for them, so twice the ~30 a node
/// was seen to use (inferred).
const INOTIFY_INSTANCES_PER_NODE: u64 = 64;
/// inotify watches k3d's maintainer runs clusters with (k3d #968).
const INOTIFY_WATCHES: u64 = 262_144;
/// inotify instances a systemd node (a distribution that runs as a unit: RKE2, its stand-in
/// too) holds with nothing else running: systemd as PID 1, journald, logind, udevd and the
/// unit's own — 8 to 10 measured by #30's campaign, where four RKE2 stand-in runs of three
/// nodes exhausted the default 128. All of a host's containers count against root's limit.
pub(crate) const INOTIFY_INSTANCES_SYSTEMD_NODE: u64 = 10;

/// inotify instances one node of `facts` holds: the kubelet's and containerd's for a real
/// node, systemd's for a node that runs the distribution as a unit; `None` for the stand-in of
/// a distribution that runs as PID 1 (it opens none).
pub(crate) fn inotify_per_node(facts: &Facts, sim: bool) -> Option<u64> {
    let systemd = if facts.node_process.systemd_pid1() {
        INOTIFY_INSTANCES_SYSTEMD_NODE
    } else {
        0
    };
    match (sim, systemd) {
        (true, 0) => None,
        (true, s) => Some(s),
        (false, s) => Some(INOTIFY_INSTANCES_PER_NODE + s),
    }
}

/// inotify instances root's processes hold now (every fd that is `anon_inode:inotify`): the
/// other runs and containers of this host already use part of the limit. `None` when /proc
/// cannot be read.
pub(crate) fn inotify_in_use() -> Option<u64> {
    let mut n = 0;
    for p in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = p.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let owned_by_root = {
            use std::os::unix::fs::MetadataExt;
            p.metadata().is_ok_and(|m| m.uid() == 0)
        };
        if !owned_by_root {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else {
            continue;
        };
        n += fds
            .flatten()
            .filter(|fd| {
                std::fs::read_link(fd.path()).is_ok_and(|t| t.as_os_str() == "anon_inode:inotify")
            })
            .count() as u64;
    }
    Some(n)
}
/// cgroup v2 controllers the kubelet needs delegated to the containers.
const CGROUP_V2_CONTROLLERS: &[&str] = &["cpuset", "cpu", "io", "memory", "pids"];
/// How long the privileged trial may take: creating and starting a container is a second.
const TRIAL_TIMEOUT: Duration = Duration::from_secs(60);

/// How one check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Status {
    Ok,
    Warn,
    Fail,
}

impl Status {
    pub(crate) fn word(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "FAIL",
        }
    }
}

/// One answer: what was checked, how it came out, what was seen and, unless ok, what to do.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Line {
    pub(crate) check: &'static str,
    pub(crate) status: Status,
    pub(crate) detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) fix: Option<String>,
}

impl Line {
    fn ok(check: &'static str, detail: impl Into<String>) -> Line {
        Line {
            check,
            status: Status::Ok,
            detail: detail.into(),
            fix: None,
        }
    }

    fn warn(check: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Line {
        Line {
            check,
            status: Status::Warn,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    fn fail(check: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Line {
        Line {
            check,
            status: Status::Fail,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    /// The line as the run's error and the doctor's text print it.
    pub(crate) fn text(&self) -> String {
        let mut s = format!("{} {}: {}", self.status.word(), self.check, self.detail);
        if let Some(fix) = &self.fix {
            s.push_str(&format!("\n  help: {fix}"));
        }
        s
    }
}

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
    let engine = match docker::Engine::connect().await {
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
    let nodes = req.roles.len() as u64;
    let inotify = |per_node: u64, watches: u64| {
        inotify_line(
            &Inotify {
                instances: read_number("/proc/sys/fs/inotify/max_user_instances"),
                watches: read_number("/proc/sys/fs/inotify/max_user_watches"),
                in_use: local.then(inotify_in_use).flatten(),
            },
            &InotifyNeed { per_node, watches },
            nodes,
            req.topology,
            local,
        )
    };
    if req.sim {
        lines.push(match inotify_per_node(req.facts, true) {
            None => Line::ok(
                "inotify",
                "not needed: the stand-in runs no kubelet or containerd",
            ),
            // The stand-in of a unit distribution runs on systemd nodes, which hold inotify
            // instances of their own.
            Some(per_node) => inotify(per_node, 0),
        });
        lines.push(Line::ok("memory", "the stand-in needs about 1 MiB a node"));
    } else {
        lines.push(inotify(
            inotify_per_node(req.facts, false).unwrap_or(INOTIFY_INSTANCES_PER_NODE),
            INOTIFY_WATCHES,
        ));
        let need = memory_needed(req.facts, &req.roles);
        let available = local.then(mem_available_mib).flatten();
        lines.push(memory_line(
            env.memory_bytes.map(|b| b.max(0) as u64 / (1 << 20)),
            available,
            need,
            req.topology,
            req.facts.memory.source,
        ));
    }
    if req.sim {
        lines.push(Line::ok("disk", "the stand-in needs a few MiB a node"));
    } else if local {
        let dir = engine.root_dir().await;
        let free = dir.as_deref().and_then(disk_free_mib);
        lines.push(disk_line(
            dir.as_deref(),
            free,
            req.facts.memory.disk_mib * nodes,
            nodes,
            req.topology,
        ));
    } else {
        lines.push(Line::warn(
            "disk",
            "not read: the engine is remote, its disk is not this machine's",
            "run `repro doctor` on the engine's host",
        ));
    }
    lines.push(image_line(&engine, req, &image).await);
    lines.push(kernel_config_line(&engine, req, &image).await);
    lines
}

/// Free and total MiB of the filesystem holding `dir`, from `df -Pk` (POSIX output).
fn disk_free_mib(dir: &str) -> Option<(u64, u64)> {
    let out = std::process::Command::new("df")
        .args(["-Pk", dir])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    parse_df(&String::from_utf8_lossy(&out.stdout))
}

/// `Filesystem 1024-blocks Used Available Capacity Mounted on`, then one line: (free, total).
fn parse_df(text: &str) -> Option<(u64, u64)> {
    let line = text.lines().nth(1)?;
    let cols: Vec<&str> = line.split_whitespace().collect();
    let total: u64 = cols.get(1)?.parse().ok()?;
    let free: u64 = cols.get(3)?.parse().ok()?;
    Some((free / 1024, total / 1024))
}

/// The kubelet k3s runs evicts pods below this free share (k3s's own kubelet flag
/// `--eviction-hard=imagefs.available<5%,nodefs.available<5%`, pkg/daemons/agent).
const EVICTION_FREE_PERCENT: u64 = 5;

fn disk_line(
    dir: Option<&str>,
    free: Option<(u64, u64)>,
    need: u64,
    nodes: u64,
    topology: &str,
) -> Line {
    let why = format!(
        "the {nodes} nodes of {topology} take about {need} MiB (data dir, etcd, containerd; an estimate)"
    );
    let (Some(dir), Some((free, total))) = (dir, free) else {
        return Line::warn(
            "disk",
            format!(
                "could not read the free space of the engine's data root{}; {why}",
                dir.map(|d| format!(" {d}")).unwrap_or_default()
            ),
            "check `docker info` (Docker Root Dir) and `df -h` on it",
        );
    };
    if free < need {
        return Line::fail(
            "disk",
            format!("{free} MiB free at {dir}; {why}"),
            "free space there (`docker system df`, remove unused images and volumes), or run the stand-in with --sim",
        );
    }
    let left = free - need;
    if total > 0 && left * 100 < total * EVICTION_FREE_PERCENT {
        return Line::warn(
            "disk",
            format!("{free} MiB free at {dir}; {why}, leaving {left} MiB, under the {EVICTION_FREE_PERCENT}% the kubelet keeps free (it evicts pods and reports DiskPressure below it)"),
            "free space there (`docker system df`) before a real run",
        );
    }
    Line::ok("disk", format!("{free} MiB free at {dir}; {why}"))
}

/// `k3s check-config` (the kernel check k3s ships, contrib/util/check-config.sh) run in a
/// throwaway container of the target image: the script reads the host kernel's config
/// (/proc/config.gz, /boot/config-$(uname -r), /lib/modules/$(uname -r)/…), so /boot and
/// /lib/modules are mounted read-only. Skipped, with a warn line saying why, where it cannot
/// say anything about real k3s.
async fn kernel_config_line(docker: &dyn DockerApi, req: &Request<'_>, image: &str) -> Line {
    let Some(args) = req.facts.check_config_args else {
        return Line::warn(
            "kernel-config",
            format!(
                "skipped: {} has no check-config subcommand (its CLI has none)",
                req.facts.name
            ),
            "check the kernel by hand with k3s's contrib/util/check-config.sh (rke2 needs the same kernel features)",
        );
    };
    let command = format!(
        "docker run --rm -v /boot:/boot:ro -v /lib/modules:/lib/modules:ro {image} {}",
        args.join(" ")
    );
    if req.sim {
        return Line::warn(
            "kernel-config",
            format!(
                "skipped: the stand-in has no `{} check-config`; real {} checks the kernel with it",
                req.facts.binary, req.facts.name
            ),
            format!("before a real run: `repro doctor` without --sim, or `{command}`"),
        );
    }
    match docker.image(image).await {
        None => Line::warn(
            "kernel-config",
            format!(
                "skipped: {image} is not here, and `{} check-config` runs inside it",
                req.facts.binary
            ),
            format!("pull the image (or load it with --image-archive), then `{command}`"),
        ),
        Some(info)
            if info
                .labels
                .get(crate::sim_image::SIM_LABEL)
                .is_some_and(|v| v == "true") =>
        {
            Line::warn(
                "kernel-config",
                format!(
                    "skipped: {image} is repro's stand-in, which has no `{} check-config`",
                    req.facts.binary
                ),
                format!("with the real image: `{command}`"),
            )
        }
        Some(_) => {
            let run_id = doctor_run_id();
            let ran = run_check_config(docker, image, args, &run_id).await;
            let removed = docker
                .remove_labelled(docker::LABEL_RUN, Some(&run_id))
                .await;
            let mut line = match ran {
                Ok((code, output)) => check_config_verdict(&parse_check_config(&output), code, req.facts.binary, &command),
                Err(why) => Line::warn(
                    "kernel-config",
                    format!("could not run `{} check-config` in {image}: {why}", req.facts.binary),
                    format!("run it by hand: `{command}` (it ends with `STATUS: pass` when the kernel has what {} needs)", req.facts.name),
                ),
            };
            if !removed.complete {
                line.detail.push_str(&format!(
                    " (its container may be left: `repro clean --run {run_id}`)"
                ));
            }
            line
        }
    }
}

/// Host folders check-config.sh reads the kernel config and modules from.
const KERNEL_CONFIG_DIRS: &[&str] = &["/boot", "/lib/modules"];

/// Creates, starts and reads to its end one unprivileged container running `args` (the
/// image's entrypoint is the distribution's binary): its exit code and output, within
/// [`TRIAL_TIMEOUT`]. The caller removes everything labelled with `run_id`.
async fn run_check_config(
    docker: &dyn DockerApi,
    image: &str,
    args: &[&str],
    run_id: &str,
) -> Result<(i64, String), String> {
    use futures_util::StreamExt;
    let labels: HashMap<String, String> = [
        (docker::LABEL_MANAGED, "true"),
        (docker::LABEL_RUN, run_id),
        (docker::LABEL_NODE, "trial"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let net = format!("repro-{run_id}-trial");
    let name = format!("repro-{run_id}-check-config");
    let work = async {
        let subnet = docker
            .create_network(&net, &labels, None)
            .await
            .map_err(|e| first_line(&e.to_string()))?;
        docker
            .create_volume(&name, &labels)
            .await
            .map_err(|e| first_line(&e.to_string()))?;
        let spec = NodeSpec {
            name: name.clone(),
            hostname: "check-config".into(),
            image: image.to_string(),
            cmd: args.iter().map(|a| a.to_string()).collect(),
            env: vec![],
            labels: labels.clone(),
            network: net.clone(),
            ip: format!("10.213.{subnet}.2"),
            extra_hosts: vec![],
            // It extracts k3s's data dir first (under /var/lib/rancher/k3s): a throwaway volume.
            data_volume: name.clone(),
            data_dir: "/var/lib/rancher".into(),
            image_volumes: vec![],
            // It reads the kernel config; it needs no privileges for that.
            privileged: false,
            stop_grace: Duration::from_secs(1),
            systemd: false,
            // A folder the host lacks is not mounted: Docker would create it on the host.
            host_ro: KERNEL_CONFIG_DIRS
                .iter()
                .filter(|d| std::path::Path::new(d).is_dir())
                .map(|d| d.to_string())
                .collect(),
        };
        docker
            .create_node(&spec)
            .await
            .map_err(|e| first_line(&e.to_string()))?;
        docker
            .start(&name)
            .await
            .map_err(|e| first_line(&e.to_string()))?;
        // The log stream ends when the container stops.
        let mut output = String::new();
        let mut logs = docker.follow_logs(&name, 0);
        while let Some(chunk) = logs.next().await {
            match chunk {
                Ok(c) => output.push_str(&String::from_utf8_lossy(&c.bytes)),
                Err(e) => return Err(first_line(&e.to_string())),
            }
        }
        let state = docker
            .state(&name)
            .await
            .map_err(|e| first_line(&e.to_string()))?;
        Ok((state.exit_code.unwrap_or(-1), untimestamped(&output)))
    };
    match tokio::time::timeout(TRIAL_TIMEOUT, work).await {
        Ok(r) => r,
        Err(_) => Err(format!(
            "it did not finish within {}s",
            TRIAL_TIMEOUT.as_secs()
        )),
    }
}

/// The log without the engine's timestamp before each line (`follow_logs` asks for them).
fn untimestamped(log: &str) -> String {
    log.lines()
        .map(|l| match l.split_once(' ') {
            Some((ts, rest)) if ts.len() >= 20 && ts.ends_with('Z') && ts.as_bytes()[4] == b'-' => {
                rest
            }
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What check-config.sh printed, by section.
#[derive(Debug, Default, PartialEq, Eq)]
struct CheckConfig {
    /// `STATUS: pass` (true), `STATUS: N (fail)` (false), or no STATUS line.
    pass: Option<bool>,
    /// How many `- NAME: …` lines it printed under the kernel sections.
    checked: usize,
    /// Missing under "Generally Necessary:" (`- CONFIG_X: missing (fail)`).
    necessary: Vec<String>,
    /// Missing under "Optional Features:" (`- CONFIG_X: missing`).
    optional: Vec<String>,
    /// The last line that is not blank: what a run that found no config ends with.
    last: String,
}

#[derive(PartialEq)]
enum Section {
    Other,
    Necessary,
    Optional,
}

/// Reads check-config.sh's output (contrib/util/check-config.sh: `wrap_good`/`wrap_bad` print
/// `NAME: value`, coloured; lines under a section start `- `).
fn parse_check_config(text: &str) -> CheckConfig {
    let mut out = CheckConfig::default();
    let mut section = Section::Other;
    for raw in text.lines() {
        let line = strip_ansi(raw);
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        out.last = line.to_string();
        if line.starts_with("Generally Necessary:") {
            section = Section::Necessary;
        } else if line.starts_with("Optional Features:") {
            section = Section::Optional;
        } else if let Some(v) = line.strip_prefix("STATUS:") {
            out.pass = Some(v.trim() == "pass");
            section = Section::Other;
        } else if let Some(item) = line.strip_prefix("- ") {
            if section == Section::Other {
                continue;
            }
            let Some((name, value)) = item.split_once(": ") else {
                continue;
            };
            out.checked += 1;
            let bad = value.starts_with("missing") || value.contains("(fail)");
            match section {
                Section::Necessary if bad => out.necessary.push(name.to_string()),
                // Optional lines never say "(fail)" (the script counts no failure for them).
                Section::Optional if value.starts_with("missing") => {
                    out.optional.push(name.to_string())
                }
                _ => {}
            }
        } else if !line.starts_with('-') && !line.starts_with("  ") && line.ends_with(':') {
            // Another heading (`Network Drivers:` is under Optional; `System:`, `Limits:`).
            if section == Section::Necessary {
                section = Section::Other;
            }
        }
    }
    out
}

/// Drops `ESC [ … letter` sequences: the script colours its words even without a terminal.
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn check_config_verdict(cc: &CheckConfig, code: i64, binary: &str, command: &str) -> Line {
    if !cc.necessary.is_empty() || cc.pass == Some(false) {
        let what = if cc.necessary.is_empty() {
            format!("`{binary} check-config` failed (exit {code}): {}", cc.last)
        } else {
            format!(
                "`{binary} check-config` found generally necessary kernel options missing: {}",
                cc.necessary.join(", ")
            )
        };
        return Line::fail(
            "kernel-config",
            what,
            format!("use a kernel with them built in or as modules (load the modules: `modprobe`), or a host that has them; the whole report: `{command}`"),
        );
    }
    if cc.pass.is_none() {
        return Line::warn(
            "kernel-config",
            format!("`{binary} check-config` gave no verdict (exit {code}): {}", cc.last),
            format!("run it by hand: `{command}`; without /proc/config.gz or /boot/config-$(uname -r) it cannot read the kernel's config"),
        );
    }
    if !cc.optional.is_empty() {
        return Line::warn(
            "kernel-config",
            format!(
                "`{binary} check-config`: STATUS: pass, but optional kernel options are missing: {}",
                cc.optional.join(", ")
            ),
            format!("only features that need them are affected; the whole report: `{command}`"),
        );
    }
    Line::ok(
        "kernel-config",
        format!(
            "`{binary} check-config`: STATUS: pass ({} options checked)",
            cc.checked
        ),
    )
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

/// An image to try a privileged container with: the target image if it is here, else the
/// stand-in's (built on the spot, as `--sim` does): the trial asks the engine, not k3s.
async fn trial_image(
    docker: &dyn DockerApi,
    image: &str,
    version: &Version,
) -> Result<String, String> {
    if docker.image(image).await.is_some() {
        return Ok(image.to_string());
    }
    crate::sim_image::ensure_sim_image(docker, &version.to_string(), false)
        .await
        .map_err(|e| format!("{image} is not here and the stand-in could not be built ({e:#})"))
}

/// Creates and starts a privileged container as a node of `facts`'s distribution starts (one
/// that only prints its version, or, for a systemd-unit distribution, the image's own command:
/// systemd), then removes it (with its network and volume) by its run id. An engine that
/// refuses privileges refuses it at the start; the same container unprivileged tells that
/// refusal from an image or engine that cannot start any container.
async fn try_privileged(docker: &dyn DockerApi, image: &str, facts: &Facts, run_id: &str) -> Line {
    let labels: HashMap<String, String> = [
        (docker::LABEL_MANAGED, "true"),
        (docker::LABEL_RUN, run_id),
        (docker::LABEL_NODE, "trial"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let systemd = facts.node_process.systemd_pid1();
    let t = Trial {
        docker,
        image,
        run_id,
        labels: &labels,
        systemd,
    };
    // What to try by hand: the container as the trial made it.
    let by_hand = if systemd {
        format!(
            "`docker run --rm -d --tmpfs /run --tmpfs /run/lock {image}`, then `docker rm -f` it"
        )
    } else {
        "`docker run --rm IMAGE -v`".to_string()
    };
    let net = format!("repro-{run_id}-trial");
    let (privileged, plain) = match docker.create_network(&net, &labels, None).await {
        Err(e) => (Ok(Err(e)), None),
        Ok(subnet) => {
            let privileged = tokio::time::timeout(TRIAL_TIMEOUT, t.run(&net, subnet, true)).await;
            let plain = match &privileged {
                Ok(Err(_)) => {
                    Some(tokio::time::timeout(TRIAL_TIMEOUT, t.run(&net, subnet, false)).await)
                }
                _ => None,
            };
            (privileged, plain)
        }
    };
    let removed = docker
        .remove_labelled(docker::LABEL_RUN, Some(run_id))
        .await;
    let leftover = if removed.complete {
        String::new()
    } else {
        format!(" (the trial's objects may be left: `repro clean --run {run_id}`)")
    };
    let timed_out = || {
        Line::fail(
            "privileged",
            format!(
                "a container of {image} did not start within {}s{leftover}",
                TRIAL_TIMEOUT.as_secs()
            ),
            format!("check the engine ({by_hand}), or run the stand-in with --sim"),
        )
    };
    match (privileged, plain) {
        (Ok(Ok(())), _) => Line::ok(
            "privileged",
            format!("a privileged container of {image} started{leftover}"),
        ),
        (Ok(Err(e)), Some(Ok(Ok(())))) => Line::fail(
            "privileged",
            format!(
                "the engine refused a privileged container of {image} ({}) but started it unprivileged{leftover}; real {} needs privileged containers (containerd, the kubelet and iptables run inside), so it cannot run here",
                first_line(&e.to_string()),
                facts.name
            ),
            "use an engine that allows privileged containers (rootful Docker, not rootless or a sandboxed CI runner), or run the stand-in with --sim (`repro doctor --sim` says whether it can)",
        ),
        (Ok(Err(_)), Some(Ok(Err(e)))) => Line::fail(
            "privileged",
            format!(
                "not even an unprivileged container of {image} started: {}{leftover}",
                first_line(&e.to_string())
            ),
            format!("check the engine and the image ({by_hand})"),
        ),
        _ => timed_out(),
    }
}

/// Throwaway containers of `image`, made as a node is made; the caller removes everything
/// labelled with `run_id`.
struct Trial<'a> {
    docker: &'a dyn DockerApi,
    image: &'a str,
    run_id: &'a str,
    labels: &'a HashMap<String, String>,
    /// Start the image's own command (systemd as PID 1), as a systemd-unit node starts.
    systemd: bool,
}

impl Trial<'_> {
    /// One container on `net` (10.213.`subnet`.0/24) with its own volume: created and started.
    async fn run(
        &self,
        net: &str,
        subnet: u8,
        privileged: bool,
    ) -> Result<(), docker::DockerError> {
        let kind = if privileged {
            "privileged"
        } else {
            "unprivileged"
        };
        let name = format!("repro-{}-{kind}-trial", self.run_id);
        self.docker.create_volume(&name, self.labels).await?;
        let spec = NodeSpec {
            name: name.clone(),
            hostname: format!("{kind}-trial"),
            image: self.image.to_string(),
            // A container node's entrypoint is the distribution's binary: its version flag, and
            // out. A systemd node image has no such entrypoint: its command (systemd) runs.
            cmd: if self.systemd {
                vec![]
            } else {
                vec!["-v".into()]
            },
            env: vec![],
            labels: self.labels.clone(),
            network: net.to_string(),
            ip: format!("10.213.{subnet}.{}", if privileged { 2 } else { 3 }),
            data_volume: name.clone(),
            data_dir: "/var/lib/repro-trial".into(),
            // Seconds-long and removed with its anonymous volumes (`remove_labelled` passes -v);
            // a run's nodes, which live through steps, get named ones.
            image_volumes: vec![],
            // A trial container joins nothing, so it needs no other node's address.
            extra_hosts: vec![],
            privileged,
            stop_grace: Duration::from_secs(1),
            systemd: self.systemd,
            host_ro: vec![],
        };
        self.docker.create_node(&spec).await?;
        self.docker.start(&name).await
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or_default().to_string()
}

/// Whether the engine runs on this machine: only then are this machine's limits the nodes'.
fn is_local(endpoint: &str) -> bool {
    endpoint.starts_with("unix://") || endpoint.starts_with("npipe://")
}

fn docker_host_line(endpoint: &str) -> Line {
    docker_host_line_of(endpoint, None)
}

/// DOCKER_HOST's line, naming the engine once it is known (a Podman service answers the
/// Docker API too; its limits and fixes differ, docs/podman.md).
fn docker_host_line_of(endpoint: &str, kind: Option<docker::EngineKind>) -> Line {
    let set = std::env::var("DOCKER_HOST")
        .ok()
        .filter(|s| !s.is_empty())
        .is_some();
    host_line(endpoint, set, kind)
}

fn host_line(endpoint: &str, set: bool, kind: Option<docker::EngineKind>) -> Line {
    // `tcp://user:password@host`: the line names the engine, never a password.
    let shown = crate::redact::Redactor::new(&[]).redact_text(endpoint);
    let engine = match kind {
        Some(docker::EngineKind::Podman) => "Podman service",
        Some(docker::EngineKind::Docker) => "Docker engine",
        None => "engine",
    };
    let podman = if kind == Some(docker::EngineKind::Podman) {
        " (Podman: see docs/podman.md for its limits)"
    } else {
        ""
    };
    match (set, is_local(endpoint)) {
        (false, _) => Line::ok("docker-host", format!("DOCKER_HOST unset: the local {engine} at {shown}{podman}")),
        (true, true) => Line::ok("docker-host", format!("DOCKER_HOST={shown}: a local {engine}{podman}")),
        (true, false) => Line::warn(
            "docker-host",
            format!("DOCKER_HOST={shown}: a remote {engine}{podman}; the inotify, memory-available, disk and cgroup-delegation checks read this machine, not the engine's"),
            "run `repro doctor` on the engine's host for those",
        ),
    }
}

fn cgroup_line(
    version: Option<&str>,
    driver: Option<&str>,
    controllers: Option<&str>,
    sim: bool,
) -> Line {
    let driver = driver.unwrap_or("unknown driver");
    match version {
        Some("1") => Line::ok(
            "cgroup",
            format!("cgroup v1 ({driver}): real k3s runs on it (k3d runs it on v1 too)"),
        ),
        Some("2") if sim => Line::ok("cgroup", format!("cgroup v2 ({driver})")),
        Some("2") => {
            let missing: Vec<&str> = match controllers {
                Some(c) => {
                    let have: Vec<&str> = c.split_whitespace().collect();
                    CGROUP_V2_CONTROLLERS
                        .iter()
                        .copied()
                        .filter(|w| !have.contains(w))
                        .collect()
                }
                None => vec![],
            };
            if missing.is_empty() {
                Line::ok(
                    "cgroup",
                    format!("cgroup v2 ({driver}): repro starts k3s as PID 1, which empties the root cgroup the kubelet needs"),
                )
            } else {
                Line::warn(
                    "cgroup",
                    format!(
                        "cgroup v2 ({driver}) without the {} controller(s) the kubelet needs",
                        missing.join(", ")
                    ),
                    "enable them (systemd: `Delegate=yes` for docker.service) and restart Docker",
                )
            }
        }
        _ => Line::warn(
            "cgroup",
            "the engine does not say its cgroup version",
            "check `docker info` (Cgroup Version); real k3s needs v1 or v2 with its controllers",
        ),
    }
}

/// The engine's image store: the classic graph drivers (`overlay2`, `fuse-overlayfs`), or
/// containerd's, which Docker 29 made the default for new installs (`docker info`: DriverStatus
/// `driver-type: io.containerd.snapshotter.v1`). What breaks kind and k3d there (kind #3795,
/// #4066, #4224; k3d #1538) is `ctr images import --all-platforms` of a `docker save` archive
/// inside a node: the archive keeps the whole multi-platform index while the store holds one
/// platform's blobs (`content digest … not found`). repro imports nothing into a node with
/// `ctr`: `--image-archive` is the engine's own `docker load`, the stand-in's image is built by
/// the engine from a one-file context, and RKE2's images tarball is rke2's release file, which
/// rke2's containerd imports itself (a single platform). So both stores are ok; the line says
/// which one and what to save archives with.
pub(crate) fn image_store_line(driver: Option<&str>, containerd: bool) -> Line {
    let driver = driver.unwrap_or("unknown driver");
    if containerd {
        Line::ok(
            "image-store",
            format!(
                "containerd image store ({driver}; Docker 29's default): `--image-archive` is loaded by the engine (`docker load`), not by `ctr` in a node, and the stand-in is built by the engine, so kind's and k3d's `content digest … not found` (kind #3795, #4066; k3d #1538) does not apply; save archives on this host with `docker save --platform linux/amd64` (a multi-platform index whose other platforms' blobs are absent cannot be loaded elsewhere)"
            ),
        )
    } else {
        Line::ok(
            "image-store",
            format!("classic graph driver ({driver}): `docker save`/`docker load` archives hold one platform"),
        )
    }
}

/// Docker's default MTU when neither the daemon (`--mtu`, daemon.json `mtu`) nor the network
/// sets one.
pub(crate) const DEFAULT_MTU: u32 = 1500;

/// The MTU a run's network gets: `--mtu` if given, else the engine's default bridge's
/// (`com.docker.network.driver.mtu`, set by dockerd `--mtu`). A user-defined network does not
/// inherit the daemon's MTU (actions/runner #775, actions-runner-controller #1046), so a run
/// inside a Docker-in-Docker runner at 1400 (k3s PR #14144) would fragment or stall at 1500.
pub(crate) fn run_network_mtu(flag: Option<u32>, bridge: Option<u32>) -> Option<u32> {
    flag.or(bridge.filter(|m| *m != DEFAULT_MTU))
}

/// The MTU the engine gives containers (its default bridge's option) against the host's
/// default-route interface (`host`: name and MTU, when the engine is local), and what a run's
/// network will use.
pub(crate) fn mtu_line(bridge: Option<u32>, host: Option<(&str, u32)>, flag: Option<u32>) -> Line {
    let engine = match bridge {
        Some(m) => format!(
            "the engine gives containers MTU {m} (default bridge's com.docker.network.driver.mtu)"
        ),
        None => format!("the engine sets no MTU on its default bridge ({DEFAULT_MTU})"),
    };
    let run = match run_network_mtu(flag, bridge) {
        Some(m) => format!("a run's network is created with MTU {m}"),
        None => format!("a run's network gets the engine's default ({DEFAULT_MTU})"),
    };
    let used = run_network_mtu(flag, bridge).unwrap_or(DEFAULT_MTU);
    match host {
        Some((iface, m)) if m < used => Line::warn(
            "mtu",
            format!("{engine}, but {iface} (the host's route out) has MTU {m}: {run}, larger than the path, so large packets fragment or stall"),
            format!("give `repro run --mtu {m}` (or start dockerd with `--mtu {m}`)"),
        ),
        Some((iface, m)) => Line::ok("mtu", format!("{engine}; {iface} has MTU {m}; {run}")),
        None => Line::ok("mtu", format!("{engine}; {run}")),
    }
}

/// The interface of the host's default route and its MTU, from /proc/net/route and sysfs.
pub(crate) fn host_route_mtu() -> Option<(String, u32)> {
    let routes = std::fs::read_to_string("/proc/net/route").ok()?;
    let iface = default_route_iface(&routes)?;
    let mtu = read_number(&format!("/sys/class/net/{iface}/mtu"))?;
    Some((iface, u32::try_from(mtu).ok()?))
}

/// The interface of the first default route (destination 00000000) in /proc/net/route.
fn default_route_iface(routes: &str) -> Option<String> {
    routes.lines().skip(1).find_map(|l| {
        let mut f = l.split_whitespace();
        let (iface, dest) = (f.next()?, f.next()?);
        (dest == "00000000").then(|| iface.to_string())
    })
}

/// The host's inotify limits, and what root's processes hold now.
struct Inotify {
    instances: Option<u64>,
    watches: Option<u64>,
    in_use: Option<u64>,
}

/// What one node needs: instances, and the watches limit the whole host wants (0: none).
struct InotifyNeed {
    per_node: u64,
    watches: u64,
}

fn inotify_line(
    host: &Inotify,
    want: &InotifyNeed,
    nodes: u64,
    topology: &str,
    local: bool,
) -> Line {
    let need = want.per_node * nodes.max(1);
    let watch_need = want.watches;
    let (Some(instances), Some(watches)) = (host.instances, host.watches) else {
        return Line::warn(
            "inotify",
            "cannot read /proc/sys/fs/inotify/max_user_instances and max_user_watches",
            format!(
                "make sure fs.inotify.max_user_instances ≥ {need} and max_user_watches ≥ {}",
                watch_need.max(8192)
            ),
        );
    };
    let whose = if local {
        ""
    } else {
        " (this machine's, not the engine's)"
    };
    let used = host.in_use.unwrap_or(0);
    let in_use = host
        .in_use
        .map(|n| format!(", {n} instances held by root's processes now"))
        .unwrap_or_default();
    let seen = format!(
        "max_user_instances {instances}, max_user_watches {watches}{whose}{in_use}; every node of one engine counts against root's limit, about {} instances a node here",
        want.per_node
    );
    let free = instances.saturating_sub(used);
    if free >= need && watches >= watch_need {
        Line::ok(
            "inotify",
            format!("{seen}: enough for the {nodes} nodes of {topology} ({need})"),
        )
    } else {
        Line::warn(
            "inotify",
            format!("{seen}: the {nodes} nodes of {topology} may fail with \"inotify_init: too many open files\" (want {need} instances free, ≥ {watch_need} watches)"),
            format!("sysctl -w fs.inotify.max_user_instances={} fs.inotify.max_user_watches={}", (need + used).max(instances), watch_need.max(watches)),
        )
    }
}

/// MiB the nodes need: a server with embedded etcd, one without, an agent.
fn memory_needed(facts: &Facts, roles: &[Role]) -> u64 {
    let m = &facts.memory;
    roles
        .iter()
        .map(|r| match r {
            Role::Etcd | Role::All => m.server_with_etcd_mib,
            Role::ControlPlane => m.server_mib,
            Role::Agent => m.agent_mib,
        })
        .sum()
}

fn memory_line(
    total: Option<u64>,
    available: Option<u64>,
    need: u64,
    topology: &str,
    source: &str,
) -> Line {
    let why = format!("{topology} needs about {need} MiB ({source}, per node)");
    match (total, available) {
        (Some(t), _) if t < need => Line::fail(
            "memory",
            format!("the engine has {t} MiB; {why}"),
            "use a host with more memory, a smaller topology (--topology), or --sim",
        ),
        (_, Some(a)) if a < need => Line::warn(
            "memory",
            format!("{a} MiB available now; {why}"),
            "stop other containers or programs first",
        ),
        (Some(t), _) => Line::ok("memory", format!("the engine has {t} MiB; {why}")),
        (None, _) => Line::warn(
            "memory",
            format!("the engine does not say its memory; {why}"),
            "check `docker info` (Total Memory)",
        ),
    }
}

async fn image_line(docker: &dyn DockerApi, req: &Request<'_>, image: &str) -> Line {
    if req.sim {
        let sim = crate::sim_image::sim_image_ref(&req.version.to_string());
        return match docker.image(&sim).await {
            Some(_) => Line::ok("image", format!("{sim} is here")),
            None => Line::ok(
                "image",
                format!("{sim} is not here yet: `repro run --sim` builds it (`make sim` or `repro sim build` ahead)"),
            ),
        };
    }
    let here = docker.image(image).await.is_some();
    if !here
        && req.image.is_none()
        && crate::builds::release::base_url(req.version.distro).is_some()
    {
        return built_image_line(req, image);
    }
    match here {
        true => Line::ok("image", format!("{image} is here")),
        false => Line::warn(
            "image",
            format!("{image} is not in the engine's store: `repro run` pulls it"),
            format!("offline: `docker save {image}` elsewhere and give it as --image-archive FILE"),
        ),
    }
}

/// The image line of a distribution whose node image is built from release artifacts (rke2's):
/// not pulled (no registry has it) but built, from cached or fetched artifacts.
fn built_image_line(req: &Request<'_>, image: &str) -> Line {
    let distro = req.version.distro;
    let Some(names) = &req.facts.release_artifacts else {
        return Line::ok(
            "image",
            format!("{image}: {distro}'s nodes run a published image"),
        );
    };
    let distro::ReleaseArtifacts {
        tarball,
        checksums,
        images,
        ..
    } = names;
    let name = req.facts.name;
    let tag = format!(
        "{}:{}-<first 12 of the tarball's sha256>",
        req.facts.image_repository,
        req.version.image_tag()
    );
    let offline = format!(
        "air-gapped: give --artifacts DIR ({tarball}, {checksums} and {images}, which {name} imports at boot), or --image NAME of a node image in the store"
    );
    let cache = crate::builds::release::cache_dir(distro, &req.version).ok();
    if let Some(dir) = cache.filter(|d| d.join(tarball).is_file() && d.join(checksums).is_file()) {
        return Line::ok(
            "image",
            format!(
                "{image} is not here: `repro run` builds the node image {tag} from the release artifacts cached in {} (checked again against {checksums})",
                dir.display()
            ),
        );
    }
    let base = crate::builds::release::base_url(distro).unwrap_or_default();
    let (_, url) =
        crate::builds::release::urls(&crate::redact::without_userinfo(&base), &req.version, names);
    Line::warn(
        "image",
        format!(
            "{image} is not here and no registry has it: `repro run` fetches {url} and {checksums} beside it (not {images}: {name} pulls its images at boot), checks the tarball's sha256 and builds the node image {tag} from them"
        ),
        offline,
    )
}

fn read_number(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn mem_available_mib() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_store_names_the_containerd_store_and_what_to_save_with() {
        let l = image_store_line(Some("overlayfs"), true);
        assert_eq!(l.status, Status::Ok);
        assert!(
            l.detail.starts_with("containerd image store (overlayfs"),
            "{}",
            l.detail
        );
        assert!(
            l.detail.contains("docker save --platform linux/amd64"),
            "{}",
            l.detail
        );
        let l = image_store_line(Some("overlay2"), false);
        assert!(
            l.detail.starts_with("classic graph driver (overlay2)"),
            "{}",
            l.detail
        );
    }

    #[test]
    fn the_run_network_mtu_follows_the_flag_then_the_engine() {
        assert_eq!(run_network_mtu(Some(1300), Some(1400)), Some(1300));
        assert_eq!(run_network_mtu(None, Some(1400)), Some(1400));
        assert_eq!(run_network_mtu(None, Some(1500)), None);
        assert_eq!(run_network_mtu(None, None), None);
        // A Docker-in-Docker runner: the inner engine sets nothing, the pod's eth0 is 1400.
        let l = mtu_line(None, Some(("eth0", 1400)), None);
        assert_eq!(l.status, Status::Warn);
        assert!(l.fix.unwrap().contains("--mtu 1400"));
        let l = mtu_line(Some(1400), Some(("eth0", 1400)), None);
        assert_eq!(l.status, Status::Ok, "{}", l.detail);
        assert!(
            l.detail
                .ends_with("a run's network is created with MTU 1400"),
            "{}",
            l.detail
        );
        assert_eq!(
            mtu_line(None, Some(("eth0", 1400)), Some(1400)).status,
            Status::Ok
        );
        assert_eq!(mtu_line(None, None, None).status, Status::Ok);
    }

    #[test]
    fn the_default_route_interface_from_proc_net_route() {
        let routes = "Iface\tDestination\tGateway \tFlags\n\
                      docker0\t000011AC\t00000000\t0001\n\
                      eth0\t00000000\t0101A8C0\t0003\n";
        assert_eq!(default_route_iface(routes).as_deref(), Some("eth0"));
        assert_eq!(default_route_iface("Iface\tDestination\n"), None);
    }

    #[test]
    fn inotify_against_the_node_count() {
        let host = |i, w, u| Inotify {
            instances: i,
            watches: w,
            in_use: u,
        };
        let k3s = InotifyNeed {
            per_node: INOTIFY_INSTANCES_PER_NODE,
            watches: INOTIFY_WATCHES,
        };
        let l = inotify_line(&host(Some(128), Some(192_536), None), &k3s, 5, "qa", true);
        assert_eq!(l.status, Status::Warn);
        assert!(l.detail.contains("want 320 instances free"), "{}", l.detail);
        assert!(l.fix.unwrap().contains("max_user_instances=320"));
        let l = inotify_line(&host(Some(512), Some(524_288), None), &k3s, 5, "qa", true);
        assert_eq!(l.status, Status::Ok, "{}", l.detail);
        let l = inotify_line(
            &host(Some(256), Some(100), None),
            &k3s,
            4,
            "etcd-split",
            true,
        );
        assert_eq!(l.status, Status::Warn, "watches too few");
        assert_eq!(
            inotify_line(&host(None, None, None), &k3s, 4, "x", true).status,
            Status::Warn
        );
    }

    /// The RKE2 stand-in runs on systemd nodes, which hold ~10 instances each (#30): the line
    /// counts them against what the host's other processes hold now — not "not needed".
    #[test]
    fn inotify_of_systemd_stand_in_nodes_counts_what_is_in_use() {
        let rke2 = distro::Distro::Rke2.facts();
        let k3s = distro::Distro::K3s.facts();
        assert_eq!(inotify_per_node(k3s, true), None);
        assert_eq!(
            inotify_per_node(rke2, true),
            Some(INOTIFY_INSTANCES_SYSTEMD_NODE)
        );
        let want = InotifyNeed {
            per_node: INOTIFY_INSTANCES_SYSTEMD_NODE,
            watches: 0,
        };
        let host = |u| Inotify {
            instances: Some(128),
            watches: Some(8192),
            in_use: Some(u),
        };
        assert_eq!(
            inotify_line(&host(20), &want, 3, "rke2", true).status,
            Status::Ok
        );
        let l = inotify_line(&host(110), &want, 3, "rke2", true);
        assert_eq!(l.status, Status::Warn, "{}", l.detail);
        assert!(l.detail.contains("110 instances held"), "{}", l.detail);
        assert!(l.fix.unwrap().contains("max_user_instances=140"));
    }

    #[test]
    fn memory_from_the_distributions_per_node_numbers() {
        let facts = distro::Distro::K3s.facts();
        let roles = [
            Role::Etcd,
            Role::Etcd,
            Role::Etcd,
            Role::ControlPlane,
            Role::Agent,
        ];
        assert_eq!(memory_needed(facts, &roles), 3 * 1606 + 1596 + 275);
        assert_eq!(
            memory_line(Some(1000), None, 6689, "t", "s").status,
            Status::Fail
        );
        assert_eq!(
            memory_line(Some(24_000), Some(2000), 6689, "t", "s").status,
            Status::Warn
        );
        assert_eq!(
            memory_line(Some(24_000), Some(20_000), 6689, "t", "s").status,
            Status::Ok
        );
    }

    #[test]
    fn cgroup_versions() {
        assert_eq!(
            cgroup_line(Some("1"), Some("cgroupfs"), None, false).status,
            Status::Ok
        );
        let l = cgroup_line(Some("2"), Some("systemd"), Some("cpu io pids"), false);
        assert_eq!(l.status, Status::Warn);
        assert!(l.detail.contains("cpuset, memory"), "{}", l.detail);
        assert_eq!(
            cgroup_line(
                Some("2"),
                None,
                Some("cpuset cpu io memory pids hugetlb"),
                false
            )
            .status,
            Status::Ok
        );
        assert_eq!(cgroup_line(None, None, None, false).status, Status::Warn);
    }

    #[test]
    fn podman_behind_docker_host_is_named() {
        let l = host_line(
            "unix:///run/user/0/podman/podman.sock",
            true,
            Some(docker::EngineKind::Podman),
        );
        assert_eq!(l.status, Status::Ok);
        assert!(l.detail.contains("a local Podman service"), "{}", l.detail);
        assert!(l.detail.contains("docs/podman.md"), "{}", l.detail);
        let l = host_line(
            "tcp://10.0.0.9:8888",
            true,
            Some(docker::EngineKind::Podman),
        );
        assert_eq!(l.status, Status::Warn);
        assert!(l.detail.contains("a remote Podman service"), "{}", l.detail);
        let l = host_line(
            "unix:///var/run/docker.sock",
            false,
            Some(docker::EngineKind::Docker),
        );
        assert!(l.detail.contains("the local Docker engine"), "{}", l.detail);
        assert!(!l.detail.contains("Podman"), "{}", l.detail);
    }

    #[test]
    fn disk_against_the_nodes() {
        let df = "Filesystem     1024-blocks      Used Available Capacity Mounted on\n/dev/sda1        102400000  50000000  51200000      50% /\n";
        assert_eq!(parse_df(df), Some((50_000, 100_000)));
        assert_eq!(parse_df("garbage"), None);
        let ok = disk_line(
            Some("/var/lib/docker"),
            Some((50_000, 100_000)),
            5120,
            5,
            "qa",
        );
        assert_eq!(ok.status, Status::Ok, "{}", ok.detail);
        let fail = disk_line(
            Some("/var/lib/docker"),
            Some((4_000, 100_000)),
            5120,
            5,
            "qa",
        );
        assert_eq!(fail.status, Status::Fail);
        assert!(
            fail.detail.contains("4000 MiB free at /var/lib/docker"),
            "{}",
            fail.detail
        );
        // Enough for the nodes, but under the kubelet's eviction threshold afterwards.
        let tight = disk_line(Some("/d"), Some((9_000, 100_000)), 5120, 5, "qa");
        assert_eq!(tight.status, Status::Warn);
        assert!(tight.detail.contains("under the 5%"), "{}", tight.detail);
        let unknown = disk_line(None, None, 5120, 5, "qa");
        assert_eq!(unknown.status, Status::Warn);
    }

    #[test]
    fn check_config_outputs_by_section() {
        let fail = parse_check_config(include_str!(
            "../tests/fixtures/check-config/k3s-4859-libreelec-fail.txt"
        ));
        assert_eq!(fail.pass, Some(false));
        assert_eq!(fail.necessary, vec!["CONFIG_NETFILTER_XT_MATCH_IPVS"]);
        assert_eq!(fail.optional, vec!["CONFIG_USER_NS"]);
        let l = check_config_verdict(&fail, 1, "k3s", "docker run … check-config");
        assert_eq!(l.status, Status::Fail);
        assert!(
            l.detail.contains("CONFIG_NETFILTER_XT_MATCH_IPVS"),
            "{}",
            l.detail
        );

        let pass = parse_check_config(include_str!(
            "../tests/fixtures/check-config/k3s-11916-v1.32.3-pass.txt"
        ));
        assert_eq!(pass.pass, Some(true));
        assert!(pass.necessary.is_empty() && pass.optional.is_empty());
        assert_eq!(
            check_config_verdict(&pass, 0, "k3s", "c").status,
            Status::Ok
        );

        // Coloured as the script prints it, with an optional option missing: a warn.
        let coloured = "Generally Necessary:\n- \u{1b}[0;32mCONFIG_NAMESPACES: enabled\u{1b}[0m\nOptional Features:\n- CONFIG_USER_NS: \u{1b}[1;31mmissing\u{1b}[0m\n\nSTATUS: \u{1b}[0;32mpass\u{1b}[0m\n";
        let c = parse_check_config(coloured);
        assert_eq!(c.pass, Some(true));
        assert_eq!(c.optional, vec!["CONFIG_USER_NS"]);
        let l = check_config_verdict(&c, 0, "k3s", "c");
        assert_eq!(l.status, Status::Warn);
        assert!(l.detail.contains("CONFIG_USER_NS"), "{}", l.detail);

        assert_eq!(
            untimestamped("2026-12-01T21:41:44.558485880Z STATUS: pass\nplain"),
            "STATUS: pass\nplain"
        );

        // No kernel config found: no verdict, a warn naming what it said.
        let none = parse_check_config(
            "info: reading kernel config from ...\nerror: cannot find kernel config\n",
        );
        let l = check_config_verdict(&none, 1, "k3s", "c");
        assert_eq!(l.status, Status::Warn);
        assert!(
            l.detail.contains("cannot find kernel config"),
            "{}",
            l.detail
        );
    }

    #[test]
    fn a_remote_engine_is_said() {
        assert!(is_local("unix:///var/run/docker.sock"));
        assert!(!is_local("tcp://127.0.0.1:2375"));
    }
}
