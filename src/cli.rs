//! Command-line arguments (clap): the raw flags, and their translation into the configuration
//! a run is given ([`RunConfig`]) — once, here. Each command lives in `crate::cmd`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::result::Outcome;
use crate::run::{self, RunConfig};
pub(crate) use crate::target::Target;

#[derive(Debug, Parser)]
#[command(
    name = "repro",
    version = env!("REPRO_VERSION_LINE"),
    about = "Reproduce k3s configuration-order bugs end to end on k3s containers"
)]
pub struct Cli {
    #[command(flatten)]
    pub(crate) global: Global,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Clone, Args)]
pub(crate) struct Global {
    /// Folder whose checks/ and topologies/ lay over the built-in ones (default: the current
    /// directory if it has checks/signals.yaml).
    ///
    /// A check or topology there replaces the built-in one of its name, a signal in its
    /// checks/signals.yaml the built-in signal of its name; everything else is built in.
    #[arg(long, global = true, env = "REPRO_ROOT")]
    pub(crate) root: Option<PathBuf>,
    /// More log output from repro itself (-v, -vv); RUST_LOG works too.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub(crate) verbose: u8,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Check scenario files and report every problem with file, line and column.
    Validate(ValidateArgs),
    /// List the checks and topologies.
    List(ListArgs),
    /// Show what a run would do, without Docker.
    Plan(PlanArgs),
    /// Run a check on real containers and decide the verdict.
    Run(RunArgs),
    /// Reproduce on the buggy version, validate on the fixed one, and write the comment that
    /// closes the issue (both runs, then `report --validation`, in one command).
    Verify(VerifyArgs),
    /// Remove containers, networks and volumes left by runs (`--keep`, crashes).
    Clean(CleanArgs),
    /// List past and kept runs; a kept node's log, or a command in it.
    ///
    /// Each run under --results with its id, check, version, verdict, whether the engine still
    /// has its cluster, and its folder; `runs logs` and `runs exec` reach a kept cluster's nodes.
    Runs(RunsArgs),
    /// Re-render a results folder's reports from its result.json and logs.
    Report(ReportArgs),
    /// Redact secrets from a file or folder you already have (in place, or to --out).
    Redact(RedactArgs),
    /// The k3s stand-in image used for offline runs.
    #[command(subcommand)]
    Sim(SimCommand),
    /// Run checks across k3s versions and compare with the expected verdicts.
    Matrix(MatrixArgs),
    /// Find the first version where a check's verdict changes.
    Bisect(BisectArgs),
    /// Merge results folders made elsewhere into one summary and JUnit file.
    Merge(MergeArgs),
    /// Open, update or close the nightly's GitHub issues from a merged summary.json (uses `gh`).
    NightlyIssues(NightlyIssuesArgs),
    /// Read logs you already have: which features came up per node and boot, and known bugs.
    Inspect(InspectArgs),
    /// What this host and its Docker engine can do for a run: each check ok, warn or fail, with the fix.
    Doctor(DoctorArgs),
    /// Search a topology for config-order bugs: generated edit/restart sequences, judged by a
    /// model of the distribution's rules, minimised to a check file (docs/explore.md).
    Explore(ExploreArgs),
    /// Is my cluster affected? A running k3s/RKE2 cluster's servers (kubeconfig, config files or
    /// a saved node list) against the model of k3s #12753: borrowed values, drift, refused starts,
    /// and a safe order for a change (docs/audit.md).
    Audit(AuditArgs),
    /// Print repro's own version and commit (as `repro --version`; the distribution's version of
    /// a run is `--version` after a command).
    Version(VersionArgs),
    /// Start a check of your own: a commented check and topology (and the shipped signals) in
    /// checks/ and topologies/ of the current folder, which `repro validate` accepts and `repro
    /// plan NAME` plans.
    Init(InitArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page, or write one page per command into a folder (--out).
    Man {
        /// Write repro.1 and repro-<command>.1 here instead of printing repro.1.
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

#[derive(Debug, Args)]
pub(crate) struct VersionArgs {
    /// `json`: `{"name", "version", "commit"}` for scripts.
    #[arg(long, value_enum, default_value = "text")]
    pub(crate) format: Format,
}

#[derive(Debug, Args)]
pub(crate) struct InitArgs {
    /// The new check's name (also its topology's): lower-case letters, digits and `-`.
    pub(crate) name: String,
}

#[derive(Debug, Args)]
pub(crate) struct ValidateArgs {
    /// Files to check (default: every shipped check, topology and signals file).
    pub(crate) files: Vec<PathBuf>,
    /// `json`: one object on stdout, `valid` and every problem with file, line and column
    /// (docs/json-output.md); the problems still go to stderr as text.
    #[arg(long, value_enum, default_value = "text")]
    pub(crate) format: Format,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    Text,
    Json,
}

#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// A table for people, or JSON for scripts.
    #[arg(long, value_enum, default_value = "text")]
    pub(crate) format: Format,
}

#[derive(Debug, Args)]
pub(crate) struct PlanArgs {
    #[command(flatten)]
    pub(crate) target: Target,
    #[command(flatten)]
    pub(crate) images: crate::target::ImagesTarballArg,
    #[arg(long, value_enum, default_value = "text")]
    pub(crate) format: Format,
}

/// The outcome `--expect` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Expect {
    /// What the check's `fixed-in` predicts for the version, as `repro plan` shows it.
    Auto,
    /// The correct behaviour.
    Fixed,
    /// The documented bug.
    Reproduced,
}

impl From<Expect> for run::Expect {
    fn from(e: Expect) -> run::Expect {
        match e {
            Expect::Auto => run::Expect::Auto,
            Expect::Fixed => run::Expect::Outcome(Outcome::Fixed),
            Expect::Reproduced => run::Expect::Outcome(Outcome::Reproduced),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Progress {
    Auto,
    Always,
    Never,
}

impl Progress {
    /// Live lines or plain ones. Some CI systems give a pseudo-terminal: live only on a real
    /// one outside CI.
    pub(crate) fn is_live(self) -> bool {
        use std::io::IsTerminal;
        match self {
            Progress::Always => true,
            Progress::Never => false,
            Progress::Auto => std::io::stderr().is_terminal() && !is_ci::cached(),
        }
    }
}

/// The run options every command that runs checks takes (`run`, `matrix`, `bisect`, `verify`,
/// `explore`), declared once and flattened into each.
#[derive(Debug, Clone, Args)]
pub(crate) struct RunOptions {
    /// How long one node may take to become ready (or die) after a start or restart.
    #[arg(long, value_parser = parse_timeout, default_value = "5m")]
    pub(crate) timeout: Duration,
    /// A margin after every deciding settled-by line (default: none after a line k3s orders after
    /// the feature's own, 3s after a hint; overrides the checks' `settle:`).
    #[arg(long, value_parser = parse_settle)]
    pub(crate) settle: Option<Duration>,
    /// Load this image archive (docker save / k3s air-gap tarball) before the run (matrix,
    /// bisect, explore: once, before the runs).
    #[arg(long, value_parser = parse_archive)]
    pub(crate) image_archive: Option<PathBuf>,
    /// Where run folders go (matrix, bisect, explore: their own folder, with each run's folder
    /// inside).
    #[arg(long, default_value = "results", env = "REPRO_RESULTS")]
    pub(crate) results: PathBuf,
    /// Rebuild the stand-in image even if it exists (with --sim; matrix, bisect, explore: once,
    /// before the runs).
    #[arg(long)]
    pub(crate) rebuild_sim: bool,
    /// The stand-in's load-balancer seed (`REPRO_SIM_SEED`): each node gets one derived from
    /// it, so a run's server picks can be replayed; default random, recorded in result.json.
    /// Hidden: it only matters to the stand-in's tests and to replaying a stand-in run.
    #[arg(long, env = "REPRO_SIM_SEED", hide = true)]
    pub(crate) sim_seed: Option<u64>,
    /// Run nodes privileged, as k3d runs real k3s. `auto`: privileged unless the image says it
    /// needs no privileges (label `io.repro.privileged=false`, set by the stand-in image).
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) privileged: Privileged,
    /// Skip `repro doctor`'s privileged trial a run makes before its first privileged node (a
    /// throwaway container; the run stops with exit 3 and the doctor's line if it is refused).
    #[arg(long)]
    pub(crate) no_host_check: bool,
    /// The MTU of the run's network (default: the engine's, from its default bridge's
    /// `com.docker.network.driver.mtu`; `repro doctor` shows both). Inside a Docker-in-Docker
    /// runner whose interface is below 1500 (e.g. 1400), give that.
    #[arg(long, value_parser = parse_mtu)]
    pub(crate) mtu: Option<u32>,
    #[command(flatten)]
    pub(crate) images: crate::target::ImagesTarballArg,
}

pub(crate) use crate::run::Privileged;

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    pub(crate) target: Target,
    /// The outcome that counts as success (exit 0). `auto`: what the check's `fixed-in`
    /// predicts for the version (`repro plan` shows it and why): `reproduced` before the first
    /// fixed release of its line, `fixed` from it on; a line newer than every `fixed-in` entry
    /// counts as fixed, an older one as reproduced. Where `fixed-in` cannot predict (the check
    /// has none), `auto` means `fixed`. (Not for matrix and bisect: each of their runs expects
    /// what its check's `fixed-in` predicts.)
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) expect: Expect,
    /// Live progress lines on a terminal (auto: only on a terminal outside CI). (Not for
    /// matrix and bisect: concurrent runs cannot share a terminal; each run's log is in its
    /// folder.)
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) progress: Progress,
    /// Leave the cluster running afterwards and print how to inspect and remove it. (Not for
    /// matrix and bisect: a cluster per run would be left behind.)
    #[arg(long)]
    pub(crate) keep: bool,
    #[command(flatten)]
    pub(crate) options: RunOptions,
    /// The summary on stdout: a table for people, or one JSON object for scripts (progress
    /// stays on stderr either way).
    #[arg(long, value_enum, default_value = "text")]
    pub(crate) format: Format,
    #[command(flatten)]
    pub(crate) events: EventsArg,
}

