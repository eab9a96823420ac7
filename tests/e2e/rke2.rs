//! End to end on RKE2 (issue #19): the stand-in plays rke2 on systemd nodes — the systemd base
//! image (`make systemd-base`) with the stand-in installed from a tarball laid out as rke2's,
//! units started and restarted through systemctl, every boot read from the unit's journal. The
//! RKE2 checks on rancher/rke2#8465's topology give `reproduced` on the release it was reported
//! on and `fixed` on the 1.32 release with k3s's fix, under `--expect auto` (metrics-right-order,
//! the order that works everywhere, `fixed` on both).

use std::path::Path;

use serde_json::Value;

use crate::repro::Repro;
use crate::runs::{clean, Run};
use crate::util::text;

/// The systemd base image (`make systemd-base`) real rke2 runs build their node image on.
const SYSTEMD_BASE: &str = "repro.local/systemd-base:bookworm";

/// Runs `check` on `version` on the rke2-8465 topology; asserts the verdict, exit 0, the
/// distribution and that the nodes ran under systemd (nothing left: `sim_run` checks).
fn rke2_run(check: &str, version: &str, outcome: &str) -> Value {
    let run = Run::check(check)
        .sim()
        .version(version)
        .topology("rke2-8465")
        .expect("auto")
        .finish();
    run.out.code(0);
    let r = run.result.clone();
    assert_eq!(run.outcome(), outcome, "{}", run.out);
    assert_eq!(r["distribution"], "rke2");
    // `rke2 -v` of the init node: rke2's form, the full 40-hex commit.
    let v = r["k3s"]["version_output"].as_str().unwrap_or_default();
    assert!(v.starts_with(&format!("rke2 version {version} (")), "{v:?}");
    // Every boot's log is its unit's journal: PID 1's lines about the unit are in it (a
    // container's own log has none), and boots past the first are restarts of the unit.
    let boots = r["boots"].as_array().unwrap();
    let etcd2: Vec<&Value> = boots.iter().filter(|b| b["node"] == "etcd-2").collect();
    assert!(etcd2.len() >= 2, "etcd-2 was restarted: {etcd2:?}");
    for b in &etcd2 {
        let log = run.file(b["log"].as_str().unwrap());
        assert!(
            log.contains("Starting rke2-server.service - Rancher Kubernetes Engine v2 (server)"),
            "{log}"
        );
        assert_eq!(
            log.matches("Starting rke2 v").count(),
            1,
            "one boot is one start of the unit: {log}"
        );
    }
    // The boots that were restarted ended as stops repro asked for, not deaths.
    for b in &etcd2[..etcd2.len() - 1] {
        assert_eq!(b["end"], "stopped", "{b}");
    }
    let agent = boots.iter().find(|b| b["node"] == "agent-1").unwrap();
    let log = run.file(agent["log"].as_str().unwrap());
    assert!(log.contains("Starting rke2-agent.service"), "{log}");
    assert!(log.contains("rke2-agent-load-balancer"), "{log}");
    // #31: the agent is ready on rke2's own journal line; the kubelet's lines are in its own
    // file (agent/logs/kubelet.log), as rke2 writes them: no boot's journal holds one.
    assert!(log.contains("rke2 agent is up and running"), "{log}");
    for b in boots {
        let log = run.file(b["log"].as_str().unwrap());
        assert!(
            !log.contains("Successfully registered node")
                && !log.contains("kubelet_node_status.go"),
            "a kubelet line in {}'s journal: {log}",
            b["node"]
        );
    }
    r
}

#[test]
fn etcd_split_on_rke2_reproduces_then_fixed() {
    let r = rke2_run("etcd-split", "v1.32.5+rke2r1", "reproduced");
    // Joiners reach etcd-1 on the supervisor port.
    let cfg = r["steps"][0]["observations"].as_array().unwrap();
    assert!(!cfg.is_empty());
    rke2_run("etcd-split", "v1.32.9+rke2r1", "fixed");
}

