//! The real engine: [`DockerApi`] over bollard. The one file that names bollard.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use bollard::models::{
    ContainerCreateBody, EndpointIpamConfig, EndpointSettings, HostConfig, HostConfigLogConfig,
    Ipam, IpamConfig, NetworkCreateRequest, NetworkingConfig, RestartPolicy, RestartPolicyNameEnum,
    VolumeCreateRequest,
};
use bollard::query_parameters::{
    BuildImageOptionsBuilder, CreateContainerOptionsBuilder, CreateImageOptionsBuilder,
    ListContainersOptionsBuilder, ListNetworksOptionsBuilder, ListVolumesOptionsBuilder,
    LogsOptionsBuilder, RemoveContainerOptionsBuilder, RemoveVolumeOptions,
    StopContainerOptionsBuilder, UploadToContainerOptionsBuilder,
};
use bollard::Docker;
use bytes::Bytes;
use futures_util::future::{join_all, BoxFuture};
use futures_util::stream::BoxStream;
use futures_util::{FutureExt, StreamExt};

use super::EnvInfo;
use super::{
    build_tar, endpoint, limit_help, CallFuture, ContainerState, DockerApi, DockerError,
    EngineKind, EngineLimit, HelperSpec, ImageInfo, LabelledContainer, LabelledObject, Labels,
    LogChunk, NodeSpec, Removed,
};

/// Each node's json-file log: 5 files of 200 MB. A 40k-line flood at boot is ~10 MB.
const LOG_MAX_SIZE: &str = "200m";
const LOG_MAX_FILE: &str = "5";

/// Rounds of list-and-remove before removal gives up (the engine is gone or refuses).
const REMOVE_ROUNDS: usize = 6;

/// How long a removal waits for a killed container's exit to be processed by the engine.
const EXIT_WAIT: Duration = Duration::from_secs(30);

/// The client timeout covers response headers only; it must exceed the longest stop grace.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(300);

fn err(
    op: &'static str,
    object: impl Into<String>,
) -> impl FnOnce(bollard::errors::Error) -> DockerError {
    let object = object.into();
    move |source| DockerError::Call {
        op,
        object,
        source: Box::new(source),
    }
}

/// The Docker engine repro talks to, as `DOCKER_HOST` says.
#[derive(Clone)]
pub struct Engine {
    docker: Docker,
    endpoint: String,
    kind: EngineKind,
    /// The engine's own version (`/version`'s `Version`), when it said.
    version: Option<String>,
}

impl Engine {
    /// Which engine answers (Docker or Podman).
    pub(crate) fn kind(&self) -> EngineKind {
        self.kind
    }

    /// Where the engine keeps images, containers and volumes (`docker info`'s
    /// DockerRootDir), if it says: the disk the nodes fill.
    pub(crate) async fn root_dir(&self) -> Option<String> {
        (self.docker.info().await.ok()?.docker_root_dir).filter(|d| !d.is_empty())
    }

