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
    let stamp = binary_stamp(binary, DOCKERFILE_TEMPLATE)?;
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
    Ok(format!("{stamp}-f{h:016x}-b{base}"))
}

/// `<size>-<mtime>-t<template-rev>` of a stand-in binary and the Dockerfile `template` of its
/// image: cheap, and changed whenever `make sim` produced a new binary or the template changed
/// (the start of both kinds of stand-in image's fingerprint, `crate::sim_image`'s too).
pub(crate) fn binary_stamp(binary: &Path, template: &str) -> anyhow::Result<String> {
    let meta = std::fs::metadata(binary)
        .with_context(|| format!("failed to read {}", binary.display()))?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    let rev = template
        .lines()
        .find_map(|l| l.strip_prefix("# template-rev:"))
        .map_or("0", str::trim);
    Ok(format!("{}-{mtime}-t{rev}", meta.len()))
}

/// The image's Dockerfile for the stand-in image of `version`.
pub(crate) fn render_dockerfile(
    facts: &distro::Facts,
    version: &str,
    fingerprint: &str,
) -> anyhow::Result<String> {
    Ok(render(&Render {
        base: SYSTEMD_BASE_IMAGE,
        layout: layout(facts)?,
        checksums: true,
        images: false,
        env: format!("{}={version} ", facts.sim_version_env),
        labels: format!(
            "io.repro.sim=true io.repro.privileged=false io.repro.sim.version={version} io.repro.sim.fingerprint={fingerprint}"
        ),
    }))
}

/// Where the install script moves the images tarball it checked, during the build only (the
/// node's copy is the one COPYed into the images dir).
const CHECKED_IMAGES: &str = "/tmp/rke2-checked-images";

/// What differs between the stand-in's image and one built from release artifacts.
struct Render<'a> {
    base: &'a str,
    /// The release's file names (`Facts::release_artifacts`).
    layout: &'a distro::ReleaseArtifacts,
    /// Make `sha256sum-amd64.txt` (the stand-in's tarball comes without one).
    checksums: bool,
    /// Put the air-gap images tarball where rke2 imports it from at boot, checked by the
    /// install script's own sums.
    images: bool,
    env: String,
    labels: String,
}

fn render(r: &Render<'_>) -> String {
    let a = r.layout;
    let checksums = if r.checksums {
        format!("sha256sum {} > {} && ", a.tarball, a.checksums)
    } else {
        String::new()
    };
    // rke2 imports every archive in agent/images at start (docs: air-gap install). The images
    // dir is under /var/lib/rancher, which rke2's base image (rancher/systemd-node) declares a
    // VOLUME: the legacy builder drops what a RUN step writes there, but keeps what COPY
    // writes (the COPY's layer holds it, and a container's new volume starts as a copy of it).
    // So the tarball is COPYed in from the context, and the RUN links it into the artifact
    // folder, where the install script checks it against the release's sums
    // (`verify_airgap_tarball`) and moves its own copy to a scratch folder, removed after.
    let (copy_images, images) = if r.images {
        (
            format!("COPY images/ {}/\n", a.images_dir),
            format!(
                "ln -s {dir}/{img} {img} && INSTALL_RKE2_AGENT_IMAGES_DIR={CHECKED_IMAGES} ",
                img = a.images,
                dir = a.images_dir
            ),
        )
    } else {
        (String::new(), String::new())
    };
    DOCKERFILE_TEMPLATE
        .replace("@BASE@", r.base)
        .replace("@COPY_IMAGES@", &copy_images)
        .replace("@CHECKSUMS@", &checksums)
        .replace("@IMAGES@", &images)
        .replace("@CHECKED@", CHECKED_IMAGES)
        .replace("@ENV@", &r.env)
        .replace("@LABELS@", &r.labels)
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
    let dockerfile = render_dockerfile(facts, version, fingerprint)?;
    let artifact = format!("artifacts/{}", layout(facts)?.tarball);
    context(&[
        ("Dockerfile".into(), 0o644, dockerfile.into_bytes()),
        ("install.sh".into(), 0o755, INSTALL_SH.as_bytes().to_vec()),
        (artifact, 0o644, tarball),
    ])
}

fn context(files: &[(String, u32, Vec<u8>)]) -> anyhow::Result<Vec<u8>> {
    context_with(files, None)
}

