//! `make bench`: repro's speed on the k3s stand-in, as figures (never assertions).
//!
//! Paired runs (median of N, order rotated each round) of the same reproduction three ways:
//! - `repro run etcd-split --sim` (the release binary, as a user runs it);
//! - the Docker floor (`floor.rs`): the same plan replayed with bare bollard calls;
//! - `bench/etcd-split.sh`: the docker-CLI script with 1-second polls and a 1-second settle,
//!   whose time counts only when its answers are the ones k3s #12753 gives on v1.33.4+k3s1.
//!
//! Then the 25-server topology (5 etcd-only + 20 control-plane-only, `bench/topologies/`),
//! repro's peak memory (the kernel's figure for the finished process), log-line latency, and
//! `repro matrix --jobs N` for N = 1, 2, 4 and `auto` on 8 versions. Then paced runs (issue #23,
//! `--sim-pace 0.5`: real k3s's boot timings, halved): the run against the critical path its
//! plan prints, and the start order of #23 against the one before it (`etcd-split-serial`, where
//! cp-1 starts after every etcd node), alternated. Writes `target/bench/bench.json` and prints a
//! short table.
//!
//! Then `repro explore` (issue #29, `explore.rs`): the embedded-registry campaign on etcd-split,
//! unpaced and at `--sim-pace 1` (real k3s's timings): runs and seconds to the first minimal
//! confirmed finding, and the campaign's totals (`--skip-explore` to leave it out, `--only
//! explore` to run just it: then the figures go to `target/bench/explore.json`).
//! After it (in `make bench` and with `--only explore`), #38's planted-bug table (`planted.rs`):
//! explore with its default keys and budget against each planted bug of `distro::plant` and
//! against the clean stand-in for k3s and RKE2, printed after the other tables (`--only
//! planted` runs the table alone, into `target/bench/planted.json`; `--rows
//! joined-metrics@etcd-split,clean@rke2-8465` picks rows; `--skip-explore` leaves both out).
//!
//! Then (`cost.rs`, issue #39; `--skip-cost` leaves it out, `--only cost` runs it alone into
//! `target/bench/cost.json`) what a campaign costs at `--sim-pace 1` on etcd-split and
//! rke2-8465: serial, `--jobs auto` and `--jobs auto --restore`, to the first minimal finding and
//! to the end, restore against bring-up per run, and `--plan`'s estimate against each. Its
//! subset: `--cost-keys K[,K]` (`all`: the default keys) and `--cost-orders o1[,o2]` (`all`:
//! every sequence of the plan); by default three keys and the orders o1–o3, on both topologies
//! (`--cost-topologies etcd-split` picks). A serial campaign longer than a session (the all-keys
//! one) is estimated instead: `--cost-serial-sample N` runs `--jobs auto --restore` whole, then N
//! of its sequences serially, and scales the whole campaign's run times by the paired ratio
//! (`cost::sampled_figures`; the figures say it is an estimate).
//!
//! Usage: repro-bench [--runs N] [--paced-runs N] [--out FILE] [--skip-matrix] [--skip-paced]
//!        [--skip-explore | --only explore | --only planted | --only cost] [--rows ROW[,ROW]]
//!        [--skip-cost] [--cost-keys K[,K]|all] [--cost-orders O[,O]|all]
//!        [--cost-topologies T[,T]|all] [--cost-serial-sample N]
//!        repro-bench floor PLAN.json          (one floor run of a `repro plan --format json`)
//!        repro-bench readme [BENCH.json]      (docs/performance.md's table, from a bench file)

mod cost;
mod explore;
mod floor;
mod latency;
mod planted;
mod stats;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use indexmap::IndexMap;
use serde::Serialize;
use serde_json::json;

use stats::{median, percentile, round, Summary};

/// The version QA reproduced k3s #12753 on.
const VERSION: &str = "v1.33.4+k3s1";
/// The script's answers on that version (k3s #12753): `step node state` per observation. In
/// step 3 a buggy etcd-only joiner takes its config through its agent load balancer, from cp-1
/// (no registry there), so the registry stays down (docs/k3s-behaviour.md §1; the check says
/// `bug: any` there because #12753's text expected etcd-1's value).
const SCRIPT_ANSWERS: &[&str] = &[
    "step 1 etcd-1 embedded-registry down",
    "step 1 etcd-2 embedded-registry down",
    "step 1 etcd-3 embedded-registry down",
    "step 2 etcd-1 embedded-registry up",
    "step 2 etcd-2 embedded-registry down",
    "step 2 etcd-3 embedded-registry down",
    "step 3 etcd-2 embedded-registry down",
    "step 3 etcd-3 embedded-registry down",
];
/// Eight versions across the release lines, buggy and fixed, for the matrix curve: the
/// stand-ins `repro sim build` makes when given none, and one newer fixed release.
fn matrix_versions() -> Vec<&'static str> {
    let mut v = distro::Distro::K3s.facts().sim_versions.to_vec();
    v.push("v1.34.2+k3s1");
    v
}
const TOPOLOGY_25: &str = "etcd-split-25";
/// etcd-split in the start order before #23 (cp-1 after every etcd node), bench only.
const TOPOLOGY_SERIAL: &str = "etcd-split-serial";
/// The pace of the paced runs: real k3s timings, twice as fast.
const PACE: &str = "0.5";

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("floor") => {
            let path = args
                .get(1)
                .ok_or_else(|| anyhow!("usage: floor PLAN.json"))?;
            let plan: floor::Plan = serde_json::from_str(&std::fs::read_to_string(path)?)?;
            let rt = tokio::runtime::Runtime::new()?;
            let docker = rt.block_on(connect())?;
            let p = rt.block_on(floor::run(&docker, &plan, &floor::Marks::default()))?;
            println!("{}", serde_json::to_string_pretty(&p)?);
            Ok(())
        }
        Some("readme") => {
            let path = args
                .get(1)
                .map_or_else(|| PathBuf::from("target/bench/bench.json"), PathBuf::from);
            let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
            print!("{}", readme_table(&doc));
            Ok(())
        }
        _ => bench(&args),
    }
}

