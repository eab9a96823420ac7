//! Bringing the cluster up, then the plan's steps in order: write the edited files, start and
//! restart nodes (a group at once), observe every expectation of the step concurrently.
//! Steps are read from the plan only.

use std::sync::Arc;
use std::time::Instant;

use futures_util::future::join_all;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::plan::PlannedStep;
use crate::result::{Action, ActionKind, Outcome, StepResult};
use crate::scenario::Signals;

use super::cluster::Cluster;
use super::error::RunError;
use super::event::{Phase, RunEvent};
use super::probe::{self, Expectation};
use super::record::now_rfc3339;

/// How the steps ended when nothing broke.
pub(crate) enum Driven {
    /// Every step ran.
    Completed,
    /// A node died while the cluster was being created: nothing to judge (inconclusive).
    SetupDied(String),
}

/// Everything between "creating the cluster" and the verdict: runs as its own task. After a
/// Ctrl-C (`cancel`) no new step starts, even before the task is aborted.
pub(crate) async fn drive(
    c: Arc<Cluster>,
    signals: Arc<Signals>,
    cancel: CancellationToken,
) -> Result<Driven, RunError> {
    let t0 = Instant::now();
    c.events.show(&RunEvent::Phase(Phase::Create));
    if let Some(died) = bring_up(&c).await? {
        return Ok(Driven::SetupDied(died));
    }
    let seconds = t0.elapsed().as_secs_f64();
    let version_output = k3s_version_output(&c).await;
    c.events.emit(&RunEvent::ClusterUp {
        boots: c.boot_records(),
        seconds,
        version_output: version_output.clone(),
    })?;
    if let (Some(b), Some(out)) = (&c.binary, &version_output) {
        check_build_runs(&c, b, out)?;
    }
    for step in &c.plan.steps {
        c.events.show(&RunEvent::Phase(Phase::Step {
            index: step.index,
            total: c.plan.steps.len(),
            name: step.name.clone(),
        }));
        if cancel.is_cancelled() {
            return Err(RunError::Interrupted);
        }
        run_step(&c, &signals, step).await?;
    }
    Ok(Driven::Completed)
}

/// The build under test must be what the nodes run: their `-v` must say the version the file
/// carries. An image that starts its binary from elsewhere than the distribution's path would
/// otherwise have the run judge the image's k3s under the build's name. (An image whose `-v`
/// cannot be run is not checked: the reports fall back to the banner.)
fn check_build_runs(c: &Cluster, b: &super::cluster::BuildCopy, out: &str) -> Result<(), RunError> {
    let distro = c.plan.distro;
    let says = distro::reported::Reported::parse(distro, out)
        .map(|r| r.to_string())
        .unwrap_or_else(|_| out.lines().next().unwrap_or_default().to_string());
    if says == b.reported {
        return Ok(());
    }
    let node = (c.plan.start_order.first())
        .and_then(|g| g.first())
        .cloned()
        .unwrap_or_default();
    Err(RunError::BuildNotRun {
        node,
        command: distro.facts().version_command.join(" "),
        says,
        reported: b.reported.clone(),
        path: b.path.clone(),
    })
}

/// `k3s -v` in the first node of the start order, in full, for the bug report's "Environmental
/// Info". Best effort: an image whose `k3s` cannot answer leaves it out, and the reports fall
/// back to the banner in the log (and say so).
async fn k3s_version_output(c: &Cluster) -> Option<String> {
    let first = c.plan.start_order.first()?.first()?;
    let cmd: Vec<String> = c
        .plan
        .distro
        .facts()
        .version_command
        .iter()
        .map(|a| a.to_string())
        .collect();
    match c.docker.exec(c.container(first), &cmd).await {
        Ok((0, out)) if !out.trim().is_empty() => Some(out),
        _ => None,
    }
}

/// Creates every node at once while the start order runs: a group starts as soon as its nodes
/// exist and the group before it is ready, so creating later nodes is off the critical path.
/// Both halves run in this task and finish before it returns: nothing is left creating
/// containers behind the teardown. Returns the death that ended the start-up, if one did.
async fn bring_up(c: &Arc<Cluster>) -> Result<Option<String>, RunError> {
    let (net, third) = c.create_network().await?;
    let nodes = &c.plan.nodes;
    // Per node: None while being created, then whether it was.
    let (txs, rxs): (Vec<_>, Vec<_>) = nodes.iter().map(|_| watch::channel(None)).unzip();
    let creating = join_all(txs.iter().enumerate().map(|(i, tx)| {
        let net = &net;
        async move {
            let r = c.create_node(i, net, third).await;
            let _ = tx.send(Some(r.is_ok()));
            r
        }
    }));
    let starting = async {
        for group in &c.plan.start_order {
            for n in group {
                let Some(i) = nodes.iter().position(|p| &p.name == n) else {
                    continue;
                };
                let mut rx = rxs[i].clone();
                if !matches!(
                    rx.wait_for(Option::is_some).await.as_deref(),
                    Ok(Some(true))
                ) {
                    // Its creation failed: that error is the one the run reports.
                    return Ok(None);
                }
            }
            c.events.show(&RunEvent::Phase(Phase::Start(group.clone())));
            let results = join_all(group.iter().map(|n| c.start_and_wait(n, 0))).await;
            for (n, r) in group.iter().zip(results) {
                if !r? {
                    return Ok(Some(format!(
                        "{n} died while the cluster was being created: {}",
                        c.death_line(n)
                    )));
                }
            }
        }
        Ok(None)
    };
    let (created, started) = tokio::join!(creating, starting);
    for r in created {
        r?;
    }
    started
}

