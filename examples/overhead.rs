//! Benchmark (not a test): repro's own overhead on the k3s stand-in.
//!
//! 1. Wall time of `repro run etcd-split --sim` against the time the nodes themselves spend
//!    booting on the critical path (container start → ready line, summed over boots that the
//!    run waited for one after another) and the settle windows the rules require. What is left
//!    is repro + Docker API overhead (creating, copying files, stopping, observing).
//! 2. Log latency: how long after Docker timestamps a line repro has it in hand, over every
//!    line of a stand-in boot that prints a line every millisecond.
//!
//! Run with `make bench` (needs Docker and `make sim`). Prints figures; asserts nothing.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use chrono::{DateTime, Utc};
use repro::result::Outcome;
use repro::run::{Expect, Privileged, RunConfig, Target};

const RUNS: usize = 3;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut rows = Vec::new();
    for i in 0..RUNS {
        let tmp = std::env::temp_dir().join(format!("repro-bench-{}", std::process::id()));
        let cfg = RunConfig {
            target: Target {
                check: "etcd-split".into(),
                topology: None,
                k3s_version: Some("v1.33.4+k3s1".into()),
                image: None,
                sim: true,
            },
            expect: Expect::Outcome(Outcome::Reproduced),
            timeout: std::time::Duration::from_secs(120),
            settle: None,
            keep: false,
            image_archive: None,
            results: tmp.clone(),
            rebuild_sim: false,
            privileged: Privileged::Auto,
            argv: vec![],
        };
        let (sc, plan) = repro::cmd::common::resolve(None, &cfg.target)?;
        let settle = sc.check.settle.as_secs_f64();
        let t = Instant::now();
        let out = repro::run::execute(&cfg, sc, plan, vec![]).await;
        let wall = t.elapsed().as_secs_f64();
        if let Some(e) = &out.error {
            anyhow::bail!("run {i} failed: {e}");
        }
        let dir = out
            .dir
            .clone()
            .ok_or_else(|| anyhow::anyhow!("run {i} made no results folder"))?;
        let r: repro::result::RunResult =
            serde_json::from_str(&std::fs::read_to_string(dir.join("result.json"))?)?;
        let boot_secs: f64 = r
            .boots
            .iter()
            .filter_map(|b| {
                let s = DateTime::parse_from_rfc3339(&b.started_at).ok()?;
                let e = DateTime::parse_from_rfc3339(b.ready_at.as_ref()?).ok()?;
                Some((e - s).num_milliseconds() as f64 / 1000.0)
            })
            .sum();
        // A step waits out one settle window (its nodes settle concurrently) when it decided a
        // feature down by the settle rule on a boot it started itself; older boots settled earlier.
        let settle_waits = r
            .steps
            .iter()
            .filter(|s| {
                s.observations.iter().any(|o| {
                    o.reason.starts_with("settle rule")
                        && r.boots
                            .iter()
                            .any(|b| b.node == o.node && b.boot == o.boot && b.step == s.index)
                })
            })
            .count() as f64
            * settle;
        rows.push((
            wall,
            boot_secs,
            settle_waits,
            r.timings.get("teardown").copied().unwrap_or(0.0),
            out.outcome(),
        ));
        let _ = std::fs::remove_dir_all(&tmp);
    }
    println!("etcd-split on the stand-in (v1.33.4+k3s1), {RUNS} runs");
    println!(
        "{:>8} {:>14} {:>10} {:>10} {:>10}  verdict",
        "wall s", "boot→ready s", "settle s", "teardown", "overhead"
    );
    for (wall, boot, settle, down, verdict) in &rows {
        println!(
            "{wall:>8.2} {boot:>14.2} {settle:>10.2} {down:>10.2} {:>10.2}  {}",
            wall - boot - settle,
            verdict.map_or("-", |v| v.as_str())
        );
    }
    latency().await?;
    // Peak memory of this process (three full runs plus the latency probe), from the kernel.
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        if let Some(line) = status.lines().find(|l| l.starts_with("VmHWM:")) {
            println!(
                "peak resident memory of repro (3 runs in one process): {}",
                line.trim_start_matches("VmHWM:").trim()
            );
        }
    }
    Ok(())
}

/// Starts one stand-in container with garbage output, follows it like a run does, and measures
/// receipt time minus Docker's line timestamp for every line.
async fn latency() -> anyhow::Result<()> {
    let engine = repro::docker::Engine::connect().await?;
    let image = repro::sim_image::ensure_sim_image(&engine.docker, "v1.33.4+k3s1", false).await?;
    let name = format!("repro-bench-latency-{}", std::process::id());
    let body = bollard::models::ContainerCreateBody {
        image: Some(image),
        cmd: Some(vec!["server".into(), "--cluster-init".into()]),
        env: Some(vec!["K3S_TOKEN=bench".into(), "REPRO_SIM_GARBAGE=1".into()]),
        labels: Some(
            [
                (repro::docker::LABEL_MANAGED.to_string(), "true".to_string()),
                (repro::docker::LABEL_RUN.to_string(), name.clone()),
            ]
            .into(),
        ),
        ..Default::default()
    };
    let opts = bollard::query_parameters::CreateContainerOptionsBuilder::default()
        .name(&name)
        .build();
    engine.docker.create_container(Some(opts), body).await?;
    engine.start(&name).await?;
    let samples: Arc<Mutex<Vec<f64>>> = Arc::default();
    let s2 = samples.clone();
    let on_line: repro::run::watch::OnLine = Arc::new(move |_c, l| {
        let ms = (Utc::now() - l.ts).num_microseconds().unwrap_or(0) as f64 / 1000.0;
        s2.lock().unwrap_or_else(|p| p.into_inner()).push(ms);
    });
    let h = repro::run::watch::follow(repro::run::watch::Follow {
        docker: Arc::new(engine.clone()),
        container: name.clone(),
        number: 1,
        step: 0,
        started_at: Utc::now(),
        after: None,
        ready: vec![regex::Regex::new("k3s is up and running")?],
        log_path: std::env::temp_dir().join(format!("{name}.log")),
        on_line,
        stopping: Arc::new(std::sync::atomic::AtomicBool::new(true)),
        scrub: Arc::new(|s| s),
    });
    let waited = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        h.wait_for(|b| b.ready.map(|_| ())),
    )
    .await;
    // Let the container run on a little so lines written after readiness are measured too.
    let mut rx = h.subscribe();
    for _ in 0..50 {
        if tokio::time::timeout(std::time::Duration::from_secs(1), rx.changed())
            .await
            .is_err()
        {
            break;
        }
    }
    engine
        .remove_labelled(repro::docker::LABEL_RUN, Some(&name))
        .await;
    let _ = std::fs::remove_file(std::env::temp_dir().join(format!("{name}.log")));
    waited.map_err(|_| anyhow::anyhow!("the latency node never got ready"))?;
    let mut v = samples.lock().unwrap_or_else(|p| p.into_inner()).clone();
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        anyhow::bail!("no lines measured");
    }
    let pct = |p: f64| v[((v.len() - 1) as f64 * p) as usize];
    println!(
        "log line → observation latency over {} lines: p50 {:.2} ms, p95 {:.2} ms, max {:.2} ms",
        v.len(),
        pct(0.5),
        pct(0.95),
        v[v.len() - 1]
    );
    Ok(())
}
