//! The Docker operations repro uses, as one trait ([`DockerApi`]) with two implementations: the
//! real engine over bollard (`engine.rs`, the only place that names bollard) and the scripted
//! fake of the runner's unit tests (`run/fake.rs`). Every call names the operation and the
//! object when it fails, and everything repro creates carries labels so cleanup can find it by
//! label alone.

pub(crate) mod address;
mod engine;
pub(crate) mod owner;

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use crate::diag::Help;
use bytes::Bytes;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;

pub use engine::Engine;

/// The one way repro reaches the engine — every command, every run, the doctor and the
/// stand-in's image builds come here: connects as `DOCKER_HOST` says (unix, tcp, ssh), pings,
/// agrees on an API version the engine speaks and tells Docker from Podman (`Engine::connect`,
/// which nothing else calls). An engine that does not answer is [`DockerError::Unreachable`],
/// named without its credentials.
pub async fn connect() -> Result<Engine, DockerError> {
    Engine::connect().await
}

/// A node's tmpfs mounts: `/run` and, in a container node, `/var/run`; systemd needs
/// `/run/lock` as a mount of its own (its `/var/run` is a link to `/run`). An image `VOLUME` at
/// one of them is covered by it, so it gets no volume of its own.
pub(crate) fn tmpfs_paths(systemd: bool) -> [&'static str; 2] {
    if systemd {
        ["/run", "/run/lock"]
    } else {
        ["/run", "/var/run"]
    }
}

/// Label keys on every container, network and volume of a run. Never the token.
pub const LABEL_MANAGED: &str = "io.repro.managed";
pub const LABEL_RUN: &str = "io.repro.run";
pub(crate) const LABEL_CHECK: &str = "io.repro.check";
pub(crate) const LABEL_NODE: &str = "io.repro.node";

/// What went wrong talking to Docker. Every one is infrastructure (exit 3).
#[derive(Debug, thiserror::Error)]
pub enum DockerError {
    /// Docker is not there: what was tried and what to do.
    #[error("cannot reach the Docker engine at {endpoint}: {reason}{}", Help("start Docker (e.g. `systemctl start docker`), or point DOCKER_HOST at a reachable engine (unix://, tcp://host:2375, ssh://user@host)"))]
    Unreachable { endpoint: String, reason: String },
    /// A call failed: the operation and the object it was on.
    #[error("failed to {op} {object}: {source}")]
    Call {
        op: &'static str,
        object: String,
        /// What the engine (or the client talking to it) said. Opaque, so no bollard type
        /// leaves this module; boxed, as errors travel up every layer.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("failed to read image archive {}: {source}", path.display())]
    Archive {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    /// A call failed on a limit of the engine or its host (ulimits, privileges, cgroups).
    #[error(transparent)]
    Limit(Box<EngineLimit>),
    /// The archive of files to copy into a container could not be built.
    #[error("failed to pack files for {container}: {source}")]
    Pack {
        container: String,
        source: std::io::Error,
    },
}

/// A call that failed on a limit of the engine or its host: the runtime's own words name none
/// of them, so the help says what to change.
#[derive(Debug, thiserror::Error)]
#[error("failed to {op} {object} on {engine}: {source}{}", Help(.help))]
pub struct EngineLimit {
    pub(crate) op: &'static str,
    pub(crate) object: String,
    /// The engine and its version (`Podman 4.3.1`).
    pub(crate) engine: String,
    #[source]
    pub(crate) source: Box<dyn std::error::Error + Send + Sync>,
    pub(crate) help: &'static str,
}

/// The engine repro talks to: `DOCKER_HOST`, else the local socket.
pub(crate) fn endpoint() -> String {
    std::env::var("DOCKER_HOST")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unix:///var/run/docker.sock".to_string())
}

/// Which engine answers the Docker API (result.json's `environment.engine`). Their limits and
/// the fixes for them differ (docs/podman.md), so errors name it too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum EngineKind {
    Docker,
    Podman,
}

impl EngineKind {
    /// From the names of `/version`'s components: Podman's is "Podman Engine", Docker's
    /// "Engine".
    pub(crate) fn from_components<'a>(names: impl IntoIterator<Item = &'a str>) -> EngineKind {
        if names.into_iter().any(|n| n.contains("Podman")) {
            EngineKind::Podman
        } else {
            EngineKind::Docker
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            EngineKind::Docker => "Docker",
            EngineKind::Podman => "Podman",
        }
    }
}