#[test]
fn metrics_order_on_rke2_reproduces_then_fixed() {
    let r = rke2_run("metrics-order", "v1.32.5+rke2r1", "reproduced");
    // The probe is rke2's: its kubectl, kubeconfig and port 9345.
    let probe = r["signals"]["supervisor-metrics"]["probe"].as_array();
    let shown = format!("{probe:?} {}", r["steps"][0]["observations"]);
    assert!(
        shown.contains("/var/lib/rancher/rke2/bin/kubectl") && shown.contains("127.0.0.1:9345"),
        "{shown}"
    );
    rke2_run("metrics-order", "v1.32.9+rke2r1", "fixed");
}

/// rancher/rke2#8465's working order has no bug signature and no `fixed-in`: `fixed` on the
/// buggy release too (what `--expect auto` asks), as on k3s.
#[test]
fn metrics_right_order_on_rke2_is_fixed_on_both() {
    rke2_run("metrics-right-order", "v1.32.5+rke2r1", "fixed");
    rke2_run("metrics-right-order", "v1.32.9+rke2r1", "fixed");
}

/// A unit that dies at boot is a death, seen in its journal (systemd's "Main process exited",
/// with the status): the run is inconclusive with the death's evidence, though rke2's
/// `Restart=always` starts the unit again behind it, and nothing is left.
#[test]
fn a_unit_dying_at_boot_is_a_death_with_its_exit_status() {
    let root = crate::util::project(&[
        "checks/signals.yaml",
        "checks/etcd-split.yaml",
        "topologies/etcd-split.yaml",
        "topologies/rke2-8465.yaml",
    ]);
    let topo = root.path().join("topologies/rke2-8465.yaml");
    let text_before = std::fs::read_to_string(&topo).unwrap();
    let planted = text_before.replace(
        "{name: etcd-2, role: etcd, join: etcd-1}",
        "{name: etcd-2, role: etcd, join: etcd-1, env: {REPRO_SIM_CRASH_AT_BOOT: '1'}}",
    );
    assert_ne!(planted, text_before, "fault not planted");
    std::fs::write(&topo, planted).unwrap();
    let run = Run::check("etcd-split")
        .sim()
        .root(root.path())
        .version("v1.32.5+rke2r1")
        .topology("rke2-8465")
        .finish();
    run.out.code(4);
    let r = &run.result;
    assert_eq!(run.outcome(), "inconclusive");
    assert!(
        r["error"].as_str().unwrap().contains("etcd-2 died"),
        "{}",
        r["error"]
    );
    let boot = crate::runs::boot(r, "etcd-2", 1);
    assert_eq!(boot["end"], "exited", "{boot}");
    assert_eq!(boot["exit_code"], 1, "{boot}");
    let log = run.file(boot["log"].as_str().unwrap());
    assert!(log.contains("level=fatal"), "{log}");
    assert!(log.contains("Main process exited"), "{log}");
}

/// `repro sim artifacts` into a fresh folder: the stand-in's rke2 release artifacts.
fn stand_in_artifacts(version: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    Repro::new()
        .args(["sim", "artifacts", "--version", version, "--out"])
        .arg(dir.path())
        .run()
        .code(0);
    dir
}

/// A real (not `--sim`) `repro run <check>` on `version`, its node image built on `node_base`
/// under this helper's own repository (`<REPRO_SIM_REPOSITORY><node_repo>`) when the tests have
/// one.
fn real_run(check: &str, version: &str, node_base: &str, node_repo: &str) -> Run {
    let run = Run::check(check)
        .version(version)
        .args(["--node-base", node_base]);
    match std::env::var("REPRO_SIM_REPOSITORY") {
        Ok(repo) => run.env("REPRO_NODE_REPOSITORY", format!("{repo}{node_repo}")),
        Err(_) => run,
    }
}

/// A `repro run` with `--artifacts` and NOT `--sim`: the node image comes from the folder.
fn artifacts_run(dir: &Path) -> Run {
    real_run("etcd-split", "v1.32.5+rke2r1", SYSTEMD_BASE, "-node")
        .expect("auto")
        .arg("--artifacts")
        .arg(dir)
}