    /// Connects as `DOCKER_HOST` says (unix, tcp, ssh), pings, and agrees on an API version
    /// (older engines such as 20.10 speak 1.41 while bollard 0.21 defaults to 1.53).
    pub(super) async fn connect() -> Result<Engine, DockerError> {
        let endpoint = endpoint();
        // `tcp://user:password@host`: the message names the engine, never its password.
        let unreachable = |reason: String| {
            let mut r = crate::redact::Redactor::new(&[]);
            DockerError::Unreachable {
                endpoint: r.redact_text(&endpoint),
                reason: r.redact_text(&reason),
            }
        };
        let docker = Docker::connect_with_defaults().map_err(|e| unreachable(e.to_string()))?;
        let docker = docker.with_timeout(CLIENT_TIMEOUT);
        match tokio::time::timeout(Duration::from_secs(15), docker.ping()).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(unreachable(e.to_string())),
            Err(_) => return Err(unreachable("no answer within 15s".into())),
        }
        let docker = docker
            .negotiate_version()
            .await
            .map_err(|e| unreachable(e.to_string()))?;
        let v = docker.version().await.ok();
        let kind = EngineKind::from_components(
            (v.iter())
                .flat_map(|v| v.components.iter().flatten())
                .map(|c| c.name.as_str()),
        );
        let version = v.and_then(|v| v.version);
        Ok(Engine {
            docker,
            endpoint,
            kind,
            version,
        })
    }

    /// The engine and its version, as errors name it (`Podman 4.3.1`).
    fn engine_name(&self) -> String {
        match &self.version {
            Some(v) => format!("{} {v}", self.kind.name()),
            None => self.kind.name().to_string(),
        }
    }

    /// Like [`err`], but a failure on one of the engine's limits says what to change.
    fn err_limit(
        &self,
        op: &'static str,
        object: &str,
    ) -> impl FnOnce(bollard::errors::Error) -> DockerError {
        let (object, engine, kind) = (object.to_string(), self.engine_name(), self.kind);
        move |source| match limit_help(&source.to_string(), kind) {
            Some(help) => DockerError::Limit(Box::new(EngineLimit {
                op,
                object,
                engine,
                source: Box::new(source),
                help,
            })),
            None => err(op, object)(source),
        }
    }

    /// Unpacks a tar at `/` of a container, through the archive API (so it works against a
    /// remote engine too: no bind mounts of local paths).
    async fn upload_tar(
        &self,
        container: &str,
        tar: Vec<u8>,
    ) -> Result<(), bollard::errors::Error> {
        let tar = Bytes::from(tar);
        self.retry_storage_race("copy files into", container, || {
            let opts = UploadToContainerOptionsBuilder::default().path("/").build();
            self.docker
                .upload_to_container(container, Some(opts), bollard::body_full(tar.clone()))
        })
        .await
    }

    /// Makes a call on a container again, after a short pause, while it fails on a transient
    /// race in the engine's image storage ([`super::is_storage_race`]): nothing about the
    /// container changed, and no event says when the race is over.
    async fn retry_storage_race<T, F>(
        &self,
        what: &str,
        container: &str,
        mut call: impl FnMut() -> F,
    ) -> Result<T, bollard::errors::Error>
    where
        F: std::future::Future<Output = Result<T, bollard::errors::Error>>,
    {
        let mut pauses = super::STORAGE_RACE_PAUSES.iter();
        loop {
            match (call().await, pauses.next()) {
                (Err(e), Some(pause)) if super::is_storage_race(&e.to_string()) => {
                    crate::errln!(
                        "warning: {} could not {what} {container} ({e}); trying again",
                        self.engine_name()
                    );
                    tokio::time::sleep(*pause).await;
                }
                (result, _) => return result,
            }
        }
    }

    async fn used_subnets(&self) -> Result<Vec<String>, DockerError> {
        let nets = self
            .docker
            .list_networks(None::<bollard::query_parameters::ListNetworksOptions>)
            .await
            .map_err(err("list", "networks"))?;
        Ok(nets
            .into_iter()
            .filter_map(|n| n.ipam.and_then(|i| i.config))
            .flatten()
            .filter_map(|c| c.subnet)
            .collect())
    }

    async fn inspect_container(
        &self,
        container: &str,
    ) -> Result<bollard::models::ContainerInspectResponse, DockerError> {
        self.docker
            .inspect_container(
                container,
                None::<bollard::query_parameters::InspectContainerOptions>,
            )
            .await
            .map_err(err("inspect container", container))
    }

    /// Creates and starts a helper container: on no network, or on its own at a fixed address.
    async fn start_helper_now(&self, spec: &HelperSpec) -> Result<(), DockerError> {
        let (network_mode, networking_config) = match &spec.network {
            None => ("none".to_string(), None),
            Some((network, ip)) => {
                let mut endpoints = HashMap::new();
                endpoints.insert(
                    network.clone(),
                    EndpointSettings {
                        ipam_config: Some(EndpointIpamConfig {
                            ipv4_address: Some(ip.clone()),
                            ..Default::default()
                        }),
                        ..Default::default()
                    },
                );
                let config = NetworkingConfig {
                    endpoints_config: Some(endpoints),
                };
                (network.clone(), Some(config))
            }
        };
        let body = ContainerCreateBody {
            image: Some(spec.image.clone()),
            entrypoint: spec.entrypoint.clone(),
            cmd: Some(spec.cmd.clone()),
            labels: Some(spec.labels.clone()),
            host_config: Some(HostConfig {
                binds: Some(spec.binds.clone()),
                network_mode: Some(network_mode),
                ..Default::default()
            }),
            networking_config,
            ..Default::default()
        };
        let opts = CreateContainerOptionsBuilder::default()
            .name(&spec.name)
            .build();
        (self.docker.create_container(Some(opts), body).await)
            .map_err(self.err_limit("create helper container", &spec.name))?;
        self.retry_storage_race("start", &spec.name, || {
            self.docker.start_container(
                &spec.name,
                None::<bollard::query_parameters::StartContainerOptions>,
            )
        })
        .await
        .map_err(self.err_limit("start helper container", &spec.name))
    }

    /// A helper container's run: created, started, waited for, its log read.
    async fn run_helper_now(&self, spec: &HelperSpec) -> Result<(i64, String), DockerError> {
        self.start_helper_now(spec).await?;
        let mut waited = self.docker.wait_container(
            &spec.name,
            None::<bollard::query_parameters::WaitContainerOptions>,
        );
        let code = match waited.next().await {
            Some(Ok(r)) => r.status_code,
            // A non-zero exit comes as the stream's error.
            Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => code,
            Some(Err(e)) => return Err(err("wait for helper container", &spec.name)(e)),
            None => -1,
        };
        let opts = LogsOptionsBuilder::default()
            .stdout(true)
            .stderr(true)
            .build();
        let mut out = Vec::new();
        let mut logs = self.log_stream(&spec.name, opts, "read the log of");
        while let Some(chunk) = logs.next().await {
            out.extend_from_slice(&chunk?.bytes);
        }
        Ok((code, String::from_utf8_lossy(&out).into_owned()))
    }

    /// Removes one container so that the engine has released its network endpoint first:
    /// killed, then waited for until its exit was processed (the engine releases the endpoint
    /// as it processes the exit), then removed with its anonymous volumes. A force-removal
    /// alone races the exit of a node that was dying on its own (its fatal line seen, its
    /// process not yet reaped), which is the order that can leave a network with an endpoint
    /// no container owns on Docker 20.10 (#30 item 7, docs/docker-engine.md).
    async fn remove_container(&self, id: &str) -> Result<(), bollard::errors::Error> {
        match self
            .docker
            .kill_container(id, None::<bollard::query_parameters::KillContainerOptions>)
            .await
        {
            // 409: not running (exited, or never started); 404: already gone (the removal
            // below says so).
            Ok(())
            | Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404 | 409,
                ..
            }) => {}
            // Anything else: the forced removal below kills it, or says why it cannot.
            Err(_) => {}
        }
        let opts = bollard::query_parameters::WaitContainerOptionsBuilder::default()
            .condition("not-running")
            .build();
        let mut exited = self.docker.wait_container(id, Some(opts));
        // Any answer will do (an exit code other than 0 is an error of the stream); bounded,
        // so an engine that never processes the exit still gets the forced removal.
        let _ = tokio::time::timeout(EXIT_WAIT, exited.next()).await;
        drop(exited);
        let rm = RemoveContainerOptionsBuilder::default()
            .force(true)
            .v(true)
            .build();
        self.docker.remove_container(id, Some(rm)).await
    }

    /// Why the engine keeps network `name` that it would not remove ("has active endpoints"),
    /// after force-disconnecting what is left of endpoints whose container is gone: the
    /// endpoint's owners as the network lists them, or none (an endpoint only the engine's
    /// own store still counts). Returns the sentence that says what is left and how to clear
    /// it, or None when the network is gone or the disconnections freed it for the next round.
    async fn explain_network(&self, name: &str) -> Option<String> {
        let net = self
            .docker
            .inspect_network(
                name,
                None::<bollard::query_parameters::InspectNetworkOptions>,
            )
            .await
            .ok()?;
        let mut foreign = Vec::new();
        let mut freed = false;
        for (id, ep) in net.containers.unwrap_or_default() {
            let owner = ep.name.clone().unwrap_or_else(|| id.clone());
            if self.inspect_container(&id).await.is_ok() {
                foreign.push(owner);
                continue;
            }
            // Its container is gone: the endpoint is a leftover of ours to let go of.
            let req = bollard::models::NetworkDisconnectRequest {
                container: owner,
                force: Some(true),
            };
            freed |= self.docker.disconnect_network(name, req).await.is_ok();
        }
        if freed && foreign.is_empty() {
            return None;
        }
        Some(stale_network_help(name, &foreign))
    }

    /// The containers part of a removal round: how many the listing found and whether one is
    /// still there after the removals, or None if the listing failed.
    async fn remove_containers(
        &self,
        filters: &HashMap<String, Vec<String>>,
        removed: &mut Removed,
        errors: &mut Vec<String>,
    ) -> Option<(usize, bool)> {
        let copts = ListContainersOptionsBuilder::default()
            .all(true)
            .filters(filters)
            .build();
        let cs = match self.docker.list_containers(Some(copts)).await {
            Ok(cs) => cs,
            Err(e) => {
                errors.push(format!("cannot list containers: {e}"));
                return None;
            }
        };
        let found = cs.len();
        let results = join_all(
            cs.into_iter()
                .filter_map(|c| c.id)
                .map(|id| async move { (self.remove_container(&id).await, id) }),
        )
        .await;
        let mut left = false;
        for (r, id) in results {
            match r {
                Ok(()) => removed.containers += 1,
                // Another remover (a second round, `repro clean`) got there first.
                Err(bollard::errors::Error::DockerResponseServerError {
                    status_code: 404, ..
                }) => {}
                Err(e) => {
                    left = true;
                    errors.push(format!("container {id}: {e}"));
                }
            }
        }
        Some((found, left))
    }

    /// One round of `remove_labelled`: list and remove containers, then networks and volumes.
    /// Returns how many objects the listings found, or None if a listing failed.
    async fn remove_round(
        &self,
        filters: &HashMap<String, Vec<String>>,
        removed: &mut Removed,
        errors: &mut Vec<String>,
    ) -> Option<usize> {
        let mut found = 0;
        let mut listed = true;
        // Networks and volumes only once no container of the set is left: a network removed
        // while one of its containers is still being torn down fails on its endpoint, and a
        // volume on its mount.
        match self.remove_containers(filters, removed, errors).await {
            Some((n, false)) => found += n,
            _ => return None,
        }
        let networks = async {
            let nopts = ListNetworksOptionsBuilder::default()
                .filters(filters)
                .build();
            match self.docker.list_networks(Some(nopts)).await {
                Ok(ns) => {
                    let names: Vec<String> = ns.into_iter().filter_map(|n| n.name).collect();
                    let n = names.len();
                    let rs = join_all(names.into_iter().map(|name| async move {
                        (self.docker.remove_network(&name).await, name)
                    }))
                    .await;
                    Ok((n, rs))
                }
                Err(e) => Err(format!("cannot list networks: {e}")),
            }
        };
        let volumes = async {
            let vopts = ListVolumesOptionsBuilder::default()
                .filters(filters)
                .build();
            match self.docker.list_volumes(Some(vopts)).await {
                Ok(vs) => {
                    let names: Vec<String> = vs
                        .volumes
                        .unwrap_or_default()
                        .into_iter()
                        .map(|v| v.name)
                        .collect();
                    let n = names.len();
                    let rs = join_all(names.into_iter().map(|name| async move {
                        let r = self
                            .docker
                            .remove_volume(&name, None::<RemoveVolumeOptions>)
                            .await;
                        (r, name)
                    }))
                    .await;
                    Ok((n, rs))
                }
                Err(e) => Err(format!("cannot list volumes: {e}")),
            }
        };
        let (ns, vs) = futures_util::join!(networks, volumes);
        for (listing, kind, count) in [
            (ns, "network", &mut removed.networks),
            (vs, "volume", &mut removed.volumes),
        ] {
            match listing {
                Ok((n, rs)) => {
                    found += n;
                    for (r, name) in rs {
                        match r {
                            Ok(()) => *count += 1,
                            Err(e)
                                if kind == "network"
                                    && e.to_string().contains("active endpoints") =>
                            {
                                match self.explain_network(&name).await {
                                    Some(why) => errors.push(why),
                                    // Freed (or gone): the next round removes it.
                                    None => errors.push(format!("{kind} {name}: {e}")),
                                }
                            }
                            Err(e) => errors.push(format!("{kind} {name}: {e}")),
                        }
                    }
                }
                Err(e) => {
                    listed = false;
                    errors.push(e);
                }
            }
        }
        listed.then_some(found)
    }
}

