//! `repro matrix`, `repro bisect` and `repro merge` end to end: the real binary, real Docker
//! and the k3s stand-in (`--sim`). Tests that run clusters need a Docker engine and fail (not
//! skip) without one; after each, nothing labelled with any of its run ids may be left. Tests
//! of input handling, `--emit` and merge need no Docker (and prove it with a bogus DOCKER_HOST).

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::fixtures::write_result;
use crate::repro::Repro;
use crate::runs::{assert_no_leftovers, only_dir, read_json, read_result, Run};
use crate::util::project;

use serde_json::{json, Value};

/// Every result.json under `dir`, at any depth.
fn result_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(result_files(&p));
        } else if p.file_name().is_some_and(|n| n == "result.json") {
            out.push(p);
        }
    }
    out
}

/// Asserts every run under `dir` cleaned up; returns how many runs there were.
fn assert_runs_cleaned_up(dir: &Path) -> usize {
    let files = result_files(dir);
    for f in &files {
        // Every run a matrix or bisect made wrote a result.json that matches the schema.
        let r = read_result(f.parent().unwrap());
        assert_no_leftovers(r["run_id"].as_str().unwrap());
    }
    files.len()
}

/// A project folder with a copy of the shipped checks and topologies, `edit` applied to
/// checks/etcd-split.yaml.
fn project_copy(edit: impl Fn(String) -> String) -> tempfile::TempDir {
    let root = project(&["checks", "topologies"]);
    let check = root.path().join("checks/etcd-split.yaml");
    let text = std::fs::read_to_string(&check).unwrap();
    let edited = edit(text.clone());
    assert_ne!(edited, text, "the edit changed nothing");
    std::fs::write(&check, edited).unwrap();
    root
}

// ---------------------------------------------------------------------------------------------
// matrix on Docker

const SIX: &str = "v1.32.8+k3s1,v1.32.9+k3s1,v1.33.3+k3s1,v1.33.4+k3s1,v1.33.5+k3s1,v1.34.1+k3s1";

/// `repro matrix --sim --checks etcd-split --k3s-versions <versions> --jobs 2` into a fresh
/// results folder.
fn matrix(versions: &str) -> Run {
    Run::command(["matrix", "--sim", "--checks", "etcd-split"]).args([
        "--k3s-versions",
        versions,
        "--jobs",
        "2",
    ])
}

#[test]
fn matrix_of_six_versions_over_two_lines_matches_fixed_in() {
    crate::docker::docker_ok();
    let t = Instant::now();
    let (out, results) = matrix(SIX).output();
    eprintln!("matrix of 6 took {:.1}s", t.elapsed().as_secs_f64());
    let dir = only_dir(&results.path(), "matrix-");
    assert_eq!(assert_runs_cleaned_up(&dir), 6, "{out}");
    out.code(0);
    let s = &out.stdout;
    // One line per finished run, then the table.
    assert_eq!(s.matches("] etcd-split v1.").count(), 6, "{s}");
    for (v, expected) in [
        ("v1.32.8+k3s1", "reproduced"),
        ("v1.32.9+k3s1", "fixed"),
        ("v1.33.3+k3s1", "reproduced"),
        ("v1.33.4+k3s1", "reproduced"),
        ("v1.33.5+k3s1", "fixed"),
        ("v1.34.1+k3s1", "fixed"),
    ] {
        let row = s
            .lines()
            .find(|l| l.starts_with("etcd-split") && l.contains(v))
            .unwrap_or_else(|| panic!("no table row for {v}:\n{s}"));
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cols[2], expected, "{row}");
        assert_eq!(cols[3], expected, "{row}");
        assert_eq!(cols.last(), Some(&"ok"), "{row}");
    }
    out.stdout_has("6 runs: 6 ok");

    let summary = read_json(&dir.join("summary.json"));
    assert_eq!(summary["kind"], "repro-matrix-summary");
    assert_eq!(summary["totals"]["cells"], 6);
    assert_eq!(summary["totals"]["ok"], 6);
    assert_eq!(summary["exit_code"], 0);
    for c in summary["cells"].as_array().unwrap() {
        // Each run's folder is inside the matrix folder, named relative to it.
        let r = c["results"].as_str().unwrap();
        assert!(dir.join(r).join("result.json").is_file(), "{c}");
        assert_eq!(c["stand_in"], true);
    }
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert!(
        junit.contains(r#"tests="6" failures="0" errors="0""#),
        "{junit}"
    );
    assert_eq!(junit.matches("<testcase ").count(), 6, "{junit}");
    assert_eq!(assert_every_junit_agrees(&dir, 0), 7);
}