#[test]
fn a_node_image_from_release_artifacts_reproduces_and_says_it_is_the_stand_in() {
    crate::docker::docker_ok();
    let artifacts = stand_in_artifacts("v1.32.5+rke2r1");
    let run = artifacts_run(artifacts.path()).finish();
    let (out, r) = (&run.out, &run.result);
    out.code(0);
    assert_eq!(run.outcome(), "reproduced", "{out}");
    assert_eq!(r["distribution"], "rke2");
    // Built from the folder (tag: version and the tarball's sum), and what it holds is the
    // stand-in: the result says so, though --sim was not given.
    let image = r["k3s"]["image"].as_str().unwrap();
    let sums = std::fs::read_to_string(artifacts.path().join("sha256sum-amd64.txt")).unwrap();
    assert!(image.contains(":v1.32.5-rke2r1-"), "{image}");
    assert!(
        sums.starts_with(image.rsplit('-').next().unwrap()),
        "{image} {sums}"
    );
    assert_eq!(r["k3s"]["stand_in"], true);
    assert!(
        out.to_string().contains("(repro stand-in, not real rke2)"),
        "{out}"
    );
    // Units ran under systemd, installed by the install step.
    let log = run.file(r["boots"][0]["log"].as_str().unwrap());
    assert!(log.contains("Starting rke2-server.service"), "{log}");
}

#[test]
fn a_corrupted_release_tarball_is_refused_before_anything_exists() {
    let artifacts = stand_in_artifacts("v1.32.5+rke2r1");
    let tarball = artifacts.path().join("rke2.linux-amd64.tar.gz");
    let mut bytes = std::fs::read(&tarball).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&tarball, &bytes).unwrap();
    let listed = std::fs::read_to_string(artifacts.path().join("sha256sum-amd64.txt")).unwrap();
    let listed = listed.split_whitespace().next().unwrap();
    let (out, results) = artifacts_run(artifacts.path()).output();
    out.code(2);
    out.stderr_has("rke2.linux-amd64.tar.gz: sha256 ");
    out.stderr_has(&format!("does not match {listed}"));
    // Refused at the plan: no run folder, so no run id, container or image was made.
    results.assert_untouched(&out);
}

/// A release tarball cut in half, its sums file rewritten to match (so the plan's checks pass):
/// the node image's build fails in the install script's tar, and the run says tar's own reason
/// and names the tarball — not only the engine's "returned a non-zero code", and not "the
/// stand-in image" (#30) — with exit 3, no image tagged and nothing left.
#[test]
fn a_failing_node_image_build_says_tars_reason_and_names_the_tarball() {
    crate::docker::docker_ok();
    let artifacts = stand_in_artifacts("v1.32.5+rke2r1");
    let tarball = artifacts.path().join("rke2.linux-amd64.tar.gz");
    let bytes = std::fs::read(&tarball).unwrap();
    std::fs::write(&tarball, &bytes[..bytes.len() / 2]).unwrap();
    let sum = std::process::Command::new("sha256sum")
        .arg(&tarball)
        .output()
        .unwrap();
    let sum = String::from_utf8_lossy(&sum.stdout);
    let sum = sum.split_whitespace().next().unwrap();
    std::fs::write(
        artifacts.path().join("sha256sum-amd64.txt"),
        format!("{sum}  rke2.linux-amd64.tar.gz\n"),
    )
    .unwrap();
    let run = artifacts_run(artifacts.path()).finish();
    let (out, r) = (&run.out, &run.result);
    out.code(3);
    let image = r["k3s"]["image"].as_str().unwrap();
    out.stderr_has(&format!(
        "cannot build the node image {image} from {}: ",
        tarball.display()
    ));
    let err = out.to_string();
    assert!(
        err.contains("Unexpected EOF") || err.contains("unexpected end of file"),
        "tar's reason: {err}"
    );
    assert!(!err.contains("stand-in image"), "{err}");
    // The build's stderr comes coloured; its colours are not shown as `\u001b[91m`.
    assert!(!err.contains("\\u001b"), "{err}");
    let tagged = std::process::Command::new("docker")
        .args(["image", "inspect", image])
        .output()
        .unwrap();
    assert!(!tagged.status.success(), "{image} was tagged");
}

