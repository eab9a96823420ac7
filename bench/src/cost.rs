//! Issue #39's figures (`--only cost`): what a campaign costs and what `--jobs` and `--restore`
//! save, at `--sim-pace 1` (real k3s's boot timings) on etcd-split (k3s) and rke2-8465 (RKE2).
//! Per topology, three campaigns of the same plan from fresh folders — serial without restore,
//! `--jobs auto` without restore, `--jobs auto --restore` — each with the seconds to its first
//! minimal finding and to its end, its runs and its defects (the same in all three, or the
//! figures say not); per run, a restore's `cluster-up` against a bring-up's (result.json); and
//! `--plan`'s estimate of each campaign against its wall time. The figures come from the
//! campaigns' own files (campaign.json, findings.json, result.json) and `--plan --format json`;
//! only how many runs `auto` chose is read from the campaign's first line.
//!
//! The all-keys campaign at real pace is hours serially on a 2-core machine: `--cost-keys` and
//! `--cost-orders` pick a subset (recorded with the figures), the same for every mode.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::{anyhow, bail, Result};
use serde_json::{json, Value};

use crate::stats::{median, round};
use crate::{loadavg, measured, Ctx};

/// The topologies measured, each on a version that has the #12753 bug (so there are defects to
/// minimise: the part of a campaign `--jobs` used to leave idle).
pub(crate) const TOPOLOGIES: [(&str, &str); 2] = [
    ("etcd-split", "v1.33.4+k3s1"),
    ("rke2-8465", "v1.32.5+rke2r1"),
];

/// The three ways a campaign is run, by name and the flags that make it.
const MODES: [(&str, &[&str]); 3] = [
    ("serial", &["--jobs", "1", "--no-restore"]),
    ("jobs", &["--jobs", "auto", "--no-restore"]),
    ("jobs_restore", &["--jobs", "auto", "--restore"]),
];

/// What part of the campaign is measured: every default key and sequence, or a subset.
#[derive(Debug, Clone, Default)]
pub(crate) struct Subset {
    /// `--keys` (empty: the default keys).
    pub(crate) keys: Vec<String>,
    /// Restart orders to run per key (`o1`, `o2`, …; empty: every sequence of the plan).
    pub(crate) orders: Vec<String>,
}

impl Subset {
    /// `make bench`'s: three keys whose #12753 defect shows at the first step, orders o1–o3
    /// (9 sequences, each key's defect minimised and confirmed): about 20 minutes serially.
    pub(crate) fn default_subset() -> Subset {
        Subset {
            keys: list("embedded-registry,supervisor-metrics,cluster-domain"),
            orders: list("o1,o2,o3"),
        }
    }

    fn args(&self) -> Vec<String> {
        let mut a = Vec::new();
        if !self.keys.is_empty() {
            a.extend(["--keys".to_string(), self.keys.join(",")]);
        }
        if !self.orders.is_empty() && !self.keys.is_empty() {
            let seqs: Vec<String> = (self.orders.iter())
                .flat_map(|o| self.keys.iter().map(move |k| format!("{o}-{k}")))
                .collect();
            a.extend(["--sequences".to_string(), seqs.join(",")]);
        }
        a
    }
}

/// A comma-separated list; `all` is the empty one (the campaign's default).
pub(crate) fn list(s: &str) -> Vec<String> {
    if s == "all" {
        return Vec::new();
    }
    s.split(',')
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect()
}

/// Every topology's figures, as the bench file's `cost` section.
pub(crate) fn section(ctx: &Ctx, subset: &Subset) -> Result<Value> {
    let mut out = serde_json::Map::new();
    for (topology, version) in TOPOLOGIES {
        out.insert(
            topology.into(),
            topology_figures(ctx, topology, version, subset)?,
        );
    }
    Ok(json!({
        "pace": 1,
        "keys": subset.keys,
        "orders": subset.orders,
        "topologies": out,
    }))
}