/// `--events FILE|-`, on the commands that run one check at a time (`run`, `verify`).
#[derive(Debug, Clone, Args)]
pub(crate) struct EventsArg {
    /// Stream the run's events as JSON Lines (phase, node state, observation, verdict;
    /// docs/events.md) to FILE as they happen, or to stdout with `-` (what stdout held then goes
    /// to stderr). Every run also writes them to events.jsonl in its results folder.
    #[arg(long = "events", value_name = "FILE|-")]
    pub(crate) path: Option<PathBuf>,
}

impl EventsArg {
    /// Whether the events take stdout (`--events -`).
    pub(crate) fn on_stdout(&self) -> bool {
        self.path.as_deref() == Some(std::path::Path::new("-"))
    }
}

impl RunArgs {
    /// The run's configuration, from the flags and the command line as typed.
    pub(crate) fn to_config(&self, argv: Vec<String>) -> RunConfig {
        let o = &self.options;
        RunConfig {
            target: Target {
                no_images_tarball: o.images.no_images_tarball,
                ..self.target.clone()
            },
            expect: self.expect.into(),
            timeout: o.timeout,
            settle: o.settle,
            keep: self.keep,
            image_archive: o.image_archive.clone(),
            results: o.results.clone(),
            rebuild_sim: o.rebuild_sim,
            sim_seed: o.sim_seed,
            privileged: o.privileged,
            host_check: !o.no_host_check,
            mtu: o.mtu,
            argv,
            restore: None,
        }
    }
}

