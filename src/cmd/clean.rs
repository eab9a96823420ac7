//! `repro clean [--run ID | --all]`: remove what runs left (after `--keep`, or a killed run).

use crate::cli::{CleanArgs, Format, Global};
use crate::docker::{self, DockerApi};
use crate::error::Error;
use crate::exit::Exit;

pub(crate) async fn run(_g: &Global, args: &CleanArgs) -> Result<Exit, Error> {
    if args.run.is_none() && !args.all {
        return Err(Error::usage(
            "say what to remove: --run <id> (printed by `repro run`) or --all",
        ));
    }
    let engine = docker::connect().await?;
    let removed = match &args.run {
        Some(id) => engine.remove_labelled(docker::LABEL_RUN, Some(id)).await,
        None => engine.remove_labelled(docker::LABEL_MANAGED, None).await,
    };
    match args.format {
        Format::Text => super::common::out(&format!(
            "removed {} container(s), {} network(s), {} volume(s)",
            removed.containers, removed.networks, removed.volumes
        )),
        // The problems stay on stderr too (exit 3), as the error they are.
        Format::Json => {
            let doc = serde_json::json!({
                "kind": "repro-clean",
                "run": args.run,
                "removed": {
                    "containers": removed.containers,
                    "networks": removed.networks,
                    "volumes": removed.volumes,
                },
                "problems": removed.errors,
            });
            let _ = super::common::write_stdout(&format!("{doc:#}\n"));
        }
    }
    if removed.errors.is_empty() {
        Ok(Exit::Ok)
    } else {
        Err(Error::Clean(removed.errors))
    }
}