/// What the engine says of itself (result.json's `environment`).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct EnvInfo {
    pub(crate) docker_host: String,
    /// Docker or Podman (both serve the Docker API). Older results lack it.
    #[serde(default)]
    pub(crate) engine: Option<EngineKind>,
    pub(crate) docker_version: Option<String>,
    pub(crate) docker_api_version: Option<String>,
    pub(crate) kernel: Option<String>,
    pub(crate) os: Option<String>,
    pub(crate) arch: Option<String>,
    pub(crate) cpus: Option<i64>,
    pub(crate) memory_bytes: Option<i64>,
    /// The engine's cgroup version (`1`, `2`) and driver (`cgroupfs`, `systemd`): on cgroup v2
    /// real k3s must be PID 1 in its container (it is, in repro). Older results lack them.
    #[serde(default)]
    pub(crate) cgroup_version: Option<String>,
    #[serde(default)]
    pub(crate) cgroup_driver: Option<String>,
    /// The image store: its driver (`overlay2`, `overlayfs`, …) and whether it is containerd's
    /// (`driver-type: io.containerd.snapshotter.v1`, Docker 29's default). Older results lack them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) storage_driver: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) containerd_store: Option<bool>,
    /// The MTU the engine gives containers: its default bridge's `com.docker.network.driver.mtu`
    /// (dockerd `--mtu`); `None` when it sets none (1500).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) bridge_mtu: Option<u32>,
    /// The MTU the run's network was created with (`--mtu`, else `bridge_mtu`; `None`: the
    /// engine's default). Only a run's result has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) network_mtu: Option<u32>,
}

/// The help for a call that failed on a limit of the engine, from the runtime's message (None
/// for any other failure). Ulimits and privileges fail at start, in runc's words; cgroups
/// when the runtime cannot set up a container's cgroup.
pub(crate) fn limit_help(message: &str, engine: EngineKind) -> Option<&'static str> {
    if message.contains("error setting rlimit") {
        return Some(match engine {
            EngineKind::Podman => "the engine's default container ulimits exceed what it may grant (nofile and nproc 1048576 by default): set `default_ulimits = [\"nofile=N:N\", \"nproc=P:P\"]`, at most the service's hard limits (/proc/<pid>/limits), in a containers.conf named by CONTAINERS_CONF for the Podman service (scripts/podman-service.sh writes one), restart the service and run again (ulimits are fixed when a container is created)",
            EngineKind::Docker => "the engine's default container ulimits exceed its own hard limits: lower `default-ulimits` (nofile, nproc) in /etc/docker/daemon.json to at most dockerd's hard limits (/proc/<pid>/limits), restart dockerd and run again",
        });
    }
    if message.contains("unable to apply caps") {
        return Some("the engine may not grant the capabilities of a privileged container on this host (a container runtime in a restricted sandbox): run with `--privileged never` (the stand-in needs no privileges; real k3s does), or on a host where privileged containers start");
    }
    if message.contains("cgroup") {
        return Some("the engine could not set up the container's cgroup: check the engine's cgroup manager (`cgroupfs` where systemd is not PID 1: Podman's `cgroup_manager` in containers.conf, Docker's `native.cgroupdriver` exec-opt) and that /sys/fs/cgroup is mounted");
    }
    None
}

/// Pauses between tries of a call that failed on the engine's storage race
/// ([`is_storage_race`]): five tries in all, 7.5 s of pauses at the most.
pub(crate) const STORAGE_RACE_PAUSES: [Duration; 4] = [
    Duration::from_millis(500),
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(4),
];

