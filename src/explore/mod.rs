//! `repro explore`: search a topology for config-order bugs nobody wrote a check for (#29).
//!
//! A campaign generates sequences of edits and restarts (`generate.rs`), writes each as an
//! ordinary check file whose `expect:` is the model of k3s's rules (`model.rs`), runs it through
//! the one run path (the caller's [`RunOne`]: `repro run`'s resolve and `run::execute`), judges
//! every recorded run with the pure oracle (`oracle.rs`), groups the findings by cause, then
//! minimises each defect by delta debugging over its steps, confirms the minimal check on fresh
//! clusters and writes it with `bug:` = what was observed (`findings.rs` for the outputs).
//! Everything is kept in the campaign folder (campaign.json: the plan and how far it got), so a
//! campaign resumes, and `--recheck` re-judges its folders with no engine.

pub(crate) mod cause;
mod cells;
pub(crate) mod cost;
mod ddmin;
pub(crate) mod findings;
pub(crate) mod folder;
pub(crate) mod generate;
pub(crate) mod lifecycle;
pub(crate) mod liveness;
pub(crate) mod model;
pub(crate) mod oracle;
#[cfg(test)]
mod oracle_tests;
pub(crate) mod slots;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};

use crate::result::{Observed, RunResult};
use crate::run::FailCause;

use findings::{FindingsFile, Minimal};
use generate::{Bug, Context, KeySpace, SeqStep, Sequence};
use model::{Config, NodeInfo, Rules};
use oracle::{Class, Piece};

pub(crate) const CAMPAIGN_FILE: &str = "campaign.json";
pub(crate) const FINDINGS_JSON: &str = "findings.json";
pub(crate) const FINDINGS_MD: &str = "findings.md";
pub(crate) const FINDINGS_JUNIT: &str = "junit.xml";
pub(crate) const RUNS_DIR: &str = "runs";
pub(crate) const SEQUENCES_DIR: &str = "sequences";
pub(crate) const CHECKS_DIR: &str = "checks";

/// Runs one check file on one version into a results parent folder, in a campaign slot (its
/// number: `slots.rs`): `Ok((run folder, result))` of a run that reached its verdict, or why it
/// gave nothing to judge. The command implements it with `repro run`'s own path. Shared by the
/// campaign's runs in flight (`--jobs`), so an `Arc`.
pub(crate) type RunOne = std::sync::Arc<
    dyn Fn(PathBuf, String, PathBuf, usize) -> BoxFuture<'static, Ran> + Send + Sync,
>;

/// What [`RunOne`] gives back.
pub(crate) type Ran = Result<(PathBuf, RunResult), RunFailure>;

/// A run launched into a slot: its task (the outcome and its seconds), the check it runs, and
/// whether its task has ended (`slots::Claim`).
struct Launched {
    task: tokio::task::JoinHandle<(Ran, f64)>,
    check: PathBuf,
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// A judged run: its folder (relative to the campaign), its result and the oracle's pieces.
type Judged = (String, RunResult, Vec<Piece>);

/// The findings seen so far, by id: the first sequence (in the plan's order) that showed each,
/// its version and piece (what minimisation starts from).
type Seen = BTreeMap<String, (Sequence, String, Piece)>;

/// Why one run of a campaign gave nothing to judge: never counted as judged.
#[derive(Debug, Clone)]
pub(crate) struct RunFailure {
    pub(crate) cause: FailCause,
    pub(crate) message: String,
}

/// Why a campaign stopped before its end: a run failed for a reason every further run shares
/// (engine, image, host, version, results folder, an interrupt), or the campaign folder could
/// not be written. What was run so far stays in the folder.
#[derive(Debug, Clone)]
pub(crate) enum Stop {
    Failed(RunFailure),
    Write(String),
    /// The budget is spent (every run counts: sequences, minimisation, confirmation).
    Budget,
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Failed(x) => write!(
                f,
                "the campaign stopped: a run failed ({}) for a reason every further run would share: {}",
                x.cause, x.message
            ),
            Stop::Write(e) => write!(f, "the campaign folder could not be written: {e}"),
            Stop::Budget => write!(f, "the budget is spent"),
        }
    }
}

impl From<String> for Stop {
    fn from(e: String) -> Stop {
        Stop::Write(e)
    }
}

/// Validates a written check file on a version as `repro run` would before running it: the
/// problems repro refuses it for, each as (line, column, message) in that file.
pub(crate) type Validate =
    Box<dyn Fn(&Path, &str) -> Result<(), Vec<(u64, u64, String)>> + Send + Sync>;

/// Where the lines for people go.
pub(crate) type Say = Box<dyn Fn(&str) + Send + Sync>;

/// What a campaign searches (`--strategy`): config edits and restarts judged by the model of
/// k3s's rules (the default), or lifecycle actions judged by the liveness rules.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Strategy {
    #[default]
    Config,
    Lifecycle,
}

impl Strategy {
    fn is_config(&self) -> bool {
        *self == Strategy::Config
    }

    /// The oracle of this strategy's runs.
    pub(crate) fn judge(self, r: &RunResult) -> Vec<Piece> {
        match self {
            Strategy::Config => oracle::judge(r),
            Strategy::Lifecycle => liveness::judge(r),
        }
    }
}

/// The campaign's plan and how far it got (campaign.json; `--resume` reads it back).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct State {
    pub(crate) schema_version: u32,
    pub(crate) name: String,
    pub(crate) topology: String,
    pub(crate) versions: Vec<String>,
    pub(crate) keys: Vec<String>,
    pub(crate) seed: u64,
    pub(crate) confirm: usize,
    pub(crate) budget_runs: Option<usize>,
    pub(crate) budget_seconds: Option<u64>,
    pub(crate) sequences: Vec<SeqRecord>,
    /// Absent (the config strategy) in campaigns written before `--strategy`, and for it.
    #[serde(default, skip_serializing_if = "Strategy::is_config")]
    pub(crate) strategy: Strategy,
    /// The lifecycle strategy's upgrade target (`--upgrade-to`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) upgrade_to: Option<String>,
    /// Minimal checks by finding id (class/key/role).
    #[serde(default)]
    pub(crate) minimal: BTreeMap<String, Minimal>,
    /// Runs made so far (sequences, minimisation, confirmation) and their seconds.
    #[serde(default)]
    pub(crate) runs: usize,
    #[serde(default)]
    pub(crate) seconds: f64,
    /// Seconds from the campaign's start to its first minimal finding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) first_minimal_after: Option<f64>,
    /// Runs made (sequences, minimisation, confirmation) when the first minimal finding was
    /// written: with `first_minimal_after`, the cost of a finding (`make bench` reads both).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) first_minimal_runs: Option<usize>,
    /// When the campaign was created and when its first minimal finding was written (RFC 3339,
    /// UTC), so a reader can place the figures on a clock (the machine's load at the time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) first_minimal_at: Option<String>,
    /// Runs that reached a verdict and were judged (sequences, minimisation, confirmation).
    #[serde(default)]
    pub(crate) judged: usize,
    /// The causes decided by distinguishing runs, by the finding id the oracle named (#38
    /// point 5): every piece of that id is of the decided class.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) causes: BTreeMap<String, cause::Decided>,
    /// Runs (or checks) that gave nothing to judge, by cause: never counted as judged.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) failed: BTreeMap<FailCause, usize>,
    /// The cells' folders (relative to this one) this campaign was merged from (`cells.rs`):
    /// their runs are this campaign's, their own campaign files no longer read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) merged_cells: Vec<String>,
}

impl State {
    /// Records the first minimal finding, once: seconds since the start, the runs made so far
    /// and the time. A later finding (or a resumed campaign's) leaves the first one's figures.
    pub(crate) fn note_first_minimal(
        &mut self,
        elapsed_s: f64,
        now: chrono::DateTime<chrono::Utc>,
    ) {
        if self.first_minimal_after.is_some() {
            return;
        }
        self.first_minimal_after = Some(elapsed_s);
        self.first_minimal_runs = Some(self.runs);
        self.first_minimal_at = Some(rfc3339(now));
    }
}

/// The one form of a time in campaign.json.
pub(crate) fn rfc3339(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SeqRecord {
    pub(crate) sequence: Sequence,
    pub(crate) version: String,
    /// The run folder, relative to the campaign folder, once run.
    #[serde(default)]
    pub(crate) run: Option<String>,
    #[serde(default)]
    pub(crate) seconds: Option<f64>,
    #[serde(default)]
    pub(crate) error: Option<String>,
    /// Why it gave nothing to judge (with `error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cause: Option<FailCause>,
    /// The shard this sequence belongs to (`--emit github-matrix --shard K`).
    #[serde(default)]
    pub(crate) shard: usize,
}

/// What the campaign searches, decided before anything runs.
pub(crate) struct Space {
    pub(crate) topology: String,
    pub(crate) nodes: Vec<NodeInfo>,
    pub(crate) base: BTreeMap<String, Config>,
    pub(crate) rules: Rules,
    pub(crate) keys: Vec<KeySpace>,
}

impl Space {
    fn context(&self) -> Context<'_> {
        Context {
            topology: &self.topology,
            nodes: &self.nodes,
            base: self.base.clone(),
            rules: &self.rules,
            keys: &self.keys,
        }
    }
}

