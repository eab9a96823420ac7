//! What the engine says of itself, judged: DOCKER_HOST, the cgroup version and driver, the
//! image store, the MTU, and whether the run's image is there or can be built.

use super::*;

/// cgroup v2 controllers the kubelet needs delegated to the containers.
pub(super) const CGROUP_V2_CONTROLLERS: &[&str] = &["cpuset", "cpu", "io", "memory", "pids"];

pub(super) fn docker_host_line(endpoint: &str) -> Line {
    docker_host_line_of(endpoint, None)
}

/// DOCKER_HOST's line, naming the engine once it is known (a Podman service answers the
/// Docker API too; its limits and fixes differ, docs/podman.md).
pub(super) fn docker_host_line_of(endpoint: &str, kind: Option<docker::EngineKind>) -> Line {
    let set = std::env::var("DOCKER_HOST")
        .ok()
        .filter(|s| !s.is_empty())
        .is_some();
    host_line(endpoint, set, kind)
}

pub(super) fn host_line(endpoint: &str, set: bool, kind: Option<docker::EngineKind>) -> Line {
    // `tcp://user:password@host`: the line names the engine, never a password.
    let shown = crate::redact::Redactor::new(&[]).redact_text(endpoint);
    let engine = match kind {
        Some(docker::EngineKind::Podman) => "Podman service",
        Some(docker::EngineKind::Docker) => "Docker engine",
        None => "engine",
    };
    let podman = if kind == Some(docker::EngineKind::Podman) {
        " (Podman: see docs/podman.md for its limits)"
    } else {
        ""
    };
    match (set, is_local(endpoint)) {
        (false, _) => Line::ok("docker-host", format!("DOCKER_HOST unset: the local {engine} at {shown}{podman}")),
        (true, true) => Line::ok("docker-host", format!("DOCKER_HOST={shown}: a local {engine}{podman}")),
        (true, false) => Line::warn(
            "docker-host",
            format!("DOCKER_HOST={shown}: a remote {engine}{podman}; the inotify, memory-available, disk and cgroup-delegation checks read this machine, not the engine's"),
            "run `repro doctor` on the engine's host for those",
        ),
    }
}

pub(super) fn cgroup_line(
    version: Option<&str>,
    driver: Option<&str>,
    controllers: Option<&str>,
    sim: bool,
) -> Line {
    let driver = driver.unwrap_or("unknown driver");
    match version {
        Some("1") => Line::ok(
            "cgroup",
            format!("cgroup v1 ({driver}): real k3s runs on it (k3d runs it on v1 too)"),
        ),
        Some("2") if sim => Line::ok("cgroup", format!("cgroup v2 ({driver})")),
        Some("2") => {
            let missing: Vec<&str> = match controllers {
                Some(c) => {
                    let have: Vec<&str> = c.split_whitespace().collect();
                    CGROUP_V2_CONTROLLERS
                        .iter()
                        .copied()
                        .filter(|w| !have.contains(w))
                        .collect()
                }
                None => vec![],
            };
            if missing.is_empty() {
                Line::ok(
                    "cgroup",
                    format!("cgroup v2 ({driver}): repro starts k3s as PID 1, which empties the root cgroup the kubelet needs"),
                )
            } else {
                Line::warn(
                    "cgroup",
                    format!(
                        "cgroup v2 ({driver}) without the {} controller(s) the kubelet needs",
                        missing.join(", ")
                    ),
                    "enable them (systemd: `Delegate=yes` for docker.service) and restart Docker",
                )
            }
        }
        _ => Line::warn(
            "cgroup",
            "the engine does not say its cgroup version",
            "check `docker info` (Cgroup Version); real k3s needs v1 or v2 with its controllers",
        ),
    }
}

/// The engine's image store: the classic graph drivers (`overlay2`, `fuse-overlayfs`), or
/// containerd's, which Docker 29 made the default for new installs (`docker info`: DriverStatus
/// `driver-type: io.containerd.snapshotter.v1`). What breaks kind and k3d there (kind #3795,
/// #4066, #4224; k3d #1538) is `ctr images import --all-platforms` of a `docker save` archive
/// inside a node: the archive keeps the whole multi-platform index while the store holds one
/// platform's blobs (`content digest … not found`). repro imports nothing into a node with
/// `ctr`: `--image-archive` is the engine's own `docker load`, the stand-in's image is built by
/// the engine from a one-file context, and RKE2's images tarball is rke2's release file, which
/// rke2's containerd imports itself (a single platform). So both stores are ok; the line says
/// which one and what to save archives with.
pub(crate) fn image_store_line(driver: Option<&str>, containerd: bool) -> Line {
    let driver = driver.unwrap_or("unknown driver");
    if containerd {
        Line::ok(
            "image-store",
            format!(
                "containerd image store ({driver}; Docker 29's default): `--image-archive` is loaded by the engine (`docker load`), not by `ctr` in a node, and the stand-in is built by the engine, so kind's and k3d's `content digest … not found` (kind #3795, #4066; k3d #1538) does not apply; save archives on this host with `docker save --platform linux/amd64` (a multi-platform index whose other platforms' blobs are absent cannot be loaded elsewhere)"
            ),
        )
    } else {
        Line::ok(
            "image-store",
            format!("classic graph driver ({driver}): `docker save`/`docker load` archives hold one platform"),
        )
    }
}

