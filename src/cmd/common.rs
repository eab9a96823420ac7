//! Helpers the commands share: resolving a target into a scenario and a plan, printing to
//! stdout, version arguments, results folder names, and the batch commands' interrupt listener.

use std::path::Path;

use crate::catalog::{self, Catalog};
use crate::diag::Diagnostic;
use crate::error::Error;
use crate::plan::{self, Plan};
use crate::run::Target;
use crate::scenario::Scenario;
use distro::Version;

/// Resolves a target (check, topology, version, image) into a scenario and a plan, or the
/// diagnostics to print (exit 2). Everything about the input is checked here, before Docker.
pub(crate) fn resolve(root: Option<&Path>, t: &Target) -> Result<(Scenario, Plan), Error> {
    let (sc, p) = resolve_plan(root, t)?;
    let refused = plan::upgrade_problems(&p);
    if !refused.is_empty() {
        return Err(Error::usage(format!(
            "check `{}` at {}: {}",
            sc.check.name,
            p.k3s_version,
            refused.join("; ")
        )));
    }
    Ok((sc, p))
}

/// [`resolve`] without its last question, whether the check's `upgrade:` steps may start from
/// this version (a matrix leaves such a cell out instead of refusing the whole matrix).
pub(crate) fn resolve_plan(root: Option<&Path>, t: &Target) -> Result<(Scenario, Plan), Error> {
    let root = catalog::find_root(root);
    let cat = Catalog::load(root.as_deref())?;
    let asked = asked_version(root.as_deref(), t)?;
    let sc = cat.scenario_on(&t.check, t.topology.as_deref(), asked.as_ref())?;
    let version = asked.unwrap_or_else(|| sc.topology.default_version.clone());
    let distro = sc.topology.distro;
    if version.distro != distro {
        let facts = distro.facts();
        let flag = if t.version.is_some() {
            version_flag_typed()
        } else {
            "--image"
        };
        return Err(Diagnostic::general(
            format!(
                "{flag}: `{version}` is a {} version, but topology `{}` runs {distro}",
                version.distro, sc.topology.name
            ),
            format!("give a {distro} version, e.g. {}", facts.example_version),
        )
        .into());
    }
    if t.sim {
        crate::sim_image::plays(distro).map_err(|e| Error::usage(format!("--sim: {e}")))?;
    }
    let artifacts = checked_artifacts(t, &sc)?;
    // `--node-base` only means something where nodes are built on a systemd base (rke2's);
    // on a k3s run it would be ignored without a word.
    if t.node_base.is_some() && distro.facts().node_base_image.is_none() {
        return Err(Diagnostic::general(
            format!(
                "--node-base: topology `{}` runs {distro}, whose nodes run the distribution's own image, not one built on a systemd base",
                sc.topology.name
            ),
            "drop --node-base (it applies to rke2 runs from release artifacts), or give the image with --image",
        )
        .into());
    }
    // Likewise `--no-images-tarball`: only a node image built from release artifacts holds one,
    // which neither the stand-in's image nor an `--image` is.
    let images_flag = match (distro.facts().release_artifacts.is_some(), t.sim, &t.image) {
        _ if !t.no_images_tarball => None,
        (false, _, _) => Some(format!(
            "topology `{}` runs {distro}, whose nodes run the distribution's own image",
            sc.topology.name
        )),
        (true, true, _) => Some("--sim runs the stand-in's image, built without one".into()),
        (true, false, Some(i)) => Some(format!("--image {i} is used as it is")),
        (true, false, None) => None,
    };
    if let Some(why) = images_flag {
        return Err(Diagnostic::general(
            format!("--no-images-tarball: {why}; only a node image built from release artifacts (rke2's) holds an images tarball"),
            "drop --no-images-tarball",
        )
        .into());
    }
    let image = match (&t.image, t.sim) {
        _ if artifacts.is_some() => crate::sim_node_image::artifact_image_ref(
            distro.facts(),
            &version,
            artifacts.as_ref().expect("checked"),
        ),
        (Some(i), _) => i.clone(),
        (None, true) => sim_image_ref(&version),
        (None, false) => distro.facts().image(&version),
    };
    if let Some(b) = &t.build {
        if b.distro() != distro {
            return Err(Error::usage(format!(
                "{}: topology `{}` runs {distro}; builds under test are {} builds for now",
                b.flag(),
                sc.topology.name,
                b.distro()
            )));
        }
    }
    let mut p = plan::plan(&sc, &version, &image);
    if let Some(b) = &t.build {
        b.place(&mut p);
    }
    Ok((sc, p))
}

