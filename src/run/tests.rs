//! The runner on a scripted Docker: the order of its Docker calls, cleanup on Ctrl-C, and how
//! each way of ending becomes an exit code and a result.json. Fast, no Docker needed.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::fake::FakeDocker;
use super::*;
use crate::docker::DockerApi;

fn config(results: &Path, expect: Outcome) -> RunConfig {
    RunConfig {
        target: Target {
            version: Some("v1.33.5+k3s1".into()),
            ..Target::of("etcd-split", false, None)
        },
        expect: Expect::Outcome(expect),
        timeout: Duration::from_secs(20),
        // The settle rule decides `down` after this window: short, so the tests are fast.
        settle: Some(Duration::from_millis(20)),
        keep: false,
        image_archive: None,
        results: results.to_path_buf(),
        rebuild_sim: false,
        sim_seed: None,
        privileged: Privileged::Auto,
        host_check: true,
        mtu: None,
        argv: vec!["repro".into(), "run".into()],
        restore: None,
    }
}

async fn run_on(
    fake: Arc<FakeDocker>,
    cfg: &RunConfig,
    receivers: Vec<Arc<dyn Receiver>>,
    cancel: CancellationToken,
) -> RunEnd {
    let (sc, plan) = crate::cmd::common::resolve(None, &cfg.target).expect("shipped check");
    let docker: Arc<dyn DockerApi> = fake;
    let connect = Box::pin(async move { Ok(docker) });
    let ways = Ways {
        connect,
        render: crate::report::render_all_with,
        cancel,
    };
    execute_with(cfg, sc, plan, receivers, ways).await
}

/// A run of `cfg` on a fake engine whose k3s does what a fixed one does, uninterrupted.
async fn run_plain(cfg: &RunConfig) -> RunEnd {
    run_on(
        Arc::new(FakeDocker::default()),
        cfg,
        vec![],
        CancellationToken::new(),
    )
    .await
}

fn result_json(end: &RunEnd) -> serde_json::Value {
    let dir = end.dir.as_ref().expect("a results folder");
    let text = std::fs::read_to_string(dir.join(RESULT_FILE)).expect("result.json");
    serde_json::from_str(&text).expect("valid json")
}

/// The start/stop/upload calls, with the run id taken out of container names.
fn lifecycle(fake: &FakeDocker) -> Vec<String> {
    fake.calls()
        .into_iter()
        .filter(|c| c.starts_with("start ") || c.starts_with("stop ") || c.starts_with("remove "))
        .map(|c| {
            let (op, obj) = c.split_once(' ').unwrap_or((&c, ""));
            // `repro-<run id>-<node>`
            let node = match obj.split('-').collect::<Vec<_>>().as_slice() {
                ["repro", _, rest @ ..] => rest.join("-"),
                _ => obj.to_string(),
            };
            if op == "remove" {
                "remove".to_string()
            } else {
                format!("{op} {node}")
            }
        })
        .collect()
}

