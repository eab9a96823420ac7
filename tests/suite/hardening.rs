#![allow(clippy::unwrap_used)] // tests panic on purpose when something is wrong

//! The third hardening campaign's reproducers that need no engine (issue #30): secrets in the
//! doctor's flags and in diagnostics' positions, hostile `--artifacts` files (a link to
//! /dev/zero, a FIFO, a byte-order mark), downloads that stall or are interrupted, and the exit
//! code table on every command.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::http_files::HttpFiles;
use crate::util::{repro, text};

fn run(c: &mut Command) -> Output {
    c.output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `repro doctor --image` with a URL password or a line break: refused as bad input before the
/// engine is asked, the password never printed, no line of the attacker's.
#[test]
fn doctor_image_is_validated_and_redacted() {
    for format in ["text", "json"] {
        let o = run(repro()
            .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
            .args(["doctor", "--format", format, "--image"])
            .arg("https://USER:PASSWORD9x@host:5000/k3s:v1"));
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(!text(&o).contains("PASSWORD9x"), "{}", text(&o));
        assert!(stderr(&o).contains("--image"), "{}", text(&o));
    }
    let o = run(repro()
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .args(["doctor", "--image", "a\nFAKE: ok"]));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let all = text(&o);
    assert!(
        !all.lines().any(|l| l.trim_start().starts_with("FAKE")),
        "{all}"
    );
    assert!(all.contains("a\\nFAKE: ok"), "{all}");
}

/// A file whose name holds `token`, `secret`, `password` or `key` is not a secret: `repro
/// validate` prints its line and column.
#[test]
fn validate_prints_positions_of_secret_looking_file_names() {
    let tmp = tempfile::tempdir().unwrap();
    for name in [
        "my-token.yaml",
        "db-password.yaml",
        "secret.yaml",
        "api-key.yaml",
    ] {
        let f = tmp.path().join(name);
        std::fs::write(&f, "name: x\nnodes:\n  - name: a\n    role: nonsense\n").unwrap();
        let o = run(repro().arg("validate").arg(&f));
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let err = stderr(&o);
        assert!(!err.contains("REDACTED"), "{name}: {err}");
        assert!(err.contains(&format!("{name}:")), "{name}: {err}");
        assert!(
            err.lines()
                .any(|l| l.contains(&format!("{name}:4:")) || l.contains(&format!("{name}:3:"))),
            "{name}: {err}"
        );
    }
}

/// An output that cannot be written is exit 3 on every command (`merge --out` was 2), and a
/// missing stand-in binary or unwritable `--out` of `sim binary` too (as `sim artifacts`).
#[test]
fn unwritable_outputs_are_exit_3_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "not a folder").unwrap();
    let run_dir = tmp.path().join("in/etcd-split-v1.33.4+k3s1");
    crate::fixtures::write_result(
        &run_dir,
        "id-1",
        "v1.33.4+k3s1",
        "reproduced",
        Some("reproduced"),
    );
    let o = run(repro()
        .arg("merge")
        .arg(tmp.path().join("in"))
        .arg("--out")
        .arg(file.join("merged")));
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let o = run(repro()
        .args([
            "sim",
            "binary",
            "--version",
            "v1.33.5+k3s1",
            "--buggy",
            "--out",
        ])
        .arg(file.join("k3s")));
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
}

/// `--node-base` on a k3s run is refused (exit 2), not silently ignored.
#[test]
fn node_base_on_a_k3s_run_is_refused() {
    let o = run(repro().args(["plan", "etcd-split", "--node-base", "repro.local/base:1"]));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(stderr(&o).contains("--node-base"), "{}", text(&o));
}

/// `--no-images-tarball` where no node image is built from release artifacts is refused (exit
/// 2) too: on a k3s run (k3s's nodes run its own image), with `--sim` or with `--image`.
#[test]
fn no_images_tarball_without_a_node_image_from_artifacts_is_refused() {
    for (args, why) in [
        (vec![], "topology `etcd-split` runs k3s"),
        (
            vec!["--version", "v1.32.5+rke2r1", "--sim"],
            "--sim runs the stand-in's image",
        ),
        (
            vec!["--version", "v1.32.5+rke2r1", "--image", "repro.local/n:1"],
            "--image repro.local/n:1 is used as it is",
        ),
    ] {
        let o = run(repro()
            .args(["plan", "etcd-split", "--no-images-tarball"])
            .args(&args));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(
            stderr(&o).contains(&format!("--no-images-tarball: {why}")),
            "{}",
            text(&o)
        );
    }
    let o = run(repro().args([
        "verify",
        "etcd-split",
        "--buggy",
        "v1.33.4+k3s1",
        "--fixed",
        "v1.33.5+k3s1",
        "--no-images-tarball",
    ]));
    assert_eq!(o.status.code(), Some(2), "verify takes it: {}", text(&o));
    assert!(
        stderr(&o).contains("--no-images-tarball: topology `etcd-split` runs k3s"),
        "{}",
        text(&o)
    );
}

