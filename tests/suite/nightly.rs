#![allow(clippy::unwrap_used)] // tests panic on purpose when something is wrong

//! The nightly's moving parts, offline: `repro nightly-issues` against a fake `gh` on PATH
//! (tests/fixtures/bin/gh keeps issues in a folder and logs every call), night after night —
//! opened once, updated and not duplicated, closed when green, reopened (not duplicated) when
//! it fails again — plus the keep-alive and retry scripts the workflow runs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::fixtures::write_result;
use crate::util::{repro, root, text};

/// PATH with the fake `gh` (and anything else in `bin`) first.
fn path_with(bin: &Path) -> String {
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

struct FakeGh {
    _tmp: tempfile::TempDir,
    bin: PathBuf,
    state: PathBuf,
}

impl FakeGh {
    fn new() -> FakeGh {
        let tmp = tempfile::tempdir().unwrap();
        let bin = tmp.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::copy(root().join("tests/fixtures/bin/gh"), bin.join("gh")).unwrap();
        let state = tmp.path().join("gh-state");
        std::fs::create_dir_all(&state).unwrap();
        FakeGh {
            bin,
            state,
            _tmp: tmp,
        }
    }

    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.state.join("calls.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn count(&self, prefix: &str) -> usize {
        self.calls()
            .iter()
            .filter(|c| c.starts_with(prefix))
            .count()
    }

    fn issue(&self, n: u32, file: &str) -> String {
        std::fs::read_to_string(self.state.join(format!("issues/{n}/{file}")))
            .unwrap()
            .trim_end()
            .to_string()
    }

    fn issues(&self) -> usize {
        std::fs::read_dir(self.state.join("issues"))
            .map(|d| d.count())
            .unwrap_or(0)
    }

    /// `c` with the fake `gh` first on PATH.
    fn command(&self, mut c: Command) -> Command {
        c.env("PATH", path_with(&self.bin))
            .env("FAKE_GH_DIR", &self.state)
            .env_remove("REPRO_GH")
            .env_remove("GITHUB_RUN_ID");
        c
    }
}

/// A merged summary.json of one night, made the way the workflow makes it: run folders, then
/// `repro merge`. `cells` are (version, expected, verdict).
fn night(dir: &Path, name: &str, cells: &[(&str, &str, &str)]) -> PathBuf {
    let runs = dir.join(name).join("artifacts");
    for (version, expected, verdict) in cells {
        write_result(
            &runs.join(format!("results-etcd-split-{version}")),
            &format!("{name}-{version}"),
            version,
            expected,
            Some(verdict),
        );
    }
    let out = dir.join(name).join("merged");
    let o = repro()
        .arg("merge")
        .arg(&runs)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(0 | 1 | 4)), "{}", text(&o));
    out.join("summary.json")
}

