//! `repro run`: start the topology as real containers, perform the steps, observe, decide.
//!
//! The flow: a results folder and its recorder first (so every run that got past its input
//! leaves a result.json), then the engine and the image, then the cluster and the steps as their
//! own task, then teardown and the verdict. Whatever happens to the task (verdict, error,
//! timeout, Ctrl-C, panic), everything the run created is removed by its labels, and the results
//! written so far are kept. Cleanup never relies on `Drop`. The runner prints nothing: it emits
//! [`RunEvent`]s to receivers; and it renders nothing: its caller hands it a [`Render`].

mod api;
pub(crate) mod baseline;
mod cluster;
mod config;
mod emit;
mod error;
mod event;
pub(crate) mod event_log;
#[cfg(test)]
mod fake;
pub(crate) mod image;
mod in_flight;
pub(crate) mod interrupt;
#[cfg(test)]
mod k3s_lines_tests;
mod kept;
mod node;
pub mod observe;
mod probe;
mod record;
#[cfg(test)]
mod settle_tests;
mod steps;
#[cfg(test)]
mod tests;
mod verdict;
pub mod watch;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use rand::Rng;
use tokio_util::sync::CancellationToken;

use futures_util::future::BoxFuture;

use crate::docker::{self, DockerApi, DockerError};
use crate::exit::Exit;
use crate::plan::Plan;
use crate::redact::{Redactor, SharedRedactor};
use crate::result::{Outcome, Verdict};
use crate::scenario::Scenario;

pub(crate) use crate::result::FailCause;
pub(crate) use config::{Expect, Privileged, RunConfig, Target};
pub(crate) use error::RunError;
pub(crate) use event::{Phase, Receiver, RunEnd, RunEvent};
pub(crate) use node::log_command;
pub(crate) use record::shell_quote;
#[cfg(test)]
pub(crate) use record::RESULT_FILE;

use cluster::{Cluster, ClusterSpec};
use emit::Events;
use event::Conclusion;
use record::Recorder;
use steps::Driven;

/// Renders a finished run's reports from its results folder, in the run's redaction context:
/// the caller's (`crate::report::render_all_with`), so the runner renders nothing itself. It
/// runs after result.json's conclusion is written; a failure is the run's (exit 3).
pub(crate) type Render = fn(&Path, &mut Redactor) -> anyhow::Result<()>;

/// The whole `repro run` of a resolved scenario and plan; `receivers` hear its events, and
/// `render` makes the reports once it concluded.
pub(crate) async fn execute(
    cfg: &RunConfig,
    sc: Scenario,
    plan: Plan,
    receivers: Vec<Arc<dyn Receiver>>,
    render: Render,
) -> RunEnd {
    let connect = Box::pin(async {
        let engine = docker::connect().await?;
        Ok(Arc::new(engine) as Arc<dyn DockerApi>)
    });
    let ways = Ways {
        connect,
        render,
        cancel: CancellationToken::new(),
    };
    execute_with(cfg, sc, plan, receivers, ways).await
}

/// What a run is handed besides its input: how it reaches Docker, how it renders, and the
/// cancellation (Ctrl-C also cancels).
struct Ways<'a> {
    connect: Connect<'a>,
    render: Render,
    cancel: CancellationToken,
}

/// How a run gets its Docker client: connecting to the engine, or (in tests) a fake.
type Connect<'a> = BoxFuture<'a, Result<Arc<dyn DockerApi>, DockerError>>;