const TARBALL: &str = "rke2.linux-amd64.tar.gz";
const SUMS: &str = "sha256sum-amd64.txt";

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("{:x}", sha2::Sha256::digest(bytes))
}

/// `repro plan <rke2 check> --artifacts dir`, ended within `within` (killed after it).
fn plan_artifacts(dir: &Path, within: Duration) -> (Option<i32>, String) {
    let mut child = repro()
        .args(["plan", "bootstrap-check-rke2", "--artifacts"])
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if let Some(_status) = child.try_wait().unwrap() {
            let o = child.wait_with_output().unwrap();
            return (o.status.code(), text(&o));
        }
        if start.elapsed() > within {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!("still running after {within:?}: {}", text(&o));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Lays out one hostile artifacts folder.
type MakeFolder = Box<dyn Fn(&Path)>;

fn mkfifo(p: &Path) {
    let ok = Command::new("mkfifo").arg(p).status().unwrap().success();
    assert!(ok, "mkfifo {}", p.display());
}

/// A sums file or tarball that is a link to /dev/zero, or a FIFO: refused at once (exit 2)
/// naming the file, never read forever; a byte-order mark before the sums is no mismatch.
#[test]
fn hostile_artifact_files_are_refused_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let tarball = b"not really a tarball".to_vec();
    let good_sums = format!("{}  {TARBALL}\n", sha256(&tarball));
    let cases: Vec<(&str, MakeFolder)> = vec![
        (
            "sums -> /dev/zero",
            Box::new(|d: &Path| {
                std::os::unix::fs::symlink("/dev/zero", d.join(SUMS)).unwrap();
                std::fs::write(d.join(TARBALL), b"x").unwrap();
            }),
        ),
        (
            "sums FIFO",
            Box::new(|d: &Path| {
                mkfifo(&d.join(SUMS));
                std::fs::write(d.join(TARBALL), b"x").unwrap();
            }),
        ),
        (
            "tarball -> /dev/zero",
            Box::new({
                let s = good_sums.clone();
                move |d: &Path| {
                    std::fs::write(d.join(SUMS), &s).unwrap();
                    std::os::unix::fs::symlink("/dev/zero", d.join(TARBALL)).unwrap();
                }
            }),
        ),
        (
            "tarball FIFO",
            Box::new({
                let s = good_sums.clone();
                move |d: &Path| {
                    std::fs::write(d.join(SUMS), &s).unwrap();
                    mkfifo(&d.join(TARBALL));
                }
            }),
        ),
    ];
    for (i, (what, make)) in cases.iter().enumerate() {
        let d = tmp.path().join(format!("case-{i}"));
        std::fs::create_dir(&d).unwrap();
        make(&d);
        let (code, out) = plan_artifacts(&d, Duration::from_secs(20));
        assert_eq!(code, Some(2), "{what}: {out}");
        assert!(out.contains("not a regular file"), "{what}: {out}");
    }
    // A byte-order mark (a sums file saved on Windows) is not part of the sum.
    let d = tmp.path().join("bom");
    std::fs::create_dir(&d).unwrap();
    std::fs::write(d.join(TARBALL), &tarball).unwrap();
    std::fs::write(d.join(SUMS), format!("\u{feff}{good_sums}")).unwrap();
    let (code, out) = plan_artifacts(&d, Duration::from_secs(20));
    assert!(!out.contains("does not match"), "{out}");
    assert_eq!(code, Some(0), "{out}");
}

const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

/// A CI storage serving the build of [`SHA`]: its sum file whole, its binary stalling after a
/// few bytes.
fn stalling_ci_build() -> HttpFiles {
    let server = HttpFiles::start();
    let body = vec![7u8; 4096];
    server.put(
        &format!("k3s-{SHA}.sha256sum"),
        format!("{}  k3s\n", sha256(&body)).into_bytes(),
    );
    server.stall(&format!("k3s-{SHA}"), body);
    server
}

/// A CI storage whose binary's body stalls after a few bytes: `repro plan --k3s-commit` ends
/// within the stall timeout (here 2s) with a message naming the stall, exit 3, and leaves no
/// partial file in the cache.
#[test]
fn a_stalled_download_ends_with_a_clear_message() {
    let server = stalling_ci_build();
    let cache = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let o = run(repro()
        .env("REPRO_K3S_CI_URL", server.url())
        .env("XDG_CACHE_HOME", cache.path())
        .env("REPRO_DOWNLOAD_STALL", "2s")
        .args(["plan", "etcd-split", "--k3s-commit", SHA]));
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(stderr(&o).contains("stalled"), "{}", text(&o));
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
    assert!(no_partial_file(cache.path()), "a .part file is left");
    assert!(server.asked().iter().any(|p| p.ends_with(".sha256sum")));
}

fn no_partial_file(dir: &Path) -> bool {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.to_string_lossy().contains(".part-") {
                return false;
            }
        }
    }
    true
}

