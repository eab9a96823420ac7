//! Images of the k3s stand-in (`sim/`, NOT k3s) for offline runs.
//!
//! One image per imitated k3s version, `repro.local/k3s-sim:<tag>`, built in
//! seconds from the static `k3s` binary with the legacy builder and an
//! in-memory build context (`FROM scratch`, so no base image is pulled). The
//! Dockerfile is `sim/image/Dockerfile.in`, shared with `make sim-images`.
//!
//! A distribution whose nodes run it as a systemd unit (RKE2) gets a node image of another
//! kind, `crate::sim_node_image`, under the same repository and tag rule.
//!
//! Built and inspected through [`DockerApi`], like every other Docker call.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use crate::docker::DockerApi;

/// Env var naming another repository for the stand-in images, so that several checkouts
/// sharing one engine (a developer's branches, parallel CI jobs) do not rebuild each other's
/// images under the same tags. Default: the distribution's `sim_image_repository`.
pub(crate) const SIM_REPOSITORY_ENV: &str = "REPRO_SIM_REPOSITORY";
/// Env var naming the static stand-in binary explicitly.
pub(crate) const SIM_BINARY_ENV: &str = "REPRO_SIM_BINARY";
/// Container env var seeding the stand-in's load-balancer order (sim/src/loadbalancer.rs).
pub(crate) const SIM_SEED_ENV: &str = "REPRO_SIM_SEED";

/// A node's load-balancer seed, derived from the run's: distinct per node, so two joiners of
/// one run do not draw alike, and the same for the same run seed and node name.
pub(crate) fn node_seed(run_seed: u64, node: &str) -> u64 {
    // FNV-1a over the name, then one splitmix64 round: stable across builds and platforms
    // (std's hasher promises neither).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in node.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let mut z = (run_seed ^ h).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Where `make sim` puts the binary, relative to a cargo target dir.
pub(crate) const SIM_BINARY_IN_TARGET: &str = "x86_64-unknown-linux-gnu/release/k3s";
/// Image label of repro's stand-in.
pub(crate) const SIM_LABEL: &str = "io.repro.sim";
/// Label holding a fingerprint of the binary and Dockerfile an image was built from.
pub(crate) const FINGERPRINT_LABEL: &str = "io.repro.sim.fingerprint";

const DOCKERFILE_TEMPLATE: &str = include_str!("../sim/image/Dockerfile.in");
const NSSWITCH: &str = include_str!("../sim/image/nsswitch.conf");

/// The stand-in images' repository for a distribution: `$REPRO_SIM_REPOSITORY` or its default.
pub(crate) fn sim_repository(distro: distro::Distro) -> String {
    match std::env::var(SIM_REPOSITORY_ENV) {
        Ok(repo) if !repo.trim().is_empty() => repo.trim().to_string(),
        _ => distro.facts().sim_image_repository.to_string(),
    }
}

/// `v1.33.4+k3s1` → `repro.local/k3s-sim:v1.33.4-k3s1` (tags cannot hold `+`), in the
/// repository of the version's distribution.
pub(crate) fn sim_image_ref(version: &str) -> String {
    format!(
        "{}:{}",
        sim_repository(distro_of(version)),
        version.replace('+', "-")
    )
}

/// The distribution a version text names (`+rke2r1`), k3s when it names none.
fn distro_of(version: &str) -> distro::Distro {
    version
        .parse::<distro::Version>()
        .map_or(distro::Distro::K3s, |v| v.distro)
}

/// The static stand-in binary: `$REPRO_SIM_BINARY`, else
/// `target/x86_64-unknown-linux-gnu/release/k3s` under `$CARGO_TARGET_DIR`,
/// the current directory, or any ancestor of the running executable.
pub(crate) fn find_sim_binary() -> anyhow::Result<PathBuf> {
    let cwd = std::env::current_dir().ok();
    let exe = std::env::current_exe().ok();
    locate_sim_binary(&BinarySearch {
        explicit: std::env::var_os(SIM_BINARY_ENV).map(PathBuf::from),
        cargo_target_dir: std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from),
        cwd: cwd.as_deref(),
        exe: exe.as_deref(),
    })
}

