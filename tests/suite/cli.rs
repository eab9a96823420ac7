//! CLI tests: the real `repro` binary, its exit codes and what it prints (snapshots in
//! tests/suite/snapshots/); `crate::repro` holds the runner.

use std::path::{Path, PathBuf};

use crate::repro::Repro;
use crate::util::{copy_dir, project as shipped, repro, root};

const BAD_INPUT: i32 = 2;

// ---------------------------------------------------------------------------------------------
// repro validate

/// Every file under tests/broken/, relative to the crate root, sorted.
fn corpus() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let base = root().join("tests/broken");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&base)
        .expect("tests/broken exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for d in dirs {
        let mut in_dir: Vec<PathBuf> = std::fs::read_dir(&d)
            .expect("readable folder")
            .map(|e| e.expect("readable entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        in_dir.sort();
        files.extend(in_dir);
    }
    files
        .into_iter()
        .map(|p| {
            p.strip_prefix(root())
                .expect("under the root")
                .to_path_buf()
        })
        .collect()
}

/// The positions a corpus file declares on its second line (`# error at: 6:20, 9:3`); a file
/// too empty to hold the comment is expected to fail at 1:1.
fn declared_positions(file: &Path) -> Vec<String> {
    let bytes = std::fs::read(root().join(file)).expect("readable corpus file");
    let text = String::from_utf8_lossy(&bytes);
    match text.lines().find_map(|l| l.strip_prefix("# error at: ")) {
        Some(list) => list.split(", ").map(str::to_string).collect(),
        None => {
            assert!(
                text.trim().is_empty(),
                "{} has no `# error at:` line",
                file.display()
            );
            vec!["1:1".to_string()]
        }
    }
}

/// Each broken file exits 2 without a panic, reports exactly the declared `file:line:col`s, gives
/// every problem a help line, and prints what the snapshot holds.
#[test]
fn validate_broken_corpus() {
    let files = corpus();
    assert!(files.len() >= 30, "only {} broken files", files.len());
    for file in &files {
        let shown = file.display().to_string();
        let out = Repro::new().args(["validate", &shown]).run();
        out.code(BAD_INPUT);

        let errors: Vec<&str> = out
            .stderr
            .lines()
            .filter(|l| l.contains(": error: "))
            .collect();
        let got: Vec<String> = errors
            .iter()
            .map(|l| {
                let rest = l
                    .strip_prefix(&format!("{shown}:"))
                    .unwrap_or_else(|| panic!("{shown}: error names another file: {l}"));
                rest.split(": error: ").next().unwrap_or("").to_string()
            })
            .collect();
        assert_eq!(
            got,
            declared_positions(file),
            "{shown}: positions\n{}",
            out.stderr
        );
        let helps = out
            .stderr
            .lines()
            .filter(|l| l.starts_with("  help: "))
            .count();
        assert_eq!(
            helps,
            errors.len(),
            "{shown}: every problem needs a help line\n{}",
            out.stderr
        );

        let stem = file.with_extension("");
        let name = format!(
            "validate-broken-{}",
            stem.strip_prefix("tests/broken")
                .unwrap_or(&stem)
                .display()
                .to_string()
                .replace('/', "-")
        );
        snap!(name, out);
    }
}

#[test]
fn validate_builtin_files_outside_a_project() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = Repro::new().arg("validate").current_dir(dir.path()).run();
    out.code(0);
    out.stdout_has("built into repro");
}

/// Shape errors stop a file at the first one; semantic errors are all collected; and every
/// file given is reported.
#[test]
fn validate_reports_problems_of_every_file() {
    let out = Repro::new()
        .args([
            "validate",
            "tests/fixtures/checks/many-problems.yaml",
            "tests/broken/topologies/unknown-key-rol.yaml",
            "tests/fixtures/topologies/two-typos.yaml",
        ])
        .run();
    out.code(BAD_INPUT);
    snap!("validate-several-files", out);
    let count = |f: &str| out.stderr.lines().filter(|l| l.starts_with(f)).count();
    assert_eq!(count("tests/fixtures/checks/many-problems.yaml:"), 4);
    assert_eq!(count("tests/broken/topologies/unknown-key-rol.yaml:"), 1);
    // Two typos, but YAML shape errors stop that file at the first.
    assert_eq!(count("tests/fixtures/topologies/two-typos.yaml:"), 1);
    assert!(out.stderr.ends_with("6 problems found\n"), "{}", out.stderr);
}

