//! Agents as QA runs them (k3s #12816: 3 etcd-only, 1 control-plane-only, 1 worker): the
//! shipped `etcd-split-agent` topology under every shipped check, on a buggy and a fixed
//! release, gives the verdict `fixed-in` predicts; the agent is ready on the kubelet's
//! registration, which the stand-in prints after `Running kubelet`, as k3s's agent does.

use crate::runs::Run;

/// The shipped checks that fit the topology; `bootstrap-check` starts a deferred node this
/// topology does not defer, and is refused (the last test).
const CHECKS: &[&str] = &["etcd-split", "metrics-order", "metrics-right-order"];

fn run_with_agent(check: &str, version: &str) {
    let run = Run::check(check)
        .topology("etcd-split-agent")
        .sim()
        .version(version)
        .finish();
    // `--expect auto`: exit 0 is the verdict `fixed-in` predicts for the version.
    run.out.code(0);
    assert_eq!(
        run.result["topology"]["name"], "etcd-split-agent",
        "{check}"
    );
    let log = run.boot_log("agent-1", 1);
    let at = |needle: &str| {
        log.find(needle)
            .unwrap_or_else(|| panic!("agent-1 never printed {needle:?}:\n{log}"))
    };
    assert!(
        at("Starting k3s agent ") < at("Running kubelet")
            && at("Running kubelet") < at("Successfully registered node"),
        "agent-1's lines out of k3s's order:\n{log}"
    );
    assert!(!log.contains("k3s agent is up and running"), "{log}");
}

#[test]
fn every_check_on_the_qa_topology_with_an_agent_buggy() {
    for check in CHECKS {
        run_with_agent(check, "v1.33.4+k3s1");
    }
}

#[test]
fn every_check_on_the_qa_topology_with_an_agent_fixed() {
    for check in CHECKS {
        run_with_agent(check, "v1.33.5+k3s1");
    }
}

#[test]
fn a_check_that_does_not_fit_the_agent_topology_is_refused_with_the_reason() {
    let (out, results) = Run::check("bootstrap-check")
        .sim()
        .topology("etcd-split-agent")
        .output();
    out.code(2);
    let s = out.to_string();
    assert!(
        s.contains("does not fit topology `etcd-split-agent`") && s.contains("already running"),
        "{s}"
    );
    results.assert_untouched(&out);
}

/// #31: a topology whose agent joins a control-plane-only server, a step that restarts the
/// agent and expects `fatal: down` on it. No line a k3s agent prints can ever decide that (the
/// settle lines are servers'), so the run is refused at the expectation's position, exit 2,
/// before anything exists: no results folder, and the engine (a listener standing in for
/// `DOCKER_HOST`) is never even connected to.
#[test]
fn an_undecidable_expectation_is_refused_before_anything_is_created() {
    crate::docker::docker_ok();
    let root = crate::util::project(&["checks/signals.yaml", "topologies/etcd-split-agent.yaml"]);
    let broken = "tests/broken/checks/fatal-down-on-agent.yaml";
    std::fs::copy(
        crate::util::root().join(broken),
        root.path().join("checks/agent-fatal-down.yaml"),
    )
    .unwrap();
    let engine = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    engine.set_nonblocking(true).unwrap();
    let port = engine.local_addr().unwrap().port();
    let (out, results) = Run::check("agent-fatal-down")
        .env("DOCKER_HOST", format!("tcp://127.0.0.1:{port}"))
        .sim()
        .root(root.path())
        .output();
    let s = out.to_string();
    out.code(2);
    assert!(
        s.contains("checks/agent-fatal-down.yaml:16:16: error: `fatal: down` can never be decided on `agent-1`")
            && s.contains("help: a run would wait its whole --timeout for it"),
        "{s}"
    );
    assert!(
        matches!(engine.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the refused run connected to the engine: {s}"
    );
    results.assert_untouched(&out);
}
