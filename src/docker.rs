//! The one Docker client wrapper: every call names the operation and the object when it fails,
//! and everything repro creates carries labels so cleanup can find it by label alone.

use std::collections::HashMap;
use std::time::Duration;

use bollard::models::{
    ContainerCreateBody, EndpointIpamConfig, EndpointSettings, HostConfig, HostConfigLogConfig,
    Ipam, IpamConfig, NetworkCreateRequest, NetworkingConfig, RestartPolicy, RestartPolicyNameEnum,
    VolumeCreateRequest,
};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, CreateImageOptionsBuilder, ListContainersOptionsBuilder,
    ListNetworksOptionsBuilder, ListVolumesOptionsBuilder, LogsOptionsBuilder,
    RemoveContainerOptionsBuilder, RemoveVolumeOptions, StopContainerOptionsBuilder,
    UploadToContainerOptionsBuilder,
};
use bollard::Docker;
use bytes::Bytes;
use futures_util::future::{join_all, BoxFuture};
use futures_util::stream::BoxStream;
use futures_util::{FutureExt, Stream, StreamExt};

/// Label keys on every container, network and volume of a run. Never the token.
pub const LABEL_MANAGED: &str = "io.repro.managed";
pub const LABEL_RUN: &str = "io.repro.run";
pub const LABEL_CHECK: &str = "io.repro.check";
pub const LABEL_NODE: &str = "io.repro.node";

/// Each node's json-file log: 5 files of 200 MB. A 40k-line flood at boot is ~10 MB.
const LOG_MAX_SIZE: &str = "200m";
const LOG_MAX_FILE: &str = "5";

/// Rounds of list-and-remove before removal gives up (the engine is gone or refuses).
const REMOVE_ROUNDS: usize = 6;

/// What went wrong talking to Docker. Every one is infrastructure (exit 3).
#[derive(Debug, thiserror::Error)]
pub enum DockerError {
    /// Docker is not there: what was tried and what to do.
    #[error("cannot reach the Docker engine at {endpoint}: {reason}\n  help: start Docker (e.g. `systemctl start docker`), or point DOCKER_HOST at a reachable engine (unix://, tcp://host:2375, ssh://user@host)")]
    Unreachable { endpoint: String, reason: String },
    /// A call failed: the operation and the object it was on.
    #[error("failed to {op} {object}: {source}")]
    Call {
        op: &'static str,
        object: String,
        /// Boxed: bollard's error is large, and errors travel up every layer.
        #[source]
        source: Box<bollard::errors::Error>,
    },
    #[error("failed to read image archive {}: {source}", path.display())]
    Archive {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    /// The archive of files to copy into a container could not be built.
    #[error("failed to pack files for {container}: {source}")]
    Pack {
        container: String,
        source: std::io::Error,
    },
}

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

/// The engine repro talks to: `DOCKER_HOST`, else the local socket.
pub fn endpoint() -> String {
    std::env::var("DOCKER_HOST")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unix:///var/run/docker.sock".to_string())
}

#[derive(Clone)]
pub struct Engine {
    pub docker: Docker,
    pub endpoint: String,
}

/// The client timeout covers response headers only; it must exceed the longest stop grace.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(300);

impl Engine {
    /// Connects as `DOCKER_HOST` says (unix, tcp, ssh), pings, and agrees on an API version
    /// (older engines such as 20.10 speak 1.41).
    pub async fn connect() -> Result<Engine, DockerError> {
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
        Ok(Engine { docker, endpoint })
    }

    pub async fn image_id(&self, image: &str) -> Option<String> {
        self.docker
            .inspect_image(image)
            .await
            .ok()
            .and_then(|i| i.id)
    }

    /// An image's labels (empty if it has none or is missing).
    pub async fn image_labels(&self, image: &str) -> HashMap<String, String> {
        self.docker
            .inspect_image(image)
            .await
            .ok()
            .and_then(|i| i.config)
            .and_then(|c| c.labels)
            .unwrap_or_default()
    }