/// The images tarball a served release carries: any bytes do (the stand-in imports nothing),
/// listed in the sum file as rke2's release lists it.
fn images_tarball() -> Vec<u8> {
    (0..300_000u32).map(|i| (i * 13 % 251) as u8).collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Serves `repro sim artifacts` output of `version` as rke2's GitHub release does
/// (`<base>/<version, + as %2B>/<file>`), with [`images_tarball`] listed in its sum file as
/// rke2's release lists every asset, the tarball replaced by `tarball` when given.
fn serve_release(
    server: &crate::http_files::HttpFiles,
    version: &str,
    tarball: Option<Vec<u8>>,
) -> tempfile::TempDir {
    let artifacts = stand_in_artifacts(version);
    let at = version.replace('+', "%2B");
    let images = images_tarball();
    let sums = artifacts.path().join("sha256sum-amd64.txt");
    let mut listed = std::fs::read_to_string(&sums).unwrap();
    listed.push_str(&format!(
        "{}  rke2-images.linux-amd64.tar.zst\n",
        sha256_hex(&images)
    ));
    std::fs::write(&sums, listed).unwrap();
    std::fs::write(
        artifacts.path().join("rke2-images.linux-amd64.tar.zst"),
        &images,
    )
    .unwrap();
    for name in [
        "sha256sum-amd64.txt",
        "rke2.linux-amd64.tar.gz",
        "rke2-images.linux-amd64.tar.zst",
    ] {
        let bytes = std::fs::read(artifacts.path().join(name)).unwrap();
        server.put(&format!("{at}/{name}"), bytes);
    }
    if let Some(t) = tarball {
        server.put(&format!("{at}/rke2.linux-amd64.tar.gz"), t);
    }
    artifacts
}

/// A real (not `--sim`) run with neither `--artifacts` nor `--image`, the release artifacts
/// served at `REPRO_RKE2_RELEASES_URL` and cached under `cache`.
fn fetching_run(server: &crate::http_files::HttpFiles, cache: &Path) -> Run {
    real_run("etcd-split", "v1.32.8+rke2r1", SYSTEMD_BASE, "-node")
        .expect("reproduced")
        .env("REPRO_RKE2_RELEASES_URL", server.url())
        .env("XDG_CACHE_HOME", cache)
}

/// Without `--artifacts` or `--image`, a real rke2 run fetches the release artifacts where
/// rke2's install.sh does — the images tarball with them (#31) — checks each against the sum
/// file, caches them and runs as an `--artifacts` run of the cache folder: the stand-in's
/// tarball, so the image says it is the stand-in and runs unprivileged here, and the images
/// tarball in the node image where rke2 imports it from, byte for byte.
#[test]
fn release_artifacts_are_fetched_verified_and_cached_when_none_are_given() {
    crate::docker::docker_ok();
    let server = crate::http_files::HttpFiles::start();
    let published = serve_release(&server, "v1.32.8+rke2r1", None);
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let run = fetching_run(&server, &cache).finish();
    let (out, r) = (&run.out, &run.result);
    out.code(0);
    assert_eq!(
        server.asked(),
        [
            "/v1.32.8%2Brke2r1/sha256sum-amd64.txt",
            "/v1.32.8%2Brke2r1/rke2.linux-amd64.tar.gz",
            "/v1.32.8%2Brke2r1/rke2-images.linux-amd64.tar.zst"
        ]
    );
    assert_eq!(run.outcome(), "reproduced", "{out}");
    assert_eq!(r["distribution"], "rke2");
    assert_eq!(r["k3s"]["stand_in"], true);
    // The cache holds what was published, and the image is tagged with the tarball's sum.
    let cached = cache.join("repro/rke2/v1.32.8+rke2r1");
    for name in [
        "sha256sum-amd64.txt",
        "rke2.linux-amd64.tar.gz",
        "rke2-images.linux-amd64.tar.zst",
    ] {
        assert_eq!(
            std::fs::read(cached.join(name)).unwrap(),
            std::fs::read(published.path().join(name)).unwrap(),
            "{name}"
        );
    }
    let sums = std::fs::read_to_string(cached.join("sha256sum-amd64.txt")).unwrap();
    let image = r["k3s"]["image"].as_str().unwrap();
    assert!(image.contains(":v1.32.8-rke2r1-"), "{image}");
    assert!(
        sums.starts_with(image.rsplit('-').next().unwrap()),
        "{image} {sums}"
    );
    // The images tarball is in the node image where rke2 imports it at start.
    let held = std::process::Command::new("docker")
        .args(["run", "--rm", "--entrypoint", "sha256sum", image])
        .arg("/var/lib/rancher/rke2/agent/images/rke2-images.linux-amd64.tar.zst")
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&held.stdout).starts_with(&sha256_hex(&images_tarball())),
        "{}",
        text(&held)
    );
    // `repro plan` downloads nothing; it says the run fetches.
    let plan = Repro::new()
        .env("REPRO_RKE2_RELEASES_URL", server.url())
        .env("XDG_CACHE_HOME", &cache)
        .args(["plan", "etcd-split", "--version", "v1.32.8+rke2r1"])
        .run();
    plan.code(0);
    assert!(
        plan.to_string()
            .contains("`repro run` fetches rke2's release artifacts"),
        "{plan}"
    );
    assert_eq!(server.asked().len(), 3, "plan fetched nothing");
}

