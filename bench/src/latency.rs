//! Log-line-to-observation latency: how long after Docker timestamps a line repro's log
//! follower has it in hand (and has woken whoever waits on that boot), over every line of a
//! stand-in boot that also writes garbage to stdout every 150 ms, sampled for 20 s.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use chrono::Utc;
use repro::docker::DockerApi;

/// Latency samples in milliseconds, one per line.
pub async fn measure(version: &str) -> Result<Vec<f64>> {
    let engine = repro::docker::connect().await?;
    let image = repro::sim_image::ensure_sim_image(&engine, version, false).await?;
    let name = format!("repro-bench-latency-{}", std::process::id());
    let body = bollard::models::ContainerCreateBody {
        image: Some(image),
        cmd: Some(vec!["server".into(), "--cluster-init".into()]),
        env: Some(vec![
            "K3S_TOKEN=bench-not-a-secret".into(),
            "REPRO_SIM_GARBAGE=1".into(),
        ]),
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
    // A bare container (no network, volume or privileges, unlike a run's nodes): created
    // with the bench's own client, as repro's engine creates only run nodes.
    crate::connect()
        .await?
        .create_container(Some(opts), body)
        .await?;
    let log_path = std::env::temp_dir().join(format!("{name}.log"));
    let samples: Arc<Mutex<Vec<f64>>> = Arc::default();
    let measured = async {
        engine.start(&name).await?;
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
            log_path: log_path.clone(),
            on_line,
            stopping: Arc::new(std::sync::atomic::AtomicBool::new(true)),
            scrub: Arc::new(|s| s),
        });
        tokio::time::timeout(Duration::from_secs(30), h.wait_for(|b| b.ready.map(|_| ())))
            .await
            .map_err(|_| anyhow!("the latency node never got ready"))?;
        // The stand-in goes on writing garbage lines (~5 a second): sample them for a while so
        // the p99 rests on ~100 lines, not on the dozen of the boot itself.
        tokio::time::sleep(Duration::from_secs(20)).await;
        anyhow::Ok(())
    }
    .await;
    engine
        .remove_labelled(repro::docker::LABEL_RUN, Some(&name))
        .await;
    let _ = std::fs::remove_file(&log_path);
    measured?;
    let v = samples.lock().unwrap_or_else(|p| p.into_inner()).clone();
    if v.is_empty() {
        bail!("no lines measured");
    }
    Ok(v)
}
