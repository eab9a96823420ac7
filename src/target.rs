//! What to run: a check, on which topology, version and image. One type, read from the command
//! line by clap (`repro run`/`plan` flatten it) and built by hand by `matrix` and `bisect`; below
//! both `cli` and `run`, so neither imports the other for it.

use std::path::PathBuf;

use clap::Args;

/// What to run: a check, on which topology, version and image.
#[derive(Debug, Clone, Args)]
pub(crate) struct Target {
    /// The check: a name from `repro list`, or a path to a check file.
    pub(crate) check: String,
    /// Use this topology instead of the check's own: a name from `repro list`, or the path of
    /// a topology file (e.g. ./two-etcd.yaml).
    #[arg(long)]
    pub(crate) topology: Option<String>,
    /// The version to run, e.g. v1.33.4+k3s1 (default: the topology's). `--k3s-version`, the
    /// older name, still works (hidden).
    // REPRO_K3S_VERSION keeps its name (an exception to "k3s facts only in distro/"): scripts and
    // CI set it, and renaming it would break them.
    #[arg(long = "version", alias = "k3s-version", env = "REPRO_K3S_VERSION")]
    pub(crate) version: Option<String>,
    /// Image to run instead of rancher/k3s:<version>.
    #[arg(long, conflicts_with = "sim", value_parser = ImageRef)]
    pub(crate) image: Option<String>,
    /// Use the k3s stand-in image for the version (built on the spot if missing).
    #[arg(long)]
    pub(crate) sim: bool,
    /// With --sim: the stand-in takes real k3s's time for every phase of a boot, times this
    /// factor (1 = real k3s timings, 0.5 = twice as fast; default: no pacing, boots take
    /// milliseconds). `repro plan` then prints the run's critical path under that model.
    #[arg(long, requires = "sim", value_name = "F", value_parser = distro::pace::parse_pace)]
    pub(crate) sim_pace: Option<f64>,
    /// With --sim: plant one bug of the stand-in's catalogue (`distro::plant`) in every node,
    /// to measure what `repro explore` finds: joined-metrics, cached-flannel-backend,
    /// refused-kube-proxy, control-plane-panic (docs/explore.md "Planted bugs").
    #[arg(long, requires = "sim", value_name = "NAME", value_parser = distro::plant::parse_plant)]
    pub(crate) sim_plant: Option<String>,
    /// A k3s or rke2 binary to run instead of the image's (a local build: k3s's
    /// `dist/artifacts/k3s`, rke2's `bin/rke2`), copied into every node; the version it reports
    /// is the run's (and says the distribution), and it runs in the image of that version's
    /// line (or `--image`).
    #[arg(
        long,
        value_name = "PATH",
        conflicts_with = "k3s_commit",
        value_parser = crate::builds::parse_binary_path
    )]
    pub(crate) k3s_binary: Option<PathBuf>,
    /// The CI build of a k3s commit (the full 40-hex SHA), downloaded from k3s's CI storage
    /// (`REPRO_K3S_CI_URL` overrides it), checked against its sha256sum and cached; then as
    /// `--k3s-binary`.
    #[arg(
        long,
        value_name = "SHA",
        value_parser = crate::builds::parse_commit
    )]
    pub(crate) k3s_commit: Option<String>,
    /// An rke2 release-artifacts folder (`rke2.linux-amd64.tar.gz`, `sha256sum-amd64.txt`,
    /// optionally `rke2-images.linux-amd64.tar.zst` and rke2's `install.sh`): repro checks the
    /// tarball's sum, then builds and caches the node image from it on `--node-base`.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["sim", "image"])]
    pub(crate) artifacts: Option<PathBuf>,
    /// The systemd image a node image from release artifacts (--artifacts, or fetched when a
    /// real rke2 run has neither it nor --image) is built on, pulled if absent (default: the
    /// one rke2's Docker tests use, rancher/systemd-node:v0.0.5).
    #[arg(long, value_name = "IMAGE", conflicts_with_all = ["sim", "image"], value_parser = ImageRef)]
    pub(crate) node_base: Option<String>,
    /// `--no-images-tarball` ([`ImagesTarballArg`]), which every command that runs or plans a
    /// check takes: not a flag of the target itself.
    #[arg(skip)]
    pub(crate) no_images_tarball: bool,
    /// The build under test once read (`--k3s-binary`, or `--k3s-commit` fetched): not a flag.
    #[arg(skip)]
    pub(crate) build: Option<crate::builds::Build>,
}

impl Target {
    /// The one constructor besides clap's: `check` on the stand-in or not, nothing else chosen
    /// (`..Target::of(…)` then sets what a command knows: a version, a commit, a build).
    pub(crate) fn of(check: impl Into<String>, sim: bool, sim_pace: Option<f64>) -> Target {
        Target {
            check: check.into(),
            topology: None,
            version: None,
            image: None,
            sim,
            sim_pace,
            sim_plant: None,
            k3s_binary: None,
            k3s_commit: None,
            artifacts: None,
            node_base: None,
            no_images_tarball: false,
            build: None,
        }
    }
}