/// [`context`], with one large file more (`path` in the context, the file read from disk
/// straight into the context, `len` bytes): rke2's images tarball, about 800 MB, is then in
/// memory once (the context the engine is sent), not twice.
fn context_with(
    files: &[(String, u32, Vec<u8>)],
    large: Option<(String, std::fs::File, u64)>,
) -> anyhow::Result<Vec<u8>> {
    use std::io::Read;
    let size: u64 = files.iter().map(|(_, _, d)| d.len() as u64).sum::<u64>()
        + large.as_ref().map_or(0, |(_, _, len)| *len);
    let capacity = usize::try_from(size).unwrap_or(0).saturating_add(64 * 1024);
    let mut tar = tar::Builder::new(Vec::with_capacity(capacity));
    let header = |len: u64, mode: u32| {
        let mut header = tar::Header::new_gnu();
        header.set_size(len);
        header.set_mode(mode);
        header.set_mtime(0);
        header.set_entry_type(tar::EntryType::Regular);
        header
    };
    for (path, mode, data) in files {
        tar.append_data(&mut header(data.len() as u64, *mode), path, data.as_slice())
            .with_context(|| format!("failed to add {path} to the build context"))?;
    }
    if let Some((path, file, len)) = large {
        // tar pads a short entry without a word: a file that ends before `len` must fail here,
        // not leave a tar whose entry is cut (the engine would unpack the padding).
        let exact = Exact {
            inner: file.take(len),
            left: len,
        };
        tar.append_data(&mut header(len, 0o644), &path, exact)
            .with_context(|| format!("failed to add {path} to the build context"))?;
    }
    tar.into_inner()
        .context("failed to finish the build context")
}

/// A reader of exactly `left` more bytes: its end before them is an error.
struct Exact<R> {
    inner: R,
    left: u64,
}

impl<R: std::io::Read> std::io::Read for Exact<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 && self.left > 0 && !buf.is_empty() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!(
                    "the file ended {} bytes early (changed while read?)",
                    self.left
                ),
            ));
        }
        self.left = self.left.saturating_sub(n as u64);
        Ok(n)
    }
}

/// The base image's id, or why a systemd node image cannot be built.
pub(crate) async fn base_id(docker: &dyn DockerApi) -> anyhow::Result<String> {
    image_id_of(docker, SYSTEMD_BASE_IMAGE).await
}

async fn image_id_of(docker: &dyn DockerApi, base: &str) -> anyhow::Result<String> {
    match docker.image(base).await {
        Some(info) => Ok(info.id.unwrap_or_default()),
        None if base == SYSTEMD_BASE_IMAGE => bail!(
            "the systemd base image {SYSTEMD_BASE_IMAGE} is missing: build it with `make systemd-base` (debootstrap as root, about 2.5 minutes the first time; docs/systemd-nodes.md)"
        ),
        None => bail!("the node base image {base} is not in the local store: pull or load it first (--node-base)"),
    }
}

/// The release-artifact layout of `facts`'s distribution (`Facts::release_artifacts`): an error
/// for one whose nodes run a published image.
pub(crate) fn layout(facts: &distro::Facts) -> anyhow::Result<&distro::ReleaseArtifacts> {
    facts.release_artifacts.as_ref().with_context(|| {
        format!(
            "{}'s nodes run a published image: it has no release artifacts",
            facts.name
        )
    })
}

/// A `--artifacts` folder, checked: the tarball's sha256 is the one sha256sum-amd64.txt lists.
#[derive(Debug, Clone)]
pub(crate) struct Artifacts {
    pub(crate) dir: std::path::PathBuf,
    pub(crate) tarball_sha256: String,
    /// The air-gap images tarball, when present and not left out (`--no-images-tarball`).
    pub(crate) images: bool,
    /// Its sum as the sum file lists it (rke2's install script checks the file against it in the
    /// build), part of the image's fingerprint: another images tarball, or none, is another
    /// image.
    pub(crate) images_listed: Option<String>,
    /// rke2's install.sh, when present (else the repo's install step runs).
    pub(crate) install_sh: Option<&'static str>,
    /// The tarball is repro's stand-in's (its share/rke2/LICENSE.txt says so), not rke2's.
    pub(crate) stand_in: bool,
}

