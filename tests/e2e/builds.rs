//! Builds under test on the stand-in (#20): a run on a release candidate expects, and gets,
//! the verdict the changes table's `rc:` evidence predicts.

use std::path::{Path, PathBuf};

use crate::images::{sim_build, sim_image, Image};
use crate::repro::Repro;
use crate::runs::{assert_no_leftovers, read_json, read_result, Run};

#[test]
fn runs_on_release_candidates_report_what_the_evidence_predicts() {
    for (rc, want) in [
        ("v1.33.5-rc1+k3s1", "fixed"),
        ("v1.33.4-rc1+k3s1", "reproduced"),
    ] {
        // No --expect: `auto` must predict the candidate's verdict for the run to exit 0.
        let run = Run::check("etcd-split").sim().version(rc).finish();
        run.out.code(0);
        let r = &run.result;
        assert_eq!(run.outcome(), want, "{rc}");
        assert_eq!(r["expect"], want, "{rc}");
        assert_eq!(r["k3s"]["version"], rc);
        assert_eq!(r["k3s"]["image"], sim_image(rc), "{rc}");
        let v = r["k3s"]["version_output"].as_str().unwrap_or_default();
        assert!(v.starts_with(&format!("k3s version {rc}")), "{v:?}");
        let because = r["expect_because"].as_str().unwrap_or_default();
        assert!(because.contains("v1.33.5"), "{because}");
        let md = run.file("report.md");
        assert!(md.contains(rc), "report.md names {rc}");
    }
}

/// `repro sim binary` writes a stand-in that reports the version asked for and has the bug or
/// not as asked — the file decides, not an image's variable (run here on the host, no image).
#[test]
fn sim_binary_reports_its_version_and_its_fix() {
    let tmp = tempfile::tempdir().unwrap();
    for (flag, says) in [
        ("--buggy", "etcd-only bootstrap fix absent (buggy)"),
        ("--fixed", "etcd-only bootstrap fix present (fixed)"),
    ] {
        let file = tmp.path().join(format!("k3s{flag}"));
        Repro::new()
            .args(["sim", "binary", "--version", "v1.33.5+k3s1", flag, "--out"])
            .arg(&file)
            .run()
            .code(0);
        let v = std::process::Command::new(&file)
            .env_remove("REPRO_SIM_K3S_VERSION")
            .arg("-v")
            .output()
            .unwrap();
        let v = String::from_utf8_lossy(&v.stdout).into_owned();
        assert!(
            v.starts_with("k3s version v1.33.5+k3s1 (repro-sim)\n"),
            "{v:?}"
        );
        let help = std::process::Command::new(&file)
            .env("REPRO_SIM_K3S_VERSION", "v1.31.12+k3s1")
            .arg("--help")
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&help.stdout).into_owned();
        assert!(
            help.contains("Imitated k3s version: v1.33.5+k3s1 (from this binary's stamp)"),
            "{help}"
        );
        assert!(help.contains(says), "{help}");
    }
    let out = Repro::new()
        .args(["sim", "binary", "--version", "1.33", "--fixed", "--out"])
        .arg(tmp.path().join("bad"))
        .run();
    out.code(2);
    out.stderr_has("`1.33` is not a k3s or rke2 version");
}