#[test]
fn matrix_with_a_wrong_fixed_in_exits_1_and_says_why() {
    // Claim the fix landed one release early: v1.33.4+k3s1 is then expected fixed.
    // (The shipped check names its fix in releases/k3s-changes.yaml; the copy lists it inline.)
    let root = project_copy(|t| {
        t.replace(
            "fixed-in: etcd-only-bootstrap-fix",
            "fixed-in: [v1.31.13+k3s1, v1.32.9+k3s1, v1.33.4+k3s1, v1.34.1+k3s1]",
        )
    });
    crate::docker::docker_ok();
    let (out, results) = matrix("v1.33.3+k3s1,v1.33.4+k3s1")
        .root(root.path())
        .output();
    let dir = only_dir(&results.path(), "matrix-");
    assert_eq!(assert_runs_cleaned_up(&dir), 2, "{out}");
    out.code(1);
    let s = &out.stdout;
    let row = s
        .lines()
        .find(|l| l.starts_with("etcd-split") && l.contains("v1.33.4+k3s1"))
        .unwrap();
    assert!(row.ends_with("REGRESSION"), "{row}");
    // Which version, expected vs got, and why (the check's fixed-in for that line).
    out.stdout_has("REGRESSION: etcd-split on v1.33.4+k3s1: expected fixed, got reproduced");
    assert!(
        s.contains("the first fixed release of 1.33") && s.contains("fixed-in: "),
        "{s}"
    );
    let summary = read_json(&dir.join("summary.json"));
    assert_eq!(summary["totals"]["regression"], 1);
    assert_eq!(summary["totals"]["ok"], 1);
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert!(junit.contains(r#"tests="2" failures="1""#), "{junit}");
    assert!(junit.contains("expected fixed, got reproduced"), "{junit}");
    assert_eq!(assert_every_junit_agrees(&dir, 1), 3);
}

#[test]
fn interrupting_a_matrix_removes_its_clusters_and_exits_130() {
    let (mut child, results) = matrix("v1.32.8+k3s1,v1.33.4+k3s1,v1.33.5+k3s1").spawn();
    // Interrupt once the runs have started (the matrix line is printed right before).
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut first).unwrap();
    assert!(first.starts_with("matrix: "), "{first}");
    std::thread::sleep(std::time::Duration::from_secs(3));
    assert!(Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{first}{rest}");
    let dir = only_dir(&results.path(), "matrix-");
    assert_runs_cleaned_up(&dir);
    let summary = read_json(&dir.join("summary.json"));
    assert_eq!(summary["totals"]["cells"], 3, "{summary}");
    assert!(
        summary["totals"]["not_run"].as_u64().unwrap() >= 1,
        "{summary}"
    );
}

/// SIGTERM or SIGINT while a matrix builds its stand-in image (`--rebuild-sim`, an RKE2
/// version: the systemd node image, the slow one): exit 130, not the signal's default 143; the
/// matrix folder's summary lists every cell as not run (no run started, so no run's objects);
/// the image's tag is still the whole image it was (a build's tag is applied only when it
/// finishes), and no container of the build is left.
#[test]
fn a_signal_while_a_matrix_builds_its_image_is_exit_130_with_nothing_partial() {
    crate::docker::docker_ok();
    let version = "v1.32.5+rke2r1";
    let image = format!("{}:{}", crate::util::sim_repo(), version.replace('+', "-"));
    for sig in ["TERM", "INT"] {
        let results = tempfile::tempdir().unwrap();
        let mut cmd = crate::util::repro();
        cmd.args(["matrix", "--sim", "--rebuild-sim", "--checks", "etcd-split"])
            .args(["--versions", version, "--results"])
            .arg(results.path());
        let mut p = crate::running::Running::spawn(cmd);
        assert!(
            p.wait_line("repro: preparing the stand-in image"),
            "{:#?}",
            p.seen
        );
        p.signal(sig);
        let (code, err) = p.finish();
        assert_eq!(code, Some(130), "SIG{sig}: {err}");
        let dir = only_dir(results.path(), "matrix-");
        let summary = read_json(&dir.join("summary.json"));
        assert_eq!(summary["totals"]["cells"], 1, "{summary}");
        assert_eq!(summary["totals"]["not_run"], 1, "{summary}");
        assert!(result_files(&dir).is_empty(), "SIG{sig}: a run started");
        let tagged = Command::new("docker")
            .args(["image", "inspect", "--format", "{{.Id}}", &image])
            .output()
            .unwrap();
        assert!(tagged.status.success(), "SIG{sig}: the tag {image} is gone");
    }
}

// ---------------------------------------------------------------------------------------------
// bisect on Docker

#[test]
fn bisect_names_the_first_fixed_release_within_the_run_limit() {
    crate::docker::docker_ok();
    let t = Instant::now();
    let (out, results) = Run::command(["bisect", "etcd-split", "--sim"])
        .args(["--good", "v1.33.6+k3s1", "--bad", "v1.33.0+k3s1"])
        .output();
    eprintln!("bisect took {:.1}s", t.elapsed().as_secs_f64());
    let dir = only_dir(&results.path(), "bisect-etcd-split-");
    let made = assert_runs_cleaned_up(&dir);
    out.code(0);
    let s = &out.stdout;
    out.stdout_has("answer: v1.33.5+k3s1 is the first release showing `fixed`");
    // n = 7 releases (v1.33.0 … v1.33.6): at most ⌈log2 7⌉ + 1 = 4 runs.
    let runs: usize = s
        .lines()
        .find_map(|l| l.strip_prefix("runs: "))
        .and_then(|r| r.split_whitespace().next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(runs <= 4, "{runs} runs:\n{s}");
    assert_eq!(runs, made, "every run left a folder");
    let record = read_json(&dir.join("bisect.json"));
    assert_eq!(record["answer"], "v1.33.5+k3s1");
    assert_eq!(record["runs"], runs);
    assert_eq!(record["bad_verdict"], "reproduced");
}

// ---------------------------------------------------------------------------------------------
// no Docker: input, --emit, channels, merge

#[test]
fn emit_github_matrix_prints_the_fan_out_without_docker() {
    let out = Repro::without_docker()
        .args([
            "matrix",
            "--emit",
            "github-matrix",
            "--k3s-versions",
            "v1.32.8+k3s1,v1.33.5+k3s1",
        ])
        .run();
    let s = &out.code(0).stdout;
    assert_eq!(s.lines().count(), 1, "one line for $GITHUB_OUTPUT: {s}");
    let v = out.json();
    assert_eq!(v.as_object().unwrap().len(), 1, "{v}");
    let include = v["include"].as_array().unwrap();
    // Default checks: every check with fixed-in (etcd-split, metrics-order and the four
    // split-role checks).
    assert_eq!(include.len(), 12, "{v}");
    for e in include {
        let keys: Vec<&String> = e.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["check", "k3s_version", "expected"], "{e}");
    }
    assert!(include.contains(
        &json!({"check": "etcd-split", "k3s_version": "v1.32.8+k3s1", "expected": "reproduced"})
    ));
    assert!(include.contains(
        &json!({"check": "metrics-order", "k3s_version": "v1.33.5+k3s1", "expected": "fixed"})
    ));
    // A regression (introduced-in): releases before its cause are expected fixed.
    assert!(include.contains(
        &json!({"check": "split-restart-all", "k3s_version": "v1.32.8+k3s1", "expected": "fixed"})
    ));
    assert!(include.contains(
        &json!({"check": "split-upgrade", "k3s_version": "v1.32.8+k3s1", "expected": "reproduced"})
    ));
}

#[test]
fn bad_matrix_input_exits_2_before_docker() {
    for (args, needle) in [
        (
            vec!["--k3s-versions", "v1.33.4+k3s1,banana"],
            "`banana` is not a k3s or rke2 version",
        ),
        (vec!["--k3s-versions", "v1.33.4+k3s1,"], "empty entry"),
        (
            vec!["--checks", "nope", "--k3s-versions", "v1.33.4+k3s1"],
            "no check named `nope`",
        ),
        (
            vec!["--k3s-versions", "v1.33.4+k3s1", "--jobs", "0"],
            "--jobs",
        ),
    ] {
        let out = Repro::without_docker().arg("matrix").args(&args).run();
        assert_eq!(out.code, 2, "{args:?}: {out}");
        out.stderr_has(needle);
    }
}

/// A one-shot channel server on loopback: answers like update.k3s.io (a redirect to the
/// release page).
fn channel_server(location: &'static str) -> (String, std::thread::JoinHandle<String>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1-release/channels", l.local_addr().unwrap());
    let h = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut buf = [0u8; 2048];
        let n = s.read(&mut buf).unwrap();
        let req = String::from_utf8_lossy(&buf[..n]).into_owned();
        write!(
            s,
            "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        req
    });
    (url, h)
}

#[test]
fn channels_resolve_on_the_channel_server() {
    let (url, server) = channel_server("https://github.com/k3s-io/k3s/releases/tag/v1.33.5%2Bk3s1");
    let out = Repro::without_docker()
        .env("REPRO_CHANNEL_SERVER", &url)
        .args([
            "matrix",
            "--emit",
            "github-matrix",
            "--checks",
            "etcd-split",
            "--k3s-versions",
            "stable",
        ])
        .run();
    let req = server.join().unwrap();
    assert!(req.starts_with("GET /v1-release/channels/stable "), "{req}");
    out.code(0);
    let v = out.json();
    assert_eq!(v["include"][0]["k3s_version"], "v1.33.5+k3s1");
    assert_eq!(v["include"][0]["expected"], "fixed");
    out.stderr_has("channel `stable` is v1.33.5+k3s1");
}

#[test]
fn channels_without_network_exit_3_and_say_so() {
    // Nothing listens on port 1 of loopback: as good as no network, without leaving the host.
    let out = Repro::without_docker()
        .env(
            "REPRO_CHANNEL_SERVER",
            "http://127.0.0.1:1/v1-release/channels",
        )
        .args([
            "matrix",
            "--emit",
            "github-matrix",
            "--k3s-versions",
            "latest",
        ])
        .run();
    out.code(3);
    let e = out.stderr;
    assert!(
        e.contains("cannot resolve channel `latest`")
            && e.contains("channels need network access")
            && e.contains("pass explicit versions"),
        "{e}"
    );
}

#[test]
fn bad_bisect_input_exits_2_before_docker() {
    let list = tempfile::tempdir().unwrap();
    let file = list.path().join("k3s.yaml");
    std::fs::write(&file, "releases:\n  - v1.33.0+k3s1\n  - v1.33.x+k3s1\n").unwrap();
    let file_s = file.to_str().unwrap().to_string();
    for (args, needle) in [
        (
            vec![
                "etcd-split",
                "--good",
                "v1.33.6+k3s1",
                "--bad",
                "v1.32.0+k3s1",
            ],
            "different release lines".to_string(),
        ),
        (
            vec![
                "etcd-split",
                "--good",
                "v1.34.0+k3s1",
                "--bad",
                "v1.34.2+k3s1",
            ],
            "is not in the release list".to_string(),
        ),
        (
            vec![
                "bootstrap-check",
                "--good",
                "v1.33.6+k3s1",
                "--bad",
                "v1.33.0+k3s1",
            ],
            "no bug signature".to_string(),
        ),
        (
            vec![
                "etcd-split",
                "--good",
                "v1.33.0+k3s1",
                "--bad",
                "v1.33.0+k3s1",
                "--versions",
                &file_s,
            ],
            format!("{file_s}:3:5: error: `v1.33.x+k3s1` is not a k3s or rke2 version"),
        ),
    ] {
        let out = Repro::without_docker().arg("bisect").args(&args).run();
        assert_eq!(out.code, 2, "{args:?}: {out}");
        out.stderr_has(&needle);
    }
}

/// Every junit.xml a matrix or merge wrote under `dir` parses with a real XML parser and agrees
/// with its exit code: the folder's own with `exit`, each run's with the run's (its
/// result.json). Returns how many there were.
fn assert_every_junit_agrees(dir: &Path, exit: i64) -> usize {
    let files = crate::junit::junit_files(dir);
    for f in &files {
        let folder = f.parent().unwrap();
        let code = if folder == dir {
            exit
        } else {
            read_json(&folder.join("result.json"))["exit_code"]
                .as_i64()
                .unwrap()
        };
        crate::junit::assert_agrees(f, code);
    }
    files.len()
}

/// A run folder with a result.json as `repro run` writes it (the fields merge reads, and more).
fn fake_run(base: &Path, name: &str, version: &str, expected: &str, verdict: &str) -> PathBuf {
    let dir = base.join(name);
    write_result(
        &dir,
        &format!("id-{name}"),
        version,
        expected,
        Some(verdict),
    );
    dir
}

/// Merge exits with the worst code of its cells (130 > 3 > 1 > 4 > 0), and a run that broke on
/// infrastructure shows as a cell with its reason.
#[test]
fn merge_exits_with_the_worst_cell_inconclusive_4_broken_3() {
    let tmp = tempfile::tempdir().unwrap();
    fake_run(
        tmp.path(),
        "run-a",
        "v1.33.4+k3s1",
        "reproduced",
        "reproduced",
    );
    fake_run(tmp.path(), "run-b", "v1.33.5+k3s1", "fixed", "inconclusive");
    let merge = |out: &Path| {
        Repro::without_docker()
            .arg("merge")
            .arg(tmp.path())
            .arg("--out")
            .arg(out)
            .run()
    };
    let out = merge(&tmp.path().join("m1"));
    out.code(4);
    // A run whose engine was unreachable: result.json with no verdict, exit 3 and why.
    let broken = fake_run(tmp.path(), "run-c", "v1.34.1+k3s1", "fixed", "fixed");
    let path = broken.join("result.json");
    let mut r = read_json(&path);
    r["verdict"] = Value::Null;
    r["exit_code"] = 3.into();
    r["error"] = "cannot reach the Docker engine at unix:///nowhere: gone".into();
    std::fs::write(&path, serde_json::to_string_pretty(&r).unwrap()).unwrap();
    let out = merge(&tmp.path().join("m2"));
    out.code(3);
    out.stdout_has("BROKEN: etcd-split on v1.34.1+k3s1: the run broke before a verdict (cannot reach the Docker engine");
}

#[test]
fn merge_combines_run_folders_from_other_machines() {
    let tmp = tempfile::tempdir().unwrap();
    // As actions/download-artifact lays them out: one folder per artifact, runs inside.
    let a = tmp.path().join("artifacts/results-etcd-split-v1.33.4+k3s1");
    let b = tmp.path().join("artifacts/results-etcd-split-v1.33.5+k3s1");
    fake_run(&a, "run-a", "v1.33.4+k3s1", "reproduced", "reproduced");
    fake_run(&b, "run-b", "v1.33.5+k3s1", "fixed", "fixed");
    let out_dir = tmp.path().join("merged");
    let out = Repro::without_docker()
        .arg("merge")
        .arg(tmp.path().join("artifacts"))
        .arg("--out")
        .arg(&out_dir)
        .run();
    out.code(0);
    let s = read_json(&out_dir.join("summary.json"));
    assert_eq!(s["totals"]["cells"], 2);
    assert_eq!(s["totals"]["ok"], 2);
    assert_eq!(s["cells"][0]["k3s_version"], "v1.33.4+k3s1");
    let junit = std::fs::read_to_string(out_dir.join("junit.xml")).unwrap();
    assert!(junit.contains(r#"tests="2" failures="0""#), "{junit}");
    assert_eq!(assert_every_junit_agrees(&out_dir, 0), 1);

    // The merged summary merges again (a matrix folder), with one more run that differs.
    let c = fake_run(tmp.path(), "run-c", "v1.32.9+k3s1", "fixed", "reproduced");
    let out2 = tmp.path().join("merged2");
    let out = Repro::without_docker()
        .arg("merge")
        .arg(&out_dir)
        .arg(&c)
        .arg("--out")
        .arg(&out2)
        .run();
    out.code(1);
    out.stdout_has("REGRESSION: etcd-split on v1.32.9+k3s1: expected fixed, got reproduced");
    let s = read_json(&out2.join("summary.json"));
    assert_eq!(s["totals"]["cells"], 3);
    assert_eq!(s["totals"]["regression"], 1);
    let junit = std::fs::read_to_string(out2.join("junit.xml")).unwrap();
    assert!(junit.contains(r#"tests="3" failures="1""#), "{junit}");
    assert_eq!(assert_every_junit_agrees(&out2, 1), 1);
}

#[test]
fn merge_of_a_corrupt_file_exits_2_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let good = fake_run(tmp.path(), "ok", "v1.33.4+k3s1", "reproduced", "reproduced");
    // A run folder and a matrix folder, each with a file that is not JSON.
    for (folder, file, text, pos) in [
        (
            "bad-run",
            "result.json",
            "{\n  \"schema_version\": 1,\n  \"run_id\": \"x\",,\n}\n",
            ":3:17:",
        ),
        (
            "matrix-x",
            "summary.json",
            "{\"kind\": \"repro-matrix-summary\"",
            ":1:",
        ),
    ] {
        let dir = tmp.path().join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join(file);
        std::fs::write(&file, text).unwrap();
        let out = Repro::without_docker()
            .arg("merge")
            .arg(&good)
            .arg(&dir)
            .arg("--out")
            .arg(tmp.path().join("merged"))
            .run();
        out.code(2);
        let e = out.stderr;
        assert!(
            e.contains(&format!("{}{pos}", file.display())) && e.contains("error: invalid JSON"),
            "{e}"
        );
    }
    let out = Repro::without_docker()
        .args(["merge", "/nonexistent/results"])
        .run();
    out.code(2);
    out.stderr_has("/nonexistent/results");
}
