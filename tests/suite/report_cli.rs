//! `repro report` and `repro redact` as a user runs them: the real binary, exit codes, messages.

use std::path::Path;

use crate::repro::{Output, Repro};
use crate::util::{copy_dir, root};

/// `repro report <args>`.
fn report(args: &[&str], folder: &Path) -> Output {
    Repro::new().arg("report").args(args).arg(folder).run()
}

/// `repro redact <path> <args>`.
fn redact(path: &Path, args: &[&str]) -> Output {
    Repro::new().arg("redact").arg(path).args(args).run()
}

fn copy_fixture(to: &Path) {
    copy_dir(&root().join("tests/fixtures/run-etcd-split-buggy"), to);
}

#[test]
fn report_rerenders_every_output() {
    let tmp = tempfile::tempdir().expect("tmp");
    copy_fixture(tmp.path());
    report(&[], tmp.path())
        .code(0)
        .stdout_has("verdict: reproduced");
    for f in ["junit.xml", "report.md", "timeline.html", "bundle.tar.gz"] {
        assert!(tmp.path().join(f).is_file(), "{f} not written");
    }
}

#[test]
fn report_on_a_corrupt_result_exits_2_naming_file_line_and_column() {
    let tmp = tempfile::tempdir().expect("tmp");
    std::fs::write(
        tmp.path().join("result.json"),
        "{\n  \"schema_version\": 1,,\n}\n",
    )
    .expect("write");
    report(&[], tmp.path())
        .code(2)
        .stderr_has("result.json:2:23: invalid result.json: key must be a string");
}

#[test]
fn report_on_a_missing_folder_exits_2() {
    report(&[], Path::new("/nonexistent/results/x")).code(2);
}

#[test]
fn redact_writes_a_redacted_copy() {
    let tmp = tempfile::tempdir().expect("tmp");
    let f = tmp.path().join("config.yaml");
    std::fs::write(&f, "token: cli-secret-123\nsecrets-encryption: true\n").expect("write");
    let out = tmp.path().join("clean.yaml");
    redact(&f, &["--out", out.to_str().expect("utf-8")]).code(0);
    assert_eq!(
        std::fs::read_to_string(&out).expect("read"),
        "token: <REDACTED-1>\nsecrets-encryption: true\n"
    );
    assert!(
        std::fs::read_to_string(&f)
            .expect("read")
            .contains("cli-secret-123"),
        "input changed"
    );
}

#[test]
fn redact_with_an_explicit_secret_and_a_missing_path() {
    let tmp = tempfile::tempdir().expect("tmp");
    let f = tmp.path().join("notes.txt");
    std::fs::write(&f, "the value hunter2 was used\n").expect("write");
    redact(&f, &["--secret", "hunter2"]).code(0);
    assert_eq!(
        std::fs::read_to_string(&f).expect("read"),
        "the value <REDACTED-1> was used\n"
    );
    redact(Path::new("/nonexistent/file"), &[]).code(2);
}

/// `--github-annotations`: nothing for a run that went as asked; one `::error` per case that did
/// not pass otherwise, on the check's YAML line, with GitHub's escaping.
#[test]
fn github_annotations_point_at_the_check_lines() {
    let tmp = tempfile::tempdir().expect("tmp");
    copy_fixture(tmp.path());
    let a = report(&["--github-annotations"], tmp.path());
    a.code(0);
    assert!(a.stdout.is_empty(), "exit 0: no annotation");
    assert!(
        !tmp.path().join("junit.xml").exists(),
        "annotations do not re-render the folder"
    );
    let path = tmp.path().join("result.json");
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(
        &path,
        text.replacen("\"expect\": \"reproduced\"", "\"expect\": \"fixed\"", 1),
    )
    .expect("write");
    let a = report(&["--github-annotations"], tmp.path());
    let out = &a.code(0).stdout;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 5, "{out}");
    // The line is the expectation's own line in the check file, whatever the file's layout.
    let rest = lines[0]
        .strip_prefix("::error file=checks/etcd-split.yaml,line=")
        .unwrap_or_else(|| panic!("{out}"));
    let (line, rest) = rest.split_once(',').expect("line");
    let check = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("checks/etcd-split.yaml"),
    )
    .expect("check");
    let text = check
        .lines()
        .nth(line.parse::<usize>().expect("a number") - 1)
        .expect("line in file");
    assert!(
        text.trim_start().starts_with("etcd-2:") && text.contains("embedded-registry: up"),
        "line {line}: {text}"
    );
    assert!(rest.starts_with(
        "title=repro etcd-split on k3s v1.33.4+k3s1%3A step-1/etcd-2/embedded-registry::expected embedded-registry=up on etcd-2, observed down"
    ), "{out}");
    assert!(lines[4].contains(",title=repro etcd-split on k3s v1.33.4+k3s1%3A verdict::expected the outcome fixed, got reproduced"), "{out}");
}

/// A file named on the command line is read with a bound: `--versions /dev/zero` read 2.1 GB
/// in 2 s before; now it is exit 2 naming the file and what it is (issue #24).
#[test]
fn bisect_versions_from_a_device_is_refused_whole() {
    let t = std::time::Instant::now();
    Repro::new()
        .args(["bisect", "etcd-split", "--good", "v1.33.3+k3s1"])
        .args(["--bad", "v1.33.4+k3s1", "--versions", "/dev/zero"])
        .run()
        .code(2)
        .stderr_has("/dev/zero: error: cannot read the release list: a character device, not a regular file");
    assert!(t.elapsed() < std::time::Duration::from_secs(10));
}
