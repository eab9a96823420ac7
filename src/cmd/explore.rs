//! `repro explore`: parses the search space from the flags (everything checked before Docker),
//! hands the campaign (`crate::explore`) `repro run`'s own way to run one check, and prints.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::catalog::{self, Catalog};
use crate::cli::RunOptions;
use crate::cli::{ExploreArgs, ExploreEmit, Global};
use crate::diag::Diagnostic;
use crate::error::Error;
use crate::exit::Exit;
use crate::explore::generate::KeySpace;
use crate::explore::model::{value_text, Config, NodeInfo, Rules};
use crate::explore::{self, Campaign, RunFailure, RunOne, Space, State, Strategy};
use crate::outcome::Outcome;
use crate::run::{self, FailCause, Target};
use crate::scenario::{Signal, Topology};
use distro::Version;

use super::common::out;

pub(crate) async fn run(g: &Global, a: &ExploreArgs) -> Result<Exit, Error> {
    // One listener for every run of the campaign and the time between them (#42).
    run::interrupt::listen_process();
    if let Some(dir) = &a.recheck {
        return recheck(dir);
    }
    distinct("--version", &a.versions)?;
    distinct("--keys", &a.keys)?;
    distinct("--sequences", &a.sequences)?;
    let root = catalog::find_root(g.root.as_deref());
    let cat = Catalog::load(root.as_deref())?;
    let resumed = match &a.resume {
        Some(dir) => Some(
            explore::campaign_of(dir).map_err(|e| {
                Diagnostic::general(
                    format!("--resume: {e}"),
                    "give a campaign folder (it holds campaign.json), or a folder of one campaign's cells (the explore workflow's downloads)",
                )
            })?,
        ),
        None => None,
    };
    let topo = topology(&cat, resumed.as_ref(), a)?;
    let versions = versions(&topo, resumed.as_ref(), a)?;
    let strategy = resumed.as_ref().map_or(a.strategy, |s| s.strategy);
    let asked = resumed.as_ref().map(|s| s.keys.clone());
    let keys = match strategy {
        Strategy::Config => key_spaces(
            &cat,
            &topo,
            &versions,
            asked.unwrap_or_else(|| a.keys.clone()),
        )?,
        // Lifecycle sequences edit no key.
        Strategy::Lifecycle => lifecycle_args(a, &topo)?,
    };
    let space = space(&topo, keys);
    let version_names: Vec<String> = versions.iter().map(ToString::to_string).collect();
    let (dir, state) = match (resumed, &a.resume) {
        // A resumed campaign goes on under the budget given now, counted from here.
        (Some(s), Some(d)) => (
            d.clone(),
            State {
                budget_runs: a.budget.0,
                budget_seconds: a.budget.1,
                ..s
            },
        ),
        _ => new_campaign(&space, &version_names, a)?,
    };
    known_sequences(&state, &a.sequences)?;
    if a.emit == Some(ExploreEmit::GithubMatrix) {
        out(&matrix(&state).to_string());
        return Ok(Exit::Ok);
    }
    let (jobs, why) = jobs(g, a, &topo, &space, &state)?;
    if a.plan {
        return super::explore_plan::print(g, a, &topo, &space, &state, (jobs, why));
    }
    if let Some(why) = why {
        errln!("repro explore: {why}");
    }
    execute(g, a, (dir, jobs), space, state).await
}