/// `execute` with the Docker client, the renderer and the cancellation given.
async fn execute_with(
    cfg: &RunConfig,
    sc: Scenario,
    plan: Plan,
    receivers: Vec<Arc<dyn Receiver>>,
    ways: Ways<'_>,
) -> RunEnd {
    let Ways {
        connect,
        render,
        cancel,
    } = ways;
    let t_all = Instant::now();
    let events = Events::new(receivers);
    let run_id = random_hex(4);
    let dir = results_dir(cfg, &plan, &run_id);
    // The commands refuse an unpredictable `auto` before they get here (a clear input error).
    let (expect, because) = match cfg.expect.resolve(&plan) {
        Ok(resolved) => resolved,
        Err(why) => {
            let end = RunEnd {
                status: Err(RunError::Internal(why)),
                dir: None,
                verdict: None,
                seconds: t_all.elapsed().as_secs_f64(),
                result: None,
            };
            return finished(&events, end);
        }
    };
    let initial = record::initial_result(cfg, &sc, &plan, &run_id, (expect, because));
    // A restored cluster keeps the token its datastore was made with: its slot's.
    let token = match &cfg.restore {
        Some(slot) => slot.token().to_string(),
        None => random_hex(24),
    };
    let redactor = run_redactor(&token, &plan);
    let recorder = match Recorder::create(&dir, &plan, initial, redactor.clone()) {
        Ok(r) => Arc::new(r),
        Err(e) => {
            let end = RunEnd {
                status: Err(e.into()),
                dir: None,
                verdict: None,
                seconds: t_all.elapsed().as_secs_f64(),
                result: None,
            };
            return finished(&events, end);
        }
    };
    let mut events = events.with_recorder(recorder.clone());
    // The folder's events.jsonl: a stream that cannot be created loses only itself (the record
    // is result.json), said on stderr.
    match event_log::EventLog::create(&recorder.dir().join(event_log::FILE)) {
        Ok(log) => events = events.with_receiver(Arc::new(log)),
        Err(e) => errln!(
            "warning: cannot write {}: {e}; the run goes on without it",
            event_log::FILE
        ),
    }
    // Listening before the first line is shown, so a signal sent on seeing it is caught.
    // Stopped when this run ends: `matrix` and `bisect` run many in one process, and a finished
    // run's handler would still answer a later Ctrl-C with "removing the cluster".
    // The run's claim on the host's inotify budget (made in `prepare`): shrinks as nodes come
    // up, goes when the run is over.
    let inotify = Arc::new(InotifySlot::default());
    let events = events.with_receiver(inotify.clone());
    let handler = interrupt::spawn_handler(cancel.clone(), run_id.clone(), events.clone());
    events.show(&RunEvent::Started {
        run_id: run_id.clone(),
        check: plan.check.clone(),
        k3s_version: plan.k3s_version.to_string(),
        image: plan.image.clone(),
        dir,
    });

    let s = Session {
        cfg,
        expect,
        plan: &plan,
        events,
        recorder,
        run_id,
        token,
        redactor,
        render,
        t_all,
        inotify,
    };
    let prepared = tokio::select! {
        r = prepare(&s, &sc, connect) => r,
        _ = cancel.cancelled() => Err(RunError::Interrupted),
    };
    let (outcome, cluster) = match prepared {
        Ok(cluster) => (drive(&cluster, &sc, &cancel).await, Some(cluster)),
        Err(e) => (Err(e), None),
    };
    let end = conclude(&s, cluster, outcome, &cancel).await;
    handler.abort();
    finished(&s.events, end)
}

/// What the phases of one run share.
struct Session<'a> {
    cfg: &'a RunConfig,
    /// The outcome asked for, resolved (`auto` is what `fixed-in` predicts).
    expect: Outcome,
    plan: &'a Plan,
    events: Events,
    recorder: Arc<Recorder>,
    run_id: String,
    /// The cluster's join token: random per run, redacted everywhere.
    token: String,
    /// The run's one redaction context (the token is its `<REDACTED-1>`).
    redactor: SharedRedactor,
    render: Render,
    t_all: Instant,
    inotify: Arc<InotifySlot>,
}

/// Where a run keeps its claim on the host's inotify budget ([`crate::doctor::claim_inotify`]),
/// told the run's events: a node that is ready holds its instances itself from then on.
#[derive(Default)]
struct InotifySlot(std::sync::Mutex<Option<crate::doctor::InotifyClaim>>);

impl Receiver for InotifySlot {
    fn receive(&self, event: &RunEvent<'_>) {
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match event {
            RunEvent::Node {
                node,
                state: event::NodeState::Ready,
                ..
            } => {
                if let Some(c) = slot.as_ref() {
                    c.node_ready(node);
                }
            }
            RunEvent::Finished(_) => *slot = None,
            _ => {}
        }
    }
}

