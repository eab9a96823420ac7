//! A scripted Docker for the runner's unit tests (never for end-to-end tests, which use real
//! containers). It records every call in order and plays a *fixed* k3s: a boot prints the
//! registry line its own uploaded config asks for, then kubelet and readiness. Nodes can be
//! told to die at start or never become ready, and one call can be made to fail.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use futures_util::{FutureExt, StreamExt};
use tokio::sync::watch;

use crate::docker::{
    CallFuture, ContainerState, DockerApi, DockerError, ImageInfo, Labels, LogChunk, NodeSpec,
    Removed,
};
use crate::result::EnvInfo;

#[derive(Clone, Default)]
struct Log {
    lines: Vec<(DateTime<Utc>, String)>,
    running: bool,
}

pub(super) struct Container {
    hostname: String,
    env: Vec<String>,
    files: HashMap<String, String>,
    log: watch::Sender<Log>,
    exit_code: Option<i64>,
}

#[derive(Default)]
pub(crate) struct FakeDocker {
    pub(super) calls: Mutex<Vec<String>>,
    pub(super) containers: Mutex<HashMap<String, Container>>,
    /// Nodes (host names) whose every boot dies at once with a fatal line.
    pub(crate) dies: HashSet<String>,
    /// Nodes whose boots never print the ready line.
    pub(crate) never_ready: HashSet<String>,
    /// (operation, part of the object): that call fails.
    pub(crate) fail: Option<(&'static str, String)>,
    /// Microseconds added to every log line's time, so lines are strictly ordered.
    pub(super) clock: AtomicI64,
    /// What every exec prints (the run's `k3s -v`; empty: no answer).
    pub(crate) exec_output: String,
}

impl FakeDocker {
    /// The calls made so far, as `op object`.
    pub(crate) fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn call(&self, op: &'static str, object: &str) -> Result<(), DockerError> {
        self.calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(format!("{op} {object}"));
        match &self.fail {
            Some((f, part)) if *f == op && object.contains(part.as_str()) => {
                Err(DockerError::Call {
                    op,
                    object: object.to_string(),
                    source: "scripted failure".into(),
                })
            }
            _ => Ok(()),
        }
    }

    fn now(&self) -> DateTime<Utc> {
        let n = self.clock.fetch_add(1, Ordering::SeqCst);
        Utc::now() + chrono::Duration::microseconds(n)
    }

    fn with<R>(&self, container: &str, f: impl FnOnce(&mut Container) -> R) -> Option<R> {
        self.containers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(container)
            .map(f)
    }

    /// What a boot of a fixed k3s prints, from the node's own config.
    fn boot_lines(&self, c: &Container) -> (Vec<String>, Option<i64>) {
        let msg = |m: &str| format!("time=\"x\" level=info msg=\"{m}\"");
        if self.dies.contains(&c.hostname) {
            return (
                vec!["time=\"x\" level=fatal msg=\"scripted death\"".to_string()],
                Some(1),
            );
        }
        let mut lines = vec![msg("Starting k3s v1.33.5+k3s1 (fake)")];
        if self.never_ready.contains(&c.hostname) {
            return (lines, None);
        }
        let config = c
            .files
            .get(distro::Distro::K3s.facts().config_path)
            .map(String::as_str)
            .unwrap_or("");
        lines.push(msg("k3s is up and running"));
        if config.contains("embedded-registry: true") {
            lines.push(msg(
                "Starting distributed registry mirror at https://10.0.0.1:6443/v2",
            ));
        } else {
            lines.push(msg("Not starting distributed registry mirror"));
        }
        lines.push(msg("Running kubelet --fake"));
        (lines, None)
    }
}

fn ok<'a, T: Send + 'a>(r: Result<T, DockerError>) -> CallFuture<'a, T> {
    futures_util::future::ready(r).boxed()
}