/// The sequences of a campaign, in run order: per version, the covering rows of all keys
/// together (two keys or more: a few runs that touch every key), then the restart orders of the
/// keys taken in turns (so a `--budget` cut leaves every key some orders), then `random` seeded
/// ones.
pub(crate) fn plan_sequences(
    space: &Space,
    versions: &[String],
    seed: u64,
    random: usize,
    shard: usize,
) -> Result<Vec<SeqRecord>, String> {
    // Counted before anything is built: orders are the same for every key (#42).
    let orders = generate::order_classes(&space.nodes);
    let covering = if space.keys.len() > 1 {
        generate::covering(&space.nodes, &space.keys)
    } else {
        Vec::new()
    };
    let per_version = covering.len() + orders.len() * space.keys.len() + random;
    let total = per_version.saturating_mul(versions.len());
    if total > folder::MAX_SEQUENCES {
        return Err(format!(
            "the campaign would plan {total} sequences ({} restart orders × {} keys, {} random, × {} versions): more than {}; name fewer keys (--keys), versions or --random",
            orders.len(),
            space.keys.len(),
            random,
            versions.len(),
            folder::MAX_SEQUENCES
        ));
    }
    let mut seqs = covering;
    // The restart orders of the keys taken in turns.
    for (i, o) in orders.iter().enumerate() {
        for k in &space.keys {
            seqs.push(generate::order_sequence(&space.nodes, k, i, o));
        }
    }
    seqs.extend(generate::random(
        &space.nodes,
        &space.keys,
        &mut generate::Rng::new(seed),
        random,
    ));
    Ok(per_version_records(&seqs, versions, shard))
}

/// The sequences of a lifecycle campaign (`lifecycle.rs`), in the run order `seed` draws, per
/// version.
pub(crate) fn plan_lifecycle(
    space: &Space,
    versions: &[String],
    upgrade_to: Option<&str>,
    seed: u64,
    shard: usize,
) -> Vec<SeqRecord> {
    let seqs = lifecycle::sequences(&space.nodes, upgrade_to, seed);
    per_version_records(&seqs, versions, shard)
}

/// Every sequence on every version (versions outer), each in its shard.
fn per_version_records(seqs: &[Sequence], versions: &[String], shard: usize) -> Vec<SeqRecord> {
    let mut out = Vec::new();
    for v in versions {
        for s in seqs {
            let n = out.len();
            out.push(SeqRecord {
                sequence: s.clone(),
                version: v.clone(),
                run: None,
                seconds: None,
                error: None,
                cause: None,
                shard: n / shard.max(1),
            });
        }
    }
    out
}

/// The check file a sequence runs as (with `bug:` when it has one).
pub(crate) fn sequence_check(
    space: &Space,
    strategy: Strategy,
    seq: &Sequence,
    bug: &Bug,
) -> String {
    let name = format!("explore-{}", seq.id)
        .chars()
        .take(63)
        .collect::<String>();
    let rules = match strategy {
        Strategy::Config => "the model of k3s's rules",
        Strategy::Lifecycle => "the liveness rules",
    };
    render_check(
        space,
        strategy,
        seq,
        &name,
        &format!("explore sequence {} ({})", seq.id, seq.strategy),
        &format!("A sequence `repro explore` generated; expect: is {rules}."),
        bug,
    )
}

/// A sequence's check file, written by its strategy's renderer.
fn render_check(
    space: &Space,
    strategy: Strategy,
    seq: &Sequence,
    name: &str,
    summary: &str,
    description: &str,
    bug: &Bug,
) -> String {
    let render = match strategy {
        Strategy::Config => generate::render,
        Strategy::Lifecycle => lifecycle::render,
    };
    render(&space.context(), seq, name, summary, description, bug)
}

/// A campaign in its folder.
pub(crate) struct Campaign {
    pub(crate) dir: PathBuf,
    pub(crate) space: Space,
    pub(crate) state: State,
    pub(crate) run_one: RunOne,
    /// What `repro run` refuses before running: every minimal check is one it accepts.
    pub(crate) validate: Validate,
    pub(crate) say: Say,
    pub(crate) started: Instant,
    /// Only these sequence ids (a matrix cell's share), if given.
    pub(crate) only: Option<Vec<String>>,
    /// Minimise and confirm defects (off in a matrix cell: the merge does it).
    pub(crate) minimise: bool,
    /// `--stop-at-first-minimal[=KEY]`: end the sequence loop once a minimal finding (of that
    /// key, when not empty) is written.
    pub(crate) stop_at: Option<String>,
    /// `state.runs` when this invocation began: the budget counts the runs made since (a
    /// resumed campaign gets the budget given to `--resume`).
    pub(crate) budget_from: usize,
    /// `--jobs`: the runs at once, sequences, ddmin candidates and confirmations alike.
    pub(crate) slots: slots::Slots,
    /// Runs launched and not landed yet: the budget counts them as made.
    pub(crate) in_flight: usize,
    /// The sequences launched ahead of the one being taken in (`run`).
    pub(crate) ahead: Ahead,
}

/// The sequences a campaign launches ahead of the one it takes in: with `--jobs` above one,
/// every slot left idle — while a sequence before them runs, or while a defect is minimised or
/// confirmed — starts the next sequence of the plan (#39). Each is still taken in (landed,
/// judged, recorded, its defects minimised) in the plan's order, so the record is the serial
/// campaign's; only the engine's time is shared.
#[derive(Default)]
pub(crate) struct Ahead {
    /// The sequences to run, by index into `state.sequences`, in the plan's order.
    order: Vec<usize>,
    /// The position in `order` of the next sequence to launch.
    next: usize,
    /// Launched and not taken in yet, by index into `state.sequences`.
    flight: BTreeMap<usize, Launched>,
    /// Whether idle slots start sequences now: only inside the sequence loop, and not once
    /// the campaign stops (the runs in flight are then only waited for).
    open: bool,
}

fn write(dir: &Path, name: &str, text: &str) -> Result<(), String> {
    crate::safe_fs::write_in(dir, Path::new(name), text.as_bytes())
        .map(|_| ())
        .map_err(|e| format!("{}: {e:#}", dir.join(name).display()))
}

impl Campaign {
    fn save(&self) -> Result<(), String> {
        let text = serde_json::to_string_pretty(&self.state).map_err(|e| e.to_string())?;
        write(&self.dir, CAMPAIGN_FILE, &text)
    }

    fn over_budget(&self) -> bool {
        (self.state.budget_runs)
            .is_some_and(|n| self.state.runs + self.in_flight - self.budget_from >= n)
            || self
                .state
                .budget_seconds
                .is_some_and(|s| self.started.elapsed() >= Duration::from_secs(s))
    }

    /// Writes `seq`'s check into `sub` and launches its run on `version` in the next free slot
    /// (the run starts once a slot is free; the budget counts it from now).
    fn launch(
        &mut self,
        seq: &Sequence,
        version: &str,
        sub: &str,
        bug: &Bug,
    ) -> Result<Launched, Stop> {
        stop_if_interrupted()?;
        // Every run the campaign makes counts: sequences, minimisation, confirmation (#42).
        if self.over_budget() {
            return Err(Stop::Budget);
        }
        let folder = self.dir.join(sub);
        crate::safe_fs::dir_in(&self.dir, Path::new(sub))
            .map_err(|e| format!("{}: {e:#}", folder.display()))?;
        let text = sequence_check(&self.space, self.state.strategy, seq, bug);
        let file = format!("{}.yaml", seq.id);
        write(&folder, &file, &text)?;
        let check = folder.join(&file);
        let (slots, run_one) = (self.slots.clone(), self.run_one.clone());
        let (c, v, runs) = (check.clone(), version.to_string(), self.dir.join(RUNS_DIR));
        self.in_flight += 1;
        let claim = self.slots.claim();
        let done = claim.done.clone();
        let task = tokio::spawn(async move {
            let slot = slots.acquire().await;
            // Heard while waiting for a slot: the run does not start.
            if let Err(Stop::Failed(f)) = stop_if_interrupted() {
                return (Err(f), 0.0);
            }
            let t = Instant::now();
            let ran = run_one(c, v, runs, slot.index).await;
            // The slot is free before the claim's end is told.
            drop(slot);
            drop(claim);
            (ran, t.elapsed().as_secs_f64())
        });
        Ok(Launched { task, check, done })
    }