/// A piece of a container's output (its logs, an exec's), stderr told apart.
fn log_chunk(o: bollard::container::LogOutput) -> LogChunk {
    match o {
        bollard::container::LogOutput::StdErr { message } => LogChunk {
            stderr: true,
            bytes: message,
        },
        other => LogChunk {
            stderr: false,
            bytes: other.into_bytes(),
        },
    }
}

/// The bridge driver's MTU option (a network's, and the default bridge's from dockerd `--mtu`).
const MTU_OPTION: &str = "com.docker.network.driver.mtu";

/// Whether `docker info`'s DriverStatus says the containerd image store
/// (`driver-type: io.containerd.snapshotter.v1`).
fn is_containerd_store(status: &[Vec<String>]) -> bool {
    status.iter().any(|kv| {
        kv.first().is_some_and(|k| k == "driver-type")
            && kv
                .get(1)
                .is_some_and(|v| v.starts_with("io.containerd.snapshotter"))
    })
}

impl Engine {
    /// The MTU option of the engine's default bridge (`bridge`), when it sets one: what dockerd
    /// `--mtu` gives containers there (a user-defined network does not inherit it).
    async fn bridge_mtu(&self) -> Option<u32> {
        let net = self
            .docker
            .inspect_network(
                "bridge",
                None::<bollard::query_parameters::InspectNetworkOptions>,
            )
            .await
            .ok()?;
        net.options?.get(MTU_OPTION)?.parse().ok()
    }
}

/// systemd's halt signal: what a systemd node's container is stopped with.
pub(crate) const SYSTEMD_STOP_SIGNAL: &str = "SIGRTMIN+3";

