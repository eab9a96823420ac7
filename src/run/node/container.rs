//! A node whose distribution is the container's own process (k3s, as `rancher/k3s` runs it):
//! the container's command is the server or agent, a boot is one start of the container and
//! its log is the container's, followed after the previous boot's last line.

use std::sync::atomic::Ordering;

use chrono::Utc;
use futures_util::future::BoxFuture;

use crate::raw::Role;
use distro::Facts;

use super::{Boot, Mechanism, Node, Process, Started, STOP_GRACE};
use crate::run::error::RunError;
use crate::run::watch;

pub(super) struct ContainerProcess;

impl Mechanism for ContainerProcess {
    fn process(&self, _facts: &Facts, _role: Role, args: &[&str], env: Vec<String>) -> Process {
        Process {
            cmd: args.iter().map(|a| a.to_string()).collect(),
            env,
            files: Vec::new(),
            systemd: false,
        }
    }

    fn start<'a>(&'a self, _facts: &'static Facts, node: Node<'a>, boot: Boot) -> Started<'a> {
        Box::pin(async move {
            // The next boot's log follows the previous boot's last line, once that boot is over.
            let after = match &node.current {
                Some(h) => {
                    h.ended().await;
                    h.position()
                }
                None => None,
            };
            node.stopping.store(false, Ordering::SeqCst);
            node.start_container().await?;
            // When the start call returned: Docker's own StartedAt is a moment earlier, and
            // asking for it would cost a round trip on every restart's critical path.
            let started_at = Utc::now();
            let h = watch::follow(watch::Follow {
                docker: node.docker.clone(),
                container: node.container.to_string(),
                number: boot.number,
                step: boot.step,
                started_at,
                after,
                ready: boot.ready,
                log_path: boot.log_path,
                on_line: boot.on_line,
                stopping: node.stopping.clone(),
                scrub: boot.scrub,
            });
            Ok((h, "container started"))
        })
    }

    /// The container's log is the distribution's.
    fn log_command(&self, _facts: &Facts, _agent: bool, _follow: bool) -> Option<Vec<String>> {
        None
    }

    /// Stops the node's current boot (if running) and waits until its log is drained; the
    /// start that follows is a new boot of the container.
    fn stop_for_restart<'a>(
        &'a self,
        _facts: &'static Facts,
        node: Node<'a>,
        _agent: bool,
    ) -> BoxFuture<'a, Result<(), RunError>> {
        Box::pin(async move {
            if let Some(h) = &node.current {
                if h.with(|b| b.end.is_none()) {
                    node.stopping.store(true, Ordering::SeqCst);
                    node.docker.stop(node.container, STOP_GRACE).await?;
                    h.ended().await;
                }
            }
            Ok(())
        })
    }
}