/// `repro explore`'s flags (src/cmd/explore.rs).
#[derive(Debug, Args)]
pub(crate) struct ExploreArgs {
    /// The topology to search (a name from `repro list`).
    #[arg(long, required_unless_present_any = ["recheck", "resume"])]
    pub(crate) topology: Option<String>,
    /// Versions to run every sequence on, comma-separated (default: the topology's).
    /// `--versions` and the older `--k3s-version` work too.
    #[arg(
        long = "version",
        visible_alias = "versions",
        alias = "k3s-version",
        value_delimiter = ','
    )]
    pub(crate) versions: Vec<String>,
    /// What to search: `config` (config edits and restarts, judged by the model of k3s's
    /// rules) or `lifecycle` (stops, starts, restarts together and upgrades, judged by the
    /// liveness rules; docs/explore.md "Lifecycle strategy").
    #[arg(long, value_enum, default_value = "config")]
    pub(crate) strategy: crate::explore::Strategy,
    /// With --strategy lifecycle: also upgrade every node, one by one in Rancher's order, to
    /// this version.
    #[arg(long, value_name = "VERSION")]
    pub(crate) upgrade_to: Option<String>,
    /// Keys to search, comma-separated (default: every key the flags table marks critical or
    /// from-server that a signal shows).
    #[arg(long, value_delimiter = ',')]
    pub(crate) keys: Vec<String>,
    /// Run on the stand-in image of each version.
    #[arg(long)]
    pub(crate) sim: bool,
    /// With --sim: real k3s's boot timings times this factor.
    #[arg(long, requires = "sim", value_name = "F", value_parser = distro::pace::parse_pace)]
    pub(crate) sim_pace: Option<f64>,
    /// With --sim: plant one bug of the stand-in's catalogue in every node of every run
    /// (joined-metrics, cached-flannel-backend, refused-kube-proxy, control-plane-panic): what
    /// `make bench` measures explore's power with.
    #[arg(long, requires = "sim", value_name = "NAME", value_parser = distro::plant::parse_plant)]
    pub(crate) sim_plant: Option<String>,
    /// Bounds: `runs=N,time=D` (either or both; D as 30m, 2h).
    #[arg(long, value_parser = parse_budget, default_value = "runs=200")]
    pub(crate) budget: (Option<usize>, Option<u64>),
    /// The seed of the random sequences (and of the lifecycle strategy's run order): the same
    /// seed replays the same campaign.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// How many seeded random sequences after the exhaustive ones.
    #[arg(long, default_value_t = 0, value_parser = parse_random)]
    pub(crate) random: usize,
    /// Re-run each minimal check this many times on fresh clusters before reporting it.
    #[arg(long, default_value_t = 1, value_parser = parse_confirm)]
    pub(crate) confirm: usize,
    /// Skip minimisation and confirmation (a matrix cell: the merge judges).
    #[arg(long)]
    pub(crate) no_minimise: bool,
    /// Start each sequence from a restore of a kept baseline (the topology's cluster booted
    /// once with its starting config, stopped, its volumes copied per run) instead of a fresh
    /// bring-up. Default with `--sim`, on Docker and on Podman (not with `--strategy
    /// lifecycle`: a restore restarts every node at once), where it is proven to give the same
    /// findings; opt-in on real k3s and RKE2 (docs/explore.md "Restore").
    #[arg(long, overrides_with = "no_restore")]
    pub(crate) restore: bool,
    /// Bring every sequence's cluster up fresh (the default on real k3s and RKE2).
    #[arg(long, overrides_with = "restore")]
    pub(crate) no_restore: bool,
    /// Stop once the first minimal confirmed finding is written (`=KEY` or `=CLASS/KEY`: the
    /// first of that key, e.g. `supervisor-metrics`, or of that class and key, e.g.
    /// `died/panic`): the keys, sequences and their order are the campaign's own, the rest is
    /// left for `--resume`. `make bench` times explore on planted bugs with it.
    #[arg(
        long,
        value_name = "[CLASS/]KEY",
        num_args = 0..=1,
        default_missing_value = "",
        conflicts_with = "no_minimise"
    )]
    pub(crate) stop_at_first_minimal: Option<String>,
    /// Re-judge the runs under this folder (a campaign, or downloaded matrix cells) with no
    /// engine, and write findings.json, findings.md and junit.xml into it.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["topology", "resume"])]
    pub(crate) recheck: Option<PathBuf>,
    /// Go on with the campaign in this folder (its campaign.json).
    #[arg(long, value_name = "DIR")]
    pub(crate) resume: Option<PathBuf>,
    /// Print the campaign's sequences as a GitHub Actions matrix instead of running them.
    #[arg(long, value_enum)]
    pub(crate) emit: Option<ExploreEmit>,
    /// With --emit github-matrix: sequences per matrix cell.
    #[arg(long, default_value_t = 1, value_parser = parse_shard)]
    pub(crate) shard: usize,
    /// Run only these sequence ids (a matrix cell's share), comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub(crate) sequences: Vec<String>,
    /// `repro run`'s run flags, declared once (`--timeout`, `--results`: where the campaign
    /// folder goes, …): every run of the campaign is configured by `RunOptions::to_config`.
    #[command(flatten)]
    pub(crate) options: RunOptions,
    /// Runs at once (sequences, ddmin candidates, confirmations), each on its own cluster and
    /// network: 1 to 64, or `auto`: as many as the host's available memory holds by the
    /// distribution's per-node memory, or for paced stand-in runs (`--sim --sim-pace P`, which
    /// mostly wait) as many as the engine and the cores keep up with; never more than the
    /// campaign can fill (its sequences, or a minimisation round). The findings are the serial
    /// campaign's.
    #[arg(long, default_value = "1")]
    pub(crate) jobs: crate::matrix::jobs::Jobs,
    /// Print what the campaign would cost (sequences, runs with minimisation, wall time at real
    /// k3s's pace with --jobs, with and without restore, and on --runners) and run nothing.
    #[arg(long, conflicts_with_all = ["recheck", "emit"])]
    pub(crate) plan: bool,
    /// With --plan: also the wall time on this many runners (a GitHub matrix), each with --jobs.
    #[arg(long, requires = "plan", value_name = "K", value_parser = clap::value_parser!(u32).range(1..=256))]
    pub(crate) runners: Option<u32>,
    /// With --plan: `text` or `json`.
    #[arg(long, value_enum, default_value = "text", requires = "plan")]
    pub(crate) format: Format,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ExploreEmit {
    GithubMatrix,
}