fn issues_run(gh: &FakeGh, summary: &Path, run: u32) -> Output {
    let o = gh
        .command(repro())
        .arg("nightly-issues")
        .arg(summary)
        .args([
            "--run-url",
            &format!("https://github.com/o/r/actions/runs/{run}"),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    o
}

const TITLE: &str = "repro nightly: etcd-split on k3s v1.33";

#[test]
fn issues_are_opened_once_updated_closed_when_green_and_reopened() {
    let gh = FakeGh::new();
    let tmp = tempfile::tempdir().unwrap();
    // Night `n` of these cells: its merged summary, then `repro nightly-issues` on it.
    let nightly = |n: u32, cells: &[(&str, &str, &str)]| {
        let s = night(tmp.path(), &format!("n{n}"), cells);
        let o = issues_run(&gh, &s, n);
        (s, o)
    };

    // Night 1: v1.33.5 shows the bug although fixed-in says it has the fix.
    let (_, o) = nightly(
        1,
        &[
            ("v1.32.9+k3s1", "fixed", "fixed"),
            ("v1.33.4+k3s1", "reproduced", "reproduced"),
            ("v1.33.5+k3s1", "fixed", "reproduced"),
        ],
    );
    assert_eq!(gh.count("issue create"), 1, "{:?}", gh.calls());
    assert_eq!(gh.issues(), 1, "nothing for the green v1.32 line");
    assert_eq!(gh.issue(1, "title"), TITLE);
    assert_eq!(gh.issue(1, "labels"), "repro-nightly");
    assert_eq!(gh.count("label create repro-nightly"), 1);
    let body = gh.issue(1, "body");
    assert!(body.contains("| v1.33.5+k3s1 | fixed | reproduced | **REGRESSION** | artifact `results-etcd-split-v1.33.5+k3s1` |"), "{body}");
    assert!(
        body.contains("https://github.com/o/r/actions/runs/1#artifacts"),
        "{body}"
    );
    assert!(String::from_utf8_lossy(&o.stdout)
        .contains("etcd-split v1.33: opened https://github.com/o/r/issues/1"));

    // Night 2: the same: the one issue is updated (new run link), not duplicated, no comment.
    nightly(
        2,
        &[
            ("v1.33.4+k3s1", "reproduced", "reproduced"),
            ("v1.33.5+k3s1", "fixed", "reproduced"),
        ],
    );
    assert_eq!(gh.count("issue create"), 1, "{:?}", gh.calls());
    assert_eq!(gh.count("issue edit 1"), 1);
    assert_eq!(gh.count("issue comment"), 0);
    assert!(gh.issue(1, "body").contains("actions/runs/2#artifacts"));

    // Night 3: another release differs too: updated and commented (people hear of the change).
    nightly(
        3,
        &[
            ("v1.33.5+k3s1", "fixed", "reproduced"),
            ("v1.33.6+k3s1", "fixed", "reproduced"),
        ],
    );
    assert_eq!(gh.count("issue create"), 1);
    assert_eq!(gh.count("issue comment 1"), 1);
    assert!(gh.issue(1, "comments").contains("v1.33.6+k3s1=regression"));

    // Night 4: green: closed with a comment saying so.
    let (s, o) = nightly(
        4,
        &[
            ("v1.33.5+k3s1", "fixed", "fixed"),
            ("v1.33.6+k3s1", "fixed", "fixed"),
        ],
    );
    assert_eq!(gh.issue(1, "state"), "CLOSED");
    assert!(gh
        .issue(1, "comments")
        .contains("Green again in https://github.com/o/r/actions/runs/4"));
    assert!(String::from_utf8_lossy(&o.stdout).contains("closed #1"));

    // Night 5: green again: nothing to do, nothing written.
    let before = gh.calls().len();
    issues_run(&gh, &s, 5);
    let new: Vec<String> = gh.calls()[before..].to_vec();
    assert_eq!(
        new,
        ["issue list --label repro-nightly --state all --limit 500 --json number,title,state"]
    );

    // Night 6: an unexpected fix on the line: the closed issue is reopened, not duplicated.
    nightly(6, &[("v1.33.4+k3s1", "reproduced", "fixed")]);
    assert_eq!(gh.count("issue create"), 1, "{:?}", gh.calls());
    assert_eq!(gh.issue(1, "state"), "OPEN");
    assert!(gh.issue(1, "body").contains("**UNEXPECTED FIX**"));

    // Night 7: only inconclusive: the open issue is left as it is.
    let before = gh.calls().len();
    nightly(7, &[("v1.33.4+k3s1", "reproduced", "inconclusive")]);
    assert!(
        gh.calls()[before..]
            .iter()
            .all(|c| c.starts_with("issue list")),
        "{:?}",
        &gh.calls()[before..]
    );
    assert_eq!(gh.issue(1, "state"), "OPEN");
}

#[test]
fn dry_run_changes_nothing_and_gh_failures_exit_3() {
    let gh = FakeGh::new();
    let tmp = tempfile::tempdir().unwrap();
    let s = night(tmp.path(), "n1", &[("v1.33.5+k3s1", "fixed", "reproduced")]);
    let o = gh
        .command(repro())
        .args(["nightly-issues", "--dry-run"])
        .arg(&s)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout)
        .contains("(dry run) gh issue create --title repro nightly: etcd-split on k3s v1.33"));
    assert_eq!(gh.issues(), 0);

    // A gh that fails (no token, no network): exit 3 with gh's message.
    let o = gh
        .command(repro())
        .arg("nightly-issues")
        .arg(&s)
        .env("FAKE_GH_DIR", "")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("FAKE_GH_DIR is not set"),
        "{}",
        text(&o)
    );

    // Not a summary: exit 2 naming the file.
    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, "{}").unwrap();
    let o = gh
        .command(repro())
        .arg("nightly-issues")
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn keepalive_enables_the_workflow_through_the_api() {
    let gh = FakeGh::new();
    let o = gh
        .command(Command::new(root().join("scripts/nightly-keepalive.sh")))
        .env("GITHUB_REPOSITORY", "o/r")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(
        gh.calls(),
        ["api --method PUT repos/o/r/actions/workflows/nightly.yml/enable"]
    );
}