    /// A launched run's end: the run folder (relative) and what the oracle makes of it, or why
    /// the run gave nothing to judge (counted by cause). A failure every further run would
    /// share stops the campaign (the outer error).
    async fn land(&mut self, l: Launched) -> Result<Result<Judged, RunFailure>, Stop> {
        let (ran, secs) = self.wait(l.task, &l.done).await.unwrap_or_else(|e| {
            let message = format!("the run's task ended without an outcome: {e}");
            let cause = FailCause::Internal;
            (Err(RunFailure { cause, message }), 0.0)
        });
        self.in_flight -= 1;
        // A run a signal stopped is not recorded: `--resume` runs it again.
        stop_if_interrupted()?;
        // A check repro refused made no run; every other attempt did (the budget counts it).
        if !matches!(&ran, Err(f) if f.cause == FailCause::CheckRefused) {
            self.state.runs += 1;
            self.state.seconds += secs;
        }
        let (run_dir, result) = match ran {
            Ok(x) => x,
            Err(f) => {
                *self.state.failed.entry(f.cause).or_default() += 1;
                if f.cause.stops_campaign() {
                    self.save()?;
                    return Err(Stop::Failed(f));
                }
                return Ok(Err(f));
            }
        };
        self.state.judged += 1;
        let rel = run_dir
            .strip_prefix(&self.dir)
            .unwrap_or(&run_dir)
            .display()
            .to_string();
        let mut pieces = self.state.strategy.judge(&result);
        for p in &mut pieces {
            p.run = rel.clone();
            reclass(&self.state.causes, p);
        }
        Ok(Ok((rel, result, pieces)))
    }

    /// Waits for a launched run's task; meanwhile every slot that falls idle starts the next
    /// sequence ahead (`Ahead`).
    async fn wait(
        &mut self,
        mut task: tokio::task::JoinHandle<(Ran, f64)>,
        done: &std::sync::atomic::AtomicBool,
    ) -> Result<(Ran, f64), tokio::task::JoinError> {
        let slots = self.slots.clone();
        loop {
            // Ended (its output a poll away): the slot it freed is for the caller's next run
            // (ddmin's next candidate, a confirmation), not for a sequence ahead.
            if done.load(std::sync::atomic::Ordering::SeqCst) {
                return task.await;
            }
            self.launch_ahead();
            tokio::select! {
                biased;
                out = &mut task => return out,
                () = slots.ended() => {}
            }
        }
    }

    /// Launches the plan's next sequences into the slots no run holds or waits for. One slot
    /// is the serial campaign: nothing goes ahead. A launch refused (the budget, or a stop the
    /// sequence loop meets itself when it reaches that sequence) launches nothing further now.
    fn launch_ahead(&mut self) {
        if !self.ahead.open || self.slots.count() == 1 {
            return;
        }
        while self.slots.idle() > 0 && self.ahead.next < self.ahead.order.len() {
            let j = self.ahead.order[self.ahead.next];
            let rec = &self.state.sequences[j];
            if rec.run.is_none() {
                let (seq, version) = (rec.sequence.clone(), rec.version.clone());
                match self.launch(&seq, &version, SEQUENCES_DIR, &Bug::new()) {
                    Ok(l) => {
                        self.ahead.flight.insert(j, l);
                    }
                    Err(_) => return,
                }
            }
            self.ahead.next += 1;
        }
    }

    /// Waits for runs launched that will not be used (the campaign stops): each cleans up after
    /// itself (an interrupt reaches every run), and is counted as made. No sequence starts
    /// ahead any more.
    async fn drain(&mut self, runs: impl IntoIterator<Item = Launched>) {
        self.ahead.open = false;
        for l in runs {
            let _ = self.land(l).await;
        }
    }

    /// Runs every sequence not run yet, within the budget, then minimises and confirms defects.
    /// With `--jobs`, every idle slot starts the next sequence (`Ahead`), but each is taken in
    /// (recorded, judged, its new defects minimised) in the plan's order, so the campaign's
    /// record is the serial one's.
    pub(crate) async fn run(&mut self) -> Result<(), Stop> {
        let total = self.state.sequences.len();
        let order: Vec<usize> = (0..total)
            .filter(|&i| {
                let id = &self.state.sequences[i].sequence.id;
                self.only.as_ref().is_none_or(|o| o.contains(id))
            })
            .collect();
        let mut seen: Seen = BTreeMap::new();
        self.ahead = Ahead {
            order: order.clone(),
            open: true,
            ..Ahead::default()
        };
        for (at, &i) in order.iter().enumerate() {
            self.launch_ahead();
            let rec = self.state.sequences[i].clone();
            if let Some(run) = &rec.run {
                // Resumed: judge what is there again (pure), run nothing.
                if let Ok(r) = read_result(&self.dir.join(run)) {
                    for mut p in self.state.strategy.judge(&r) {
                        p.run = run.clone();
                        reclass(&self.state.causes, &mut p);
                        let entry = (rec.sequence.clone(), rec.version.clone(), p);
                        seen.entry(finding_id(&entry.2)).or_insert(entry);
                    }
                }
                // Nothing to launch for it: the next launch is the next sequence's (with one
                // slot nothing runs ahead, so the loop itself moves past a resumed one).
                if self.ahead.next == at {
                    self.ahead.next += 1;
                }
                continue;
            }
            // No slot was idle to start it ahead: launched now, waiting for the next slot.
            if self.ahead.next == at {
                match self.launch(&rec.sequence, &rec.version, SEQUENCES_DIR, &Bug::new()) {
                    Ok(l) => {
                        self.ahead.flight.insert(i, l);
                        self.ahead.next += 1;
                    }
                    Err(Stop::Budget) => {}
                    Err(stop) => return self.stopped(stop).await,
                }
            }
            let Some(launched) = self.ahead.flight.remove(&i) else {
                (self.say)(&format!(
                    "budget reached after {} runs: {} sequences left (resume with --resume {})",
                    self.state.runs - self.budget_from,
                    order.len() - at,
                    self.dir.display()
                ));
                break;
            };
            let out = self.land(launched).await;
            let go_on = match self.take_in(i, out, &mut seen).await {
                Ok(go_on) => go_on,
                Err(stop) => return self.stopped(stop).await,
            };
            if !go_on {
                (self.say)(&format!(
                    "stopped at the first minimal finding (--stop-at-first-minimal) after {} runs: {} sequences left (resume with --resume {})",
                    self.state.runs,
                    order.len() - at - 1,
                    self.dir.display()
                ));
                break;
            }
        }
        // Launched beyond where the loop stopped (the budget, the first minimal finding):
        // recorded, so `--resume` does not run them again.
        self.ahead.open = false;
        self.drain_sequences().await;
        self.minimise_new(&seen).await?;
        Ok(self.save()?)
    }

    /// The campaign stops: the sequences in flight are waited for and recorded, the campaign
    /// saved, and the stop returned.
    async fn stopped(&mut self, stop: Stop) -> Result<(), Stop> {
        self.ahead.open = false;
        self.drain_sequences().await;
        self.save()?;
        Err(stop)
    }

    /// Sequences launched that the campaign will not take in (it stops): waited for, and those
    /// that reached a verdict recorded, so `--resume` does not run them again.
    async fn drain_sequences(&mut self) {
        for (i, l) in std::mem::take(&mut self.ahead.flight) {
            match self.land(l).await {
                Ok(Ok((run, _, _))) => self.state.sequences[i].run = Some(run),
                Ok(Err(f)) => {
                    let rec = &mut self.state.sequences[i];
                    rec.error = Some(f.message);
                    rec.cause = Some(f.cause);
                }
                Err(_) => {}
            }
        }
    }

    /// Takes in sequence `i`'s run: its record, its pieces into `seen`, the progress line, and
    /// its new defects minimised. Whether the campaign goes on (not at `--stop-at-first-minimal`).
    async fn take_in(
        &mut self,
        i: usize,
        out: Result<Result<Judged, RunFailure>, Stop>,
        seen: &mut Seen,
    ) -> Result<bool, Stop> {
        // The campaign's sequences as this invocation runs them (`--sequences` picks some).
        let picked =
            |s: &SeqRecord| (self.only.as_ref()).is_none_or(|o| o.contains(&s.sequence.id));
        let total = self.state.sequences.iter().filter(|s| picked(s)).count();
        let rec = &mut self.state.sequences[i];
        let id = rec.sequence.id.clone();
        match out {
            // The time budget ran out between the check and the run.
            Err(Stop::Budget) => return Ok(false),
            // Interrupted: the record stays not run, for `--resume`.
            Err(
                stop @ Stop::Failed(RunFailure {
                    cause: FailCause::Interrupted,
                    ..
                }),
            ) => return Err(stop),
            Err(stop) => {
                rec.error = Some(stop.to_string());
                if let Stop::Failed(f) = &stop {
                    rec.cause = Some(f.cause);
                }
                return Err(stop);
            }
            Ok(Ok((run, _, pieces))) => {
                rec.run = Some(run);
                for p in pieces {
                    let entry = (rec.sequence.clone(), rec.version.clone(), p);
                    seen.entry(finding_id(&entry.2)).or_insert(entry);
                }
            }
            Ok(Err(f)) => {
                rec.error = Some(f.message);
                rec.cause = Some(f.cause);
            }
        }
        let error = rec.cause.map(|c| format!("failed ({c})"));
        let version = rec.version.clone();
        self.save()?;
        let done = (self.state.sequences.iter())
            .filter(|s| picked(s) && (s.run.is_some() || s.error.is_some()))
            .count();
        let per = self.state.seconds / self.state.runs.max(1) as f64;
        // Runs at once share the wall clock: the time left is the runs left over the slots.
        let left = (total - done) as f64 * per / self.slots.count() as f64;
        let flying = match self.slots.count() {
            1 => String::new(),
            n => format!(" ({} of {n} slots running)", self.slots.busy()),
        };
        (self.say)(&format!(
            "[{done}/{total}] {} on {}: {} — runs judged {}, failed {}; findings so far: {} ({} defects); about {:.0}s left{flying}",
            id,
            version,
            error.as_deref().unwrap_or("judged"),
            self.state.judged,
            self.state.failed.values().sum::<usize>(),
            seen.len(),
            seen.values().filter(|(_, _, p)| p.class.is_defect()).count(),
            left
        ));
        self.minimise_new(seen).await?;
        let stop_at = self.stop_at.as_deref();
        Ok(!stop_at.is_some_and(|k| has_minimal(&self.state, k)))
    }