/// `--budget runs=N,time=D`.
/// The most runs a `--budget` may allow, and the longest time: a campaign is bounded before
/// it is planned (#42).
pub(crate) const MAX_BUDGET_RUNS: usize = 100_000;
const MAX_BUDGET_TIME: Duration = Duration::from_secs(30 * 24 * 3600);
/// The most `--random` sequences a campaign may plan.
pub(crate) const MAX_RANDOM: usize = 10_000;

fn parse_budget(s: &str) -> Result<(Option<usize>, Option<u64>), String> {
    let mut out = (None, None);
    let example = "write runs=N,time=D (e.g. runs=50,time=30m)";
    if s.trim().is_empty() {
        return Err(format!("an empty budget bounds nothing; {example}"));
    }
    for part in s.split(',') {
        match part.split_once('=') {
            Some(("runs", n)) => {
                let n: usize = n
                    .parse()
                    .map_err(|_| format!("`{n}` is not a number of runs; e.g. runs=50"))?;
                if n == 0 || n > MAX_BUDGET_RUNS {
                    return Err(format!(
                        "runs={n}: give 1 to {MAX_BUDGET_RUNS} runs; e.g. runs=50"
                    ));
                }
                if out.0.replace(n).is_some() {
                    return Err(format!("runs= is given twice; {example}"));
                }
            }
            Some(("time", d)) => {
                let t = humantime::parse_duration(d)
                    .map_err(|e| format!("`{d}`: {e}; e.g. time=30m"))?;
                if t.is_zero() || t > MAX_BUDGET_TIME {
                    return Err(format!("time={d}: give 1s to 30 days; e.g. time=30m"));
                }
                if out.1.replace(t.as_secs().max(1)).is_some() {
                    return Err(format!("time= is given twice; {example}"));
                }
            }
            _ => return Err(format!("`{part}` is not a budget; {example}")),
        }
    }
    Ok(out)
}

/// `--random N`: at most [`MAX_RANDOM`] sequences.
fn parse_random(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n <= MAX_RANDOM => Ok(n),
        _ => Err(format!(
            "`{s}`: give a number of random sequences from 0 to {MAX_RANDOM} (the budget bounds the runs: e.g. --random 50)"
        )),
    }
}

/// `--confirm N`: fresh runs of a minimal check, 0 to 20.
fn parse_confirm(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n <= 20 => Ok(n),
        _ => Err(format!(
            "`{s}`: give 0 to 20 confirmation runs (e.g. --confirm 2)"
        )),
    }
}

/// `--shard N`: sequences per matrix cell, at least 1.
fn parse_shard(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=MAX_BUDGET_RUNS).contains(&n) => Ok(n),
        _ => Err(format!(
            "`{s}`: give 1 or more sequences per shard (e.g. --shard 4)"
        )),
    }
}

#[derive(Debug, Args)]
pub(crate) struct VerifyArgs {
    /// The check: a name from `repro list`, or a path to a check file.
    pub(crate) check: String,
    /// A version with the bug (before the check's `fixed-in`), e.g. v1.33.4+k3s1.
    #[arg(long, value_name = "VERSION")]
    pub(crate) buggy: String,
    /// A version with the fix (at or after the check's `fixed-in`), e.g. v1.33.5+k3s1.
    #[arg(long, value_name = "VERSION")]
    pub(crate) fixed: String,
    /// Use this topology instead of the check's own.
    #[arg(long)]
    pub(crate) topology: Option<String>,
    /// Use the stand-in images of both versions (built on the spot if missing).
    #[arg(long)]
    pub(crate) sim: bool,
    /// With --sim: real k3s's time for every phase of a stand-in boot, times this factor.
    #[arg(long, requires = "sim", value_name = "F", value_parser = distro::pace::parse_pace)]
    pub(crate) sim_pace: Option<f64>,
    /// Write the comment to this file instead of stdout.
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// Live progress lines on a terminal (auto: only on a terminal outside CI).
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) progress: Progress,
    /// A value to redact wherever it occurs in the comment (repeatable).
    #[arg(long = "secret", value_name = "VALUE")]
    pub(crate) secrets: Vec<String>,
    #[command(flatten)]
    pub(crate) events: EventsArg,
    #[command(flatten)]
    pub(crate) options: RunOptions,
}