#[tokio::test]
async fn steps_run_in_the_plan_order_and_a_fixed_k3s_passes() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let fake = Arc::new(FakeDocker::default());
    let end = run_on(
        fake.clone(),
        &config(tmp.path(), Outcome::Fixed),
        vec![],
        CancellationToken::new(),
    )
    .await;
    assert!(end.error().is_none(), "{:?}", end.error());
    assert_eq!(end.outcome(), Some(Outcome::Fixed), "{:?}", end.verdict);
    assert_eq!(end.exit().code(), crate::exit::OK);
    let calls = lifecycle(&fake);
    // Cluster creation (#23): the init node, then etcd-2 and cp-1 (cp-1 needs only etcd-1, the
    // server it joins), then etcd-3 once etcd-2 is ready (one learner at a time). etcd-2 is on
    // the critical path and cp-1 is not: cp-1's start call waits for etcd-2's.
    assert_eq!(
        calls,
        [
            // the doctor's privileged trial (the fake's image asks for privileges), removed
            "start privileged-trial",
            "remove",
            "start etcd-1",
            "start etcd-2",
            "start cp-1",
            "start etcd-3",
            // step 1: restart [etcd-2, etcd-3] (two groups, in order)
            "stop etcd-2",
            "start etcd-2",
            "stop etcd-3",
            "start etcd-3",
            // step 2: restart [etcd-1]
            "stop etcd-1",
            "start etcd-1",
            // step 3: restart [etcd-2, etcd-3]
            "stop etcd-2",
            "start etcd-2",
            "stop etcd-3",
            "start etcd-3",
            "remove",
        ]
    );
    // Files are written before the start that reads them (beside the stop before it), and
    // etcd-3's edit of step 1 does not wait for etcd-2's restart.
    let calls = fake.calls();
    let at = |op: &str, node: &str, nth: usize| {
        (calls.iter().enumerate())
            .filter(|(_, c)| c.starts_with(op) && c.ends_with(&format!("-{node}")))
            .nth(nth)
            .map(|(i, _)| i)
            .unwrap_or_else(|| panic!("no {op}{node} #{nth}: {calls:#?}"))
    };
    // Upload 0 is the node's first files; 1 its step-1 edit. Start 1 is its first restart.
    assert!(
        at("upload ", "etcd-2", 1) < at("start ", "etcd-2", 1),
        "{calls:#?}"
    );
    assert!(
        at("upload ", "etcd-3", 1) < at("start ", "etcd-2", 1),
        "{calls:#?}"
    );
    assert!(
        at("upload ", "etcd-3", 1) < at("start ", "etcd-3", 1),
        "{calls:#?}"
    );
    let r = result_json(&end);
    assert_eq!(r["exit_code"], 0);
    assert_eq!(r["verdict"]["outcome"], "fixed");
    assert_eq!(r["steps"].as_array().map(Vec::len), Some(3));
    // The token never reaches a file of ours.
    let inspect = std::fs::read_to_string(
        end.dir
            .as_ref()
            .expect("dir")
            .join("nodes/etcd-1/inspect.json"),
    )
    .expect("inspect.json");
    assert!(inspect.contains("K3S_TOKEN=<REDACTED-1>"), "{inspect}");
}

#[tokio::test]
async fn asking_for_the_other_outcome_exits_1() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let fake = Arc::new(FakeDocker::default());
    let cfg = config(tmp.path(), Outcome::Reproduced);
    let end = run_on(fake, &cfg, vec![], CancellationToken::new()).await;
    assert_eq!(end.outcome(), Some(Outcome::Fixed));
    assert_eq!(end.exit().code(), crate::exit::OUTCOME_DIFFERS);
    assert_eq!(result_json(&end)["exit_code"], 1);
}

#[tokio::test]
async fn auto_expects_what_fixed_in_predicts_and_each_observation_says_what_was_asked() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut cfg = config(tmp.path(), Outcome::Fixed);
    cfg.expect = Expect::Auto;
    // v1.33.5 has the fix: auto asks for `fixed`, and the fake k3s is a fixed one.
    let end = run_plain(&cfg).await;
    assert_eq!(end.exit().code(), crate::exit::OK);
    let r = result_json(&end);
    assert_eq!(r["expect"], "fixed");
    assert!(r["expect_because"]
        .as_str()
        .unwrap_or("")
        .contains("v1.33.5+k3s1"));
    let o = &r["steps"][0]["observations"][2];
    assert_eq!(
        (o["node"].as_str(), o["signal"].as_str()),
        (Some("etcd-2"), Some("embedded-registry"))
    );
    assert_eq!(o["asked"], "up");
    // v1.33.4 predates it: auto asks for `reproduced`; a fixed k3s then differs (exit 1),
    // and each observation asks for the bug's value.
    cfg.target.version = Some("v1.33.4+k3s1".into());
    let end = run_plain(&cfg).await;
    assert_eq!(end.exit().code(), crate::exit::OUTCOME_DIFFERS);
    let r = result_json(&end);
    assert_eq!(r["expect"], "reproduced");
    assert_eq!(r["steps"][0]["observations"][2]["asked"], "down");
}

#[tokio::test]
async fn interrupt_mid_run_removes_the_cluster_and_exits_130() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let fake = Arc::new(FakeDocker::default());
    let cancel = CancellationToken::new();
    // Ctrl-C as step 2 begins.
    let on_step = cancel.clone();
    let interrupter: Arc<dyn Receiver> = Arc::new(move |e: &RunEvent<'_>| {
        if let RunEvent::Phase(Phase::Step { index: 2, .. }) = e {
            on_step.cancel();
        }
    });
    let cfg = config(tmp.path(), Outcome::Fixed);
    let end = run_on(fake.clone(), &cfg, vec![interrupter], cancel).await;
    assert_eq!(end.exit().code(), crate::exit::INTERRUPTED);
    assert!(matches!(end.error(), Some(RunError::Interrupted)));
    assert_eq!(lifecycle(&fake).last().map(String::as_str), Some("remove"));
    let r = result_json(&end);
    assert_eq!(r["exit_code"], 130);
    assert_eq!(
        r["steps"].as_array().map(Vec::len),
        Some(1),
        "step 1 is kept"
    );
}

