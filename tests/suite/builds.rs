//! Builds under test without Docker (#20): release candidates in plan, run and matrix — the
//! verdict the changes table's `rc:` evidence predicts, and `--expect` asked for where no
//! evidence places a candidate.

use crate::repro::Repro;
use crate::util::project;

const BAD_INPUT: i32 = 2;

fn plan(version: &str, extra: &[&str]) -> crate::repro::Output {
    Repro::new()
        .args(["plan", "etcd-split", "--k3s-version", version])
        .args(extra)
        .run()
}

#[test]
fn plan_on_the_release_candidates_qa_validated_expects_fixed() {
    for (rc, release) in [
        ("v1.33.5-rc1+k3s1", "v1.33.5+k3s1"),
        ("v1.32.9-rc1+k3s1", "v1.32.9+k3s1"),
    ] {
        let out = plan(rc, &[]);
        out.code(0);
        let want = format!(
            "expected  fixed ({rc} is at or after {rc}, the first candidate of {release} with the fix — evidence (read): "
        );
        out.stdout_has(&want);
        out.stdout_has("Validated on");
        let tag = rc.replace('+', "-");
        out.stdout_has(&format!("image     rancher/k3s:{tag}\n"));
        let sim = plan(rc, &["--sim"]);
        sim.code(0);
        sim.stdout_has(&format!("image     repro.local/k3s-sim:{tag}\n"));
    }
}

#[test]
fn plan_on_a_candidate_of_a_buggy_release_expects_reproduced() {
    let out = plan("v1.33.4-rc1+k3s1", &["--format", "json"]);
    out.code(0);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("plan JSON parses");
    assert_eq!(v["expected_verdict"], "reproduced");
    assert_eq!(v["image"], "rancher/k3s:v1.33.4-rc1-k3s1");
    let why = v["expected_because"].as_str().unwrap_or_default();
    assert!(
        why.starts_with(
            "v1.33.4-rc1+k3s1 comes before v1.33.5+k3s1, the first fixed release of 1.33"
        ),
        "{why}"
    );
}