#[derive(Debug, Args)]
pub(crate) struct CleanArgs {
    /// Remove what one run left (its id, as printed and in result.json).
    #[arg(long, conflicts_with_all = ["all", "orphans"])]
    pub(crate) run: Option<String>,
    /// Remove everything any repro run left on this Docker host.
    #[arg(long, conflicts_with = "orphans")]
    pub(crate) all: bool,
    /// Remove the runs whose repro process is gone (killed before it could clean up: a CI
    /// job's timeout, the OOM killer, a reboot), and only those: a run in progress, a `--keep`
    /// run and a run whose process cannot be seen from here (another host's engine, another
    /// PID namespace, a repro without owner labels) are left, each named with why.
    #[arg(long)]
    pub(crate) orphans: bool,
    /// `json`: one object on stdout with the counts removed and any problems
    /// (docs/json-output.md).
    #[arg(long, value_enum, default_value = "text")]
    pub(crate) format: Format,
}

#[derive(Debug, Args)]
pub(crate) struct RunsArgs {
    #[command(subcommand)]
    pub(crate) command: Option<RunsCommand>,
    /// The folder the runs wrote into (`run --results`); run folders directly in it and one
    /// level down (a matrix's, a bisection's) are listed.
    #[arg(long, default_value = "results", env = "REPRO_RESULTS", global = true)]
    pub(crate) results: PathBuf,
    /// `json`: one object on stdout, every run and whether the engine was asked
    /// (docs/events.md's table of documents).
    #[arg(long, value_enum, default_value = "text")]
    pub(crate) format: Format,
}

#[derive(Debug, Subcommand)]
pub(crate) enum RunsCommand {
    /// Print a kept node's log.
    ///
    /// Read through the engine the way the run read it: the container's log, or its unit's
    /// journal on a systemd node (RKE2); all on stdout, redacted as every output of repro.
    Logs(RunsLogsArgs),
    /// Run a command in a kept node and exit with its exit status.
    ///
    /// No terminal and no stdin (for a shell: `docker exec -it <container> sh`, where the image
    /// has one); its output is redacted, as every output of repro.
    Exec(RunsExecArgs),
}

#[derive(Debug, Args)]
pub(crate) struct RunsLogsArgs {
    /// The run's id, as `repro runs` lists it (a unique beginning is enough).
    #[arg(value_name = "ID")]
    pub(crate) run: String,
    /// The node (default: every node of the run, one after the other).
    pub(crate) node: Option<String>,
    /// Go on printing what the node writes, until Ctrl-C or the node stops.
    #[arg(short, long, requires = "node")]
    pub(crate) follow: bool,
}

#[derive(Debug, Args)]
pub(crate) struct RunsExecArgs {
    /// The run's id, as `repro runs` lists it (a unique beginning is enough).
    #[arg(value_name = "ID")]
    pub(crate) run: String,
    /// The node to run it in.
    pub(crate) node: String,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub(crate) cmd: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct ReportArgs {
    /// A results folder (with result.json).
    #[arg(required_unless_present = "validation")]
    pub(crate) dir: Option<PathBuf>,
    /// Instead: write the comment that closes an issue ("Validated on …") from a run on a buggy
    /// version and a run on the fixed one (to stdout, or --out). Several runs of a version
    /// (a glob that matches more than one) count as their newest.
    #[arg(long, num_args = 2.., value_names = ["BUGGY_RUN", "FIXED_RUN"], conflicts_with = "dir")]
    pub(crate) validation: Option<Vec<PathBuf>>,
    /// With --validation: write the comment to this file instead of stdout.
    #[arg(long, requires = "validation")]
    pub(crate) out: Option<PathBuf>,
    /// Instead of re-rendering: print each case that did not pass as a GitHub Actions
    /// annotation (`::error file=…,line=…::…`) on the check's YAML line.
    #[arg(long, requires = "dir", conflicts_with = "validation")]
    pub(crate) github_annotations: bool,
    /// A value to redact wherever it occurs (repeatable), e.g. a token the files do not name.
    #[arg(long = "secret", value_name = "VALUE")]
    pub(crate) secrets: Vec<String>,
    /// `json`: one object on stdout — the files written and the verdict, or with --validation
    /// the pair's outcome and the comment (docs/json-output.md).
    #[arg(
        long,
        value_enum,
        default_value = "text",
        conflicts_with = "github_annotations"
    )]
    pub(crate) format: Format,
}