/// Before the first node of a run whose nodes run systemd (RKE2, its stand-in too): the host's
/// inotify budget must hold them, counting what other runs starting now have claimed (#30:
/// four runs at once otherwise all pass and all run out). Only where the engine runs on this
/// machine, whose limit is then the nodes'.
async fn claim_inotify(s: &Session<'_>) -> Result<(), RunError> {
    if !s.cfg.host_check
        || !s.plan.distro.facts().node_process.systemd_pid1()
        || !crate::doctor::is_local(&docker::endpoint())
    {
        return Ok(());
    }
    let (run_id, nodes) = (s.run_id.clone(), s.plan.nodes.len() as u64);
    // A blocking walk of /proc and a file lock other runs hold for as long.
    let claimed = tokio::task::spawn_blocking(move || crate::doctor::claim_inotify(&run_id, nodes))
        .await
        .map_err(|e| RunError::Internal(e.to_string()))?;
    let claim = claimed.map_err(RunError::Host)?;
    *s.inotify.0.lock().unwrap_or_else(|e| e.into_inner()) = claim;
    Ok(())
}

/// The engine, the image and the cluster's shape: everything before the first container.
async fn prepare(
    s: &Session<'_>,
    sc: &Scenario,
    connect: Connect<'_>,
) -> Result<Arc<Cluster>, RunError> {
    let (cfg, plan, events) = (s.cfg, s.plan, &s.events);
    let docker = connect.await?;
    let mut env = docker.describe().await;
    // The run's network MTU: `--mtu`, else what the engine gives containers on its bridge.
    let mtu = crate::doctor::run_network_mtu(cfg.mtu, env.bridge_mtu);
    env.network_mtu = mtu;
    events.emit(&RunEvent::Engine(env))?;
    let t_img = Instant::now();
    let image_id = image::ensure(docker.as_ref(), plan, cfg, events).await?;
    image::ensure_upgrades(docker.as_ref(), plan, cfg, events).await?;
    let (stand_in, privileged) = image::traits(docker.as_ref(), plan, cfg).await;
    claim_inotify(s).await?;
    // The doctor's fast part, before any node: an engine that refuses privileged containers
    // would otherwise fail every node's start with a runtime message about capabilities.
    if privileged && cfg.host_check {
        if let Some(line) =
            crate::doctor::preflight(docker.as_ref(), &plan.image, plan.distro.facts(), &s.run_id)
                .await
        {
            return Err(RunError::Host(line.text()));
        }
    }
    // k3s's load balancer picks among new servers at random; the stand-in draws from a seed,
    // one per node derived from the run's, recorded so a run's picks can be replayed.
    let sim_seed = stand_in.then(|| cfg.sim_seed.unwrap_or_else(rand::random));
    events.emit(&RunEvent::ImageReady {
        image_id: image_id.clone(),
        stand_in,
        privileged,
        sim_seed,
        seconds: t_img.elapsed().as_secs_f64(),
    })?;
    // The lines this distribution prints: an rke2 agent is ready on its own line, the
    // kubelet's registration is k3s's (rke2's kubelet logs to a file of its own).
    let up_lines = |signal: &str| -> Vec<regex::Regex> {
        sc.signals
            .get(signal)
            .map(|s| {
                s.up.iter()
                    .filter(|p| p.distro.is_none_or(|d| d == plan.distro))
                    .map(|p| p.regex.clone())
                    .collect()
            })
            .unwrap_or_default()
    };
    let (ready, agent_ready) = (
        up_lines(crate::scenario::READY_SIGNAL),
        up_lines(crate::scenario::AGENT_READY_SIGNAL),
    );
    let mut spec = ClusterSpec {
        docker,
        run_id: s.run_id.clone(),
        plan: plan.clone(),
        dir: s.recorder.dir().to_path_buf(),
        events: events.clone(),
        timeout: cfg.timeout,
        settle: observe::Settle {
            margin: cfg.settle.or(sc.check.settle),
        },
        privileged,
        scrub: scrubber(&s.redactor),
        redactor: s.redactor.clone(),
        expect: s.expect,
        ready,
        agent_ready,
        token: s.token.clone(),
        pace: cfg.target.sim_pace,
        plant: cfg.target.sim_plant.clone(),
        binary: cfg.target.build.as_ref().map(|b| node::spec::BuildCopy {
            host: b.host_path.clone(),
            path: b.info.installed_at.clone(),
            reported: b.info.reported.clone(),
        }),
        sim_seed,
        mtu,
        restore: None,
        // A kept cluster is left on purpose: never an orphan to `repro clean --orphans`.
        extra_labels: (cfg
            .keep
            .then(|| (docker::owner::LABEL_KEPT.to_string(), "true".to_string())))
        .into_iter()
        .collect(),
    };
    if let Some(slot) = &cfg.restore {
        spec.restore = restore_from(s, slot, &spec, image_id.as_deref()).await?;
    }
    Ok(Arc::new(Cluster::new(spec)))
}