#[test]
fn matrix_cells_of_candidates_expect_what_the_evidence_says() {
    let out = Repro::new()
        .args([
            "matrix",
            "--sim",
            "--checks",
            "etcd-split",
            "--k3s-versions",
            "v1.33.5-rc1+k3s1,v1.32.9-rc1+k3s1,v1.33.4-rc1+k3s1",
            "--emit",
            "github-matrix",
        ])
        .run();
    out.code(0);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("matrix JSON parses");
    let cells: Vec<(String, String)> = v["include"]
        .as_array()
        .expect("include")
        .iter()
        .map(|c| {
            (
                c["k3s_version"].as_str().unwrap_or_default().to_string(),
                c["expected"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = [
        ("v1.33.5-rc1+k3s1", "fixed"),
        ("v1.32.9-rc1+k3s1", "fixed"),
        ("v1.33.4-rc1+k3s1", "reproduced"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(cells, want, "{}", out.stdout);
}

/// A project whose etcd-split lists its fixed releases inline: no `rc:` evidence comes with them.
fn inline_fixed_in() -> tempfile::TempDir {
    let dir = project(&["checks", "topologies"]);
    let path = dir.path().join("checks/etcd-split.yaml");
    let text = std::fs::read_to_string(&path).expect("check");
    let text = text.replace(
        "fixed-in: etcd-only-bootstrap-fix",
        "fixed-in: [v1.31.13+k3s1, v1.32.9+k3s1, v1.33.5+k3s1, v1.34.1+k3s1]",
    );
    assert!(
        text.contains("fixed-in: [v1.31.13"),
        "the shipped check changed"
    );
    std::fs::write(&path, text).expect("write check");
    dir
}

#[test]
fn a_candidate_no_evidence_places_makes_auto_ask_for_expect() {
    let dir = inline_fixed_in();
    let root = dir.path().to_str().expect("utf-8 path").to_string();
    let rc = "v1.33.5-rc1+k3s1";

    let out = Repro::new()
        .args(["--root", &root, "plan", "etcd-split", "--k3s-version", rc])
        .redact(&root, "[ROOT]")
        .run();
    out.code(0);
    out.stdout_has(&format!(
            "expected  unknown ({rc} is a release candidate of v1.33.5+k3s1, the first fixed release of 1.33, and no evidence says which candidate first has the fix; pass --expect fixed or --expect reproduced)"
        ));

    // `run` refuses before Docker is touched (this test needs no engine).
    let out = Repro::new()
        .args([
            "--root",
            &root,
            "run",
            "etcd-split",
            "--sim",
            "--k3s-version",
            rc,
        ])
        .redact(&root, "[ROOT]")
        .run();
    out.code(BAD_INPUT);
    out.stderr_has(&format!(
            "error: --expect auto cannot predict etcd-split {rc}: {rc} is a release candidate of v1.33.5+k3s1"
        ));
    out.stderr_has(
        "help: say which outcome counts as success: --expect fixed or --expect reproduced",
    );

    let out = Repro::new()
        .args([
            "--root",
            &root,
            "matrix",
            "--sim",
            "--checks",
            "etcd-split",
            "--k3s-versions",
            rc,
            "--emit",
            "github-matrix",
        ])
        .redact(&root, "[ROOT]")
        .run();
    out.code(BAD_INPUT);
    out.stderr_has(&format!("error: no expected verdict for etcd-split {rc}"));
}

/// A file carrying a k3s version the way a k3s build does (the `-X` string among other bytes).
fn fake_build(dir: &std::path::Path, version: &str) -> String {
    let p = dir.join("k3s");
    let mut bytes = b"\x7fELF\0\0go1.24.6\0".to_vec();
    bytes.extend(version.as_bytes());
    bytes.extend(b"\0k3s\0");
    std::fs::write(&p, bytes).expect("write the fake build");
    p.display().to_string()
}

/// A commit build (or a local build of one) names no release `fixed-in` can place: the plan says
/// so, and `run` under `--expect auto` stops with exit 2 asking for `--expect` — before Docker
/// (this binary has none).
#[test]
fn a_commit_build_makes_auto_ask_for_expect() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = fake_build(tmp.path(), "v1.30.6+k3s-48a3b849-dirty");
    let out = Repro::new()
        .args(["plan", "etcd-split", "--sim", "--k3s-binary", &file])
        .run();
    out.code(0);
    out.stdout_has("reports v1.30.6+k3s-48a3b849-dirty, sha256 ");
    out.stdout_has("the binary reports `v1.30.6+k3s-48a3b849-dirty`, a commit build: `fixed-in` places releases and release candidates only");
    let out = Repro::new()
        .args(["run", "etcd-split", "--sim", "--k3s-binary", &file])
        .run();
    out.code(BAD_INPUT);
    assert!(
        out.stderr
            .contains("--expect auto cannot predict etcd-split")
            && out.stderr.contains("--expect fixed or --expect reproduced"),
        "{}",
        out.stderr
    );
    let out = Repro::new()
        .args([
            "plan",
            "etcd-split",
            "--sim",
            "--format",
            "json",
            "--k3s-binary",
            &file,
        ])
        .run();
    out.code(0);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("plan JSON parses");
    assert_eq!(v["build"]["reported"], "v1.30.6+k3s-48a3b849-dirty");
    assert_eq!(v["build"]["source"], "binary");
    assert!(
        v.get("expected_verdict")
            .is_some_and(serde_json::Value::is_null),
        "{v}"
    );
    // A release build is placed as its version: v1.32.9-rc1 carries the fix.
    let rc = fake_build(tmp.path(), "v1.32.9-rc1+k3s1");
    let out = Repro::new()
        .args(["plan", "etcd-split", "--k3s-binary", &rc])
        .run();
    out.code(0);
    out.stdout_has("Plan for check `etcd-split` on k3s v1.32.9-rc1+k3s1");
    out.stdout_has("expected  fixed (the binary reports v1.32.9-rc1+k3s1: ");
    out.stdout_has("copied to /bin/k3s in every node of rancher/k3s:v1.32.9-rc1-k3s1");
}

/// What cannot be a build under test is refused with exit 2 and the reason, before anything.
#[test]
fn bad_builds_are_refused_before_anything() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().display().to_string();
    let missing = tmp.path().join("nope").display().to_string();
    let plain = tmp.path().join("plain");
    std::fs::write(&plain, b"\x7fELF no version here").expect("write");
    let plain = plain.display().to_string();
    for (args, says) in [
        (vec!["--k3s-binary", missing.as_str()], "cannot read"),
        (vec!["--k3s-binary", dir.as_str()], "is not a regular file"),
        (vec!["--k3s-binary", "/dev/zero"], "is not a regular file"),
        (
            vec!["--k3s-binary", plain.as_str()],
            "no k3s version in this file",
        ),
        (
            vec!["--k3s-commit", "48a3b849"],
            "is a short commit (8 hex digits)",
        ),
        (vec!["--k3s-commit", "not-a-sha"], "is not a commit"),
        (
            vec![
                "--k3s-binary",
                plain.as_str(),
                "--k3s-commit",
                "48a3b849aabbccddeeff00112233445566778899",
            ],
            "cannot be used with",
        ),
    ] {
        let out = Repro::new()
            .args(["run", "etcd-split", "--sim"])
            .args(args.iter().copied())
            .run();
        out.code(BAD_INPUT);
        assert!(out.stderr.contains(says), "{args:?}: {}", out.stderr);
    }
}

/// `bisect --commits`: a bad line is reported at its file:line:col (every one at once), exit 2,
/// before anything is downloaded or created.
#[test]
fn a_bad_commit_list_is_refused_at_its_lines() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let list = tmp.path().join("commits.txt");
    let full = "48a3b849aabbccddeeff00112233445566778899";
    std::fs::write(
        &list,
        format!("# oldest first\n{full}\n  48a3b84\n{full}\n"),
    )
    .expect("write");
    let file = list.display().to_string();
    let out = Repro::new()
        .args(["bisect", "etcd-split", "--sim", "--commits", &file])
        .run();
    out.code(BAD_INPUT);
    out.stderr_has(&format!(
        "{file}:3:3: error: `48a3b84` is a short commit (7 hex digits)"
    ));
    out.stderr_has(&format!("{file}:4:1: error: commit {full} is listed twice"));
    let out = Repro::new()
        .args([
            "bisect",
            "etcd-split",
            "--sim",
            "--commits",
            &file,
            "--good",
            "v1.33.5+k3s1",
        ])
        .run();
    out.code(BAD_INPUT);
    out.stderr_has("cannot be used with");
}

/// A version flag (or REPRO_K3S_VERSION, as CI sets it) beside a build is set aside, and said so:
/// the build's own version is the run's.
#[test]
fn a_version_beside_a_build_is_set_aside_aloud() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = fake_build(tmp.path(), "v1.33.5+k3s1");
    let out = Repro::new()
        .args([
            "plan",
            "etcd-split",
            "--sim",
            "--k3s-version",
            "v1.33.4+k3s1",
            "--k3s-binary",
            &file,
        ])
        .run();
    out.code(0);
    out.stderr_has("--k3s-version v1.33.4+k3s1 (or REPRO_K3S_VERSION) is set aside: the build under test reports v1.33.5+k3s1");
    out.stdout_has("Plan for check `etcd-split` on k3s v1.33.5+k3s1");
}
