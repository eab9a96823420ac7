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
    let (died, version_output) = bring_up(&c).await?;
    if let Some(died) = died {
        return Ok(Driven::SetupDied(died));
    }
    let seconds = t0.elapsed().as_secs_f64();
    c.events.emit(&RunEvent::ClusterUp {
        boots: c.boot_records(),
        seconds,
        version_output: version_output.clone(),
    })?;
    match (&c.binary, &version_output) {
        (Some(b), Some(out)) => check_build_runs(&c, b, out)?,
        (None, Some(out)) => check_version_of_record(&c, out)?,
        _ => {}
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
fn check_build_runs(
    c: &Cluster,
    b: &super::node::spec::BuildCopy,
    out: &str,
) -> Result<(), RunError> {
    let distro = c.plan.distro;
    let says = distro::reported::Reported::parse(distro, out)
        .map(|r| r.to_string())
        .unwrap_or_else(|_| out.lines().next().unwrap_or_default().to_string());
    if says == b.reported {
        return Ok(());
    }
    Err(RunError::BuildNotRun {
        node: first_node(c),
        command: distro.facts().version_command.join(" "),
        says,
        reported: b.reported.clone(),
        path: b.path.clone(),
    })
}

/// The version of record (`--version`, the image's tag, the artifacts' or the topology's) must
/// be what the nodes run: their own `-v` says. A fixed image run under a buggy version's name
/// would otherwise be judged against the wrong `fixed-in` and written into "Validated on" as
/// that version (issue #32).
fn check_version_of_record(c: &Cluster, out: &str) -> Result<(), RunError> {
    let distro = c.plan.distro;
    let parsed = distro::reported::Reported::parse(distro, out);
    if let Ok(distro::reported::Reported::Release(v)) = &parsed {
        if *v == c.plan.k3s_version {
            return Ok(());
        }
    }
    let says = parsed
        .map(|r| r.to_string())
        .unwrap_or_else(|_| out.lines().next().unwrap_or_default().to_string());
    Err(RunError::VersionNotRun(Box::new(
        super::error::VersionNotRun {
            node: first_node(c),
            command: distro.facts().version_command.join(" "),
            says,
            of_record: c.plan.k3s_version.to_string(),
            image: c.plan.image.clone(),
        },
    )))
}

fn first_node(c: &Cluster) -> String {
    (c.plan.start_order.first())
        .and_then(|g| g.first())
        .cloned()
        .unwrap_or_default()
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

/// Creates every node at once while the first start runs: each node starts as soon as it
/// exists and the nodes it needs (`plan.start_needs`, from k3s's rules) are ready, so a
/// control-plane-only node boots alongside the etcd joiners and creating later nodes is off the
/// critical path. The engine does one container start at a time in effect (two at once take
/// about twice as long each), so a node off the first start's critical path (`plan::
/// critical_path`) issues its start only after the path nodes that could start at the same
/// moment have: cp-1 waits for etcd-2's start call, not for its boot. `k3s -v` runs in the first
/// node as such off-path work too, once that node is up. Both halves run in this task and
/// finish (or are dropped) before it returns: nothing is left creating containers behind the
/// teardown. Returns the death that ended the start-up, if one did, and `k3s -v`'s output.
pub(super) async fn bring_up(
    c: &Arc<Cluster>,
) -> Result<(Option<String>, Option<String>), RunError> {
    use futures_util::stream::{FuturesUnordered, StreamExt};
    let (net, third) = c.create_network().await?;
    let (gates, created_txs) = StartGates::new(c);
    let creating = join_all(created_txs.iter().enumerate().map(|(i, tx)| {
        let net = &net;
        async move {
            let r = c.create_node(i, net, third).await;
            let _ = tx.send(Some(r.is_ok()));
            r
        }
    }));
    let gates = &gates;
    let first = (c.plan.start_order.first())
        .and_then(|g| g.first())
        .and_then(|n| node_index(c, n));
    let version = async {
        let first = first?;
        if !gates.first_boot_up(first).await {
            return None;
        }
        gates.path_first().await;
        k3s_version_output(c).await
    };
    let starting = async {
        let mut all: FuturesUnordered<_> = (c.plan.start_order.iter().flatten())
            .filter_map(|n| node_index(c, n))
            .map(|i| gates.start_one(c, i))
            .collect();
        // The first failure ends the start-up: a node waiting on it gives up, and the others
        // are dropped (the teardown stops what they started).
        while let Some(r) = all.next().await {
            match r {
                Ok(None) => {}
                other => return other,
            }
        }
        Ok(None)
    };
    let (created, started) = tokio::join!(creating, up_then_version(starting, version));
    for r in created {
        r?;
    }
    started
}

/// The start-up decides when this ends; `k3s -v` is waited for only after it succeeded (every
/// path start has returned by then, so it is not held up). A death or error ends it without.
async fn up_then_version(
    starting: impl std::future::Future<Output = Result<Option<String>, RunError>>,
    version: impl std::future::Future<Output = Option<String>>,
) -> Result<(Option<String>, Option<String>), RunError> {
    tokio::pin!(starting, version);
    let mut out = None;
    let r = loop {
        tokio::select! {
            r = &mut starting => break r,
            v = &mut version, if out.is_none() => out = Some(v),
        }
    };
    match r {
        Ok(None) => Ok((
            None,
            match out {
                Some(v) => v,
                None => version.await,
            },
        )),
        other => other.map(|died| (died, None)),
    }
}

/// The index of node `n` in the plan's nodes.
fn node_index(c: &Cluster, n: &str) -> Option<usize> {
    c.plan.nodes.iter().position(|p| p.name == n)
}

/// What the nodes of the first start wait on one another for, per node (by index in the plan):
/// whether it was created, whether its first boot is ready, whether its start call returned;
/// and the rules: what each needs up first, and the first start's critical path.
struct StartGates {
    /// None while being created, then whether it was.
    created: Vec<watch::Receiver<Option<bool>>>,
    /// None until its first boot is ready (true) or cannot be (false).
    up_txs: Vec<watch::Sender<Option<bool>>>,
    up: Vec<watch::Receiver<Option<bool>>>,
    /// False until its start call returned (or it gave up before one).
    started_txs: Vec<watch::Sender<bool>>,
    started: Vec<watch::Receiver<bool>>,
    /// The nodes each needs ready before it starts (`plan.start_needs`).
    needs: Vec<Vec<usize>>,
    /// The first start's critical path (`plan::critical_path`).
    path: Vec<usize>,
}

impl StartGates {
    /// The gates, all closed, and the senders that say each node was created.
    fn new(c: &Cluster) -> (StartGates, Vec<watch::Sender<Option<bool>>>) {
        let nodes = &c.plan.nodes;
        let (txs, created): (Vec<_>, Vec<_>) = nodes.iter().map(|_| watch::channel(None)).unzip();
        let (up_txs, up): (Vec<_>, Vec<_>) = nodes.iter().map(|_| watch::channel(None)).unzip();
        let (started_txs, started): (Vec<_>, Vec<_>) =
            nodes.iter().map(|_| watch::channel(false)).unzip();
        let needs = (nodes.iter())
            .map(|n| {
                (c.start_needs(&n.name).iter())
                    .filter_map(|n| node_index(c, n))
                    .collect()
            })
            .collect();
        let path = crate::plan::critical_path(&c.plan, 1.0)
            .boots
            .iter()
            .filter(|b| b.step == 0)
            .filter_map(|b| node_index(c, &b.node))
            .collect();
        let gates = StartGates {
            created,
            up_txs,
            up,
            started_txs,
            started,
            needs,
            path,
        };
        (gates, txs)
    }

    /// Waits until node `i`'s own first boot is ready (true) or cannot be (false).
    async fn first_boot_up(&self, i: usize) -> bool {
        let mut rx = self.up[i].clone();
        let up = matches!(
            rx.wait_for(Option::is_some).await.as_deref(),
            Ok(Some(true))
        );
        up
    }

    /// Waits until every need of the node is ready; false: one never will be.
    async fn needs_up(&self, i: usize) -> bool {
        for &j in &self.needs[i] {
            if !self.first_boot_up(j).await {
                return false;
            }
        }
        true
    }

    /// Off-path work waits for the start calls of the path nodes that can start now.
    async fn path_first(&self) {
        for &p in &self.path {
            let startable = self.needs[p]
                .iter()
                .all(|&j| *self.up[j].borrow() == Some(true));
            if startable {
                let mut rx = self.started[p].clone();
                let _ = rx.wait_for(|s| *s).await;
            }
        }
    }

    /// Node `i`'s first start, once it exists and what it needs is up (off the critical path:
    /// after the path's start calls); its death during the start-up, if it died.
    async fn start_one(&self, c: &Arc<Cluster>, i: usize) -> Result<Option<String>, RunError> {
        let n = &c.plan.nodes[i].name;
        let (started, up) = (&self.started_txs[i], &self.up_txs[i]);
        let mut rx = self.created[i].clone();
        if !matches!(
            rx.wait_for(Option::is_some).await.as_deref(),
            Ok(Some(true))
        ) {
            // Its creation failed: that error is the one the run reports.
            let _ = started.send(true);
            let _ = up.send(Some(false));
            return Ok(None);
        }
        if !self.needs_up(i).await {
            // What it needs never came up: that node's end is the one reported.
            let _ = started.send(true);
            let _ = up.send(Some(false));
            return Ok(None);
        }
        if !self.path.contains(&i) {
            self.path_first().await;
        }
        c.events
            .show(&RunEvent::Phase(Phase::Start(vec![n.clone()])));
        let r = match c.boot(n, 0).await {
            Ok(h) => {
                let _ = started.send(true);
                c.wait_ready(n, &h).await
            }
            Err(e) => Err(e),
        };
        let _ = started.send(true);
        let _ = up.send(Some(matches!(r, Ok(true))));
        match r {
            Ok(true) => Ok(None),
            Ok(false) => Ok(Some(format!(
                "{n} died while the cluster was being created: {}",
                c.death_line(n)
            ))),
            Err(e) => Err(e),
        }
    }
}

async fn run_step(c: &Arc<Cluster>, signals: &Signals, step: &PlannedStep) -> Result<(), RunError> {
    let t = Instant::now();
    let mut sr = step_result(step);
    // Every edited node's files at once (each node's own writes stay in order), beside the
    // step's starts and restarts: k3s reads its files when a boot starts, so a node's edit only
    // has to land before that node's next start — a node restarted in a later group is edited
    // while the first group boots, and a restarted node's files are written while its old
    // boot stops (a deletion before it: `rm` needs the container running). Nothing is observed
    // before every edit has landed.
    let (done_txs, done_rxs): (Vec<_>, Vec<_>) =
        step.edits.iter().map(|_| watch::channel(None)).unzip();
    let editing = join_all(step.edits.iter().zip(done_txs).map(
        |((node, files), done)| async move {
            let r = edit(c, node, files).await;
            let at = now_rfc3339();
            let _ = done.send(Some(r.is_ok()));
            r.map(|()| at)
        },
    ));
    // Whether `node`'s edit (if the step has one) landed; false: it failed, and the step ends
    // with that error.
    let edited = |node: &str| {
        let rx = (step.edits.keys().position(|n| n == node)).map(|i| done_rxs[i].clone());
        async move {
            let Some(mut rx) = rx else { return true };
            let landed = matches!(
                rx.wait_for(Option::is_some).await.as_deref(),
                Ok(Some(true))
            );
            landed
        }
    };
    let deletes = |node: &str| {
        step.edits
            .get(node)
            .is_some_and(|files| files.values().any(Option::is_none))
    };
    let mut acted = Vec::new();
    let acting = async {
        stop_all(c, step, &mut acted).await?;
        // The nodes of one `start:` start at once, as a restart group does: two etcd joiners
        // started together race for etcd's one learner slot (#21). Then each restart group.
        let start = (!step.start.is_empty()).then_some((ActionKind::Start, &step.start));
        let restarts = step.restart.iter().map(|g| (ActionKind::Restart, g));
        for (kind, group) in start.into_iter().chain(restarts) {
            acted.push(action(kind, group.clone(), vec![]));
            // A group is "at once": every node of it stops (beside its edit) before any starts
            // again, so the group is down together — k3s #13533 shows only when the etcd members
            // restart together; one that comes back while another still runs rejoins its leader.
            let stopped = join_all(group.iter().map(|n| async move {
                // A deletion is `rm` run in the container, which needs it running, so that edit
                // lands before the stop (uploads reach a stopped container too). No stop after
                // a failed edit.
                let stop = async {
                    if kind != ActionKind::Restart || (deletes(n) && !edited(n).await) {
                        return Ok(());
                    }
                    c.stop_for_restart(n).await
                };
                let (stopped, edit_landed) = tokio::join!(stop, edited(n));
                stopped.map(|()| edit_landed)
            }))
            .await;
            for r in stopped {
                if !r? {
                    return Ok(());
                }
            }
            start_group(c, group, step.index).await?;
        }
        // Upgrades last, one node after another (Rancher's order is the check's to write).
        for u in &step.upgrade {
            acted.push(action(ActionKind::Upgrade, vec![u.node.clone()], vec![]));
            // `cmd::common` refused a plan whose upgrade has no image before anything ran.
            let image = u.image.as_deref().ok_or(RunError::Interrupted)?;
            let to = (image, u.binary.as_ref());
            if !edited(&u.node).await || !c.upgrade_node(&u.node, to, step.index).await? {
                return Ok(());
            }
            if let Some(b) = &u.binary {
                check_upgrade_build_runs(c, &u.node, b)?;
            }
        }
        Ok::<(), RunError>(())
    };
    let (edits, acts) = tokio::join!(editing, acting);
    // An edit's own error first: a start that gave up on it says nothing more.
    for ((node, files), r) in step.edits.iter().zip(edits) {
        sr.actions.push(Action {
            kind: ActionKind::Edit,
            nodes: vec![node.clone()],
            at: r?,
            files: files.keys().cloned().collect(),
        });
    }
    acts?;
    sr.actions.extend(acted);
    sr.observations = observe_all(c, signals, step).await;
    sr.versions = running_versions(c);
    // A log lost on the way leaves observations that cannot be trusted: the run stops on it.
    if let Some(e) = c.lost_log() {
        return Err(e);
    }
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

/// A step's record before it ran.
fn step_result(step: &PlannedStep) -> StepResult {
    StepResult {
        index: step.index,
        name: step.name.clone(),
        why: step.why.clone(),
        started_at: now_rfc3339(),
        finished_at: None,
        actions: Vec::new(),
        observations: Vec::new(),
        versions: Default::default(),
    }
}

/// The step's stops, first and at once (what starts and restarts next runs without them);
/// the nodes its `start:` names are no longer stopped.
/// Starts every node of a group at once (its nodes all down) and waits for each new boot.
async fn start_group(c: &Cluster, group: &[String], step: usize) -> Result<(), RunError> {
    for r in join_all(group.iter().map(|n| c.start_and_wait(n, step))).await {
        r?;
    }
    Ok(())
}

async fn stop_all(
    c: &Cluster,
    step: &PlannedStep,
    acted: &mut Vec<Action>,
) -> Result<(), RunError> {
    if !step.stop.is_empty() {
        acted.push(action(ActionKind::Stop, step.stop.clone(), vec![]));
        for r in join_all(step.stop.iter().map(|n| c.stop_node(n))).await {
            r?;
        }
    }
    for n in &step.start {
        c.started_again(n);
    }
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

/// The version each running node runs, from its current boot's banner (`Starting k3s v…`, an
/// agent's `Starting k3s agent v…`): what proves an upgrade ran.
fn running_versions(c: &Cluster) -> indexmap::IndexMap<String, String> {
    (c.plan.nodes.iter())
        .filter(|n| !c.is_stopped(&n.name))
        .filter_map(|n| Some((n.name.clone(), banner_version(c, &n.name)?)))
        .collect()
}

/// The version the node's current boot's banner names (`Starting k3s v…`).
fn banner_version(c: &Cluster, node: &str) -> Option<String> {
    let facts = c.plan.distro.facts();
    let prefixes = [facts.agent_banner_prefix, facts.banner_prefix];
    c.current(node)?.with(|b| {
        b.lines.iter().find_map(|l| {
            let at = prefixes
                .iter()
                .find_map(|p| Some(l.text.find(p)? + p.len()))?;
            let word = l.text[at..].split_whitespace().next()?;
            word.starts_with('v').then(|| word.to_string())
        })
    })
}

/// An upgrade to a local build must boot that build: the new boot's banner names the version
/// the file reported when the check loaded. An image that runs its binary from elsewhere, or a
/// file swapped since, would otherwise be judged under the build's name. (A boot that died
/// before its banner says nothing either way.)
fn check_upgrade_build_runs(
    c: &Cluster,
    node: &str,
    b: &crate::scenario::UpgradeBinary,
) -> Result<(), RunError> {
    match banner_version(c, node) {
        Some(says) if says != b.reported => Err(RunError::BuildNotRun {
            node: node.to_string(),
            command: format!("{}'s banner", c.plan.distro.facts().binary),
            says,
            reported: b.reported.clone(),
            path: c.plan.distro.facts().binary_path.unwrap_or_default().into(),
        }),
        _ => Ok(()),
    }
}

/// Observes every expected (node, signal) of the step at once; results in the step's order.
/// A stopped node is `down` without being read (validation allows nothing else of it).
async fn observe_all(
    c: &Arc<Cluster>,
    signals: &Signals,
    step: &PlannedStep,
) -> Vec<crate::result::Observation> {
    let bug_world = step.bug_world();
    let mut jobs: Vec<futures_util::future::BoxFuture<'_, crate::result::Observation>> = Vec::new();
    for (node, sigs) in &step.expect {
        for (sig, exp) in sigs {
            let bug = bug_world.get(node).and_then(|m| m.get(sig)).cloned();
            let asked = match c.expect {
                Outcome::Reproduced => bug.clone(),
                _ => Some(exp.clone()),
            };
            // The API's view of a node is read whether the node runs or not: a stopped
            // node goes NotReady there only after the node-monitor grace period.
            if signals.get(sig).is_some_and(|d| d.api.is_some()) {
                let ask = super::api::ApiAsk {
                    node,
                    signal: sig,
                    expected: exp,
                    bug,
                    asked,
                };
                jobs.push(Box::pin(super::api::node_ready(c, ask)));
                continue;
            }
            if c.is_stopped(node) {
                jobs.push(Box::pin(std::future::ready(stopped(
                    c, node, sig, exp, bug, asked,
                ))));
                continue;
            }
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
            jobs.push(Box::pin(probe::observe(c, e, signals.get(sig))));
        }
    }
    join_all(jobs).await
}

/// What a stopped node shows: `down`, decided by the step that stopped it, not read from it.
fn stopped(
    c: &Cluster,
    node: &str,
    signal: &str,
    expected: &crate::scenario::Expected,
    bug: Option<crate::scenario::Expected>,
    asked: Option<crate::scenario::Expected>,
) -> crate::result::Observation {
    crate::result::Observation {
        node: node.to_string(),
        signal: signal.to_string(),
        expected: Some(expected.clone()),
        bug,
        observed: crate::result::Observed::Down,
        asked,
        boot: c.current(node).map_or(0, |h| h.with(|b| b.number)),
        evidence: Vec::new(),
        reason: "the node is stopped (a step's `stop:`, no `start:` since)".to_string(),
        rule: crate::result::Rule::Stopped,
        settle_ms: None,
        decided_at: Some(now_rfc3339()),
        death: None,
    }
}