/// The slot's kept baseline for this run, made first if it has none that fits (#39,
/// `baseline.rs`). A baseline whose bring-up fails (a node died, or was not ready in time)
/// is removed and the run goes on fresh: it meets the same and records it as any run does.
async fn restore_from(
    s: &Session<'_>,
    slot: &baseline::Slot,
    run: &ClusterSpec,
    image_id: Option<&str>,
) -> Result<Option<Arc<baseline::Baseline>>, RunError> {
    let env = [format!("{:?}", run.pace), format!("{:?}", run.plant)];
    let key = baseline::key(s.plan, image_id, &env);
    match slot.fitting(run.docker.as_ref(), &key).await {
        Ok(b) => {
            s.events.show(&RunEvent::Note(format!(
                "restoring the cluster from baseline {}",
                b.id
            )));
            return Ok(Some(b));
        }
        Err(Some(replaced)) => s.events.show(&RunEvent::Note(replaced)),
        Err(None) => {}
    }
    let t0 = Instant::now();
    let id = slot.begin();
    // The baseline's boot logs: a scratch folder next to the run's, removed once it is kept.
    let scratch = s.cfg.results.join(format!(".baseline-{id}"));
    let labels = baseline::labels(s.plan, image_id, &key, &s.token);
    let cluster = Arc::new(Cluster::new(baseline_spec(run, &id, &scratch, labels)));
    slot.making(cluster.clone());
    let up = steps::bring_up(&cluster).await;
    let _ = std::fs::remove_dir_all(&scratch);
    let kept = match up {
        Ok((None, _)) => cluster.keep_as_baseline().await,
        Ok((Some(died), _)) => Err(RunError::Internal(died)),
        Err(e) => Err(e),
    };
    match (kept, cluster.network_of()) {
        (Ok(nodes), Some(net)) => {
            let b = Arc::new(baseline::Baseline::new(id, key, net, nodes));
            slot.keep(Some(b.clone())).await;
            s.events.show(&RunEvent::Note(format!(
                "baseline kept after {:.1}s; restoring the cluster from baseline {}",
                t0.elapsed().as_secs_f64(),
                b.id
            )));
            Ok(Some(b))
        }
        (kept, _) => {
            let _ = cluster.remove().await;
            slot.keep(None).await;
            let _ = run
                .docker
                .remove_labelled(docker::LABEL_RUN, Some(&id))
                .await;
            let why = kept
                .err()
                .map_or("no network".to_string(), |e| e.to_string());
            s.events.show(&RunEvent::Note(format!(
                "no baseline ({why}); this run starts its cluster fresh"
            )));
            Ok(None)
        }
    }
}

/// A baseline's cluster: the run's, under the baseline's id and labels, its logs in a scratch
/// folder, its events told no one (the run's record is the run's own).
fn baseline_spec(run: &ClusterSpec, id: &str, dir: &Path, labels: docker::Labels) -> ClusterSpec {
    ClusterSpec {
        docker: run.docker.clone(),
        run_id: id.to_string(),
        plan: run.plan.clone(),
        dir: dir.to_path_buf(),
        events: Events::new(vec![]),
        timeout: run.timeout,
        settle: run.settle,
        privileged: run.privileged,
        scrub: run.scrub.clone(),
        expect: run.expect,
        ready: run.ready.clone(),
        agent_ready: run.agent_ready.clone(),
        token: run.token.clone(),
        sim_seed: run.sim_seed,
        redactor: run.redactor.clone(),
        pace: run.pace,
        plant: run.plant.clone(),
        binary: run.binary.clone(),
        mtu: run.mtu,
        restore: None,
        extra_labels: labels,
    }
}

