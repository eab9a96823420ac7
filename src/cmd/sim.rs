//! `repro sim build`: the stand-in images for offline runs; `repro sim binary`: a stamped
//! stand-in binary (a build of a version, with the bug or not).

use crate::cli::{Global, SimCommand};
use crate::error::Error;
use crate::exit::Exit;
use distro::Version;

pub(crate) async fn run(_g: &Global, cmd: &SimCommand) -> Result<Exit, Error> {
    let (versions, rebuild) = match cmd {
        SimCommand::Build { versions, rebuild } => (versions, rebuild),
        SimCommand::Binary {
            version,
            fixed,
            out,
            ..
        } => return write_binary(version, *fixed, out),
        SimCommand::Artifacts { version, out } => return write_artifacts(version, out),
    };
    let wanted: Vec<String> = if versions.is_empty() {
        distro::Distro::K3s
            .facts()
            .sim_versions
            .iter()
            .map(|s| s.to_string())
            .collect()
    } else {
        versions.clone()
    };
    for v in &wanted {
        match v.parse::<Version>() {
            Err(e) => return Err(Error::bad_input(format!("repro sim build: {e}"))),
            Ok(v) => crate::sim_image::plays(v.distro)
                .map_err(|e| Error::bad_input(format!("repro sim build: {e}")))?,
        }
    }
    let engine = crate::docker::connect().await?;
    // An interrupt (SIGINT, SIGTERM, SIGHUP) drops the build's connection, which makes the
    // engine cancel the build and remove its intermediate containers; the exit is 130.
    let mut signals = crate::run::interrupt::Interrupts::listen();
    let build = async {
        for v in &wanted {
            let t = std::time::Instant::now();
            errln!("repro sim build: preparing the stand-in for {v}");
            let tag = crate::sim_image::ensure_sim_image(&engine, v, *rebuild).await?;
            super::common::out(&format!("{tag}  ({:.1}s)", t.elapsed().as_secs_f64()));
        }
        Ok::<_, Error>(())
    };
    tokio::select! {
        r = build => r.map(|()| Exit::Ok),
        s = signals.next() => {
            errln!("repro sim build: interrupted ({s}); the image being built is not tagged");
            Ok(Exit::Interrupted)
        }
    }
}

/// The stand-in's rke2 release artifacts of `version` into `out`.
fn write_artifacts(version: &str, out: &std::path::Path) -> Result<Exit, Error> {
    let v: Version = version
        .parse()
        .map_err(|e| Error::usage(format!("--version: {e}")))?;
    let facts = v.distro.facts();
    if facts.release_artifacts.is_none() {
        return Err(Error::usage(format!(
            "--version {v} is a {} version; release artifacts are rke2's (e.g. {})",
            v.distro,
            distro::Distro::Rke2.facts().example_version
        )));
    }
    let binary = crate::sim_image::find_sim_binary()?;
    crate::sim_node_image::write_artifacts(facts, &v.to_string(), &binary, out)?;
    super::common::out(&out.display().to_string());
    Ok(Exit::Ok)
}

/// Copies the stand-in binary to `out` with its stamp (the version it reports, the fix or not).
fn write_binary(version: &str, fixed: bool, out: &std::path::Path) -> Result<Exit, Error> {
    let v: Version = version
        .parse()
        .map_err(|e| Error::bad_input(format!("repro sim binary: {e}")))?;
    // A stand-in binary not built yet, or an output that cannot be written, is infrastructure
    // (exit 3), as for `repro sim artifacts` and every other command.
    let from = crate::sim_image::find_sim_binary()
        .map_err(|e| Error::Other(e.context("repro sim binary")))?;
    let cannot = |e: std::io::Error| Error::Write {
        path: out.to_path_buf(),
        source: e,
    };
    let mut bytes = std::fs::read(&from).map_err(|e| {
        Error::Other(anyhow::anyhow!(
            "repro sim binary: cannot read {}: {e}",
            from.display()
        ))
    })?;
    let stamp = distro::sim_stamp::SimStamp {
        version: v.to_string(),
        bootstrap_fix: fixed,
    };
    bytes.extend(stamp.to_bytes());
    std::fs::write(out, &bytes).map_err(cannot)?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(out, std::fs::Permissions::from_mode(0o755)).map_err(cannot)?;
    }
    super::common::out(&format!(
        "{}  (stand-in, reports {v}, {})",
        out.display(),
        if fixed { "fixed" } else { "buggy" }
    ));
    Ok(Exit::Ok)
}
