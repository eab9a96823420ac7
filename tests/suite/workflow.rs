//! The nightly workflow stays thin and pinned: every action by a full commit SHA with its
//! version in a comment, and every command it runs is a `repro` subcommand or a script in this
//! repository that exists (the scripts and subcommands are tested in tests/suite/nightly.rs).
//! `.ci/run` validates the file against GitHub's schema with check-jsonschema.

use crate::repro::Repro;
use crate::util::root;

fn workflow() -> String {
    std::fs::read_to_string(root().join(".github/workflows/nightly.yml")).expect("nightly.yml")
}

#[test]
fn every_action_is_pinned_by_commit_sha_with_its_version() {
    for name in ["nightly.yml", "explore.yml"] {
        let text = std::fs::read_to_string(root().join(".github/workflows").join(name))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        pinned(&text);
    }
}

fn pinned(text: &str) {
    let uses: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim().trim_start_matches("- ").strip_prefix("uses: "))
        .collect();
    assert!(uses.len() >= 8, "{uses:?}");
    for u in uses {
        let (action, rest) = u.split_once('@').unwrap_or_else(|| panic!("{u}"));
        let (sha, comment) = rest
            .split_once(" # ")
            .unwrap_or_else(|| panic!("no version comment: {u}"));
        assert!(
            sha.len() == 40 && sha.chars().all(|c| c.is_ascii_hexdigit()),
            "{action} is not pinned by a full commit SHA: {u}"
        );
        assert!(comment.starts_with('v'), "{u}");
        assert!(
            action.starts_with("actions/"),
            "only GitHub's own actions: {u}"
        );
    }
}

#[test]
fn the_workflow_only_runs_repro_commands_and_repository_scripts() {
    let text = workflow();
    let mut scripts = 0;
    for word in text.split_whitespace() {
        if let Some(s) = word.strip_prefix("scripts/") {
            let path = root().join("scripts").join(s.trim_matches('"'));
            let meta =
                std::fs::metadata(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            use std::os::unix::fs::PermissionsExt;
            assert!(
                meta.permissions().mode() & 0o111 != 0,
                "{} is not executable",
                path.display()
            );
            scripts += 1;
        }
    }
    assert!(scripts >= 2, "the run and keep-alive scripts");
    let mut subcommands: Vec<&str> = Vec::new();
    for line in text.lines() {
        for prefix in ["bin/repro ", "./target/release/repro "] {
            if let Some((_, rest)) = line.split_once(prefix) {
                subcommands.push(rest.split_whitespace().next().unwrap_or_default());
            }
        }
        if line.contains("args=(matrix") {
            subcommands.push("matrix");
        }
    }
    for sub in ["merge", "nightly-issues", "matrix"] {
        assert!(
            subcommands.contains(&sub),
            "{sub} not used: {subcommands:?}"
        );
    }
    for sub in subcommands {
        if sub.starts_with('"') {
            continue; // "${args[@]}": the matrix line above
        }
        Repro::new().args([sub, "--help"]).run().code(0);
    }
}

/// The nightly's job `name`, up to the report job.
fn job<'a>(text: &'a str, name: &str) -> &'a str {
    let job = text
        .split(&format!("\n  {name}:\n"))
        .nth(1)
        .unwrap_or_else(|| panic!("a {name} job"));
    job.split("\n  report:\n").next().unwrap_or(job)
}

/// #9 §5: a real-k3s smoke job on a cgroup-v2 runner (ubuntu-24.04), which runs the script the
/// suite also runs with `--sim` (tests/e2e/run.rs) and uploads its results.
#[test]
fn a_real_k3s_smoke_job_runs_on_a_cgroup_v2_runner() {
    let text = workflow();
    let job = job(&text, "real-k3s-smoke");
    assert!(job.contains("runs-on: ubuntu-24.04"), "{job}");
    assert!(job.contains("scripts/real-k3s-smoke.sh"), "{job}");
    assert!(!job.contains("--sim"), "the nightly runs real k3s: {job}");
    assert!(job.contains("upload-artifact"), "{job}");
}

/// #19 item 5: a real-RKE2 smoke job on an Ubuntu runner with Docker (privileged containers,
/// systemd as PID 1), running scripts/real-rke2-smoke.sh on real nodes and uploading its results;
/// RKE2 versions are in the nightly's default matrix.
#[test]
fn a_real_rke2_smoke_job_and_rke2_cells() {
    let text = workflow();
    let job = job(&text, "real-rke2-smoke");
    assert!(job.contains("runs-on: ubuntu-24.04"), "{job}");
    assert!(
        job.contains("scripts/real-rke2-smoke.sh results-rke2-smoke"),
        "{job}"
    );
    assert!(
        !job.contains("real-rke2-smoke.sh results-rke2-smoke --sim"),
        "the nightly runs real rke2: {job}"
    );
    assert!(job.contains("upload-artifact"), "{job}");
    let defaults = text
        .lines()
        .find(|l| l.trim_start().starts_with("DEFAULT_K3S_VERSIONS:"))
        .expect("default versions");
    for v in [
        "v1.32.8+rke2r1",
        "v1.32.9+rke2r1",
        "v1.33.4+rke2r1",
        "v1.33.5+rke2r1",
    ] {
        assert!(defaults.contains(v), "{v} not in {defaults}");
    }
    // Every default version is one repro reads (the plan job would fail on a typo).
    let list = defaults.split('"').nth(1).expect("quoted list");
    let out = Repro::new()
        .args(["matrix", "--emit", "github-matrix", "--k3s-versions"])
        .arg(list.replace(",stable,latest", ""))
        .run();
    out.code(0);
    out.stdout_has(r#""k3s_version":"v1.32.9+rke2r1","expected":"fixed""#);
    out.stdout_has(r#""k3s_version":"v1.32.8+rke2r1","expected":"reproduced""#);
}
