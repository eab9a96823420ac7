//! `repro clean [--run ID | --all | --orphans]`: remove what runs left (after `--keep`, or a
//! killed run).

use std::collections::BTreeMap;

use crate::cli::{CleanArgs, Format, Global};
use crate::docker::owner::{self, Owner};
use crate::docker::{self, DockerApi, Engine, Removed};
use crate::error::Error;
use crate::exit::Exit;

pub(crate) async fn run(_g: &Global, args: &CleanArgs) -> Result<Exit, Error> {
    if args.run.is_none() && !args.all && !args.orphans {
        return Err(Error::usage(
            "say what to remove: --run <id> (printed by `repro run`), --orphans (runs whose process is gone) or --all",
        ));
    }
    let engine = docker::connect().await?;
    let (removed, orphans) = match &args.run {
        Some(id) => (
            engine.remove_labelled(docker::LABEL_RUN, Some(id)).await,
            None,
        ),
        None if args.orphans => {
            let o = orphans(&engine).await?;
            (o.total(), Some(o))
        }
        None => (
            engine.remove_labelled(docker::LABEL_MANAGED, None).await,
            None,
        ),
    };
    match args.format {
        Format::Text => {
            for r in orphans.iter().flat_map(|o| &o.runs) {
                super::common::out(&r.line());
            }
            super::common::out(&format!(
                "removed {} container(s), {} network(s), {} volume(s)",
                removed.containers, removed.networks, removed.volumes
            ))
        }
        // The problems stay on stderr too (exit 3), as the error they are.
        Format::Json => {
            let mut doc = serde_json::json!({
                "kind": "repro-clean",
                "run": args.run,
                "removed": {
                    "containers": removed.containers,
                    "networks": removed.networks,
                    "volumes": removed.volumes,
                },
                "problems": removed.errors,
            });
            if let Some(o) = &orphans {
                doc["orphans"] =
                    serde_json::json!(o.runs.iter().map(RunSeen::json).collect::<Vec<_>>());
            }
            let _ = super::common::write_stdout(&format!("{doc:#}\n"));
        }
    }
    if removed.errors.is_empty() {
        Ok(Exit::Ok)
    } else {
        Err(Error::Clean(removed.errors))
    }
}

/// The runs `--orphans` looked at: each removed (its owner is gone) or left, with why.
struct Orphans {
    runs: Vec<RunSeen>,
}

/// One run's objects as the engine lists them, and what `--orphans` did with them.
struct RunSeen {
    run: String,
    check: Option<String>,
    /// What it has on the engine: `4 container(s), 16 volume(s)`.
    objects: String,
    /// Why it was removed (`Ok`) or left (`Err`, and whether `--run` is the way to remove it:
    /// not for a run in progress).
    decision: Result<String, (String, bool)>,
    removed: Option<Removed>,
}

impl Orphans {
    fn total(&self) -> Removed {
        let mut t = Removed::default();
        for r in self.runs.iter().filter_map(|r| r.removed.as_ref()) {
            t.containers += r.containers;
            t.networks += r.networks;
            t.volumes += r.volumes;
            t.errors.extend(r.errors.iter().cloned());
        }
        t
    }
}

impl RunSeen {
    fn line(&self) -> String {
        let check = self
            .check
            .as_deref()
            .map(|c| format!(" ({c})"))
            .unwrap_or_default();
        match &self.decision {
            Ok(why) => format!("removed run {}{check}, {}: {why}", self.run, self.objects),
            Err((why, true)) => format!(
                "left run {}{check}, {}: {why}; `repro clean --run {}` removes it",
                self.run, self.objects, self.run
            ),
            Err((why, false)) => format!("left run {}{check}, {}: {why}", self.run, self.objects),
        }
    }

    fn json(&self) -> serde_json::Value {
        let (removed, why) = match &self.decision {
            Ok(w) => (true, w),
            Err((w, _)) => (false, w),
        };
        serde_json::json!({
            "run": self.run, "check": self.check, "objects": self.objects,
            "removed": removed, "why": why,
        })
    }
}

/// Every run with objects on the engine, grouped by its run label: a kept one and one whose
/// owner is alive or cannot be seen are left; one whose owner is provably gone is removed.
async fn orphans(engine: &Engine) -> Result<Orphans, Error> {
    #[derive(Default)]
    struct Group {
        check: Option<String>,
        owner: Option<String>,
        kept: bool,
        /// Objects by kind.
        count: BTreeMap<&'static str, usize>,
    }
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    for o in engine.objects_labelled(docker::LABEL_MANAGED).await? {
        let Some(run) = o.labels.get(docker::LABEL_RUN) else {
            continue;
        };
        let g = groups.entry(run.clone()).or_default();
        g.check = g
            .check
            .take()
            .or_else(|| o.labels.get(docker::LABEL_CHECK).cloned());
        g.owner = g
            .owner
            .take()
            .or_else(|| o.labels.get(owner::LABEL_OWNER).cloned());
        g.kept |= o.labels.contains_key(owner::LABEL_KEPT);
        *g.count.entry(o.kind).or_default() += 1;
    }
    let (here, local) = (
        owner::this_process(),
        crate::doctor::is_local(&docker::endpoint()),
    );
    let mut runs = Vec::new();
    for (run, g) in groups {
        let decision = if g.kept {
            Err(("kept with --keep".to_string(), true))
        } else {
            match owner::judge(g.owner.as_deref(), here, local, owner::start_time) {
                Owner::Gone(why) => Ok(why),
                Owner::Alive => Err(("its process still runs".to_string(), false)),
                Owner::Unknown(why) => Err((why, true)),
            }
        };
        let removed = match decision {
            Ok(_) => Some(engine.remove_labelled(docker::LABEL_RUN, Some(&run)).await),
            Err(_) => None,
        };
        let objects = (g.count.iter())
            .map(|(kind, n)| format!("{n} {kind}(s)"))
            .collect::<Vec<_>>()
            .join(", ");
        runs.push(RunSeen {
            run,
            check: g.check,
            objects,
            decision,
            removed,
        });
    }
    Ok(Orphans { runs })
}