/// Whether a failed start or copy is a race in the engine's image storage rather than anything
/// about the container. Podman (4.3.1 here) unmounts a stopped container's overlay in a separate
/// `podman container cleanup` process that conmon starts when the container exits; a start or a
/// copy made before that process is done finds the mount gone under it — 500 "mounting storage
/// for container …: lstat …/overlay/<layer>/merged: no such file or directory", or the copier's
/// "chdir …/merged: no such file or directory". The same call a moment later mounts afresh.
/// (Both seen in `make test-podman`, 2026-12-03.)
pub(crate) fn is_storage_race(message: &str) -> bool {
    message.contains("/merged") && message.contains("no such file or directory")
}

/// A Docker call that can fail.
pub(crate) type CallFuture<'a, T> = BoxFuture<'a, Result<T, DockerError>>;

/// Labels of an object, by key.
pub(crate) type Labels = HashMap<String, String>;

/// Every Docker operation repro uses, each written once per implementation: [`Engine`] is the
/// real one; the runner's unit tests script a fake. Boxed futures keep it usable as
/// `Arc<dyn DockerApi>` (the runner does not know which one it drives).
pub trait DockerApi: Send + Sync {
    /// Engine facts for result.json (what the engine would not say stays empty).
    fn describe(&self) -> BoxFuture<'_, EnvInfo>;
    /// `docker load` of an image archive (docker save output or a k3s air-gap tarball).
    fn load_archive<'a>(&'a self, path: &'a Path) -> CallFuture<'a, ()>;
    /// An image in the local store: its id and labels (None if it is missing).
    fn image<'a>(&'a self, image: &'a str) -> BoxFuture<'a, Option<ImageInfo>>;
    /// Builds an image tagged `tag` from a tar of a build context (a `Dockerfile` at its root)
    /// with the legacy builder.
    fn build_image<'a>(&'a self, tag: &'a str, context: Vec<u8>) -> CallFuture<'a, ()>;
    /// Pulls an image, reporting (layers done, layers seen).
    fn pull<'a>(
        &'a self,
        image: &'a str,
        progress: &'a mut (dyn FnMut(usize, usize) + Send),
    ) -> CallFuture<'a, ()>;
    /// A bridge network on the first free /24 of the run range (`address.rs`); returns its
    /// third octet.
    /// A bridge network for a run; `mtu` sets its `com.docker.network.driver.mtu`.
    fn create_network<'a>(
        &'a self,
        name: &'a str,
        labels: &'a Labels,
        mtu: Option<u32>,
    ) -> CallFuture<'a, u8>;
    fn create_volume<'a>(&'a self, name: &'a str, labels: &'a Labels) -> CallFuture<'a, ()>;
    /// Creates (does not start) a node container.
    fn create_node<'a>(&'a self, spec: &'a NodeSpec) -> CallFuture<'a, ()>;
    /// Writes files (absolute path, content) into a container, running or not.
    fn upload<'a>(
        &'a self,
        container: &'a str,
        files: &'a [(String, String)],
    ) -> CallFuture<'a, ()>;
    /// Copies a host file into a container at `path` (mode 0755), through the engine's archive
    /// upload like `upload`: a build under test over the image's binary.
    fn upload_executable<'a>(
        &'a self,
        container: &'a str,
        host: &'a Path,
        path: &'a str,
    ) -> CallFuture<'a, ()>;
    fn start<'a>(&'a self, container: &'a str) -> CallFuture<'a, ()>;
    /// Stops a container (SIGTERM, then SIGKILL after `grace`); a stopped one is no error.
    fn stop<'a>(&'a self, container: &'a str, grace: Duration) -> CallFuture<'a, ()>;
    /// Removes one (stopped) node container, keeping its named volumes: an upgrade re-creates
    /// the node over them.
    fn remove_node<'a>(&'a self, container: &'a str) -> CallFuture<'a, ()>;
    fn state<'a>(&'a self, container: &'a str) -> CallFuture<'a, ContainerState>;
    /// The raw `docker inspect` document (for the bundle; it is redacted before it leaves).
    fn inspect_json<'a>(&'a self, container: &'a str) -> CallFuture<'a, serde_json::Value>;
    /// A container's log from `since_secs` on, timestamped; ends when the container stops.
    fn follow_logs(
        &self,
        container: &str,
        since_secs: i64,
    ) -> BoxStream<'static, Result<LogChunk, DockerError>>;
    /// Runs a command in a running container: its exit code and output.
    fn exec<'a>(&'a self, container: &'a str, cmd: &'a [String]) -> CallFuture<'a, (i64, String)>;
    /// Runs a command in a running container and streams its output (stdout and stderr as
    /// they come) until it exits: how a systemd node's journal is followed
    /// (`journalctl -f`). The stream ends when the command or the container does.
    fn exec_stream(
        &self,
        container: &str,
        cmd: Vec<String>,
    ) -> BoxStream<'static, Result<LogChunk, DockerError>>;
    /// Runs a one-off helper container to its end (its output and exit code), then removes
    /// it: how a kept baseline's volumes are copied (`run/baseline.rs`), with the node image's
    /// own `cp`, so it works on a remote engine and on Podman (no `volume export` there).
    fn run_helper<'a>(&'a self, spec: &'a HelperSpec) -> CallFuture<'a, (i64, String)>;
    /// Creates and starts a helper container and leaves it running (its `network`, at its
    /// address): a kept baseline's network keeper (`run/baseline.rs`), removed by label with
    /// the baseline.
    fn start_helper<'a>(&'a self, spec: &'a HelperSpec) -> CallFuture<'a, ()>;
    /// A file of a container, running or stopped, through the engine's archive download (no
    /// tool in the image needed); `None` when it has no such file.
    fn download<'a>(&'a self, container: &'a str, path: &'a str)
        -> CallFuture<'a, Option<Vec<u8>>>;
    /// Removes one container and its anonymous volumes, its named volumes kept: a baseline's
    /// node once it stopped (its volumes are the baseline).
    fn remove_container<'a>(&'a self, container: &'a str) -> CallFuture<'a, ()>;
    /// Removes every container, network and volume with `label=value` (`label` when value is
    /// None), until a listing finds none.
    fn remove_labelled<'a>(
        &'a self,
        label: &'a str,
        value: Option<&'a str>,
    ) -> BoxFuture<'a, Removed>;
}