/// The create request of a node: set up as k3d sets up real k3s (see `create_node`), systemd
/// nodes as docs/systemd-nodes.md says. Pure, so its settings are unit-tested.
fn create_body(spec: &NodeSpec) -> ContainerCreateBody {
    let tmpfs: HashMap<String, String> = super::tmpfs_paths(spec.systemd)
        .iter()
        .map(|p| (p.to_string(), String::new()))
        .collect();
    let mut binds = vec![format!("{}:{}", spec.data_volume, spec.data_dir)];
    binds.extend(
        spec.image_volumes
            .iter()
            .map(|(name, path)| format!("{name}:{path}")),
    );
    binds.extend(spec.host_ro.iter().map(|p| format!("{p}:{p}:ro")));
    if spec.systemd && !spec.privileged {
        // Unprivileged systemd on cgroup v1 (docs/systemd-nodes.md): the stand-in only reads
        // it. A privileged node gets none: rke2's kubelet and containerd (and, on cgroup v2,
        // systemd itself) create cgroups, and rke2's own tests/docker bind nothing over
        // /sys/fs/cgroup (#31; docs/rke2-behaviour.md §10).
        binds.push("/sys/fs/cgroup:/sys/fs/cgroup:ro".to_string());
    }
    if spec.systemd && spec.privileged {
        // The host's kernel modules, read-only, as rke2's tests/docker mount them: rke2's units
        // `modprobe br_netfilter` and `overlay` before they start.
        binds.push("/lib/modules:/lib/modules:ro".to_string());
    }
    let mut endpoints = HashMap::new();
    endpoints.insert(
        spec.network.clone(),
        EndpointSettings {
            ipam_config: Some(EndpointIpamConfig {
                ipv4_address: Some(spec.ip.clone()),
                ..Default::default()
            }),
            aliases: Some(vec![spec.hostname.clone()]),
            ..Default::default()
        },
    );
    ContainerCreateBody {
        image: Some(spec.image.clone()),
        hostname: Some(spec.hostname.clone()),
        // SIGTERM as `docker stop` sends it. As PID 1, k3s up to v1.31.13/v1.32.9/v1.33.5/
        // v1.34.1 exits at once on it, not gracefully: its `k3s init` parent has no
        // handler, and the kernel kills the server child with it (pkg/cli/cmds/
        // log_linux.go); from v1.32.10/v1.34.2 the parent passes SIGINT on and waits
        // (k3s "Fix signal handling when pid 1"). docs/k3s-review-2026-12.md §7.
        // A systemd node stops on SIGRTMIN+3, systemd's halt (systemd(1)): its base image
        // may declare none (rancher/systemd-node has no STOPSIGNAL), and SIGTERM makes
        // systemd as PID 1 re-execute itself, so the stop would wait out its grace and end
        // in SIGKILL with no `Stopped` entries. It keeps its image's command (systemd).
        stop_signal: Some(
            if spec.systemd {
                SYSTEMD_STOP_SIGNAL
            } else {
                spec.stop_signal.as_str()
            }
            .into(),
        ),
        stop_timeout: Some(spec.stop_grace.as_secs() as i64),
        cmd: (!spec.systemd).then(|| spec.cmd.clone()),
        env: Some(spec.env.clone()),
        labels: Some(spec.labels.clone()),
        host_config: Some(HostConfig {
            privileged: Some(spec.privileged),
            init: Some(false),
            userns_mode: Some("host".into()),
            tmpfs: Some(tmpfs),
            network_mode: Some(spec.network.clone()),
            extra_hosts: Some(spec.extra_hosts.clone()),
            binds: Some(binds),
            // json-file whatever the daemon's default (journald or `none` cannot be
            // followed), sized so no boot's lines are rotated away during a run: the
            // follower reopens a stalled stream from its last timestamp, which only works
            // while those lines are still in the file.
            log_config: Some(HostConfigLogConfig {
                typ: Some("json-file".into()),
                config: Some(
                    [("max-size", LOG_MAX_SIZE), ("max-file", LOG_MAX_FILE)]
                        .into_iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
            }),
            // Not k3d's unless-stopped: a node that dies must stay dead so its death is
            // observed once, with its last lines, instead of looping through new boots.
            restart_policy: Some(RestartPolicy {
                name: Some(RestartPolicyNameEnum::NO),
                maximum_retry_count: None,
            }),
            ..Default::default()
        }),
        networking_config: Some(NetworkingConfig {
            endpoints_config: Some(endpoints),
        }),
        ..Default::default()
    }
}

impl DockerApi for Engine {
    fn describe(&self) -> BoxFuture<'_, EnvInfo> {
        async move {
            let mut env = EnvInfo {
                docker_host: self.endpoint.clone(),
                engine: Some(self.kind),
                ..Default::default()
            };
            if let Ok(v) = self.docker.version().await {
                env.docker_version = v.version;
                env.docker_api_version = v.api_version;
                env.kernel = v.kernel_version;
                env.arch = v.arch;
            }
            if let Ok(i) = self.docker.info().await {
                env.os = i.operating_system;
                env.cpus = i.ncpu;
                env.memory_bytes = i.mem_total;
                env.cgroup_version = i
                    .cgroup_version
                    .map(|v| v.to_string())
                    .filter(|v| !v.is_empty());
                env.cgroup_driver = i
                    .cgroup_driver
                    .map(|d| d.to_string())
                    .filter(|d| !d.is_empty());
                env.storage_driver = i.driver.filter(|d| !d.is_empty());
                env.containerd_store = Some(is_containerd_store(
                    i.driver_status.as_deref().unwrap_or_default(),
                ));
            }
            env.bridge_mtu = self.bridge_mtu().await;
            env
        }
        .boxed()
    }

    /// Streamed to the engine in chunks: memory stays flat whatever the archive's size (reading
    /// it whole took 2× its size in RSS). Only a regular file is read: `/dev/zero` would never
    /// end and a FIFO could block (the flag is checked at parsing too; this re-checks the file
    /// actually opened).
    fn load_archive<'a>(&'a self, path: &'a Path) -> CallFuture<'a, ()> {
        async move {
            let archive_err = |source| DockerError::Archive {
                path: path.to_path_buf(),
                source,
            };
            let meta = tokio::fs::metadata(path).await.map_err(archive_err)?;
            if !meta.is_file() {
                return Err(archive_err(std::io::Error::other("not a regular file")));
            }
            let file = tokio::fs::File::open(path).await.map_err(archive_err)?;
            if !file.metadata().await.map_err(archive_err)?.is_file() {
                return Err(archive_err(std::io::Error::other("not a regular file")));
            }
            let body = tokio_util::io::ReaderStream::with_capacity(file, 1 << 20);
            let opts = bollard::query_parameters::ImportImageOptionsBuilder::default().build();
            let mut stream = self.docker.import_image_stream(opts, body, None);
            while let Some(item) = stream.next().await {
                item.map_err(err("load image archive", path.display().to_string()))?;
            }
            Ok(())
        }
        .boxed()
    }

    fn image<'a>(&'a self, image: &'a str) -> BoxFuture<'a, Option<ImageInfo>> {
        async move {
            let i = self.docker.inspect_image(image).await.ok()?;
            let config = i.config.unwrap_or_default();
            let mut volumes: Vec<String> = config.volumes.unwrap_or_default();
            volumes.sort();
            Some(ImageInfo {
                id: i.id,
                labels: config.labels.unwrap_or_default(),
                volumes,
            })
        }
        .boxed()
    }

    fn build_image<'a>(&'a self, tag: &'a str, context: Vec<u8>) -> CallFuture<'a, ()> {
        async move {
            let options = BuildImageOptionsBuilder::new()
                .dockerfile("Dockerfile")
                .t(tag)
                .rm(true)
                .forcerm(true)
                .build();
            let body = bollard::body_full(context.into());
            let mut stream = self.docker.build_image(options, None, Some(body));
            // The step's own last lines: the engine's error only says "returned a non-zero
            // code", the reason (tar's, sha256sum's) is in the output before it.
            let mut said: std::collections::VecDeque<String> = Default::default();
            let failed = |message: String, said: &std::collections::VecDeque<String>| {
                let output = Vec::from(said.clone()).join("; ");
                DockerError::Call {
                    op: "build image",
                    object: tag.to_string(),
                    source: if output.is_empty() {
                        message.into()
                    } else {
                        format!("{message} (the step's last lines: {output})").into()
                    },
                }
            };
            while let Some(item) = stream.next().await {
                let info = match item {
                    Ok(info) => info,
                    // A failed step: bollard turns its error item into a stream error.
                    Err(e @ bollard::errors::Error::DockerStreamError { .. }) => {
                        return Err(failed(e.to_string(), &said))
                    }
                    Err(e) => return Err(err("build image", tag)(e)),
                };
                if let Some(detail) = info.error_detail {
                    let message = detail.message.unwrap_or_else(|| "unknown error".into());
                    return Err(failed(message, &said));
                }
                // Its stderr comes coloured (`ESC[91m`).
                for l in info.stream.iter().flat_map(|s| s.lines()) {
                    let l = crate::term::strip_ansi(l);
                    let l = l.trim();
                    if !l.is_empty()
                        && !l.starts_with("Step ")
                        && !l.starts_with("---> ")
                        && !l.starts_with("Removing intermediate container")
                    {
                        if said.len() == 6 {
                            said.pop_front();
                        }
                        said.push_back(l.chars().take(300).collect());
                    }
                }
            }
            Ok(())
        }
        .boxed()
    }

    fn pull<'a>(
        &'a self,
        image: &'a str,
        progress: &'a mut (dyn FnMut(usize, usize) + Send),
    ) -> CallFuture<'a, ()> {
        async move {
            let (name, tag) = split_image(image);
            let opts = CreateImageOptionsBuilder::default()
                .from_image(name)
                .tag(tag)
                .build();
            let mut stream = self.docker.create_image(Some(opts), None, None);
            let mut layers: HashMap<String, bool> = HashMap::new();
            while let Some(item) = stream.next().await {
                let info = item.map_err(err("pull image", image))?;
                if let Some(id) = info.id {
                    let done = matches!(
                        info.status.as_deref(),
                        Some("Pull complete" | "Already exists")
                    );
                    let e = layers.entry(id).or_insert(false);
                    *e |= done;
                    progress(layers.values().filter(|d| **d).count(), layers.len());
                }
            }
            Ok(())
        }
        .boxed()
    }

    /// On the first free /24 of the run range (`address.rs`). Two runs racing for one subnet:
    /// the loser's create fails with an overlap and it tries the next one.
    fn create_network<'a>(
        &'a self,
        name: &'a str,
        labels: &'a Labels,
        mtu: Option<u32>,
    ) -> CallFuture<'a, u8> {
        async move {
            let mut last = None;
            for third in super::address::THIRDS {
                let subnet = super::address::subnet(third);
                if self.used_subnets().await?.iter().any(|s| s == &subnet) {
                    continue;
                }
                let req = NetworkCreateRequest {
                    name: name.to_string(),
                    driver: Some("bridge".into()),
                    labels: Some(labels.clone()),
                    options: mtu.map(|m| {
                        [(MTU_OPTION.to_string(), m.to_string())]
                            .into_iter()
                            .collect()
                    }),
                    ipam: Some(Ipam {
                        config: Some(vec![IpamConfig {
                            subnet: Some(subnet.clone()),
                            gateway: Some(super::address::gateway(third)),
                            ..Default::default()
                        }]),
                        ..Default::default()
                    }),
                    ..Default::default()
                };
                match self.docker.create_network(req).await {
                    Ok(_) => return Ok(third),
                    // Docker says "overlap"; Podman (netavark) says "subnet … is already used
                    // on the host or by another config" for a bridge of another engine.
                    Err(e) if is_subnet_taken(&e.to_string()) => last = Some(e),
                    Err(e) => return Err(err("create network", name)(e)),
                }
            }
            Err(err("create network", name)(
                last.unwrap_or(bollard::errors::Error::RequestTimeoutError),
            ))
        }
        .boxed()
    }

    fn create_volume<'a>(&'a self, name: &'a str, labels: &'a Labels) -> CallFuture<'a, ()> {
        async move {
            let req = VolumeCreateRequest {
                name: Some(name.into()),
                labels: Some(labels.clone()),
                ..Default::default()
            };
            self.docker
                .create_volume(req)
                .await
                .map_err(err("create volume", name))?;
            Ok(())
        }
        .boxed()
    }

    /// Set up as k3d sets up real k3s — except that k3s runs as PID 1 (no docker-init), as in
    /// k3s's own tests/docker: on a cgroup-v2 host k3s empties the root cgroup for the kubelet
    /// only when it is PID 1 (`EvacuateCgroup2`, pkg/cli/cmds/init_linux.go), which k3d
    /// replaces with an entrypoint script. As PID 1 k3s also reaps its children itself (k3s PR
    /// #4086). docs/k3s-behaviour.md.
    fn create_node<'a>(&'a self, spec: &'a NodeSpec) -> CallFuture<'a, ()> {
        async move {
            let body = create_body(spec);
            let opts = CreateContainerOptionsBuilder::default()
                .name(&spec.name)
                .build();
            self.docker
                .create_container(Some(opts), body)
                .await
                .map_err(self.err_limit("create container", &spec.name))?;
            Ok(())
        }
        .boxed()
    }

    /// Through the archive API, so it works against a remote engine too: no bind mounts of
    /// local paths.
    fn upload<'a>(
        &'a self,
        container: &'a str,
        files: &'a [(String, String)],
    ) -> CallFuture<'a, ()> {
        async move {
            let tar = build_tar(files).map_err(|source| DockerError::Pack {
                container: container.to_string(),
                source,
            })?;
            self.upload_tar(container, tar)
                .await
                .map_err(err("copy files into", container))
        }
        .boxed()
    }

    fn upload_executable<'a>(
        &'a self,
        container: &'a str,
        host: &'a Path,
        path: &'a str,
    ) -> CallFuture<'a, ()> {
        async move {
            let pack = |source| DockerError::Pack {
                container: container.to_string(),
                source,
            };
            let content = tokio::fs::read(host).await.map_err(pack)?;
            let tar = super::executable_tar(path, &content).map_err(pack)?;
            self.upload_tar(container, tar)
                .await
                .map_err(err("copy the build under test into", container))
        }
        .boxed()
    }

    fn start<'a>(&'a self, container: &'a str) -> CallFuture<'a, ()> {
        async move {
            self.retry_storage_race("start", container, || {
                self.docker.start_container(
                    container,
                    None::<bollard::query_parameters::StartContainerOptions>,
                )
            })
            .await
            .map_err(self.err_limit("start container", container))
        }
        .boxed()
    }

    fn remove_node<'a>(&'a self, container: &'a str) -> CallFuture<'a, ()> {
        async move {
            (self.remove_container(container).await).map_err(err("remove container", container))
        }
        .boxed()
    }

    fn stop<'a>(&'a self, container: &'a str, grace: Duration) -> CallFuture<'a, ()> {
        async move {
            let opts = StopContainerOptionsBuilder::default()
                .t(grace.as_secs() as i32)
                .build();
            match self.docker.stop_container(container, Some(opts)).await {
                Ok(()) => Ok(()),
                // 304: already stopped (a node that died on its own).
                Err(bollard::errors::Error::DockerResponseServerError {
                    status_code: 304, ..
                }) => Ok(()),
                Err(e) => Err(err("stop container", container)(e)),
            }
        }
        .boxed()
    }

    fn state<'a>(&'a self, container: &'a str) -> CallFuture<'a, ContainerState> {
        async move {
            let s = self.inspect_container(container).await?.state;
            let s = s.unwrap_or_default();
            Ok(ContainerState {
                running: s.running.unwrap_or(false),
                finished_at: s.finished_at,
                exit_code: s.exit_code,
                oom_killed: s.oom_killed.unwrap_or(false),
            })
        }
        .boxed()
    }

    fn inspect_json<'a>(&'a self, container: &'a str) -> CallFuture<'a, serde_json::Value> {
        async move {
            let c = self.inspect_container(container).await?;
            Ok(serde_json::to_value(c).unwrap_or_default())
        }
        .boxed()
    }

    /// From `since_secs` in whole seconds, so the caller drops lines older than the boot it
    /// watches by their timestamps.
    fn follow_logs(
        &self,
        container: &str,
        since_secs: i64,
    ) -> BoxStream<'static, Result<LogChunk, DockerError>> {
        let opts = LogsOptionsBuilder::default()
            .follow(true)
            .stdout(true)
            .stderr(true)
            .timestamps(true)
            .since(since_secs.clamp(0, i32::MAX as i64) as i32)
            .build();
        self.log_stream(container, opts, "follow logs of")
    }

    /// The output is stdout and stderr together.
    fn exec<'a>(&'a self, container: &'a str, cmd: &'a [String]) -> CallFuture<'a, (i64, String)> {
        async move {
            let mut out = Vec::new();
            let code = self
                .exec_streamed(container, cmd, &mut |c: LogChunk| {
                    out.extend_from_slice(&c.bytes)
                })
                .await?;
            Ok((code, String::from_utf8_lossy(&out).into_owned()))
        }
        .boxed()
    }

    fn exec_stream(
        &self,
        container: &str,
        cmd: Vec<String>,
    ) -> BoxStream<'static, Result<LogChunk, DockerError>> {
        let docker = self.docker.clone();
        let name = container.to_string();
        let fail = {
            let name = name.clone();
            move |source: bollard::errors::Error| DockerError::Call {
                op: "exec in",
                object: name.clone(),
                source: Box::new(source),
            }
        };
        let started = async move {
            let cfg = bollard::models::ExecConfig {
                attach_stdout: Some(true),
                attach_stderr: Some(true),
                cmd: Some(cmd),
                ..Default::default()
            };
            let created = docker.create_exec(&name, cfg).await.map_err(&fail)?;
            match docker.start_exec(&created.id, None).await.map_err(&fail)? {
                bollard::exec::StartExecResults::Attached { output, .. } => Ok(output
                    .map(move |item| item.map(log_chunk).map_err(&fail))
                    .boxed()),
                bollard::exec::StartExecResults::Detached => {
                    Ok(futures_util::stream::empty().boxed())
                }
            }
        };
        futures_util::stream::once(started)
            .flat_map(|r: Result<BoxStream<'static, _>, DockerError>| match r {
                Ok(s) => s,
                Err(e) => futures_util::stream::once(async move { Err(e) }).boxed(),
            })
            .boxed()
    }

    /// Created, started and waited for on no network, its output read once it ended; removed
    /// whatever happened (a helper that cannot be removed is said, its labels let `clean`
    /// find it).
    fn run_helper<'a>(&'a self, spec: &'a HelperSpec) -> CallFuture<'a, (i64, String)> {
        async move {
            let ran = self.run_helper_now(spec).await;
            let removed = self.remove_container(&spec.name).await;
            let out = ran?;
            removed.map_err(err("remove helper container", &spec.name))?;
            Ok(out)
        }
        .boxed()
    }

    fn start_helper<'a>(&'a self, spec: &'a HelperSpec) -> CallFuture<'a, ()> {
        self.start_helper_now(spec).boxed()
    }

    fn download<'a>(
        &'a self,
        container: &'a str,
        path: &'a str,
    ) -> CallFuture<'a, Option<Vec<u8>>> {
        async move {
            let opts = bollard::query_parameters::DownloadFromContainerOptionsBuilder::new()
                .path(path)
                .build();
            let mut stream = self.docker.download_from_container(container, Some(opts));
            let mut tar = Vec::new();
            while let Some(chunk) = stream.next().await {
                match chunk {
                    Ok(b) => tar.extend_from_slice(&b),
                    Err(bollard::errors::Error::DockerResponseServerError {
                        status_code: 404,
                        ..
                    }) => return Ok(None),
                    Err(e) => return Err(err("copy a file out of", container)(e)),
                }
            }
            super::first_file_of_tar(&tar).map_err(|source| DockerError::Pack {
                container: container.to_string(),
                source,
            })
        }
        .boxed()
    }

    fn remove_container<'a>(&'a self, container: &'a str) -> CallFuture<'a, ()> {
        async move {
            Engine::remove_container(self, container)
                .await
                .map_err(err("remove container", container))
        }
        .boxed()
    }

    /// Each container goes with its anonymous volumes (`-v`). Lists again until nothing is
    /// left: an object whose create call was still landing when removal began shows up in the
    /// next listing. A listing that fails is an error, never "nothing there". Goes on past
    /// individual failures; `errors` holds those of the last round only (a network still in
    /// use in round 1 is gone in round 2), and `complete` says a listing came back empty.
    fn remove_labelled<'a>(
        &'a self,
        label: &'a str,
        value: Option<&'a str>,
    ) -> BoxFuture<'a, Removed> {
        async move {
            let filter = match value {
                Some(v) => format!("{label}={v}"),
                None => label.to_string(),
            };
            let mut filters = HashMap::new();
            filters.insert("label".to_string(), vec![filter]);
            let mut removed = Removed::default();
            for round in 0..REMOVE_ROUNDS {
                // The round after a clean one only confirms that the listings are empty: at
                // once, as it is at the end of every run. Backoff between the rounds after a
                // problem, or after a confirmation found more: the engine finishes a removal
                // or a late create.
                if round > 1 || (round == 1 && !removed.errors.is_empty()) {
                    tokio::time::sleep(Duration::from_millis(200 * round as u64)).await;
                }
                let mut errors = Vec::new();
                let found = self.remove_round(&filters, &mut removed, &mut errors).await;
                if found == Some(0) && errors.is_empty() {
                    removed.complete = true;
                    removed.errors.clear();
                    return removed;
                }
                removed.errors = errors;
            }
            removed.errors.push(format!(
                "objects labelled {} were still listed after {REMOVE_ROUNDS} rounds of removal",
                filters["label"][0]
            ));
            removed
        }
        .boxed()
    }
}