#[derive(Debug, Args)]
pub(crate) struct RedactArgs {
    /// File or folder to redact.
    pub(crate) path: PathBuf,
    /// Write the redacted copy here instead of changing the input in place.
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// A value to redact wherever it occurs (repeatable), e.g. a token the files do not name.
    #[arg(long = "secret", value_name = "VALUE")]
    pub(crate) secrets: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum SimCommand {
    /// Build stand-in images (repro.local/k3s-sim:<version>).
    Build {
        /// Versions to build, comma-separated (default: the versions the tests and the demo
        /// use). `--versions` and the older `--k3s-version` work too.
        #[arg(
            long = "version",
            visible_alias = "versions",
            alias = "k3s-version",
            value_delimiter = ','
        )]
        versions: Vec<String>,
        /// Rebuild even if the tag exists.
        #[arg(long)]
        rebuild: bool,
    },
    /// Write a stand-in k3s binary that reports VERSION and has the bug or not (stamped into
    /// the file), to run as a build under test.
    Binary {
        /// The version its `k3s -v` prints.
        #[arg(long)]
        version: String,
        /// Without the etcd-only bootstrap fix (k3s #12753).
        #[arg(long, conflicts_with = "fixed", required_unless_present = "fixed")]
        buggy: bool,
        /// With the fix.
        #[arg(long)]
        fixed: bool,
        /// Where to write it.
        #[arg(long)]
        out: PathBuf,
    },
    /// Write the stand-in's rke2 release artifacts of VERSION (`rke2.linux-amd64.tar.gz`,
    /// `sha256sum-amd64.txt`) to a folder, for `repro run --artifacts` offline.
    Artifacts {
        /// The rke2 version the stand-in reports.
        #[arg(long)]
        version: String,
        /// The folder to write them to.
        #[arg(long)]
        out: PathBuf,
    },
}

/// What `repro matrix --emit` prints instead of running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Emit {
    /// `{"include":[{"check":…,"k3s_version":…,"expected":…},…]}` for `strategy.matrix`.
    GithubMatrix,
}

impl RunOptions {
    /// The configuration of one run of the batch: `target`, expecting `expect`, results under
    /// `results`.
    pub(crate) fn to_config(
        &self,
        target: run::Target,
        expect: Outcome,
        results: PathBuf,
        argv: Vec<String>,
    ) -> RunConfig {
        RunConfig {
            target,
            expect: run::Expect::Outcome(expect),
            timeout: self.timeout,
            settle: self.settle,
            keep: false,
            // Loaded once by the batch: loading it per run would redo the same work N times.
            image_archive: None,
            results,
            // Rebuilt once by the batch: concurrent rebuilds of one tag would race.
            rebuild_sim: false,
            // Each run of a batch draws its own: one seed for all would make every cell pick alike.
            sim_seed: None,
            privileged: self.privileged,
            host_check: !self.no_host_check,
            mtu: self.mtu,
            argv,
            restore: None,
        }
    }
}

#[derive(Debug, Args)]
pub(crate) struct MatrixArgs {
    /// Checks to run, comma-separated (default: every check with `fixed-in`).
    #[arg(long, value_delimiter = ',')]
    pub(crate) checks: Vec<String>,
    /// Versions, comma-separated; `stable`, `latest` or `v1.33` name a release channel
    /// (resolved on the k3s channel server: needs network access). `--version` and the older
    /// `--k3s-versions` work too.
    #[arg(
        long = "versions",
        visible_alias = "version",
        alias = "k3s-versions",
        value_delimiter = ',',
        required_unless_present = "k3s_binary",
        conflicts_with = "k3s_binary"
    )]
    pub(crate) versions: Vec<String>,
    /// Instead of versions: every check on this k3s build (a local build, as `run
    /// --k3s-binary`), in the image of the version it reports.
    #[arg(long, value_name = "PATH", value_parser = crate::builds::parse_binary_path, conflicts_with = "emit")]
    pub(crate) k3s_binary: Option<PathBuf>,
    /// Runs at once: 1 to 64, or `auto` (as many as the host's available memory holds, by the
    /// distribution's per-node memory and the largest topology).
    #[arg(long, default_value = "2")]
    pub(crate) jobs: crate::matrix::jobs::Jobs,
    /// Use the k3s stand-in images (built on the spot if missing).
    #[arg(long)]
    pub(crate) sim: bool,
    /// With --sim: real k3s's time for every phase of a stand-in boot, times this factor (1 =
    /// real k3s timings, 0.5 = twice as fast; default: no pacing).
    #[arg(long, requires = "sim", value_name = "F", value_parser = distro::pace::parse_pace)]
    pub(crate) sim_pace: Option<f64>,
    /// Print the matrix for a CI fan-out instead of running it (no Docker needed).
    #[arg(long, value_enum)]
    pub(crate) emit: Option<Emit>,
    /// `json`: stdout is the summary.json document alone (the table and progress lines go to
    /// stderr).
    #[arg(long, value_enum, default_value = "text")]
    pub(crate) format: Format,
    #[command(flatten)]
    pub(crate) options: RunOptions,
}

