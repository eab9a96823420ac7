//! `repro explore`: parses the search space from the flags (everything checked before Docker),
//! hands the campaign (`crate::explore`) `repro run`'s own way to run one check, and prints.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::catalog::{self, Catalog};
use crate::cli::{ExploreArgs, ExploreEmit, Global};
use crate::error::Error;
use crate::exit::Exit;
use crate::explore::generate::KeySpace;
use crate::explore::model::{value_text, Config, NodeInfo, Rules};
use crate::explore::{self, Campaign, RunOne, Space, State};
use crate::outcome::Outcome;
use crate::run::{self, Expect, Privileged, RunConfig, Target};
use distro::Version;

use super::common::out;

/// The two values searched for a key that is not a boolean (its default first).
fn alternatives(key: &str) -> Option<[&'static str; 2]> {
    match key {
        "cluster-dns" => Some(["10.43.0.10", "10.43.0.20"]),
        "cluster-domain" => Some(["cluster.local", "explore.local"]),
        "egress-selector-mode" => Some(["agent", "disabled"]),
        "flannel-backend" => Some(["vxlan", "host-gw"]),
        _ => None,
    }
}

pub(crate) async fn run(g: &Global, a: &ExploreArgs) -> Result<Exit, Error> {
    if let Some(dir) = &a.recheck {
        return recheck(dir);
    }
    let root = catalog::find_root(g.root.as_deref());
    let cat = Catalog::load(root.as_deref()).map_err(|d| Error::bad_input(d.to_string()))?;
    let resumed = match &a.resume {
        Some(dir) => Some(
            explore::read_state(&dir.join(explore::CAMPAIGN_FILE))
                .map_err(|e| Error::bad_input(format!("error: --resume: {e}\n  help: give a campaign folder (it holds campaign.json)\n")))?,
        ),
        None => None,
    };
    let topo_name = resumed
        .as_ref()
        .map(|s| s.topology.clone())
        .or_else(|| a.topology.clone())
        .unwrap_or_default();
    let Some(topo) = cat.topology(&topo_name).cloned() else {
        return Err(Error::bad_input(format!(
            "error: no topology named `{topo_name}`\n  help: use one of: {}\n",
            cat.topologies
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    };
    let version_args: Vec<String> = match &resumed {
        Some(s) => s.versions.clone(),
        None if a.versions.is_empty() => vec![topo.default_version.to_string()],
        None => a.versions.clone(),
    };
    let mut versions: Vec<Version> = Vec::new();
    for v in &version_args {
        let parsed: Version = v.parse().map_err(|e: distro::VersionError| {
            Error::bad_input(format!(
                "error: --version: {e}\n  help: e.g. --version {}\n",
                topo.distro.facts().example_version
            ))
        })?;
        if parsed.distro != topo.distro {
            return Err(Error::bad_input(format!(
                "error: --version: `{parsed}` is a {} version, but topology `{}` runs {}\n  help: give a {} version, e.g. {}\n",
                parsed.distro, topo.name, topo.distro, topo.distro, topo.distro.facts().example_version
            )));
        }
        versions.push(parsed);
    }
    let rules = Rules::of(topo.distro);
    let signals = cat.signals.for_distro(topo.distro);
    // key -> the first signal that shows it
    let mut showing: BTreeMap<String, (String, crate::scenario::Signal)> = BTreeMap::new();
    for (name, s) in &signals.by_name {
        if let Some(sh) = &s.shows {
            showing
                .entry(sh.key.clone())
                .or_insert((name.clone(), s.clone()));
        }
    }
    let flags = topo.distro.flags();
    let asked: Vec<String> = match &resumed {
        Some(s) => s.keys.clone(),
        None if a.keys.is_empty() => flags
            .iter()
            .filter(|f| f.critical || f.from_server)
            .filter(|f| {
                showing
                    .get(&f.name)
                    .is_some_and(|(_, s)| versions.iter().all(|v| s.exists_in(v)))
            })
            .map(|f| f.name.clone())
            .collect(),
        None => a.keys.clone(),
    };
    let mut keys = Vec::new();
    for k in &asked {
        let Some(flag) = flags.iter().find(|f| &f.name == k) else {
            return Err(Error::bad_input(format!(
                "error: --keys: `{k}` is not a {} config key\n  help: name a key of {} (e.g. embedded-registry)\n",
                topo.distro,
                topo.distro.facts().flags_path
            )));
        };
        let Some((signal, sig)) = showing.get(k) else {
            return Err(Error::bad_input(format!(
                "error: --keys: no signal shows `{k}`\n  help: keys with a signal: {} (a signal says `shows: {{key: {k}}}` in checks/signals.yaml)\n",
                showing.keys().cloned().collect::<Vec<_>>().join(", ")
            )));
        };
        let boolean = flag.kind == distro::FlagKind::Bool;
        let values = if boolean {
            ["false".to_string(), "true".to_string()]
        } else if let Some([d, alt]) = alternatives(k) {
            [d.to_string(), alt.to_string()]
        } else {
            return Err(Error::bad_input(format!(
                "error: --keys: repro explore knows no second value for `{k}`\n  help: search boolean keys, or one of cluster-dns, cluster-domain, egress-selector-mode, flannel-backend\n"
            )));
        };
        keys.push(KeySpace {
            key: k.clone(),
            values,
            boolean,
            signal: signal.clone(),
            shows: sig.shows.clone().expect("a showing signal"),
            roles: sig.roles.clone(),
        });
    }
    if keys.is_empty() {
        return Err(Error::bad_input(
            "error: no key to search\n  help: name keys with --keys (each needs a signal with `shows:` in checks/signals.yaml)\n".to_string(),
        ));
    }
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
    let space = Space {
        topology: topo.name.clone(),
        nodes,
        base,
        rules,
        keys,
    };
    let version_names: Vec<String> = versions.iter().map(ToString::to_string).collect();
    let (dir, state) = match (resumed, &a.resume) {
        (Some(s), Some(d)) => (d.clone(), s),
        _ => {
            let sequences =
                explore::plan_sequences(&space, &version_names, a.seed, a.random, a.shard);
            let name = format!(
                "explore-{}-{}",
                topo.name,
                chrono::Utc::now().format("%Y%m%d-%H%M%S")
            );
            let state = State {
                schema_version: 1,
                name: name.clone(),
                topology: topo.name.clone(),
                versions: version_names.clone(),
                keys: space.keys.iter().map(|k| k.key.clone()).collect(),
                seed: a.seed,
                confirm: a.confirm,
                budget_runs: a.budget.0,
                budget_seconds: a.budget.1,
                sequences,
                minimal: BTreeMap::new(),
                runs: 0,
                seconds: 0.0,
                first_minimal_after: None,
            };
            (a.results.join(name), state)
        }
    };
    if a.emit == Some(ExploreEmit::GithubMatrix) {
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
        out(&serde_json::json!({ "include": include }).to_string());
        return Ok(Exit::Ok);
    }
    std::fs::create_dir_all(&a.results).map_err(|e| Error::Write {
        path: a.results.clone(),
        source: e,
    })?;
    let rel = dir.strip_prefix(&a.results).unwrap_or(&dir).to_path_buf();
    if a.resume.is_none() {
        crate::safe_fs::dir_in(&a.results, &rel)
            .map_err(|e| Error::Other(anyhow::anyhow!("{}: {e:#}", dir.display())))?;
    }
    errln!(
        "repro explore: {} sequences over {} on {} (keys: {}), campaign folder {}",
        state.sequences.len(),
        topo.name,
        version_names.join(", "),
        state.keys.join(", "),
        dir.display()
    );
    let run_one = runner(g.root.clone(), a.sim, a.sim_pace, a.timeout);
    let mut c = Campaign {
        dir: dir.clone(),
        space,
        state,
        run_one,
        say: Box::new(|l: &str| errln!("{l}")),
        started: Instant::now(),
        only: (!a.sequences.is_empty()).then(|| a.sequences.clone()),
        minimise: !a.no_minimise,
    };
    c.run()
        .await
        .map_err(|e| Error::Other(anyhow::anyhow!(e)))?;
    let file = explore::judge_folder(&dir, &dir).map_err(|e| Error::Other(anyhow::anyhow!(e)))?;
    print_summary(&file, &dir);
    if let Some(t) = c.state.first_minimal_after {
        out(&format!(
            "first minimal finding after {t:.0}s; {} runs in {:.0}s ({:.1}s per run)",
            c.state.runs,
            c.state.seconds,
            c.state.seconds / c.state.runs.max(1) as f64
        ));
    }
    Ok(Exit::Ok)
}

fn recheck(dir: &Path) -> Result<Exit, Error> {
    if !dir.is_dir() {
        return Err(Error::bad_input(format!("error: --recheck: `{}` is no folder\n  help: give a campaign folder, or a folder of downloaded matrix cells\n", dir.display())));
    }
    let file = explore::judge_folder(dir, dir).map_err(|e| Error::bad_input(format!("error: --recheck: {e}\n  help: every result.json under the folder must be one repro wrote\n")))?;
    print_summary(&file, dir);
    Ok(Exit::Ok)
}

fn print_summary(f: &explore::findings::FindingsFile, dir: &Path) {
    let mut t = format!("{} runs judged, {} findings:\n", f.runs, f.findings.len());
    for x in &f.findings {
        t.push_str(&format!(
            "  {:<26} {:<20} {:<14} {} runs, {} pieces{}\n",
            x.class,
            x.key,
            x.role,
            x.runs,
            x.evidence.len(),
            x.minimal.as_ref().map_or(String::new(), |m| format!(
                ", minimal {} ({} steps, confirmed {}/{})",
                m.check, m.steps, m.confirmed, m.confirm_runs
            ))
        ));
    }
    t.push_str(&format!(
        "findings: {}",
        dir.join(explore::FINDINGS_MD).display()
    ));
    out(&t);
}

/// `repro run`'s own path for one check file: resolve (catalog, plan) and `run::execute`.
fn runner(
    root: Option<PathBuf>,
    sim: bool,
    sim_pace: Option<f64>,
    timeout: std::time::Duration,
) -> RunOne {
    let root = Arc::new(root);
    Box::new(move |check: PathBuf, version: String, results: PathBuf| {
        let root = root.clone();
        Box::pin(async move {
            let target = Target {
                check: check.display().to_string(),
                topology: None,
                version: Some(version),
                image: None,
                sim,
                sim_pace,
                k3s_binary: None,
                k3s_commit: None,
                artifacts: None,
                node_base: None,
                build: None,
            };
            let (sc, plan) =
                super::common::resolve(root.as_deref(), &target).map_err(|e| e.to_string())?;
            let cfg = RunConfig {
                target,
                // The oracle judges; the run's own verdict only names the outcome.
                expect: Expect::Outcome(Outcome::Fixed),
                timeout,
                settle: None,
                keep: false,
                image_archive: None,
                results,
                rebuild_sim: false,
                sim_seed: None,
                privileged: Privileged::Auto,
                host_check: true,
                argv: std::env::args().collect(),
            };
            let end = run::execute(&cfg, sc, plan, vec![], crate::report::render_all_with).await;
            match (end.dir, end.result) {
                (Some(d), Some(r)) => Ok((d, r)),
                _ => Err(end
                    .status
                    .err()
                    .map_or_else(|| "the run left no result".to_string(), |e| e.to_string())),
            }
        })
    })
}