/// A fake `repro` whose exit codes come from a list, one per call; it writes a run folder per
/// call like the real one.
fn fake_repro(bin: &Path, codes: &str) -> PathBuf {
    let p = bin.join("fake-repro");
    std::fs::write(
        &p,
        format!(
            r#"#!/usr/bin/env bash
if [ "$1" = report ]; then echo "::error file=checks/x.yaml,line=1::from $3"; exit 0; fi
n=$(( $(cat "$0.count" 2>/dev/null || echo 0) + 1 )); echo $n > "$0.count"
echo "$*" >> "$0.log"
codes=({codes})
results=""; while [ $# -gt 0 ]; do [ "$1" = --results ] && results=$2; shift; done
mkdir -p "$results/run-$n"; echo '{{}}' > "$results/run-$n/result.json"
exit ${{codes[$((n-1))]}}
"#
        ),
    )
    .unwrap();
    Command::new("chmod").arg("+x").arg(&p).status().unwrap();
    p
}

#[test]
fn an_infrastructure_failure_is_retried_once_and_nothing_else_is() {
    for (codes, calls, exit) in [
        ("3 0", 2, 0),
        ("3 3", 2, 3),
        ("1 0", 1, 1),
        ("4 0", 1, 4),
        ("0", 1, 0),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let fake = fake_repro(tmp.path(), codes);
        let results = tmp.path().join("results");
        let o = Command::new(root().join("scripts/nightly-run.sh"))
            .args(["etcd-split", "v1.33.5+k3s1", "fixed"])
            .arg(&results)
            .env("REPRO", &fake)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(exit), "{codes}: {}", text(&o));
        let log = std::fs::read_to_string(format!("{}.log", fake.display())).unwrap();
        assert_eq!(log.lines().count(), calls, "{codes}: {log}");
        assert!(log.lines().all(|l| l
            == format!(
                "run etcd-split --k3s-version v1.33.5+k3s1 --expect fixed --progress never --results {}",
                results.display()
            )));
        // The run folders left in RESULTS are annotated, once each.
        let annotated = String::from_utf8_lossy(&o.stdout)
            .matches("::error ")
            .count();
        assert_eq!(annotated, 1, "{codes}: {}", text(&o));
        if calls == 2 {
            // The first attempt is kept apart; merge sees only the retry.
            assert!(Path::new(&format!(
                "{}-attempt-1/run-1/result.json",
                results.display()
            ))
            .is_file());
            let left: Vec<_> = std::fs::read_dir(&results).unwrap().collect();
            assert_eq!(left.len(), 1, "{codes}");
        }
    }
}

