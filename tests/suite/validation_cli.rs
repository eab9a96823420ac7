//! `repro report --validation <buggy-run> <fixed-run>`: the comment k3s QA posts when closing an
//! issue, from the two fixture runs (etcd-split on v1.33.4+k3s1 reproduced, on v1.33.5+k3s1 fixed).

use crate::repro::Repro;
use crate::util::{copy_dir, root};

const BUGGY: &str = "tests/fixtures/run-etcd-split-buggy";
const FIXED: &str = "tests/fixtures/run-etcd-split-fixed";

#[test]
fn validation_comment_of_a_buggy_and_a_fixed_run() {
    let out = Repro::new()
        .args(["report", "--validation", BUGGY, FIXED])
        .run();
    out.code(0);
    snap!("validation-etcd-split", out);
}

/// The sections QA's validation comments have (k3s #12816, #12817), in their order.
#[test]
fn validation_comment_has_the_qa_sections_in_order() {
    let out = Repro::new()
        .args(["report", "--validation", BUGGY, FIXED])
        .run();
    out.code(0);
    let mut at = 0;
    for heading in [
        "### Validated on v1.33.5+k3s1\n",
        "## Environment Details\n",
        "*Infrastructure*\n",
        "*Node(s) CPU architecture, OS, and Version:*\n",
        "*Cluster Configuration:*\n",
        "*Config.yaml:*",
        "## Testing Steps\n",
        "**Replication Results:**\n- k3s version used for replication:\n\n```\n$ k3s -v\nk3s version v1.33.4+k3s1 (abcdef12)\ngo version go1.24.5\n```",
        "**Validation Results:**\n- k3s version used for validation:\n\n```\n$ k3s -v\nk3s version v1.33.5+k3s1 (fedcba98)\n",
        "**Observations:**\n",
        "**Re-run:**\n\n```sh\nrepro run etcd-split --k3s-version v1.33.4+k3s1 --expect reproduced\nrepro run etcd-split --k3s-version v1.33.5+k3s1 --expect fixed\n```",
    ] {
        let found = out.stdout[at..]
            .find(heading)
            .unwrap_or_else(|| panic!("{heading:?} missing after byte {at}:\n{}", out.stdout));
        at += found + heading.len();
    }
    // The observation that tells the two versions apart, side by side.
    assert!(out.stdout.contains(
        "| 1 | etcd-2 | embedded-registry | up | **down** (the bug, boot 2) | up (boot 2) |"
    ));
    // Every node's config.yaml, and no token.
    for node in [
        "# etcd-1\ncluster-init: true",
        "# etcd-2\nserver: \"https://etcd-1:6443\"",
        "# cp-1\n",
    ] {
        assert!(out.stdout.contains(node), "{node:?}");
    }
    assert!(!out.stdout.contains("9c1f2e7a4b8d3f60e5a2c7b91d4f8e03"));
}

/// Given the runs the wrong way round, nothing is written: the runs are refused (exit 2), saying
/// which is which and why (#32: a complete "Not validated" comment with exit 1 read as a finding).
#[test]
fn swapped_runs_are_refused_saying_which() {
    let out = Repro::new()
        .args(["report", "--validation", FIXED, BUGGY])
        .run();
    out.code(2);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    assert!(
        out.stderr.contains(&format!(
            "error: swapped runs: `{FIXED}` (v1.33.5+k3s1) was given as the buggy run and `{BUGGY}` (v1.33.4+k3s1) as the fixed one, but v1.33.5+k3s1 is at or past the check's fixed-in"
        )),
        "{}",
        out.stderr
    );
}

/// Two runs of one version (the same folder twice, or two runs of it) are duplicates: exit 2.
#[test]
fn duplicate_runs_are_refused() {
    let out = Repro::new()
        .args(["report", "--validation", BUGGY, BUGGY])
        .run();
    out.code(2);
    assert!(
        out.stderr.contains(&format!(
            "error: duplicate runs: `{BUGGY}` and `{BUGGY}` are all runs of v1.33.4+k3s1"
        )),
        "{}",
        out.stderr
    );
}

/// The README's step 3 with a glob that matches two runs of the buggy version: the newest of each
/// version counts, and the older one is named as set aside.
#[test]
fn several_runs_of_a_version_count_as_the_newest() {
    let tmp = tempfile::tempdir().expect("tmp");
    let older = tmp.path().join("older");
    copy_dir(&root().join(BUGGY), &older);
    let path = older.join("result.json");
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(
        &path,
        text.replacen(
            "\"started_at\": \"2026-11-30T09:00:00.011000000Z\"",
            "\"started_at\": \"2026-11-29T09:00:00.011000000Z\"",
            1,
        )
        .replacen("\"run_id\": \"a1b2c3d4\"", "\"run_id\": \"0ld0ld00\"", 1),
    )
    .expect("write");
    let out = Repro::new()
        .args(["report", "--validation"])
        .arg(older.to_string_lossy())
        .args([BUGGY, FIXED])
        .redact(tmp.path().to_string_lossy(), "[TMP]")
        .run();
    out.code(0);
    assert!(
        out.stderr.contains(&format!(
            "warning: [TMP]/older is an older run of v1.33.4+k3s1 than {BUGGY}: using the newest"
        )),
        "{}",
        out.stderr
    );
    assert!(out
        .stdout
        .contains("from runs a1b2c3d4 (buggy) and e5f6a7b8 (fixed)"));
    // Three versions are not a pair.
    let out = Repro::new()
        .args([
            "report",
            "--validation",
            BUGGY,
            FIXED,
            "tests/fixtures/run-rke2-etcd-split-fixed",
        ])
        .run();
    out.code(2);
    assert!(
        out.stderr.contains("the runs are of 3 versions"),
        "{}",
        out.stderr
    );
}