fn topology_figures(ctx: &Ctx, topology: &str, version: &str, subset: &Subset) -> Result<Value> {
    let mut campaigns = serde_json::Map::new();
    for (mode, flags) in MODES {
        let plan = estimate(ctx, topology, version, subset, flags)?;
        let mut x = campaign(ctx, topology, version, subset, (mode, flags))?;
        let wall = x["wall_s"].as_f64().unwrap_or(0.0);
        let error = (plan > 0.0).then(|| round((wall - plan) / plan * 100.0, 1));
        if let Some(o) = x.as_object_mut() {
            o.insert("plan_estimate_s".into(), json!(round(plan, 0)));
            o.insert("plan_error_percent".into(), json!(error));
        }
        eprintln!("bench: {}", line(topology, mode, &x));
        campaigns.insert(mode.into(), x);
    }
    let serial_wall = campaigns["serial"]["wall_s"].as_f64().unwrap_or(0.0);
    let defects = |m: &str| campaigns[m]["defects"].clone();
    let same = MODES.iter().all(|(m, _)| defects(m) == defects("serial"));
    let speedup = |m: &str| {
        let w = campaigns[m]["wall_s"].as_f64().unwrap_or(0.0);
        (w > 0.0).then(|| round(serial_wall / w, 2))
    };
    let up = |m: &str| campaigns[m]["cluster_up_median_s"].as_f64();
    Ok(json!({
        "version": version,
        "campaigns": campaigns,
        "same_defects": same,
        "speedup_jobs": speedup("jobs"),
        "speedup_jobs_restore": speedup("jobs_restore"),
        // A restored run's cluster-up over a fresh bring-up's (medians of the campaigns' runs).
        "restore_over_bring_up": match (up("jobs_restore"), up("jobs")) {
            (Some(r), Some(b)) if b > 0.0 => Some(round(r / b, 2)),
            _ => None,
        },
    }))
}

/// `--plan`'s wall time for the campaign on this host with these flags (seconds).
fn estimate(
    ctx: &Ctx,
    topology: &str,
    version: &str,
    subset: &Subset,
    flags: &[&str],
) -> Result<f64> {
    let out = ctx
        .repro_cmd()
        .args(["explore", "--topology", topology, "--version", version])
        .args(["--sim", "--sim-pace", "1", "--plan", "--format", "json"])
        .args(subset.args())
        .args(flags.iter().filter(|f| !f.contains("restore")))
        .stderr(Stdio::null())
        .output()?;
    if !out.status.success() {
        bail!("repro explore --plan exited {:?}", out.status.code());
    }
    let v: Value = serde_json::from_slice(&out.stdout)?;
    let host = v["estimate"]["host"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let restore = flags.contains(&"--restore");
    // The last row is the flags' --jobs (the first is serial).
    let row = if flags.contains(&"1") {
        host.first()
    } else {
        host.last()
    };
    let key = if restore {
        "seconds_with_restore"
    } else {
        "seconds"
    };
    row.and_then(|r| r[key].as_f64())
        .ok_or_else(|| anyhow!("--plan gave no {key}: {v}"))
}

/// One campaign from a fresh folder, timed; its figures.
fn campaign(
    ctx: &Ctx,
    topology: &str,
    version: &str,
    subset: &Subset,
    (mode, flags): (&str, &[&str]),
) -> Result<Value> {
    let results = ctx.work.join(format!("cost-{topology}-{mode}"));
    let _ = std::fs::remove_dir_all(&results);
    let log = ctx.work.join(format!("cost-{topology}-{mode}.log"));
    let mut c = ctx.repro_cmd();
    c.args(["explore", "--topology", topology, "--version", version])
        .args(["--sim", "--sim-pace", "1", "--confirm", "1", "--seed", "1"])
        .args(subset.args())
        .args(flags)
        .arg("--results")
        .arg(&results)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log)?);
    let load_before = loadavg();
    eprintln!("bench: explore {topology} {mode}, load {load_before}");
    let m = measured(&mut c)?;
    if m.code != Some(0) {
        bail!(
            "repro explore ({mode}) exited {:?}: {}",
            m.code,
            log.display()
        );
    }
    let dir = campaign_dir(&results)?;
    let read =
        |p: PathBuf| -> Result<Value> { Ok(serde_json::from_str(&std::fs::read_to_string(p)?)?) };
    let state = read(dir.join("campaign.json"))?;
    let findings = read(dir.join("findings.json"))?;
    let first_line = std::fs::read_to_string(&log)?;
    Ok(figures(
        (m.wall_s, &state, &findings),
        &cluster_ups(&dir.join("runs")),
        jobs_chosen(&first_line),
        (&load_before, &loadavg()),
    ))
}

fn campaign_dir(results: &Path) -> Result<PathBuf> {
    std::fs::read_dir(results)?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("campaign.json").is_file())
        .ok_or_else(|| anyhow!("no campaign folder in {}", results.display()))
}

/// Every run's `cluster-up` seconds (result.json's timings).
fn cluster_ups(runs: &Path) -> Vec<f64> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(runs).into_iter().flatten().flatten() {
        let text = std::fs::read_to_string(e.path().join("result.json")).unwrap_or_default();
        let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if let Some(s) = v["timings"]["cluster-up"].as_f64() {
            out.push(s);
        }
    }
    out
}