/// scripts/real-rke2-smoke.sh (the nightly's real-RKE2 job) cannot run offline here — the
/// stand-in does not play rke2 yet — so its argument handling is tested with a fake `repro`: the
/// four runs with their versions, extra arguments passed on, the worst exit code, exit 2 at once,
/// `--print` running nothing, and a misplaced flag refused.
#[test]
fn the_real_rke2_smoke_script_runs_the_four_cells_and_keeps_the_worst_code() {
    let script = root().join("scripts/real-rke2-smoke.sh");
    for (codes, calls, exit) in [
        ("0 0 0 0", 4, 0),
        ("0 1 0 3", 4, 3),
        ("4 0 1 0", 4, 1),
        ("2", 1, 2),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let fake = fake_repro(tmp.path(), codes);
        let results = tmp.path().join("results");
        let o = Command::new(&script)
            .arg(&results)
            .args(["--image", "repro.local/rke2-node:test"])
            .env("REPRO", &fake)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(exit), "{codes}: {}", text(&o));
        let log = std::fs::read_to_string(format!("{}.log", fake.display())).unwrap();
        let want: Vec<String> = [
            ("metrics-order", "v1.32.8+rke2r1", "reproduced"),
            ("metrics-order", "v1.32.9+rke2r1", "fixed"),
            ("etcd-split", "v1.32.8+rke2r1", "reproduced"),
            ("etcd-split", "v1.32.9+rke2r1", "fixed"),
        ]
        .iter()
        .take(calls)
        .map(|(c, v, e)| {
            format!(
                "run {c} --version {v} --expect {e} --results {} --progress never --image repro.local/rke2-node:test",
                results.display()
            )
        })
        .collect();
        assert_eq!(log.lines().collect::<Vec<_>>(), want, "{codes}");
    }

    let tmp = tempfile::tempdir().unwrap();
    let fake = fake_repro(tmp.path(), "0");
    let o = Command::new(&script)
        .args(["--print", "res", "--sim"])
        .env("REPRO", &fake)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).matches("== ").count(),
        4,
        "{}",
        text(&o)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("run etcd-split --version v1.32.9+rke2r1 --expect fixed --results res --progress never --sim"));
    assert!(
        !Path::new(&format!("{}.log", fake.display())).exists(),
        "--print ran repro"
    );

    let o = Command::new(&script)
        .arg("--sim")
        .env("REPRO", &fake)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("RESULTS_DIR comes before"),
        "{}",
        text(&o)
    );
    let o = Command::new(&script).arg("--help").output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("~3 GiB of memory per server"),
        "{}",
        text(&o)
    );
}

/// Through the real binary and a fake `gh` on PATH that records every argument and every body
/// file it is handed (#30): a merged summary.json whose cells' errors carry a URL password, a
/// token and a K10 token, a mention, a code fence and an HTML comment's end, and a `--run-url`
/// with a password. None of the secrets reaches any call, title, body or comment; the mention
/// and the comment's end do not reach the body as they are.
#[test]
fn no_secret_reaches_a_public_issue_through_gh() {
    let gh = FakeGh::new();
    let tmp = tempfile::tempdir().unwrap();
    let s = night(
        tmp.path(),
        "n1",
        &[
            ("v1.33.4+k3s1", "reproduced", "fixed"),
            ("v1.33.5+k3s1", "fixed", "reproduced"),
        ],
    );
    let k10 = "K10d1f0e8c2b4a6978563412f0e1d2c3b4a5968778695a4b3c2d1e0f9a8b7c6d5e4::server:4f9d2c7e1a8b3f60";
    let mut summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&s).unwrap()).unwrap();
    for c in summary["cells"].as_array_mut().unwrap() {
        c["error"] = serde_json::json!(format!(
            "pull https://bob:hunter2pass@mirror.local/x failed\n```\n--> token=s3cr3tTok3nValue {k10} @octocat <!-- x"
        ));
    }
    std::fs::write(&s, serde_json::to_string_pretty(&summary).unwrap()).unwrap();
    let o = gh
        .command(repro())
        .arg("nightly-issues")
        .arg(&s)
        .args([
            "--run-url",
            "https://runner:ghp_runUrlPassw0rd@github.com/o/r/actions/runs/7",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(gh.issues() >= 1, "{:?}", gh.calls());
    // Every file the fake gh kept: its call log (every argument) and each issue's title, body
    // and comments (every body file it was handed), and repro's own output.
    let mut public = text(&o);
    let mut stack = vec![gh.state.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                public.push_str(&std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    for secret in [
        "hunter2pass",
        "s3cr3tTok3nValue",
        &k10[3..40],
        "4f9d2c7e1a8b3f60",
        "ghp_runUrlPassw0rd",
    ] {
        assert!(!public.contains(secret), "{secret} in {public}");
    }
    for n in 1..=gh.issues() as u32 {
        let body = gh.issue(n, "body");
        assert!(!body.contains("@octocat"), "a mention in {body}");
        assert_eq!(body.matches("-->").count(), 1, "only the state's: {body}");
    }
}
