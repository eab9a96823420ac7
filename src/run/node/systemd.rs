//! A node whose distribution runs as a systemd unit (RKE2, as its own Docker tests run it): the
//! container's PID 1 is systemd, the unit is started and restarted with systemctl in the node,
//! and a boot is one invocation of the unit, read from its journal (`journal.rs`).

use std::sync::atomic::Ordering;

use chrono::Utc;
use futures_util::future::BoxFuture;

use crate::raw::Role;
use distro::Facts;

use super::journal;
use super::{Boot, Mechanism, Node, Process, Started};
use crate::run::error::RunError;

pub(super) struct SystemdUnit;

impl Mechanism for SystemdUnit {
    /// A unit does not see the container's environment: its variables go where the unit reads
    /// them, `Facts::unit_env_file` (rke2's own Docker tests write them into the unit's .env
    /// file instead; that file is the tarball's here).
    fn process(&self, facts: &Facts, role: Role, args: &[&str], env: Vec<String>) -> Process {
        let file = facts.unit_env_file(role == Role::Agent);
        Process {
            cmd: args.iter().map(|a| a.to_string()).collect(),
            env: Vec::new(),
            files: file
                .map(|f| (f, env.join("\n") + "\n"))
                .into_iter()
                .collect(),
            systemd: true,
        }
    }

    fn start<'a>(&'a self, facts: &'static Facts, node: Node<'a>, boot: Boot) -> Started<'a> {
        Box::pin(async move {
            let unit = facts.unit(boot.agent);
            let started = start_unit(&node, unit, boot.timeout).await?;
            let h = journal::follow(journal::JournalFollow {
                docker: node.docker.clone(),
                container: node.container.to_string(),
                unit: unit.to_string(),
                number: boot.number,
                step: boot.step,
                started_at: started.started_at,
                after_cursor: started.cursor,
                previous: started.previous,
                ready: boot.ready,
                log_path: boot.log_path,
                on_line: boot.on_line,
                stopping: node.stopping.clone(),
                scrub: boot.scrub,
            });
            let detail = if boot.number == 1 {
                "unit started"
            } else {
                "unit restarted"
            };
            Ok((h, detail))
        })
    }

    /// The unit's journal, every boot of it, as text (the container's own log is systemd's).
    fn log_command(&self, facts: &Facts, agent: bool, follow: bool) -> Option<Vec<String>> {
        Some(journal::print_command(facts.unit(agent), follow))
    }

    /// `systemctl stop` of the running unit, as k3s QA's `systemctl restart` stops it before
    /// it starts again; `start_unit` then starts the stopped unit. Split in two so that every
    /// node of a restart group is down before any comes back (k3s #13533 needs the etcd
    /// members restarted together: a member that comes back while another still runs rejoins
    /// its leader at once).
    fn stop_for_restart<'a>(
        &'a self,
        facts: &'static Facts,
        node: Node<'a>,
        agent: bool,
    ) -> BoxFuture<'a, Result<(), RunError>> {
        Box::pin(async move {
            let Some(h) = node
                .current
                .as_ref()
                .filter(|h| h.with(|b| b.end.is_none()))
            else {
                return Ok(());
            };
            node.stopping.store(true, Ordering::SeqCst);
            let unit = facts.unit(agent);
            in_node(&node, "systemctl stop", &["systemctl", "stop", unit]).await?;
            h.ended().await;
            Ok(())
        })
    }
}

/// Where a unit's new boot begins in its journal.
struct StartedUnit {
    started_at: chrono::DateTime<Utc>,
    cursor: String,
    previous: Option<String>,
}

/// Runs a command in a node; its output, or the failure named after `what`.
async fn in_node(node: &Node<'_>, what: &str, cmd: &[&str]) -> Result<String, RunError> {
    let cmd: Vec<String> = cmd.iter().map(|s| s.to_string()).collect();
    let (code, out) = node.docker.exec(node.container, &cmd).await?;
    if code != 0 {
        return Err(RunError::Systemd {
            node: node.name.to_string(),
            what: format!("{what} (`{}` exited {code})", cmd.join(" ")),
            output: out.trim().to_string(),
        });
    }
    Ok(out)
}