/// Runs the cluster's steps as their own task, so a panic or Ctrl-C still reaches cleanup.
async fn drive(
    cluster: &Arc<Cluster>,
    sc: &Scenario,
    cancel: &CancellationToken,
) -> Result<Driven, RunError> {
    let body = tokio::spawn(steps::drive(
        cluster.clone(),
        Arc::new(sc.signals.clone()),
        cancel.clone(),
    ));
    let abort = body.abort_handle();
    tokio::select! {
        // A Ctrl-C counts even if the steps happened to finish at the same moment.
        biased;
        _ = cancel.cancelled() => {
            abort.abort();
            Err(RunError::Interrupted)
        }
        r = body => match r {
            Ok(r) => r,
            Err(e) if e.is_panic() => Err(RunError::Internal(e.to_string())),
            Err(e) => Err(RunError::Internal(e.to_string())),
        },
    }
}

/// How to reach a kept cluster (src/run/kept.rs), after writing the first API server's
/// kubeconfig into the results folder on real k3s and RKE2 (the stand-in serves no API).
async fn kept_hint(c: &Cluster, plan: &Plan, dir: &std::path::Path) -> String {
    let facts = plan.distro.facts();
    let stand_in = c.sim_seed.is_some();
    let api = kept::api_node(&plan.nodes);
    let kubeconfig = match api {
        Some(n) if !stand_in => Some(kept_kubeconfig(c, &n.name, dir).await),
        Some(n) => Some(kept_sim_kubeconfig(c, &n.name, dir)),
        None => None,
    };
    let first = &plan.nodes[0];
    // `repro runs` reads ./results unless told otherwise.
    let results_flag = match dir.parent() {
        Some(p) if p != std::path::Path::new("results") => {
            format!(
                " --results {}",
                record::shell_quote(&p.display().to_string())
            )
        }
        _ => String::new(),
    };
    kept::hint(&kept::Kept {
        facts,
        stand_in,
        run_id: &c.run_id,
        label: docker::LABEL_RUN,
        first: (&first.name, c.container(&first.name)),
        log: node::log_command(facts, first.role, false),
        results_flag,
        api: api.map(|n| c.container(&n.name)),
        kubeconfig,
    })
}

/// The node's kubeconfig, its server the node's address, written 0600 into the results folder.
async fn kept_kubeconfig(
    c: &Cluster,
    node: &str,
    dir: &std::path::Path,
) -> Result<(std::path::PathBuf, String), String> {
    let facts = c.plan.distro.facts();
    let cmd = ["cat".to_string(), facts.kubeconfig_path.to_string()];
    let text = match c.docker.exec(c.container(node), &cmd).await {
        Ok((0, text)) => text,
        Ok((code, _)) => {
            return Err(format!(
                "{node} has no readable {} (exit {code})",
                facts.kubeconfig_path
            ))
        }
        Err(e) => {
            return Err(format!(
                "cannot read {node}'s {}: {e}",
                facts.kubeconfig_path
            ))
        }
    };
    let ip = c
        .address(node)
        .ok_or_else(|| format!("{node} has no address on the run's network"))?;
    let (text, server) = kept::readdress(&text, facts.api_port, &ip).ok_or_else(|| {
        format!(
            "{node}'s {} names no local API server",
            facts.kubeconfig_path
        )
    })?;
    let path = dir.join(kept::KUBECONFIG_FILE);
    kept::write_private(&path, &text)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok((path, server))
}