#[tokio::test]
async fn a_failing_docker_call_exits_3_naming_it_and_still_cleans_up() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let fake = Arc::new(FakeDocker {
        fail: Some(("start", "-etcd-2".into())),
        ..Default::default()
    });
    let cfg = config(tmp.path(), Outcome::Fixed);
    let end = run_on(fake.clone(), &cfg, vec![], CancellationToken::new()).await;
    assert_eq!(end.exit().code(), crate::exit::INFRA);
    let err = end.error().map(ToString::to_string).unwrap_or_default();
    assert!(
        err.contains("failed to start") && err.contains("etcd-2"),
        "{err}"
    );
    assert_eq!(lifecycle(&fake).last().map(String::as_str), Some("remove"));
    let r = result_json(&end);
    assert_eq!(r["exit_code"], 3);
    assert!(r["verdict"].is_null());
    assert!(r["error"].as_str().unwrap_or("").contains("etcd-2"));
}

#[tokio::test]
async fn a_node_never_ready_exits_3_with_its_last_lines() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let fake = Arc::new(FakeDocker {
        never_ready: ["etcd-3".to_string()].into(),
        ..Default::default()
    });
    let mut cfg = config(tmp.path(), Outcome::Fixed);
    cfg.timeout = Duration::from_millis(300);
    let end = run_on(fake, &cfg, vec![], CancellationToken::new()).await;
    assert_eq!(end.exit().code(), crate::exit::INFRA);
    let err = end.error().map(ToString::to_string).unwrap_or_default();
    assert!(
        err.contains("etcd-3 (boot 1) was not ready within 300ms"),
        "{err}"
    );
    assert!(err.contains("Starting k3s"), "last lines quoted: {err}");
}

#[tokio::test]
async fn a_node_dying_during_setup_is_inconclusive() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let fake = Arc::new(FakeDocker {
        dies: ["etcd-2".to_string()].into(),
        ..Default::default()
    });
    let cfg = config(tmp.path(), Outcome::Fixed);
    let end = run_on(fake, &cfg, vec![], CancellationToken::new()).await;
    assert!(end.error().is_none());
    assert_eq!(end.outcome(), Some(Outcome::Inconclusive));
    assert_eq!(end.exit().code(), crate::exit::INCONCLUSIVE);
    let why = end.why().unwrap_or_default();
    assert!(
        why.contains("etcd-2 died") && why.contains("scripted death"),
        "{why}"
    );
}

#[tokio::test]
async fn an_unreachable_engine_still_leaves_a_result() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let cfg = config(tmp.path(), Outcome::Fixed);
    let (sc, plan) = crate::cmd::common::resolve(None, &cfg.target).expect("shipped check");
    let connect = Box::pin(async {
        Err(crate::docker::DockerError::Unreachable {
            endpoint: "unix:///nowhere".into(),
            reason: "scripted".into(),
        })
    });
    let ways = Ways {
        connect,
        render: crate::report::render_all_with,
        cancel: CancellationToken::new(),
    };
    let end = execute_with(&cfg, sc, plan, vec![], ways).await;
    assert_eq!(end.exit().code(), crate::exit::INFRA);
    let r = result_json(&end);
    assert_eq!(r["exit_code"], 3);
    assert!(r["error"]
        .as_str()
        .unwrap_or("")
        .contains("unix:///nowhere"));
}

#[tokio::test]
async fn an_unwritable_results_folder_exits_3_naming_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let blocker = tmp.path().join("not-a-folder");
    std::fs::write(&blocker, "").expect("write");
    let fake = Arc::new(FakeDocker::default());
    let cfg = config(&blocker, Outcome::Fixed);
    let end = run_on(fake.clone(), &cfg, vec![], CancellationToken::new()).await;
    assert_eq!(end.exit().code(), crate::exit::INFRA);
    assert!(end.dir.is_none());
    let err = end.error().map(ToString::to_string).unwrap_or_default();
    assert!(
        err.contains("cannot write") && err.contains("not-a-folder"),
        "{err}"
    );
    assert!(
        fake.calls().is_empty(),
        "nothing was created: {:?}",
        fake.calls()
    );
}