/// Bisect over a list with release candidates: the first fixed one is the rc1 QA validated,
/// and fixed-in (through the changes table's `rc:`) agrees. Under `--format json` stdout is
/// bisect.json's document alone and the lines for people are on stderr (#32).
#[test]
fn bisect_over_candidates_names_the_first_fixed_candidate() {
    crate::docker::docker_ok();
    let tmp = tempfile::tempdir().unwrap();
    let list = tmp.path().join("k3s.yaml");
    std::fs::write(
        &list,
        "releases:\n  - v1.33.4+k3s1\n  - v1.33.5-rc1+k3s1\n  - v1.33.5+k3s1\n",
    )
    .unwrap();
    let (out, results) = Run::command(["bisect", "etcd-split", "--sim"])
        .args([
            "--good",
            "v1.33.5+k3s1",
            "--bad",
            "v1.33.4+k3s1",
            "--format",
            "json",
            "--versions",
        ])
        .arg(&list)
        .output();
    let doc = out.code(0).json();
    let record = crate::runs::read_json(&results.only_run_dir().join("bisect.json"));
    assert_eq!(doc, record);
    assert_eq!(doc["answer"], "v1.33.5-rc1+k3s1");
    let s = &out.stderr;
    assert!(
        s.contains("answer: v1.33.5-rc1+k3s1 is the first release showing `fixed`"),
        "{s}"
    );
    assert!(
        s.contains("fixed-in agrees: it names v1.33.5-rc1+k3s1 for 1.33"),
        "{s}"
    );
}

/// `repro sim binary` into `dir`: a stand-in reporting `version`, with the fix or not.
pub(crate) fn sim_binary(dir: &Path, version: &str, fixed: bool) -> PathBuf {
    let program = if version.contains("+rke2") {
        "rke2"
    } else {
        "k3s"
    };
    let file = dir.join(format!(
        "{program}-{version}-{}",
        if fixed { "fixed" } else { "buggy" }
    ));
    Repro::new()
        .args(["sim", "binary", "--version", version])
        .arg(if fixed { "--fixed" } else { "--buggy" })
        .arg("--out")
        .arg(&file)
        .run()
        .code(0);
    file
}

pub(crate) fn sha256(path: &Path) -> String {
    sha256_bytes(&std::fs::read(path).unwrap())
}

/// `repro run etcd-split --k3s-binary <binary> --image <image>`, checked as every run is.
fn binary_run(binary: &Path, image: &str) -> crate::runs::Finished {
    Run::check("etcd-split")
        .arg("--k3s-binary")
        .arg(binary)
        .args(["--image", image])
        .finish()
}

/// The binary decides, not the image tag: a fixed stand-in binary on the buggy release's image
/// shows `fixed`, a buggy one on the fixed release's image `reproduced` — each the verdict its
/// own version predicts, so `--expect auto` passes; result.json names the binary's version, its
/// sha256 and the base image it ran in, and `k3s -v` in the nodes is the binary's.
#[test]
fn the_binary_decides_not_the_image() {
    sim_build("v1.33.4+k3s1,v1.33.5+k3s1");
    let tmp = tempfile::tempdir().unwrap();
    for (version, fixed, base, want) in [
        ("v1.33.5+k3s1", true, "v1.33.4+k3s1", "fixed"),
        ("v1.33.4+k3s1", false, "v1.33.5+k3s1", "reproduced"),
    ] {
        let bin = sim_binary(tmp.path(), version, fixed);
        let image = sim_image(base);
        let path = bin.display().to_string();
        let run = binary_run(&bin, &image);
        let (out, r) = (&run.out, &run.result);
        out.code(0);
        assert_eq!(run.outcome(), want, "{out}");
        assert_eq!(r["expect"], want);
        assert_eq!(r["k3s"]["version"], version);
        assert_eq!(r["k3s"]["image"], image);
        assert!(r["k3s"]["image_id"]
            .as_str()
            .unwrap()
            .starts_with("sha256:"));
        let b = &r["build"];
        assert_eq!(b["source"], "binary");
        assert_eq!(b["path"], path.as_str());
        assert_eq!(b["sha256"], sha256(&bin).as_str());
        assert_eq!(b["reported"], version);
        assert_eq!(b["installed_at"], "/bin/k3s");
        let v = r["k3s"]["version_output"].as_str().unwrap_or_default();
        assert!(v.starts_with(&format!("k3s version {version} ")), "{v:?}");
        out.stdout_has(&format!(
            "build under test: {path} (reports {version}, sha256 "
        ));
        assert!(r["rerun"].as_str().unwrap().contains("--k3s-binary"));
        let md = run.file("report.md");
        assert!(
            md.contains(&format!(
                "Build under test: the local build `{path}`, reporting `{version}` (sha256 `{}`)",
                sha256(&bin)
            )),
            "{md}"
        );
    }
}