async fn connect() -> Result<bollard::Docker> {
    Ok(bollard::Docker::connect_with_defaults()?
        .negotiate_version()
        .await?)
}

/// Runs a command to its end: exit code, wall time and peak resident memory in KB. The peak is
/// the kernel's high-water mark (`VmHWM` in /proc/PID/status), read every 10 ms while the
/// process lives; it only grows, so the last reading is the peak up to the last 10 ms (the
/// process's exit, which allocates nothing).
fn measured(cmd: &mut Command) -> Result<Measured> {
    let t = Instant::now();
    let mut child = cmd.spawn()?;
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak_kb = 0u64;
    let status = loop {
        if let Ok(text) = std::fs::read_to_string(&status_file) {
            if let Some(kb) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            {
                peak_kb = peak_kb.max(kb);
            }
        }
        if let Some(status) = child.try_wait()? {
            break status;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    Ok(Measured {
        code: status.code(),
        wall_s: t.elapsed().as_secs_f64(),
        maxrss_kb: peak_kb,
    })
}

struct Measured {
    code: Option<i32>,
    wall_s: f64,
    maxrss_kb: u64,
}

/// One `repro run` as a user runs it.
#[derive(Debug, Clone, Serialize)]
struct ReproRun {
    wall_s: f64,
    peak_rss_mb: f64,
    verdict: Option<String>,
    timings: IndexMap<String, f64>,
}

struct Ctx {
    repo: PathBuf,
    repro: PathBuf,
    root: PathBuf,
    work: PathBuf,
    rt: tokio::runtime::Runtime,
    docker: bollard::Docker,
}

impl Ctx {
    fn repro_cmd(&self) -> Command {
        let mut c = Command::new(&self.repro);
        c.arg("--root").arg(&self.root);
        c
    }

    /// `repro run etcd-split --sim`, timed and its memory watched; Err unless exit 0 with the
    /// expected verdict.
    fn repro_run(&self, topology: Option<&str>) -> Result<ReproRun> {
        self.repro_run_paced(topology, None)
    }

    /// `repro_run`, with `--sim-pace` when `pace` is given.
    fn repro_run_paced(&self, topology: Option<&str>, pace: Option<&str>) -> Result<ReproRun> {
        let results = self.work.join("runs");
        let _ = std::fs::remove_dir_all(&results);
        let mut args: Vec<String> = vec![
            "--root".into(),
            self.root.display().to_string(),
            "run".into(),
            "etcd-split".into(),
            "--sim".into(),
            "--k3s-version".into(),
            VERSION.into(),
            "--expect".into(),
            "reproduced".into(),
            "--progress".into(),
            "never".into(),
            "--results".into(),
            results.display().to_string(),
        ];
        if let Some(t) = topology {
            args.extend(["--topology".into(), t.into()]);
        }
        if let Some(p) = pace {
            args.extend(["--sim-pace".into(), p.into()]);
        }
        let m = measured(
            Command::new(&self.repro)
                .args(&args)
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        )?;
        let dir = std::fs::read_dir(&results)?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .find(|p| p.join("result.json").exists())
            .ok_or_else(|| anyhow!("repro made no result.json (exit {:?})", m.code))?;
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("result.json"))?)?;
        let verdict = r["verdict"]["outcome"].as_str().map(str::to_string);
        if m.code != Some(0) || verdict.as_deref() != Some("reproduced") {
            bail!(
                "repro run exited {:?} with verdict {verdict:?} (kept: {})",
                m.code,
                dir.display()
            );
        }
        let timings = r["timings"]
            .as_object()
            .map(|o| {
                o.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
                    .collect()
            })
            .unwrap_or_default();
        let _ = std::fs::remove_dir_all(&results);
        Ok(ReproRun {
            wall_s: m.wall_s,
            peak_rss_mb: m.maxrss_kb as f64 / 1024.0,
            verdict,
            timings,
        })
    }

    /// The docker-CLI script; Err when its answers are not k3s #12753's.
    fn script(&self) -> Result<f64> {
        let t = Instant::now();
        let out = Command::new("bash")
            .arg(self.repo.join("bench/etcd-split.sh"))
            .arg(image_of(VERSION))
            .stderr(Stdio::inherit())
            .output()?;
        let wall = t.elapsed().as_secs_f64();
        let text = String::from_utf8_lossy(&out.stdout);
        let answers: Vec<&str> = text.lines().collect();
        if !out.status.success() || answers != SCRIPT_ANSWERS {
            bail!(
                "the script's answers are wrong (exit {:?}): {answers:?}",
                out.status.code()
            );
        }
        Ok(wall)
    }

    fn plan(&self, topology: Option<&str>) -> Result<floor::Plan> {
        Ok(serde_json::from_value(self.plan_json(topology, None)?)?)
    }

    /// The critical path `repro plan --sim --sim-pace PACE` prints, in seconds.
    fn critical_path(&self, topology: Option<&str>, pace: &str) -> Result<f64> {
        let v = self.plan_json(topology, Some(pace))?;
        v["critical_path"]["seconds"]
            .as_f64()
            .ok_or_else(|| anyhow!("repro plan printed no critical_path"))
    }

    fn plan_json(&self, topology: Option<&str>, pace: Option<&str>) -> Result<serde_json::Value> {
        let mut c = self.repro_cmd();
        c.args([
            "plan",
            "etcd-split",
            "--sim",
            "--k3s-version",
            VERSION,
            "--format",
            "json",
        ]);
        if let Some(t) = topology {
            c.args(["--topology", t]);
        }
        if let Some(p) = pace {
            c.args(["--sim-pace", p]);
        }
        let out = c.output()?;
        if !out.status.success() {
            bail!(
                "repro plan failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(serde_json::from_slice(&out.stdout)?)
    }

    fn floor(&self, plan: &floor::Plan) -> Result<floor::Phases> {
        self.rt
            .block_on(floor::run(&self.docker, plan, &floor::Marks::default()))
    }

    /// `repro matrix` of etcd-split on the 8 versions; wall time, and whether every verdict
    /// was the expected one (exit 0).
    fn matrix(&self, jobs: &str) -> Result<(f64, bool)> {
        let results = self.work.join("matrix");
        let _ = std::fs::remove_dir_all(&results);
        let t = Instant::now();
        let status = self
            .repro_cmd()
            .args(["matrix", "--checks", "etcd-split", "--sim", "--jobs"])
            .arg(jobs)
            .arg("--k3s-versions")
            .arg(matrix_versions().join(","))
            .arg("--results")
            .arg(&results)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()?;
        let wall = t.elapsed().as_secs_f64();
        let _ = std::fs::remove_dir_all(&results);
        Ok((wall, status.success()))
    }
}

/// The stand-in's image for a version, in the repository repro uses (REPRO_SIM_REPOSITORY when
/// set, as `repro sim build` honours it).
fn image_of(version: &str) -> String {
    let repo = std::env::var("REPRO_SIM_REPOSITORY")
        .ok()
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| "repro.local/k3s-sim".to_string());
    format!("{repo}:{}", version.replace('+', "-"))
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// A project folder with the repo's checks and topologies plus the bench-only ones.
fn make_root(repo: &Path, root: &Path) -> Result<()> {
    let _ = std::fs::remove_dir_all(root);
    for sub in ["checks", "topologies"] {
        std::fs::create_dir_all(root.join(sub))?;
        for e in std::fs::read_dir(repo.join(sub))? {
            let p = e?.path();
            if p.extension().is_some_and(|x| x == "yaml") {
                std::fs::copy(&p, root.join(sub).join(p.file_name().unwrap_or_default()))?;
            }
        }
    }
    for e in std::fs::read_dir(repo.join("bench/topologies"))? {
        let p = e?.path();
        std::fs::copy(
            &p,
            root.join("topologies")
                .join(p.file_name().unwrap_or_default()),
        )?;
    }
    Ok(())
}

fn bench(args: &[String]) -> Result<()> {
    let mut runs = 5usize;
    let mut out: Option<PathBuf> = None;
    let mut skip_matrix = false;
    let mut skip_paced = false;
    let mut paced_runs = 3usize;
    let mut skip_explore = false;
    let mut only_explore = false;
    let mut only_planted = false;
    let mut only_cost = false;
    let mut skip_cost = false;
    let mut subset = cost::Subset::default_subset();
    let mut rows: Vec<String> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--runs" => runs = it.next().context("--runs N")?.parse()?,
            "--paced-runs" => paced_runs = it.next().context("--paced-runs N")?.parse()?,
            "--skip-paced" => skip_paced = true,
            "--skip-explore" => skip_explore = true,
            "--only" => match it.next().map(String::as_str) {
                Some("explore") => only_explore = true,
                Some("planted") => only_planted = true,
                Some("cost") => only_cost = true,
                other => bail!("--only {other:?}: only `explore`, `planted` or `cost` runs alone"),
            },
            "--skip-cost" => skip_cost = true,
            "--cost-keys" => subset.keys = cost::list(it.next().context("--cost-keys K[,K]|all")?),
            "--cost-orders" => {
                subset.orders = cost::list(it.next().context("--cost-orders O[,O]|all")?)
            }
            "--cost-topologies" => {
                subset.topologies = cost::list(it.next().context("--cost-topologies T[,T]|all")?)
            }
            "--cost-serial-sample" => {
                subset.serial_sample = it.next().context("--cost-serial-sample N")?.parse()?
            }
            "--rows" => {
                let list = it.next().context("--rows ROW[,ROW]")?;
                rows.extend(list.split(',').map(str::to_string));
            }
            "--out" => out = Some(it.next().context("--out FILE")?.into()),
            "--skip-matrix" => skip_matrix = true,
            other => bail!("unknown argument {other} (see the header of bench/src/main.rs)"),
        }
    }
    let repo = std::env::current_dir()?;
    if !repo.join("bench/etcd-split.sh").exists() {
        bail!("run from the repository root (make bench)");
    }
    let repro = std::env::var_os("REPRO_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo.join("target/release/repro"));
    let work = repo.join("target/bench");
    std::fs::create_dir_all(&work)?;
    let out = out.unwrap_or_else(|| {
        work.join(if only_planted {
            "planted.json"
        } else if only_cost {
            "cost.json"
        } else if only_explore {
            "explore.json"
        } else {
            "bench.json"
        })
    });
    let root = work.join("root");
    make_root(&repo, &root)?;
    let rt = tokio::runtime::Runtime::new()?;
    let docker = rt.block_on(connect())?;
    let ctx = Ctx {
        repo,
        repro,
        root,
        work,
        rt,
        docker,
    };
    let rows = planted::select(&rows)?;
    if only_cost {
        return cost_only(&ctx, &out, &subset);
    }
    if only_explore || only_planted {
        return explore_only(&ctx, &out, &rows, only_planted);
    }
    let load_before = loadavg();
    eprintln!("bench: load average {load_before}; {runs} paired runs");

    // Images first (not timed): the stand-in for every version the matrix uses.
    let built = ctx
        .repro_cmd()
        .args(["sim", "build", "--k3s-version"])
        .arg(matrix_versions().join(","))
        .stdout(Stdio::null())
        .status()?;
    if !built.success() {
        bail!("repro sim build failed");
    }
    let plan4 = ctx.plan(None)?;
    let plan25 = ctx.plan(Some(TOPOLOGY_25))?;

    // Paired runs: repro, floor and script back to back, order rotated each round.
    let mut repro4: Vec<ReproRun> = Vec::new();
    let mut floor4: Vec<floor::Phases> = Vec::new();
    let mut script: Vec<f64> = Vec::new();
    let mut script_failures: Vec<String> = Vec::new();
    let (mut to_floor, mut to_script, mut floor_to_script) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..runs {
        let (mut r, mut f, mut s) = (None, None, None);
        for k in 0..3 {
            match (i + k) % 3 {
                0 => r = Some(ctx.repro_run(None)?),
                1 => f = Some(ctx.floor(&plan4)?),
                _ => match ctx.script() {
                    Ok(t) => s = Some(t),
                    Err(e) => script_failures.push(e.to_string()),
                },
            }
        }
        let (r, f) = (r.context("repro")?, f.context("floor")?);
        eprintln!(
            "bench: round {}: repro {:.2}s, floor {:.2}s, script {}",
            i + 1,
            r.wall_s,
            f.total,
            s.map_or("(wrong answers: not counted)".into(), |s| format!(
                "{s:.2}s"
            ))
        );
        to_floor.push(r.wall_s / f.total);
        if let Some(s) = s {
            to_script.push(r.wall_s / s);
            floor_to_script.push(f.total / s);
            script.push(s);
        }
        repro4.push(r);
        floor4.push(f);
    }

    // 25 servers: repro and its floor, paired.
    let mut repro25: Vec<ReproRun> = Vec::new();
    let mut floor25: Vec<floor::Phases> = Vec::new();
    for i in 0..runs.div_ceil(2).max(1) {
        let r = ctx.repro_run(Some(TOPOLOGY_25))?;
        let f = ctx.floor(&plan25)?;
        eprintln!(
            "bench: 25 servers, round {}: repro {:.2}s ({:.1} MB), floor {:.2}s",
            i + 1,
            r.wall_s,
            r.peak_rss_mb,
            f.total
        );
        repro25.push(r);
        floor25.push(f);
    }

    eprintln!("bench: log-line latency");
    let lat = ctx.rt.block_on(latency::measure(VERSION))?;

    let mut matrix = Vec::new();
    if !skip_matrix {
        for jobs in ["1", "2", "4", "auto"] {
            let (wall, ok) = ctx.matrix(jobs)?;
            eprintln!(
                "bench: matrix --jobs {jobs}: {wall:.1}s{}",
                if ok { "" } else { " (NOT all as expected)" }
            );
            let versions = matrix_versions().len();
            let per_minute = versions as f64 * 60.0 / wall;
            matrix.push(json!({"jobs": jobs, "versions": versions, "wall_s": round(wall, 2), "runs_per_minute": round(per_minute, 2), "all_as_expected": ok}));
        }
    }

    let paced = if skip_paced {
        serde_json::Value::Null
    } else {
        paced_section(&ctx, paced_runs)?
    };
    // Explore's cost, then its power and false alarms (#38): the planted-bug table.
    let (explore, planted_table) = if skip_explore {
        (serde_json::Value::Null, serde_json::Value::Null)
    } else {
        let e = explore::section(&ctx)?;
        sim_images(&ctx, rows.iter().map(|r| r.version).collect())?;
        (e, planted::section(&ctx, &rows)?)
    };
    let cost = if skip_cost {
        serde_json::Value::Null
    } else {
        sim_images(&ctx, cost::TOPOLOGIES.iter().map(|t| t.1).collect())?;
        cost::section(&ctx, &subset)?
    };
    let load_after = loadavg();

    let report = Report::new(&repro4, &floor4, &to_floor, &to_script, &repro25, &floor25);
    let mut doc = head(&ctx, &load_before, &load_after);
    let body = json!({
        "runs": runs,
        "etcd_split": {
            "repro": {
                "wall_s": Summary::of(&repro4.iter().map(|r| r.wall_s).collect::<Vec<_>>()),
                "phases_s": report.repro_phases(&repro4),
                "peak_rss_mb": round(report.max_rss(&repro4), 1),
            },
            "floor": {
                "wall_s": Summary::of(&floor4.iter().map(|f| f.total).collect::<Vec<_>>()),
                "phases_s": Report::floor_phases(&floor4),
            },
            "script": {
                "wall_s": Summary::of(&script),
                "counted": script.len(),
                "wrong_answers": script_failures,
            },
            "ratio_to_floor": Summary::of(&to_floor),
            "ratio_to_script": Summary::of(&to_script),
            // The best any tool can do against the script on this machine: the floor's own ratio.
            "floor_to_script": Summary::of(&floor_to_script),
        },
        "scale_25": {
            "topology": TOPOLOGY_25,
            "repro_wall_s": Summary::of(&repro25.iter().map(|r| r.wall_s).collect::<Vec<_>>()),
            "repro_phases_s": report.repro_phases(&repro25),
            "floor_wall_s": Summary::of(&floor25.iter().map(|f| f.total).collect::<Vec<_>>()),
            "floor_phases_s": Report::floor_phases(&floor25),
            "ratio_to_4_nodes": round(report.ratio25, 3),
            // The same ratio for the floor: what the engine itself allows.
            "floor_ratio_to_4_nodes": round(report.floor25_to_4, 3),
            "ratio_to_floor": round(report.ratio25_floor, 3),
            "teardown_s": Summary::of(&repro25.iter().filter_map(|r| r.timings.get("teardown").copied()).collect::<Vec<_>>()),
            "peak_rss_mb": round(report.max_rss(&repro25), 1),
        },
        "latency_ms": {
            "lines": lat.len(),
            "p50": round(percentile(&lat, 0.5), 3),
            "p99": round(percentile(&lat, 0.99), 3),
            "max": round(percentile(&lat, 1.0), 3),
        },
        "matrix": matrix,
        "paced": paced,
        "explore": explore,
        "planted": planted_table,
        "cost": cost,
        "targets": report.targets(),
    });
    extend(&mut doc, body);
    std::fs::write(&out, serde_json::to_string_pretty(&doc)? + "\n")?;
    print_table(&doc);
    print_planted(&doc);
    println!("written: {}", out.display());
    Ok(())
}

/// `--only explore`: the stand-in for the versions, then the explore section alone and the
/// planted-bug table (`--only planted`: the table alone; `--rows` picks its rows).
fn explore_only(ctx: &Ctx, out: &Path, rows: &[planted::Row], only_planted: bool) -> Result<()> {
    let mut versions: Vec<&str> = rows.iter().map(|r| r.version).collect();
    if !only_planted {
        versions.push(VERSION);
    }
    sim_images(ctx, versions)?;
    let load_before = loadavg();
    let section = if only_planted {
        serde_json::Value::Null
    } else {
        explore::section(ctx)?
    };
    let table = planted::section(ctx, rows)?;
    let mut doc = head(ctx, &load_before, &loadavg());
    extend(&mut doc, json!({"explore": section, "planted": table}));
    std::fs::write(out, serde_json::to_string_pretty(&doc)? + "\n")?;
    print_explore(&doc);
    if let Some(row) = explore::readme_row(&doc) {
        print!("{row}");
    }
    print_planted(&doc);
    println!("written: {}", out.display());
    Ok(())
}

/// `--only cost`: the stand-in for the versions, then the cost section alone.
fn cost_only(ctx: &Ctx, out: &Path, subset: &cost::Subset) -> Result<()> {
    sim_images(ctx, cost::TOPOLOGIES.iter().map(|t| t.1).collect())?;
    let load_before = loadavg();
    let section = cost::section(ctx, subset)?;
    let mut doc = head(ctx, &load_before, &loadavg());
    extend(&mut doc, json!({ "cost": section }));
    std::fs::write(out, serde_json::to_string_pretty(&doc)? + "\n")?;
    println!("written: {}", out.display());
    Ok(())
}

/// The stand-in image of each version (not timed).
fn sim_images(ctx: &Ctx, mut versions: Vec<&str>) -> Result<()> {
    versions.sort();
    versions.dedup();
    for v in versions {
        let built = ctx
            .repro_cmd()
            .args(["sim", "build", "--k3s-version", v])
            .stdout(Stdio::null())
            .status()?;
        if !built.success() {
            bail!("repro sim build {v} failed");
        }
    }
    Ok(())
}

/// The planted-bug table as printed (`make bench` and `--only explore|planted`).
fn print_planted(doc: &serde_json::Value) {
    print!("{}", planted::TABLE_HEAD);
    for x in doc["planted"].as_array().into_iter().flatten() {
        print!("{}", planted::table_row(x));
    }
}

/// What every bench file starts with: when, which commit, the machine and its load.
fn head(ctx: &Ctx, load_before: &str, load_after: &str) -> serde_json::Value {
    json!({
        "schema": 1,
        "generated_at": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "git": git_describe(&ctx.repo),
        "machine": {
            "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
            "load_before": load_before,
            "load_after": load_after,
        },
        "k3s_version": VERSION,
        "stand_in": true,
    })
}

/// Appends `more`'s fields to the object `doc`, in order.
fn extend(doc: &mut serde_json::Value, more: serde_json::Value) {
    if let (Some(d), serde_json::Value::Object(m)) = (doc.as_object_mut(), more) {
        d.extend(m);
    }
}

fn print_explore(doc: &serde_json::Value) {
    for x in [&doc["explore"]["unpaced"], &doc["explore"]["paced_1"]] {
        if x.is_object() {
            println!("{}", explore::line(x));
        }
    }
}

/// Issue #23's figures: paced runs of etcd-split in the start order of #23 and in the one
/// before it (alternated, new first in odd rounds), each against its plan's critical path.
fn paced_section(ctx: &Ctx, runs: usize) -> Result<serde_json::Value> {
    let path_new = ctx.critical_path(None, PACE)?;
    let path_old = ctx.critical_path(Some(TOPOLOGY_SERIAL), PACE)?;
    let (mut new, mut old) = (Vec::new(), Vec::new());
    for i in 0..runs.max(1) {
        for k in 0..2 {
            let serial = (i + k) % 2 == 1;
            let topology = serial.then_some(TOPOLOGY_SERIAL);
            let r = ctx.repro_run_paced(topology, Some(PACE))?;
            eprintln!(
                "bench: paced round {}, {} order: {:.2}s (critical path {:.2}s)",
                i + 1,
                if serial { "old" } else { "new" },
                r.wall_s,
                if serial { path_old } else { path_new }
            );
            if serial {
                old.push(r.wall_s);
            } else {
                new.push(r.wall_s);
            }
        }
    }
    let ratio: Vec<f64> = new.iter().map(|w| w / path_new).collect();
    let gains: Vec<f64> = old.iter().zip(&new).map(|(o, n)| o - n).collect();
    Ok(json!({
        "pace": PACE,
        "critical_path_s": round(path_new, 3),
        "wall_s": Summary::of(&new),
        "ratio_to_critical_path": Summary::of(&ratio),
        "old_order": {
            "topology": TOPOLOGY_SERIAL,
            "critical_path_s": round(path_old, 3),
            "wall_s": Summary::of(&old),
        },
        "start_order_gain_s": Summary::of(&gains),
        "start_order_gain_model_s": round(path_old - path_new, 3),
        "target_ratio": 1.15,
    }))
}

fn git_describe(repo: &Path) -> String {
    Command::new("git")
        .args(["describe", "--always", "--dirty"])
        .current_dir(repo)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

struct Report {
    ratio_script: f64,
    ratio_floor: f64,
    ratio25: f64,
    ratio25_floor: f64,
    floor25_to_4: f64,
    teardown25: f64,
    teardown4: f64,
    rss25: f64,
}

impl Report {
    fn new(
        repro4: &[ReproRun],
        floor4: &[floor::Phases],
        to_floor: &[f64],
        to_script: &[f64],
        repro25: &[ReproRun],
        floor25: &[floor::Phases],
    ) -> Report {
        let wall = |v: &[ReproRun]| median(&v.iter().map(|r| r.wall_s).collect::<Vec<_>>());
        let teardown = |v: &[ReproRun]| {
            median(
                &v.iter()
                    .filter_map(|r| r.timings.get("teardown").copied())
                    .collect::<Vec<_>>(),
            )
        };
        Report {
            ratio_script: median(to_script),
            ratio_floor: median(to_floor),
            ratio25: wall(repro25) / wall(repro4),
            ratio25_floor: wall(repro25)
                / median(&floor25.iter().map(|f| f.total).collect::<Vec<_>>()),
            floor25_to_4: median(&floor25.iter().map(|f| f.total).collect::<Vec<_>>())
                / median(&floor4.iter().map(|f| f.total).collect::<Vec<_>>()),
            teardown25: teardown(repro25),
            teardown4: teardown(repro4),
            rss25: repro25.iter().map(|r| r.peak_rss_mb).fold(0.0, f64::max),
        }
    }

    fn max_rss(&self, v: &[ReproRun]) -> f64 {
        v.iter().map(|r| r.peak_rss_mb).fold(0.0, f64::max)
    }

    /// Median per phase of repro's own timings, plus what the process spent outside them.
    fn repro_phases(&self, v: &[ReproRun]) -> IndexMap<String, f64> {
        let mut keys: Vec<String> = Vec::new();
        for r in v {
            for k in r.timings.keys() {
                if !keys.contains(k) {
                    keys.push(k.clone());
                }
            }
        }
        let mut m: IndexMap<String, f64> = keys
            .iter()
            .map(|k| {
                let xs: Vec<f64> = v.iter().filter_map(|r| r.timings.get(k).copied()).collect();
                (k.clone(), round(median(&xs), 3))
            })
            .collect();
        let outside: Vec<f64> = v
            .iter()
            .filter_map(|r| Some(r.wall_s - r.timings.get("total")?))
            .collect();
        m.insert("process (outside total)".into(), round(median(&outside), 3));
        m
    }

    fn floor_phases(v: &[floor::Phases]) -> IndexMap<String, f64> {
        let med = |f: &dyn Fn(&floor::Phases) -> f64| {
            round(median(&v.iter().map(f).collect::<Vec<_>>()), 3)
        };
        let mut m = IndexMap::new();
        m.insert("create".to_string(), med(&|p| p.create));
        m.insert("cluster-up".to_string(), med(&|p| p.cluster_up));
        let steps = v.first().map_or(0, |p| p.steps.len());
        for i in 0..steps {
            m.insert(
                format!("step-{}", i + 1),
                med(&|p| p.steps.get(i).copied().unwrap_or(f64::NAN)),
            );
        }
        m.insert("teardown".to_string(), med(&|p| p.teardown));
        m.insert("total".to_string(), med(&|p| p.total));
        m
    }

    fn targets(&self) -> serde_json::Value {
        let t = |name: &str, value: f64, limit: f64, unit: &str| json!({"target": name, "value": round(value, 3), "limit": limit, "unit": unit, "met": value <= limit});
        json!([
            t(
                "repro run etcd-split --sim / docker-CLI script",
                self.ratio_script,
                0.35,
                "ratio"
            ),
            t(
                "repro run etcd-split --sim / Docker floor",
                self.ratio_floor,
                1.2,
                "ratio"
            ),
            t("25 servers / 4-node run", self.ratio25, 1.5, "ratio"),
            t("teardown, 4 nodes", self.teardown4, 1.0, "s"),
            t("teardown, 25 nodes", self.teardown25, 1.0, "s"),
            t("peak memory at 25 nodes", self.rss25, 64.0, "MB"),
        ])
    }
}

fn print_table(doc: &serde_json::Value) {
    print_explore(doc);
    let e = &doc["etcd_split"];
    let rp = &e["repro"]["phases_s"];
    let fp = &e["floor"]["phases_s"];
    println!();
    println!(
        "repro bench — etcd-split on the stand-in ({}), {} paired runs, load {} → {}",
        doc["k3s_version"].as_str().unwrap_or(""),
        doc["runs"],
        doc["machine"]["load_before"].as_str().unwrap_or(""),
        doc["machine"]["load_after"].as_str().unwrap_or("")
    );
    println!(
        "{:<26} {:>8} {:>8} {:>7}",
        "phase (median s)", "repro", "floor", "ratio"
    );
    let keys: Vec<String> = fp
        .as_object()
        .map(|o| o.keys().filter(|k| *k != "create").cloned().collect())
        .unwrap_or_default();
    for k in &keys {
        let r = rp[k.as_str()].as_f64();
        let f = fp[k.as_str()].as_f64();
        match (r, f) {
            (Some(r), Some(f)) => println!("{k:<26} {r:>8.2} {f:>8.2} {:>7.2}", r / f),
            (None, Some(f)) => println!("{k:<26} {:>8} {f:>8.2}", "-"),
            _ => {}
        }
    }
    let med = |v: &serde_json::Value| v["median"].as_f64().unwrap_or(f64::NAN);
    println!(
        "{:<26} {:>8.2} {:>8.2} {:>7.2}   (median of paired ratios)",
        "wall (process)",
        med(&e["repro"]["wall_s"]),
        med(&e["floor"]["wall_s"]),
        med(&e["ratio_to_floor"])
    );
    println!(
        "docker-CLI script          {:>8.2} s   repro/script {:.2}, floor/script {:.2} ({} of {} runs counted)",
        med(&e["script"]["wall_s"]),
        med(&e["ratio_to_script"]),
        med(&e["floor_to_script"]),
        e["script"]["counted"],
        doc["runs"]
    );
    let s = &doc["scale_25"];
    println!(
        "25 servers                 {:>8.2} s   ×{:.2} the 4-node run (floor: {:.2} s, ×{:.2}), teardown {:.2} s",
        med(&s["repro_wall_s"]),
        s["ratio_to_4_nodes"].as_f64().unwrap_or(f64::NAN),
        med(&s["floor_wall_s"]),
        s["floor_ratio_to_4_nodes"].as_f64().unwrap_or(f64::NAN),
        med(&s["teardown_s"])
    );
    println!(
        "peak memory                {:>8.1} MB (4 nodes) {:.1} MB (25 nodes)",
        e["repro"]["peak_rss_mb"].as_f64().unwrap_or(f64::NAN),
        s["peak_rss_mb"].as_f64().unwrap_or(f64::NAN)
    );
    let l = &doc["latency_ms"];
    println!(
        "log line → observation     p50 {} ms, p99 {} ms over {} lines",
        l["p50"], l["p99"], l["lines"]
    );
    for m in doc["matrix"].as_array().into_iter().flatten() {
        println!(
            "matrix --jobs {:<4}         {:>8.1} s for {} versions{}",
            jobs_of(m),
            m["wall_s"].as_f64().unwrap_or(f64::NAN),
            m["versions"],
            if m["all_as_expected"] == true {
                ""
            } else {
                "  (NOT all as expected)"
            }
        );
    }
    let p = &doc["paced"];
    if !p.is_null() {
        println!(
            "paced (--sim-pace {})      {:>8.2} s   critical path {:.2} s, ratio {:.3} (target ≤ {})",
            p["pace"].as_str().unwrap_or(""),
            med(&p["wall_s"]),
            p["critical_path_s"].as_f64().unwrap_or(f64::NAN),
            med(&p["ratio_to_critical_path"]),
            p["target_ratio"]
        );
        println!(
            "start order, old vs new    {:>8.2} s → {:.2} s: {:.2} s saved (model: {:.2} s)",
            med(&p["old_order"]["wall_s"]),
            med(&p["wall_s"]),
            med(&p["start_order_gain_s"]),
            p["start_order_gain_model_s"].as_f64().unwrap_or(f64::NAN)
        );
    }
    println!("targets:");
    for t in doc["targets"].as_array().into_iter().flatten() {
        println!(
            "  [{}] {:<48} {} (limit {} {})",
            if t["met"] == true { "met" } else { "NOT" },
            t["target"].as_str().unwrap_or(""),
            t["value"],
            t["limit"],
            t["unit"].as_str().unwrap_or("")
        );
    }
}

/// A matrix row's `--jobs`: a string since `auto` (older bench files hold numbers).
fn jobs_of(m: &serde_json::Value) -> String {
    m["jobs"]
        .as_str()
        .map_or_else(|| m["jobs"].to_string(), str::to_string)
}

/// docs/performance.md's table: every figure read from a bench file, none typed by hand.
fn readme_table(doc: &serde_json::Value) -> String {
    let med = |v: &serde_json::Value| v["median"].as_f64().unwrap_or(f64::NAN);
    let num = |v: &serde_json::Value| v.as_f64().unwrap_or(f64::NAN);
    let e = &doc["etcd_split"];
    let s = &doc["scale_25"];
    let l = &doc["latency_ms"];
    let mut out = String::new();
    out.push_str(&format!(
        "Measured by `make bench` ({}, {} paired runs, {} CPUs, load average {} → {}, git {}):\n\n",
        doc["generated_at"].as_str().unwrap_or("?"),
        doc["runs"],
        doc["machine"]["cpus"],
        doc["machine"]["load_before"].as_str().unwrap_or("?"),
        doc["machine"]["load_after"].as_str().unwrap_or("?"),
        doc["git"].as_str().unwrap_or("?"),
    ));
    out.push_str("| figure | value |\n|---|---|\n");
    let rows = [
        (
            "`repro run etcd-split --sim` (v1.33.4+k3s1), wall time".to_string(),
            format!("{:.2} s", med(&e["repro"]["wall_s"])),
        ),
        (
            "Docker floor (the same plan with bare API calls)".into(),
            format!(
                "{:.2} s — repro/floor {:.2}",
                med(&e["floor"]["wall_s"]),
                med(&e["ratio_to_floor"])
            ),
        ),
        (
            "docker-CLI script (`bench/etcd-split.sh`, 1 s polls and settle)".into(),
            format!(
                "{:.2} s — repro/script {:.2} (the floor itself: {:.2})",
                med(&e["script"]["wall_s"]),
                med(&e["ratio_to_script"]),
                med(&e["floor_to_script"])
            ),
        ),
        (
            "25 servers (5 etcd-only + 20 control-plane-only)".into(),
            format!(
                "{:.2} s — ×{:.2} the 4-node run (floor ×{:.2})",
                med(&s["repro_wall_s"]),
                num(&s["ratio_to_4_nodes"]),
                num(&s["floor_ratio_to_4_nodes"])
            ),
        ),
        (
            "teardown, 4 / 25 nodes".into(),
            format!(
                "{:.2} s / {:.2} s (floor {:.2} s / {:.2} s)",
                num(&e["repro"]["phases_s"]["teardown"]),
                med(&s["teardown_s"]),
                num(&e["floor"]["phases_s"]["teardown"]),
                num(&s["floor_phases_s"]["teardown"])
            ),
        ),
        (
            "peak memory of `repro run`, 4 / 25 nodes".into(),
            format!(
                "{:.1} MB / {:.1} MB",
                num(&e["repro"]["peak_rss_mb"]),
                num(&s["peak_rss_mb"])
            ),
        ),
        (
            "log line → in repro's hands (Docker timestamp to receipt)".into(),
            format!(
                "p50 {:.2} ms, p99 {:.2} ms ({} lines)",
                num(&l["p50"]),
                num(&l["p99"]),
                l["lines"]
            ),
        ),
    ];
    for (k, v) in rows {
        out.push_str(&format!("| {k} | {v} |\n"));
    }
    let m: Vec<String> = doc["matrix"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| {
            let per_minute = m["runs_per_minute"]
                .as_f64()
                .map_or(String::new(), |r| format!(" ({r:.1} runs/min)"));
            format!(
                "`--jobs {}` {:.0} s{per_minute}",
                jobs_of(m),
                m["wall_s"].as_f64().unwrap_or(f64::NAN)
            )
        })
        .collect();
    if !m.is_empty() {
        out.push_str(&format!(
            "| `repro matrix` of etcd-split on 8 versions | {} |\n",
            m.join(", ")
        ));
    }
    let p = &doc["paced"];
    if !p.is_null() {
        out.push_str(&format!(
            "| paced run (`--sim-pace {}`: real k3s timings, halved) vs the critical path `repro plan` prints | {:.2} s vs {:.2} s — ratio {:.3} (target ≤ {}) |\n",
            p["pace"].as_str().unwrap_or("?"),
            med(&p["wall_s"]),
            num(&p["critical_path_s"]),
            med(&p["ratio_to_critical_path"]),
            p["target_ratio"]
        ));
        out.push_str(&format!(
            "| start order of #23 vs the one before (paced; cp-1 beside etcd-2 instead of after etcd-3) | {:.2} s → {:.2} s, {:.2} s saved per run (model: {:.2} s) |\n",
            med(&p["old_order"]["wall_s"]),
            med(&p["wall_s"]),
            med(&p["start_order_gain_s"]),
            num(&p["start_order_gain_model_s"])
        ));
    }
    out.push_str(&explore::readme_row(doc).unwrap_or_default());
    out
}
