//! `repro run`: start the topology as real containers, perform the steps, observe, decide.
//!
//! The flow: a results folder and its recorder first (so every run that got past its input
//! leaves a result.json), then the engine and the image, then the cluster and the steps as their
//! own task, then teardown and the verdict. Whatever happens to the task (verdict, error,
//! timeout, Ctrl-C, panic), everything the run created is removed by its labels, and the results
//! written so far are kept. Cleanup never relies on `Drop`. The runner prints nothing: it emits
//! [`RunEvent`]s to receivers.

mod cluster;
mod config;
mod error;
mod event;
#[cfg(test)]
mod fake;
mod image;
mod interrupt;
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

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use rand::Rng;
use tokio_util::sync::CancellationToken;

use futures_util::future::BoxFuture;

use crate::docker::{self, DockerApi, DockerError, Engine};
use crate::exit;
use crate::plan::Plan;
use crate::redact::SharedRedactor;
use crate::result::{Outcome, Verdict};
use crate::scenario::Scenario;

pub use cluster::container_name;
pub use config::{Expect, Privileged, RunConfig, Target};
pub use error::RunError;
pub use event::{NodeState, Phase, Receiver, RunEnd, RunEvent};
pub use record::{RecordError, RESULT_FILE};

use cluster::{Cluster, ClusterSpec};
use event::{Conclusion, Events};
use record::Recorder;
use steps::Driven;

/// The whole `repro run` of a resolved scenario and plan; `receivers` hear its events.
pub async fn execute(
    cfg: &RunConfig,
    sc: Scenario,
    plan: Plan,
    receivers: Vec<Arc<dyn Receiver>>,
) -> RunEnd {
    let connect = Box::pin(async {
        let engine = Engine::connect().await?;
        Ok(Arc::new(engine) as Arc<dyn DockerApi>)
    });
    execute_with(cfg, sc, plan, receivers, connect, CancellationToken::new()).await
}

/// How a run gets its Docker client: connecting to the engine, or (in tests) a fake.
type Connect<'a> = BoxFuture<'a, Result<Arc<dyn DockerApi>, DockerError>>;

/// `execute` with the Docker client and the cancellation given (Ctrl-C also cancels).
async fn execute_with(
    cfg: &RunConfig,
    sc: Scenario,
    plan: Plan,
    receivers: Vec<Arc<dyn Receiver>>,
    connect: Connect<'_>,
    cancel: CancellationToken,
) -> RunEnd {
    let t_all = Instant::now();
    let events = Events::new(receivers);
    let run_id = random_hex(4);
    let dir = results_dir(cfg, &plan, &run_id);
    let (expect, because) = cfg.expect.resolve(&plan);
    let initial = record::initial_result(cfg, &sc, &plan, &run_id, (expect, because));
    let token = random_hex(24);
    let redactor = run_redactor(&token, &plan);
    let recorder = match Recorder::create(&dir, &plan, initial, redactor.clone()) {
        Ok(r) => Arc::new(r),
        Err(e) => {
            let end = RunEnd {
                code: exit::INFRA,
                dir: None,
                verdict: None,
                error: Some(e.into()),
                seconds: t_all.elapsed().as_secs_f64(),
                result: None,
            };
            return finished(&events, end);
        }
    };
    let events = events.with_recorder(recorder.clone());
    events.show(&RunEvent::Started {
        run_id: run_id.clone(),
        check: plan.check.clone(),
        k3s_version: plan.k3s_version.to_string(),
        image: plan.image.clone(),
        dir,
    });

    // Stopped when this run ends: `matrix` and `bisect` run many in one process, and a finished
    // run's handler would still answer a later Ctrl-C with "removing the cluster".
    let handler = interrupt::spawn_handler(cancel.clone(), run_id.clone(), events.clone());
    let s = Session {
        cfg,
        expect,
        plan: &plan,
        events,
        recorder,
        run_id,
        token,
        redactor,
        t_all,
    };
    let prepared = tokio::select! {
        r = prepare(&s, &sc, connect) => r,
        _ = cancel.cancelled() => Err(RunError::Interrupted),
    };
    let (outcome, cluster) = match prepared {
        Ok(cluster) => (drive(&cluster, &sc, &cancel).await, Some(cluster)),
        Err(e) => (Err(e), None),
    };
    let end = conclude(&s, cluster, outcome).await;
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
    t_all: Instant,
}