/// `--no-images-tarball`, declared once and flattened into the run options (`run`, `verify`,
/// `matrix`, `bisect`) and `plan`, each of which copies it into its targets.
#[derive(Debug, Clone, Copy, Default, Args)]
pub(crate) struct ImagesTarballArg {
    /// Leave rke2's air-gap images tarball out of the node image (not fetched with the release
    /// artifacts, as it is by default, nor taken from --artifacts): every node then pulls its
    /// images from docker.io at boot, inside --timeout, under Docker Hub's anonymous limit of 10
    /// pulls an hour per IPv4 address, which a run of several nodes is likely to hit.
    #[arg(long)]
    pub(crate) no_images_tarball: bool,
}

/// The version an image reference's tag names, when the tag has a distribution's form
/// (`rancher/k3s:v1.33.5-k3s1`, `rancher/rke2-runtime:v1.32.9-rke2r1`, the stand-in's
/// `repro.local/k3s-sim:v1.33.5-k3s1`): the version of record of a run of that image. A tag of
/// another form (`:dev`, `:latest`, a digest alone) names none.
pub(crate) fn image_version(reference: &str) -> Option<distro::Version> {
    let without_digest = reference.split('@').next().unwrap_or(reference);
    // The tag follows the last `:` after the last `/` (a registry's `:port` comes before it).
    let last = without_digest.rsplit('/').next().unwrap_or(without_digest);
    let (_, tag) = last.rsplit_once(':')?;
    tag.parse().ok()
}

/// The value parser of every flag that takes an image (`--image`, `--node-base`, `doctor
/// --image`): [`parse_image`], with an error of its own. clap's usual one quotes the value raw —
/// a newline in it would print a line of the attacker's (`FAKE: ok`) —; this one shows the
/// value with control characters escaped, and redacted (a URL's password) as every error is.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ImageRef;

impl clap::builder::TypedValueParser for ImageRef {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        let flag = arg.map_or_else(|| "--image".to_string(), |a| format!("--{}", a.get_id()));
        let flag = flag.replace('_', "-");
        let refuse = |why: String| {
            let msg = crate::term::redacted(&format!("{flag}: {why}\n"));
            clap::Error::raw(clap::error::ErrorKind::ValueValidation, msg).with_cmd(cmd)
        };
        let Some(s) = value.to_str() else {
            return Err(refuse(format!(
                "`{}` is not UTF-8, so not an image reference",
                value.to_string_lossy().escape_debug()
            )));
        };
        parse_image(s).map_err(refuse)
    }
}

/// `--image`: a Docker image reference (`[host[:port]/]path[:tag][@sha256:digest]`, path
/// lowercase). A malformed one used to pass, then fail as "cannot pull" (exit 3) at the start of
/// the run; it is bad input.
fn parse_image(s: &str) -> Result<String, String> {
    static REFERENCE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        let component = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*";
        regex::Regex::new(&format!(
            r"^(?:[a-zA-Z0-9](?:[a-zA-Z0-9.-]*[a-zA-Z0-9])?(?::[0-9]+)?/)?{component}(?:/{component})*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})?(?:@sha256:[a-f0-9]{{64}})?$"
        ))
        .expect("static regex")
    });
    if s.len() <= 255 && REFERENCE.is_match(s) {
        Ok(s.to_string())
    } else {
        let facts = distro::Distro::default().facts();
        Err(format!(
            "`{}` is not an image reference; write e.g. {}:{} or registry.local:5000/k3s:dev (lowercase name, optional :tag)",
            s.escape_debug(),
            facts.image_repository,
            facts.example_version.replace('+', "-")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_references() {
        for ok in [
            "rancher/k3s:v1.33.4-k3s1",
            "repro.local/k3s-sim:v1.33.4-k3s1",
            "repro.local/archive-test:12345",
            "registry.local:5000/team/k3s:dev",
            "localhost/k3s",
            "k3s",
            "rancher/k3s@sha256:3f0d1c9e5b7a2d4f6e8c0a1b3d5f7e9c2a4b6d8f0e1c3a5b7d9f1e3c5a7b9d1f",
        ] {
            assert!(parse_image(ok).is_ok(), "{ok}");
        }
        for bad in [
            "Bad Image!",
            "rancher/K3s",
            "",
            "rancher/k3s:",
            "rancher//k3s",
            "-rancher/k3s",
            "rancher/k3s:tag with space",
        ] {
            assert!(parse_image(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_image_tag_of_a_distributions_form_names_its_version() {
        let v = |s: &str| image_version(s).map(|v| v.to_string());
        assert_eq!(
            v("rancher/k3s:v1.33.5-k3s1").as_deref(),
            Some("v1.33.5+k3s1")
        );
        assert_eq!(
            v("registry.local:5000/k3s:v1.33.4-rc1-k3s1@sha256:3f0d1c9e5b7a2d4f6e8c0a1b3d5f7e9c2a4b6d8f0e1c3a5b7d9f1e3c5a7b9d1f").as_deref(),
            Some("v1.33.4-rc1+k3s1")
        );
        assert_eq!(
            v("repro.local/rke2-sim:v1.32.9-rke2r1").as_deref(),
            Some("v1.32.9+rke2r1")
        );
        for none in [
            "registry.local:5000/k3s",
            "registry.local:5000/k3s:dev",
            "k3s:latest",
            "rancher/k3s@sha256:3f0d1c9e5b7a2d4f6e8c0a1b3d5f7e9c2a4b6d8f0e1c3a5b7d9f1e3c5a7b9d1f",
        ] {
            assert_eq!(v(none), None, "{none}");
        }
    }
}
