//! One module per subcommand. Each returns the process exit code (see `crate::exit`).

pub mod bisect;
pub mod clean;
pub mod inspect;
pub mod list;
pub mod matrix;
pub mod merge;
pub mod plan;
pub mod redact;
pub mod report;
pub mod run;
pub mod sim;
pub mod validate;

use crate::cli::{Cli, Command};
use crate::exit;

/// Runs a parsed command line and returns the exit code.
pub fn main(cli: Cli) -> i32 {
    init_tracing(cli.global.verbose);
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("repro: failed to start the async runtime: {e}");
            return exit::INFRA;
        }
    };
    let g = cli.global;
    let result = rt.block_on(async move {
        match cli.command {
            Command::Validate(a) => validate::run(&g, &a),
            Command::List => list::run(&g),
            Command::Plan(a) => plan::run(&g, &a),
            Command::Run(a) => run::run(&g, &a).await,
            Command::Clean(a) => clean::run(&g, &a).await,
            Command::Sim(c) => sim::run(&g, &c).await,
            Command::Report(a) => report::run(&g, &a),
            Command::Redact(a) => redact::run(&g, &a),
            Command::Matrix(a) => matrix::run(&g, &a).await,
            Command::Bisect(a) => bisect::run(&g, &a).await,
            Command::Merge(a) => merge::run(&g, &a).await,
            Command::Inspect(a) => inspect::run(&g, &a),
        }
    });
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("repro: {e:#}");
            exit::INFRA
        }
    }
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