/// Inputs of the binary search, separated so it is testable without env vars.
pub(crate) struct BinarySearch<'a> {
    pub(crate) explicit: Option<PathBuf>,
    pub(crate) cargo_target_dir: Option<PathBuf>,
    pub(crate) cwd: Option<&'a Path>,
    pub(crate) exe: Option<&'a Path>,
}

pub(crate) fn locate_sim_binary(search: &BinarySearch<'_>) -> anyhow::Result<PathBuf> {
    if let Some(path) = &search.explicit {
        if path.is_file() {
            return Ok(path.clone());
        }
        bail!(
            "{SIM_BINARY_ENV} is set to {}, but there is no file there; run `make sim` to build the k3s stand-in",
            path.display()
        );
    }
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(dir) = &search.cargo_target_dir {
        let dir = match search.cwd {
            Some(cwd) if dir.is_relative() => cwd.join(dir),
            _ => dir.clone(),
        };
        candidates.push(dir.join(SIM_BINARY_IN_TARGET));
    }
    if let Some(cwd) = search.cwd {
        candidates.push(cwd.join("target").join(SIM_BINARY_IN_TARGET));
    }
    if let Some(exe) = search.exe {
        for dir in exe.ancestors().skip(1) {
            candidates.push(dir.join(SIM_BINARY_IN_TARGET));
            candidates.push(dir.join("target").join(SIM_BINARY_IN_TARGET));
        }
    }
    if let Some(found) = candidates.iter().find(|p| p.is_file()) {
        return Ok(found.clone());
    }
    let looked: Vec<String> = candidates
        .iter()
        .take(4)
        .map(|p| p.display().to_string())
        .collect();
    bail!(
        "the k3s stand-in binary is missing (looked in {}{}); run `make sim` to build it, or set {SIM_BINARY_ENV}",
        looked.join(", "),
        if candidates.len() > 4 { ", …" } else { "" }
    )
}

/// The image for `version`, built if missing, stale, or `rebuild` is asked.
///
/// An existing tag is reused when the binary cannot be found (prebuilt
/// images keep working) or when its fingerprint label matches the binary
/// and Dockerfile at hand, so a fresh `make sim` refreshes images by itself.
pub async fn ensure_sim_image(
    docker: &dyn DockerApi,
    version: &str,
    rebuild: bool,
) -> anyhow::Result<String> {
    check_version(version)?;
    let image = sim_image_ref(version);
    let facts = distro_of(version).facts();
    // A systemd node image also depends on the base image it is built on.
    let base = if facts.node_process.systemd_pid1() {
        Some(crate::sim_node_image::base_id(docker).await?)
    } else {
        None
    };
    let existing = docker.image(&image).await;
    let binary = find_sim_binary();
    let wanted = |path: &Path| match &base {
        None => fingerprint(path),
        Some(id) => crate::sim_node_image::fingerprint(path, id),
    };
    if let (Some(existing), false) = (&existing, rebuild) {
        let label = existing.labels.get(FINGERPRINT_LABEL).map(String::as_str);
        match &binary {
            Err(_) => return Ok(image),
            Ok(path) if label == Some(wanted(path)?.as_str()) => return Ok(image),
            Ok(_) => {}
        }
    }
    let binary = binary?;
    match base {
        None => build_sim_image_from(docker, version, &binary).await,
        Some(_) => {
            let context =
                crate::sim_node_image::build_context(facts, version, &binary, &wanted(&binary)?)?;
            build(docker, image, context).await
        }
    }
}