/// A container found by its label (`Engine::containers_labelled`).
#[derive(Debug, Clone)]
pub struct LabelledContainer {
    pub(crate) name: String,
    pub(crate) labels: Labels,
    pub(crate) running: bool,
}

/// A container, network or volume found by its label (`Engine::objects_labelled`).
#[derive(Debug, Clone)]
pub(crate) struct LabelledObject {
    /// `container`, `network` or `volume`.
    pub(crate) kind: &'static str,
    pub(crate) labels: Labels,
}

/// An image in the local store.
#[derive(Debug, Clone, Default)]
pub struct ImageInfo {
    pub(crate) id: Option<String>,
    pub(crate) labels: Labels,
    /// The paths the image declares as `VOLUME`s (its `Config.Volumes`), sorted: a container
    /// gets an anonymous, unlabelled volume on each one not mounted over.
    pub(crate) volumes: Vec<String>,
}

#[derive(Debug, Default, Clone)]
pub struct Removed {
    pub(crate) containers: usize,
    pub(crate) networks: usize,
    pub(crate) volumes: usize,
    pub(crate) errors: Vec<String>,
    /// A listing after the last removal found nothing left.
    pub(crate) complete: bool,
}

#[derive(Debug, Clone)]
pub struct ContainerState {
    pub(crate) running: bool,
    pub(crate) finished_at: Option<String>,
    pub(crate) exit_code: Option<i64>,
    pub(crate) oom_killed: bool,
}

pub struct LogChunk {
    pub(crate) stderr: bool,
    pub(crate) bytes: Bytes,
}

