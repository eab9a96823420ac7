//! etcd's learner limit on real stand-in containers (#21): two etcd joiners started at once
//! race for etcd's one learner slot. The second is refused with etcd's text and retries as k3s
//! does (`Waiting for other members to finish joining etcd cluster: etcdserver: too many
//! learner members in cluster`), the leader promotes each (`Promoted learner …`), each is ready
//! only once promoted, and the run still ends with the expected verdict.

use crate::runs::Run;
use crate::util::project;

const TOPOLOGY: &str = "name: etcd-split-race
description: etcd-split with both etcd joiners deferred, so one step starts them at once
source: https://github.com/k3s-io/k3s/issues/12794
k3s-version: v1.33.4+k3s1
nodes:
  - {name: etcd-1, role: etcd, init: true}
  - {name: etcd-2, role: etcd, join: etcd-1, deferred: true}
  - {name: etcd-3, role: etcd, join: etcd-1, deferred: true}
  - {name: cp-1, role: control-plane, join: etcd-1}
";

const CHECK: &str = "name: learner-race
topology: etcd-split-race
issue: https://github.com/k3s-io/k3s/issues/12794
summary: two etcd joiners started at once both join, one learner at a time
steps:
  - name: start etcd-2 and etcd-3 at once
    start: [etcd-2, etcd-3]
    expect:
      etcd-2: {ready: up}
      etcd-3: {ready: up}
";

const REFUSED: &str = "Waiting for other members to finish joining etcd cluster: etcdserver: too many learner members in cluster";

#[test]
fn two_joins_at_once_one_is_refused_then_both_are_promoted_and_ready() {
    let root = project(&["checks/signals.yaml"]);
    std::fs::create_dir_all(root.path().join("topologies")).unwrap();
    std::fs::write(
        root.path().join("topologies/etcd-split-race.yaml"),
        TOPOLOGY,
    )
    .unwrap();
    std::fs::write(root.path().join("checks/learner-race.yaml"), CHECK).unwrap();
    let run = Run::check("learner-race").sim().root(root.path()).finish();
    run.out.code(0);
    assert_eq!(run.outcome(), "fixed");
    let log = |node: &str| run.boot_log(node, 1);
    let (two, three, leader) = (log("etcd-2"), log("etcd-3"), log("etcd-1"));
    // Exactly one of the two waited for the other's promotion.
    let refused: Vec<&str> = [("etcd-2", &two), ("etcd-3", &three)]
        .iter()
        .filter(|(_, l)| l.contains(REFUSED))
        .map(|(n, _)| *n)
        .collect();
    assert_eq!(
        refused.len(),
        1,
        "refused: {refused:?}\netcd-2:\n{two}\netcd-3:\n{three}"
    );
    for node in ["etcd-2", "etcd-3"] {
        assert!(
            leader.contains(&format!("Promoted learner {node}-")),
            "etcd-1 never promoted {node}:\n{leader}"
        );
    }
    // Each joiner's ready line comes only after its etcd is a voting member.
    for l in [&two, &three] {
        let ready = l.find("k3s is up and running").expect("ready line");
        assert!(l.find("ETCD server is now running").unwrap() < ready, "{l}");
    }
}

/// A joiner that cannot get there (its leader never promotes it) is not ready in time, and the
/// run says why in k3s's words instead of guessing a value for it.
#[test]
fn a_learner_never_promoted_ends_the_run_naming_why() {
    let root = project(&[
        "checks/signals.yaml",
        "checks/etcd-split.yaml",
        "topologies/etcd-split.yaml",
    ]);
    let topo = root.path().join("topologies/etcd-split.yaml");
    let text_of = std::fs::read_to_string(&topo).unwrap();
    let init = "{name: etcd-1, role: etcd, init: true}";
    assert!(text_of.contains(init), "etcd-split's init node changed");
    let edited = text_of.replace(
        init,
        "{name: etcd-1, role: etcd, init: true, env: {REPRO_SIM_NEVER_PROMOTE: '1'}}",
    );
    std::fs::write(&topo, edited).unwrap();
    let run = Run::check("etcd-split")
        .sim()
        .root(root.path())
        .version("v1.33.4+k3s1")
        .args(["--timeout", "12s"])
        .finish();
    run.out.code(3);
    let r = &run.result;
    let err = r["error"].as_str().unwrap();
    assert!(
        err.contains("etcd-2 (boot 1) was not ready within 12s: its etcd member is still a learner: etcd's leader has not promoted it (`")
            && err.contains("this server has not yet been promoted from learner to voting member"),
        "{err}"
    );
    assert!(
        r["verdict"].is_null(),
        "no verdict from a cluster that never came up"
    );
    assert_eq!(
        r["steps"].as_array().map_or(0, Vec::len),
        0,
        "no observation was made"
    );
}