/// Builds `repro.local/k3s-sim:<tag>` from `binary`, whatever exists.
pub(crate) async fn build_sim_image_from(
    docker: &dyn DockerApi,
    version: &str,
    binary: &Path,
) -> anyhow::Result<String> {
    check_version(version)?;
    let image = sim_image_ref(version);
    let context = build_context(version, binary)?;
    build(docker, image, context).await
}

/// Builds `image` from `context` and checks the engine has it.
async fn build(docker: &dyn DockerApi, image: String, context: Vec<u8>) -> anyhow::Result<String> {
    // As one message: the error already says the call, the image and the engine's answer, and
    // a chain would repeat the answer.
    docker
        .build_image(&image, context)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if docker.image(&image).await.is_none() {
        bail!("image {image} missing after its build");
    }
    Ok(image)
}

/// Whether the stand-in can play `distro`, or why not (bad input: said before anything runs).
/// It plays every distribution repro knows: k3s as the container's process, rke2 on systemd
/// nodes (sim/src/distro.rs, `crate::sim_node_image`).
pub(crate) fn plays(distro: distro::Distro) -> Result<(), String> {
    match distro {
        distro::Distro::K3s | distro::Distro::Rke2 => Ok(()),
    }
}

/// Versions end up in a Dockerfile and a tag: allow only what versions use.
fn check_version(version: &str) -> anyhow::Result<()> {
    let ok = !version.is_empty()
        && version.len() <= 64
        && version.starts_with(|c: char| c == 'v' || c.is_ascii_digit())
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '-'));
    if !ok {
        bail!(
            "invalid k3s version {version:?} for a stand-in image (expected e.g. {})",
            distro::Distro::K3s.facts().example_version
        );
    }
    Ok(())
}

pub(crate) fn render_dockerfile(version: &str, fingerprint: &str) -> String {
    DOCKERFILE_TEMPLATE
        .replace("@VERSION@", version)
        .replace("@FINGERPRINT@", fingerprint)
}

/// `<size>-<mtime>-t<template-rev>`: cheap, changes whenever `make sim`
/// produced a new binary or the template changed, and computable by the
/// `make sim-images` shell script too.
fn fingerprint(binary: &Path) -> anyhow::Result<String> {
    crate::sim_node_image::binary_stamp(binary, DOCKERFILE_TEMPLATE)
}