/// The version the target asks for, before its topology is known: a build under test's (the
/// release it reports), else `--version`'s, else an image's tag; `None`: the topology's default.
fn asked_version(root: Option<&Path>, t: &Target) -> Result<Option<Version>, Error> {
    match (&t.build, &t.version) {
        // A build under test says its version: the plan is of the release it reports (for a
        // commit build, the release whose image it runs in).
        (Some(b), _) => {
            let releases = crate::releases::ReleaseList::find(b.distro(), None, root)?;
            let base = b.base_version(&releases.releases);
            // Not a clap conflict: REPRO_K3S_VERSION set in a CI environment would make every
            // build run an error. The build says its version; the other one is set aside, aloud.
            if let Some(v) = &t.version {
                errln!(
                    "warning: {} {v} (or REPRO_K3S_VERSION) is set aside: the build under test reports {}",
                    version_flag_typed(),
                    b.info.reported
                );
            }
            if base.is_none() && t.image.is_none() {
                return Err(Diagnostic::general(
                    format!(
                        "{}: the binary reports `{}`, which names no release line, so no image can be chosen for it",
                        b.flag(),
                        b.info.reported
                    ),
                    "give the image to run it in with --image (and --expect fixed or --expect reproduced)",
                )
                .into());
            }
            Ok(base)
        }
        (None, flag) => {
            let flag = match flag {
                None => None,
                Some(v) => Some(v.parse::<Version>().map_err(|e| {
                    let flag = version_flag_typed();
                    let help = match did_you_mean_version(v) {
                        Some(m) => format!("did you mean {m}?"),
                        None => format!(
                            "e.g. {flag} {}",
                            distro::Distro::default().facts().example_version
                        ),
                    };
                    Diagnostic::general(format!("{flag}: {e}"), help)
                })?),
            };
            // An image tagged with a version (`rancher/k3s:v1.33.5-k3s1`) runs that version: it
            // is the version of record, planned, judged and written into "Validated on".
            let tagged = t.image.as_deref().and_then(crate::target::image_version);
            match (flag, tagged) {
                (Some(asked), Some(tag)) if asked != tag => Err(Diagnostic::general(
                    format!(
                        "--image {} is tagged {tag}, but --version asks for {asked}",
                        t.image.as_deref().unwrap_or_default()
                    ),
                    format!("the image's tag is the version it runs: leave out --version (or REPRO_K3S_VERSION), or give an image of {asked}"),
                )
                .into()),
                (Some(asked), _) => Ok(Some(asked)),
                (None, tagged) => Ok(tagged),
            }
        }
    }
}

/// `--artifacts`: a release-artifacts folder, checked before anything is created (a bad folder
/// ends the command here), for a distribution whose nodes are built from one.
fn checked_artifacts(
    t: &Target,
    sc: &Scenario,
) -> Result<Option<crate::sim_node_image::Artifacts>, Error> {
    let Some(dir) = &t.artifacts else {
        return Ok(None);
    };
    let distro = sc.topology.distro;
    if distro.facts().release_artifacts.is_none() {
        return Err(Error::usage(format!(
            "--artifacts: topology `{}` runs {distro}; release artifacts build systemd nodes (rke2)",
            sc.topology.name
        )));
    }
    let a = crate::sim_node_image::verify_artifacts(distro.facts(), dir, !t.no_images_tarball)
        .map_err(|e| Error::usage(format!("--artifacts: {e:#}")))?;
    Ok(Some(a))
}

/// The full versions an incomplete one may mean (`v1.33.4` → `v1.33.4+k3s1 or v1.33.4+rke2r1`):
/// a release's numbers, maybe an `-rcN`, without the distribution's build marker.
pub(crate) fn did_you_mean_version(raw: &str) -> Option<String> {
    let raw = raw.trim();
    let v = if raw.starts_with('v') {
        raw.to_string()
    } else {
        format!("v{raw}")
    };
    let (nums, pre) = match v[1..].split_once('-') {
        Some((n, p)) if p.starts_with("rc") && p[2..].parse::<u32>().is_ok() => (n, Some(p)),
        Some(_) => return None,
        None => (&v[1..], None),
    };
    let parts: Vec<&str> = nums.split('.').collect();
    if parts.len() != 3 || parts.iter().any(|p| p.parse::<u32>().is_err()) {
        return None;
    }
    let core = match pre {
        Some(p) => format!("v{nums}-{p}"),
        None => format!("v{nums}"),
    };
    let options: Vec<String> = distro::Distro::ALL
        .iter()
        .map(|d| format!("{core}+{}1", d.facts().build_marker))
        .collect();
    Some(options.join(" or "))
}

