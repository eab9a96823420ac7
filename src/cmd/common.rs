//! Helpers the commands share: resolving a target into a scenario and a plan, printing to
//! stdout, version arguments, results folder names, and the batch commands' interrupt listener.

use std::path::Path;

use tokio_util::sync::CancellationToken;

use crate::catalog::{self, Catalog};
use crate::error::Error;
use crate::plan::{self, Plan};
use crate::run::Target;
use crate::scenario::Scenario;
use distro::Version;

/// Resolves a target (check, topology, version, image) into a scenario and a plan, or the
/// diagnostics to print (exit 2). Everything about the input is checked here, before Docker.
pub(crate) fn resolve(root: Option<&Path>, t: &Target) -> Result<(Scenario, Plan), Error> {
    let root = catalog::find_root(root);
    let cat = Catalog::load(root.as_deref()).map_err(|d| Error::bad_input(d.to_string()))?;
    let asked: Option<Version> = match &t.version {
        Some(v) => Some(v.parse().map_err(|e: distro::VersionError| {
            Error::bad_input(format!(
                "error: --k3s-version: {e}\n  help: e.g. --k3s-version {}\n",
                distro::Distro::default().facts().example_version
            ))
        })?),
        None => None,
    };
    let sc = cat
        .scenario_on(&t.check, t.topology.as_deref(), asked.as_ref())
        .map_err(|d| Error::bad_input(d.to_string()))?;
    let version = asked.unwrap_or_else(|| sc.topology.default_version.clone());
    let distro = sc.topology.distro;
    if version.distro != distro {
        let facts = distro.facts();
        return Err(Error::bad_input(format!(
            "error: --k3s-version: `{version}` is a {} version, but topology `{}` runs {distro}\n  help: give a {distro} version, e.g. {}\n",
            version.distro, sc.topology.name, facts.example_version
        )));
    }
    if t.sim {
        crate::sim_image::plays(distro)
            .map_err(|e| Error::bad_input(format!("error: --sim: {e}\n")))?;
    }
    let image = match (&t.image, t.sim) {
        (Some(i), _) => i.clone(),
        (None, true) => sim_image_ref(&version),
        (None, false) => distro.facts().image(&version),
    };
    let p = plan::plan(&sc, &version, &image);
    Ok((sc, p))
}

/// The stand-in's image name for a version (kept in sync with `sim_image`).
pub(crate) fn sim_image_ref(v: &Version) -> String {
    format!(
        "{}:{}",
        crate::sim_image::sim_repository(v.distro),
        v.image_tag()
    )
}

/// Writes a command's output, sanitised (see `crate::term`). A closed pipe (`repro plan x | head`)
/// is the reader's choice, not an error.
pub(crate) fn write_stdout(text: &str) -> std::io::Result<()> {
    crate::term::write_out(text)
}

/// Set by a command whose stdout carries one JSON document (`matrix --format json`): the lines
/// for people then go to stderr, so `repro matrix --format json | jq` reads clean JSON.
static PEOPLE_TO_STDERR: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Sends every later [`out`] line to stderr (see `PEOPLE_TO_STDERR`).
pub(crate) fn people_to_stderr() {
    PEOPLE_TO_STDERR.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Prints a line to stdout; a closed pipe is the reader's choice, and a stdout that cannot be
/// written has nobody left to tell.
pub(crate) fn out(text: &str) {
    if PEOPLE_TO_STDERR.load(std::sync::atomic::Ordering::SeqCst) {
        errln!("{text}");
        return;
    }
    let _ = write_stdout(&format!("{text}\n"));
}

/// A `--k3s-versions` / `--good` / `--bad` entry: a version, or a channel resolved on the
/// channel server. A malformed entry is bad input (2); a channel that cannot be resolved is
/// infrastructure (3): the network is missing, not the user's input wrong.
pub(crate) async fn version_entry(raw: &str, flag: &str) -> Result<Version, Error> {
    let raw = raw.trim();
    if crate::channels::is_channel(raw) {
        // Channels name k3s releases: matrix and bisect entries are k3s versions today (a
        // distribution flag comes with the second distribution).
        let v = crate::channels::resolve(distro::Distro::K3s, raw)
            .await
            .map_err(|e| Error::Channel(format!("error: {flag}: {e}")))?;
        errln!("repro: channel `{raw}` is {v} today");
        return Ok(v);
    }
    raw.parse::<Version>().map_err(|e| {
        Error::bad_input(format!(
            "error: {flag}: {e}\n  help: give full versions ({}) or a channel (stable, latest, v1.33)",
            distro::Distro::default().facts().example_version
        ))
    })
}

/// `matrix-20250101T000000Z-ab12cd34`-style folder names.
pub(crate) fn stamped(prefix: &str) -> String {
    let t = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let id: String = (0..4)
        .map(|_| format!("{:02x}", rand::random::<u8>()))
        .collect();
    format!("{prefix}-{t}-{id}")
}

/// Creates a command's own results folder (0700, like a run's: it holds runs' folders).
pub(crate) fn create_dir(dir: &Path) -> Result<(), Error> {
    crate::results_folder::private_dir(dir).map_err(|source| Error::Write {
        path: dir.to_path_buf(),
        source,
    })
}

/// SIGINT, SIGTERM or SIGHUP cancels the token (each running run also hears it and cleans up).
pub(crate) fn spawn_interrupt_listener(cancel: CancellationToken) -> tokio::task::JoinHandle<()> {
    let mut signals = crate::run::interrupt::Interrupts::listen();
    tokio::spawn(async move {
        let s = signals.next().await;
        errln!("repro: interrupted ({s}) — no new runs start; running ones are removed");
        cancel.cancel();
    })
}