#[test]
fn validate_missing_file() {
    let out = Repro::new()
        .args(["validate", "tests/broken/no-such-file.yaml"])
        .run();
    out.code(BAD_INPUT);
    assert!(
        out.stderr
            .starts_with("tests/broken/no-such-file.yaml: error: cannot read"),
        "{}",
        out.stderr
    );
}

/// A project folder: the shipped files plus `extra` (path, text) files.
fn project(extra: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = shipped(&["checks", "topologies"]);
    for (path, text) in extra {
        std::fs::write(dir.path().join(path), text).expect("write extra file");
    }
    dir
}

#[test]
fn root_with_a_broken_check_exits_2() {
    let broken = std::fs::read_to_string(root().join("tests/broken/checks/restart-twice.yaml"))
        .expect("corpus file");
    let dir = project(&[("checks/restart-twice.yaml", &broken)]);
    let r = dir.path().display().to_string();
    for args in [vec!["validate"], vec!["list"], vec!["plan", "etcd-split"]] {
        let out = Repro::new()
            .arg("--root")
            .arg(&r)
            .args(&args)
            .redact(&r, "[ROOT]")
            .run();
        out.code(BAD_INPUT);
        assert!(
            out.stderr.contains("[ROOT]/checks/restart-twice.yaml:11:31: error: `etcd-2` is started or restarted twice"),
            "{}: {}",
            out.command,
            out.stderr
        );
        if args == ["validate"] {
            snap!("validate-root-broken-check", out);
        }
    }
    // The same folder without the broken file is fine.
    std::fs::remove_file(dir.path().join("checks/restart-twice.yaml")).expect("rm");
    Repro::new().args(["--root", &r, "validate"]).run().code(0);
}

// ---------------------------------------------------------------------------------------------
// repro list, plan

/// Commands whose whole output is their snapshot, and lines it must hold besides:
/// (snapshot, arguments, lines of stdout).
#[test]
fn shipped_files_listed_validated_and_planned() {
    for (name, args, has) in [
        ("validate-shipped", &["validate"][..], &[][..]),
        ("list", &["list"], &[]),
        (
            "plan-etcd-split",
            &["plan", "etcd-split"],
            // The four steps of k3s #12753 as QA wrote them.
            &[
                "Step 0 — create the cluster",
                "Step 1 — enable embedded-registry on etcd-2 and etcd-3",
                "Step 2 — enable embedded-registry on etcd-1",
                "Step 3 — restart etcd-2 and etcd-3 again",
            ],
        ),
        (
            "plan-etcd-split-2cp",
            &["plan", "etcd-split", "--topology", "etcd-split-2cp"],
            // The two control-plane-only servers start together, with etcd-2: each needs only
            // the etcd node it joins (etcd-1), not the other etcd joiners.
            &["    2.  cp-1  ", "    2.  cp-2  ", "    3.  etcd-3  "],
        ),
        ("plan-metrics-order", &["plan", "metrics-order"], &[]),
        ("plan-bootstrap-check", &["plan", "bootstrap-check"], &[]),
    ] {
        let out = Repro::new().args(args).run();
        out.code(0);
        for line in has {
            out.stdout_has(line);
        }
        snap!(name, out);
    }
}