#[tokio::test]
async fn receivers_hear_every_step_and_the_end() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let heard = Arc::new(std::sync::Mutex::new(Vec::new()));
    let h = heard.clone();
    let listener: Arc<dyn Receiver> = Arc::new(move |e: &RunEvent<'_>| {
        let what = match e {
            RunEvent::StepDone { step, .. } => format!("step {} done", step.index),
            RunEvent::Finished(end) => format!("finished {}", end.exit().code()),
            _ => return,
        };
        h.lock().unwrap_or_else(|p| p.into_inner()).push(what);
    });
    let cfg = config(tmp.path(), Outcome::Fixed);
    run_on(
        Arc::new(FakeDocker::default()),
        &cfg,
        vec![listener],
        CancellationToken::new(),
    )
    .await;
    assert_eq!(
        *heard.lock().unwrap_or_else(|p| p.into_inner()),
        ["step 1 done", "step 2 done", "step 3 done", "finished 0"]
    );
}

/// A build under test is copied into every node after its files and before its first start,
/// and result.json records it.
#[tokio::test]
async fn a_build_under_test_is_copied_into_every_node_before_its_start() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bin = tmp.path().join("k3s");
    std::fs::write(&bin, b"\x7fELF\0v1.33.5+k3s1\0").expect("write");
    let mut cfg = config(&tmp.path().join("results"), Outcome::Fixed);
    cfg.target.version = None;
    cfg.target.k3s_binary = Some(bin.clone());
    crate::cmd::common::prepare_build(&mut cfg.target, false)
        .await
        .expect("a build");
    let fake = Arc::new(FakeDocker::default());
    let end = run_on(fake.clone(), &cfg, vec![], CancellationToken::new()).await;
    assert!(end.error().is_none(), "{:?}", end.error());
    let calls = fake.calls();
    for node in ["etcd-1", "etcd-2", "etcd-3", "cp-1"] {
        let at = |op: &str| {
            calls
                .iter()
                .position(|c| c.starts_with(op) && c.ends_with(&format!("-{node}")))
                .unwrap_or_else(|| panic!("no {op} of {node}: {calls:?}"))
        };
        assert!(at("upload ") < at("upload_executable "), "{calls:?}");
        assert!(at("upload_executable ") < at("start "), "{calls:?}");
    }
    let r = result_json(&end);
    assert_eq!(r["build"]["reported"], "v1.33.5+k3s1");
    assert_eq!(r["build"]["installed_at"], "/bin/k3s");
    assert_eq!(r["build"]["path"], bin.display().to_string());
    assert_eq!(r["k3s"]["version"], "v1.33.5+k3s1");
}

/// The nodes' `-v` must be the build's version: an image that runs its binary from elsewhere
/// than where the build was copied ends the run (exit 3) instead of judging the wrong k3s.
#[tokio::test]
async fn a_build_the_nodes_do_not_run_ends_the_run() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bin = tmp.path().join("k3s");
    std::fs::write(&bin, b"\x7fELF\0v1.33.5+k3s1\0").expect("write");
    let mut cfg = config(&tmp.path().join("results"), Outcome::Fixed);
    cfg.target.version = None;
    cfg.target.k3s_binary = Some(bin);
    crate::cmd::common::prepare_build(&mut cfg.target, false)
        .await
        .expect("a build");
    run_where_nodes_say(
        &cfg,
        "k3s version v1.33.4+k3s1 (abcdef12)\ngo version go1.24.5\n",
        Some("`k3s -v` there says `v1.33.4+k3s1`, the build carries v1.33.5+k3s1 (copied to /bin/k3s)"),
    )
    .await;
    run_where_nodes_say(
        &cfg,
        "k3s version v1.33.5+k3s1 (abcdef12)\ngo version go1.24.5\n",
        None,
    )
    .await;
}

/// Runs `cfg` on nodes whose `k3s -v` prints `says`. With `refused` (what the error must say),
/// the run ends with exit 3, no verdict and its nodes removed; without, it gives `fixed`.
async fn run_where_nodes_say(cfg: &RunConfig, says: &str, refused: Option<&str>) {
    let fake = Arc::new(FakeDocker {
        exec_output: says.to_string(),
        ..FakeDocker::default()
    });
    let end = run_on(fake.clone(), cfg, vec![], CancellationToken::new()).await;
    match refused {
        Some(why) => {
            let e = end.error().expect("an error").to_string();
            assert!(e.contains(why), "{e}");
            assert_eq!(end.exit().code(), crate::exit::INFRA);
            assert!(end.outcome().is_none());
            assert!(fake.calls().iter().any(|c| c.starts_with("remove ")));
        }
        None => {
            assert!(end.error().is_none(), "{:?}", end.error());
            assert_eq!(end.outcome(), Some(Outcome::Fixed));
        }
    }
}