    /// Minimises and confirms every defect in `seen` not minimised yet. Called after each
    /// sequence, so the first minimal finding does not wait for the rest of the campaign.
    async fn minimise_new(&mut self, seen: &Seen) -> Result<(), Stop> {
        if !self.minimise {
            return Ok(());
        }
        for (id, (seq, version, piece)) in seen {
            if !piece.class.is_defect() || self.state.minimal.contains_key(id) {
                continue;
            }
            // Its cause first, when several explain it: the minimal check is the decided one's.
            let (id, piece) = match self.distinguish(id, seq, version, piece).await {
                Ok(x) => x,
                Err(Stop::Budget) => {
                    (self.say)(&format!(
                        "budget reached after {} runs while telling the cause of {id} apart (resume with --resume {})",
                        self.state.runs - self.budget_from,
                        self.dir.display()
                    ));
                    return Ok(());
                }
                Err(e) => return Err(e),
            };
            if self.state.minimal.contains_key(&id) {
                continue;
            }
            let id = &id;
            let piece = &piece;
            let m = match self.minimise(id, seq, version, piece).await {
                Ok(m) => m,
                // Left for `--resume` (with a new budget) to minimise from the start.
                Err(Stop::Budget) => {
                    (self.say)(&format!(
                        "budget reached after {} runs while minimising {id} (resume with --resume {})",
                        self.state.runs - self.budget_from,
                        self.dir.display()
                    ));
                    return Ok(());
                }
                Err(e) => return Err(e),
            };
            (self.say)(&format!("{id}: minimal check {}", m.summary()));
            (self.state)
                .note_first_minimal(self.started.elapsed().as_secs_f64(), chrono::Utc::now());
            self.state.minimal.insert(id.clone(), m);
            self.save()?;
        }
        Ok(())
    }

    /// The cause of a value defect (`taken-from-…`, `stale`) that several candidates explain,
    /// decided by one distinguishing run per candidate (`cause.rs`) until one shows the value
    /// again (recorded in campaign.json's `causes`, with the runs); its finding id and piece
    /// under the decided class. A defect with one candidate, or decided before, is as named.
    async fn distinguish(
        &mut self,
        id: &str,
        seq: &Sequence,
        version: &str,
        piece: &Piece,
    ) -> Result<(String, Piece), Stop> {
        let as_decided = |d: &cause::Decided| {
            let mut p = piece.clone();
            p.class = d.class.clone();
            (finding_id(&p), p)
        };
        if let Some(d) = self.state.causes.get(id) {
            return Ok(as_decided(d));
        }
        // A piece of a finding already decided (key and role alike) carries the decided class.
        let decided_before = (self.state.causes.iter()).any(|(named, d)| {
            d.class == piece.class && named.split('/').skip(1).eq(id.split('/').skip(1))
        });
        let key = self.space.keys.iter().find(|k| k.key == piece.key).cloned();
        let value_shaped = matches!(piece.class, Class::TakenFrom(_) | Class::Stale);
        let (Some(key), true, false) = (key, value_shaped, decided_before) else {
            return Ok((id.to_string(), piece.clone()));
        };
        let found = read_result(&self.dir.join(&piece.run)).ok();
        let candidates = found.map_or_else(Vec::new, |r| oracle::candidates(&r, piece));
        let y = cause::other_value(&key, &piece.observed);
        let (Some(y), true) = (y, candidates.len() > 1) else {
            return Ok((id.to_string(), piece.clone()));
        };
        let sequences: Vec<(Class, Result<Sequence, String>)> = {
            let setting = cause::Setting {
                nodes: &self.space.nodes,
                base: &self.space.base,
                rules: &self.space.rules,
                key: &key,
                node: &piece.node,
                x: &piece.observed,
                y: &y,
            };
            (candidates.iter())
                .map(|c| (c.clone(), setting.sequence(c, &format!("{}-d", seq.id))))
                .collect()
        };
        // Up to `--jobs` probes run at once and are read in the candidates' order up to the
        // first that explains the value: what one at a time decides (a later one is a run the
        // serial search would not have made: discarded, as ddmin's). One slot: one at a time.
        let mut probes = Vec::new();
        let mut rest = sequences.into_iter();
        let mut told = false;
        while !told {
            let (batch, budget) = self.launch_probes(&mut rest, version).await?;
            if batch.is_empty() && !budget {
                break;
            }
            let mut batch = batch.into_iter();
            while let Some((mut probe, launched)) = batch.next() {
                if let Some(l) = launched {
                    let check = l.check.clone();
                    let out = match self.land(l).await {
                        Ok(out) => out,
                        Err(stop) => {
                            self.drain(batch.filter_map(|(_, l)| l)).await;
                            return Err(stop);
                        }
                    };
                    if told {
                        self.discard(&check, &out);
                        continue;
                    }
                    match out {
                        Ok((run, r, _)) => {
                            probe.showed = cause::showed(&r, &piece.node, &key.signal, &key.shows);
                            probe.explains = probe.showed.as_ref().map(|v| *v == piece.observed);
                            probe.run = Some(run);
                        }
                        Err(f) => probe.note = Some(format!("failed ({}): {}", f.cause, f.message)),
                    }
                } else if told {
                    continue;
                }
                told = probe.explains == Some(true);
                probes.push(probe);
            }
            if budget && !told {
                return Err(Stop::Budget);
            }
        }
        let d = cause::Decided {
            named: piece.class.clone(),
            class: cause::decide(&piece.class, &probes),
            node: piece.node.clone(),
            key: piece.key.clone(),
            value: piece.observed.clone(),
            probes,
        };
        (self.say)(&format!("{id}: cause {}", d.summary()));
        let out = as_decided(&d);
        self.state.causes.insert(id.to_string(), d);
        self.save()?;
        Ok(out)
    }

    /// The next probes of `rest` (candidate causes and their sequences), launched up to one
    /// per slot (a candidate k3s's rules do not let hold the value alone is noted, not run),
    /// and whether the budget stopped the launching.
    async fn launch_probes(
        &mut self,
        rest: &mut impl Iterator<Item = (Class, Result<Sequence, String>)>,
        version: &str,
    ) -> Result<(Vec<(cause::Probe, Option<Launched>)>, bool), Stop> {
        let mut batch: Vec<(cause::Probe, Option<Launched>)> = Vec::new();
        while batch.iter().filter(|(_, l)| l.is_some()).count() < self.slots.count() {
            let Some((c, sequence)) = rest.next() else {
                break;
            };
            let mut probe = cause::Probe {
                cause: c,
                run: None,
                showed: None,
                explains: None,
                note: None,
            };
            let launched = match sequence {
                Err(why) => {
                    probe.note = Some(why);
                    None
                }
                Ok(s) => match self.launch(&s, version, "distinguish", &Bug::new()) {
                    Ok(l) => Some(l),
                    // As serially: the runs launched are read first; the budget stops the
                    // search only if none of them explains the value.
                    Err(Stop::Budget) => return Ok((batch, true)),
                    Err(stop) => {
                        self.drain(batch.into_iter().filter_map(|(_, l)| l)).await;
                        return Err(stop);
                    }
                },
            };
            batch.push((probe, launched));
        }
        Ok((batch, false))
    }

    /// Launches a fresh run of `steps` (a candidate or a confirmation of `base`), tagged.
    fn launch_steps(
        &mut self,
        base: &Sequence,
        steps: &[SeqStep],
        version: &str,
        tag: &str,
    ) -> Result<Launched, Stop> {
        let seq = Sequence {
            id: format!("{}-{tag}", base.id),
            strategy: base.strategy.clone(),
            steps: steps.to_vec(),
        };
        self.launch(&seq, version, "minimise", &Bug::new())
    }