/// What `repro runs` asks of the engine: the containers of runs, a kept node's log, a command
/// in it.
impl Engine {
    /// Every container with `label` (any value), running or not.
    pub(crate) async fn containers_labelled(
        &self,
        label: &str,
    ) -> Result<Vec<LabelledContainer>, DockerError> {
        let mut filters = HashMap::new();
        filters.insert("label".to_string(), vec![label.to_string()]);
        let opts = ListContainersOptionsBuilder::default()
            .all(true)
            .filters(&filters)
            .build();
        let cs = (self.docker.list_containers(Some(opts)).await)
            .map_err(err("list", format!("containers labelled {label}")))?;
        Ok(cs
            .into_iter()
            .map(|c| LabelledContainer {
                name: (c.names.into_iter().flatten().next())
                    .map(|n| n.trim_start_matches('/').to_string())
                    .or(c.id)
                    .unwrap_or_default(),
                labels: c.labels.unwrap_or_default(),
                running: c.state == Some(bollard::models::ContainerSummaryStateEnum::RUNNING),
            })
            .collect())
    }

    /// Every container, network and volume with `label` (any value), with its labels: what
    /// `repro clean --orphans` groups by run.
    pub(crate) async fn objects_labelled(
        &self,
        label: &str,
    ) -> Result<Vec<LabelledObject>, DockerError> {
        let mut out: Vec<LabelledObject> = (self.containers_labelled(label).await?)
            .into_iter()
            .map(|c| LabelledObject {
                kind: "container",
                labels: c.labels,
            })
            .collect();
        let mut filters = HashMap::new();
        filters.insert("label".to_string(), vec![label.to_string()]);
        let nopts = ListNetworksOptionsBuilder::default()
            .filters(&filters)
            .build();
        let ns = (self.docker.list_networks(Some(nopts)).await)
            .map_err(err("list", format!("networks labelled {label}")))?;
        out.extend(ns.into_iter().map(|n| LabelledObject {
            kind: "network",
            labels: n.labels.unwrap_or_default(),
        }));
        let vopts = ListVolumesOptionsBuilder::default()
            .filters(&filters)
            .build();
        let vs = (self.docker.list_volumes(Some(vopts)).await)
            .map_err(err("list", format!("volumes labelled {label}")))?;
        out.extend(
            vs.volumes
                .unwrap_or_default()
                .into_iter()
                .map(|v| LabelledObject {
                    kind: "volume",
                    labels: v.labels,
                }),
        );
        Ok(out)
    }