#[derive(Debug, Args)]
pub(crate) struct BisectArgs {
    /// The check (it needs a bug signature: `bug:` in its steps).
    pub(crate) check: String,
    /// A release whose verdict is the "good" one (trusted, not run).
    #[arg(long, required_unless_present = "commits", conflicts_with = "commits")]
    pub(crate) good: Option<String>,
    /// A release whose verdict is the "bad" one (run first to learn that verdict).
    #[arg(long, required_unless_present = "commits", conflicts_with = "commits")]
    pub(crate) bad: Option<String>,
    /// Instead of releases: bisect over these commits' CI builds (a file, one full SHA per line,
    /// oldest first, e.g. `git log --reverse --format=%H A..B` in a k3s checkout; blank lines and
    /// `#` comments allowed) to the first commit whose verdict differs from the first one's.
    #[arg(long, value_name = "FILE", conflicts_with = "versions")]
    pub(crate) commits: Option<PathBuf>,
    /// The versions to search: an ordered release list file (default: releases/k3s.yaml of
    /// the project, else the shipped one).
    #[arg(long, value_name = "FILE")]
    pub(crate) versions: Option<PathBuf>,
    /// Use the k3s stand-in images (built on the spot if missing).
    #[arg(long)]
    pub(crate) sim: bool,
    /// With --sim: real k3s's time for every phase of a stand-in boot, times this factor (1 =
    /// real k3s timings, 0.5 = twice as fast; default: no pacing).
    #[arg(long, requires = "sim", value_name = "F", value_parser = distro::pace::parse_pace)]
    pub(crate) sim_pace: Option<f64>,
    /// Live progress lines of each run on a terminal (auto: only on a terminal outside CI);
    /// the runs go one after the other, so they share it in turn.
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) progress: Progress,
    /// `json`: stdout is bisect.json's document alone (the lines for people go to stderr).
    #[arg(long, value_enum, default_value = "text")]
    pub(crate) format: Format,
    #[command(flatten)]
    pub(crate) options: RunOptions,
}

#[derive(Debug, Args)]
pub(crate) struct MergeArgs {
    /// Results folders: run folders (result.json), matrix folders (summary.json), or folders
    /// holding either at any depth (e.g. downloaded CI artifacts).
    #[arg(required_unless_present = "plan")]
    pub(crate) dirs: Vec<PathBuf>,
    /// The planned matrix (the `repro matrix --emit github-matrix` JSON, or a summary.json):
    /// every planned cell that wrote nothing shows as NOT RUN.
    #[arg(long, value_name = "FILE")]
    pub(crate) plan: Option<PathBuf>,
    /// Where the merged summary.json and junit.xml go.
    #[arg(long, default_value = "results/merged")]
    pub(crate) out: PathBuf,
    /// `json`: stdout is the merged summary.json document alone (the table goes to stderr).
    #[arg(long, value_enum, default_value = "text")]
    pub(crate) format: Format,
}

#[derive(Debug, Args)]
pub(crate) struct NightlyIssuesArgs {
    /// The merged summary.json (`repro merge … --out DIR` writes DIR/summary.json).
    pub(crate) summary: PathBuf,
    /// The workflow run's page, linked from every issue (default: from GITHUB_SERVER_URL,
    /// GITHUB_REPOSITORY and GITHUB_RUN_ID).
    #[arg(long)]
    pub(crate) run_url: Option<String>,
    /// The label of the nightly's issues; only issues with it are read or changed.
    #[arg(long, default_value = crate::nightly::DEFAULT_LABEL)]
    pub(crate) label: String,
    /// A cell's artifact is named this prefix + `<check>-<version>` (as nightly.yml uploads it).
    #[arg(long, default_value = "results-")]
    pub(crate) artifact_prefix: String,
    /// The GitHub CLI to call.
    #[arg(long, env = "REPRO_GH", default_value = "gh")]
    pub(crate) gh: PathBuf,
    /// Read the existing issues, print what would change, change nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
}

#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    /// The version a run would use (default: the topology's).
    #[arg(long = "version", alias = "k3s-version")]
    pub(crate) version: Option<String>,
    /// The topology a run would use (default: the largest shipped one).
    #[arg(long)]
    pub(crate) topology: Option<String>,
    /// Ask about the stand-in instead of real k3s.
    #[arg(long)]
    pub(crate) sim: bool,
    /// The image a run would use (`repro run --image`), instead of the distribution's image of
    /// the version: the privileged trial and `check-config` run in it.
    #[arg(long, conflicts_with = "sim", value_parser = crate::target::ImageRef)]
    pub(crate) image: Option<String>,
    #[arg(long, value_enum, default_value = "text")]
    pub(crate) format: Format,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum AuditFormat {
    /// Lines for a terminal.
    Text,
    /// Versioned JSON (schema/audit.schema.json).
    Json,
    /// Prometheus text format, for node_exporter's textfile collector.
    Prometheus,
}

