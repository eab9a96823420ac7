//! `repro explore … --plan` (#39): what the campaign would cost, with no engine — its sequences,
//! runs with minimisation and confirmation, and wall time at real k3s's pace on this host with
//! `--jobs`, with and without restore, and on `--runners`. The estimate is `explore::cost`'s;
//! the first start's critical path is `repro plan`'s, of the campaign's first sequence.

use std::path::PathBuf;

use crate::cli::{ExploreArgs, Format, Global};
use crate::error::Error;
use crate::exit::Exit;
use crate::explore::cost::{self, Estimate, Input};
use crate::explore::generate::Bug;
use crate::explore::{self, Space, State};
use crate::run::Target;
use crate::scenario::Topology;

use super::common::out;

pub(crate) fn print(
    g: &Global,
    a: &ExploreArgs,
    topo: &Topology,
    space: &Space,
    state: &State,
    (jobs, why): (usize, Option<String>),
) -> Result<Exit, Error> {
    let left: Vec<&explore::SeqRecord> = (state.sequences.iter())
        .filter(|s| s.run.is_none())
        .filter(|s| a.sequences.is_empty() || a.sequences.contains(&s.sequence.id))
        .collect();
    let first_start = match left.first() {
        Some(rec) => first_start_seconds(g, a, (space, state.strategy), rec)?,
        None => 0.0,
    };
    let e = cost::estimate(&Input {
        sequences: left.iter().map(|s| &s.sequence).collect(),
        nodes: &space.nodes,
        first_start_seconds: first_start,
        defects: state.keys.len() * state.versions.len(),
        confirm: state.confirm,
        minimise: !a.no_minimise,
        budget_runs: a.budget.0,
        jobs,
        runners: a.runners.map(|k| k as usize),
    });
    match a.format {
        Format::Json => out(&serde_json::to_string_pretty(&serde_json::json!({
            "topology": topo.name,
            "versions": state.versions,
            "keys": state.keys,
            "first_start_seconds": first_start,
            "jobs_why": why,
            "estimate": e,
        }))
        .map_err(|e| Error::Other(e.into()))?),
        Format::Text => out(&text(topo, state, &e, first_start, why)),
    }
    Ok(Exit::Ok)
}

/// The first start's critical path at real pace (pace 1), from `repro plan`'s own plan of the
/// first sequence's check (written into a temporary folder, removed after).
pub(super) fn first_start_seconds(
    g: &Global,
    a: &ExploreArgs,
    (space, strategy): (&Space, explore::Strategy),
    rec: &explore::SeqRecord,
) -> Result<f64, Error> {
    let dir: PathBuf =
        std::env::temp_dir().join(format!("repro-explore-plan-{}", crate::run::random_hex(4)));
    let file = dir.join("first.yaml");
    let written = std::fs::create_dir(&dir).and_then(|()| {
        std::fs::write(
            &file,
            explore::sequence_check(space, strategy, &rec.sequence, &Bug::new()),
        )
    });
    written.map_err(|e| Error::Write {
        path: file.clone(),
        source: e,
    })?;
    let target = Target {
        version: Some(rec.version.clone()),
        ..Target::of(file.display().to_string(), a.sim, Some(1.0))
    };
    let resolved = super::common::resolve(g.root.as_deref(), &target);
    let _ = std::fs::remove_dir_all(&dir);
    let (_, plan) = resolved?;
    let path = crate::plan::critical_path(&plan, 1.0);
    Ok((path.boots.iter())
        .filter(|b| b.step == 0)
        .map(|b| b.seconds)
        .sum())
}

fn minutes(s: f64) -> String {
    if s >= 3600.0 {
        format!("{:.1} h", s / 3600.0)
    } else {
        format!("{:.0} min", (s / 60.0).max(1.0))
    }
}

fn text(
    topo: &Topology,
    state: &State,
    e: &Estimate,
    first_start: f64,
    why: Option<String>,
) -> String {
    let mut t = format!(
        "repro explore --plan: {} on {} (keys: {})\n",
        topo.name,
        state.versions.join(", "),
        state.keys.join(", ")
    );
    t.push_str(&format!("sequences to run: {}\n", e.sequences));
    t.push_str(&format!(
        "runs expected: {} ({} sequences + {} defects assumed × ({} distinguishing + {} ddmin + {} confirmation runs); one defect per key and version, the plan cannot know)\n",
        e.runs, e.sequence_runs, e.defects_assumed, e.distinguish_runs_per_defect, e.ddmin_runs_per_defect, e.confirm_runs_per_defect
    ));
    if let Some(b) = e.budget_runs {
        t.push_str(&format!(
            "budget: runs={b} stops the campaign before its end (the times below are for {b} runs)\n"
        ));
    }
    t.push_str(&format!(
        "a run at real k3s pace: {:.0} s on average (first start {first_start:.1} s on the critical path ×{} for the engine, then per step its node's restart +{:.1} s for the engine and the settle window; +{} s to create and tear down)\n",
        e.seconds_per_run,
        cost::PATH_FACTOR,
        cost::step_fixed_seconds(),
        cost::RUN_OVERHEAD_SECONDS
    ));
    if let Some(why) = why {
        t.push_str(&format!("{why}\n"));
    }
    t.push_str(&format!(
        "wall time at real pace (restore: ×{} faster per run, measured on the stand-in, after one baseline made):\n",
        e.restore_speedup
    ));
    let mut rows: Vec<&cost::Wall> = e.host.iter().collect();
    rows.extend(e.runners.as_ref());
    for w in rows {
        let place = if w.runners == 1 {
            "this host".to_string()
        } else {
            format!("{} runners", w.runners)
        };
        t.push_str(&format!(
            "  {place:<12} --jobs {:<3} {:>8}   with restore {:>8}\n",
            w.jobs,
            minutes(w.seconds),
            minutes(w.seconds_with_restore)
        ));
    }
    t.push_str("nothing was run (no engine needed)");
    t
}
