//! End to end on RKE2 (issue #19): the stand-in plays rke2 on systemd nodes — the systemd base
//! image (`make systemd-base`) with the stand-in installed from a tarball laid out as rke2's,
//! units started and restarted through systemctl, every boot read from the unit's journal. The
//! RKE2 checks on rancher/rke2#8465's topology give `reproduced` on the release it was reported
//! on and `fixed` on the 1.32 release with k3s's fix, under `--expect auto` (metrics-right-order,
//! the order that works everywhere, `fixed` on both).

use serde_json::Value;

use crate::sim_run as run;
use crate::util::text;

/// Runs `check` on `version` on the rke2-8465 topology; asserts the verdict, exit 0, the
/// distribution and that the nodes ran under systemd (nothing left: `sim_run` checks).
fn rke2_run(check: &str, version: &str, outcome: &str) -> Value {
    let (out, r, dir, _t) = run(&[
        check,
        "--version",
        version,
        "--topology",
        "rke2-8465",
        "--expect",
        "auto",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(r["verdict"]["outcome"], outcome, "{}", text(&out));
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
        let log = std::fs::read_to_string(dir.join(b["log"].as_str().unwrap())).unwrap();
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
    let log = std::fs::read_to_string(dir.join(agent["log"].as_str().unwrap())).unwrap();
    assert!(log.contains("Starting rke2-agent.service"), "{log}");
    assert!(log.contains("rke2-agent-load-balancer"), "{log}");
    // #31: the agent is ready on rke2's own journal line; the kubelet's lines are in its own
    // file (agent/logs/kubelet.log), as rke2 writes them: no boot's journal holds one.
    assert!(log.contains("rke2 agent is up and running"), "{log}");
    for b in boots {
        let log = std::fs::read_to_string(dir.join(b["log"].as_str().unwrap())).unwrap();
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
    let (out, r, dir, _t) = run(&[
        "etcd-split",
        "--root",
        root.path().to_str().unwrap(),
        "--version",
        "v1.32.5+rke2r1",
        "--topology",
        "rke2-8465",
    ]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    assert_eq!(r["verdict"]["outcome"], "inconclusive");
    assert!(
        r["error"].as_str().unwrap().contains("etcd-2 died"),
        "{}",
        r["error"]
    );
    let boot = r["boots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["node"] == "etcd-2")
        .unwrap();
    assert_eq!(boot["end"], "exited", "{boot}");
    assert_eq!(boot["exit_code"], 1, "{boot}");
    let log = std::fs::read_to_string(dir.join(boot["log"].as_str().unwrap())).unwrap();
    assert!(log.contains("level=fatal"), "{log}");
    assert!(log.contains("Main process exited"), "{log}");
}

/// `repro sim artifacts` into a fresh folder: the stand-in's rke2 release artifacts.
fn stand_in_artifacts(version: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let out = crate::util::repro()
        .args(["sim", "artifacts", "--version", version, "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    dir
}

/// A real (not `--sim`) `repro run etcd-split` on `version`, its node image on the systemd base
/// under this helper's own repository when the tests have one; `extra` before the results.
fn real_run(
    version: &str,
    expect: &str,
    extra: &[&std::ffi::OsStr],
    env: &[(&str, &std::ffi::OsStr)],
    results: &std::path::Path,
) -> std::process::Output {
    let mut cmd = crate::util::repro();
    if let Ok(repo) = std::env::var("REPRO_SIM_REPOSITORY") {
        cmd.env("REPRO_NODE_REPOSITORY", format!("{repo}-node"));
    }
    cmd.envs(env.iter().copied())
        .args(["run", "etcd-split", "--version", version])
        .args(extra)
        .args([
            "--node-base",
            "repro.local/systemd-base:bookworm",
            "--expect",
            expect,
            "--progress",
            "never",
            "--results",
        ])
        .arg(results)
        .output()
        .unwrap()
}

/// A `repro run` with `--artifacts` and NOT `--sim`: the node image comes from the folder.
fn artifacts_run(dir: &std::path::Path, results: &std::path::Path) -> std::process::Output {
    real_run(
        "v1.32.5+rke2r1",
        "auto",
        &["--artifacts".as_ref(), dir.as_os_str()],
        &[],
        results,
    )
}

#[test]
fn a_node_image_from_release_artifacts_reproduces_and_says_it_is_the_stand_in() {
    crate::docker::docker_ok();
    let artifacts = stand_in_artifacts("v1.32.5+rke2r1");
    let tmp = tempfile::tempdir().unwrap();
    let out = artifacts_run(artifacts.path(), tmp.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let dir = crate::only_run_dir(tmp.path());
    let r = crate::read_result(&dir);
    crate::assert_no_leftovers(r["run_id"].as_str().unwrap());
    assert_eq!(r["verdict"]["outcome"], "reproduced", "{}", text(&out));
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
        text(&out).contains("(repro stand-in, not real rke2)"),
        "{}",
        text(&out)
    );
    // Units ran under systemd, installed by the install step.
    let boot = &r["boots"][0];
    let log = std::fs::read_to_string(dir.join(boot["log"].as_str().unwrap())).unwrap();
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
    let tmp = tempfile::tempdir().unwrap();
    let out = artifacts_run(artifacts.path(), tmp.path());
    assert_eq!(out.status.code(), Some(2), "bad input: {}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("rke2.linux-amd64.tar.gz: sha256 "), "{err}");
    assert!(err.contains(&format!("does not match {listed}")), "{err}");
    // Refused at the plan: no run folder, so no run id, container or image was made.
    assert!(
        !tmp.path().join("").read_dir().unwrap().any(|_| true),
        "{err}"
    );
}

/// Serves `repro sim artifacts` output of `version` as rke2's GitHub release does
/// (`<base>/<version, + as %2B>/<file>`), the tarball replaced by `tarball` when given.
fn serve_release(
    server: &crate::http_files::HttpFiles,
    version: &str,
    tarball: Option<Vec<u8>>,
) -> tempfile::TempDir {
    let artifacts = stand_in_artifacts(version);
    let at = version.replace('+', "%2B");
    for name in ["sha256sum-amd64.txt", "rke2.linux-amd64.tar.gz"] {
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
fn fetching_run(
    server: &crate::http_files::HttpFiles,
    cache: &std::path::Path,
    results: &std::path::Path,
) -> std::process::Output {
    let url = server.url();
    real_run(
        "v1.32.8+rke2r1",
        "reproduced",
        &[],
        &[
            ("REPRO_RKE2_RELEASES_URL", url.as_ref()),
            ("XDG_CACHE_HOME", cache.as_os_str()),
        ],
        results,
    )
}

/// Without `--artifacts` or `--image`, a real rke2 run fetches the release artifacts where
/// rke2's install.sh does, checks the tarball against the sum file, caches both and runs as an
/// `--artifacts` run of the cache folder: the stand-in's tarball, so the image says it is the
/// stand-in and runs unprivileged here.
#[test]
fn release_artifacts_are_fetched_verified_and_cached_when_none_are_given() {
    crate::docker::docker_ok();
    let server = crate::http_files::HttpFiles::start();
    let published = serve_release(&server, "v1.32.8+rke2r1", None);
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let results = tmp.path().join("results");
    let out = fetching_run(&server, &cache, &results);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        server.asked(),
        [
            "/v1.32.8%2Brke2r1/sha256sum-amd64.txt",
            "/v1.32.8%2Brke2r1/rke2.linux-amd64.tar.gz"
        ]
    );
    let dir = crate::only_run_dir(&results);
    let r = crate::read_result(&dir);
    crate::assert_no_leftovers(r["run_id"].as_str().unwrap());
    assert_eq!(r["verdict"]["outcome"], "reproduced", "{}", text(&out));
    assert_eq!(r["distribution"], "rke2");
    assert_eq!(r["k3s"]["stand_in"], true);
    // The cache holds what was published, and the image is tagged with the tarball's sum.
    let cached = cache.join("repro/rke2/v1.32.8+rke2r1");
    for name in ["sha256sum-amd64.txt", "rke2.linux-amd64.tar.gz"] {
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
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not rke2-images.linux-amd64.tar.zst"),
        "the images tarball is said to be left out: {err}"
    );
    // `repro plan` downloads nothing; it says the run fetches.
    let plan = crate::util::repro()
        .env("REPRO_RKE2_RELEASES_URL", server.url())
        .env("XDG_CACHE_HOME", &cache)
        .args(["plan", "etcd-split", "--version", "v1.32.8+rke2r1"])
        .output()
        .unwrap();
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));
    assert!(
        text(&plan).contains("`repro run` fetches rke2's release artifacts"),
        "{}",
        text(&plan)
    );
    assert_eq!(server.asked().len(), 2, "plan fetched nothing");
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
    let results = tmp.path().join("results");
    let out = fetching_run(&server, &cache, &results);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("says {listed}")), "{err}");
    assert!(err.contains("has sha256 "), "{err}");
    assert!(!results.exists(), "no results folder: {err}");
    let kept = cache.join("repro/rke2/v1.32.8+rke2r1");
    assert!(!kept.exists(), "nothing kept: {err}");
}

/// A version with no release at the base URL: exit 2 naming the URL and the version.
#[test]
fn a_version_without_a_release_is_bad_input_naming_the_url() {
    let server = crate::http_files::HttpFiles::start();
    let tmp = tempfile::tempdir().unwrap();
    let out = fetching_run(
        &server,
        &tmp.path().join("cache"),
        &tmp.path().join("results"),
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "no rke2 release v1.32.8+rke2r1 at {}/v1.32.8%2Brke2r1/sha256sum-amd64.txt (HTTP 404)",
            server.url()
        )),
        "{err}"
    );
    assert!(!tmp.path().join("results").exists());
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
    let (cache, results) = (tmp.path().join("cache"), tmp.path().join("results"));
    let start = std::time::Instant::now();
    let url = server.url();
    let out = real_run(
        version,
        "reproduced",
        &[],
        &[
            ("REPRO_RKE2_RELEASES_URL", url.as_ref()),
            ("XDG_CACHE_HOME", cache.as_os_str()),
            ("REPRO_DOWNLOAD_STALL", "2s".as_ref()),
        ],
        &results,
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(text(&out).contains("stalled"), "{}", text(&out));
    assert!(start.elapsed() < std::time::Duration::from_secs(60));
    assert!(!results.exists(), "{}", text(&out));
    let left: Vec<_> = walk(&cache)
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(".part-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
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
