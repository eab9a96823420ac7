//! One module per subcommand, plus the helpers they share (`common`). Each returns how a
//! command that completed came out (an [`Exit`]), or the error it stopped on; `main` alone turns
//! either into a number (`crate::exit`).

mod audit;
mod bisect;
mod clean;
pub(crate) mod common;
mod docs;
mod doctor;
mod explore;
mod explore_plan;
mod init;
mod inspect;
mod list;
mod matrix;
mod merge;
mod nightly_issues;
mod plan;
mod redact;
mod report;
mod run;
mod runs;
mod sim;
mod validate;
mod verify;
mod version;

use crate::cli::{Cli, Command};
use crate::error::Error;
use crate::exit::Exit;

/// Runs a parsed command line.
pub fn dispatch(cli: Cli) -> Result<Exit, Error> {
    init_tracing(cli.global.verbose);
    // A check's `upgrade: {node: {commit: SHA}}` is fetched when the check loads, as
    // `--k3s-commit` is before a run: downloaded, verified, cached.
    crate::build_file::set_commit_builds(|distro, sha| {
        crate::builds::ci::fetch(distro, sha, false)
            .map(|f| (f.path, f.url))
            .map_err(|e| e.to_string())
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| anyhow::anyhow!("failed to start the async runtime: {e}"))?;
    let g = cli.global;
    rt.block_on(async move {
        match cli.command {
            Command::Validate(a) => validate::run(&g, &a),
            Command::List(a) => list::run(&g, &a),
            Command::Plan(a) => plan::run(&g, &a).await,
            Command::Run(a) => run::run(&g, &a).await,
            Command::Verify(a) => verify::run(&g, &a).await,
            Command::Clean(a) => clean::run(&g, &a).await,
            Command::Runs(a) => runs::run(&a).await,
            Command::Sim(c) => sim::run(&g, &c).await,
            Command::Report(a) => report::run(&g, &a),
            Command::Redact(a) => redact::run(&g, &a),
            Command::Matrix(a) => matrix::run(&g, &a).await,
            Command::Bisect(a) => bisect::run(&g, &a).await,
            Command::Merge(a) => merge::run(&g, &a).await,
            Command::NightlyIssues(a) => nightly_issues::run(&g, &a),
            Command::Inspect(a) => inspect::run(&g, &a),
            Command::Doctor(a) => doctor::run(&g, &a).await,
            Command::Explore(a) => explore::run(&g, &a).await,
            Command::Audit(a) => audit::run(&g, &a).await,
            Command::Version(a) => version::run(&g, &a),
            Command::Init(a) => init::run(&a),
            Command::Completions { shell } => docs::completions(shell),
            Command::Man { out } => docs::man(out.as_deref()),
        }
    })
}

fn init_tracing(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "repro=info",
        _ => "repro=debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