/// Docker's default MTU when neither the daemon (`--mtu`, daemon.json `mtu`) nor the network
/// sets one.
pub(crate) const DEFAULT_MTU: u32 = 1500;

/// The MTU a run's network gets: `--mtu` if given, else the engine's default bridge's
/// (`com.docker.network.driver.mtu`, set by dockerd `--mtu`). A user-defined network does not
/// inherit the daemon's MTU (actions/runner #775, actions-runner-controller #1046), so a run
/// inside a Docker-in-Docker runner at 1400 (k3s PR #14144) would fragment or stall at 1500.
pub(crate) fn run_network_mtu(flag: Option<u32>, bridge: Option<u32>) -> Option<u32> {
    flag.or(bridge.filter(|m| *m != DEFAULT_MTU))
}

/// The MTU the engine gives containers (its default bridge's option) against the host's
/// default-route interface (`host`: name and MTU, when the engine is local), and what a run's
/// network will use.
pub(crate) fn mtu_line(bridge: Option<u32>, host: Option<(&str, u32)>, flag: Option<u32>) -> Line {
    let engine = match bridge {
        Some(m) => format!(
            "the engine gives containers MTU {m} (default bridge's com.docker.network.driver.mtu)"
        ),
        None => format!("the engine sets no MTU on its default bridge ({DEFAULT_MTU})"),
    };
    let run = match run_network_mtu(flag, bridge) {
        Some(m) => format!("a run's network is created with MTU {m}"),
        None => format!("a run's network gets the engine's default ({DEFAULT_MTU})"),
    };
    let used = run_network_mtu(flag, bridge).unwrap_or(DEFAULT_MTU);
    match host {
        Some((iface, m)) if m < used => Line::warn(
            "mtu",
            format!("{engine}, but {iface} (the host's route out) has MTU {m}: {run}, larger than the path, so large packets fragment or stall"),
            format!("give `repro run --mtu {m}` (or start dockerd with `--mtu {m}`)"),
        ),
        Some((iface, m)) => Line::ok("mtu", format!("{engine}; {iface} has MTU {m}; {run}")),
        None => Line::ok("mtu", format!("{engine}; {run}")),
    }
}

pub(super) async fn image_line(docker: &dyn DockerApi, req: &Request<'_>, image: &str) -> Line {
    if req.sim {
        let sim = crate::sim_image::sim_image_ref(&req.version.to_string());
        return match docker.image(&sim).await {
            Some(_) => Line::ok("image", format!("{sim} is here")),
            None => Line::ok(
                "image",
                format!("{sim} is not here yet: `repro run --sim` builds it (`make sim` or `repro sim build` ahead)"),
            ),
        };
    }
    let here = docker.image(image).await.is_some();
    if !here
        && req.image.is_none()
        && crate::builds::release::base_url(req.version.distro).is_some()
    {
        return built_image_line(req, image);
    }
    match here {
        true => Line::ok("image", format!("{image} is here")),
        false => Line::warn(
            "image",
            format!("{image} is not in the engine's store: `repro run` pulls it"),
            format!("offline: `docker save {image}` elsewhere and give it as --image-archive FILE"),
        ),
    }
}

/// The image line of a distribution whose node image is built from release artifacts (rke2's):
/// not pulled (no registry has it) but built, from cached or fetched artifacts.
pub(super) fn built_image_line(req: &Request<'_>, image: &str) -> Line {
    let distro = req.version.distro;
    let Some(names) = &req.facts.release_artifacts else {
        return Line::ok(
            "image",
            format!("{image}: {distro}'s nodes run a published image"),
        );
    };
    let distro::ReleaseArtifacts {
        tarball,
        checksums,
        images,
        ..
    } = names;
    let name = req.facts.name;
    let tag = format!(
        "{}:{}-<first 12 of the tarball's sha256>",
        req.facts.image_repository,
        req.version.image_tag()
    );
    let offline = format!(
        "air-gapped: give --artifacts DIR ({tarball}, {checksums} and {images}, which {name} imports at boot), or --image NAME of a node image in the store"
    );
    let cache = crate::builds::release::cache_dir(distro, &req.version).ok();
    if let Some(dir) = cache.filter(|d| d.join(tarball).is_file() && d.join(checksums).is_file()) {
        // Not hashed here (the run checks every file again): the doctor only says what it has.
        let then = if dir.join(images).is_file() {
            format!(" (with {images})")
        } else {
            format!(", after fetching {images} beside them (about 800 MB; --no-images-tarball leaves it out)")
        };
        return Line::ok(
            "image",
            format!(
                "{image} is not here: `repro run` builds the node image {tag} from the release artifacts cached in {}{then} (checked again against {checksums})",
                dir.display()
            ),
        );
    }
    let base = crate::builds::release::base_url(distro).unwrap_or_default();
    let (_, url) =
        crate::builds::release::urls(&crate::redact::without_userinfo(&base), &req.version, names);
    Line::warn(
        "image",
        format!(
            "{image} is not here and no registry has it: `repro run` fetches {url}, {checksums} and {images} beside it (about 800 MB, so that no node pulls its images; --no-images-tarball leaves it out), checks their sha256 and builds the node image {tag} from them"
        ),
        offline,
    )
}