/// The stand-in's kubeconfig (#40: `repro audit` reads its node list): the stand-in speaks
/// plain HTTP on one port and takes a bearer derived from the cluster token
/// (`distro::sim_admin`: no copy of the token in the results folder), so its server is
/// `http://` the node's address; written 0600 into the results folder, as real k3s's is.
fn kept_sim_kubeconfig(
    c: &Cluster,
    node: &str,
    dir: &std::path::Path,
) -> Result<(std::path::PathBuf, String), String> {
    let ip = c
        .address(node)
        .ok_or_else(|| format!("{node} has no address on the run's network"))?;
    // The stand-in serves its API on the supervisor's port (the same port on k3s).
    let server = format!("http://{ip}:{}", c.plan.distro.facts().supervisor_port);
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: default\n  cluster:\n    server: {server}\ncontexts:\n- name: default\n  context:\n    cluster: default\n    user: default\ncurrent-context: default\nusers:\n- name: default\n  user:\n    token: {}\n",
        distro::sim_admin::bearer(&c.token)
    );
    let path = dir.join(kept::KUBECONFIG_FILE);
    kept::write_private(&path, &text)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok((path, server))
}

/// Teardown (or `--keep`), the verdict and exit code, result.json's last save and the reports.
async fn conclude(
    s: &Session<'_>,
    cluster: Option<Arc<Cluster>>,
    outcome: Result<Driven, RunError>,
    cancel: &CancellationToken,
) -> RunEnd {
    let (cfg, plan, events, recorder) = (s.cfg, s.plan, &s.events, &s.recorder);
    let interrupted = matches!(outcome, Err(RunError::Interrupted));
    let t_down = Instant::now();
    // A problem met while writing the last files; it counts only if the run had none before.
    let mut late: Option<RunError> = None;
    if let Some(c) = &cluster {
        if let Err(e) = c.save_inspect().await {
            late.get_or_insert(e);
        }
        if cfg.keep && !interrupted {
            events.show(&RunEvent::Note(kept_hint(c, plan, recorder.dir()).await));
        } else {
            events.show(&RunEvent::Phase(Phase::Teardown));
            let problems = c.remove().await;
            if !problems.is_empty() {
                let e = RunError::Cleanup {
                    run_id: c.run_id.clone(),
                    problems: problems.join("; "),
                };
                // Said at once, on stderr, even if the run already failed for another reason.
                events.show(&RunEvent::Note(format!("error: {e}")));
                late.get_or_insert(e);
            }
        }
        if let Some(e) = c.log_write_error() {
            late.get_or_insert(e.into());
        }
    }
    let teardown_secs = t_down.elapsed().as_secs_f64();

    let (verdict, mut ending) = match outcome {
        Ok(Driven::Completed) => {
            let observations: Vec<_> = recorder
                .snapshot()
                .steps
                .into_iter()
                .flat_map(|s| s.observations)
                .collect();
            let v = verdict::decide(&observations, plan.has_bug_signature(), &plan.notes);
            let exit = Exit::of_outcome(v.outcome, s.expect);
            (Some(v), Ending::new(exit, None))
        }
        Ok(Driven::SetupDied(msg)) => {
            let v = Verdict {
                outcome: Outcome::Inconclusive,
                reason: msg.clone(),
                differences: vec![],
                expectations: 0,
                matched_expected: 0,
                matched_bug: 0,
            };
            (Some(v), Ending::new(Exit::Inconclusive, Some(msg)))
        }
        Err(e) => (None, Ending::failed(e)),
    };
    if let Some(e) = late {
        ending.fail_late(e);
    }
    // An interrupt that came during the teardown (or after the steps finished) is still an
    // interrupt: 130, whatever the verdict.
    if cancel.is_cancelled() {
        ending.interrupt();
    }
    let conclusion = |ending: &Ending| Conclusion {
        boots: cluster
            .as_ref()
            .map(|c| c.boot_records())
            .unwrap_or_default(),
        verdict: verdict.clone(),
        exit: ending.exit(),
        error: ending.error.clone(),
        failure: ending.status.as_ref().err().map(RunError::cause),
        teardown_secs,
        total_secs: s.t_all.elapsed().as_secs_f64(),
    };
    if let Err(e) = events.emit(&RunEvent::Concluded(conclusion(&ending))) {
        ending.fail_late(e.into());
    }
    let interrupted_before = cancel.is_cancelled();
    // Reports are rendered from result.json and the logs alone (as `repro report` does later).
    let rendered = (s.render)(recorder.dir(), &mut s.redactor.lock());
    if let Err(e) = rendered {
        let e = RunError::Reports {
            dir: recorder.dir().to_path_buf(),
            reason: format!("{e:#}"),
        };
        events.show(&RunEvent::Note(e.to_string()));
        if ending.fail_late(e) {
            // result.json says how the run ended; if even that cannot be written, the first
            // failure (this one) is what the run reports.
            let _ = events.emit(&RunEvent::Concluded(conclusion(&ending)));
        }
    }
    if cancel.is_cancelled() && !interrupted_before {
        // Interrupted while the reports were rendered: result.json says 130 too.
        ending.interrupt();
        let _ = events.emit(&RunEvent::Concluded(conclusion(&ending)));
    }
    RunEnd {
        status: ending.status,
        dir: Some(recorder.dir().to_path_buf()),
        verdict,
        seconds: s.t_all.elapsed().as_secs_f64(),
        result: Some(recorder.redacted_snapshot()),
    }
}