    /// Launches a run for each of `candidates` (tagged by `tag(k)`), as many as the budget
    /// allows (none launched is the budget's stop); on any other stop, those launched already
    /// are waited for, so nothing is left behind.
    async fn launch_all(
        &mut self,
        base: &Sequence,
        candidates: &[Vec<SeqStep>],
        version: &str,
        tag: impl Fn(usize) -> String,
    ) -> Result<Vec<Launched>, Stop> {
        let mut out = Vec::new();
        for (k, c) in candidates.iter().enumerate() {
            match self.launch_steps(base, c, version, &tag(k)) {
                Ok(l) => out.push(l),
                Err(Stop::Budget) if !out.is_empty() => break,
                // Nothing launched: the caller leaves this defect for `--resume`, and the
                // campaign goes on.
                Err(Stop::Budget) => return Err(Stop::Budget),
                Err(stop) => {
                    self.drain(out).await;
                    return Err(stop);
                }
            }
        }
        Ok(out)
    }

    /// Whether a landed run showed the finding `id`; with its run and pieces. A run that gave
    /// nothing to judge (counted as failed) does not show it: ddmin keeps the larger candidate,
    /// and a confirmation does not count.
    fn showed(id: &str, out: &Result<Judged, RunFailure>) -> Option<(RunResult, Vec<Piece>)> {
        match out {
            Ok((_, r, pieces)) if pieces.iter().any(|p| finding_id(p) == id) => {
                Some((r.clone(), pieces.clone()))
            }
            _ => None,
        }
    }

    /// Lands `runs` in order: each run's outcome, or the campaign's stop (the rest waited for).
    async fn land_all(
        &mut self,
        runs: Vec<Launched>,
    ) -> Result<Vec<(PathBuf, Result<Judged, RunFailure>)>, Stop> {
        let mut out = Vec::new();
        let mut runs = runs.into_iter();
        while let Some(l) = runs.next() {
            let check = l.check.clone();
            match self.land(l).await {
                Ok(x) => out.push((check, x)),
                Err(stop) => {
                    self.drain(runs).await;
                    return Err(stop);
                }
            }
        }
        Ok(out)
    }

    /// A run serial ddmin would not have made (a candidate after the one that showed the
    /// finding, run at once with it): its check and run folder go, so the campaign's folder is
    /// the serial campaign's. Its cost stays counted (`state.runs`, the budget).
    fn discard(&mut self, check: &Path, out: &Result<Judged, RunFailure>) {
        let _ = std::fs::remove_file(check);
        if let Ok((rel, _, _)) = out {
            let run = self.dir.join(rel);
            // Only a run folder of this campaign's runs/, never through a link.
            let inside = Path::new(rel).starts_with(RUNS_DIR)
                && !rel.contains("..")
                && std::fs::symlink_metadata(&run).is_ok_and(|m| m.is_dir());
            if inside {
                let _ = std::fs::remove_dir_all(&run);
            }
            self.state.judged -= 1;
        }
    }

    /// Delta debugging over `steps` for the finding `id`: each round's next candidates run at
    /// once (`--jobs`), and are read in ddmin's order up to the first that shows the finding,
    /// exactly what serial ddmin decides; the later ones are discarded. The 1-minimal steps and
    /// the runs serial ddmin would have made.
    async fn ddmin(
        &mut self,
        id: &str,
        seq: &Sequence,
        version: &str,
        steps: Vec<SeqStep>,
    ) -> Result<(Vec<SeqStep>, usize), Stop> {
        let mut dd = ddmin::Ddmin::new(steps);
        let (mut tries, mut runs) = (0usize, 0usize);
        loop {
            let batch: Vec<Vec<SeqStep>> = dd.pending().take(self.slots.count()).collect();
            if batch.is_empty() {
                break;
            }
            let launched =
                (self.launch_all(seq, &batch, version, |k| format!("m{}", tries + k + 1))).await?;
            let mut hit = false;
            for (check, out) in self.land_all(launched).await? {
                if hit {
                    self.discard(&check, &out);
                    continue;
                }
                tries += 1;
                runs += usize::from(!matches!(&out, Err(f) if f.cause == FailCause::CheckRefused));
                hit = Self::showed(id, &out).is_some();
                dd.report(hit);
            }
        }
        Ok((dd.result().to_vec(), runs))
    }

    /// Delta debugging (ddmin) over the steps up to the one that showed the finding, then
    /// `confirm` fresh runs of the result (at once, read in order), then the check file with
    /// `bug:` as observed.
    async fn minimise(
        &mut self,
        id: &str,
        seq: &Sequence,
        version: &str,
        piece: &Piece,
    ) -> Result<Minimal, Stop> {
        // Steps after the one that showed it cannot matter: the oracle judges step by step.
        let steps: Vec<SeqStep> = seq.steps.iter().take(piece.step).cloned().collect();
        let (steps, minimise_runs) = self.ddmin(id, seq, version, steps).await?;
        let mut confirmed = 0;
        let mut bug = Bug::new();
        let copies = vec![steps.clone(); self.state.confirm];
        let launched = (self.launch_all(seq, &copies, version, |c| format!("c{}", c + 1))).await?;
        if launched.len() < copies.len() {
            // The budget allowed only some confirmations: as serially, the finding waits for
            // `--resume` (those launched are made and counted).
            self.land_all(launched).await?;
            return Err(Stop::Budget);
        }
        for (_, out) in self.land_all(launched).await? {
            if let Some((r, pieces)) = Self::showed(id, &out) {
                confirmed += 1;
                if bug.is_empty() {
                    bug = observed_bug(&r, &pieces, id);
                }
            }
        }
        // The finding's own observation from the run that found it, when no re-run was asked.
        if bug.is_empty() {
            let mut seen: BTreeMap<String, String> =
                [(piece.signal.clone(), observation_text(piece))].into();
            if piece.class.is_death() {
                seen = [("ready".to_string(), "down".to_string())].into();
            }
            bug = [(
                (
                    piece.step.min(steps.len()).saturating_sub(1),
                    piece.node.clone(),
                ),
                seen,
            )]
            .into();
        }
        let slug = id.replace('/', "-");
        let min_seq = Sequence {
            id: slug.clone(),
            strategy: "minimal".into(),
            steps: steps.clone(),
        };
        let folder = self.dir.join(CHECKS_DIR);
        crate::safe_fs::dir_in(&self.dir, Path::new(CHECKS_DIR))
            .map_err(|e| format!("{}: {e:#}", folder.display()))?;
        let file = format!("{slug}.yaml");
        let found = match self.state.strategy {
            Strategy::Config => format!(
                "{} showed {}={} where k3s's rules say {}.\nexpect: is the model of k3s's rules",
                piece.node, piece.key, piece.observed, piece.predicted
            ),
            Strategy::Lifecycle => format!(
                "{} showed {} where the liveness rules say {}.\nexpect: is the liveness rules",
                piece.node, piece.observed, piece.predicted
            ),
        };
        let render = |bug: &Bug| {
            render_check(
                &self.space,
                self.state.strategy,
                &min_seq,
                &format!("explore-{slug}").chars().take(63).collect::<String>(),
                &format!("{} of {} on {} nodes, found by repro explore", piece.class, piece.key, piece.role),
                &format!(
                    "repro explore found this on {version}: {found} (docs/explore.md); bug: is what the run observed.\nReplay: repro run <this file> --sim --version {version} --expect reproduced"
                ),
                bug,
            )
        };
        // Every check written is one repro accepts: where its validation refuses a prediction
        // (a buggy joiner's value depends on which server it reaches), the step says `any` there,
        // as the validator asks; a check it still refuses is written with its problems said.
        let mut text = render(&bug);
        let mut problems = Vec::new();
        for _ in 0..3 {
            write(&folder, &file, &text)?;
            problems = match (self.validate)(&folder.join(&file), version) {
                Ok(()) => Vec::new(),
                Err(p) => p,
            };
            if problems.is_empty() || !generate::any_where_refused(&text, &problems, &mut bug) {
                break;
            }
            text = render(&bug);
        }
        for (line, column, message) in &problems {
            (self.say)(&format!(
                "{id}: repro refuses the minimal check at {}:{line}:{column}: {message}",
                folder.join(&file).display()
            ));
        }
        Ok(Minimal {
            check: format!("{CHECKS_DIR}/{slug}.yaml"),
            steps: steps.len(),
            confirm_runs: self.state.confirm,
            confirmed,
            minimise_runs,
        })
    }
}

/// A signal heard (#42): no run starts, and a run it stopped is not recorded.
fn stop_if_interrupted() -> Result<(), Stop> {
    match crate::run::interrupt::interrupted() {
        Some(s) => Err(Stop::Failed(RunFailure {
            cause: FailCause::Interrupted,
            message: format!("interrupted ({s})"),
        })),
        None => Ok(()),
    }
}

fn observation_text(p: &Piece) -> String {
    // The piece holds the key's value; a state signal's observation is up/down.
    match p.observed.as_str() {
        "true" => "up".into(),
        "false" => "down".into(),
        v => v.into(),
    }
}