/// The version of record must be what the nodes run, for every image (not only builds under
/// test): a node whose `-v` prints another release ends the run (exit 3) naming both (#30, #32).
#[tokio::test]
async fn nodes_that_run_another_version_than_the_one_of_record_end_the_run() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // config(): the version of record is v1.33.5+k3s1.
    let cfg = config(&tmp.path().join("results"), Outcome::Fixed);
    for (says, reported) in [
        (
            "k3s version v1.33.4+k3s1 (abcdef12)\ngo version go1.24.5\n",
            Some("v1.33.4+k3s1"),
        ),
        ("k3s version dev (HEAD)\ngo version go1.24.5\n", Some("dev")),
        (
            "k3s version v1.33.5+k3s1 (abcdef12)\ngo version go1.24.5\n",
            None,
        ),
    ] {
        let why =
            reported.map(|r| format!("`k3s -v` on etcd-1 says {r}, the run is of v1.33.5+k3s1"));
        run_where_nodes_say(&cfg, says, why.as_deref()).await;
    }
}

/// The re-run line names every input that chose the build, under the flag a user types today,
/// each word shell-quoted (#30: `--k3s-binary 'a $(touch X)'` ran `touch` when pasted).
#[tokio::test]
async fn the_rerun_line_is_exact_and_shell_quoted() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut cfg = config(&tmp.path().join("results"), Outcome::Fixed);
    cfg.target.image = Some("registry.local:5000/k3s:v1.33.5-k3s1".into());
    cfg.target.topology = Some("it's $(touch X)".into());
    let fake = Arc::new(FakeDocker::default());
    let (sc, plan) = crate::cmd::common::resolve(
        None,
        &Target {
            topology: None,
            ..cfg.target.clone()
        },
    )
    .expect("shipped check");
    let docker: Arc<dyn DockerApi> = fake;
    let ways = Ways {
        connect: Box::pin(async move { Ok(docker) }),
        render: crate::report::render_all_with,
        cancel: CancellationToken::new(),
    };
    let end = execute_with(&cfg, sc, plan, vec![], ways).await;
    let r = result_json(&end);
    assert_eq!(
        r["rerun"],
        r#"repro run etcd-split --version v1.33.5+k3s1 --topology 'it'\''s $(touch X)' --image registry.local:5000/k3s:v1.33.5-k3s1 --expect fixed"#
    );
}

#[test]
fn shell_words_read_back_unchanged() {
    use super::record::shell_quote;
    assert_eq!(shell_quote("v1.33.5+k3s1"), "v1.33.5+k3s1");
    assert_eq!(shell_quote("/tmp/a b"), "'/tmp/a b'");
    assert_eq!(shell_quote(""), "''");
    assert_eq!(shell_quote("a $(touch X)"), "'a $(touch X)'");
    assert_eq!(shell_quote("it's"), r"'it'\''s'");
    // Read back by a real shell.
    for w in ["it's $(touch X)", "`x`;\n|&", "plain"] {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf %s {}", shell_quote(w)))
            .output()
            .expect("sh");
        assert_eq!(String::from_utf8_lossy(&out.stdout), w);
    }
}

/// `--keep` on real k3s (#32): the first API server's kubeconfig lands in the results folder,
/// its owner's alone, its server the node's address on the run's network. (The fake answers
/// every exec alike: `k3s -v` and the kubeconfig's `cat` read the same text.)
#[tokio::test]
async fn a_kept_real_cluster_leaves_its_kubeconfig() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().expect("tempdir");
    let fake = Arc::new(FakeDocker {
        exec_output: "k3s version v1.33.5+k3s1 (abcdef12)\ngo version go1.24.5\nclusters:\n- cluster:\n    server: https://127.0.0.1:6443\n  name: default\n".into(),
        ..FakeDocker::default()
    });
    let cfg = RunConfig {
        keep: true,
        ..config(tmp.path(), Outcome::Fixed)
    };
    let end = run_on(fake, &cfg, vec![], CancellationToken::new()).await;
    assert!(end.error().is_none(), "{:?}", end.error());
    let path = end
        .dir
        .as_ref()
        .expect("a results folder")
        .join(kept::KUBECONFIG_FILE);
    let text = std::fs::read_to_string(&path).expect("kubeconfig.yaml");
    // cp-1, the first node serving the API, is the plan's fourth: .13 on the run's /24.
    let server = regex::Regex::new(r"(?m)^    server: https://10\.213\.\d+\.13:6443$").unwrap();
    assert!(server.is_match(&text), "{text}");
    let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}