/// Reads and checks `dir` before anything is created: a missing file or a checksum mismatch is
/// an error naming the file and both sums. `with_images` false: its images tarball, if any, is
/// left out of the node image (`--no-images-tarball`).
pub(crate) fn verify_artifacts(
    facts: &distro::Facts,
    dir: &Path,
    with_images: bool,
) -> anyhow::Result<Artifacts> {
    use sha2::Digest;
    use std::io::{Read, Seek};
    let distro::ReleaseArtifacts {
        tarball: tarball_name,
        checksums,
        images,
        install_scripts,
        ..
    } = layout(facts)?;
    let tarball = dir.join(tarball_name);
    let sums = dir.join(checksums);
    // Regular files only, opened without blocking, within their sizes: a sums file or tarball
    // that is a link to /dev/zero or a FIFO is refused at once, not read forever.
    let listed = crate::safe_fs::read_named(&sums, crate::builds::fetch::MAX_SUM_BYTES)
        .map_err(|e| anyhow::anyhow!("{}: cannot read: {} (an artifacts folder holds {tarball_name} and {checksums}, optionally {images} and install.sh)", e.path().display(), e.reason()))?;
    let listed = String::from_utf8_lossy(&listed);
    let expected = crate::builds::fetch::sum_for(&listed, tarball_name).with_context(|| {
        format!(
            "{}: no line `<sha256>  {tarball_name}` (64 hex digits, as sha256sum writes it)",
            sums.display()
        )
    })?;
    let mut file = crate::safe_fs::open_named(&tarball, TARBALL_LIMIT)
        .map_err(|e| anyhow::anyhow!("{}: cannot read: {}", e.path().display(), e.reason()))?;
    let mut h = sha2::Sha256::new();
    std::io::copy(&mut (&mut file).take(TARBALL_LIMIT), &mut h)
        .with_context(|| format!("{}: cannot read", tarball.display()))?;
    let actual = format!("{:x}", h.finalize());
    if actual != expected {
        bail!(
            "{}: sha256 {actual} does not match {expected}, the sum {} lists for it",
            tarball.display(),
            sums.display()
        );
    }
    file.rewind()
        .with_context(|| format!("{}: cannot read", tarball.display()))?;
    let with_images = with_images && dir.join(images).is_file();
    Ok(Artifacts {
        dir: dir.to_path_buf(),
        stand_in: holds_stand_in(file),
        tarball_sha256: actual,
        images: with_images,
        images_listed: crate::builds::fetch::sum_for(&listed, images).filter(|_| with_images),
        install_sh: install_scripts
            .iter()
            .copied()
            .find(|n| dir.join(n).is_file()),
    })
}

/// The most a release tarball may be (rke2's is about 40 MB).
const TARBALL_LIMIT: u64 = crate::builds::fetch::MAX_DOWNLOAD_BYTES;
/// The most a release tarball is inflated while looking for its license (rke2's inflates to
/// about 200 MB): a small gzip of GiBs of zeros is not read to its end.
const TARBALL_INFLATE_LIMIT: u64 = 1 << 30;
/// The most of the license member read (rke2's is 11 KiB).
const LICENSE_LIMIT: u64 = 64 * 1024;

/// Whether a release tarball is the stand-in's: [`release_tarball`] writes its notice as
/// share/rke2/LICENSE.txt, where rke2's tarball has rke2's license. Inflation is bounded in
/// total and for the member read, as `redact`'s archives are.
fn holds_stand_in(gz: impl std::io::Read) -> bool {
    use std::io::Read;
    let inflated = flate2::read::GzDecoder::new(gz).take(TARBALL_INFLATE_LIMIT);
    let mut archive = tar::Archive::new(inflated);
    let Ok(entries) = archive.entries() else {
        return false;
    };
    for e in entries.flatten() {
        let mut e = e;
        let is_license = e.path().is_ok_and(|p| {
            p.to_string_lossy().trim_start_matches("./") == "share/rke2/LICENSE.txt"
        });
        if is_license {
            let mut text = Vec::new();
            let _ = (&mut e).take(LICENSE_LIMIT).read_to_end(&mut text);
            return text.starts_with(b"repro's rke2 stand-in");
        }
    }
    false
}

