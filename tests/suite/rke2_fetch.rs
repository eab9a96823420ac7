#![allow(clippy::unwrap_used)] // tests panic on purpose when something is wrong

//! A real rke2 run's fetch of the release artifacts, without Docker: the release is served by a
//! local HTTP server (`REPRO_RKE2_RELEASES_URL`), the cache is a temporary `XDG_CACHE_HOME`, and
//! the engine is unreachable (`DOCKER_HOST` names no socket), so each run stops right after
//! its fetch (exit 3, at the engine) and the test reads what was asked for and what was cached.
//! The node image built from the fetched folder is tested with Docker in tests/e2e/rke2.rs.

use std::path::Path;
use std::process::Output;

use crate::http_files::HttpFiles;
use crate::util::{repro, text};

const VERSION: &str = "v1.32.8+rke2r1";
const AT: &str = "v1.32.8%2Brke2r1";
const TARBALL: &str = "rke2.linux-amd64.tar.gz";
const SUMS: &str = "sha256sum-amd64.txt";
const IMAGES: &str = "rke2-images.linux-amd64.tar.zst";

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("{:x}", sha2::Sha256::digest(bytes))
}

/// A release as rke2 publishes one: the tarball, the images tarball and the sum file listing
/// every asset (rke2's scripts/checksum), the images tarball's line saying `images_sum` when
/// given (a sum that does not match what is served).
fn serve(images_sum: Option<String>) -> (HttpFiles, Vec<u8>) {
    let server = HttpFiles::start();
    let tarball = b"a release tarball".to_vec();
    let images: Vec<u8> = (0..300_000u32).map(|i| (i * 13 % 251) as u8).collect();
    let sums = format!(
        "{}  {IMAGES}\n{}  {TARBALL}\n{}  rke2.linux-amd64\n",
        images_sum.unwrap_or_else(|| sha256(&images)),
        sha256(&tarball),
        sha256(b"binary")
    );
    server.put(&format!("{AT}/{SUMS}"), sums.into_bytes());
    server.put(&format!("{AT}/{TARBALL}"), tarball);
    server.put(&format!("{AT}/{IMAGES}"), images.clone());
    (server, images)
}

/// `repro run etcd-split` on [`VERSION`], real (not `--sim`), neither `--artifacts` nor
/// `--image`, with `extra` flags; the run's results folder under `results`.
fn fetching_run(server: &HttpFiles, cache: &Path, results: &Path, extra: &[&str]) -> Output {
    repro()
        .env("REPRO_RKE2_RELEASES_URL", server.url())
        .env("XDG_CACHE_HOME", cache)
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .args([
            "run",
            "etcd-split",
            "--version",
            VERSION,
            "--expect",
            "reproduced",
        ])
        .args(extra)
        .arg("--results")
        .arg(results)
        .output()
        .unwrap()
}

fn asked(server: &HttpFiles) -> Vec<String> {
    server
        .asked()
        .iter()
        .map(|p| p.rsplit('/').next().unwrap_or_default().to_string())
        .collect()
}

/// By default the images tarball is fetched with the release artifacts, checked against the
/// same sum file and cached beside them; a second run fetches nothing; a damaged cached images
/// tarball is dropped and fetched again alone; `--no-images-tarball` on a fresh cache fetches
/// the tarball and the sum file only.
#[test]
fn the_images_tarball_is_fetched_checked_cached_and_left_out_on_request() {
    let (server, images) = serve(None);
    let tmp = tempfile::tempdir().unwrap();
    let (cache, results) = (tmp.path().join("cache"), tmp.path().join("results"));
    let o = fetching_run(&server, &cache, &results, &[]);
    // Fetched, then stopped at the engine (exit 3), which this test makes unreachable.
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert_eq!(asked(&server), [SUMS, TARBALL, IMAGES], "{}", text(&o));
    let cached = cache.join("repro/rke2").join(VERSION);
    assert_eq!(std::fs::read(cached.join(IMAGES)).unwrap(), images);
    assert!(
        text(&o).contains(&format!(
            "downloaded and verified {IMAGES} (sha256 {})",
            sha256(&images)
        )),
        "{}",
        text(&o)
    );

    let o = fetching_run(&server, &cache, &results, &[]);
    assert_eq!(asked(&server).len(), 3, "reused: {}", text(&o));
    assert!(
        text(&o).contains(&format!("cached and verified ({TARBALL} sha256 ")),
        "{}",
        text(&o)
    );

    let mut damaged = images.clone();
    damaged[1000] ^= 0xff;
    std::fs::write(cached.join(IMAGES), &damaged).unwrap();
    let o = fetching_run(&server, &cache, &results, &[]);
    assert_eq!(
        asked(&server)[3..],
        [IMAGES],
        "only the images tarball again: {}",
        text(&o)
    );
    assert!(
        text(&o).contains(&format!("the cached {}", cached.join(IMAGES).display())),
        "{}",
        text(&o)
    );
    assert_eq!(std::fs::read(cached.join(IMAGES)).unwrap(), images);

    let (server, _) = serve(None);
    let fresh = tmp.path().join("fresh");
    let o = fetching_run(&server, &fresh, &results, &["--no-images-tarball"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert_eq!(asked(&server), [SUMS, TARBALL], "{}", text(&o));
    let dir = fresh.join("repro/rke2").join(VERSION);
    assert!(dir.join(TARBALL).is_file() && !dir.join(IMAGES).exists());
    assert!(
        text(&o).contains(&format!("not {IMAGES} (--no-images-tarball)")),
        "{}",
        text(&o)
    );
}

/// An images tarball that does not match its line in the sum file: refused as a mismatched
/// tarball is (exit 3, both sums named), before anything is created (no results folder) and
/// with nothing kept in the cache, not even the tarball that matched.
#[test]
fn a_fetched_images_tarball_that_does_not_match_its_sum_is_refused_and_nothing_kept() {
    let listed = "ab".repeat(32);
    let (server, images) = serve(Some(listed.clone()));
    let tmp = tempfile::tempdir().unwrap();
    let (cache, results) = (tmp.path().join("cache"), tmp.path().join("results"));
    let o = fetching_run(&server, &cache, &results, &[]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let err = text(&o);
    assert!(
        err.contains(&format!("{IMAGES} has sha256 {}", sha256(&images)))
            && err.contains(&format!("says {listed}")),
        "{err}"
    );
    assert!(!results.exists(), "a results folder was created: {err}");
    assert!(
        !cache.join("repro/rke2").join(VERSION).exists(),
        "something was kept: {err}"
    );
}