/// `repro audit`'s flags (src/cmd/audit.rs).
#[derive(Debug, Args)]
pub(crate) struct AuditArgs {
    /// The kubeconfig of the cluster (default: KUBECONFIG, then ~/.kube/config, as kubectl).
    #[arg(long, value_name = "FILE")]
    pub(crate) kubeconfig: Option<PathBuf>,
    /// The kubeconfig's context (default: its current context).
    #[arg(long)]
    pub(crate) context: Option<String>,
    /// A saved `kubectl get nodes -o json` instead of a live cluster.
    #[arg(long = "nodes", value_name = "FILE")]
    pub(crate) nodes_file: Option<PathBuf>,
    /// A server's config (repeatable): `--config etcd-2=etcd-2/config.yaml` (its config.yaml.d
    /// beside it is read too; a folder holding config.yaml works). With a cluster or node list:
    /// what the node starts with next.
    #[arg(long = "config", value_name = "NODE=PATH", value_parser = parse_named)]
    pub(crate) configs: Vec<(String, PathBuf)>,
    /// The servers' version, with config files alone (e.g. v1.33.4+k3s1).
    #[arg(long = "version", alias = "k3s-version")]
    pub(crate) version: Option<String>,
    /// The distribution of config files given alone (default: the one `--version` names).
    #[arg(long)]
    pub(crate) distribution: Option<String>,
    /// Logs of the servers, to confirm what each ran with (files, folders, bundles, as
    /// `repro inspect` takes them).
    #[arg(long = "logs", value_name = "PATH")]
    pub(crate) logs: Vec<PathBuf>,
    /// A server's log, named (repeatable): `--node etcd-2=etcd-2.log`.
    #[arg(long = "node", value_name = "NAME=FILE", value_parser = parse_named)]
    pub(crate) node_logs: Vec<(String, PathBuf)>,
    /// A change to plan (repeatable): `--change supervisor-metrics=true`.
    #[arg(long = "change", value_name = "KEY=VALUE")]
    pub(crate) changes: Vec<String>,
    /// With --change: write the plan as a check file `repro run` rehearses.
    #[arg(long = "check-out", value_name = "FILE", requires = "changes")]
    pub(crate) check_out: Option<PathBuf>,
    /// With --check-out: the topology the check is written for.
    #[arg(long, default_value = "etcd-split")]
    pub(crate) topology: String,
    #[arg(long, value_enum, default_value = "text")]
    pub(crate) format: AuditFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum InspectFormat {
    /// A table for a terminal.
    Table,
    /// Versioned JSON (schema/inspect.schema.json).
    Json,
    /// Markdown to paste into a k3s issue.
    Markdown,
}

#[derive(Debug, Args)]
pub(crate) struct InspectArgs {
    /// Log files, folders of them, repro results folders or bundles, log-collector folders or
    /// archives; `-` reads standard input.
    pub(crate) paths: Vec<PathBuf>,
    /// A log file of one node, named (repeatable): `--node etcd-2=etcd-2.log`.
    #[arg(long = "node", value_name = "NAME=FILE", value_parser = parse_named)]
    pub(crate) nodes: Vec<(String, PathBuf)>,
    /// A node's own k3s config (repeatable): `--config etcd-2=config.yaml`; a `.service` file
    /// gives the flags of its ExecStart.
    #[arg(long = "config", value_name = "NODE=FILE", value_parser = parse_named)]
    pub(crate) configs: Vec<(String, PathBuf)>,
    #[arg(long, value_enum, default_value = "table")]
    pub(crate) format: InspectFormat,
    /// With the table: every signal's reason and evidence lines under each boot.
    #[arg(long)]
    pub(crate) evidence: bool,
    /// A margin after every deciding `settled-by` line, as in `run` (default: none after a line
    /// k3s orders after the feature's own, e.g. `Running kubelet` for the registry; 3s after a
    /// hint).
    #[arg(long, value_parser = parse_settle)]
    pub(crate) settle: Option<Duration>,
    /// The logs are an excerpt (lines were left out): never conclude `down` by the settle rule.
    #[arg(long)]
    pub(crate) excerpt: bool,
    /// A value to redact wherever it occurs (repeatable), e.g. the cluster token.
    #[arg(long = "secret", value_name = "VALUE")]
    pub(crate) secrets: Vec<String>,
    /// A progress bar on stderr (auto: on a terminal outside CI).
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) progress: Progress,
}

/// The longest `--timeout`/`--settle` taken: longer is a typo, and a deadline this far out still
/// fits an `Instant` (a huge one would overflow it).
const LONGEST_WAIT: Duration = Duration::from_secs(7 * 24 * 3600);

/// `--timeout`: a duration above zero (zero would create the cluster and then time out on the
/// first boot, exit 3, instead of refusing the flag before anything exists).
fn parse_timeout(s: &str) -> Result<Duration, String> {
    let d = parse_wait(s)?;
    if d.is_zero() {
        return Err("the timeout must be above zero, e.g. 5m".to_string());
    }
    Ok(d)
}

/// `--mtu`: what Linux accepts for an Ethernet bridge (68, IPv4's minimum, to 65535).
fn parse_mtu(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(m) if (68..=65535).contains(&m) => Ok(m),
        _ => Err("an MTU is a number from 68 to 65535, e.g. 1400".to_string()),
    }
}

/// `--settle`: a duration, zero allowed (no margin).
fn parse_settle(s: &str) -> Result<Duration, String> {
    parse_wait(s)
}

fn parse_wait(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s)
        .map_err(|e| format!("{e}; write a number and a unit, e.g. 90s, 5m"))?;
    if d > LONGEST_WAIT {
        return Err("at most 7 days".to_string());
    }
    Ok(d)
}

/// `--image-archive`: an existing regular file (links followed). `/dev/zero` or a FIFO would
/// be streamed to the engine forever, after the run had begun; refused here, exit 2.
fn parse_archive(s: &str) -> Result<PathBuf, String> {
    let give = "the .tar written by `docker save` or a k3s air-gap tarball";
    crate::safe_fs::regular_file_arg(s, give)
}

/// `NAME=FILE`.
fn parse_named(s: &str) -> Result<(String, PathBuf), String> {
    match s.split_once('=') {
        Some((n, f)) if !n.trim().is_empty() && !f.is_empty() => {
            Ok((n.trim().to_string(), PathBuf::from(f)))
        }
        _ => Err(format!(
            "`{s}` is not NAME=FILE (e.g. etcd-2=logs/etcd-2.log)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits() {
        assert!(parse_timeout("0").is_err());
        assert!(parse_timeout("0s").is_err());
        assert_eq!(parse_timeout("90s"), Ok(Duration::from_secs(90)));
        assert!(parse_timeout("8d").is_err());
        assert_eq!(parse_settle("0s"), Ok(Duration::ZERO));
        assert!(parse_settle("1000000y").is_err());
    }
}