#[derive(Debug, Clone)]
pub struct NodeSpec {
    pub(crate) name: String,
    pub(crate) hostname: String,
    pub(crate) image: String,
    pub(crate) cmd: Vec<String>,
    pub(crate) env: Vec<String>,
    pub(crate) labels: Labels,
    pub(crate) network: String,
    pub(crate) ip: String,
    /// `name:ip` of every node of the run, written to the node's `/etc/hosts`: nodes find
    /// each other without the engine's DNS, which can miss a name just registered (Podman's
    /// aardvark-dns reloads on every container start; docs/podman.md).
    pub(crate) extra_hosts: Vec<String>,
    pub(crate) data_volume: String,
    /// Where the volume is mounted: the distribution's data dir, kept across restarts.
    pub(crate) data_dir: String,
    /// More named volumes (name, path), one over each other `VOLUME` of the image, so none is
    /// anonymous: labelled like the run's other objects, `clean` finds them whatever happened to
    /// the container (an outside `docker rm -f` without `-v` leaves anonymous ones behind,
    /// nameless to repro).
    pub(crate) image_volumes: Vec<(String, String)>,
    pub(crate) privileged: bool,
    /// How long a stop waits for k3s's graceful shutdown after SIGTERM before it kills.
    pub(crate) stop_grace: Duration,
    /// The signal `docker stop` sends the container's process (the distribution's
    /// `stop_signal`); a systemd node is stopped with systemd's own instead.
    pub(crate) stop_signal: String,
    /// systemd as PID 1 (the image's command, stopped with SIGRTMIN+3): tmpfs on /run and
    /// /run/lock; unprivileged as docs/systemd-nodes.md says (the cgroup tree read-only),
    /// privileged as rke2's tests/docker run it (no cgroup bind, /lib/modules read-only).
    pub(crate) systemd: bool,
    /// Host paths bind-mounted read-only at the same path (the doctor's `check-config`
    /// container reads the host's /boot and /lib/modules); a node gets none.
    pub(crate) host_ro: Vec<String>,
}

/// A one-off container that runs to its end on no network (`run_helper`), or one that waits on
/// a network (`start_helper`): `binds` are `volume:/path[:ro]`.
#[derive(Debug, Clone)]
pub struct HelperSpec {
    pub(crate) name: String,
    pub(crate) image: String,
    /// Replaces the image's entrypoint when given (a node image's is its distribution's binary).
    pub(crate) entrypoint: Option<Vec<String>>,
    pub(crate) cmd: Vec<String>,
    pub(crate) binds: Vec<String>,
    pub(crate) labels: Labels,
    /// (network, fixed address) to attach it to; `None`: no network.
    pub(crate) network: Option<(String, String)>,
}

/// The first regular file of a tar (what the archive download of one file holds).
pub(crate) fn first_file_of_tar(tar: &[u8]) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let mut archive = tar::Archive::new(tar);
    for entry in archive.entries()? {
        let mut entry = entry?;
        if entry.header().entry_type().is_file() {
            let mut out = Vec::new();
            entry.read_to_end(&mut out)?;
            return Ok(Some(out));
        }
    }
    Ok(None)
}

/// An in-memory tar of absolute paths (written relative to `/`), parents included: what
/// `upload` sends (public for the bench's Docker floor, which sends the same).
pub fn build_tar(files: &[(String, String)]) -> std::io::Result<Vec<u8>> {
    let mut b = tar::Builder::new(Vec::new());
    let mut dirs: Vec<String> = Vec::new();
    for (path, _) in files {
        let rel = path.trim_start_matches('/');
        let mut acc = String::new();
        let parts: Vec<&str> = rel.split('/').collect();
        for p in &parts[..parts.len().saturating_sub(1)] {
            acc.push_str(p);
            acc.push('/');
            if !dirs.contains(&acc) {
                dirs.push(acc.clone());
            }
        }
    }
    for d in &dirs {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Directory);
        h.set_mode(0o755);
        h.set_size(0);
        h.set_mtime(0);
        b.append_data(&mut h, d, std::io::empty())?;
    }
    for (path, content) in files {
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o644);
        h.set_size(content.len() as u64);
        h.set_mtime(chrono::Utc::now().timestamp().max(0) as u64);
        b.append_data(&mut h, path.trim_start_matches('/'), content.as_bytes())?;
    }
    b.into_inner()
}