/// SIGTERM, SIGINT or SIGHUP during a download: exit 130 (not killed, 143/129), the
/// `.part-<pid>` file removed.
#[test]
fn a_signal_during_a_download_is_exit_130_with_nothing_partial_left() {
    let server = stalling_ci_build();
    for signal in ["TERM", "INT", "HUP"] {
        let cache = tempfile::tempdir().unwrap();
        let child = repro()
            .env("REPRO_K3S_CI_URL", server.url())
            .env("XDG_CACHE_HOME", cache.path())
            .args(["plan", "etcd-split", "--k3s-commit", SHA])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The partial file is there once the body started: the moment to interrupt.
        let start = Instant::now();
        while no_partial_file(cache.path()) {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "no download started"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let killed = Command::new("kill")
            .args([format!("-{signal}"), child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(130), "SIG{signal}: {}", text(&o));
        assert!(
            no_partial_file(cache.path()),
            "SIG{signal}: a .part file is left"
        );
    }
}

/// A commit list that is a FIFO or a link to /dev/zero: refused (exit 2) at once, and no bisect
/// folder is created; a byte-order mark before the first SHA is no error.
#[test]
fn hostile_commit_lists_are_refused_with_nothing_created() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let fifo = tmp.path().join("commits.fifo");
    mkfifo(&fifo);
    let zero = tmp.path().join("commits.zero");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    for list in [&fifo, &zero] {
        let o = run(repro()
            .args(["bisect", "etcd-split", "--commits"])
            .arg(list)
            .arg("--results")
            .arg(&results));
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(stderr(&o).contains("not a regular file"), "{}", text(&o));
        assert!(!results.exists(), "{}", text(&o));
    }
}

// ---- #42: explore's search bounded before it is built, its flags checked ----

/// A project with the shipped checks and an 11-server topology (etcd-split grown: one init
/// node, eight etcd members, two control-plane nodes), which `validate` accepts.
fn eleven_servers() -> tempfile::TempDir {
    let root = crate::util::project(&["checks", "topologies"]);
    let mut t = String::from(
        "name: etcd-eleven\ndescription: 11 servers\nk3s-version: v1.33.4+k3s1\nfiles:\n  registries.yaml: |\n    mirrors:\n      docker.io: {}\nnodes:\n  - {name: etcd-1, role: etcd, init: true}\n",
    );
    for i in 2..=9 {
        t.push_str(&format!(
            "  - {{name: etcd-{i}, role: etcd, join: etcd-1}}\n"
        ));
    }
    for i in 1..=2 {
        t.push_str(&format!(
            "  - {{name: cp-{i}, role: control-plane, join: etcd-1}}\n"
        ));
    }
    std::fs::write(root.path().join("topologies/etcd-eleven.yaml"), t).unwrap();
    root
}

/// #42 attack 4: explore plans an 11-server topology in under 5 s and 200 MB (its peak RSS, as
/// GNU time reports it), where it once built every permutation (10 servers: 13 s, 624 MB).
#[test]
fn explore_plans_eleven_servers_in_bounded_time_and_memory() {
    let root = eleven_servers();
    let peak = root.path().join("peak-kb");
    let base = repro();
    let t = Instant::now();
    let o = run(Command::new("/usr/bin/time")
        .args(["-f", "%M", "-o"])
        .arg(&peak)
        .arg(base.get_program())
        .arg("--root")
        .arg(root.path())
        .args([
            "explore",
            "--topology",
            "etcd-eleven",
            "--emit",
            "github-matrix",
        ])
        .current_dir(crate::util::root()));
    let secs = t.elapsed();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(secs < Duration::from_secs(5), "planned in {secs:?}");
    let kb: u64 = std::fs::read_to_string(&peak)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(kb / 1024 < 200, "peak RSS {} MB", kb / 1024);
    // and it planned something: one matrix cell per sequence
    assert!(String::from_utf8_lossy(&o.stdout).contains("\"shard\""));
}

/// #42 attacks 4, 5 and 7: explore's flags that once panicked, removed every bound, doubled the
/// work or passed green with no run: exit 2 before anything, naming the flag and what is valid.
#[test]
fn explore_refuses_unbounded_empty_and_doubled_inputs() {
    let cases: [(&[&str], &str); 11] = [
        (&["--random", "18446744073709551615"], "--random"),
        (&["--random", "100000000"], "--random"),
        (&["--budget", ""], "--budget"),
        (&["--budget", "runs=0"], "runs=0"),
        (&["--budget", "runs=1,runs=2"], "twice"),
        (&["--confirm", "1000"], "--confirm"),
        (&["--sequences", "o99-nope"], "no sequence `o99-nope`"),
        (&["--sequences", ""], "empty entry"),
        (
            &["--sequences", "o1-embedded-registry,o1-embedded-registry"],
            "twice",
        ),
        (&["--keys", "embedded-registry,embedded-registry"], "twice"),
        (&["--version", "v1.33.4+k3s1,v1.33.4+k3s1"], "twice"),
    ];
    for (args, want) in cases {
        let mut c = repro();
        c.args([
            "explore",
            "--topology",
            "etcd-split",
            "--emit",
            "github-matrix",
        ]);
        if !args.contains(&"--keys") {
            c.args(["--keys", "embedded-registry"]);
        }
        let o = run(c.args(args));
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?} lacks {want:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}: nothing emitted");
    }
}