    /// Pulls an image, reporting progress as (layers done, layers seen).
    pub async fn pull(
        &self,
        image: &str,
        mut progress: impl FnMut(usize, usize),
    ) -> Result<(), DockerError> {
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

    /// `docker load` of an image archive (docker save output or a k3s air-gap tarball),
    /// streamed to the engine in chunks: memory stays flat whatever the archive's size (reading
    /// it whole took 2× its size in RSS). Only a regular file is read: `/dev/zero` would never
    /// end and a FIFO could block (the flag is checked at parsing too; this re-checks the file
    /// actually opened).
    pub async fn load_archive(&self, path: &std::path::Path) -> Result<(), DockerError> {
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

    pub async fn used_subnets(&self) -> Result<Vec<String>, DockerError> {
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

    /// Creates a bridge network on the first free /24 of 10.213.0.0/16 (unusual enough to stay
    /// clear of the usual 172.17+/192.168 pools). Two runs racing for one subnet: the loser's
    /// create fails with an overlap and it tries the next one.
    pub async fn create_network(
        &self,
        name: &str,
        labels: &HashMap<String, String>,
    ) -> Result<u8, DockerError> {
        let mut last = None;
        for third in 0u8..=254 {
            let subnet = format!("10.213.{third}.0/24");
            if self.used_subnets().await?.iter().any(|s| s == &subnet) {
                continue;
            }
            let req = NetworkCreateRequest {
                name: name.to_string(),
                driver: Some("bridge".into()),
                labels: Some(labels.clone()),
                ipam: Some(Ipam {
                    config: Some(vec![IpamConfig {
                        subnet: Some(subnet.clone()),
                        gateway: Some(format!("10.213.{third}.1")),
                        ..Default::default()
                    }]),
                    ..Default::default()
                }),
                ..Default::default()
            };
            match self.docker.create_network(req).await {
                Ok(_) => return Ok(third),
                Err(e) if e.to_string().contains("overlap") => last = Some(e),
                Err(e) => return Err(err("create network", name)(e)),
            }
        }
        Err(err("create network", name)(
            last.unwrap_or(bollard::errors::Error::RequestTimeoutError),
        ))
    }

    pub async fn create_volume(
        &self,
        name: &str,
        labels: &HashMap<String, String>,
    ) -> Result<(), DockerError> {
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

    /// Creates (does not start) a k3s node container, set up as k3d sets up real k3s — except
    /// that k3s runs as PID 1 (no docker-init), as in k3s's own tests/docker: on a cgroup-v2 host
    /// k3s empties the root cgroup for the kubelet only when it is PID 1
    /// (`EvacuateCgroup2`, pkg/cli/cmds/init_linux.go), which k3d replaces with an entrypoint
    /// script. As PID 1 k3s also reaps its children itself (k3s PR #4086). docs/k3s-behaviour.md.
    pub async fn create_node(&self, spec: &NodeSpec) -> Result<(), DockerError> {
        let mut tmpfs = HashMap::new();
        tmpfs.insert("/run".to_string(), String::new());
        tmpfs.insert("/var/run".to_string(), String::new());
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
        let body = ContainerCreateBody {
            image: Some(spec.image.clone()),
            hostname: Some(spec.hostname.clone()),
            // k3s shuts down gracefully on SIGTERM (pkg/signals); `docker stop` by hand gets
            // the same signal and grace as repro's restarts.
            stop_signal: Some("SIGTERM".into()),
            stop_timeout: Some(spec.stop_grace.as_secs() as i64),
            cmd: Some(spec.cmd.clone()),
            env: Some(spec.env.clone()),
            labels: Some(spec.labels.clone()),
            host_config: Some(HostConfig {
                privileged: Some(spec.privileged),
                init: Some(false),
                userns_mode: Some("host".into()),
                tmpfs: Some(tmpfs),
                network_mode: Some(spec.network.clone()),
                binds: Some(vec![format!("{}:/var/lib/rancher/k3s", spec.data_volume)]),
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
        };
        let opts = CreateContainerOptionsBuilder::default()
            .name(&spec.name)
            .build();
        self.docker
            .create_container(Some(opts), body)
            .await
            .map_err(err("create container", &spec.name))?;
        Ok(())
    }

    /// Writes files into a container (running or not) through the archive API, so it works
    /// against a remote engine too: no bind mounts of local paths.
    pub async fn upload(
        &self,
        container: &str,
        files: &[(String, String)],
    ) -> Result<(), DockerError> {
        let tar = build_tar(files).map_err(|source| DockerError::Pack {
            container: container.to_string(),
            source,
        })?;
        let opts = UploadToContainerOptionsBuilder::default().path("/").build();
        self.docker
            .upload_to_container(container, Some(opts), bollard::body_full(Bytes::from(tar)))
            .await
            .map_err(err("copy files into", container))
    }

    pub async fn start(&self, container: &str) -> Result<(), DockerError> {
        self.docker
            .start_container(
                container,
                None::<bollard::query_parameters::StartContainerOptions>,
            )
            .await
            .map_err(err("start container", container))
    }

    pub async fn stop(&self, container: &str, grace: Duration) -> Result<(), DockerError> {
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

    pub async fn state(&self, container: &str) -> Result<ContainerState, DockerError> {
        let c = self
            .docker
            .inspect_container(
                container,
                None::<bollard::query_parameters::InspectContainerOptions>,
            )
            .await
            .map_err(err("inspect container", container))?;
        let s = c.state.unwrap_or_default();
        Ok(ContainerState {
            running: s.running.unwrap_or(false),
            started_at: s.started_at.unwrap_or_default(),
            finished_at: s.finished_at,
            exit_code: s.exit_code,
            oom_killed: s.oom_killed.unwrap_or(false),
        })
    }

    /// The raw `docker inspect` document (for the bundle; it is redacted before it leaves).
    pub async fn inspect_json(&self, container: &str) -> Result<serde_json::Value, DockerError> {
        let c = self
            .docker
            .inspect_container(
                container,
                None::<bollard::query_parameters::InspectContainerOptions>,
            )
            .await
            .map_err(err("inspect container", container))?;
        Ok(serde_json::to_value(c).unwrap_or_default())
    }

    /// Follows a container's log from `since_secs` (whole seconds, so the caller drops lines
    /// older than the boot it watches by their timestamps). Ends when the container stops.
    pub fn follow_logs(
        &self,
        container: &str,
        since_secs: i64,
    ) -> impl Stream<Item = Result<LogChunk, DockerError>> + Send + 'static {
        let opts = LogsOptionsBuilder::default()
            .follow(true)
            .stdout(true)
            .stderr(true)
            .timestamps(true)
            .since(since_secs.clamp(0, i32::MAX as i64) as i32)
            .build();
        let name = container.to_string();
        self.docker.logs(container, Some(opts)).map(move |item| {
            item.map(|o| match o {
                bollard::container::LogOutput::StdErr { message } => LogChunk {
                    stderr: true,
                    bytes: message,
                },
                other => LogChunk {
                    stderr: false,
                    bytes: other.into_bytes(),
                },
            })
            .map_err(|source| DockerError::Call {
                op: "follow logs of",
                object: name.clone(),
                source: Box::new(source),
            })
        })
    }

    /// Runs a command in a running container; returns its exit code and stdout+stderr.
    pub async fn exec(
        &self,
        container: &str,
        cmd: &[String],
    ) -> Result<(i64, String), DockerError> {
        let cfg = bollard::models::ExecConfig {
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            cmd: Some(cmd.to_vec()),
            ..Default::default()
        };
        let created = self
            .docker
            .create_exec(container, cfg)
            .await
            .map_err(err("exec in", container))?;
        let mut out = Vec::new();
        match self
            .docker
            .start_exec(&created.id, None)
            .await
            .map_err(err("exec in", container))?
        {
            bollard::exec::StartExecResults::Attached { mut output, .. } => {
                while let Some(chunk) = output.next().await {
                    match chunk {
                        Ok(c) => out.extend_from_slice(&c.into_bytes()),
                        Err(e) => return Err(err("read exec output in", container)(e)),
                    }
                }
            }
            bollard::exec::StartExecResults::Detached => {}
        }
        let code = self
            .docker
            .inspect_exec(&created.id)
            .await
            .map_err(err("inspect exec in", container))?
            .exit_code
            .unwrap_or(-1);
        Ok((code, String::from_utf8_lossy(&out).into_owned()))
    }

    /// Removes every container (with its anonymous volumes, `-v`), network and volume carrying
    /// `label=value` (or `label` if value is None), then lists again until nothing is left:
    /// an object whose create call was still landing when removal began shows up in the next
    /// listing. A listing that fails is an error, never "nothing there". Goes on past individual
    /// failures; `errors` holds those of the last round only (a network still in use in round 1
    /// is gone in round 2), and `complete` says a listing came back empty.
    pub async fn remove_labelled(&self, label: &str, value: Option<&str>) -> Removed {
        let filter = match value {
            Some(v) => format!("{label}={v}"),
            None => label.to_string(),
        };
        let mut filters = HashMap::new();
        filters.insert("label".to_string(), vec![filter]);
        let mut removed = Removed::default();
        for round in 0..REMOVE_ROUNDS {
            if round > 0 {
                // Backoff between rounds: the engine finishes a removal or a late create.
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

    /// One round: list and remove containers, then networks and volumes. Returns how many
    /// objects the listings found, or None if a listing failed.
    async fn remove_round(
        &self,
        filters: &HashMap<String, Vec<String>>,
        removed: &mut Removed,
        errors: &mut Vec<String>,
    ) -> Option<usize> {
        let mut found = 0;
        let mut listed = true;
        let copts = ListContainersOptionsBuilder::default()
            .all(true)
            .filters(filters)
            .build();
        match self.docker.list_containers(Some(copts)).await {
            Ok(cs) => {
                found += cs.len();
                let rm = RemoveContainerOptionsBuilder::default()
                    .force(true)
                    .v(true)
                    .build();
                let results = join_all(cs.into_iter().filter_map(|c| c.id).map(|id| {
                    let rm = rm.clone();
                    async move { (self.docker.remove_container(&id, Some(rm)).await, id) }
                }))
                .await;
                for (r, id) in results {
                    match r {
                        Ok(()) => removed.containers += 1,
                        // Another remover (a second round, `repro clean`) got there first.
                        Err(bollard::errors::Error::DockerResponseServerError {
                            status_code: 404,
                            ..
                        }) => {}
                        Err(e) => errors.push(format!("container {id}: {e}")),
                    }
                }
            }
            Err(e) => {
                listed = false;
                errors.push(format!("cannot list containers: {e}"));
            }
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
        match ns {
            Ok((n, rs)) => {
                found += n;
                for (r, name) in rs {
                    match r {
                        Ok(()) => removed.networks += 1,
                        Err(e) => errors.push(format!("network {name}: {e}")),
                    }
                }
            }
            Err(e) => {
                listed = false;
                errors.push(e);
            }
        }
        match vs {
            Ok((n, rs)) => {
                found += n;
                for (r, name) in rs {
                    match r {
                        Ok(()) => removed.volumes += 1,
                        Err(e) => errors.push(format!("volume {name}: {e}")),
                    }
                }
            }
            Err(e) => {
                listed = false;
                errors.push(e);
            }
        }
        listed.then_some(found)
    }

    /// Engine facts for result.json.
    pub async fn describe(&self) -> crate::result::EnvInfo {
        let mut env = crate::result::EnvInfo {
            docker_host: self.endpoint.clone(),
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
        }
        env
    }
}

/// The Docker operations a run uses, and nothing else: [`Engine`] is the real one (over
/// bollard); the runner's unit tests script a fake. Boxed futures keep it usable as
/// `Arc<dyn DockerApi>`.
pub trait DockerApi: Send + Sync {
    /// Engine facts for result.json.
    fn describe(&self) -> BoxFuture<'_, crate::result::EnvInfo>;
    fn load_archive<'a>(
        &'a self,
        path: &'a std::path::Path,
    ) -> BoxFuture<'a, Result<(), DockerError>>;
    /// Builds (or refreshes) repro's stand-in image for a version.
    fn prepare_sim_image<'a>(
        &'a self,
        version: &'a str,
        rebuild: bool,
    ) -> BoxFuture<'a, anyhow::Result<()>>;
    fn image_id<'a>(&'a self, image: &'a str) -> BoxFuture<'a, Option<String>>;
    fn image_labels<'a>(&'a self, image: &'a str) -> BoxFuture<'a, HashMap<String, String>>;
    /// Pulls an image, reporting (layers done, layers seen).
    fn pull<'a>(
        &'a self,
        image: &'a str,
        progress: &'a mut (dyn FnMut(usize, usize) + Send),
    ) -> BoxFuture<'a, Result<(), DockerError>>;
    /// A bridge network on a free 10.213.X.0/24; returns X.
    fn create_network<'a>(
        &'a self,
        name: &'a str,
        labels: &'a HashMap<String, String>,
    ) -> BoxFuture<'a, Result<u8, DockerError>>;
    fn create_volume<'a>(
        &'a self,
        name: &'a str,
        labels: &'a HashMap<String, String>,
    ) -> BoxFuture<'a, Result<(), DockerError>>;
    fn create_node<'a>(&'a self, spec: &'a NodeSpec) -> BoxFuture<'a, Result<(), DockerError>>;
    fn upload<'a>(
        &'a self,
        container: &'a str,
        files: &'a [(String, String)],
    ) -> BoxFuture<'a, Result<(), DockerError>>;
    fn start<'a>(&'a self, container: &'a str) -> BoxFuture<'a, Result<(), DockerError>>;
    fn stop<'a>(
        &'a self,
        container: &'a str,
        grace: Duration,
    ) -> BoxFuture<'a, Result<(), DockerError>>;
    fn state<'a>(
        &'a self,
        container: &'a str,
    ) -> BoxFuture<'a, Result<ContainerState, DockerError>>;
    fn inspect_json<'a>(
        &'a self,
        container: &'a str,
    ) -> BoxFuture<'a, Result<serde_json::Value, DockerError>>;
    /// A container's log from `since_secs` on, timestamped; ends when the container stops.
    fn follow_logs(
        &self,
        container: &str,
        since_secs: i64,
    ) -> BoxStream<'static, Result<LogChunk, DockerError>>;
    /// Runs a command in a running container: its exit code and output.
    fn exec<'a>(
        &'a self,
        container: &'a str,
        cmd: &'a [String],
    ) -> BoxFuture<'a, Result<(i64, String), DockerError>>;
    /// Removes every container, network and volume with `label=value`.
    fn remove_labelled<'a>(
        &'a self,
        label: &'a str,
        value: Option<&'a str>,
    ) -> BoxFuture<'a, Removed>;
}