/// The build context: Dockerfile + rootfs with `/bin/k3s`, `/bin/kubectl`
/// (symlink, the binary answers to that name), `/etc`, `/tmp`.
pub(crate) fn build_context(version: &str, binary: &Path) -> anyhow::Result<Vec<u8>> {
    let bytes = std::fs::read(binary).with_context(|| {
        format!(
            "failed to read the k3s stand-in binary {}",
            binary.display()
        )
    })?;
    let os_release = format!("PRETTY_NAME=\"repro k3s stand-in (NOT k3s) {version}\"\n");
    let mut tar = tar::Builder::new(Vec::new());
    let mut file = |path: &str, mode: u32, data: &[u8]| -> anyhow::Result<()> {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(mode);
        header.set_mtime(0);
        header.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut header, path, data)
            .with_context(|| format!("failed to add {path} to the build context"))
    };
    file(
        "Dockerfile",
        0o644,
        render_dockerfile(version, &fingerprint(binary)?).as_bytes(),
    )?;
    // The stand-in plays k3s (see `plays`): its binary has k3s's name in the image.
    let bin = distro::Distro::K3s.facts().binary;
    file(&format!("rootfs/bin/{bin}"), 0o755, &bytes)?;
    file("rootfs/etc/nsswitch.conf", 0o644, NSSWITCH.as_bytes())?;
    file("rootfs/etc/os-release", 0o644, os_release.as_bytes())?;
    let mut link = tar::Header::new_gnu();
    link.set_entry_type(tar::EntryType::Symlink);
    link.set_size(0);
    link.set_mode(0o777);
    link.set_mtime(0);
    // The binary answers to these names, as k3s's image has kubectl and (from k3s-root) rm,
    // which repro uses to delete files a step removes, and cat, which the kubelet drop-in
    // probe reads with (checks/signals.yaml).
    for name in ["kubectl", "rm", "cat"] {
        tar.append_link(&mut link, format!("rootfs/bin/{name}"), bin)
            .with_context(|| format!("failed to add /bin/{name} to the build context"))?;
    }
    let mut dir = tar::Header::new_gnu();
    dir.set_entry_type(tar::EntryType::Directory);
    dir.set_size(0);
    dir.set_mode(0o1777);
    dir.set_mtime(0);
    tar.append_data(&mut dir, "rootfs/tmp/", std::io::empty())
        .context("failed to add /tmp to the build context")?;
    tar.into_inner()
        .context("failed to finish the build context")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_refs_replace_plus() {
        assert_eq!(
            sim_image_ref("v1.33.4+k3s1"),
            "repro.local/k3s-sim:v1.33.4-k3s1"
        );
        assert_eq!(
            sim_image_ref("v1.34.1+k3s1"),
            "repro.local/k3s-sim:v1.34.1-k3s1"
        );
    }

    #[test]
    fn versions_are_checked_before_they_reach_a_dockerfile() {
        assert!(check_version("v1.33.4+k3s1").is_ok());
        assert!(check_version("v1.33.5-rc1+k3s1").is_ok());
        assert!(check_version("").is_err());
        assert!(check_version("v1.33.4\nRUN rm -rf /").is_err());
        assert!(check_version("latest").is_err());
    }

    #[test]
    fn dockerfile_carries_version_env_labels_and_volumes() {
        let d = render_dockerfile("v1.33.4+k3s1", "1-2-t3");
        assert!(d.contains("FROM scratch"));
        assert!(d.contains("REPRO_SIM_K3S_VERSION=v1.33.4+k3s1"));
        assert!(d.contains("io.repro.sim.version=v1.33.4+k3s1"));
        assert!(d.contains("io.repro.sim=true"));
        assert!(d.contains("ENTRYPOINT [\"/bin/k3s\"]"));
        assert!(d.contains("io.repro.sim.fingerprint=1-2-t3"));
        assert!(d.contains(
            "VOLUME [\"/var/lib/kubelet\", \"/var/lib/rancher/k3s\", \"/var/lib/cni\", \"/var/log\"]"
        ));
        assert!(!d.contains('@'));
    }

    #[test]
    fn binary_search_order_and_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        let missing = locate_sim_binary(&BinarySearch {
            explicit: None,
            cargo_target_dir: None,
            cwd: Some(root),
            exe: Some(&root.join("target/release/repro")),
        })
        .expect_err("nothing built");
        assert!(missing.to_string().contains("make sim"), "{missing}");

        let built = root.join("target").join(SIM_BINARY_IN_TARGET);
        std::fs::create_dir_all(built.parent().expect("parent")).expect("mkdir");
        std::fs::write(&built, b"bin").expect("write");
        // Found from the repro executable's ancestors, whatever the cwd.
        let found = locate_sim_binary(&BinarySearch {
            explicit: None,
            cargo_target_dir: None,
            cwd: Some(Path::new("/")),
            exe: Some(&root.join("target/release/repro")),
        })
        .expect("found");
        assert_eq!(found, built);

        let explicit = root.join("k3s");
        std::fs::write(&explicit, b"bin").expect("write");
        let found = locate_sim_binary(&BinarySearch {
            explicit: Some(explicit.clone()),
            cargo_target_dir: None,
            cwd: Some(root),
            exe: None,
        })
        .expect("found");
        assert_eq!(found, explicit);
        let err = locate_sim_binary(&BinarySearch {
            explicit: Some(root.join("nope")),
            cargo_target_dir: None,
            cwd: Some(root),
            exe: None,
        })
        .expect_err("missing explicit");
        assert!(err.to_string().contains(SIM_BINARY_ENV));
    }

    #[test]
    fn context_holds_dockerfile_binary_and_kubectl_link() {
        let dir = tempfile::tempdir().expect("tempdir");
        let binary = dir.path().join("k3s");
        std::fs::write(&binary, b"\x7fELF fake").expect("write");
        let tar_bytes = build_context("v1.33.4+k3s1", &binary).expect("context");
        let mut archive = tar::Archive::new(tar_bytes.as_slice());
        let mut seen = Vec::new();
        for entry in archive.entries().expect("entries") {
            let entry = entry.expect("entry");
            let path = entry.path().expect("path").display().to_string();
            if path == "rootfs/bin/kubectl" {
                assert_eq!(
                    entry
                        .link_name()
                        .expect("link")
                        .map(|l| l.display().to_string()),
                    Some("k3s".to_string())
                );
            }
            if path == "rootfs/bin/k3s" {
                assert_eq!(entry.header().mode().expect("mode"), 0o755);
            }
            seen.push(path);
        }
        for want in [
            "Dockerfile",
            "rootfs/bin/k3s",
            "rootfs/bin/kubectl",
            "rootfs/bin/rm",
            "rootfs/bin/cat",
            "rootfs/etc/nsswitch.conf",
            "rootfs/tmp",
        ] {
            assert!(
                seen.iter().any(|p| p.trim_end_matches('/') == want),
                "{want} in {seen:?}"
            );
        }
    }

    /// Removes the test image even when an assertion fails.
    struct RemoveImage(String);

    impl Drop for RemoveImage {
        fn drop(&mut self) {
            let _ = std::process::Command::new("docker")
                .args(["rmi", "-f", &self.0])
                .output();
        }
    }

    /// Needs a Docker engine; fails (does not skip) without one. The engine's API version
    /// agreement is tested with the engine (`docker/engine.rs`).
    #[tokio::test]
    async fn builds_an_image_through_the_engine() {
        let engine = crate::docker::connect()
            .await
            .expect("Docker must be reachable for this test: start the engine or set DOCKER_HOST");
        let dir = tempfile::tempdir().expect("tempdir");
        let binary = dir.path().join("k3s");
        std::fs::write(&binary, b"not run by this test").expect("write");
        let version = format!("v0.0.{}+k3s1", std::process::id());
        let image = sim_image_ref(&version);
        let _cleanup = RemoveImage(image.clone());

        let built = build_sim_image_from(&engine, &version, &binary)
            .await
            .expect("build");
        assert_eq!(built, image);

        let labels = engine.image(&image).await.expect("inspect").labels;
        assert_eq!(labels.get("io.repro.sim").map(String::as_str), Some("true"));
        assert_eq!(labels.get("io.repro.sim.version"), Some(&version));
        assert_eq!(
            labels.get(FINGERPRINT_LABEL),
            Some(&fingerprint(&binary).expect("fp"))
        );
        // The rest of the image's config as `docker image inspect` shows it to anyone.
        let out = std::process::Command::new("docker")
            .args(["image", "inspect", "--format", "{{json .Config}}", &image])
            .output()
            .expect("docker CLI");
        assert!(out.status.success(), "{out:?}");
        let config: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        let env: Vec<&str> = config["Env"]
            .as_array()
            .expect("env")
            .iter()
            .filter_map(|v| v.as_str())
            .collect();
        assert!(
            env.contains(&format!("REPRO_SIM_K3S_VERSION={version}").as_str()),
            "{env:?}"
        );
        assert!(env.contains(&"PATH=/bin"), "{env:?}");
        assert_eq!(config["Entrypoint"], serde_json::json!(["/bin/k3s"]));
        let volumes = config["Volumes"].as_object().expect("volumes");
        for v in [
            "/var/lib/kubelet",
            "/var/lib/rancher/k3s",
            "/var/lib/cni",
            "/var/log",
        ] {
            assert!(volumes.contains_key(v), "{v} in {volumes:?}");
        }
    }
}