/// Publishes `bytes` as the CI build of `sha` the way k3s's scripts/build-upload does:
/// `k3s-<sha>` and `k3s-<sha>.sha256sum` holding `<sum>  k3s` — the sum of `summed`.
pub(crate) fn publish(
    server: &crate::http_files::HttpFiles,
    sha: &str,
    bytes: Vec<u8>,
    summed: &[u8],
) {
    let sum = sha256_bytes(summed);
    server.put(
        &format!("k3s-{sha}.sha256sum"),
        format!("{sum}  k3s\n").into_bytes(),
    );
    server.put(&format!("k3s-{sha}"), bytes);
}

/// `--k3s-commit` runs a served commit build (downloaded, verified, cached: the second use
/// downloads nothing); a corrupted one is refused naming both sums, before anything exists —
/// the run never even reaches the Docker engine (a listener standing in for it hears nothing).
#[test]
fn a_served_commit_build_runs_and_a_corrupted_one_is_refused() {
    crate::docker::docker_ok();
    let tmp = tempfile::tempdir().unwrap();
    let server = crate::http_files::HttpFiles::start();
    let cache = tmp.path().join("cache");
    let fixed = std::fs::read(sim_binary(tmp.path(), "v1.33.5+k3s1", true)).unwrap();
    let good = "0c0ffee0000000000000000000000000000000a1";
    publish(&server, good, fixed.clone(), &fixed);
    let with_ci = |run: Run| {
        run.env("REPRO_K3S_CI_URL", server.url())
            .env("XDG_CACHE_HOME", &cache)
    };
    let run = with_ci(Run::check("etcd-split"))
        .args(["--k3s-commit", good, "--sim"])
        .finish();
    run.out.code(0);
    let r = &run.result;
    assert_eq!(run.outcome(), "fixed");
    let b = &r["build"];
    assert_eq!(b["source"], "commit");
    assert_eq!(b["commit"], good);
    assert_eq!(b["url"], format!("{}/k3s-{good}", server.url()));
    let cached = cache.join("repro/builds").join(good).join("k3s");
    assert_eq!(b["path"], cached.display().to_string());
    assert_eq!(std::fs::read(&cached).unwrap(), fixed);
    assert_eq!(
        server.asked(),
        [format!("/k3s-{good}.sha256sum"), format!("/k3s-{good}")]
    );
    // Reused from the cache, verified again: nothing downloaded.
    let out = Repro::new()
        .env("REPRO_K3S_CI_URL", server.url())
        .env("XDG_CACHE_HOME", &cache)
        .args(["plan", "etcd-split", "--sim", "--k3s-commit", good])
        .run();
    out.code(0);
    out.stderr_has("is cached and verified");
    assert_eq!(server.asked().len(), 2);

    // Corrupted: one byte changed after the sum was taken.
    let bad = "0c0ffee0000000000000000000000000000000b2";
    let mut corrupted = fixed.clone();
    let mid = corrupted.len() / 2;
    corrupted[mid] ^= 0xff;
    publish(&server, bad, corrupted.clone(), &fixed);
    let engine = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    engine.set_nonblocking(true).unwrap();
    let port = engine.local_addr().unwrap().port();
    let (out, results) = with_ci(Run::check("etcd-split"))
        .env("DOCKER_HOST", format!("tcp://127.0.0.1:{port}"))
        .args(["--sim", "--k3s-commit", bad])
        .output();
    out.code(3);
    let err = &out.stderr;
    let (have, want) = (sha256_bytes(&corrupted), sha256_bytes(&fixed));
    assert!(
        err.contains(&format!("has sha256 {have}, but"))
            && err.contains(&format!("says {want}: refused, nothing was created")),
        "{err}"
    );
    assert!(
        matches!(engine.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the refused run connected to the engine"
    );
    results.assert_untouched(&out);
    assert!(!cache.join("repro/builds").join(bad).join("k3s").exists());
}

fn sha256_bytes(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// QA's validation run of k3s #12817, on the stand-in: v1.32.9-rc1+k3s1 expects and shows
/// `fixed` under `--expect auto`.
#[test]
fn a_run_on_v1_32_9_rc1_expects_and_shows_fixed() {
    let run = Run::check("etcd-split")
        .sim()
        .version("v1.32.9-rc1+k3s1")
        .finish();
    run.out.code(0);
    assert_eq!(run.result["expect"], "fixed");
    assert_eq!(run.outcome(), "fixed");
    assert_eq!(run.result["k3s"]["version"], "v1.32.9-rc1+k3s1");
}

/// `bisect --commits` over 8 commits served as CI builds: commits 0..=2 buggy, 3..=7 fixed; the
/// bisect names commit 3 within ⌈log2 8⌉+1 = 4 runs, downloading only the builds it runs.
#[test]
fn bisect_over_commits_names_the_first_fixed_one() {
    crate::docker::docker_ok();
    let tmp = tempfile::tempdir().unwrap();
    let server = crate::http_files::HttpFiles::start();
    // Every build reports the same release: only the builds' behaviour tells them apart.
    let buggy = std::fs::read(sim_binary(tmp.path(), "v1.33.4+k3s1", false)).unwrap();
    let fixed = std::fs::read(sim_binary(tmp.path(), "v1.33.4+k3s1", true)).unwrap();
    let first_fixed = 3;
    let commits: Vec<String> = (0..8)
        .map(|i| format!("{:040x}", 0xc0de_0000u64 + i))
        .collect();
    for (i, c) in commits.iter().enumerate() {
        let b = if i < first_fixed { &buggy } else { &fixed };
        publish(&server, c, b.clone(), b);
    }
    let list = tmp.path().join("commits.txt");
    let mut lines = String::from("# git log --reverse --format=%H A..B\n\n");
    for c in &commits {
        lines.push_str(c);
        lines.push('\n');
    }
    std::fs::write(&list, lines).unwrap();
    let (out, results) = Run::command(["bisect", "etcd-split", "--sim", "--commits"])
        .arg(&list)
        .env("REPRO_K3S_CI_URL", server.url())
        .env("XDG_CACHE_HOME", tmp.path().join("cache"))
        .output();
    let s = &out.code(0).stdout;
    assert!(
        s.contains(&format!(
            "answer: {} is the first commit showing `fixed`; {} is the last showing `reproduced`",
            commits[first_fixed],
            commits[first_fixed - 1]
        )),
        "{s}"
    );
    assert!(s.contains("at most 4 runs (⌈log2 8⌉+1)"), "{s}");
    let record = read_json(&results.only_run_dir().join("bisect.json"));
    let runs = record["runs"].as_u64().unwrap();
    assert!((2..=4).contains(&runs), "{record}");
    assert_eq!(record["answer"], commits[first_fixed].as_str());
    assert_eq!(record["commits"].as_array().unwrap().len(), 8);
    let probes = record["probes"].as_array().unwrap();
    assert_eq!(probes[0]["commit"], commits[0].as_str());
    assert_eq!(probes[0]["verdict"], "reproduced");
    assert_eq!(probes[0]["version"], "v1.33.4+k3s1");
    // Each run's build was downloaded once (its sum, then the binary), none other.
    let asked = server.asked();
    assert_eq!(asked.len() as u64, 2 * runs, "{asked:?}");
    for p in probes {
        let c = p["commit"].as_str().unwrap();
        assert!(asked.contains(&format!("/k3s-{c}")), "{asked:?}");
        let r = read_result(Path::new(p["results"].as_str().unwrap()));
        assert_eq!(r["build"]["commit"], c);
        assert_no_leftovers(r["run_id"].as_str().unwrap());
    }
}

/// An image that runs its k3s from another path than the distribution's (`/bin/k3s`) would run
/// its own k3s under the build's name: the nodes' `k3s -v` tells, and the run stops (exit 3)
/// instead of giving a verdict about the wrong binary.
#[test]
fn an_image_running_its_binary_from_elsewhere_is_caught() {
    sim_build("v1.33.4+k3s1");
    let tmp = tempfile::tempdir().unwrap();
    let elsewhere = Image::build(
        format!("{}-elsewhere:{}", crate::util::sim_repo(), std::process::id()),
        &format!(
            "FROM {}\nCOPY k3s /usr/local/bin/k3s\nENV PATH=/usr/local/bin:/bin\nENTRYPOINT [\"/usr/local/bin/k3s\"]\n",
            sim_image("v1.33.4+k3s1")
        ),
        &[("k3s", &sim_binary(tmp.path(), "v1.33.4+k3s1", false))],
    );
    let fixed = sim_binary(tmp.path(), "v1.33.5+k3s1", true);
    let (out, results) = Run::check("etcd-split")
        .arg("--k3s-binary")
        .arg(&fixed)
        .args(["--image", &elsewhere.0])
        .output();
    drop(elsewhere);
    let run = results.finished(out);
    let r = &run.result;
    run.out.code(3);
    let e = r["error"].as_str().unwrap_or_default();
    assert!(
        e.contains("`k3s -v` there says `v1.33.4+k3s1`, the build carries v1.33.5+k3s1"),
        "{e}"
    );
    assert!(r["verdict"].is_null(), "no verdict about the wrong binary");
}

/// `matrix --k3s-binary`: every check named on one build, each expecting what the build's own
/// version predicts; each run's result.json carries the build.
#[test]
fn matrix_runs_every_check_on_one_build() {
    crate::docker::docker_ok();
    let tmp = tempfile::tempdir().unwrap();
    let bin = sim_binary(tmp.path(), "v1.33.4+k3s1", false);
    let (out, results) = Run::command(["matrix", "--sim", "--checks", "etcd-split,metrics-order"])
        .arg("--k3s-binary")
        .arg(&bin)
        .output();
    let s = &out.code(0).stdout;
    assert!(
        s.contains(&format!(
            "build under test: {} (reports v1.33.4+k3s1",
            bin.display()
        )),
        "{s}"
    );
    let matrix = results.only_run_dir();
    let summary = read_json(&matrix.join("summary.json"));
    let cells = summary["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2, "{summary}");
    for c in cells {
        assert_eq!(c["status"], "ok", "{c}");
        let r = read_result(&matrix.join(c["results"].as_str().unwrap()));
        assert_eq!(r["build"]["reported"], "v1.33.4+k3s1");
        assert_eq!(r["build"]["sha256"], sha256(&bin).as_str());
        assert_no_leftovers(r["run_id"].as_str().unwrap());
    }
}

/// An RKE2 local build: `--k3s-binary` tells the distribution from the version the file
/// carries, etcd-split's topology is read as RKE2's, and the build runs where rke2's install
/// script puts the tarball's binary (the path the units start) on RKE2 stand-in nodes.
#[test]
fn an_rke2_local_build_runs_where_the_units_start_rke2() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = sim_binary(tmp.path(), "v1.32.8+rke2r1", false);
    let run = Run::check("etcd-split")
        .arg("--k3s-binary")
        .arg(&bin)
        .sim()
        .finish();
    run.out.code(0);
    assert_eq!(run.outcome(), "reproduced", "{}", run.out);
    assert_eq!(run.result["distribution"], "rke2");
    let b = &run.result["build"];
    assert_eq!(b["installed_at"], "/usr/local/bin/rke2");
    assert_eq!(b["reported"], "v1.32.8+rke2r1");
    assert_eq!(b["sha256"], sha256(&bin).as_str());
    let log = run.boot_log("etcd-2", 1);
    assert!(log.contains("Starting rke2 v1.32.8+rke2r1"), "{log}");
}