impl DockerApi for Engine {
    fn describe(&self) -> BoxFuture<'_, crate::result::EnvInfo> {
        Engine::describe(self).boxed()
    }
    fn load_archive<'a>(
        &'a self,
        path: &'a std::path::Path,
    ) -> BoxFuture<'a, Result<(), DockerError>> {
        Engine::load_archive(self, path).boxed()
    }
    fn prepare_sim_image<'a>(
        &'a self,
        version: &'a str,
        rebuild: bool,
    ) -> BoxFuture<'a, anyhow::Result<()>> {
        async move {
            crate::sim_image::ensure_sim_image(&self.docker, version, rebuild).await?;
            Ok(())
        }
        .boxed()
    }
    fn image_id<'a>(&'a self, image: &'a str) -> BoxFuture<'a, Option<String>> {
        Engine::image_id(self, image).boxed()
    }
    fn image_labels<'a>(&'a self, image: &'a str) -> BoxFuture<'a, HashMap<String, String>> {
        Engine::image_labels(self, image).boxed()
    }
    fn pull<'a>(
        &'a self,
        image: &'a str,
        progress: &'a mut (dyn FnMut(usize, usize) + Send),
    ) -> BoxFuture<'a, Result<(), DockerError>> {
        Engine::pull(self, image, progress).boxed()
    }
    fn create_network<'a>(
        &'a self,
        name: &'a str,
        labels: &'a HashMap<String, String>,
    ) -> BoxFuture<'a, Result<u8, DockerError>> {
        Engine::create_network(self, name, labels).boxed()
    }
    fn create_volume<'a>(
        &'a self,
        name: &'a str,
        labels: &'a HashMap<String, String>,
    ) -> BoxFuture<'a, Result<(), DockerError>> {
        Engine::create_volume(self, name, labels).boxed()
    }
    fn create_node<'a>(&'a self, spec: &'a NodeSpec) -> BoxFuture<'a, Result<(), DockerError>> {
        Engine::create_node(self, spec).boxed()
    }
    fn upload<'a>(
        &'a self,
        container: &'a str,
        files: &'a [(String, String)],
    ) -> BoxFuture<'a, Result<(), DockerError>> {
        Engine::upload(self, container, files).boxed()
    }
    fn start<'a>(&'a self, container: &'a str) -> BoxFuture<'a, Result<(), DockerError>> {
        Engine::start(self, container).boxed()
    }
    fn stop<'a>(
        &'a self,
        container: &'a str,
        grace: Duration,
    ) -> BoxFuture<'a, Result<(), DockerError>> {
        Engine::stop(self, container, grace).boxed()
    }
    fn state<'a>(
        &'a self,
        container: &'a str,
    ) -> BoxFuture<'a, Result<ContainerState, DockerError>> {
        Engine::state(self, container).boxed()
    }
    fn inspect_json<'a>(
        &'a self,
        container: &'a str,
    ) -> BoxFuture<'a, Result<serde_json::Value, DockerError>> {
        Engine::inspect_json(self, container).boxed()
    }
    fn follow_logs(
        &self,
        container: &str,
        since_secs: i64,
    ) -> BoxStream<'static, Result<LogChunk, DockerError>> {
        Engine::follow_logs(self, container, since_secs).boxed()
    }
    fn exec<'a>(
        &'a self,
        container: &'a str,
        cmd: &'a [String],
    ) -> BoxFuture<'a, Result<(i64, String), DockerError>> {
        Engine::exec(self, container, cmd).boxed()
    }
    fn remove_labelled<'a>(
        &'a self,
        label: &'a str,
        value: Option<&'a str>,
    ) -> BoxFuture<'a, Removed> {
        Engine::remove_labelled(self, label, value).boxed()
    }
}

