//! Command-line arguments (clap): the raw flags, and their translation into the configuration
//! a run is given ([`RunConfig`]) — once, here. Each command lives in `crate::cmd`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::result::Outcome;
use crate::run::{self, RunConfig};

#[derive(Debug, Parser)]
#[command(
    name = "repro",
    version = env!("REPRO_VERSION_LINE"),
    about = "Reproduce k3s configuration-order bugs end to end on k3s containers"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Args)]
pub struct Global {
    /// Folder with checks/ and topologies/ (default: the current directory if it has them,
    /// else the files built into repro).
    #[arg(long, global = true, env = "REPRO_ROOT")]
    pub root: Option<PathBuf>,
    /// More log output from repro itself (-v, -vv); RUST_LOG works too.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check scenario files and report every problem with file, line and column.
    Validate(ValidateArgs),
    /// List the checks and topologies.
    List(ListArgs),
    /// Show what a run would do, without Docker.
    Plan(PlanArgs),
    /// Run a check on real containers and decide the verdict.
    Run(RunArgs),
    /// Remove containers, networks and volumes left by runs (`--keep`, crashes).
    Clean(CleanArgs),
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
pub struct ValidateArgs {
    /// Files to check (default: every shipped check, topology and signals file).
    pub files: Vec<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct Target {
    /// The check: a name from `repro list`, or a path to a check file.
    pub check: String,
    /// Use this topology instead of the check's own.
    #[arg(long)]
    pub topology: Option<String>,
    /// k3s version, e.g. v1.33.4+k3s1 (default: the topology's).
    #[arg(long, env = "REPRO_K3S_VERSION")]
    pub k3s_version: Option<String>,
    /// Image to run instead of rancher/k3s:<version>.
    #[arg(long, conflicts_with = "sim", value_parser = parse_image)]
    pub image: Option<String>,
    /// Use the k3s stand-in image for the version (built on the spot if missing).
    #[arg(long)]
    pub sim: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// A table for people, or JSON for scripts.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub target: Target,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

impl Target {
    pub fn to_target(&self) -> run::Target {
        run::Target {
            check: self.check.clone(),
            topology: self.topology.clone(),
            k3s_version: self.k3s_version.clone(),
            image: self.image.clone(),
            sim: self.sim,
        }
    }
}

/// The outcome `--expect` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Expect {
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
pub enum Progress {
    Auto,
    Always,
    Never,
}

impl Progress {
    /// Live lines or plain ones. Some CI systems give a pseudo-terminal: live only on a real
    /// one outside CI.
    pub fn is_live(self) -> bool {
        use std::io::IsTerminal;
        match self {
            Progress::Always => true,
            Progress::Never => false,
            Progress::Auto => std::io::stderr().is_terminal() && !is_ci::cached(),
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct RunOptions {
    /// The outcome that counts as success (exit 0). `auto`: what the check's `fixed-in`
    /// predicts for the version (`repro plan` shows it and why): `reproduced` before the first
    /// fixed release of its line, `fixed` from it on; a line newer than every `fixed-in` entry
    /// counts as fixed, an older one as reproduced. Where `fixed-in` cannot predict (the check
    /// has none), `auto` means `fixed`.
    #[arg(long, value_enum, default_value = "auto")]
    pub expect: Expect,
    /// How long one node may take to become ready (or die) after a start or restart.
    #[arg(long, value_parser = parse_timeout, default_value = "5m")]
    pub timeout: Duration,
    /// A margin after every deciding settled-by line (default: none after a line k3s orders after
    /// the feature's own, 3s after a hint; overrides the check's `settle:`).
    #[arg(long, value_parser = parse_settle)]
    pub settle: Option<Duration>,
    /// Live progress lines on a terminal (auto: only on a terminal outside CI).
    #[arg(long, value_enum, default_value = "auto")]
    pub progress: Progress,
    /// Leave the cluster running afterwards and print how to inspect and remove it.
    #[arg(long)]
    pub keep: bool,
    /// Load this image archive (docker save / k3s air-gap tarball) before the run.
    #[arg(long, value_parser = parse_archive)]
    pub image_archive: Option<PathBuf>,
    /// Where run folders go.
    #[arg(long, default_value = "results", env = "REPRO_RESULTS")]
    pub results: PathBuf,
    /// Rebuild the stand-in image even if it exists (with --sim).
    #[arg(long)]
    pub rebuild_sim: bool,
    /// Run nodes privileged, as k3d runs real k3s. `auto`: privileged unless the image says it
    /// needs no privileges (label `io.repro.privileged=false`, set by the stand-in image).
    #[arg(long, value_enum, default_value = "auto")]
    pub privileged: Privileged,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Privileged {
    Auto,
    Always,
    Never,
}

impl From<Privileged> for run::Privileged {
    fn from(p: Privileged) -> run::Privileged {
        match p {
            Privileged::Auto => run::Privileged::Auto,
            Privileged::Always => run::Privileged::Always,
            Privileged::Never => run::Privileged::Never,
        }
    }
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub target: Target,
    #[command(flatten)]
    pub options: RunOptions,
    /// The summary on stdout: a table for people, or one JSON object for scripts (progress
    /// stays on stderr either way).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

impl RunArgs {
    /// The run's configuration, from the flags and the command line as typed.
    pub fn to_config(&self, argv: Vec<String>) -> RunConfig {
        let o = &self.options;
        RunConfig {
            target: self.target.to_target(),
            expect: o.expect.into(),
            timeout: o.timeout,
            settle: o.settle,
            keep: o.keep,
            image_archive: o.image_archive.clone(),
            results: o.results.clone(),
            rebuild_sim: o.rebuild_sim,
            privileged: o.privileged.into(),
            argv,
        }
    }
}

#[derive(Debug, Args)]
pub struct CleanArgs {
    /// Remove what one run left (its id, as printed and in result.json).
    #[arg(long, conflicts_with = "all")]
    pub run: Option<String>,
    /// Remove everything any repro run left on this Docker host.
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A results folder (with result.json).
    #[arg(required_unless_present = "validation")]
    pub dir: Option<PathBuf>,
    /// Instead: write the comment that closes an issue ("Validated on …") from a run on a buggy
    /// version and a run on the fixed one (to stdout, or --out).
    #[arg(long, num_args = 2, value_names = ["BUGGY_RUN", "FIXED_RUN"], conflicts_with = "dir")]
    pub validation: Option<Vec<PathBuf>>,
    /// With --validation: write the comment to this file instead of stdout.
    #[arg(long, requires = "validation")]
    pub out: Option<PathBuf>,
    /// Instead of re-rendering: print each case that did not pass as a GitHub Actions
    /// annotation (`::error file=…,line=…::…`) on the check's YAML line.
    #[arg(long, requires = "dir", conflicts_with = "validation")]
    pub github_annotations: bool,
    /// A value to redact wherever it occurs (repeatable), e.g. a token the files do not name.
    #[arg(long = "secret", value_name = "VALUE")]
    pub secrets: Vec<String>,
}

#[derive(Debug, Args)]
pub struct RedactArgs {
    /// File or folder to redact.
    pub path: PathBuf,
    /// Write the redacted copy here instead of changing the input in place.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// A value to redact wherever it occurs (repeatable), e.g. a token the files do not name.
    #[arg(long = "secret", value_name = "VALUE")]
    pub secrets: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum SimCommand {
    /// Build stand-in images (repro.local/k3s-sim:<version>).
    Build {
        /// Versions to build (default: the versions the tests and the demo use).
        #[arg(long = "k3s-version", value_delimiter = ',')]
        versions: Vec<String>,
        /// Rebuild even if the tag exists.
        #[arg(long)]
        rebuild: bool,
    },
}

/// What `repro matrix --emit` prints instead of running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Emit {
    /// `{"include":[{"check":…,"k3s_version":…,"expected":…},…]}` for `strategy.matrix`.
    GithubMatrix,
}

/// The run options that make sense for many runs at once (`matrix`, `bisect`). `--expect` is
/// not among them: each run's expected verdict comes from its check's `fixed-in`. Nor are
/// `--progress` (concurrent runs cannot share a terminal; each run's log is in its folder) and
/// `--keep` (a cluster per run would be left behind).
#[derive(Debug, Clone, Args)]
pub struct BatchRunOptions {
    /// How long one node may take to become ready (or die) after a start or restart.
    #[arg(long, value_parser = parse_timeout, default_value = "5m")]
    pub timeout: Duration,
    /// A margin after every deciding settled-by line (overrides the checks' `settle:`).
    #[arg(long, value_parser = parse_settle)]
    pub settle: Option<Duration>,
    /// Load this image archive (docker save / k3s air-gap tarball) once, before the runs.
    #[arg(long, value_parser = parse_archive)]
    pub image_archive: Option<PathBuf>,
    /// Where the matrix (or bisect) folder goes; each run's folder is inside it.
    #[arg(long, default_value = "results", env = "REPRO_RESULTS")]
    pub results: PathBuf,
    /// Rebuild the stand-in images once before the runs (with --sim).
    #[arg(long)]
    pub rebuild_sim: bool,
    /// Run nodes privileged, as k3d runs real k3s (see `repro run --help`).
    #[arg(long, value_enum, default_value = "auto")]
    pub privileged: Privileged,
}

impl BatchRunOptions {
    /// The configuration of one run of the batch: `target`, expecting `expect`, results under
    /// `results`.
    pub fn to_config(
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
            privileged: self.privileged.into(),
            argv,
        }
    }
}

#[derive(Debug, Args)]
pub struct MatrixArgs {
    /// Checks to run, comma-separated (default: every check with `fixed-in`).
    #[arg(long, value_delimiter = ',')]
    pub checks: Vec<String>,
    /// k3s versions, comma-separated; `stable`, `latest` or `v1.33` name a release channel
    /// (resolved on the k3s channel server: needs network access).
    #[arg(long, value_delimiter = ',', required = true)]
    pub k3s_versions: Vec<String>,
    /// Runs at once.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub jobs: u16,
    /// Use the k3s stand-in images (built on the spot if missing).
    #[arg(long)]
    pub sim: bool,
    /// Print the matrix for a CI fan-out instead of running it (no Docker needed).
    #[arg(long, value_enum)]
    pub emit: Option<Emit>,
    /// `json`: stdout is the summary.json document alone (the table and progress lines go to
    /// stderr).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    #[command(flatten)]
    pub options: BatchRunOptions,
}

#[derive(Debug, Args)]
pub struct BisectArgs {
    /// The check (it needs a bug signature: `bug:` in its steps).
    pub check: String,
    /// A release whose verdict is the "good" one (trusted, not run).
    #[arg(long)]
    pub good: String,
    /// A release whose verdict is the "bad" one (run first to learn that verdict).
    #[arg(long)]
    pub bad: String,
    /// Ordered release list (default: releases/k3s.yaml of the project, else the shipped one).
    #[arg(long)]
    pub versions: Option<PathBuf>,
    /// Use the k3s stand-in images (built on the spot if missing).
    #[arg(long)]
    pub sim: bool,
    #[command(flatten)]
    pub options: BatchRunOptions,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Results folders: run folders (result.json), matrix folders (summary.json), or folders
    /// holding either at any depth (e.g. downloaded CI artifacts).
    #[arg(required_unless_present = "plan")]
    pub dirs: Vec<PathBuf>,
    /// The planned matrix (the `repro matrix --emit github-matrix` JSON, or a summary.json):
    /// every planned cell that wrote nothing shows as NOT RUN.
    #[arg(long, value_name = "FILE")]
    pub plan: Option<PathBuf>,
    /// Where the merged summary.json and junit.xml go.
    #[arg(long, default_value = "results/merged")]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct NightlyIssuesArgs {
    /// The merged summary.json (`repro merge … --out DIR` writes DIR/summary.json).
    pub summary: PathBuf,
    /// The workflow run's page, linked from every issue (default: from GITHUB_SERVER_URL,
    /// GITHUB_REPOSITORY and GITHUB_RUN_ID).
    #[arg(long)]
    pub run_url: Option<String>,
    /// The label of the nightly's issues; only issues with it are read or changed.
    #[arg(long, default_value = crate::nightly::DEFAULT_LABEL)]
    pub label: String,
    /// A cell's artifact is named this prefix + `<check>-<version>` (as nightly.yml uploads it).
    #[arg(long, default_value = "results-")]
    pub artifact_prefix: String,
    /// The GitHub CLI to call.
    #[arg(long, env = "REPRO_GH", default_value = "gh")]
    pub gh: PathBuf,
    /// Read the existing issues, print what would change, change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InspectFormat {
    /// A table for a terminal.
    Table,
    /// Versioned JSON (schema/inspect.schema.json).
    Json,
    /// Markdown to paste into a k3s issue.
    Markdown,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// Log files, folders of them, repro results folders or bundles, log-collector folders or
    /// archives; `-` reads standard input.
    pub paths: Vec<PathBuf>,
    /// A log file of one node, named (repeatable): `--node etcd-2=etcd-2.log`.
    #[arg(long = "node", value_name = "NAME=FILE", value_parser = parse_named)]
    pub nodes: Vec<(String, PathBuf)>,
    /// A node's own k3s config (repeatable): `--config etcd-2=config.yaml`; a `.service` file
    /// gives the flags of its ExecStart.
    #[arg(long = "config", value_name = "NODE=FILE", value_parser = parse_named)]
    pub configs: Vec<(String, PathBuf)>,
    #[arg(long, value_enum, default_value = "table")]
    pub format: InspectFormat,
    /// With the table: every signal's reason and evidence lines under each boot.
    #[arg(long)]
    pub evidence: bool,
    /// A margin after every deciding `settled-by` line, as in `run` (default: none after a line
    /// k3s orders after the feature's own, e.g. `Running kubelet` for the registry; 3s after a
    /// hint).
    #[arg(long, value_parser = parse_settle)]
    pub settle: Option<Duration>,
    /// The logs are an excerpt (lines were left out): never conclude `down` by the settle rule.
    #[arg(long)]
    pub excerpt: bool,
    /// A value to redact wherever it occurs (repeatable), e.g. the cluster token.
    #[arg(long = "secret", value_name = "VALUE")]
    pub secrets: Vec<String>,
    /// A progress bar on stderr (auto: on a terminal outside CI).
    #[arg(long, value_enum, default_value = "auto")]
    pub progress: Progress,
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
    let p = PathBuf::from(s);
    let meta = std::fs::metadata(&p).map_err(|e| format!("cannot read {s}: {e}"))?;
    if !meta.is_file() {
        return Err(format!(
            "{s} is not a regular file; give the .tar written by `docker save` or a k3s air-gap tarball"
        ));
    }
    Ok(p)
}

/// `--image`: a Docker image reference (`[host[:port]/]path[:tag][@sha256:digest]`, path
/// lowercase). A malformed one used to pass, then fail as "cannot pull" (exit 3) at the start of
/// the run; it is bad input.
fn parse_image(s: &str) -> Result<String, String> {
    static REFERENCE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        let component = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*";
        regex::Regex::new(&format!(
            r"^(?:[a-zA-Z0-9](?:[a-zA-Z0-9.-]*[a-zA-Z0-9])?(?::[0-9]+)?/)?{component}(?:/{component})*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})?(?:@sha256:[a-f0-9]{{64}})?$"
        ))
        .expect("static regex")
    });
    if s.len() <= 255 && REFERENCE.is_match(s) {
        Ok(s.to_string())
    } else {
        Err(format!(
            "`{s}` is not an image reference; write e.g. rancher/k3s:v1.33.4-k3s1 or registry.local:5000/k3s:dev (lowercase name, optional :tag)"
        ))
    }
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
    fn image_references() {
        for ok in [
            "rancher/k3s:v1.33.4-k3s1",
            "repro.local/k3s-sim:v1.33.4-k3s1",
            "repro.local/archive-test:12345",
            "registry.local:5000/team/k3s:dev",
            "localhost/k3s",
            "k3s",
            "rancher/k3s@sha256:3f0d1c9e5b7a2d4f6e8c0a1b3d5f7e9c2a4b6d8f0e1c3a5b7d9f1e3c5a7b9d1f",
        ] {
            assert!(parse_image(ok).is_ok(), "{ok}");
        }
        for bad in [
            "Bad Image!",
            "rancher/K3s",
            "",
            "rancher/k3s:",
            "rancher//k3s",
            "-rancher/k3s",
            "rancher/k3s:tag with space",
        ] {
            assert!(parse_image(bad).is_err(), "{bad}");
        }
    }

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