/// Whether the node's systemd is gone or going (`docker stop` halts it: `stopping`, then its
/// bus refuses, then the container exits), rather than running with one unit down.
async fn system_down(node: &Node<'_>) -> bool {
    let cmd = ["systemctl", "is-system-running"].map(str::to_string);
    match node.docker.exec(node.container, &cmd).await {
        // The engine refuses an exec in a container that is not running.
        Err(_) => true,
        Ok((_, out)) => !matches!(
            out.lines().last().map(str::trim),
            Some("running" | "degraded" | "starting" | "initializing")
        ),
    }
}

/// Starts (first boot) or restarts a node's unit the way rke2's own tests do, through
/// systemctl in the node, and returns where its journal's new boot begins. The first boot
/// starts the container and waits for systemd to finish booting; a restart marks the
/// running boot as stopped by repro and waits until its follower has seen the stop.
async fn start_unit(
    node: &Node<'_>,
    unit: &str,
    timeout: std::time::Duration,
) -> Result<StartedUnit, RunError> {
    let mut prev = node.current.as_ref();
    // A container stopped from outside (`docker stop` of a ready node: its boot ended as a
    // death) has no systemd to restart the unit in: once it is down for good it boots again,
    // as a first start does.
    if prev.is_some_and(|h| h.with(|b| b.end.is_some())) && system_down(node).await {
        node.docker.stop(node.container, super::STOP_GRACE).await?;
        prev = None;
    }
    if prev.is_none() {
        node.stopping.store(false, Ordering::SeqCst);
        node.start_container().await?;
        // systemd's bus appears a moment after PID 1 starts; `--wait` then blocks until
        // start-up is done (an event in the node, not a sleep of ours).
        let booted = tokio::time::timeout(
            timeout,
            in_node(
                node,
                "waiting for systemd to boot",
                &[
                    "sh",
                    "-c",
                    "until [ -S /run/systemd/private ]; do sleep 0.05; done; systemctl is-system-running --wait || true",
                ],
            ),
        )
        .await
        .map_err(|_| RunError::Systemd {
            node: node.name.to_string(),
            what: "systemd did not finish booting".into(),
            output: format!("within {}", humantime::format_duration(timeout)),
        })??;
        let state = booted.lines().last().unwrap_or_default().trim().to_string();
        if !matches!(state.as_str(), "running" | "degraded") {
            return Err(RunError::Systemd {
                node: node.name.to_string(),
                what: "systemd did not reach `running`".into(),
                output: state,
            });
        }
    }
    let previous = in_node(
        node,
        "reading the unit's invocation id",
        &["systemctl", "show", "-p", "InvocationID", "--value", unit],
    )
    .await?
    .trim()
    .to_string();
    let out = in_node(
        node,
        "reading the journal's cursor",
        &["journalctl", "-n", "0", "--show-cursor", "-q"],
    )
    .await?;
    let cursor = journal::parse_cursor(&out).ok_or_else(|| RunError::Systemd {
        node: node.name.to_string(),
        what: "the journal has no cursor".into(),
        output: out.trim().to_string(),
    })?;
    let running = prev.filter(|h| h.with(|b| b.end.is_none()));
    if running.is_some() {
        node.stopping.store(true, Ordering::SeqCst);
    }
    let verb = if prev.is_some() { "restart" } else { "start" };
    // The boot begins with the command: its first lines may come before the old boot's
    // follower has seen that boot end.
    let started_at = Utc::now();
    // `--no-block`: a Type=notify unit's start returns only once it is ready; the journal
    // is what repro waits on (docs/systemd-nodes.md).
    in_node(
        node,
        &format!("systemctl {verb}"),
        &["systemctl", verb, "--no-block", unit],
    )
    .await?;
    if let Some(h) = running {
        h.ended().await;
    }
    node.stopping.store(false, Ordering::SeqCst);
    Ok(StartedUnit {
        started_at,
        cursor,
        previous: (!previous.is_empty()).then_some(previous),
    })
}