    /// A container's log as `docker logs` prints it (no timestamps): what it wrote so far, and
    /// with `follow` what it writes next, until it stops.
    pub(crate) fn logs(
        &self,
        container: &str,
        follow: bool,
    ) -> BoxStream<'static, Result<LogChunk, DockerError>> {
        let opts = LogsOptionsBuilder::default()
            .follow(follow)
            .stdout(true)
            .stderr(true)
            .build();
        self.log_stream(container, opts, "read logs of")
    }

    fn log_stream(
        &self,
        container: &str,
        opts: bollard::query_parameters::LogsOptions,
        op: &'static str,
    ) -> BoxStream<'static, Result<LogChunk, DockerError>> {
        let name = container.to_string();
        self.docker
            .logs(container, Some(opts))
            .map(move |item| item.map(log_chunk).map_err(|e| err(op, name.clone())(e)))
            .boxed()
    }

    /// Runs a command in a running container, handing its output to `on_chunk` as it comes
    /// (stdout and stderr apart), and returns its exit code (-1 if the engine does not say).
    pub(crate) async fn exec_streamed(
        &self,
        container: &str,
        cmd: &[String],
        on_chunk: &mut (dyn FnMut(LogChunk) + Send),
    ) -> Result<i64, DockerError> {
        let cfg = bollard::models::ExecConfig {
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            cmd: Some(cmd.to_vec()),
            ..Default::default()
        };
        let created =
            (self.docker.create_exec(container, cfg).await).map_err(err("exec in", container))?;
        match (self.docker.start_exec(&created.id, None).await)
            .map_err(err("exec in", container))?
        {
            bollard::exec::StartExecResults::Attached { mut output, .. } => {
                while let Some(chunk) = output.next().await {
                    match chunk {
                        Ok(c) => on_chunk(log_chunk(c)),
                        Err(e) => return Err(err("read exec output in", container)(e)),
                    }
                }
            }
            bollard::exec::StartExecResults::Detached => {}
        }
        Ok((self.docker.inspect_exec(&created.id).await)
            .map_err(err("inspect exec in", container))?
            .exit_code
            .unwrap_or(-1))
    }
}