#[derive(Debug, Default, Clone)]
pub struct Removed {
    pub containers: usize,
    pub networks: usize,
    pub volumes: usize,
    pub errors: Vec<String>,
    /// A listing after the last removal found nothing left.
    pub complete: bool,
}

#[derive(Debug, Clone)]
pub struct ContainerState {
    pub running: bool,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub exit_code: Option<i64>,
    pub oom_killed: bool,
}

pub struct LogChunk {
    pub stderr: bool,
    pub bytes: Bytes,
}

#[derive(Debug, Clone)]
pub struct NodeSpec {
    pub name: String,
    pub hostname: String,
    pub image: String,
    pub cmd: Vec<String>,
    pub env: Vec<String>,
    pub labels: HashMap<String, String>,
    pub network: String,
    pub ip: String,
    pub data_volume: String,
    pub privileged: bool,
    /// How long a stop waits for k3s's graceful shutdown after SIGTERM before it kills.
    pub stop_grace: Duration,
}

fn split_image(image: &str) -> (&str, &str) {
    // A ':' after the last '/' separates the tag (a ':' before it is a registry port).
    match image.rfind(':') {
        Some(i) if !image[i..].contains('/') => (&image[..i], &image[i + 1..]),
        _ => (image, "latest"),
    }
}

/// An in-memory tar of absolute paths (written relative to `/`), parents included.
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

#[cfg(test)]
mod tests {
    use super::*;

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
