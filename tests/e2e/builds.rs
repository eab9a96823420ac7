//! Builds under test on the stand-in (#20): a run on a release candidate expects, and gets,
//! the verdict the changes table's `rc:` evidence predicts.

use crate::sim_run as run;
use crate::util::text;

#[test]
fn runs_on_release_candidates_report_what_the_evidence_predicts() {
    for (rc, want) in [
        ("v1.33.5-rc1+k3s1", "fixed"),
        ("v1.33.4-rc1+k3s1", "reproduced"),
    ] {
        // No --expect: `auto` must predict the candidate's verdict for the run to exit 0.
        let (out, r, dir, _t) = run(&["etcd-split", "--k3s-version", rc]);
        assert_eq!(out.status.code(), Some(0), "{rc}: {}", text(&out));
        assert_eq!(r["verdict"]["outcome"], want, "{rc}");
        assert_eq!(r["expect"], want, "{rc}");
        assert_eq!(r["k3s"]["version"], rc);
        let tag = rc.replace('+', "-");
        assert_eq!(
            r["k3s"]["image"],
            format!("{}:{tag}", crate::util::sim_repo()),
            "{rc}"
        );
        let v = r["k3s"]["version_output"].as_str().unwrap_or_default();
        assert!(v.starts_with(&format!("k3s version {rc}")), "{v:?}");
        let because = r["expect_because"].as_str().unwrap_or_default();
        assert!(because.contains("v1.33.5"), "{because}");
        let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
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
        let out = crate::util::repro()
            .args(["sim", "binary", "--version", "v1.33.5+k3s1", flag, "--out"])
            .arg(&file)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
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
    let out = crate::util::repro()
        .args(["sim", "binary", "--version", "1.33", "--fixed", "--out"])
        .arg(tmp.path().join("bad"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("`1.33` is not a k3s or rke2 version"),
        "{}",
        text(&out)
    );
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
    let results = tmp.path().join("results");
    let out = crate::util::repro()
        .args(["bisect", "etcd-split", "--good", "v1.33.5+k3s1", "--bad"])
        .args(["v1.33.4+k3s1", "--sim", "--format", "json", "--versions"])
        .arg(&list)
        .arg("--results")
        .arg(&results)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {}", text(&out)));
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(crate::only_run_dir(&results).join("bisect.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(doc, record);
    assert_eq!(doc["answer"], "v1.33.5-rc1+k3s1");
    let s = String::from_utf8_lossy(&out.stderr);
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
fn sim_binary(dir: &std::path::Path, version: &str, fixed: bool) -> std::path::PathBuf {
    let file = dir.join(format!(
        "k3s-{version}-{}",
        if fixed { "fixed" } else { "buggy" }
    ));
    let out = crate::util::repro()
        .args(["sim", "binary", "--version", version])
        .arg(if fixed { "--fixed" } else { "--buggy" })
        .arg("--out")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    file
}

/// The stand-in images of `versions`, in this checkout's repository (built if missing).
fn sim_images(versions: &str) {
    crate::docker::docker_ok();
    let out = crate::util::repro()
        .args(["sim", "build", "--version", versions])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

fn sha256(path: &std::path::Path) -> String {
    sha256_bytes(&std::fs::read(path).unwrap())
}

/// `repro run <args>` into `results` with plain progress; the result (schema-checked) and that
/// nothing of the run is left.
fn build_run(
    cmd: &mut std::process::Command,
    args: &[&str],
    results: &std::path::Path,
) -> (std::process::Output, serde_json::Value, std::path::PathBuf) {
    let out = cmd
        .arg("run")
        .args(args)
        .args(["--progress", "never", "--results"])
        .arg(results)
        .output()
        .unwrap();
    let dir = crate::only_run_dir(results);
    let r = crate::read_result(&dir);
    crate::assert_no_leftovers(r["run_id"].as_str().unwrap());
    (out, r, dir)
}

/// The binary decides, not the image tag: a fixed stand-in binary on the buggy release's image
/// shows `fixed`, a buggy one on the fixed release's image `reproduced` — each the verdict its
/// own version predicts, so `--expect auto` passes; result.json names the binary's version, its
/// sha256 and the base image it ran in, and `k3s -v` in the nodes is the binary's.
#[test]
fn the_binary_decides_not_the_image() {
    sim_images("v1.33.4+k3s1,v1.33.5+k3s1");
    let tmp = tempfile::tempdir().unwrap();
    let repo = crate::util::sim_repo();
    for (version, fixed, base, want) in [
        ("v1.33.5+k3s1", true, "v1.33.4-k3s1", "fixed"),
        ("v1.33.4+k3s1", false, "v1.33.5-k3s1", "reproduced"),
    ] {
        let bin = sim_binary(tmp.path(), version, fixed);
        let results = tmp.path().join(format!("results-{want}"));
        let image = format!("{repo}:{base}");
        let path = bin.display().to_string();
        let (out, r, dir) = build_run(
            &mut crate::util::repro(),
            &["etcd-split", "--k3s-binary", &path, "--image", &image],
            &results,
        );
        assert_eq!(out.status.code(), Some(0), "{want}: {}", text(&out));
        assert_eq!(r["verdict"]["outcome"], want, "{}", text(&out));
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
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains(&format!(
                "build under test: {path} (reports {version}, sha256 "
            )),
            "{stdout}"
        );
        assert!(r["rerun"].as_str().unwrap().contains("--k3s-binary"));
        let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
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
fn publish(server: &crate::http_files::HttpFiles, sha: &str, bytes: Vec<u8>, summed: &[u8]) {
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
    let with_ci = || {
        let mut c = crate::util::repro();
        c.env("REPRO_K3S_CI_URL", server.url())
            .env("XDG_CACHE_HOME", &cache);
        c
    };
    let results = tmp.path().join("results");
    let (out, r, _) = build_run(
        &mut with_ci(),
        &["etcd-split", "--k3s-commit", good, "--sim"],
        &results,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(r["verdict"]["outcome"], "fixed");
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
    let out = with_ci()
        .args(["plan", "etcd-split", "--sim", "--k3s-commit", good])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is cached and verified"),
        "{}",
        text(&out)
    );
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
    let results = tmp.path().join("results-corrupted");
    let out = with_ci()
        .env("DOCKER_HOST", format!("tcp://127.0.0.1:{port}"))
        .args([
            "run",
            "etcd-split",
            "--sim",
            "--k3s-commit",
            bad,
            "--results",
        ])
        .arg(&results)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
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
    assert!(!results.exists(), "no run folder for a refused build");
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
    let (out, r, _dir, _t) = run(&["etcd-split", "--k3s-version", "v1.32.9-rc1+k3s1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(r["expect"], "fixed");
    assert_eq!(r["verdict"]["outcome"], "fixed");
    assert_eq!(r["k3s"]["version"], "v1.32.9-rc1+k3s1");
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
    let results = tmp.path().join("results");
    let out = crate::util::repro()
        .env("REPRO_K3S_CI_URL", server.url())
        .env("XDG_CACHE_HOME", tmp.path().join("cache"))
        .args(["bisect", "etcd-split", "--sim", "--commits"])
        .arg(&list)
        .arg("--results")
        .arg(&results)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        s.contains(&format!(
            "answer: {} is the first commit showing `fixed`; {} is the last showing `reproduced`",
            commits[first_fixed],
            commits[first_fixed - 1]
        )),
        "{s}"
    );
    assert!(s.contains("at most 4 runs (⌈log2 8⌉+1)"), "{s}");
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(crate::only_run_dir(&results).join("bisect.json")).unwrap(),
    )
    .unwrap();
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
        let run_dir = std::path::PathBuf::from(p["results"].as_str().unwrap());
        let r = crate::read_result(&run_dir);
        assert_eq!(r["build"]["commit"], c);
        crate::assert_no_leftovers(r["run_id"].as_str().unwrap());
    }
}

/// An image that runs its k3s from another path than the distribution's (`/bin/k3s`) would run
/// its own k3s under the build's name: the nodes' `k3s -v` tells, and the run stops (exit 3)
/// instead of giving a verdict about the wrong binary.
#[test]
fn an_image_running_its_binary_from_elsewhere_is_caught() {
    sim_images("v1.33.4+k3s1");
    let tmp = tempfile::tempdir().unwrap();
    let ctx = tmp.path().join("ctx");
    std::fs::create_dir(&ctx).unwrap();
    std::fs::copy(
        sim_binary(tmp.path(), "v1.33.4+k3s1", false),
        ctx.join("k3s"),
    )
    .unwrap();
    let base = format!("{}:v1.33.4-k3s1", crate::util::sim_repo());
    std::fs::write(
        ctx.join("Dockerfile"),
        format!(
            "FROM {base}\nCOPY k3s /usr/local/bin/k3s\nENV PATH=/usr/local/bin:/bin\nENTRYPOINT [\"/usr/local/bin/k3s\"]\n"
        ),
    )
    .unwrap();
    let image = format!(
        "{}-elsewhere:{}",
        crate::util::sim_repo(),
        std::process::id()
    );
    let built = std::process::Command::new("docker")
        .args(["build", "-q", "-t", &image])
        .arg(&ctx)
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", text(&built));
    let fixed = sim_binary(tmp.path(), "v1.33.5+k3s1", true);
    let results = tmp.path().join("results");
    let path = fixed.display().to_string();
    let (out, r, _) = build_run(
        &mut crate::util::repro(),
        &["etcd-split", "--k3s-binary", &path, "--image", &image],
        &results,
    );
    let _ = std::process::Command::new("docker")
        .args(["rmi", "-f", &image])
        .output();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
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
    let results = tmp.path().join("results");
    let out = crate::util::repro()
        .args([
            "matrix",
            "--sim",
            "--checks",
            "etcd-split,metrics-order",
            "--k3s-binary",
        ])
        .arg(&bin)
        .arg("--results")
        .arg(&results)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        s.contains(&format!(
            "build under test: {} (reports v1.33.4+k3s1",
            bin.display()
        )),
        "{s}"
    );
    let matrix = crate::only_run_dir(&results);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(matrix.join("summary.json")).unwrap())
            .unwrap();
    let cells = summary["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2, "{summary}");
    for c in cells {
        assert_eq!(c["status"], "ok", "{c}");
        let r = crate::read_result(&matrix.join(c["results"].as_str().unwrap()));
        assert_eq!(r["build"]["reported"], "v1.33.4+k3s1");
        assert_eq!(r["build"]["sha256"], sha256(&bin).as_str());
        crate::assert_no_leftovers(r["run_id"].as_str().unwrap());
    }
}