/// What to say of a network the engine keeps because it counts endpoints on it: `attached` are
/// the containers it lists that still exist (not the run's: those were removed first). None
/// listed means the endpoint is a stale one inside the engine's network store, which Docker
/// 20.10 reconciles only when it starts (moby/moby#42119, #43286).
pub(crate) fn stale_network_help(network: &str, attached: &[String]) -> String {
    if attached.is_empty() {
        format!(
            "network {network} is left: the engine still counts an endpoint on it, but no container \
             is attached (a stale endpoint inside Docker's network store, left by an earlier \
             container removal); `docker network disconnect -f` cannot reach it and only a \
             restart of the engine clears it: restart Docker (`sudo systemctl restart docker`), \
             then `docker network rm {network}`"
        )
    } else {
        let names = attached.join(", ");
        let first = &attached[0];
        format!(
            "network {network} is left: container(s) {names} (not this run's) are attached to it; \
             disconnect them (`docker network disconnect -f {network} {first}`), then \
             `docker network rm {network}`"
        )
    }
}

/// Whether a network create failed only because its subnet is taken (try the next one).
fn is_subnet_taken(message: &str) -> bool {
    message.contains("overlap") || message.contains("is already used on the host")
}

fn split_image(image: &str) -> (&str, &str) {
    // A ':' after the last '/' separates the tag (a ':' before it is a registry port).
    match image.rfind(':') {
        Some(i) if !image[i..].contains('/') => (&image[..i], &image[i + 1..]),
        _ => (image, "latest"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subnet_taken_is_recognised_from_docker_and_from_podman() {
        assert!(is_subnet_taken(
            "Error response from daemon: Pool overlaps with other one on this address space"
        ));
        assert!(is_subnet_taken(
            "Docker responded with status code 500: subnet 10.213.0.0/24 is already used on the host or by another config"
        ));
        assert!(!is_subnet_taken("network with name repro-1 already exists"));
    }

    /// #30 item 7: a network the engine keeps is explained — a container still attached is
    /// named with the command that frees it; none attached is the engine's stale endpoint,
    /// which only its restart clears (no `disconnect` advice that cannot work).
    #[test]
    fn a_kept_network_is_explained_by_what_holds_it() {
        let held = stale_network_help("repro-ab12", &["debug-shell".to_string()]);
        assert!(held.contains("debug-shell"), "{held}");
        assert!(
            held.contains("docker network disconnect -f repro-ab12 debug-shell"),
            "{held}"
        );
        let stale = stale_network_help("repro-ab12", &[]);
        assert!(stale.contains("stale endpoint"), "{stale}");
        assert!(stale.contains("restart"), "{stale}");
        assert!(stale.contains("docker network rm repro-ab12"), "{stale}");
        assert!(!stale.contains("disconnect -f repro-ab12"), "{stale}");
    }

    #[test]
    fn splits_image_refs() {
        assert_eq!(
            split_image("rancher/k3s:v1.33.4-k3s1"),
            ("rancher/k3s", "v1.33.4-k3s1")
        );
        assert_eq!(
            split_image("localhost:5000/k3s"),
            ("localhost:5000/k3s", "latest")
        );
        assert_eq!(
            split_image("localhost:5000/k3s:v1"),
            ("localhost:5000/k3s", "v1")
        );
    }

    /// Needs a Docker engine; fails (does not skip) without one. After negotiation the client
    /// never claims more than the engine speaks (Docker 20.10 here: 1.41; bollard 0.21's
    /// default is 1.53), or every call after the ping would be refused.
    #[tokio::test]
    async fn connect_agrees_on_an_api_version_the_engine_speaks() {
        let engine = Engine::connect()
            .await
            .expect("Docker must be reachable for this test: start the engine or set DOCKER_HOST");
        let server = engine.docker.version().await.expect("engine version");
        let server_api = server.api_version.expect("engine API version");
        let (major, minor) = server_api.split_once('.').expect("API version like 1.41");
        let server_version = bollard::ClientVersion {
            major_version: major.parse().expect("major"),
            minor_version: minor.parse().expect("minor"),
        };
        assert!(
            engine.docker.client_version() <= server_version,
            "{server_api}"
        );
    }

    fn node(privileged: bool, systemd: bool) -> NodeSpec {
        NodeSpec {
            name: "repro-ab12-etcd-1".into(),
            hostname: "etcd-1".into(),
            image: "repro.local/rke2-node:x".into(),
            cmd: vec![],
            env: vec![],
            labels: Labels::new(),
            network: "repro-ab12".into(),
            ip: "10.213.0.10".into(),
            extra_hosts: vec![],
            data_volume: "repro-ab12-etcd-1-data".into(),
            data_dir: "/var/lib/rancher/rke2".into(),
            image_volumes: vec![],
            privileged,
            stop_grace: Duration::from_secs(20),
            stop_signal: "SIGTERM".into(),
            systemd,
            host_ro: vec![],
        }
    }

    /// #31: a privileged systemd node (real rke2) is set up as rke2's tests/docker set it up:
    /// nothing over /sys/fs/cgroup (its kubelet and containerd create cgroups), /lib/modules
    /// read-only; the unprivileged stand-in keeps the read-only cgroup tree it needs on cgroup
    /// v1. Every systemd node stops with systemd's halt signal, a k3s node with SIGTERM.
    #[test]
    fn a_privileged_systemd_node_has_no_cgroup_bind_and_every_systemd_node_halts() {
        let binds = |s: &NodeSpec| create_body(s).host_config.unwrap().binds.unwrap();
        let real = node(true, true);
        let b = binds(&real);
        assert!(!b.iter().any(|m| m.contains("/sys/fs/cgroup")), "{b:?}");
        assert!(
            b.contains(&"/lib/modules:/lib/modules:ro".to_string()),
            "{b:?}"
        );
        assert!(create_body(&real).host_config.unwrap().privileged == Some(true));
        let stand_in = node(false, true);
        let b = binds(&stand_in);
        assert!(
            b.contains(&"/sys/fs/cgroup:/sys/fs/cgroup:ro".to_string()),
            "{b:?}"
        );
        assert!(!b.iter().any(|m| m.starts_with("/lib/modules")), "{b:?}");
        for s in [&real, &stand_in] {
            assert_eq!(create_body(s).stop_signal.as_deref(), Some("SIGRTMIN+3"));
            assert_eq!(create_body(s).cmd, None, "systemd is the image's command");
        }
        let k3s = node(true, false);
        assert_eq!(create_body(&k3s).stop_signal.as_deref(), Some("SIGTERM"));
        assert!(!binds(&k3s)
            .iter()
            .any(|m| m.contains("cgroup") || m.contains("modules")));
    }
}
