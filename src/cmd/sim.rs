//! `repro sim build`: the stand-in images for offline runs.

use crate::cli::{Global, SimCommand};
use crate::docker::Engine;
use crate::error::Error;
use crate::exit;
use crate::version::K3sVersion;

/// The versions the demo and the tests use, across release lines, buggy and fixed.
pub const DEFAULT_VERSIONS: &[&str] = &[
    "v1.31.12+k3s1",
    "v1.31.13+k3s1",
    "v1.32.8+k3s1",
    "v1.32.9+k3s1",
    "v1.33.4+k3s1",
    "v1.33.5+k3s1",
    "v1.34.1+k3s1",
];

pub async fn run(_g: &Global, cmd: &SimCommand) -> Result<i32, Error> {
    let SimCommand::Build { versions, rebuild } = cmd;
    let wanted: Vec<String> = if versions.is_empty() {
        DEFAULT_VERSIONS.iter().map(|s| s.to_string()).collect()
    } else {
        versions.clone()
    };
    for v in &wanted {
        if let Err(e) = v.parse::<K3sVersion>() {
            return Err(Error::bad_input(format!("repro sim build: {e}")));
        }
    }
    let engine = Engine::connect().await?;
    // An interrupt (SIGINT, SIGTERM, SIGHUP) drops the build's connection, which makes the
    // engine cancel the build and remove its intermediate containers; the exit is 130.
    let mut signals = crate::run::interrupt::Interrupts::listen();
    let build = async {
        for v in &wanted {
            let t = std::time::Instant::now();
            errln!("repro sim build: preparing the stand-in for {v}");
            let tag = crate::sim_image::ensure_sim_image(&engine.docker, v, *rebuild).await?;
            super::common::out(&format!("{tag}  ({:.1}s)", t.elapsed().as_secs_f64()));
        }
        Ok::<_, Error>(())
    };
    tokio::select! {
        r = build => r.map(|()| exit::OK),
        s = signals.next() => {
            errln!("repro sim build: interrupted ({s}); the image being built is not tagged");
            Ok(exit::INTERRUPTED)
        }
    }
}