/// How a run comes out as it concludes, and the error result.json tells.
struct Ending {
    /// What the verdict means (a setup death: inconclusive), or the failure.
    status: Result<Exit, RunError>,
    /// What result.json says went wrong (also a setup death, which is not a failure).
    error: Option<String>,
}

impl Ending {
    fn new(exit: Exit, error: Option<String>) -> Ending {
        Ending {
            status: Ok(exit),
            error,
        }
    }

    fn failed(e: RunError) -> Ending {
        Ending {
            error: Some(e.to_string()),
            status: Err(e),
        }
    }

    fn exit(&self) -> Exit {
        match &self.status {
            Ok(exit) => *exit,
            Err(e) => e.exit(),
        }
    }

    /// An interrupt ends the run as interrupted; the error it had (if any) is kept in
    /// result.json.
    fn interrupt(&mut self) {
        if matches!(self.status, Err(RunError::Interrupted)) {
            return;
        }
        if self.error.is_none() {
            self.error = Some(RunError::Interrupted.to_string());
        }
        self.status = Err(RunError::Interrupted);
    }

    /// A results folder that could not be fully written is an infrastructure failure, unless
    /// the run had already failed (its own error is the one to tell). True if it now counts.
    fn fail_late(&mut self, e: RunError) -> bool {
        if self.status.is_err() {
            return false;
        }
        *self = Ending::failed(e);
        true
    }
}

/// Tells the receivers the run is over, and returns how it ended.
fn finished(events: &Events, end: RunEnd) -> RunEnd {
    events.show(&RunEvent::Finished(&end));
    end
}

/// The run's redaction context: the token first (so it is `<REDACTED-1>`), then every secret the
/// scenario sets (learned whole by `plan::plan_redactor`: a config key's value, an env value, a
/// `*-file` key's file), learned before anything is written, so our own output, the logs, result.json and the reports all hide them alike.
fn run_redactor(token: &str, plan: &Plan) -> SharedRedactor {
    let mut redactor = crate::plan::plan_redactor(plan, &[token.to_string()]);
    // `DOCKER_HOST=tcp://user:password@host` is recorded in result.json's environment.
    redactor.learn_text(&docker::endpoint());
    SharedRedactor::new(redactor)
}

/// Applied to every log line and probe output as it comes.
fn scrubber(redactor: &SharedRedactor) -> watch::Scrub {
    let redactor = redactor.clone();
    Arc::new(move |s: String| redactor.text(&s))
}

fn results_dir(cfg: &RunConfig, plan: &Plan, run_id: &str) -> PathBuf {
    let t = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    cfg.results.join(format!(
        "{}-{}-{t}-{run_id}",
        plan.check,
        plan.k3s_version.image_tag()
    ))
}

pub(crate) fn random_hex(bytes: usize) -> String {
    let mut rng = rand::rng();
    (0..bytes)
        .map(|_| format!("{:02x}", rng.random::<u8>()))
        .collect()
}