/// A tar of one executable at the absolute `path` (its parents are the image's own).
fn executable_tar(path: &str, content: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut b = tar::Builder::new(Vec::with_capacity(content.len() + 1024));
    let mut h = tar::Header::new_gnu();
    h.set_mode(0o755);
    h.set_size(content.len() as u64);
    h.set_mtime(chrono::Utc::now().timestamp().max(0) as u64);
    b.append_data(&mut h, path.trim_start_matches('/'), content)?;
    b.into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_engine_is_told_by_its_version_components() {
        assert_eq!(
            EngineKind::from_components(["Podman Engine"]),
            EngineKind::Podman
        );
        assert_eq!(
            EngineKind::from_components(["Engine", "containerd", "runc"]),
            EngineKind::Docker
        );
        assert_eq!(EngineKind::from_components([]), EngineKind::Docker);
    }

    #[test]
    fn limits_of_the_engine_get_their_fix_and_other_failures_none() {
        // Captured on Podman 4.3.1 and Docker 20.10 here (docs/podman.md).
        let rlimit = "runc create failed: unable to start container process: error during container init: error setting rlimits for ready process: error setting rlimit type 7: operation not permitted: OCI permission denied";
        let podman = limit_help(rlimit, EngineKind::Podman).unwrap();
        assert!(podman.contains("default_ulimits") && podman.contains("CONTAINERS_CONF"));
        let docker = limit_help(rlimit, EngineKind::Docker).unwrap();
        assert!(docker.contains("daemon.json"));
        let caps = "failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: unable to apply caps: operation not permitted: unknown";
        assert!(limit_help(caps, EngineKind::Docker)
            .unwrap()
            .contains("--privileged never"));
        assert!(limit_help("no such container", EngineKind::Docker).is_none());
    }

    #[test]
    fn only_podmans_storage_race_is_tried_again() {
        // The messages of `make test-podman`'s failed start and copy (2026-12-03), as bollard
        // shows them.
        let start = "Docker responded with status code 500: mounting storage for container bde7260462c9: lstat /check/work/main/target/podman/storage/overlay/5c179ce109cf/merged: no such file or directory";
        let copy = "Docker responded with status code 500: error in copier subprocess: changing to intended-new-root directory \"/work/main/target/podman/storage/overlay/b627d94cb8eb/merged\": chdir /work/main/target/podman/storage/overlay/b627d94cb8eb/merged: no such file or directory";
        assert!(is_storage_race(start) && is_storage_race(copy));
        assert!(!is_storage_race(
            "Docker responded with status code 404: No such container: repro-1-etcd-1"
        ));
        assert!(!is_storage_race(
            "Docker responded with status code 500: mounting storage for container x: lstat /s/overlay/l/merged: permission denied"
        ));
    }

    #[test]
    fn an_executable_keeps_its_mode_and_bytes() {
        let t = executable_tar("/bin/k3s", b"\x7fELF").unwrap();
        let mut a = tar::Archive::new(&t[..]);
        let mut e = a.entries().unwrap().next().unwrap().unwrap();
        assert_eq!(e.path().unwrap().display().to_string(), "bin/k3s");
        assert_eq!(e.header().mode().unwrap(), 0o755);
        let mut body = Vec::new();
        std::io::Read::read_to_end(&mut e, &mut body).unwrap();
        assert_eq!(body, b"\x7fELF");
    }

    #[test]
    fn tar_has_parents_and_files() {
        let t = build_tar(&[("/etc/rancher/k3s/config.yaml".into(), "a: 1\n".into())]).unwrap();
        let mut a = tar::Archive::new(&t[..]);
        let names: Vec<String> = a
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().display().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "etc/",
                "etc/rancher/",
                "etc/rancher/k3s/",
                "etc/rancher/k3s/config.yaml"
            ]
        );
    }
}