/// The spelling of the version flag on the command line (`--version`, or its older alias
/// `--k3s-version`), so a message names the flag the user typed.
pub(crate) fn version_flag_typed() -> &'static str {
    flag_typed(&["--version", "--k3s-version"])
}

/// Which of a flag's names the user typed (the first name when none was: a value from the
/// environment), so a message echoes the flag as typed.
pub(crate) fn flag_typed(names: &[&'static str]) -> &'static str {
    std::env::args()
        .find_map(|a| {
            names
                .iter()
                .copied()
                .find(|n| a == *n || a.strip_prefix(n).is_some_and(|r| r.starts_with('=')))
        })
        .unwrap_or(names[0])
}

/// Whether a run of `plan` fetches release artifacts first: a real run (not `--sim`) of a
/// distribution whose node image is built from them (`Facts::node_base_image`, rke2's), given
/// neither `--artifacts` nor `--image` (nor a build under test).
fn fetches_artifacts(t: &Target, plan: &Plan) -> bool {
    !t.sim
        && t.image.is_none()
        && t.artifacts.is_none()
        && t.build.is_none()
        && crate::builds::release::base_url(plan.distro).is_some()
}

/// [`resolve`] for a run: when the run needs release artifacts it was not given, and no node
/// image under the version's plain tag is in the engine's store (one built or loaded by hand),
/// they are fetched and verified (or taken from the cache) first, and the run is then exactly
/// an `--artifacts <cache folder>` run: the plan's image carries the tarball's sum. All before
/// anything is created; a version with no release is bad input (2), a mismatched or failed
/// download infrastructure (3).
pub(crate) async fn resolve_fetching(
    root: Option<&Path>,
    t: &mut Target,
    live: bool,
) -> Result<(Scenario, Plan), Error> {
    let (sc, plan) = resolve(root, t)?;
    if !fetches_artifacts(t, &plan) || local_image(&plan.image).await {
        return Ok((sc, plan));
    }
    let (distro, version, images) = (plan.distro, plan.k3s_version.clone(), !t.no_images_tarball);
    let dir = downloading(move || crate::builds::release::fetch(distro, &version, live, images))
        .await?
        .map_err(|e| match e {
            crate::builds::fetch::FetchError::NotFound(m) => {
                Error::usage(format!("--version: {m}"))
            }
            e => Error::Fetch(format!("{distro} release artifacts: {e}")),
        })?;
    t.artifacts = Some(dir);
    resolve(root, t)
}

/// [`resolve`] for `repro plan`, which downloads nothing: when the run would fetch release
/// artifacts, a note says so (the image's tag then carries the tarball's sum).
pub(crate) fn resolve_planning(root: Option<&Path>, t: &Target) -> Result<(Scenario, Plan), Error> {
    let (sc, mut plan) = resolve(root, t)?;
    let facts = plan.distro.facts();
    if let (true, Some(names)) = (fetches_artifacts(t, &plan), &facts.release_artifacts) {
        let base = crate::builds::release::base_url(plan.distro).unwrap_or_default();
        let (_, url) = crate::builds::release::urls(
            &crate::redact::without_userinfo(&base),
            &plan.k3s_version,
            names,
        );
        let images = if t.no_images_tarball {
            format!(
                "; not {} (--no-images-tarball): every node pulls its images from docker.io at boot, under Docker Hub's anonymous pull limit",
                names.images
            )
        } else {
            format!(
                " and {}, about 800 MB, so that no node pulls its images",
                names.images
            )
        };
        plan.notes.push(format!(
            "unless {} is in the engine's store, `repro run` fetches {}'s release artifacts ({url}, {} beside it{images}), checks their sha256, caches them under $XDG_CACHE_HOME/repro/{}/{}/ and builds the node image {}:{}-<first 12 of the tarball's sha256> from them; --artifacts DIR or --image NAME instead",
            plan.image,
            facts.name,
            names.checksums,
            facts.name,
            plan.k3s_version,
            facts.image_repository,
            plan.k3s_version.image_tag(),
        ));
    }
    Ok((sc, plan))
}

/// The stand-in images of `versions`, built (or refreshed, when the stand-in binary changed) one
/// after the other before runs at once start: two runs building one tag at the same time would
/// race (`repro matrix`, `repro explore --jobs`).
pub(crate) async fn prepare_sim_images(
    engine: &crate::docker::Engine,
    versions: &[String],
    rebuild: bool,
) -> Result<(), Error> {
    let t = std::time::Instant::now();
    for v in versions {
        let image = crate::sim_image::sim_image_ref(v);
        // The line a test waits for before it interrupts the build.
        errln!("repro: preparing the stand-in image {image}");
        crate::sim_image::ensure_sim_image(engine, v, rebuild)
            .await
            .map_err(|e| anyhow::anyhow!("cannot build the stand-in image {image}: {e:#}"))?;
    }
    errln!(
        "repro: stand-in images ready ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Whether `image` is in the engine's store (an engine that cannot be reached says no: the run
/// then stops at the engine, with its own message).
async fn local_image(image: &str) -> bool {
    use crate::docker::DockerApi;
    match crate::docker::connect().await {
        Ok(engine) => engine.image(image).await.is_some(),
        Err(_) => false,
    }
}

/// A download (blocking, on a thread of its own) that an interrupt ends: SIGINT, SIGTERM or
/// SIGHUP stops it, its partial file (`.part-<pid>`) is removed, and the command ends 130 —
/// not killed by the signal's default (143/129) with the partial file left in the cache.
pub(crate) async fn downloading<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Error> {
    let mut signals = crate::run::interrupt::Interrupts::listen();
    let task = tokio::task::spawn_blocking(f);
    tokio::select! {
        r = task => r.map_err(|e| Error::Other(anyhow::anyhow!("the download stopped: {e}"))),
        s = signals.next() => {
            crate::builds::fetch::abandon();
            errln!("repro: interrupted ({s}) during a download; its partial file is removed");
            Err(Error::Run(crate::run::RunError::Interrupted))
        }
    }
}

/// Reads the build under test of `--k3s-binary`, or fetches and verifies the commit build of
/// `--k3s-commit` first (`live`: a progress bar): all before anything is created, so a missing
/// file or a mismatched download ends the command with nothing to clean up.
pub(crate) async fn prepare_build(t: &mut Target, live: bool) -> Result<(), Error> {
    use crate::result::BuildSource;
    // A commit build is k3s's (its CI storage); a local build says which distribution's it is
    // (`Build::read`). `resolve` refuses a topology of another distribution.
    let distro = distro::Distro::K3s;
    let (path, source, commit) = match (&t.k3s_commit, &t.k3s_binary) {
        (Some(sha), _) => {
            let sha = sha.clone();
            let fetched = downloading({
                let sha = sha.clone();
                move || crate::builds::ci::fetch(distro, &sha, live)
            })
            .await?;
            let fetched = fetched.map_err(|e| match e {
                crate::builds::fetch::FetchError::NotFound(m) => {
                    Error::usage(format!("--k3s-commit: {m}"))
                }
                e => Error::Fetch(format!("--k3s-commit: {e}")),
            })?;
            (fetched.path, BuildSource::Commit, Some((sha, fetched.url)))
        }
        (None, Some(p)) => (p.clone(), BuildSource::Binary, None),
        (None, None) => return Ok(()),
    };
    let flag = match source {
        BuildSource::Binary => "--k3s-binary",
        BuildSource::Commit => "--k3s-commit",
    };
    let build = tokio::task::spawn_blocking(move || {
        let of = (source == BuildSource::Commit).then_some(distro);
        crate::builds::Build::read(of, &path, source, commit)
    })
    .await
    .map_err(|e| Error::Other(anyhow::anyhow!("reading the binary stopped: {e}")))?
    .map_err(|e| Error::usage(format!("{flag}: {e}")))?;
    t.build = Some(build);
    Ok(())
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
/// [`out`] with the rows of `paints` in their colour when stdout is a terminal that wants
/// colour (`term::stdout_colour`); plain text otherwise, and always when people's lines go to
/// stderr.
pub(crate) fn out_painted(text: &str, paints: &[(String, crate::term::Paint)]) {
    let to_stderr = PEOPLE_TO_STDERR.load(std::sync::atomic::Ordering::SeqCst);
    if to_stderr || paints.is_empty() || !crate::term::stdout_colour() {
        return out(text);
    }
    let mut s = String::new();
    for line in text.lines() {
        let paint = paints.iter().find(|(row, _)| row == line).map(|(_, p)| *p);
        s.push_str(&crate::term::painted(line, paint));
        s.push('\n');
    }
    let _ = crate::term::write_out_painted(&s);
}

pub(crate) fn out(text: &str) {
    if PEOPLE_TO_STDERR.load(std::sync::atomic::Ordering::SeqCst) {
        errln!("{text}");
        return;
    }
    let _ = write_stdout(&format!("{text}\n"));
}

/// A `--versions` / `--good` / `--bad` entry: a version, or a channel resolved on the
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
        let mean = did_you_mean_version(raw)
            .map(|m| format!("did you mean {m}? "))
            .unwrap_or_default();
        Diagnostic::general(
            format!("{flag}: {e}"),
            format!(
                "{mean}give full versions ({}) or a channel (stable, latest, v1.33)",
                distro::Distro::default().facts().example_version
            ),
        )
        .into()
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
    crate::safe_fs::private_dir(dir).map_err(|source| Error::Write {
        path: dir.to_path_buf(),
        source,
    })
}

/// The `--events FILE|-` stream (run/event_log.rs), opened before anything is created: a path
/// that cannot be written is bad input (exit 2). With `-` the events take stdout, and the lines
/// for people go to stderr.
pub(crate) fn event_stream(
    a: &crate::cli::EventsArg,
) -> Result<Vec<std::sync::Arc<dyn crate::run::Receiver>>, Error> {
    let Some(path) = &a.path else {
        return Ok(Vec::new());
    };
    let log = crate::run::event_log::EventLog::create(path).map_err(|e| {
        Diagnostic::general(
            format!("--events {}: {e}", path.display()),
            "give a file repro can create, or `-` for stdout",
        )
    })?;
    if a.on_stdout() {
        people_to_stderr();
    }
    Ok(vec![std::sync::Arc::new(log)])
}

/// Appends `markdown` to the file GitHub Actions names in `$GITHUB_STEP_SUMMARY` (shown on the
/// job's summary page), when it is set. A file that cannot be written costs only the summary:
/// a warning, and the command's exit stands.
pub(crate) fn append_step_summary(markdown: &str) {
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) else {
        return;
    };
    use std::io::Write;
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(markdown.as_bytes()));
    if let Err(e) = written {
        errln!(
            "warning: cannot append the job summary to {} (GITHUB_STEP_SUMMARY): {e}",
            std::path::Path::new(&path).display()
        );
    }
}

/// `--out FILE` of a command that writes one file the user names (`verify`, `report
/// --validation`, `redact`): refused before anything runs (exit 2) when it is not a new path, a
/// regular file or a character device — a link, a FIFO, a folder is never replaced
/// (`safe_fs::check_out`).
pub(crate) fn check_out(out: Option<&Path>) -> Result<(), Error> {
    match out.map(crate::safe_fs::check_out) {
        Some(Err(e)) => Err(out_error(e)),
        _ => Ok(()),
    }
}

/// Writes the user-named `--out` file through the one write path (`safe_fs::write_out`).
pub(crate) fn write_out(path: &Path, data: &[u8]) -> Result<(), Error> {
    crate::safe_fs::write_out(path, data).map_err(out_error)
}

fn out_error(e: crate::safe_fs::WriteError) -> Error {
    if e.is_hostile() {
        Diagnostic::general(
            format!("--out {e}"),
            "give a new path or a regular file (it is replaced whole), or a device such as /dev/stdout's target",
        )
        .into()
    } else {
        Error::Other(anyhow::anyhow!("--out {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incomplete_versions_get_a_did_you_mean() {
        assert_eq!(
            did_you_mean_version("v1.33.4").as_deref(),
            Some("v1.33.4+k3s1 or v1.33.4+rke2r1")
        );
        assert_eq!(
            did_you_mean_version("1.32.9-rc1").as_deref(),
            Some("v1.32.9-rc1+k3s1 or v1.32.9-rc1+rke2r1")
        );
        for none in ["1.33", "latest", "v1.33.4+k3s1x", "v1.33.4-beta"] {
            assert_eq!(did_you_mean_version(none), None, "{none}");
        }
    }
}