/// A served tarball that does not match the served sum file: exit 3 naming both sums, and
/// nothing is created (no run folder) or kept (no cached artifacts).
#[test]
fn a_fetched_tarball_that_does_not_match_its_sum_is_refused_and_not_kept() {
    let server = crate::http_files::HttpFiles::start();
    let published = stand_in_artifacts("v1.32.8+rke2r1");
    let mut corrupted = std::fs::read(published.path().join("rke2.linux-amd64.tar.gz")).unwrap();
    let mid = corrupted.len() / 2;
    corrupted[mid] ^= 0xff;
    let _published = serve_release(&server, "v1.32.8+rke2r1", Some(corrupted));
    let listed = std::fs::read_to_string(_published.path().join("sha256sum-amd64.txt")).unwrap();
    let listed = listed.split_whitespace().next().unwrap().to_string();
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let (out, results) = fetching_run(&server, &cache).output();
    out.code(3);
    let err = &out.stderr;
    out.stderr_has(&format!("says {listed}"));
    out.stderr_has("has sha256 ");
    results.assert_untouched(&out);
    let kept = cache.join("repro/rke2/v1.32.8+rke2r1");
    assert!(!kept.exists(), "nothing kept: {err}");
}

/// A version with no release at the base URL: exit 2 naming the URL and the version.
#[test]
fn a_version_without_a_release_is_bad_input_naming_the_url() {
    let server = crate::http_files::HttpFiles::start();
    let tmp = tempfile::tempdir().unwrap();
    let (out, results) = fetching_run(&server, &tmp.path().join("cache")).output();
    out.code(2);
    out.stderr_has(&format!(
        "no rke2 release v1.32.8+rke2r1 at {}/v1.32.8%2Brke2r1/sha256sum-amd64.txt (HTTP 404)",
        server.url()
    ));
    results.assert_untouched(&out);
}