#[test]
fn plan_prints_the_critical_path_under_a_pace() {
    let out = Repro::new()
        .args(["plan", "etcd-split", "--sim", "--sim-pace", "0.5"])
        .run();
    out.code(0);
    // etcd-1 4.0 s + two etcd joiners 8.45 s each, then five restarts of 12 s, halved; cp-1
    // boots beside etcd-2 and is not on it.
    out.stdout_has("Critical path at --sim-pace 0.5: 40.45 s (80.90 s at real k3s timings)");
    let path = out.stdout.split("Critical path").nth(1).unwrap_or_default();
    assert!(!path.contains("cp-1"), "{path}");
    snap!("plan-etcd-split-paced", out);
    // Without a pace there is no critical path to print.
    let plain = Repro::new().args(["plan", "etcd-split", "--sim"]).run();
    assert!(!plain.stdout.contains("Critical path"), "{}", plain.stdout);
}

#[test]
fn plan_json() {
    let out = Repro::new()
        .args(["plan", "etcd-split", "--format", "json"])
        .run();
    out.code(0);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("plan JSON parses");
    assert_eq!(v["expected_verdict"], "reproduced");
    assert_eq!(v["steps"].as_array().map(Vec::len), Some(3));
    snap!("plan-etcd-split-json", out);
}

#[test]
fn plan_expected_verdict_follows_the_version() {
    let fixed = Repro::new()
        .args([
            "plan",
            "etcd-split",
            "--k3s-version",
            "v1.33.5+k3s1",
            "--sim",
        ])
        .run();
    fixed.code(0);
    fixed.stdout_has("expected  fixed (v1.33.5+k3s1 is at or after v1.33.5+k3s1");
    fixed.stdout_has("image     repro.local/k3s-sim:v1.33.5-k3s1");

    let old = Repro::new()
        .args([
            "plan",
            "metrics-order",
            "--k3s-version",
            "v1.27.5+k3s1",
            "--image",
            "my/k3s:test",
        ])
        .run();
    old.code(0);
    old.stdout_has("NOTE      k3s v1.27.5+k3s1 has no `supervisor-metrics` feature");
    old.stdout_has("image     my/k3s:test");
}

/// An image tagged with a version is the version of record (#32): a fixed image is planned,
/// expected and recorded as the fixed version, not as the topology's default.
#[test]
fn plan_of_an_image_tag_plans_its_version() {
    let out = Repro::new()
        .args(["plan", "etcd-split", "--image", "rancher/k3s:v1.33.5-k3s1"])
        .run();
    out.code(0);
    assert!(
        out.stdout.contains("k3s v1.33.5+k3s1")
            && out
                .stdout
                .contains("expected  fixed (v1.33.5+k3s1 is at or after v1.33.5+k3s1"),
        "{}",
        out.stdout
    );
    // A --version that disagrees with the tag is refused before anything runs.
    let out = Repro::new()
        .args(["plan", "etcd-split", "--image", "rancher/k3s:v1.33.5-k3s1"])
        .args(["--version", "v1.33.4+k3s1"])
        .run();
    out.code(BAD_INPUT);
    out.stderr_has("error: --image rancher/k3s:v1.33.5-k3s1 is tagged v1.33.5+k3s1, but --version asks for v1.33.4+k3s1");
    // Swapped versions for `verify`: exit 2, before anything.
    let out = Repro::new()
        .args(["verify", "etcd-split", "--buggy", "v1.33.5+k3s1"])
        .args(["--fixed", "v1.33.4+k3s1", "--sim"])
        .run();
    out.code(BAD_INPUT);
    out.stderr_has("are --buggy and --fixed swapped?");
}

#[test]
fn plan_topology_override_that_does_not_fit_exits_2() {
    // bootstrap-check's etcd-3 is deferred: etcd-split cannot edit, restart or observe it.
    let out = Repro::new()
        .args(["plan", "etcd-split", "--topology", "bootstrap-check"])
        .run();
    out.code(BAD_INPUT);
    snap!("plan-topology-override-deferred", out);

    // A topology without cp-1: metrics-order enables supervisor-metrics on it.
    let three = "name: three-etcd\nk3s-version: v1.33.4+k3s1\nnodes:\n  - {name: etcd-1, role: etcd, init: true}\n  - {name: etcd-2, role: etcd, join: etcd-1}\n  - {name: etcd-3, role: etcd, join: etcd-1}\n";
    let dir = project(&[("topologies/three-etcd.yaml", three)]);
    let r = dir.path().display().to_string();
    let out = Repro::new()
        .args([
            "--root",
            &r,
            "plan",
            "metrics-order",
            "--topology",
            "three-etcd",
        ])
        .redact(&r, "[ROOT]")
        .run();
    out.code(BAD_INPUT);
    out.stderr_has("unknown node `cp-1` (topology `three-etcd`)");
    snap!("plan-topology-override-missing-node", out);
}

