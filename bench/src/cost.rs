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

use anyhow::{anyhow, bail, Context, Result};
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

/// Enough runs for the all-keys campaign (about 320 on etcd-split): the default budget (200)
/// would end it early.
const BUDGET: [&str; 2] = ["--budget", "runs=1000"];

/// What part of the campaign is measured: every default key and sequence, or a subset.
#[derive(Debug, Clone, Default)]
pub(crate) struct Subset {
    /// `--keys` (empty: the default keys).
    pub(crate) keys: Vec<String>,
    /// Restart orders to run per key (`o1`, `o2`, …; empty: every sequence of the plan).
    pub(crate) orders: Vec<String>,
    /// `--cost-topologies` (empty: both of [`TOPOLOGIES`]).
    pub(crate) topologies: Vec<String>,
    /// `--cost-serial-sample N` (0: the serial campaign runs whole): the serial campaign is
    /// estimated from N of its sequences run serially ([`sampled_figures`]).
    pub(crate) serial_sample: usize,
}

impl Subset {
    /// `make bench`'s: three keys whose #12753 defect shows at the first step, orders o1–o3
    /// (9 sequences, each key's defect minimised and confirmed): about 20 minutes serially.
    pub(crate) fn default_subset() -> Subset {
        Subset {
            keys: list("embedded-registry,supervisor-metrics,cluster-domain"),
            orders: list("o1,o2,o3"),
            ..Subset::default()
        }
    }

    /// `--keys` when the subset names keys.
    fn key_args(&self) -> Vec<String> {
        match self.keys.is_empty() {
            true => Vec::new(),
            false => vec!["--keys".to_string(), self.keys.join(",")],
        }
    }