/// The engine, the image and the cluster's shape: everything before the first container.
async fn prepare(
    s: &Session<'_>,
    sc: &Scenario,
    connect: Connect<'_>,
) -> Result<Arc<Cluster>, RunError> {
    let (cfg, plan, events) = (s.cfg, s.plan, &s.events);
    let docker = connect.await?;
    events.emit(&RunEvent::Engine(docker.describe().await))?;
    let t_img = Instant::now();
    let image_id = image::ensure(docker.as_ref(), plan, cfg, events).await?;
    let (stand_in, privileged) = image::traits(docker.as_ref(), plan, cfg).await;
    events.emit(&RunEvent::ImageReady {
        image_id,
        stand_in,
        privileged,
        seconds: t_img.elapsed().as_secs_f64(),
    })?;
    let ready = sc
        .signals
        .get("ready")
        .map(|s| s.up.iter().map(|p| p.regex.clone()).collect())
        .unwrap_or_default();
    Ok(Arc::new(Cluster::new(ClusterSpec {
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
        token: s.token.clone(),
    })))
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

/// Teardown (or `--keep`), the verdict and exit code, result.json's last save and the reports.
async fn conclude(
    s: &Session<'_>,
    cluster: Option<Arc<Cluster>>,
    outcome: Result<Driven, RunError>,
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
            let first = container_name(&c.run_id, &plan.nodes[0].name);
            events.show(&RunEvent::Note(format!(
                "--keep: the cluster is still running. Inspect it with\n  docker ps --filter label={}={}\n  docker logs {first}\n  docker exec -it {first} sh\nand remove it with\n  repro clean --run {}",
                docker::LABEL_RUN, c.run_id, c.run_id
            )));
        } else {
            events.show(&RunEvent::Phase(Phase::Teardown));
            for e in c.remove().await {
                events.show(&RunEvent::Note(format!(
                    "cleanup problem: {e} (run `repro clean --run {}`)",
                    c.run_id
                )));
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
            let code = if v.outcome == s.expect {
                exit::OK
            } else if v.outcome == Outcome::Inconclusive {
                exit::INCONCLUSIVE
            } else {
                exit::OUTCOME_DIFFERS
            };
            (Some(v), Ending::new(code, None))
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
            (Some(v), Ending::new(exit::INCONCLUSIVE, Some(msg)))
        }
        Err(e) => (None, Ending::failed(e)),
    };
    if let Some(e) = late {
        ending.fail_late(e);
    }
    let conclusion = |ending: &Ending| Conclusion {
        boots: cluster
            .as_ref()
            .map(|c| c.boot_records())
            .unwrap_or_default(),
        verdict: verdict.clone(),
        exit_code: ending.code,
        error: ending.error.clone(),
        teardown_secs,
        total_secs: s.t_all.elapsed().as_secs_f64(),
    };
    if let Err(e) = events.emit(&RunEvent::Concluded(conclusion(&ending))) {
        ending.fail_late(e.into());
    }
    // Reports are rendered from result.json and the logs alone (as `repro report` does later).
    let rendered = crate::report::render_all_with(recorder.dir(), &mut s.redactor.lock());
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
    RunEnd {
        code: ending.code,
        dir: Some(recorder.dir().to_path_buf()),
        verdict,
        error: ending.failure,
        seconds: s.t_all.elapsed().as_secs_f64(),
        result: Some(recorder.redacted_snapshot()),
    }
}

/// The exit code and error of a run as it concludes.
struct Ending {
    code: i32,
    /// What result.json says went wrong (also a setup death, which is not a failure).
    error: Option<String>,
    failure: Option<RunError>,
}

impl Ending {
    fn new(code: i32, error: Option<String>) -> Ending {
        Ending {
            code,
            error,
            failure: None,
        }
    }

    fn failed(e: RunError) -> Ending {
        Ending {
            code: e.exit_code(),
            error: Some(e.to_string()),
            failure: Some(e),
        }
    }

    /// A results folder that could not be fully written is an infrastructure failure, unless
    /// the run had already failed (its own error is the one to tell). True if it now counts.
    fn fail_late(&mut self, e: RunError) -> bool {
        if self.failure.is_some() {
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
/// scenario sets (a secret-looking value in a config, file or env), learned before anything is
/// written, so our own output, the logs, result.json and the reports all hide them alike.
fn run_redactor(token: &str, plan: &Plan) -> SharedRedactor {
    let mut redactor = crate::redact::Redactor::new(&[token.to_string()]);
    for n in &plan.nodes {
        for (k, v) in &n.env {
            redactor.learn_text(&format!("{k}={v}"));
        }
    }
    let files = plan
        .initial
        .values()
        .flatten()
        .chain(plan.steps.iter().flat_map(|s| s.edits.values().flatten()));
    for (path, content) in files {
        if let Some(c) = content {
            redactor.learn_file(path, c);
        }
    }
    for s in &plan.steps {
        for c in s.configs.values() {
            redactor.learn_file(crate::plan::CONFIG_PATH, c);
        }
    }
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

fn random_hex(bytes: usize) -> String {
    let mut rng = rand::rng();
    (0..bytes)
        .map(|_| format!("{:02x}", rng.random::<u8>()))
        .collect()
}
