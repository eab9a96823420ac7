//! `repro clean [--run ID | --all]`: remove what runs left (after `--keep`, or a killed run).

use crate::cli::{CleanArgs, Global};
use crate::docker::{self, Engine};
use crate::exit;

pub async fn run(_g: &Global, args: &CleanArgs) -> anyhow::Result<i32> {
    if args.run.is_none() && !args.all {
        eprintln!("repro clean: say what to remove: --run <id> (printed by `repro run`) or --all");
        return Ok(exit::BAD_INPUT);
    }
    let engine = match Engine::connect().await {
        Ok(e) => e,
        Err(e) => {
            eprintln!("repro: {e}");
            return Ok(exit::INFRA);
        }
    };
    let removed = match &args.run {
        Some(id) => engine.remove_labelled(docker::LABEL_RUN, Some(id)).await,
        None => engine.remove_labelled(docker::LABEL_MANAGED, None).await,
    };
    println!(
        "removed {} container(s), {} network(s), {} volume(s)",
        removed.containers, removed.networks, removed.volumes
    );
    for e in &removed.errors {
        eprintln!("repro clean: {e}");
    }
    Ok(if removed.errors.is_empty() {
        exit::OK
    } else {
        exit::INFRA
    })
}