/// Runs at once, from the campaign's first line (`…, 3 runs at once`); one when it says none.
pub(crate) fn jobs_chosen(stderr: &str) -> u64 {
    let first = stderr.lines().next().unwrap_or_default();
    first
        .split(", ")
        .find_map(|p| p.strip_suffix(" runs at once"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(1)
}

/// The figures of one campaign (pure): wall time, the first minimal finding, runs, the
/// defects (class/key/role and their minimal check's steps and confirmations), cluster-up.
pub(crate) fn figures(
    (wall_s, state, findings): (f64, &Value, &Value),
    ups: &[f64],
    jobs: u64,
    load: (&str, &str),
) -> Value {
    let mut defects: Vec<String> = (findings["findings"].as_array().into_iter().flatten())
        .filter(|f| f["defect"].as_bool() == Some(true))
        .map(|f| {
            let m = &f["minimal"];
            format!(
                "{}/{}/{} steps={} confirmed={}",
                f["class"].as_str().unwrap_or("?"),
                f["key"].as_str().unwrap_or("?"),
                f["role"].as_str().unwrap_or("?"),
                m["steps"],
                m["confirmed"]
            )
        })
        .collect();
    defects.sort();
    let runs = state["runs"].as_u64().unwrap_or(0);
    json!({
        "jobs": jobs,
        "wall_s": round(wall_s, 1),
        "first_minimal_finding_s": state["first_minimal_after"].as_f64().map(|s| round(s, 1)),
        "first_minimal_finding_runs": state["first_minimal_runs"],
        "runs": runs,
        "judged": state["judged"],
        "seconds_per_run": round(state["seconds"].as_f64().unwrap_or(0.0) / runs.max(1) as f64, 1),
        "cluster_up_median_s": (!ups.is_empty()).then(|| round(median(ups), 1)),
        "defects": defects,
        "started_at": state["started_at"],
        "load_before": load.0,
        "load_after": load.1,
    })
}

/// One line for people, from [`figures`].
pub(crate) fn line(topology: &str, mode: &str, x: &Value) -> String {
    format!(
        "explore {topology} {mode} (--jobs {}): {} s wall, first minimal finding after {} s, {} runs ({} s per run, cluster-up {} s), {} defects; --plan {} s ({}%); load {} → {}",
        x["jobs"],
        x["wall_s"],
        x["first_minimal_finding_s"],
        x["runs"],
        x["seconds_per_run"],
        x["cluster_up_median_s"],
        x["defects"].as_array().map_or(0, Vec::len),
        x["plan_estimate_s"],
        x["plan_error_percent"],
        x["load_before"].as_str().unwrap_or(""),
        x["load_after"].as_str().unwrap_or("")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_figures_come_from_the_campaign_files() {
        let state = json!({"runs": 10, "judged": 10, "seconds": 600.0,
            "first_minimal_after": 183.26, "first_minimal_runs": 4, "started_at": "t"});
        let findings = json!({"findings": [
            {"class": "taken-from-cp-1", "key": "embedded-registry", "role": "etcd", "defect": true,
             "minimal": {"steps": 1, "confirmed": 1}},
            {"class": "unguarded-divergence", "key": "embedded-registry", "role": "etcd", "defect": false},
        ]});
        let x = figures(
            (277.04, &state, &findings),
            &[20.0, 24.8, 22.9],
            3,
            ("1", "2"),
        );
        assert_eq!(x["wall_s"], json!(277.0));
        assert_eq!(x["first_minimal_finding_s"], json!(183.3));
        assert_eq!(x["seconds_per_run"], json!(60.0));
        assert_eq!(x["cluster_up_median_s"], json!(22.9));
        assert_eq!(
            x["defects"],
            json!(["taken-from-cp-1/embedded-registry/etcd steps=1 confirmed=1"])
        );
        assert!(line("etcd-split", "jobs", &x).contains("(--jobs 3): 277.0 s wall"));
        let first = "repro explore: 9 sequences over etcd-split on v (keys: a), campaign folder x, 3 runs at once\nmore";
        assert_eq!(jobs_chosen(first), 3);
        assert_eq!(
            jobs_chosen("repro explore: 9 sequences …, campaign folder x"),
            1
        );
        let s = Subset {
            keys: vec!["a".into(), "b".into()],
            orders: vec!["o1".into()],
        };
        assert_eq!(s.args(), ["--keys", "a,b", "--sequences", "o1-a,o1-b"]);
        assert!(Subset::default().args().is_empty());
    }
}