/// What `r` observed for the finding `id`: the `bug:` of the minimal check. For a death the
/// model did not predict (`died`, `wrongly-refused`), every observation of the dying node in
/// that step, a death written as what it stands for (`ready: down`, `fatal: up`) and a signal
/// the death left undecided left out: the check's step then judges just the death.
fn observed_bug(r: &RunResult, pieces: &[Piece], id: &str) -> Bug {
    let mut bug = Bug::new();
    // The finding's own pieces, and any other piece the same boot showed off the model (a
    // minimal step may set several keys): the check's `bug:` is everything its step observed
    // that the model does not predict, so the replay matches it whole.
    let at: Vec<(usize, &str)> = (pieces.iter())
        .filter(|p| finding_id(p) == id)
        .map(|p| (p.step, p.node.as_str()))
        .collect();
    let off_model = |p: &&Piece| {
        finding_id(p) == id
            || (at.contains(&(p.step, p.node.as_str()))
                && (p.class.is_defect() || p.class == Class::Inconclusive))
    };
    for p in pieces.iter().filter(off_model) {
        let Some(step) = r.steps.iter().find(|s| s.index == p.step) else {
            continue;
        };
        // A death's bug is the death (`ready`) and the signal that named it: the node's other
        // signals show only that it is dead (a value the expect already says, or unknown).
        let death = p.class.is_death();
        for o in (step.observations.iter()).filter(|o| {
            o.node == p.node && (o.signal == p.signal || (death && o.signal == "ready"))
        }) {
            let text = match (&o.observed, &o.death) {
                (Observed::Dead, Some(d)) => d.counts_as.clone(),
                (Observed::Dead, None) => None,
                (x, _) => Some(x.to_string()),
            };
            if let Some(text) = text {
                (bug.entry((p.step - 1, p.node.clone())).or_default())
                    .insert(o.signal.clone(), text);
            }
        }
    }
    bug
}

/// Whether a minimal finding is written: of `which` when not empty — a key, or `class/key`
/// (finding ids are class/key/role).
fn has_minimal(state: &State, which: &str) -> bool {
    (state.minimal.keys()).any(|id| {
        let mut p = id.split('/');
        let (class, key) = (p.next().unwrap_or(""), p.next().unwrap_or(""));
        which.is_empty() || which == key || which == format!("{class}/{key}")
    })
}

/// A piece of a finding whose cause distinguishing runs decided: of the decided class.
fn reclass(causes: &BTreeMap<String, cause::Decided>, p: &mut Piece) {
    if let Some(d) = causes.get(&finding_id(p)) {
        p.class = d.class.clone();
    }
}

/// The finding a piece belongs to, as one string (class/key/role; the source is the role's).
pub(crate) fn finding_id(p: &Piece) -> String {
    format!("{}/{}/{}", p.class, p.key, p.role)
}

/// A run folder's result.json, read by the report's reader (`report::load_result`: inside the
/// folder only, size-capped, its schema version checked, errors at file:line:column), as
/// `repro report` and `repro runs` read it.
pub(crate) fn read_result(dir: &Path) -> Result<RunResult, String> {
    crate::report::load_result(dir).map_err(|e| e.to_string())
}

/// Every run folder under `dir` (a campaign, or downloaded matrix cells), sorted: a folder
/// holding a `result.json` of any kind (read with [`read_result`], which refuses anything but a
/// regular file inside the folder). Links to folders are not descended.
pub(crate) fn run_folders(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), 0)];
    while let Some((d, depth)) = stack.pop() {
        if std::fs::symlink_metadata(d.join(crate::results_folder::RESULT_FILE)).is_ok() {
            out.push(d);
            continue;
        }
        if depth > 4 {
            continue;
        }
        if let Ok(rd) = std::fs::read_dir(&d) {
            for e in rd.flatten() {
                let ft = e.file_type();
                if ft.is_ok_and(|t| t.is_dir()) {
                    stack.push((e.path(), depth + 1));
                }
            }
        }
    }
    out.sort();
    out
}

/// What the campaign files under a folder say: minimal checks (with their text), failed runs
/// by cause, sequences planned and whether each ran, the campaign's name and topology.
#[derive(Default)]
struct Campaigns {
    minimal: BTreeMap<String, Minimal>,
    checks: BTreeMap<String, String>,
    failed: BTreeMap<FailCause, usize>,
    planned: BTreeMap<(String, String), bool>,
    causes: BTreeMap<String, cause::Decided>,
    name: String,
    topology: String,
    /// The first campaign's (a campaign's cells share it).
    strategy: Strategy,
}

/// Reads every campaign.json under `dir` (checked: `folder.rs`) and the minimal checks they
/// name (inside their campaign folder only, regular, size-capped).
fn read_campaigns(dir: &Path) -> Result<Campaigns, JudgeError> {
    let mut files = campaign_files(dir);
    // A campaign merged from cells speaks for them: their files would count twice.
    let own = dir.join(CAMPAIGN_FILE);
    if files.contains(&own) && !read_state(&own)?.merged_cells.is_empty() {
        files = vec![own];
    }
    if files.is_empty() {
        return Err(JudgeError::Input(format!(
            "{}: no {CAMPAIGN_FILE} in it or its sub-folders: not a campaign folder",
            dir.display()
        )));
    }
    let mut out = Campaigns::default();
    for c in files {
        let s = read_state(&c)?;
        let cdir = c.parent().unwrap_or(dir);
        let prefix = (cdir.strip_prefix(dir))
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        for (k, mut m) in s.minimal {
            if out.minimal.contains_key(&k) {
                continue;
            }
            let text = folder::read_check(cdir, &m.check)?;
            if !prefix.is_empty() {
                m.check = format!("{prefix}/{}", m.check);
            }
            out.checks.insert(m.check.clone(), text);
            out.minimal.insert(k, m);
        }
        for (c, n) in &s.failed {
            *out.failed.entry(*c).or_default() += n;
        }
        for (id, d) in s.causes {
            out.causes.entry(id).or_insert(d);
        }
        for q in &s.sequences {
            let done = q.run.is_some() || q.error.is_some();
            *(out.planned)
                .entry((q.sequence.id.clone(), q.version.clone()))
                .or_default() |= done;
        }
        if out.topology.is_empty() {
            out.topology = s.topology;
            out.name = s.name;
            out.strategy = s.strategy;
        }
    }
    Ok(out)
}

/// Judges every run under `dir` (pure: no engine) and writes findings.json, findings.md and
/// junit.xml into `out`; a run that gave nothing to judge (a failure, an interrupt) is counted by
/// cause, never judged. The minimal checks come from the campaign files found (campaign.json of
/// the folder and of every sub-folder: downloaded matrix cells). The folder is hostile input
/// (`folder.rs`): a folder without a campaign.json, a campaign.json repro did not write, a file
/// that is not a regular one inside the folder or over its limit is an error and nothing is
/// written; what is written is redacted and free of control characters.
pub(crate) fn judge_folder(dir: &Path, out: &Path) -> Result<FindingsFile, JudgeError> {
    let campaigns = read_campaigns(dir)?;
    let mut pieces = Vec::new();
    let mut results = Vec::new();
    let mut judged = 0;
    let mut failed_folders: BTreeMap<FailCause, usize> = BTreeMap::new();
    for run in run_folders(dir) {
        let r = read_result(&run)?;
        results.push(serde_json::to_value(&r).map_err(|e| e.to_string())?);
        if let Some(cause) = failure_of(&r) {
            // An interrupted run is not the campaign's failure: its sequence stays not run,
            // and `--resume` runs it again (#42).
            if cause != FailCause::Interrupted {
                *failed_folders.entry(cause).or_default() += 1;
            }
            continue;
        }
        judged += 1;
        let rel = run.strip_prefix(dir).unwrap_or(&run).display().to_string();
        for mut p in campaigns.strategy.judge(&r) {
            p.run = rel.clone();
            reclass(&campaigns.causes, &mut p);
            pieces.push(p);
        }
    }
    let mut found = findings::group(pieces);
    for f in &mut found {
        f.minimal = campaigns.minimal.get(&f.id()).cloned();
        // The distinguishing runs behind the finding's class, when they decided it.
        f.cause = (campaigns.causes.iter())
            .find(|(named, d)| {
                d.class == f.class && named.split('/').skip(1).eq(f.id().split('/').skip(1))
            })
            .map(|(_, d)| d.clone());
    }
    let runs_failed = if campaigns.failed.is_empty() {
        failed_folders
    } else {
        campaigns.failed
    };
    let file = FindingsFile {
        schema_version: findings::FINDINGS_SCHEMA_VERSION,
        campaign: campaigns.name,
        topology: campaigns.topology,
        runs: judged,
        runs_failed,
        runs_not_run: campaigns.planned.values().filter(|done| !**done).count(),
        findings: found,
    };
    let (file, checks) = folder::redacted(file, &results, campaigns.checks)?;
    let json = serde_json::to_string_pretty(&file).map_err(|e| e.to_string())?;
    let junit = findings::junit(&file)?;
    let md = findings::markdown(&file, &checks);
    let written = write(out, FINDINGS_JSON, &json)
        .and_then(|()| write(out, FINDINGS_MD, &md))
        .and_then(|()| write(out, FINDINGS_JUNIT, &junit));
    written.map_err(JudgeError::Write)?;
    Ok(file)
}

