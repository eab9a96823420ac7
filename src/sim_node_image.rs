//! Stand-in images of a distribution whose nodes run it as a systemd unit (RKE2): the systemd
//! base image (`make systemd-base`, docs/systemd-nodes.md) with the stand-in installed as the
//! distribution is — a tarball laid out as rke2's release tarball (`bin/rke2`,
//! `lib/systemd/system/rke2-{server,agent}.{service,env}`, `share/rke2/`), unpacked by the
//! artifact-path install step of rke2's install.sh (`sim/image/rke2/install.sh`).
//!
//! Built through [`DockerApi`] with the legacy builder and an in-memory context, and cached by
//! a fingerprint label of the binary, the files of `sim/image/rke2/` and the base image's id,
//! as [`crate::sim_image`] does for the `FROM scratch` images.

use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context};

use crate::docker::DockerApi;

/// The systemd base image every systemd node image starts from; `sim/scripts/
/// build-systemd-base.sh` (`make systemd-base`) builds it under this name.
pub(crate) const SYSTEMD_BASE_IMAGE: &str = "repro.local/systemd-base:bookworm";

const DOCKERFILE_TEMPLATE: &str = include_str!("../sim/image/rke2/Dockerfile.in");
const INSTALL_SH: &str = include_str!("../sim/image/rke2/install.sh");
const SERVER_UNIT: &str = include_str!("../sim/image/rke2/rke2-server.service");
const AGENT_UNIT: &str = include_str!("../sim/image/rke2/rke2-agent.service");

/// `size-mtime` of the binary, the template's rev, a digest of the installed files and the
/// base image's id: changes whenever any of them does.
pub(crate) fn fingerprint(binary: &Path, base_id: &str) -> anyhow::Result<String> {
    let meta = std::fs::metadata(binary)
        .with_context(|| format!("failed to read {}", binary.display()))?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    let rev = DOCKERFILE_TEMPLATE
        .lines()
        .find_map(|l| l.strip_prefix("# template-rev:"))
        .map_or("0", str::trim);
    // FNV-1a over the files the image is made of: an edit of one rebuilds it.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in [INSTALL_SH, SERVER_UNIT, AGENT_UNIT, DOCKERFILE_TEMPLATE]
        .iter()
        .flat_map(|t| t.bytes())
    {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let base = base_id.trim_start_matches("sha256:");
    let base = &base[..base.len().min(12)];
    Ok(format!("{}-{mtime}-t{rev}-f{h:016x}-b{base}", meta.len()))
}

/// The image's Dockerfile.
pub(crate) fn render_dockerfile(facts: &distro::Facts, version: &str, fingerprint: &str) -> String {
    DOCKERFILE_TEMPLATE
        .replace("@BASE@", SYSTEMD_BASE_IMAGE)
        .replace("@VERSION_ENV@", facts.sim_version_env)
        .replace("@VERSION@", version)
        .replace("@FINGERPRINT@", fingerprint)
}

/// `rke2.linux-amd64.tar.gz`, laid out as rke2's scripts/package-bundle makes it: the binary
/// under the distribution's name, its units, their `.env` files (rke2's hold `HOME=/root`; the
/// stand-in's also the version it imitates, the only way a unit's process learns it) and
/// `share/<name>/`.
pub(crate) fn release_tarball(
    facts: &distro::Facts,
    version: &str,
    binary: &[u8],
) -> anyhow::Result<Vec<u8>> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut tar = tar::Builder::new(gz);
    let env = format!("HOME=/root\n{}={version}\n", facts.sim_version_env);
    let name = facts.binary;
    let notice = format!(
        "repro's {name} stand-in (NOT {name}): a test double for repro's end-to-end tests.\nApache-2.0, as repro.\n"
    );
    let mut files: Vec<(String, u32, &[u8])> = vec![
        (format!("bin/{name}"), 0o755, binary),
        (
            format!("share/{name}/LICENSE.txt"),
            0o644,
            notice.as_bytes(),
        ),
    ];
    for (unit, text) in facts.units.iter().zip([SERVER_UNIT, AGENT_UNIT]) {
        files.push((
            format!("lib/systemd/system/{unit}.service"),
            0o644,
            text.as_bytes(),
        ));
        files.push((
            format!("lib/systemd/system/{unit}.env"),
            0o644,
            env.as_bytes(),
        ));
    }
    for (path, mode, data) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(mode);
        header.set_mtime(0);
        header.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut header, &path, data)
            .with_context(|| format!("failed to add {path} to the release tarball"))?;
    }
    let gz = tar
        .into_inner()
        .context("failed to finish the release tarball")?;
    let mut gz = gz;
    gz.flush()
        .context("failed to compress the release tarball")?;
    gz.finish()
        .context("failed to compress the release tarball")
}