async fn run_step(c: &Arc<Cluster>, signals: &Signals, step: &PlannedStep) -> Result<(), RunError> {
    let t = Instant::now();
    let mut sr = StepResult {
        index: step.index,
        name: step.name.clone(),
        why: step.why.clone(),
        started_at: now_rfc3339(),
        finished_at: None,
        actions: Vec::new(),
        observations: Vec::new(),
    };
    // Every edited node's files at once (each node's own writes stay in order).
    let edited = join_all(step.edits.iter().map(|(node, files)| edit(c, node, files))).await;
    for ((node, files), r) in step.edits.iter().zip(edited) {
        r?;
        sr.actions.push(action(
            ActionKind::Edit,
            vec![node.clone()],
            files.keys().cloned().collect(),
        ));
    }
    // The nodes of one `start:` start at once, as a restart group does: two etcd joiners
    // started together race for etcd's one learner slot (#21).
    if !step.start.is_empty() {
        sr.actions
            .push(action(ActionKind::Start, step.start.clone(), vec![]));
        let results = join_all(step.start.iter().map(|n| c.start_and_wait(n, step.index))).await;
        for r in results {
            r?;
        }
    }
    for group in &step.restart {
        sr.actions
            .push(action(ActionKind::Restart, group.clone(), vec![]));
        let results = join_all(group.iter().map(|n| c.restart_and_wait(n, step.index))).await;
        for r in results {
            r?;
        }
    }
    sr.observations = observe_all(c, signals, step).await;
    for o in &sr.observations {
        c.events.show(&RunEvent::Observed {
            step: step.index,
            observation: o.clone(),
        });
    }
    sr.finished_at = Some(now_rfc3339());
    if let Some(e) = c.log_write_error() {
        return Err(e.into());
    }
    c.events.emit(&RunEvent::StepDone {
        step: sr,
        boots: c.boot_records(),
        seconds: t.elapsed().as_secs_f64(),
    })?;
    Ok(())
}

fn action(kind: ActionKind, nodes: Vec<String>, files: Vec<String>) -> Action {
    Action {
        kind,
        nodes,
        at: now_rfc3339(),
        files,
    }
}

/// Writes a node's edited files and deletes the ones the step removes.
async fn edit(c: &Cluster, node: &str, files: &crate::plan::NodeFiles) -> Result<(), RunError> {
    let container = c.container(node);
    let writes: Vec<(String, String)> = files
        .iter()
        .filter_map(|(p, v)| v.clone().map(|v| (p.clone(), v)))
        .collect();
    if !writes.is_empty() {
        c.docker.upload(container, &writes).await?;
    }
    for (p, v) in files {
        if v.is_some() {
            continue;
        }
        let rm = ["rm", "-f", "--", p.as_str()].map(str::to_string);
        let (code, out) =
            c.docker
                .exec(container, &rm)
                .await
                .map_err(|source| RunError::DeleteExec {
                    path: p.clone(),
                    node: node.to_string(),
                    source,
                })?;
        if code != 0 {
            return Err(RunError::Delete {
                path: p.clone(),
                node: node.to_string(),
                output: out,
            });
        }
    }
    Ok(())
}

/// Observes every expected (node, signal) of the step at once; results in the step's order.
async fn observe_all(
    c: &Arc<Cluster>,
    signals: &Signals,
    step: &PlannedStep,
) -> Vec<crate::result::Observation> {
    let bug_world = step.bug_world();
    let mut jobs = Vec::new();
    for (node, sigs) in &step.expect {
        for (sig, exp) in sigs {
            let bug = bug_world.get(node).and_then(|m| m.get(sig)).cloned();
            let asked = match c.expect {
                Outcome::Reproduced => bug.clone(),
                _ => Some(exp.clone()),
            };
            let e = Expectation {
                death_expected: (
                    super::verdict::death_expected(&step.expect, node),
                    super::verdict::death_expected(&bug_world, node),
                ),
                node: node.clone(),
                signal: sig.clone(),
                expected: exp.clone(),
                bug,
                asked,
            };
            jobs.push(probe::observe(c, e, signals.get(sig)));
        }
    }
    join_all(jobs).await
}