/// Runs at once: `--jobs N`, or `auto` — for a paced stand-in campaign by what its runs cost
/// the engine, the cores and the memory (`cost::paced_sim_jobs`: they mostly wait), else by real
/// k3s's memory per node as `repro matrix` does; then by the inotify instances left.
fn jobs(
    g: &Global,
    a: &ExploreArgs,
    topo: &crate::scenario::Topology,
    space: &Space,
    state: &State,
) -> Result<(usize, Option<String>), Error> {
    use crate::matrix::jobs::{resolve_costs, Jobs, RunCost};
    let cost = RunCost::of_topology(topo, a.sim);
    let left: Vec<&explore::SeqRecord> = (state.sequences.iter())
        .filter(|s| s.run.is_none())
        .filter(|s| a.sequences.is_empty() || a.sequences.contains(&s.sequence.id))
        .collect();
    let input = explore::cost::Input {
        sequences: left.iter().map(|s| &s.sequence).collect(),
        nodes: &space.nodes,
        first_start_seconds: 0.0,
        defects: 0,
        confirm: state.confirm,
        minimise: !a.no_minimise,
        budget_runs: None,
        jobs: 1,
        runners: None,
    };
    // `auto` gives no more slots than the campaign can fill: its sequences, or a minimisation
    // round's candidates when that is wider.
    let runs = explore::cost::most_at_once(&input);
    let pace = a.sim_pace.filter(|p| a.sim && *p > 0.0);
    let (Jobs::Auto, Some(pace)) = (a.jobs, pace) else {
        return Ok(resolve_costs(a.jobs, &[cost], runs));
    };
    let Some(first) = left.first() else {
        return Ok(resolve_costs(Jobs::Fixed(1), &[cost], runs));
    };
    let input = explore::cost::Input {
        first_start_seconds: super::explore_plan::first_start_seconds(
            g,
            a,
            (space, state.strategy),
            first,
        )?,
        ..input
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (n, why) =
        explore::cost::paced_sim_jobs(&input, pace, cores, crate::matrix::jobs::available_mib());
    // The inotify budget still holds (each node holds instances whatever it does).
    let (n, inotify) = resolve_costs(Jobs::Fixed(n), &[cost], runs);
    Ok((
        n,
        Some(inotify.map_or(why.clone(), |i| format!("{why}; {i}"))),
    ))
}

/// A list flag's entries: none empty, none twice (a typo'd or doubled matrix cell would pass
/// green with no run, or do the work twice).
fn distinct(flag: &str, items: &[String]) -> Result<(), Error> {
    let mut seen = std::collections::BTreeSet::new();
    for i in items {
        if i.trim().is_empty() {
            return Err(Diagnostic::general(
                format!("{flag} has an empty entry"),
                format!("give comma-separated values without empty ones, e.g. {flag} a,b"),
            )
            .into());
        }
        if !seen.insert(i.as_str()) {
            return Err(Diagnostic::general(
                format!("{flag} names `{}` twice", crate::term::sanitize(i)),
                "give each once",
            )
            .into());
        }
    }
    Ok(())
}

/// `--sequences`: every id one of the campaign's (`--emit github-matrix` lists them).
fn known_sequences(state: &State, asked: &[String]) -> Result<(), Error> {
    let ids: std::collections::BTreeSet<&str> = (state.sequences.iter())
        .map(|s| s.sequence.id.as_str())
        .collect();
    match asked.iter().find(|a| !ids.contains(a.as_str())) {
        Some(unknown) => Err(Diagnostic::general(
            format!(
                "--sequences: the campaign has no sequence `{}`",
                crate::term::sanitize(unknown)
            ),
            format!(
                "give ids the campaign plans (`repro explore … --emit github-matrix` lists them), e.g. {}",
                ids.iter().take(3).copied().collect::<Vec<_>>().join(",")
            ),
        )
        .into()),
        None => Ok(()),
    }
}

/// The topology searched: the resumed campaign's, else `--topology`.
fn topology(cat: &Catalog, resumed: Option<&State>, a: &ExploreArgs) -> Result<Topology, Error> {
    let name = resumed
        .map(|s| s.topology.clone())
        .or_else(|| a.topology.clone())
        .unwrap_or_default();
    cat.topology(&name).cloned().ok_or_else(|| {
        Diagnostic::general(
            format!("no topology named `{name}`"),
            format!(
                "use one of: {}",
                cat.topologies
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
        .into()
    })
}

/// The versions every sequence runs on: the resumed campaign's, `--version`, else the
/// topology's; each of the topology's distribution.
fn versions(
    topo: &Topology,
    resumed: Option<&State>,
    a: &ExploreArgs,
) -> Result<Vec<Version>, Error> {
    let args: Vec<String> = match resumed {
        Some(s) => s.versions.clone(),
        None if a.versions.is_empty() => vec![topo.default_version.to_string()],
        None => a.versions.clone(),
    };
    let example = topo.distro.facts().example_version;
    args.iter()
        .map(|v| {
            let parsed: Version = v.parse().map_err(|e: distro::VersionError| {
                Diagnostic::general(
                    format!("--version: {e}"),
                    format!("e.g. --version {example}"),
                )
            })?;
            if parsed.distro != topo.distro {
                return Err(Diagnostic::general(
                    format!(
                        "--version: `{parsed}` is a {} version, but topology `{}` runs {}",
                        parsed.distro, topo.name, topo.distro
                    ),
                    format!("give a {} version, e.g. {example}", topo.distro),
                )
                .into());
            }
            Ok(parsed)
        })
        .collect()
}

/// Whether a run of `v` can observe the signal at all: it exists there and a line of it is
/// printed there (`since:`/`until:` on its patterns), or it has a probe.
fn observable_in(s: &Signal, v: &Version) -> bool {
    let lines = s.up.iter().chain(&s.down).chain(&s.value);
    s.exists_in(v) && (s.probe_for(v).is_some() || lines.into_iter().any(|p| p.applies_to(v)))
}

/// The two values explore searches for `flag`: `false`/`true`, or its `try:` values.
fn values_of(flag: &distro::FlagEntry) -> Option<[String; 2]> {
    match (flag.kind, flag.try_values.as_slice()) {
        (distro::FlagKind::Bool, _) => Some(["false".to_string(), "true".to_string()]),
        (_, [default, other]) => Some([default.clone(), other.clone()]),
        _ => None,
    }
}

/// The keys searched, each with its values and the signal that shows it: `asked`, or by default
/// every key the flags table marks critical or from-server that has values to try and a signal
/// observable on every version.
fn key_spaces(
    cat: &Catalog,
    topo: &Topology,
    versions: &[Version],
    asked: Vec<String>,
) -> Result<Vec<KeySpace>, Error> {
    let signals = cat.signals.for_distro(topo.distro);
    // key -> the first signal that shows it in every version asked, else the first one
    // (disable-cloud-controller: the kubelet's line on k3s, the server's manager on rke2)
    let mut showing: BTreeMap<String, (String, Signal)> = BTreeMap::new();
    for (name, s) in &signals.by_name {
        if let Some(sh) = &s.shows {
            let everywhere = versions.iter().all(|v| observable_in(s, v));
            match showing.get(&sh.key) {
                Some((_, first))
                    if !everywhere || versions.iter().all(|v| observable_in(first, v)) => {}
                _ => {
                    showing.insert(sh.key.clone(), (name.clone(), s.clone()));
                }
            }
        }
    }
    let flags = topo.distro.flags();
    let asked: Vec<String> = if asked.is_empty() {
        flags
            .iter()
            .filter(|f| (f.critical || f.from_server) && values_of(f).is_some())
            .filter(|f| {
                showing
                    .get(&f.name)
                    .is_some_and(|(_, s)| versions.iter().all(|v| observable_in(s, v)))
            })
            .map(|f| f.name.clone())
            .collect()
    } else {
        asked
    };
    let flags_path = topo.distro.facts().flags_path;
    let mut keys = Vec::new();
    for k in &asked {
        let Some(flag) = flags.iter().find(|f| &f.name == k) else {
            return Err(Diagnostic::general(
                format!("--keys: `{k}` is not a {} config key", topo.distro),
                format!("name a key of {flags_path} (e.g. embedded-registry)"),
            )
            .into());
        };
        let Some((signal, sig)) = showing.get(k) else {
            return Err(Diagnostic::general(
                format!("--keys: no signal shows `{k}`"),
                format!(
                    "keys with a signal: {} (a signal says `shows: {{key: {k}}}` in checks/signals.yaml)",
                    showing.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            )
            .into());
        };
        let Some(values) = values_of(flag) else {
            return Err(Diagnostic::general(
                format!(
                    "--keys: `{k}` is not a boolean and {flags_path} gives it no values to try"
                ),
                "add `try: [<default>, <other>]` to its entry there (docs/explore.md)",
            )
            .into());
        };
        keys.push(KeySpace {
            key: k.clone(),
            values,
            boolean: flag.kind == distro::FlagKind::Bool,
            signal: signal.clone(),
            shows: sig.shows.clone().expect("a showing signal"),
            roles: sig.roles.clone(),
        });
    }
    if keys.is_empty() {
        return Err(Diagnostic::general(
            "no key to search",
            "name keys with --keys (each needs a signal with `shows:` in checks/signals.yaml)",
        )
        .into());
    }
    Ok(keys)
}

/// What the campaign searches: the topology's nodes started with the cluster, each node's
/// config, the distribution's rules and the keys.
fn space(topo: &Topology, keys: Vec<KeySpace>) -> Space {
    let nodes: Vec<NodeInfo> = topo
        .nodes
        .iter()
        .filter(|n| !n.deferred)
        .map(|n| NodeInfo {
            name: n.name.clone(),
            role: n.role,
            init: n.init,
            join: n.join.clone(),
        })
        .collect();
    let base: BTreeMap<String, Config> = topo
        .nodes
        .iter()
        .map(|n| {
            let c: Config = topo
                .config
                .iter()
                .chain(n.config.iter())
                .map(|(k, v)| (k.clone(), value_text(v)))
                .collect();
            (n.name.clone(), c)
        })
        .collect();
    Space {
        topology: topo.name.clone(),
        nodes,
        base,
        rules: Rules::of(topo.distro),
        keys,
    }
}

/// `--strategy lifecycle`'s flags: no `--keys` or `--random` (it edits no key, and its
/// sequences are all of them), `--upgrade-to` a version of the topology's distribution. No key
/// is searched.
fn lifecycle_args(a: &ExploreArgs, topo: &Topology) -> Result<Vec<KeySpace>, Error> {
    if !a.keys.is_empty() || a.random > 0 {
        return Err(Diagnostic::general(
            "--keys and --random are the config strategy's: --strategy lifecycle edits no key",
            "leave them out, or use --strategy config",
        )
        .into());
    }
    if let Some(v) = &a.upgrade_to {
        let parsed: Version = v.parse().map_err(|e: distro::VersionError| {
            Diagnostic::general(
                format!("--upgrade-to: {e}"),
                format!("e.g. --upgrade-to {}", topo.distro.facts().example_version),
            )
        })?;
        if parsed.distro != topo.distro {
            return Err(Diagnostic::general(
                format!("--upgrade-to: `{parsed}` is not a {} version", topo.distro),
                format!("give a {} version", topo.distro),
            )
            .into());
        }
    }
    Ok(Vec::new())
}

/// A new campaign's folder and plan.
fn new_campaign(
    space: &Space,
    versions: &[String],
    a: &ExploreArgs,
) -> Result<(PathBuf, State), Error> {
    if a.upgrade_to.is_some() && a.strategy != Strategy::Lifecycle {
        return Err(Diagnostic::general(
            "--upgrade-to is the lifecycle strategy's",
            "add --strategy lifecycle",
        )
        .into());
    }
    let sequences = match a.strategy {
        Strategy::Config => explore::plan_sequences(space, versions, a.seed, a.random, a.shard)
            .map_err(|e| {
                Diagnostic::general(
                    e,
                    "a campaign is bounded before it is planned (docs/explore.md)",
                )
            })?,
        Strategy::Lifecycle => {
            explore::plan_lifecycle(space, versions, a.upgrade_to.as_deref(), a.seed, a.shard)
        }
    };
    // The second and a random suffix: two campaigns started in one second get a folder each
    // (and the folder is created new: `execute`).
    let name = format!(
        "explore-{}-{}-{}",
        space.topology,
        chrono::Utc::now().format("%Y%m%d-%H%M%S"),
        crate::run::random_hex(2)
    );
    let state = State {
        schema_version: 1,
        name: name.clone(),
        topology: space.topology.clone(),
        versions: versions.to_vec(),
        keys: space.keys.iter().map(|k| k.key.clone()).collect(),
        seed: a.seed,
        confirm: a.confirm,
        budget_runs: a.budget.0,
        budget_seconds: a.budget.1,
        sequences,
        strategy: a.strategy,
        upgrade_to: a.upgrade_to.clone(),
        minimal: BTreeMap::new(),
        runs: 0,
        seconds: 0.0,
        first_minimal_after: None,
        first_minimal_runs: None,
        started_at: Some(explore::rfc3339(chrono::Utc::now())),
        first_minimal_at: None,
        causes: BTreeMap::new(),
        judged: 0,
        failed: BTreeMap::new(),
        merged_cells: Vec::new(),
    };
    Ok((a.options.results.join(name), state))
}

/// `--emit github-matrix`: one cell per shard, with its version and sequence ids.
fn matrix(state: &State) -> serde_json::Value {
    let mut shards: BTreeMap<usize, (String, Vec<String>)> = BTreeMap::new();
    for s in &state.sequences {
        let e = shards
            .entry(s.shard)
            .or_insert((s.version.clone(), Vec::new()));
        e.1.push(s.sequence.id.clone());
    }
    let include: Vec<serde_json::Value> = shards
        .iter()
        .map(|(i, (v, ids))| serde_json::json!({"shard": i, "version": v, "sequences": ids.join(",")}))
        .collect();
    serde_json::json!({ "include": include })
}

/// Runs the campaign in its folder, then judges the folder and prints the findings.
async fn execute(
    g: &Global,
    a: &ExploreArgs,
    (dir, jobs): (PathBuf, usize),
    space: Space,
    state: State,
) -> Result<Exit, Error> {
    std::fs::create_dir_all(&a.options.results).map_err(|e| Error::Write {
        path: a.options.results.clone(),
        source: e,
    })?;
    let rel = dir
        .strip_prefix(&a.options.results)
        .unwrap_or(&dir)
        .to_path_buf();
    if a.resume.is_none() {
        if std::fs::symlink_metadata(&dir).is_ok() {
            return Err(Error::Other(anyhow::anyhow!(
                "{}: exists already: another campaign's folder; start again",
                dir.display()
            )));
        }
        crate::safe_fs::dir_in(&a.options.results, &rel)
            .map_err(|e| Error::Other(anyhow::anyhow!("{}: {e:#}", dir.display())))?;
    }
    errln!(
        "repro explore: {} sequences over {} on {} (keys: {}), campaign folder {}{}",
        state.sequences.len(),
        space.topology,
        state.versions.join(", "),
        state.keys.join(", "),
        dir.display(),
        if jobs > 1 {
            format!(", {jobs} runs at once")
        } else {
            String::new()
        }
    );
    // An upgrade target's image is needed too.
    let images: Vec<String> = (state.versions.iter())
        .chain(&state.upgrade_to)
        .cloned()
        .collect();
    prepare_images(a, &images, jobs > 1).await?;
    // One restore slot per campaign slot: the runs of a slot go one after another, each
    // restoring that slot's baseline (its own network, subnet and names).
    let restore: Vec<Arc<crate::run::baseline::Slot>> = if restores(a, state.strategy) {
        (0..jobs)
            .map(|_| crate::run::baseline::Slot::new())
            .collect()
    } else {
        Vec::new()
    };
    let run_one = runner(
        g.root.clone(),
        (a.sim, a.sim_pace, a.sim_plant.clone()),
        a.options.clone(),
        restore.clone(),
    );
    let budget_from = state.runs;
    let merged_ran = ran_if_merged(&state);
    let mut c = Campaign {
        budget_from,
        dir: dir.clone(),
        space,
        state,
        run_one,
        validate: validator(g.root.clone(), a.sim),
        say: Box::new(|l: &str| errln!("{l}")),
        started: Instant::now(),
        only: only_sequences(a, &merged_ran),
        minimise: !a.no_minimise,
        stop_at: a.stop_at_first_minimal.clone(),
        slots: explore::slots::Slots::new(jobs),
        in_flight: 0,
        ahead: Default::default(),
    };
    let ran = c.run().await;
    for slot in &restore {
        remove_baselines(slot).await;
    }
    // What ran so far is judged and written whether the campaign ended or stopped.
    let file = explore::judge_folder(&dir, &dir).map_err(|e| Error::Other(anyhow::anyhow!(e)))?;
    print_summary(&file, &dir);
    if let Err(stop) = ran {
        return Err(match stop {
            explore::Stop::Failed(f) if f.cause == FailCause::Interrupted => {
                errln!(
                    "repro explore: {}; the campaign is saved: resume with `{}`",
                    f.message,
                    resume_command(a, &dir)
                );
                crate::run::RunError::Interrupted.into()
            }
            stop => Error::Other(anyhow::anyhow!(
                "{stop}\n  (what ran is kept: `{}` goes on once the cause is fixed)",
                resume_command(a, &dir)
            )),
        });
    }
    if let Some(t) = c.state.first_minimal_after {
        out(&format!(
            "first minimal finding after {t:.0}s and {} runs; {} runs in {:.0}s ({:.1}s per run)",
            c.state.first_minimal_runs.unwrap_or(c.state.runs),
            c.state.runs,
            c.state.seconds,
            c.state.seconds / c.state.runs.max(1) as f64
        ));
    }
    Ok(incomplete_exit(&file, !c.state.merged_cells.is_empty()))
}

/// The sequences this invocation may run: `--sequences`, else — for a campaign merged from
/// the workflow's cells — only those a cell ran (they are judged again; nothing new runs): the
/// last job minimises and confirms what the cells found, it does not redo a failed cell's share
/// serially (`--sequences` runs those on purpose). Else every one.
fn only_sequences(a: &ExploreArgs, ran_if_merged: &Option<Vec<String>>) -> Option<Vec<String>> {
    if !a.sequences.is_empty() {
        return Some(a.sequences.clone());
    }
    ran_if_merged.clone()
}

/// For a campaign merged from cells, the ids of the sequences some cell ran.
fn ran_if_merged(state: &State) -> Option<Vec<String>> {
    if state.merged_cells.is_empty() {
        return None;
    }
    let ran = (state.sequences.iter()).filter(|r| r.run.is_some());
    Some(ran.map(|r| r.sequence.id.clone()).collect())
}

/// Whether the campaign's runs restore from a kept baseline: `--restore`/`--no-restore`, else
/// on the stand-in, on Docker and on Podman alike (tests/e2e/restore.rs proves the findings the
/// same on both: `make test-podman` runs it).
fn restores(a: &ExploreArgs, strategy: Strategy) -> bool {
    restores_by((a.restore, a.no_restore), a.sim, strategy)
}

fn restores_by((restore, no_restore): (bool, bool), sim: bool, strategy: Strategy) -> bool {
    match (restore, no_restore) {
        (true, _) => true,
        (_, true) => false,
        // A restore starts every node of the kept baseline at once: the lifecycle strategy's
        // own "restart every node" (k3s #13533 panics a control-plane-only node there), so its
        // sequences start from a fresh bring-up. On Podman too since the kept network has its
        // keeper (`run/baseline.rs` `keeper`): before it, a restored run there now and then found
        // its kept network dead (docs/podman.md), and the default was Docker's only.
        _ => sim && strategy == Strategy::Config,
    }
}

/// The slot's baselines go when the campaign ends, however it ended (an interrupt too: the
/// run's own cleanup has removed the run; the baseline is the campaign's).
async fn remove_baselines(slot: &crate::run::baseline::Slot) {
    let ids = slot.ids();
    let problems = match crate::docker::connect().await {
        Ok(engine) => slot.remove(&engine).await,
        Err(e) => vec![e.to_string()],
    };
    if !problems.is_empty() {
        errln!(
            "repro explore: the kept baseline was not fully removed ({}); `repro clean --run {}` removes it",
            problems.join("; "),
            ids.join("` and `repro clean --run ")
        );
    }
}

/// A campaign (or a recheck) some of whose runs failed covers only the runs judged, and a
/// campaign of cells (`of_cells`) some of whose sequences no cell ran only those run: its last
/// line says so and it exits with the infrastructure code, never 0.
fn incomplete_exit(file: &explore::findings::FindingsFile, of_cells: bool) -> Exit {
    let not_run = of_cells.then(|| explore::not_run_line(file)).flatten();
    let lines: Vec<String> = file.failed_line().into_iter().chain(not_run).collect();
    for l in &lines {
        out(l);
    }
    if lines.is_empty() {
        Exit::Ok
    } else {
        Exit::Infra
    }
}

fn recheck(dir: &Path) -> Result<Exit, Error> {
    if !dir.is_dir() {
        return Err(Diagnostic::general(
            format!("--recheck: `{}` is no folder", dir.display()),
            "give a campaign folder, or a folder of downloaded matrix cells",
        )
        .into());
    }
    let file = explore::judge_folder(dir, dir).map_err(|e| match e {
        explore::JudgeError::Input(e) => Diagnostic::general(
            format!("--recheck: {e}"),
            "give a campaign folder as repro explore wrote it (campaign.json, runs/, checks/), or a folder of downloaded matrix cells",
        ),
        explore::JudgeError::Write(e) => Diagnostic::general(
            format!("--recheck: cannot write the findings: {e}"),
            "--recheck writes findings.json, findings.md and junit.xml into the folder: make it writable, or recheck a copy",
        ),
    })?;
    print_summary(&file, dir);
    Ok(incomplete_exit(&file, explore::of_cells(dir)))
}

fn print_summary(f: &explore::findings::FindingsFile, dir: &Path) {
    let mut t = format!("{}, {} findings:\n", f.tally(), f.findings.len());
    for x in &f.findings {
        let minimal = x
            .minimal
            .as_ref()
            .map(|m| format!(", minimal {}", m.summary()));
        let where_ = format!("{} nodes, {}", x.role, x.source);
        t.push_str(&format!(
            "  {:<26} {:<20} {where_:<44} {} runs, {} pieces{}\n",
            x.class,
            x.key,
            x.runs,
            x.evidence.len(),
            minimal.unwrap_or_default()
        ));
        if let Some(l) = &x.label {
            t.push_str(&format!("  {:<26} {l}\n", ""));
        }
    }
    t.push_str(&format!(
        "findings: {}",
        dir.join(explore::FINDINGS_MD).display()
    ));
    out(&t);
}

/// What the runs share, done once before them (as matrix does): `--image-archive` loaded and,
/// with `--rebuild-sim`, each version's stand-in image rebuilt (runs building one tag race).
async fn prepare_images(a: &ExploreArgs, versions: &[String], at_once: bool) -> Result<(), Error> {
    let o = &a.options;
    // Runs at once would each build the same stand-in tag: built once, before the runs.
    let sim_images = a.sim && (o.rebuild_sim || at_once);
    if o.image_archive.is_none() && !sim_images {
        return Ok(());
    }
    let engine = crate::docker::connect().await?;
    if let Some(archive) = &o.image_archive {
        errln!("repro explore: loading image archive {}", archive.display());
        crate::docker::DockerApi::load_archive(&engine, archive).await?;
    }
    if sim_images {
        super::common::prepare_sim_images(&engine, versions, o.rebuild_sim).await?;
    }
    Ok(())
}

/// `repro run`'s own validation of one check file on one version (resolve: catalog, check,
/// bug world, plan), with no engine: the problems' places in the file.
fn validator(root: Option<PathBuf>, sim: bool) -> explore::Validate {
    Box::new(move |check: &Path, version: &str| {
        let target = Target {
            version: Some(version.to_string()),
            ..Target::of(check.display().to_string(), sim, None)
        };
        match super::common::resolve(root.as_deref(), &target) {
            Ok(_) => Ok(()),
            Err(Error::Usage(d)) => Err(d
                .0
                .iter()
                .map(|d| (d.line, d.column, d.message.clone()))
                .collect()),
            Err(e) => Err(vec![(0, 0, e.render().trim_end().to_string())]),
        }
    })
}

/// The command that goes on with the campaign in `dir`: campaign.json keeps what was searched,
/// not where the nodes came from, so the flags that chose the build are said again (without
/// `--sim` a resumed RKE2 stand-in campaign would ask the engine to pull `rke2-node` images).
fn resume_command(a: &ExploreArgs, dir: &Path) -> String {
    let mut words = vec![
        "repro".to_string(),
        "explore".into(),
        "--resume".into(),
        dir.display().to_string(),
    ];
    if a.sim {
        words.push("--sim".into());
    }
    if let Some(p) = a.sim_pace {
        words.extend(["--sim-pace".into(), p.to_string()]);
    }
    if let Some(p) = &a.sim_plant {
        words.extend(["--sim-plant".into(), p.clone()]);
    }
    let quoted: Vec<String> = words.iter().map(|w| crate::run::shell_quote(w)).collect();
    quoted.join(" ")
}

/// `repro run`'s own path for one check file: resolve (catalog, plan), the run config from
/// `repro run`'s flags (`RunOptions::to_config`, as matrix and bisect build theirs) and
/// `run::execute`; with `restore`, each run starts from its campaign slot's kept baseline
/// (`restore[slot]`: one per slot, whose runs go one after another).
fn runner(
    root: Option<PathBuf>,
    (sim, sim_pace, sim_plant): (bool, Option<f64>, Option<String>),
    options: RunOptions,
    restore: Vec<Arc<crate::run::baseline::Slot>>,
) -> RunOne {
    let (root, options) = (Arc::new(root), Arc::new(options));
    Arc::new(
        move |check: PathBuf, version: String, results: PathBuf, slot: usize| {
            let (root, sim_plant, options) = (root.clone(), sim_plant.clone(), options.clone());
            let restore = restore.get(slot).cloned();
            Box::pin(async move {
                let target = Target {
                    version: Some(version),
                    sim_plant,
                    no_images_tarball: options.images.no_images_tarball,
                    ..Target::of(check.display().to_string(), sim, sim_pace)
                };
                let (sc, plan) =
                    super::common::resolve(root.as_deref(), &target).map_err(|e| RunFailure {
                        cause: FailCause::CheckRefused,
                        message: e.render().trim_end().to_string(),
                    })?;
                // The oracle judges; the run's own verdict only names the outcome.
                let mut cfg =
                    options.to_config(target, Outcome::Fixed, results, std::env::args().collect());
                // A seed given is every run's (a stand-in campaign replays); none: each draws
                // its own.
                cfg.sim_seed = options.sim_seed;
                cfg.restore = restore;
                let end =
                    run::execute(&cfg, sc, plan, vec![], crate::report::render_all_with).await;
                // Only a run that reached its verdict is judged; a failed one is counted by cause.
                match (end.status, end.dir, end.result) {
                    (Ok(_), Some(d), Some(r)) => Ok((d, r)),
                    (Err(e), _, _) => Err(RunFailure {
                        cause: e.cause(),
                        message: e.to_string(),
                    }),
                    (Ok(_), _, _) => Err(RunFailure {
                        cause: FailCause::Internal,
                        message: "the run left no result".into(),
                    }),
                }
            })
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--restore` by default on the stand-in's config campaigns on Docker; not on Podman (its
    /// restored runs can lose their network) nor for the lifecycle strategy; a flag decides.
    #[test]
    fn restore_is_the_default_of_a_stand_in_config_campaign_on_any_engine_and_a_flag_decides() {
        let config = Strategy::Config;
        assert!(restores_by((false, false), true, config));
        assert!(!restores_by((false, false), false, config));
        assert!(!restores_by((false, false), true, Strategy::Lifecycle));
        assert!(restores_by((true, false), true, Strategy::Lifecycle));
        assert!(restores_by((true, false), false, config));
        assert!(!restores_by((false, true), true, config));
    }
}