/// The build context: Dockerfile, the install step and the artifact folder with the tarball.
pub(crate) fn build_context(
    facts: &distro::Facts,
    version: &str,
    binary: &Path,
    fingerprint: &str,
) -> anyhow::Result<Vec<u8>> {
    let bytes = std::fs::read(binary)
        .with_context(|| format!("failed to read the stand-in binary {}", binary.display()))?;
    let tarball = release_tarball(facts, version, &bytes)?;
    let mut tar = tar::Builder::new(Vec::new());
    let dockerfile = render_dockerfile(facts, version, fingerprint);
    let artifact = format!("artifacts/{}.linux-amd64.tar.gz", facts.binary);
    for (path, mode, data) in [
        ("Dockerfile", 0o644, dockerfile.as_bytes()),
        ("install.sh", 0o755, INSTALL_SH.as_bytes()),
        (artifact.as_str(), 0o644, tarball.as_slice()),
    ] {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(mode);
        header.set_mtime(0);
        header.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut header, path, data)
            .with_context(|| format!("failed to add {path} to the build context"))?;
    }
    tar.into_inner()
        .context("failed to finish the build context")
}

/// The base image's id, or why a systemd node image cannot be built.
pub(crate) async fn base_id(docker: &dyn DockerApi) -> anyhow::Result<String> {
    match docker.image(SYSTEMD_BASE_IMAGE).await {
        Some(info) => Ok(info.id.unwrap_or_default()),
        None => bail!(
            "the systemd base image {SYSTEMD_BASE_IMAGE} is missing: build it with `make systemd-base` (debootstrap as root, about 2.5 minutes the first time; docs/systemd-nodes.md)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(tar_bytes: &[u8]) -> Vec<(String, u32, Vec<u8>)> {
        let mut archive = tar::Archive::new(tar_bytes);
        archive
            .entries()
            .expect("entries")
            .map(|e| {
                let mut e = e.expect("entry");
                let path = e.path().expect("path").display().to_string();
                let mode = e.header().mode().expect("mode");
                let mut data = Vec::new();
                std::io::Read::read_to_end(&mut e, &mut data).expect("read");
                (path, mode, data)
            })
            .collect()
    }

    #[test]
    fn the_tarball_is_laid_out_as_rke2s() {
        let facts = distro::Distro::Rke2.facts();
        let gz = release_tarball(facts, "v1.32.5+rke2r1", b"\x7fELF").expect("tarball");
        let tar = {
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(gz.as_slice()), &mut out)
                .expect("gunzip");
            out
        };
        let got = entries(&tar);
        let paths: Vec<&str> = got.iter().map(|(p, _, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            [
                "bin/rke2",
                "share/rke2/LICENSE.txt",
                "lib/systemd/system/rke2-server.service",
                "lib/systemd/system/rke2-server.env",
                "lib/systemd/system/rke2-agent.service",
                "lib/systemd/system/rke2-agent.env",
            ]
        );
        assert_eq!(got[0].1, 0o755);
        let env = String::from_utf8(got[3].2.clone()).expect("utf8");
        assert_eq!(env, "HOME=/root\nREPRO_SIM_RKE2_VERSION=v1.32.5+rke2r1\n");
        let server = String::from_utf8(got[2].2.clone()).expect("utf8");
        assert!(server.contains("Type=notify\n"), "{server}");
        assert!(server.contains("ExecStart=/usr/local/bin/rke2 server\n"));
        let agent = String::from_utf8(got[4].2.clone()).expect("utf8");
        assert!(agent.contains("ExecStart=/usr/local/bin/rke2 agent\n"));
        assert!(agent.contains("Conflicts=rke2-server.service\n"));
    }

    #[test]
    fn the_dockerfile_builds_on_the_base_and_installs_from_the_artifacts() {
        let facts = distro::Distro::Rke2.facts();
        let d = render_dockerfile(facts, "v1.32.5+rke2r1", "1-2-t1-fx-by");
        assert!(
            d.contains("FROM repro.local/systemd-base:bookworm\n"),
            "{d}"
        );
        assert!(d.contains("INSTALL_RKE2_ARTIFACT_PATH=/tmp/rke2-artifacts"));
        assert!(d.contains("ENV REPRO_SIM_RKE2_VERSION=v1.32.5+rke2r1 "));
        assert!(d.contains("io.repro.sim.fingerprint=1-2-t1-fx-by"));
        assert!(!d.contains('@'), "{d}");
        // The base image's stop signal and CMD (systemd) are inherited, not overridden.
        assert!(!d.contains("STOPSIGNAL") && !d.contains("CMD") && !d.contains("ENTRYPOINT"));
    }

    #[test]
    fn the_fingerprint_follows_the_binary_and_the_base() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bin = dir.path().join("k3s");
        std::fs::write(&bin, b"one").expect("write");
        let a = fingerprint(&bin, "sha256:aaaaaaaaaaaaaaaa").expect("fp");
        let b = fingerprint(&bin, "sha256:bbbbbbbbbbbbbbbb").expect("fp");
        assert_ne!(a, b);
        std::fs::write(&bin, b"longer").expect("write");
        assert_ne!(fingerprint(&bin, "sha256:aaaaaaaaaaaaaaaa").expect("fp"), a);
    }
}
