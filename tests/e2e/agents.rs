//! Agents as QA runs them (k3s #12816: 3 etcd-only, 1 control-plane-only, 1 worker): the
//! shipped `etcd-split-agent` topology under every shipped check, on a buggy and a fixed
//! release, gives the verdict `fixed-in` predicts; the agent is ready on the kubelet's
//! registration, which the stand-in prints after `Running kubelet`, as k3s's agent does.

use crate::sim_run as run;
use crate::util::{repro, text};

/// The shipped checks that fit the topology; `bootstrap-check` starts a deferred node this
/// topology does not defer, and is refused (the last test).
const CHECKS: &[&str] = &["etcd-split", "metrics-order", "metrics-right-order"];

fn run_with_agent(check: &str, version: &str) {
    let (out, r, dir, _t) = run(&[
        check,
        "--topology",
        "etcd-split-agent",
        "--version",
        version,
    ]);
    // `--expect auto`: exit 0 is the verdict `fixed-in` predicts for the version.
    assert_eq!(
        out.status.code(),
        Some(0),
        "{check} on {version}: {}",
        text(&out)
    );
    assert_eq!(r["topology"]["name"], "etcd-split-agent", "{check}");
    let log = std::fs::read_to_string(dir.join("nodes/agent-1/boot-1.log")).unwrap();
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
    let out = repro()
        .args([
            "run",
            "bootstrap-check",
            "--sim",
            "--topology",
            "etcd-split-agent",
        ])
        .output()
        .unwrap();
    let s = text(&out);
    assert_eq!(out.status.code(), Some(2), "{s}");
    assert!(
        s.contains("does not fit topology `etcd-split-agent`") && s.contains("already running"),
        "{s}"
    );
}