/// Why [`judge_folder`] wrote nothing: the folder's content (bad input), or the writing of the
/// outputs into it (a read-only folder, a full disk).
#[derive(Debug)]
pub(crate) enum JudgeError {
    Input(String),
    Write(String),
}

impl From<String> for JudgeError {
    fn from(s: String) -> JudgeError {
        JudgeError::Input(s)
    }
}

impl std::fmt::Display for JudgeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JudgeError::Input(s) | JudgeError::Write(s) => f.write_str(s),
        }
    }
}

fn failure_of(r: &RunResult) -> Option<FailCause> {
    match (r.failure, r.exit_code) {
        (Some(c), _) => Some(c),
        (None, Some(crate::exit::INTERRUPTED)) => Some(FailCause::Interrupted),
        (None, Some(crate::exit::INFRA) | None) => Some(FailCause::Internal),
        (None, Some(_)) => None,
    }
}

/// Every campaign.json under `dir` (its own, and those of downloaded matrix cells), sorted: of
/// any kind ([`read_state`] refuses anything but a regular file inside the folder).
fn campaign_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), 0)];
    while let Some((d, depth)) = stack.pop() {
        if std::fs::symlink_metadata(d.join(CAMPAIGN_FILE)).is_ok() {
            out.push(d.join(CAMPAIGN_FILE));
        }
        // a run folder holds no campaign; four levels cover cells/<artifact>/<campaign>
        if depth >= 4
            || std::fs::symlink_metadata(d.join(crate::results_folder::RESULT_FILE)).is_ok()
        {
            continue;
        }
        if let Ok(rd) = std::fs::read_dir(&d) {
            for e in rd.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push((e.path(), depth + 1));
                }
            }
        }
    }
    out.sort();
    out
}

pub(crate) use cells::{campaign_of, not_run_line, of_cells};