/// #31, on this machine: a node image built (through the API's legacy builder) on a base that
/// declares `VOLUME /var/lib/rancher` and no systemd stop signal — as rancher/systemd-node, the
/// base rke2's tests use — still holds the air-gap images tarball where rke2 reads it, byte for
/// byte, in a running node (the install step checked it against the release's sums, so a wrong
/// one fails the build); and its systemd node stops on `docker stop` with systemd's halt, not a
/// SIGKILL after the grace (exit code not 137, within seconds, the journal's shutdown in it).
#[test]
fn a_node_image_on_a_volume_base_keeps_the_images_tarball_and_its_node_halts() {
    crate::docker::docker_ok();
    let base = match std::env::var("REPRO_SIM_REPOSITORY") {
        Ok(repo) => format!("{repo}-volbase:test"),
        Err(_) => "repro.local/rke2-volbase:test".to_string(),
    };
    let ctx = tempfile::tempdir().unwrap();
    std::fs::write(
        ctx.path().join("Dockerfile"),
        "FROM repro.local/systemd-base:bookworm\nVOLUME /var/lib/kubelet\nVOLUME /var/lib/rancher\nSTOPSIGNAL SIGTERM\n",
    )
    .unwrap();
    let built = std::process::Command::new("docker")
        .env("DOCKER_BUILDKIT", "0")
        .args(["build", "-q", "-t", &base])
        .arg(ctx.path())
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", text(&built));

    let artifacts = stand_in_artifacts("v1.32.5+rke2r1");
    let images: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(
        artifacts.path().join("rke2-images.linux-amd64.tar.zst"),
        &images,
    )
    .unwrap();
    let sum = {
        use sha2::Digest;
        sha2::Sha256::digest(&images)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let sums = artifacts.path().join("sha256sum-amd64.txt");
    let mut text_sums = std::fs::read_to_string(&sums).unwrap();
    text_sums.push_str(&format!("{sum}  rke2-images.linux-amd64.tar.zst\n"));
    std::fs::write(&sums, text_sums).unwrap();

    let run = real_run("metrics-right-order", "v1.32.5+rke2r1", &base, "-volnode")
        .topology("rke2-8465")
        .keep()
        .arg("--artifacts")
        .arg(artifacts.path())
        .expect("auto")
        .finish();
    let run_id = run.run_id();
    let node = format!("repro-{run_id}-etcd-1");
    let docker = |args: &[&str]| {
        let o = std::process::Command::new("docker")
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    let held = docker(&[
        "exec",
        &node,
        "sha256sum",
        "/var/lib/rancher/rke2/agent/images/rke2-images.linux-amd64.tar.zst",
    ]);
    let signal = docker(&["inspect", "-f", "{{.Config.StopSignal}}", &node]);
    let t = std::time::Instant::now();
    docker(&["stop", &node]);
    let took = t.elapsed();
    let exit = docker(&["inspect", "-f", "{{.State.ExitCode}}", &node]);
    let journal_tail = {
        // The stopped container's own output: systemd's shutdown as PID 1 prints it.
        let o = std::process::Command::new("docker")
            .args(["logs", "--tail", "40", &node])
            .output()
            .unwrap();
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };
    clean(&run_id);
    let _ = std::process::Command::new("docker")
        .args(["rmi", &base])
        .output();
    run.out.code(0);
    assert!(
        held.starts_with(&sum),
        "tarball in the node: {held:?} (want {sum})"
    );
    assert_eq!(signal, "SIGRTMIN+3");
    assert_ne!(exit, "137", "killed after the grace: {journal_tail}");
    assert!(
        took < std::time::Duration::from_secs(15),
        "stop took {took:?}: {journal_tail}"
    );
}

/// The release fetch from a mirror whose tarball stalls halfway: the run ends within the stall
/// timeout (`REPRO_DOWNLOAD_STALL=2s` here) with exit 3 and a message naming the stall, before
/// anything is created — no results folder, no `.part-<pid>` file in the cache.
#[test]
fn a_stalled_release_fetch_ends_with_a_clear_message() {
    crate::docker::docker_ok();
    let server = crate::http_files::HttpFiles::start();
    let version = "v1.32.8+rke2r1";
    let published = serve_release(&server, version, None);
    let tarball = std::fs::read(published.path().join("rke2.linux-amd64.tar.gz")).unwrap();
    server.stall(
        &format!("{}/rke2.linux-amd64.tar.gz", version.replace('+', "%2B")),
        tarball,
    );
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let start = std::time::Instant::now();
    let (out, results) = fetching_run(&server, &cache)
        .env("REPRO_DOWNLOAD_STALL", "2s")
        .output();
    out.code(3);
    assert!(out.to_string().contains("stalled"), "{out}");
    assert!(start.elapsed() < std::time::Duration::from_secs(60));
    results.assert_untouched(&out);
    let left: Vec<_> = walk(&cache)
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(".part-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