/// A pair of different distributions is refused (#30: an RKE2 buggy run and a k3s fixed run
/// gave "Validated on v1.33.5+k3s1").
#[test]
fn runs_of_different_distributions_are_refused() {
    let out = Repro::new()
        .args([
            "report",
            "--validation",
            "tests/fixtures/run-rke2-etcd-split-buggy",
            FIXED,
        ])
        .run();
    out.code(2);
    assert!(
        out.stderr
            .contains("the runs are of different distributions (rke2 and k3s)"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty());
}

/// On the stand-in the heading itself says so: quoted alone it must not claim real k3s.
#[test]
fn a_stand_in_pair_says_so_in_the_heading() {
    let tmp = tempfile::tempdir().expect("tmp");
    let mut dirs = Vec::new();
    for (name, src) in [("buggy", BUGGY), ("fixed", FIXED)] {
        let d = tmp.path().join(name);
        copy_dir(&root().join(src), &d);
        let path = d.join("result.json");
        let text = std::fs::read_to_string(&path).expect("read");
        std::fs::write(
            &path,
            text.replacen("\"stand_in\": false", "\"stand_in\": true", 1),
        )
        .expect("write");
        dirs.push(d.to_string_lossy().to_string());
    }
    let out = Repro::new()
        .args(["report", "--validation", &dirs[0], &dirs[1]])
        .run();
    out.code(0);
    assert!(
        out.stdout
            .contains("\n### Validated on v1.33.5+k3s1 (repro stand-in, not real k3s)\n"),
        "{}",
        out.stdout
    );
}

#[test]
fn runs_of_different_checks_or_missing_folders_exit_2() {
    let tmp = tempfile::tempdir().expect("tmp");
    copy_dir(&root().join(FIXED), tmp.path());
    let path = tmp.path().join("result.json");
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(
        &path,
        text.replacen("\"name\": \"etcd-split\"", "\"name\": \"metrics-order\"", 1),
    )
    .expect("write");
    let out = Repro::new()
        .args(["report", "--validation", BUGGY])
        .arg(tmp.path().to_string_lossy())
        .redact(tmp.path().to_string_lossy(), "[FIXED]")
        .run();
    out.code(2);
    assert!(
        out.stderr
            .contains("the runs are of different checks (`etcd-split` and `metrics-order`)"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty());
    let out = Repro::new()
        .args(["report", "--validation", BUGGY, "/nonexistent/run"])
        .run();
    out.code(2);
    assert!(
        out.stderr
            .contains("/nonexistent/run: not a results folder"),
        "{}",
        out.stderr
    );
    // One folder is not a pair.
    Repro::new()
        .args(["report", "--validation", BUGGY])
        .run()
        .code(2);
}

#[test]
fn out_writes_the_comment_to_a_file() {
    let tmp = tempfile::tempdir().expect("tmp");
    let file = tmp.path().join("comment.md");
    let out = Repro::new()
        .args(["report", "--validation", BUGGY, FIXED, "--out"])
        .arg(file.to_string_lossy())
        .run();
    out.code(0);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    let text = std::fs::read_to_string(&file).expect("written");
    assert!(text.contains("### Validated on v1.33.5+k3s1"));
}

/// An RKE2 pair (etcd-split on v1.32.5+rke2r1 and v1.32.9-rc1+rke2r1) gets RKE2 QA's comment
/// (rancher/rke2#8876: "# Validated on v1.32.9-rc1+rke2r1", `rke2 -v`, the node list), and the
/// reversed pair is refused (exit 2).
#[test]
fn an_rke2_pair_gets_rke2_qa_s_comment() {
    const RKE2_BUGGY: &str = "tests/fixtures/run-rke2-etcd-split-buggy";
    const RKE2_FIXED: &str = "tests/fixtures/run-rke2-etcd-split-fixed";
    let out = Repro::new()
        .args(["report", "--validation", RKE2_BUGGY, RKE2_FIXED])
        .run();
    out.code(0);
    let o = &out.stdout;
    assert!(o.contains("\n# Validated on v1.32.9-rc1+rke2r1\n"), "{o}");
    assert!(o.contains("### Validation\n```\n$ rke2 -v\nrke2 version v1.32.9-rc1+rke2r1 (e6934a48249709f918e7cf793fb3016b0c29f3d9)\n"), "{o}");
    snap!("validation-rke2-etcd-split", out);
    let out = Repro::new()
        .args(["report", "--validation", RKE2_FIXED, RKE2_BUGGY])
        .run();
    out.code(2);
    assert!(
        out.stderr.contains("error: swapped runs: "),
        "{}",
        out.stderr
    );
}