#[test]
fn plan_bad_input_exits_2() {
    for (args, want) in [
        (
            vec!["plan", "etcd-splt"],
            "error: no check named `etcd-splt`",
        ),
        (
            vec!["plan", "etcd-split", "--topology", "nope"],
            "error: no topology named `nope`",
        ),
        (
            vec!["plan", "etcd-split", "--k3s-version", "1.33"],
            "error: --k3s-version: `1.33` is not a k3s or rke2 version",
        ),
        (
            vec!["plan", "tests/broken/checks/restrat.yaml"],
            "tests/broken/checks/restrat.yaml:11:5: error: unknown key `restrat`",
        ),
    ] {
        let out = Repro::new().args(&args).run();
        out.code(BAD_INPUT);
        assert!(
            out.stderr.starts_with(want),
            "{}: {}",
            out.command,
            out.stderr
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Flags refused before anything exists

/// `repro` with Docker pointed at a socket that does not exist: a flag refused at parsing exits 2
/// with its message, where anything reaching Docker would exit 3 (nothing can be created).
/// `repro <args>` with Docker unreachable is refused as bad input, saying `want`.
fn refused_without_docker(args: &[&str], want: &str) {
    Repro::without_docker()
        .args(args)
        .run()
        .code(BAD_INPUT)
        .stderr_has(want);
}

#[test]
fn zero_or_huge_waits_are_refused_at_parsing() {
    for (args, want) in [
        (
            vec!["run", "etcd-split", "--sim", "--timeout", "0"],
            "invalid value '0' for '--timeout <TIMEOUT>': the timeout must be above zero",
        ),
        (
            vec!["run", "etcd-split", "--sim", "--timeout", "0s"],
            "the timeout must be above zero",
        ),
        (
            vec!["run", "etcd-split", "--sim", "--timeout", "100000000y"],
            "at most 7 days",
        ),
        (
            vec!["run", "etcd-split", "--sim", "--settle", "30d"],
            "at most 7 days",
        ),
        (
            vec!["run", "etcd-split", "--image", "Bad Image!"],
            "`Bad Image!` is not an image reference",
        ),
        (
            vec!["run", "etcd-split", "--sim", "--sim-pace", "0"],
            "`0` is not a pace: write a factor above 0 and at most 10",
        ),
        (vec!["run", "etcd-split", "--sim-pace", "0.5"], "--sim"),
        (
            vec![
                "matrix",
                "--k3s-versions",
                "v1.33.4+k3s1",
                "--sim",
                "--sim-pace",
                "fast",
            ],
            "`fast` is not a pace",
        ),
        (
            vec![
                "matrix",
                "--k3s-versions",
                "v1.33.4+k3s1",
                "--sim",
                "--timeout",
                "0",
            ],
            "the timeout must be above zero",
        ),
    ] {
        refused_without_docker(&args, want);
    }
}

/// A topology with more nodes than a run's /24 can address is refused when loaded (it used to
/// create ~245 containers before "invalid IPv4 address 10.213.0.256"), with Docker unreachable
/// so that reaching it would show as exit 3.
#[test]
fn too_many_nodes_are_refused_before_docker() {
    let text = std::fs::read_to_string(root().join("tests/broken/topologies/too-many-nodes.yaml"))
        .expect("corpus file");
    let dir = project(&[("topologies/too-many-nodes.yaml", &text)]);
    let r = dir.path().display().to_string();
    refused_without_docker(
        &[
            "--root",
            &r,
            "run",
            "etcd-split",
            "--sim",
            "--topology",
            "broken-too-many-nodes",
        ],
        &format!(
            "{r}/topologies/too-many-nodes.yaml:6:3: error: 300 nodes do not fit the run's network: at most 245"
        ),
    );
}

// ---------------------------------------------------------------------------------------------
// What reaches the terminal

/// Whether text holds a byte that drives a terminal: C0 but `\n`/`\t`, ESC, DEL, or C1 (as UTF-8).
fn raw_control(bytes: &[u8]) -> Option<usize> {
    let text = String::from_utf8_lossy(bytes);
    text.char_indices()
        .find(|(_, c)| c.is_control() && *c != '\n' && *c != '\t')
        .map(|(i, _)| i)
}

/// A check whose name carries an unterminated OSC title sequence, a clear-screen, a carriage
/// return and a C1 CSI: the diagnostic echoes the name, shown escaped.
#[test]
fn escapes_in_names_are_shown_not_sent() {
    let shipped = std::fs::read_to_string(root().join("checks/etcd-split.yaml")).expect("check");
    let hostile = shipped.replacen(
        "name: etcd-split",
        r#"name: "etcd\e]0;pwned\e[2J\rsplit\u009b31m""#,
        1,
    );
    assert_ne!(hostile, shipped);
    let dir = project(&[("checks/hostile.yaml", &hostile)]);
    let r = dir.path().display().to_string();
    for args in [
        vec!["--root", &r, "validate"],
        vec!["--root", &r, "list"],
        vec!["--root", &r, "plan", "etcd-split"],
    ] {
        let out = repro().args(&args).output().expect("runs repro");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(BAD_INPUT), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert_eq!(raw_control(&out.stdout), None, "{args:?} stdout");
        assert_eq!(raw_control(&out.stderr), None, "{args:?}: {stderr}");
        assert!(
            stderr.contains(
                r"`etcd\u001b]0;pwned\u001b[2J\u000dsplit\u009b31m` is not a valid check name"
            ),
            "{args:?}: {stderr}"
        );
    }
}

/// `repro … | head -c0`: the reader is gone before anything is written. The command exits with
/// its own code, quietly, without a panic.
#[test]
fn closed_stdout_is_quiet() {
    for (args, code) in [
        (vec!["list"], 0),
        (vec!["list", "--format", "json"], 0),
        (vec!["plan", "etcd-split"], 0),
        (vec!["validate"], 0),
        (
            vec![
                "report",
                "--validation",
                "tests/fixtures/run-etcd-split-buggy",
                "tests/fixtures/run-etcd-split-fixed",
            ],
            0,
        ),
        (vec!["completions", "bash"], 0),
        (vec!["plan", "etcd-splt"], BAD_INPUT),
    ] {
        let mut child = repro()
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("runs repro");
        // Close the reading end at once, as `head -c0` does.
        drop(child.stdout.take());
        let out = child.wait_with_output().expect("repro ends");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(!stderr.contains("Broken pipe"), "{args:?}: {stderr}");
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
    }
}

// ---------------------------------------------------------------------------------------------
// Hostile folders: links out, pipes, devices, oversized files (src/safe_fs.rs)

/// Runs repro and fails — rather than hanging the suite — if it has not ended after a generous
/// bound (a guard against a blocking FIFO read, not a speed assertion).
fn run_guarded(args: &[&str]) -> (i32, String, String) {
    let mut child = repro()
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("runs repro");
    let started = std::time::Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if started.elapsed() > std::time::Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("repro {args:?} blocked (a FIFO or an endless file was read)");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("output");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    )
}

fn mkfifo(p: &Path) {
    let st = std::process::Command::new("mkfifo")
        .arg(p)
        .status()
        .expect("mkfifo");
    assert!(st.success(), "mkfifo {}", p.display());
}

/// A copy of the buggy fixture's results folder, and a folder outside it with a "private key".
fn results_copy() -> (tempfile::TempDir, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tmp");
    copy_dir(
        &root().join("tests/fixtures/run-etcd-split-buggy"),
        dir.path(),
    );
    let outside = tempfile::tempdir().expect("tmp");
    std::fs::create_dir(outside.path().join("etcd-1")).expect("mkdir");
    std::fs::write(
        outside.path().join("etcd-1/boot-1.log"),
        "-----BEGIN OPENSSH PRIVATE KEY-----\nplanted-ssh-key-material\n",
    )
    .expect("write");
    (dir, outside)
}

fn bundle_holds(dir: &Path, needle: &str) -> bool {
    let Ok(bytes) = std::fs::read(dir.join("bundle.tar.gz")) else {
        return false;
    };
    let mut text = Vec::new();
    let mut gz = flate2::read::GzDecoder::new(&bytes[..]);
    std::io::Read::read_to_end(&mut gz, &mut text).expect("gunzip");
    String::from_utf8_lossy(&text).contains(needle)
}

#[test]
fn report_refuses_a_nodes_link_out_of_the_folder() {
    let (dir, outside) = results_copy();
    let d = dir.path();
    std::fs::remove_dir_all(d.join("nodes")).expect("rm");
    std::os::unix::fs::symlink(outside.path(), d.join("nodes")).expect("symlink");
    let shown = d.display().to_string();
    let (code, _, stderr) = run_guarded(&["report", &shown]);
    assert_eq!(code, BAD_INPUT, "{stderr}");
    assert!(
        stderr.contains(&format!("{shown}/nodes: a symbolic link to"))
            && stderr.contains("outside"),
        "{stderr}"
    );
    assert!(!bundle_holds(d, "planted-ssh-key-material"));
    // A link to one file out of the folder, deeper down.
    let (dir, outside) = results_copy();
    let d = dir.path();
    let log = d.join("nodes/etcd-1/boot-1.log");
    std::fs::remove_file(&log).expect("rm");
    std::os::unix::fs::symlink(outside.path().join("etcd-1/boot-1.log"), &log).expect("symlink");
    let shown = d.display().to_string();
    let (code, _, stderr) = run_guarded(&["report", &shown]);
    assert_eq!(code, BAD_INPUT, "{stderr}");
    assert!(
        stderr.contains("nodes/etcd-1/boot-1.log: a symbolic link to"),
        "{stderr}"
    );
    assert!(!bundle_holds(d, "planted-ssh-key-material"));
}

#[test]
fn report_refuses_pipes_devices_and_oversized_files() {
    // result.json linked to /dev/zero (out of the folder, and a device).
    let (dir, _o) = results_copy();
    let d = dir.path();
    std::fs::remove_file(d.join("result.json")).expect("rm");
    std::os::unix::fs::symlink("/dev/zero", d.join("result.json")).expect("symlink");
    let (code, _, stderr) = run_guarded(&["report", d.to_str().expect("utf-8")]);
    assert_eq!(code, BAD_INPUT, "{stderr}");
    assert!(
        stderr.contains("result.json: a symbolic link to /dev/zero"),
        "{stderr}"
    );

    // A FIFO under nodes/ (nobody writes to it: reading it would block forever).
    let (dir, _o) = results_copy();
    let d = dir.path();
    mkfifo(&d.join("nodes/etcd-1/boot-9.log"));
    let (code, _, stderr) = run_guarded(&["report", d.to_str().expect("utf-8")]);
    assert_eq!(code, BAD_INPUT, "{stderr}");
    assert!(
        stderr.contains("nodes/etcd-1/boot-9.log: a named pipe (FIFO), not a regular file"),
        "{stderr}"
    );

    // A result.json over its limit (sparse: no disk used).
    let (dir, _o) = results_copy();
    let d = dir.path();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(d.join("result.json"))
        .expect("open");
    f.set_len(65 * 1024 * 1024).expect("grow");
    let (code, _, stderr) = run_guarded(&["report", d.to_str().expect("utf-8")]);
    assert_eq!(code, BAD_INPUT, "{stderr}");
    assert!(
        stderr.contains("result.json: larger than the 64 MiB"),
        "{stderr}"
    );
}

#[test]
fn a_project_refuses_links_out_pipes_and_oversized_files() {
    let secret_dir = tempfile::tempdir().expect("tmp");
    let secret = secret_dir.path().join("id_ed25519");
    std::fs::write(&secret, "planted-first-line-of-a-key: x\n").expect("write");
    type Make<'a> = Box<dyn Fn(&Path) + 'a>;
    let cases: Vec<(&str, Make, &str)> = vec![
        (
            "checks/stolen.yaml",
            Box::new(|p: &Path| std::os::unix::fs::symlink(&secret, p).expect("symlink")),
            "a symbolic link to",
        ),
        (
            "checks/zero.yaml",
            Box::new(|p: &Path| std::os::unix::fs::symlink("/dev/zero", p).expect("symlink")),
            "a symbolic link to /dev/zero",
        ),
        (
            "checks/pipe.yaml",
            Box::new(|p: &Path| mkfifo(p)),
            "a named pipe (FIFO)",
        ),
        (
            "topologies/big.yaml",
            Box::new(|p: &Path| {
                std::fs::File::create(p)
                    .and_then(|f| f.set_len(2 * 1024 * 1024))
                    .expect("sparse file")
            }),
            "larger than the 1 MiB",
        ),
    ];
    for (file, make, want) in cases {
        let dir = project(&[]);
        make(&dir.path().join(file));
        let r = dir.path().display().to_string();
        let (code, stdout, stderr) = run_guarded(&["--root", &r, "validate"]);
        assert_eq!(code, BAD_INPUT, "{file}: {stderr}");
        assert!(
            stderr.contains(&format!("{r}/{file}: error: cannot read: {want}")),
            "{file}: {stderr}"
        );
        assert!(!stderr.contains("planted-first-line") && !stdout.contains("planted-first-line"));
    }
    // Links inside the project are followed.
    let dir = project(&[]);
    std::fs::rename(
        dir.path().join("checks/metrics-order.yaml"),
        dir.path().join("metrics-order.yaml"),
    )
    .expect("mv");
    std::os::unix::fs::symlink(
        "../metrics-order.yaml",
        dir.path().join("checks/metrics-order.yaml"),
    )
    .expect("symlink");
    let r = dir.path().display().to_string();
    let (code, _, stderr) = run_guarded(&["--root", &r, "validate"]);
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn redact_and_inspect_do_not_block_on_a_fifo() {
    let (dir, _o) = results_copy();
    let d = dir.path();
    mkfifo(&d.join("nodes/etcd-1/boot-9.log"));
    let out = tempfile::tempdir().expect("tmp");
    let copy = out.path().join("copy");
    let (code, _, stderr) = run_guarded(&[
        "redact",
        d.to_str().expect("utf-8"),
        "--out",
        copy.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!copy.join("nodes/etcd-1/boot-9.log").exists());
    let (code, _, stderr) = run_guarded(&["inspect", d.to_str().expect("utf-8")]);
    assert!(code == 0 || code == 1, "exit {code}: {stderr}");
}

/// `--image-archive` is read only when it is a regular file: `/dev/zero` streamed forever, a
/// FIFO blocked. Refused at parsing (exit 2), Docker unreachable so reaching it would exit 3.
#[test]
fn image_archive_must_be_a_regular_file() {
    let tmp = tempfile::tempdir().expect("tmp");
    let fifo = tmp.path().join("archive.tar");
    mkfifo(&fifo);
    let fifo = fifo.display().to_string();
    for (args, want) in [
        (
            vec!["run", "etcd-split", "--sim", "--image-archive", "/dev/zero"],
            "/dev/zero is not a regular file",
        ),
        (
            vec!["run", "etcd-split", "--sim", "--image-archive", &fifo],
            "archive.tar is not a regular file",
        ),
        (
            vec![
                "run",
                "etcd-split",
                "--sim",
                "--image-archive",
                "no-such.tar",
            ],
            "cannot read no-such.tar",
        ),
        (
            vec![
                "matrix",
                "--k3s-versions",
                "v1.33.4+k3s1",
                "--image-archive",
                "/dev/zero",
            ],
            "/dev/zero is not a regular file",
        ),
    ] {
        refused_without_docker(&args, want);
    }
}