/// The node image built from `artifacts` for `version`: the distribution's image repository
/// (`REPRO_NODE_REPOSITORY` overrides it, so test runs sharing an engine keep theirs apart),
/// its tag for the version and the tarball's sum, so other artifacts of one version get another
/// image.
pub(crate) fn artifact_image_ref(
    facts: &distro::Facts,
    version: &distro::Version,
    artifacts: &Artifacts,
) -> String {
    let repo = std::env::var("REPRO_NODE_REPOSITORY")
        .ok()
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| facts.image_repository.to_string());
    format!(
        "{repo}:{}-{}",
        version.image_tag(),
        &artifacts.tarball_sha256[..12]
    )
}

/// The fingerprint label of an artifact image: version, the tarball's sum, the base image's id,
/// the template, the install step that built it and the images tarball in it (its listed sum,
/// `unlisted`, or `none`): an image built without the images tarball is not reused for a run
/// with one, nor the other way round.
fn artifact_fingerprint(version: &str, artifacts: &Artifacts, base_id: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in [INSTALL_SH, DOCKERFILE_TEMPLATE]
        .iter()
        .flat_map(|t| t.bytes())
    {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let base = base_id.trim_start_matches("sha256:");
    let base = &base[..base.len().min(12)];
    let images = match (&artifacts.images_listed, artifacts.images) {
        (Some(sum), _) => &sum[..16],
        (None, true) => "unlisted",
        (None, false) => "none",
    };
    format!(
        "{version}-s{}-b{base}-f{h:016x}-i{}-m{images}",
        &artifacts.tarball_sha256[..16],
        artifacts.install_sh.unwrap_or("repo")
    )
}

/// The Dockerfile of an image from release artifacts; it says it is the stand-in only when the
/// tarball is the stand-in's.
fn render_artifact_dockerfile(
    facts: &distro::Facts,
    version: &str,
    artifacts: &Artifacts,
    base: &str,
    fingerprint: &str,
) -> anyhow::Result<String> {
    let node = format!("io.repro.node.version={version} io.repro.node.fingerprint={fingerprint}");
    let (env, labels) = if artifacts.stand_in {
        (
            format!("{}={version} ", facts.sim_version_env),
            format!("io.repro.sim=true io.repro.privileged=false {node}"),
        )
    } else {
        (String::new(), node)
    };
    Ok(render(&Render {
        base,
        layout: layout(facts)?,
        checksums: false,
        images: artifacts.images,
        env,
        labels,
    }))
}

/// The most rke2's install.sh may be (about 30 KiB).
const INSTALL_SH_LIMIT: u64 = 1 << 20;

/// The node image of `version` from `artifacts` on `base`: built through the API unless the tag
/// exists with this fingerprint.
pub(crate) async fn ensure_artifact_image(
    docker: &dyn DockerApi,
    image: &str,
    facts: &distro::Facts,
    version: &str,
    artifacts: &Artifacts,
    base: Option<&str>,
) -> anyhow::Result<()> {
    let base = base
        .or(facts.node_base_image)
        .context("no systemd base image for this distribution's nodes (--node-base)")?;
    if docker.image(base).await.is_none() && base != SYSTEMD_BASE_IMAGE {
        docker
            .pull(base, &mut |_, _| {})
            .await
            .map_err(|e| anyhow::anyhow!("the node base image {base}: {e}"))?;
    }
    let base_id = image_id_of(docker, base).await?;
    let fp = artifact_fingerprint(version, artifacts, &base_id);
    if let Some(existing) = docker.image(image).await {
        if existing.labels.get("io.repro.node.fingerprint") == Some(&fp) {
            return Ok(());
        }
    }
    // Each file regular and within its size, as `verify_artifacts` read them.
    let read = |name: &str, limit: u64| {
        crate::safe_fs::read_named(&artifacts.dir.join(name), limit)
            .map_err(|e| anyhow::anyhow!("{e}"))
    };
    let install = match artifacts.install_sh {
        Some(name) => read(name, INSTALL_SH_LIMIT)?,
        None => INSTALL_SH.as_bytes().to_vec(),
    };
    let dockerfile = render_artifact_dockerfile(facts, version, artifacts, base, &fp)?;
    let names = layout(facts)?;
    let files = vec![
        ("Dockerfile".to_string(), 0o644, dockerfile.into_bytes()),
        ("install.sh".to_string(), 0o755, install),
        (
            format!("artifacts/{}", names.tarball),
            0o644,
            read(names.tarball, TARBALL_LIMIT)?,
        ),
        (
            format!("artifacts/{}", names.checksums),
            0o644,
            read(names.checksums, crate::builds::fetch::MAX_SUM_BYTES)?,
        ),
    ];
    // The images tarball goes from disk into the context, regular and within its size as the
    // rest (a file that shrinks while it is read fails the context, not the image).
    let large = match artifacts.images {
        false => None,
        true => {
            let path = artifacts.dir.join(names.images);
            let file = crate::safe_fs::open_named(&path, crate::builds::fetch::MAX_IMAGES_BYTES)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            let len = file
                .metadata()
                .with_context(|| format!("{}: cannot read", path.display()))?
                .len();
            Some((format!("images/{}", names.images), file, len))
        }
    };
    docker
        .build_image(image, context_with(&files, large)?)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if docker.image(image).await.is_none() {
        bail!("image {image} missing after its build");
    }
    Ok(())
}

/// Writes the stand-in's release artifacts of `version` (tarball and sha256sum) to `out`, the
/// files an air-gapped `--artifacts` folder holds.
pub(crate) fn write_artifacts(
    facts: &distro::Facts,
    version: &str,
    binary: &Path,
    out: &Path,
) -> anyhow::Result<()> {
    use sha2::Digest;
    let bytes = std::fs::read(binary)
        .with_context(|| format!("failed to read the stand-in binary {}", binary.display()))?;
    let tarball = release_tarball(facts, version, &bytes)?;
    std::fs::create_dir_all(out).with_context(|| format!("{}: cannot create", out.display()))?;
    let names = layout(facts)?;
    let sum = format!("{:x}  {}\n", sha2::Sha256::digest(&tarball), names.tarball);
    std::fs::write(out.join(names.tarball), &tarball)
        .with_context(|| format!("{}: cannot write", out.display()))?;
    std::fs::write(out.join(names.checksums), sum)
        .with_context(|| format!("{}: cannot write", out.display()))?;
    Ok(())
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
    fn a_large_file_goes_from_disk_into_the_context_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("images");
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i % 253) as u8).collect();
        std::fs::write(&path, &bytes).expect("write");
        let file = std::fs::File::open(&path).expect("open");
        let tar = context_with(
            &[("Dockerfile".into(), 0o644, b"FROM x\n".to_vec())],
            Some((
                "images/rke2-images.linux-amd64.tar.zst".into(),
                file,
                100_000,
            )),
        )
        .expect("context");
        let got = entries(&tar);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].0, "Dockerfile");
        assert_eq!(got[1].0, "images/rke2-images.linux-amd64.tar.zst");
        assert_eq!((got[1].1, &got[1].2), (0o644, &bytes));
        // A file shorter than it was said to be (it shrank while read): the context fails.
        let file = std::fs::File::open(&path).expect("open");
        assert!(context_with(&[], Some(("images/x".into(), file, 200_000))).is_err());
    }

    #[test]
    fn the_dockerfile_builds_on_the_base_and_installs_from_the_artifacts() {
        let facts = distro::Distro::Rke2.facts();
        let d = render_dockerfile(facts, "v1.32.5+rke2r1", "1-2-t1-fx-by").expect("rke2's");
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

    fn artifacts_of(version: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let bin = dir.path().join("bin");
        std::fs::write(&bin, b"\x7fELF").expect("write");
        write_artifacts(distro::Distro::Rke2.facts(), version, &bin, dir.path()).expect("write");
        dir
    }

    #[test]
    fn artifacts_are_checked_against_their_sum_and_the_stand_in_is_recognised() {
        let dir = artifacts_of("v1.32.5+rke2r1");
        let facts = distro::Distro::Rke2.facts();
        let names = layout(facts).expect("rke2's");
        let a = verify_artifacts(facts, dir.path(), true).expect("verified");
        assert!(a.stand_in && !a.images && a.install_sh.is_none());
        let listed = std::fs::read_to_string(dir.path().join(names.checksums)).expect("read");
        assert!(listed.starts_with(&a.tarball_sha256), "{listed}");
        let v: distro::Version = "v1.32.5+rke2r1".parse().expect("version");
        let tag = artifact_image_ref(distro::Distro::Rke2.facts(), &v, &a);
        assert!(
            tag.ends_with(&format!(":v1.32.5-rke2r1-{}", &a.tarball_sha256[..12])),
            "{tag}"
        );
        // A tarball that is not the stand-in's (no stand-in notice) is not labelled as one.
        let other = Artifacts {
            stand_in: false,
            ..a.clone()
        };
        let d = render_artifact_dockerfile(
            distro::Distro::Rke2.facts(),
            "v1.32.5+rke2r1",
            &other,
            "rancher/systemd-node:v0.0.5",
            "fp",
        )
        .expect("rke2's");
        assert!(d.contains("FROM rancher/systemd-node:v0.0.5\n"), "{d}");
        assert!(
            !d.contains("io.repro.sim") && !d.contains("privileged"),
            "{d}"
        );
        assert!(!d.contains("sha256sum rke2") && !d.contains('@'), "{d}");
        let d = render_artifact_dockerfile(facts, "v1", &a, "b", "fp").expect("rke2's");
        assert!(
            d.contains("io.repro.sim=true io.repro.privileged=false"),
            "{d}"
        );
        // A changed byte: refused, both sums named.
        let tarball = dir.path().join(names.tarball);
        let mut bytes = std::fs::read(&tarball).expect("read");
        bytes.push(0);
        std::fs::write(&tarball, bytes).expect("write");
        let e = format!(
            "{:#}",
            verify_artifacts(facts, dir.path(), true).expect_err("mismatch")
        );
        assert!(
            e.contains(&format!("does not match {}", a.tarball_sha256)),
            "{e}"
        );
        assert!(!e.contains(&format!("sha256 {} ", a.tarball_sha256)), "{e}");
        std::fs::remove_file(dir.path().join(names.checksums)).expect("rm");
        let e = format!(
            "{:#}",
            verify_artifacts(facts, dir.path(), true).expect_err("missing")
        );
        assert!(e.contains("sha256sum-amd64.txt: cannot read"), "{e}");
    }

    /// An images tarball in the folder goes into the node image unless left out
    /// (`--no-images-tarball`), and the image's fingerprint says which: an image built without
    /// it is not reused for a run with it, nor one with another images tarball.
    #[test]
    fn the_images_tarball_is_in_the_fingerprint_and_can_be_left_out() {
        let dir = artifacts_of("v1.32.5+rke2r1");
        let facts = distro::Distro::Rke2.facts();
        let names = layout(facts).expect("rke2's");
        let without = verify_artifacts(facts, dir.path(), true).expect("verified");
        std::fs::write(dir.path().join(names.images), b"images").expect("write");
        let unlisted = verify_artifacts(facts, dir.path(), true).expect("verified");
        assert!(unlisted.images && unlisted.images_listed.is_none());
        let sums = dir.path().join(names.checksums);
        let mut text = std::fs::read_to_string(&sums).expect("read");
        text.push_str(&format!("{}  {}\n", "c".repeat(64), names.images));
        std::fs::write(&sums, text).expect("write");
        let listed = verify_artifacts(facts, dir.path(), true).expect("verified");
        assert_eq!(
            listed.images_listed.as_deref(),
            Some("c".repeat(64).as_str())
        );
        let left_out = verify_artifacts(facts, dir.path(), false).expect("verified");
        assert!(!left_out.images && left_out.images_listed.is_none());
        let fp = |a: &Artifacts| artifact_fingerprint("v1.32.5+rke2r1", a, "sha256:0123456789ab");
        assert_eq!(fp(&without), fp(&left_out), "no images tarball either way");
        let all = [fp(&without), fp(&unlisted), fp(&listed)];
        assert!(
            all[0].ends_with("-mnone") && all[1].ends_with("-munlisted"),
            "{all:?}"
        );
        assert!(
            all[2].ends_with(&format!("-m{}", "c".repeat(16))),
            "{all:?}"
        );
        let d = render_artifact_dockerfile(facts, "v1", &left_out, "b", "fp").expect("rke2's");
        assert!(!d.contains("COPY images/"), "{d}");
        let d = render_artifact_dockerfile(facts, "v1", &listed, "b", "fp").expect("rke2's");
        assert!(
            d.contains("COPY images/ /var/lib/rancher/rke2/agent/images/"),
            "{d}"
        );
    }
}