pub(crate) fn read_state(path: &Path) -> Result<State, String> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let bytes = crate::safe_fs::read_in(dir, path, crate::safe_fs::RESULT_LIMIT)
        .map_err(|e| format!("{}: {e:#}", path.display()))?;
    let state: State =
        serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    folder::validate(&state, path)?;
    Ok(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> State {
        State {
            schema_version: 1,
            name: "c".into(),
            topology: "etcd-split".into(),
            versions: vec!["v1.33.4+k3s1".into()],
            keys: vec!["embedded-registry".into()],
            seed: 0,
            confirm: 1,
            budget_runs: None,
            budget_seconds: None,
            sequences: Vec::new(),
            strategy: Strategy::Config,
            upgrade_to: None,
            minimal: BTreeMap::new(),
            runs: 0,
            seconds: 0.0,
            first_minimal_after: None,
            first_minimal_runs: None,
            started_at: None,
            first_minimal_at: None,
            causes: BTreeMap::new(),
            judged: 0,
            failed: BTreeMap::new(),
            merged_cells: Vec::new(),
        }
    }

    /// A campaign over etcd-split's embedded-registry whose every run "shows" the recorded
    /// buggy run of k3s #12753 (a taken-from defect: minimisation and confirmation follow),
    /// counting the runs it is asked to make.
    fn counted_campaign(
        dir: &Path,
        (budget, confirm, jobs): (usize, usize, usize),
    ) -> (Campaign, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let path = format!(
            "{}/tests/fixtures/run-etcd-split-buggy/result.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("json");
        v["signals"]["embedded-registry"]["shows"] =
            serde_json::json!({"key": "embedded-registry", "up_when": true});
        for st in v["steps"].as_array_mut().expect("steps") {
            for o in st["observations"].as_array_mut().expect("observations") {
                if o["signal"] == "embedded-registry" {
                    o["rule"] = "after-feature".into();
                }
            }
        }
        let result: RunResult = serde_json::from_value(v).expect("a result");
        let made = std::sync::Arc::new(AtomicUsize::new(0));
        let counter = made.clone();
        let run_one: RunOne = std::sync::Arc::new(move |_check, _version, results: PathBuf, _| {
            let n = counter.fetch_add(1, Ordering::SeqCst);
            let r = result.clone();
            Box::pin(async move {
                let d = results.join(format!("run-{n}"));
                std::fs::create_dir_all(&d).map_err(|e| RunFailure {
                    cause: FailCause::Internal,
                    message: e.to_string(),
                })?;
                Ok((d, r))
            })
        });
        let nodes = model::tests::etcd_split();
        let key = generate::KeySpace {
            key: "embedded-registry".into(),
            values: ["false".into(), "true".into()],
            boolean: true,
            signal: "embedded-registry".into(),
            shows: crate::scenario::Shows {
                key: "embedded-registry".into(),
                up_when: Some(true),
            },
            roles: vec![],
        };
        let space = Space {
            topology: "etcd-split".into(),
            base: nodes
                .iter()
                .map(|n| (n.name.clone(), Config::new()))
                .collect(),
            nodes,
            rules: Rules::of(distro::Distro::K3s),
            keys: vec![key],
        };
        let versions = vec!["v1.33.4+k3s1".to_string()];
        let mut st = state();
        st.sequences = plan_sequences(&space, &versions, 0, 0, 1).expect("planned");
        st.confirm = confirm;
        st.budget_runs = Some(budget);
        let c = Campaign {
            dir: dir.to_path_buf(),
            space,
            state: st,
            run_one,
            validate: Box::new(|_, _| Ok(())),
            say: Box::new(|_| {}),
            started: Instant::now(),
            only: None,
            minimise: true,
            budget_from: 0,
            stop_at: None,
            slots: slots::Slots::new(jobs),
            in_flight: 0,
            ahead: Ahead::default(),
        };
        (c, made)
    }

    /// #42 attack 5: `--budget runs=N` bounds every run the campaign makes, minimisation and
    /// confirmation included (`runs=1 --confirm 4` once made 7, `runs=12` 21); a resumed
    /// campaign gets a new budget counted from where it was.
    #[tokio::test]
    async fn the_budget_counts_every_run_of_the_campaign() {
        use std::sync::atomic::Ordering;
        for (jobs, slow) in [(1, false), (3, false), (3, true)] {
            for (budget, confirm) in [(1, 4), (3, 4), (12, 1), (12, 4)] {
                let tmp = tempfile::tempdir().expect("tmp");
                let (mut c, made) = counted_campaign(tmp.path(), (budget, confirm, jobs));
                if slow {
                    // Sequences started ahead while defects are minimised count too.
                    slowed(&mut c);
                }
                c.run().await.expect("the campaign runs");
                let n = made.load(Ordering::SeqCst);
                let what = format!("runs={budget} --confirm {confirm} --jobs {jobs} slow {slow}");
                assert!(n <= budget, "{what} made {n} runs");
                assert_eq!(c.state.runs, n, "{what}");
                assert_eq!(c.in_flight, 0, "{what}: nothing left in flight");
                if budget == 12 {
                    assert!(n > 1, "the budget allowed more than one run: {n}");
                }
                // Resumed with runs=2: at most two more.
                let before = c.state.runs;
                c.budget_from = before;
                c.state.budget_runs = Some(2);
                c.run().await.expect("resumed");
                assert!(made.load(Ordering::SeqCst) - n <= 2, "{what}");
                assert!(c.state.runs - before <= 2, "{what}");
            }
        }
    }

    /// The progress line counts the sequences this invocation runs: with `--sequences` picking
    /// two of the plan's, `[1/2]` … `[2/2]` and no time left at the end (it said `[1/N]` of the
    /// whole plan and hours left for a two-sequence campaign).
    #[tokio::test]
    async fn the_progress_counts_the_sequences_picked() {
        let tmp = tempfile::tempdir().expect("tmp");
        let (mut c, _) = counted_campaign(tmp.path(), (1000, 1, 1));
        c.minimise = false;
        let ids: Vec<String> = (c.state.sequences.iter().take(2))
            .map(|s| s.sequence.id.clone())
            .collect();
        assert!(
            c.state.sequences.len() > 2,
            "the plan has more than the two picked"
        );
        c.only = Some(ids);
        let said = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let into = said.clone();
        c.say = Box::new(move |l| into.lock().expect("lock").push(l.to_string()));
        c.run().await.expect("the campaign runs");
        let said = said.lock().expect("lock");
        let progress: Vec<&String> = said.iter().filter(|l| l.starts_with('[')).collect();
        assert_eq!(progress.len(), 2, "{said:#?}");
        assert!(progress[0].starts_with("[1/2] "), "{said:#?}");
        assert!(progress[1].starts_with("[2/2] "), "{said:#?}");
        assert!(progress[1].contains("about 0s left"), "{said:#?}");
    }

    /// A resumed campaign goes on: with one slot nothing runs ahead, so the sequence loop itself
    /// moves past the sequences already run (it once launched nothing after them and said
    /// "budget reached after 0 runs").
    #[tokio::test]
    async fn a_resumed_campaign_runs_the_sequences_left() {
        use std::sync::atomic::Ordering;
        for jobs in [1, 3] {
            let tmp = tempfile::tempdir().expect("tmp");
            let (mut c, made) = counted_campaign(tmp.path(), (1, 1, jobs));
            c.minimise = false;
            c.run().await.expect("the campaign runs");
            let first = made.load(Ordering::SeqCst);
            assert_eq!(first, 1, "--jobs {jobs}");
            c.budget_from = c.state.runs;
            c.state.budget_runs = Some(1000);
            c.run().await.expect("resumed");
            let left = (c.state.sequences.iter())
                .filter(|s| s.run.is_none())
                .count();
            assert_eq!(
                left, 0,
                "--jobs {jobs}: every sequence run after the resume"
            );
            assert_eq!(
                made.load(Ordering::SeqCst) - first,
                c.state.sequences.len() - 1,
                "--jobs {jobs}"
            );
        }
    }

    /// #39: `--jobs 3` keeps the serial campaign's record — the same sequences run and judged
    /// in the plan's order, the same minimal checks (steps, confirmations, the runs ddmin
    /// needed) and the same run folders judged, with the budget not binding.
    #[tokio::test]
    async fn runs_at_once_keep_the_serial_campaigns_record() {
        let campaign = |jobs: usize, slow: bool| async move {
            let tmp = tempfile::tempdir().expect("tmp");
            let (mut c, _) = counted_campaign(tmp.path(), (1000, 2, jobs));
            if slow {
                slowed(&mut c);
            }
            c.run().await.expect("the campaign runs");
            let file = judge_folder(tmp.path(), tmp.path()).expect("judged");
            let seqs: Vec<(String, bool, Option<String>)> = (c.state.sequences.iter())
                .map(|s| (s.sequence.id.clone(), s.run.is_some(), s.error.clone()))
                .collect();
            let minimal = serde_json::to_string(&c.state.minimal).expect("json");
            let checks = std::fs::read_dir(tmp.path().join(CHECKS_DIR))
                .expect("checks")
                .count();
            let mut minimise: Vec<String> = std::fs::read_dir(tmp.path().join("minimise"))
                .expect("minimise")
                .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                .collect();
            minimise.sort();
            let findings: Vec<(String, usize)> =
                (file.findings.iter()).map(|f| (f.id(), f.runs)).collect();
            (
                seqs,
                minimal,
                checks,
                minimise,
                findings,
                c.state.judged,
                file.runs,
            )
        };
        let serial = campaign(1, false).await;
        assert!(
            !serial.1.is_empty() && serial.1 != "{}",
            "a minimal check: {serial:?}"
        );
        for jobs in [2, 3] {
            for slow in [false, true] {
                let what = format!("--jobs {jobs}, runs that take a while: {slow}");
                assert_eq!(campaign(jobs, slow).await, serial, "{what}");
            }
        }
    }

    /// What the runs of a campaign slowed by [`slowed`] did at once: the most on the engine
    /// together, and how many sequence runs started while a minimisation run was on it.
    #[derive(Default)]
    struct AtOnce {
        on: Vec<bool>,
        most: usize,
        beside_minimisation: usize,
    }

    /// Makes every run of `c` take a while (yields to the campaign's loop, no clock) and notes
    /// what ran at once (a minimisation or confirmation run: its check is under `minimise/`).
    fn slowed(c: &mut Campaign) -> std::sync::Arc<std::sync::Mutex<AtOnce>> {
        let inner = c.run_one.clone();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(AtOnce::default()));
        let s = seen.clone();
        c.run_one = std::sync::Arc::new(move |check: PathBuf, version, results, slot| {
            let (inner, s) = (inner.clone(), s.clone());
            Box::pin(async move {
                let minimising = check.parent().is_some_and(|d| d.ends_with("minimise"));
                {
                    let mut a = s.lock().expect("lock");
                    if !minimising && a.on.iter().any(|m| *m) {
                        a.beside_minimisation += 1;
                    }
                    a.on.push(minimising);
                    a.most = a.most.max(a.on.len());
                }
                for _ in 0..50 {
                    tokio::task::yield_now().await;
                }
                let out = inner(check, version, results, slot).await;
                let mut a = s.lock().expect("lock");
                let at = a.on.iter().position(|m| *m == minimising).expect("noted");
                a.on.remove(at);
                out
            })
        });
        seen
    }

    /// #39: with `--jobs 3`, a slot the minimisation leaves idle starts the next sequences
    /// (it used to wait until the defect was minimised and confirmed), never more than three
    /// runs at once; serially, one run at a time.
    #[tokio::test]
    async fn idle_slots_run_the_next_sequences_while_a_defect_is_minimised() {
        for jobs in [1, 3] {
            let tmp = tempfile::tempdir().expect("tmp");
            let (mut c, _) = counted_campaign(tmp.path(), (1000, 1, jobs));
            let seen = slowed(&mut c);
            c.run().await.expect("the campaign runs");
            assert!(!c.state.minimal.is_empty(), "a defect was minimised");
            let a = seen.lock().expect("lock");
            assert!(a.most <= jobs, "--jobs {jobs}: {} at once", a.most);
            if jobs == 1 {
                assert_eq!(a.beside_minimisation, 0);
            } else {
                assert!(a.beside_minimisation > 0, "no sequence ran beside ddmin");
            }
        }
    }

    #[test]
    fn the_first_minimal_finding_is_noted_once_with_its_runs_and_time() {
        let at = |s: &str| {
            chrono::DateTime::parse_from_rfc3339(s)
                .expect("time")
                .with_timezone(&chrono::Utc)
        };
        let mut s = state();
        s.runs = 7;
        s.note_first_minimal(171.4, at("2026-12-03T17:30:00Z"));
        s.runs = 9;
        s.note_first_minimal(200.0, at("2026-12-03T17:31:00Z"));
        assert_eq!(
            (s.first_minimal_after, s.first_minimal_runs),
            (Some(171.4), Some(7))
        );
        assert_eq!(s.first_minimal_at.as_deref(), Some("2026-12-03T17:30:00Z"));
        // campaign.json keeps them, and a file written before they existed still reads
        let text = serde_json::to_string(&s).expect("json");
        let back: State = serde_json::from_str(&text).expect("read back");
        assert_eq!(back.first_minimal_runs, Some(7));
        let mut old: serde_json::Value = serde_json::to_value(state()).expect("json");
        old.as_object_mut().expect("object").remove("runs");
        let old: State = serde_json::from_value(old).expect("an older campaign.json");
        assert_eq!((old.first_minimal_runs, old.started_at), (None, None));
    }

    /// A minimal step that set two keys: its `bug:` holds every observation of that boot off
    /// the model, not only the finding's own, so the replay is `reproduced`, not inconclusive.
    #[test]
    fn the_bug_of_a_minimal_check_holds_every_off_model_observation_of_its_boot() {
        let path = format!(
            "{}/tests/fixtures/run-etcd-split-buggy/result.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(path).expect("fixture");
        let mut v: serde_json::Value = serde_json::from_str(&text).expect("json");
        let obs = v["steps"][0]["observations"]
            .as_array_mut()
            .expect("observations");
        let mine = (obs.iter())
            .find(|o| o["node"] == "etcd-2" && o["signal"] == "embedded-registry")
            .expect("etcd-2's registry")
            .clone();
        let mut other = mine.clone();
        other["signal"] = serde_json::json!("supervisor-metrics");
        obs.push(other);
        let r: RunResult = serde_json::from_value(v).expect("a result");
        let piece = |class: &str, key: &str, signal: &str, node: &str| Piece {
            class: Class::parse(class).expect("a class"),
            key: key.into(),
            node: node.into(),
            role: "etcd".into(),
            source: "s".into(),
            step: 1,
            signal: signal.into(),
            observed: "false".into(),
            predicted: "true".into(),
            evidence: vec![],
            version: "v1.33.4+k3s1".into(),
            run: String::new(),
            critical: true,
        };
        let pieces = vec![
            piece(
                "taken-from-cp-1",
                "embedded-registry",
                "embedded-registry",
                "etcd-2",
            ),
            piece(
                "taken-from-cp-1",
                "supervisor-metrics",
                "supervisor-metrics",
                "etcd-2",
            ),
            // by design, and another node: not the step's bug
            piece(
                "unguarded-divergence",
                "embedded-registry",
                "ready",
                "etcd-2",
            ),
            piece(
                "taken-from-cp-1",
                "supervisor-metrics",
                "supervisor-metrics",
                "etcd-3",
            ),
        ];
        let bug = observed_bug(&r, &pieces, "taken-from-cp-1/embedded-registry/etcd");
        let keys: Vec<(&(usize, String), Vec<&String>)> =
            bug.iter().map(|(k, m)| (k, m.keys().collect())).collect();
        assert_eq!(keys.len(), 1, "{bug:?}");
        assert_eq!(keys[0].0, &(0, "etcd-2".to_string()));
        assert_eq!(
            keys[0].1,
            ["embedded-registry", "supervisor-metrics"],
            "{bug:?}"
        );
    }
}