    fn args(&self) -> Vec<String> {
        let mut a = self.key_args();
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
    let picked = |t: &str| subset.topologies.is_empty() || subset.topologies.iter().any(|x| x == t);
    for (topology, version) in TOPOLOGIES.into_iter().filter(|(t, _)| picked(t)) {
        let figures = match subset.serial_sample {
            0 => topology_figures(ctx, topology, version, subset)?,
            n => sampled_figures(ctx, topology, version, subset, n)?,
        };
        out.insert(topology.into(), figures);
    }
    Ok(json!({
        "pace": 1,
        "keys": subset.keys,
        "orders": subset.orders,
        "serial_sample": subset.serial_sample,
        "topologies": out,
    }))
}

/// One mode's campaign with `--plan`'s estimate of it beside its figures, and its folder.
fn planned_campaign(
    ctx: &Ctx,
    (topology, version): (&str, &str),
    subset: &Subset,
    (mode, flags): (&str, &[&str]),
) -> Result<(Value, PathBuf)> {
    let plan = estimate(ctx, topology, version, subset, flags)?;
    let (mut x, dir) = campaign(ctx, (topology, version), &subset.args(), (mode, flags))?;
    let wall = x["wall_s"].as_f64().unwrap_or(0.0);
    let error = plan_error_percent(plan, wall);
    if let Some(o) = x.as_object_mut() {
        o.insert("plan_estimate_s".into(), json!(round(plan, 0)));
        o.insert("plan_error_percent".into(), json!(error));
    }
    eprintln!("bench: {}", line(topology, mode, &x));
    Ok((x, dir))
}

fn topology_figures(ctx: &Ctx, topology: &str, version: &str, subset: &Subset) -> Result<Value> {
    let mut campaigns = serde_json::Map::new();
    for (mode, flags) in MODES {
        let (x, _) = planned_campaign(ctx, (topology, version), subset, (mode, flags))?;
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

/// The campaign whose serial run is longer than a session (the all-keys one is 5.8 h here):
/// `--jobs auto --restore` runs whole, then `n` of its sequences ([`sample`]: two per restart
/// order, rotating over the keys) run serially as the serial mode runs them (`--jobs 1
/// --no-restore`, same seed, no minimisation). Each sampled run is a run the whole campaign
/// also made, so they pair one to one: the serial time is the whole campaign's own run times
/// (result.json `timings.total`) times the paired ratio, plus the serial campaign's own gap
/// between runs. An estimate from a measured sample, and said so in the figures; the sampled
/// sequences' pieces of evidence are compared, run for run.
fn sampled_figures(
    ctx: &Ctx,
    topology: &str,
    version: &str,
    subset: &Subset,
    n: usize,
) -> Result<Value> {
    let (mode, flags) = MODES[2];
    let (whole, dir) = planned_campaign(ctx, (topology, version), subset, (mode, flags))?;
    let state = read_json(&dir.join("campaign.json"))?;
    let picked = sample(&state, n);
    let mut args = subset.key_args();
    args.extend([
        "--sequences".to_string(),
        picked.join(","),
        "--no-minimise".to_string(),
    ]);
    let (serial, sdir) = campaign(
        ctx,
        (topology, version),
        &args,
        ("serial_sample", MODES[0].1),
    )?;
    eprintln!("bench: {}", line(topology, "serial_sample", &serial));
    let sstate = read_json(&sdir.join("campaign.json"))?;
    let (par, ser) = (run_totals(&dir, &state), run_totals(&sdir, &sstate));
    let all_runs: Vec<f64> = (std::fs::read_dir(dir.join("runs")).into_iter().flatten())
        .flatten()
        .filter_map(|e| run_total(&e.path()))
        .collect();
    let pieces = |d: &Path, st: &Value| -> Result<Vec<(String, Vec<String>)>> {
        let f = read_json(&d.join("findings.json"))?;
        Ok(sequence_pieces(st, &f))
    };
    let (pp, sp) = (pieces(&dir, &state)?, pieces(&sdir, &sstate)?);
    let est = serial_estimate(
        &picked,
        (&par, &ser),
        &all_runs,
        serial["wall_s"].as_f64().unwrap_or(0.0),
    );
    let wall = whole["wall_s"].as_f64().unwrap_or(0.0);
    let differ = differing_pieces(&picked, &pp, &sp);
    Ok(json!({
        "version": version,
        "campaigns": { mode: whole, "serial_sample": serial },
        "serial_estimate": est,
        "speedup_jobs_restore": est["serial_s"].as_f64().filter(|_| wall > 0.0).map(|s| round(s / wall, 2)),
        "sample_same_pieces": differ.is_empty(),
        "sample_differing_pieces": differ,
    }))
}

/// `n` sequences of the campaign's plan: two per restart order (`o1-<key>`, `o2-<key>`, … in
/// the plan's order), the keys rotating across orders, so every key and order is in it; the
/// covering sequences (`c1`, … : every key at once, no order of their own) are not sampled,
/// though each shifts the rotation by one order (pure).
pub(crate) fn sample(state: &Value, n: usize) -> Vec<String> {
    let ids: Vec<&str> = (state["sequences"].as_array().into_iter().flatten())
        .filter_map(|s| s["sequence"]["id"].as_str())
        .collect();
    let mut orders: Vec<&str> = Vec::new();
    for id in &ids {
        let o = id.split('-').next().unwrap_or(id);
        if !orders.contains(&o) {
            orders.push(o);
        }
    }
    // As many per order as n needs; order i takes the keys from i × that on, so the keys
    // rotate across the orders.
    let per = n.div_ceil(orders.len().max(1));
    let mut out: Vec<String> = Vec::new();
    for (i, o) in orders.iter().enumerate() {
        let prefix = format!("{o}-");
        let of: Vec<&str> = ids
            .iter()
            .copied()
            .filter(|x| x.starts_with(&prefix))
            .collect();
        for k in 0..per.min(of.len()) {
            let id = of[(i * per + k) % of.len()].to_string();
            if out.len() < n && !out.contains(&id) {
                out.push(id);
            }
        }
    }
    out
}

/// A run folder's `timings.total` seconds.
fn run_total(run: &Path) -> Option<f64> {
    read_json(&run.join("result.json")).ok()?["timings"]["total"].as_f64()
}

/// Each sequence's run time (seconds), by sequence id.
fn run_totals(dir: &Path, state: &Value) -> std::collections::BTreeMap<String, f64> {
    (state["sequences"].as_array().into_iter().flatten())
        .filter_map(|s| {
            let run = s["run"].as_str()?;
            Some((
                s["sequence"]["id"].as_str()?.to_string(),
                run_total(&dir.join(run))?,
            ))
        })
        .collect()
}

/// The serial campaign's time, estimated (pure): the paired ratio of the sampled runs' times
/// (serial over the whole campaign's), times every run of the whole campaign, plus the serial
/// sample's own time between runs per run.
pub(crate) fn serial_estimate(
    picked: &[String],
    (whole, serial): (
        &std::collections::BTreeMap<String, f64>,
        &std::collections::BTreeMap<String, f64>,
    ),
    all_runs: &[f64],
    serial_wall: f64,
) -> Value {
    let pairs: Vec<(f64, f64)> = (picked.iter())
        .filter_map(|id| Some((*serial.get(id)?, *whole.get(id)?)))
        .collect();
    let (s, w): (f64, f64) = pairs
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    let ratio = (w > 0.0).then(|| s / w);
    let ratios: Vec<f64> = pairs
        .iter()
        .filter(|p| p.1 > 0.0)
        .map(|(x, y)| x / y)
        .collect();
    let serial_runs: f64 = serial.values().sum();
    let gap = (serial_wall - serial_runs).max(0.0) / serial.len().max(1) as f64;
    let total: f64 = all_runs.iter().sum();
    json!({
        "method": "paired sample: the whole campaign's run times x the serial/whole ratio of the sampled runs, plus the serial gap between runs",
        "pairs": pairs.len(),
        "ratio": ratio.map(|r| round(r, 3)),
        "ratio_median": (!ratios.is_empty()).then(|| round(median(&ratios), 3)),
        "ratio_min": ratios.iter().copied().reduce(f64::min).map(|r| round(r, 3)),
        "ratio_max": ratios.iter().copied().reduce(f64::max).map(|r| round(r, 3)),
        "gap_per_run_s": round(gap, 2),
        "whole_runs": all_runs.len(),
        "whole_run_seconds": round(total, 0),
        "serial_s": ratio.map(|r| round(total * r + gap * all_runs.len() as f64, 0)),
    })
}

/// Each sequence's pieces of evidence in findings.json, without the class a distinguishing
/// run may have renamed (a campaign without minimisation decides no cause): what was observed
/// where, against what the model predicted (pure).
pub(crate) fn sequence_pieces(state: &Value, findings: &Value) -> Vec<(String, Vec<String>)> {
    let pieces: Vec<&Value> = (findings["findings"].as_array().into_iter().flatten())
        .flat_map(|f| f["evidence"].as_array().into_iter().flatten())
        .collect();
    (state["sequences"].as_array().into_iter().flatten())
        .filter_map(|s| {
            let run = s["run"].as_str()?;
            let mut of: Vec<String> = (pieces.iter())
                .filter(|p| p["run"] == run)
                .map(|p| {
                    format!(
                        "{} {} step {} {}: observed {}, predicted {}",
                        p["key"].as_str().unwrap_or("?"),
                        p["node"].as_str().unwrap_or("?"),
                        p["step"],
                        p["signal"].as_str().unwrap_or("?"),
                        p["observed"].as_str().unwrap_or("?"),
                        p["predicted"].as_str().unwrap_or("?"),
                    )
                })
                .collect();
            of.sort();
            of.dedup();
            Some((s["sequence"]["id"].as_str()?.to_string(), of))
        })
        .collect()
}

/// The sampled sequences whose pieces differ between the two campaigns: `id: only in whole
/// …; only in serial …` (pure; empty: the same).
pub(crate) fn differing_pieces(
    picked: &[String],
    whole: &[(String, Vec<String>)],
    serial: &[(String, Vec<String>)],
) -> Vec<String> {
    let of = |l: &[(String, Vec<String>)], id: &str| {
        l.iter().find(|(i, _)| i == id).map(|(_, p)| p.clone())
    };
    let mut out = Vec::new();
    for id in picked {
        let (w, s) = (of(whole, id), of(serial, id));
        let (Some(w), Some(s)) = (w, s) else {
            out.push(format!("{id}: not run in both campaigns"));
            continue;
        };
        let only_w: Vec<&String> = w.iter().filter(|p| !s.contains(p)).collect();
        let only_s: Vec<&String> = s.iter().filter(|p| !w.contains(p)).collect();
        if !only_w.is_empty() || !only_s.is_empty() {
            out.push(format!(
                "{id}: only in the whole campaign {only_w:?}; only in the serial sample {only_s:?}"
            ));
        }
    }
    out
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
        .args(BUDGET)
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

/// One campaign from a fresh folder, timed (`args`: its keys and sequences); its figures and
/// its folder.
fn campaign(
    ctx: &Ctx,
    (topology, version): (&str, &str),
    args: &[String],
    (mode, flags): (&str, &[&str]),
) -> Result<(Value, PathBuf)> {
    let results = ctx.work.join(format!("cost-{topology}-{mode}"));
    let _ = std::fs::remove_dir_all(&results);
    let log = ctx.work.join(format!("cost-{topology}-{mode}.log"));
    let mut c = ctx.repro_cmd();
    c.args(["explore", "--topology", topology, "--version", version])
        .args(["--sim", "--sim-pace", "1", "--confirm", "1", "--seed", "1"])
        .args(BUDGET)
        .args(args)
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
    let state = read_json(&dir.join("campaign.json"))?;
    let findings = read_json(&dir.join("findings.json"))?;
    let first_line = std::fs::read_to_string(&log)?;
    let x = figures(
        (m.wall_s, &state, &findings),
        &cluster_ups(&dir.join("runs")),
        jobs_chosen(&first_line),
        (&load_before, &loadavg()),
    );
    Ok((x, dir))
}

fn read_json(p: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(p).with_context(|| p.display().to_string())?;
    Ok(serde_json::from_str(&text)?)
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

/// `--plan`'s error against the measured wall time, in percent of the measured time (as every
/// `--plan` figure in docs/performance.md): negative when the plan was low (pure).
pub(crate) fn plan_error_percent(plan: f64, wall: f64) -> Option<f64> {
    (plan > 0.0 && wall > 0.0).then(|| round((plan - wall) / wall * 100.0, 1))
}

/// Runs at once, from the campaign's line that says them (`…, 3 runs at once`; `--jobs auto`
/// says why on a line before it); one when none does.
pub(crate) fn jobs_chosen(stderr: &str) -> u64 {
    (stderr.lines())
        .find_map(|l| {
            l.split(", ")
                .find_map(|p| p.strip_suffix(" runs at once"))
                .and_then(|n| n.trim().parse().ok())
        })
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
        // `--jobs auto` says why first
        let auto = "repro explore: --jobs auto: 12 (paced …, 3 CPU s a run: 53; …)\nrepro explore: 172 sequences …, campaign folder x, 12 runs at once\n";
        assert_eq!(jobs_chosen(auto), 12);
        // the plan's error is in percent of the measured time: low is negative
        assert_eq!(plan_error_percent(3061.0, 4371.1), Some(-30.0));
        assert_eq!(plan_error_percent(0.0, 10.0), None);
        assert_eq!(
            jobs_chosen("repro explore: 9 sequences …, campaign folder x"),
            1
        );
        let s = Subset {
            keys: vec!["a".into(), "b".into()],
            orders: vec!["o1".into()],
            ..Subset::default()
        };
        assert_eq!(s.args(), ["--keys", "a,b", "--sequences", "o1-a,o1-b"]);
        assert!(Subset::default().args().is_empty());
    }

    fn state_of(ids: &[&str]) -> Value {
        let seqs: Vec<Value> = (ids.iter())
            .map(|id| json!({"sequence": {"id": id}, "run": format!("runs/{id}")}))
            .collect();
        json!({ "sequences": seqs })
    }

    #[test]
    fn the_sample_takes_two_per_order_with_the_keys_rotating() {
        let ids: Vec<String> = (1..=3)
            .flat_map(|o| ["a", "b", "c", "d"].map(move |k| format!("o{o}-{k}")))
            .collect();
        let mut ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let picked = sample(&state_of(&ids), 6);
        assert_eq!(picked, ["o1-a", "o1-b", "o2-c", "o2-d", "o3-a", "o3-b"]);
        // never more than asked, never one twice
        assert_eq!(sample(&state_of(&ids), 4), ["o1-a", "o1-b", "o2-c", "o2-d"]);
        assert_eq!(sample(&state_of(&ids), 100).len(), 12);
        // a covering sequence is not sampled (it still counts in the rotation: what the
        // all-keys figures of 2026-12-07 were measured with)
        ids.insert(0, "c1");
        let picked = sample(&state_of(&ids), 6);
        assert_eq!(picked, ["o1-c", "o1-d", "o2-a", "o2-b", "o3-c", "o3-d"]);
    }

    #[test]
    fn the_serial_estimate_scales_the_whole_campaign_by_the_paired_ratio() {
        let picked = vec!["o1-a".to_string(), "o2-b".to_string()];
        let whole = [("o1-a".to_string(), 100.0), ("o2-b".to_string(), 100.0)].into();
        let serial = [("o1-a".to_string(), 80.0), ("o2-b".to_string(), 100.0)].into();
        // 10 runs of 100 s in the whole campaign; the serial sample took 190 s for 180 s of runs
        let e = serial_estimate(&picked, (&whole, &serial), &[100.0; 10], 190.0);
        assert_eq!(e["ratio"], json!(0.9));
        assert_eq!(e["gap_per_run_s"], json!(5.0));
        assert_eq!(e["serial_s"], json!(950.0));
        assert_eq!(
            (e["ratio_min"].clone(), e["ratio_max"].clone()),
            (json!(0.8), json!(1.0))
        );
    }

    #[test]
    fn pieces_are_compared_run_for_run_without_the_class() {
        let state = state_of(&["o1-a", "o2-b"]);
        let piece = |run: &str, class: &str, observed: &str| {
            json!({"class": class, "key": "k", "node": "etcd-2", "step": 1, "signal": "s",
                   "observed": observed, "predicted": "down", "run": run})
        };
        let whole = json!({"findings": [{"evidence": [
            piece("runs/o1-a", "taken-from-etcd-1", "up"), piece("runs/o2-b", "stale", "up")]}]});
        let serial = json!({"findings": [{"evidence": [
            piece("runs/o1-a", "taken-from-cp-1", "up")]}]});
        let picked = vec!["o1-a".to_string(), "o2-b".to_string()];
        let d = differing_pieces(
            &picked,
            &sequence_pieces(&state, &whole),
            &sequence_pieces(&state, &serial),
        );
        // o1-a: the same observation under a renamed class is the same piece; o2-b differs
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(
            d[0].starts_with("o2-b: only in the whole campaign"),
            "{d:?}"
        );
    }
}