/// #42 attack 6: a line break in a file's name cannot forge a line of `validate`'s errors: the
/// name is shown on one line (`\n`), every error line starts with the file.
#[test]
fn a_line_break_in_a_file_name_forges_no_error_line() {
    let tmp = tempfile::tempdir().unwrap();
    let name = tmp.path().join("x.yaml\nerror: all checks passed\n.yaml");
    std::fs::write(&name, "name: [unclosed\n").unwrap();
    let o = run(repro().arg("validate").arg(&name));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = stderr(&o);
    assert!(
        !err.lines()
            .any(|l| l.starts_with("error: all checks passed")),
        "{err}"
    );
    assert!(
        err.contains("x.yaml\\nerror: all checks passed\\n.yaml"),
        "{err}"
    );
}

/// #42 attack 7: two campaigns started in the same second shared one folder (campaign.json
/// overwritten, runs judged by the other). Four started at once (no engine: each stops at its
/// first run with exit 3) get a folder each, each holding its own campaign.json.
#[test]
fn campaigns_started_at_once_get_a_folder_each() {
    let results = tempfile::tempdir().expect("tmp");
    let children: Vec<std::process::Child> = (0..4)
        .map(|_| {
            repro()
                .args([
                    "explore",
                    "--topology",
                    "etcd-split",
                    "--keys",
                    "embedded-registry",
                ])
                .args(["--version", "v1.33.4+k3s1", "--sim", "--results"])
                .arg(results.path())
                .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn")
        })
        .collect();
    for mut c in children {
        assert_eq!(c.wait().expect("wait").code(), Some(3));
    }
    let mut names: Vec<String> = std::fs::read_dir(results.path())
        .expect("results")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 4, "{names:?}");
    for n in &names {
        let state = std::fs::read_to_string(results.path().join(n).join("campaign.json"))
            .expect("campaign.json");
        let v: serde_json::Value = serde_json::from_str(&state).expect("json");
        assert_eq!(v["name"], n.as_str(), "each folder holds its own campaign");
    }
}