impl DockerApi for FakeDocker {
    fn describe(&self) -> BoxFuture<'_, EnvInfo> {
        futures_util::future::ready(EnvInfo {
            docker_host: "fake://".into(),
            ..Default::default()
        })
        .boxed()
    }

    fn load_archive<'a>(&'a self, path: &'a std::path::Path) -> CallFuture<'a, ()> {
        ok(self.call("load", &path.display().to_string()))
    }

    /// Every image is there, without labels.
    fn image<'a>(&'a self, _image: &'a str) -> BoxFuture<'a, Option<ImageInfo>> {
        futures_util::future::ready(Some(ImageInfo {
            id: Some("sha256:fake".to_string()),
            labels: Labels::new(),
            volumes: Vec::new(),
        }))
        .boxed()
    }

    fn build_image<'a>(&'a self, tag: &'a str, _context: Vec<u8>) -> CallFuture<'a, ()> {
        ok(self.call("build-image", tag))
    }

    fn pull<'a>(
        &'a self,
        image: &'a str,
        _progress: &'a mut (dyn FnMut(usize, usize) + Send),
    ) -> CallFuture<'a, ()> {
        ok(self.call("pull", image))
    }

    fn create_network<'a>(
        &'a self,
        name: &'a str,
        _labels: &'a Labels,
        _mtu: Option<u32>,
    ) -> CallFuture<'a, u8> {
        ok(self.call("create-network", name).map(|()| 7))
    }

    fn create_volume<'a>(&'a self, name: &'a str, _labels: &'a Labels) -> CallFuture<'a, ()> {
        ok(self.call("create-volume", name))
    }

    fn create_node<'a>(&'a self, spec: &'a NodeSpec) -> CallFuture<'a, ()> {
        let r = self.call("create", &spec.name).map(|()| {
            self.containers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(
                    spec.name.clone(),
                    Container {
                        hostname: spec.hostname.clone(),
                        env: spec.env.clone(),
                        files: HashMap::new(),
                        log: watch::channel(Log::default()).0,
                        exit_code: None,
                    },
                );
        });
        ok(r)
    }

    fn upload<'a>(
        &'a self,
        container: &'a str,
        files: &'a [(String, String)],
    ) -> CallFuture<'a, ()> {
        let r = self.call("upload", container).map(|()| {
            self.with(container, |c| c.files.extend(files.iter().cloned()));
        });
        ok(r)
    }

    fn upload_executable<'a>(
        &'a self,
        container: &'a str,
        host: &'a std::path::Path,
        path: &'a str,
    ) -> CallFuture<'a, ()> {
        let r = self.call("upload_executable", container).map(|()| {
            let from = format!("(copy of {})", host.display());
            self.with(container, |c| {
                c.files.insert(path.to_string(), from);
            });
        });
        ok(r)
    }

    fn start<'a>(&'a self, container: &'a str) -> CallFuture<'a, ()> {
        let r = self.call("start", container).map(|()| {
            let lines: Vec<(DateTime<Utc>, String)>;
            let dies;
            {
                let containers = self.containers.lock().unwrap_or_else(|p| p.into_inner());
                let Some(c) = containers.get(container) else {
                    return;
                };
                let (l, d) = self.boot_lines(c);
                lines = l.into_iter().map(|t| (self.now(), t)).collect();
                dies = d;
            }
            self.with(container, |c| {
                c.exit_code = dies;
                c.log.send_modify(|log| {
                    log.lines.extend(lines);
                    log.running = dies.is_none();
                });
            });
        });
        ok(r)
    }

    fn remove_node<'a>(&'a self, container: &'a str) -> CallFuture<'a, ()> {
        let r = self.call("remove", container).map(|()| {
            (self.containers.lock().unwrap_or_else(|p| p.into_inner())).remove(container);
        });
        ok(r)
    }

    fn stop<'a>(&'a self, container: &'a str, _grace: Duration) -> CallFuture<'a, ()> {
        let r = self.call("stop", container).map(|()| {
            self.with(container, |c| {
                c.exit_code = Some(0);
                c.log.send_modify(|log| log.running = false);
            });
        });
        ok(r)
    }

    fn state<'a>(&'a self, container: &'a str) -> CallFuture<'a, ContainerState> {
        let s = self.with(container, |c| ContainerState {
            running: c.log.borrow().running,
            finished_at: (!c.log.borrow().running).then(|| Utc::now().to_rfc3339()),
            exit_code: c.exit_code,
            oom_killed: false,
        });
        ok(s.ok_or_else(|| DockerError::Call {
            op: "inspect container",
            object: container.to_string(),
            source: "no such container".into(),
        }))
    }

    fn inspect_json<'a>(&'a self, container: &'a str) -> CallFuture<'a, serde_json::Value> {
        let env = self.with(container, |c| c.env.clone()).unwrap_or_default();
        ok(Ok(
            serde_json::json!({"Name": container, "Config": {"Env": env}}),
        ))
    }

    fn follow_logs(
        &self,
        container: &str,
        since_secs: i64,
    ) -> BoxStream<'static, Result<LogChunk, DockerError>> {
        let Some(rx) = self.with(container, |c| c.log.subscribe()) else {
            return futures_util::stream::empty().boxed();
        };
        // Every line from `since_secs` on, then the new ones, until the container stops.
        futures_util::stream::unfold((rx, 0usize), move |(mut rx, mut next)| async move {
            loop {
                let log = rx.borrow_and_update().clone();
                if let Some((ts, text)) = log.lines.get(next) {
                    next += 1;
                    if ts.timestamp() < since_secs {
                        continue;
                    }
                    let line = format!(
                        "{} {text}\n",
                        ts.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true)
                    );
                    let chunk = LogChunk {
                        stderr: false,
                        bytes: Bytes::from(line),
                    };
                    return Some((Ok(chunk), (rx, next)));
                }
                if !log.running || rx.changed().await.is_err() {
                    return None;
                }
            }
        })
        .boxed()
    }

    fn exec<'a>(&'a self, container: &'a str, _cmd: &'a [String]) -> CallFuture<'a, (i64, String)> {
        // As the engine: an exec needs the container running.
        let r = self.call("exec", container).and_then(|()| {
            let running = self
                .with(container, |c| c.log.borrow().running)
                .unwrap_or(false);
            if running {
                Ok((0, self.exec_output.clone()))
            } else {
                Err(DockerError::Call {
                    op: "exec",
                    object: container.to_string(),
                    source: "container is not running".into(),
                })
            }
        });
        ok(r)
    }

    /// The fake scripts container logs only: a streamed exec gives nothing and ends.
    fn exec_stream(
        &self,
        container: &str,
        _cmd: Vec<String>,
    ) -> BoxStream<'static, Result<LogChunk, DockerError>> {
        let _ = self.call("exec_stream", container);
        futures_util::stream::empty().boxed()
    }

    fn run_helper<'a>(
        &'a self,
        spec: &'a crate::docker::HelperSpec,
    ) -> CallFuture<'a, (i64, String)> {
        ok(self.call("helper", &spec.name).map(|()| (0, String::new())))
    }

    fn start_helper<'a>(&'a self, spec: &'a crate::docker::HelperSpec) -> CallFuture<'a, ()> {
        ok(self.call("start-helper", &spec.name))
    }

    fn download<'a>(
        &'a self,
        container: &'a str,
        _path: &'a str,
    ) -> CallFuture<'a, Option<Vec<u8>>> {
        ok(self.call("download", container).map(|()| None))
    }

    fn remove_container<'a>(&'a self, container: &'a str) -> CallFuture<'a, ()> {
        ok(self.call("remove-container", container))
    }

    fn remove_labelled<'a>(
        &'a self,
        label: &'a str,
        value: Option<&'a str>,
    ) -> BoxFuture<'a, Removed> {
        let _ = self.call("remove", &format!("{label}={}", value.unwrap_or("*")));
        let n = {
            let mut cs = self.containers.lock().unwrap_or_else(|p| p.into_inner());
            for c in cs.values() {
                c.log.send_modify(|log| log.running = false);
            }
            let n = cs.len();
            cs.clear();
            n
        };
        futures_util::future::ready(Removed {
            containers: n,
            complete: true,
            ..Default::default()
        })
        .boxed()
    }
}
