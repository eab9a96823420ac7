//! Table tests of the oracle over crafted result.json values (no engine): the recorded runs of
//! k3s #12753 on a buggy and a fixed version, and variants of them for each finding class.

use serde_json::{json, Value};

use super::oracle::{judge, Piece};
use crate::result::RunResult;

/// The recorded etcd-split run of k3s #12753, `buggy` or `fixed` (tests/fixtures).
pub(super) fn fixture(which: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/run-etcd-split-{which}/result.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut v: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("json");
    // Fixtures made before `shows:`: the signal says which key it shows, as runs record it now.
    v["signals"]["embedded-registry"]["shows"] =
        json!({"key": "embedded-registry", "up_when": true});
    v
}

fn run(v: Value) -> Vec<Piece> {
    let r: RunResult = serde_json::from_value(v).expect("a result");
    judge(&r)
}

fn classes(ps: &[Piece], node: &str) -> Vec<String> {
    let mut c: Vec<String> = ps
        .iter()
        .filter(|p| p.node == node)
        .map(|p| format!("{}@{}", p.class, p.step))
        .collect();
    c.dedup();
    c
}

/// The fixture's registry observations as today's signals decide them: by the kubelet line k3s
/// prints after spegel's (`order: after-feature`), positive evidence.
fn after_feature(mut v: Value) -> Value {
    for s in v["steps"].as_array_mut().expect("steps") {
        for o in s["observations"].as_array_mut().expect("observations") {
            // (the fixtures predate `rule`: absent is `undecided`)
            if o["signal"] == "embedded-registry" {
                o["rule"] = json!("after-feature");
            }
        }
    }
    v
}

#[test]
fn the_buggy_run_of_12753_takes_the_key_from_another_server() {
    let ps = run(after_feature(fixture("buggy")));
    for n in ["etcd-2", "etcd-3"] {
        let c = classes(&ps, n);
        assert!(
            c.iter()
                .any(|c| c.starts_with("taken-from-") && c.ends_with("@1")),
            "{n}: {c:?}"
        );
    }
    let p = ps
        .iter()
        .find(|p| p.node == "etcd-2" && p.class.name().starts_with("taken-from-"))
        .expect("piece");
    assert_eq!(
        (p.key.as_str(), p.observed.as_str(), p.predicted.as_str()),
        ("embedded-registry", "false", "true")
    );
    assert_eq!(p.role, "etcd");
    assert!(!p.evidence.is_empty());
}

#[test]
fn the_fixed_run_has_no_taken_from_but_the_unguarded_divergence() {
    let ps = run(after_feature(fixture("fixed")));
    assert!(
        ps.iter()
            .all(|p| !p.class.name().starts_with("taken-from-") && p.class != "stale"),
        "{ps:#?}"
    );
    // etcd-2 and etcd-3 run with the registry on while etcd-1 has it off: nothing refuses it.
    assert!(
        ps.iter()
            .any(|p| p.class == "unguarded-divergence" && p.node == "etcd-2" && p.step == 1),
        "{ps:#?}"
    );
}

#[test]
fn a_down_by_the_settle_rule_alone_is_inconclusive() {
    let mut v = fixture("buggy");
    for o in v["steps"][0]["observations"]
        .as_array_mut()
        .expect("observations")
    {
        if o["signal"] == "embedded-registry" {
            o["rule"] = json!("settle-window");
        }
    }
    let ps = run(v);
    assert!(
        ps.iter()
            .any(|p| p.class == "inconclusive" && p.node == "etcd-2"),
        "{ps:#?}"
    );
    assert!(
        ps.iter()
            .all(|p| !(p.class.name().starts_with("taken-from-") && p.step == 1)),
        "{ps:#?}"
    );
}

#[test]
fn a_refusal_with_equal_values_is_wrongly_refused() {
    let mut v = fixture("fixed");
    // etcd-2 (a member with data: no bootstrap) dies naming a key in step 1.
    for b in v["boots"].as_array_mut().expect("boots") {
        if b["node"] == "etcd-2" && b["step"] == 1 {
            b["end"] = json!("exited");
        }
    }
    let boot = v["boots"]
        .as_array()
        .expect("boots")
        .iter()
        .find(|b| b["node"] == "etcd-2" && b["step"] == 1)
        .expect("boot")["boot"]
        .clone();
    v["steps"][0]["observations"].as_array_mut().expect("obs").push(json!({
        "node": "etcd-2", "signal": "config-mismatch", "observed": "cluster-domain", "boot": boot,
        "evidence": [{"source": "log", "boot": boot, "text": "critical configuration mismatched: cluster-domain"}],
        "reason": "crafted"
    }));
    let ps = run(v);
    assert!(
        ps.iter().any(|p| p.class == "wrongly-refused"
            && p.key == "cluster-domain"
            && p.node == "etcd-2"),
        "{ps:#?}"
    );
}

#[test]
fn a_control_plane_node_that_survives_a_mismatch_is_unguarded() {
    let mut v = fixture("fixed");
    // cp-1 restarts in step 1 with the registry on while etcd-1, its server, has it off.
    let cfg = v["configs"]["1"]["cp-1"].as_str().unwrap_or("").to_string();
    v["configs"]["1"]["cp-1"] = json!(format!("{cfg}embedded-registry: true\n"));
    let boots = v["boots"].as_array_mut().expect("boots");
    let next = boots.iter().filter(|b| b["node"] == "cp-1").count() + 1;
    boots.push(
        json!({"node": "cp-1", "boot": next, "step": 1, "started_at": "2026-11-30T09:01:00Z",
        "ready_at": "2026-11-30T09:01:10Z", "ended_at": null, "end": "running", "exit_code": null,
        "log": format!("nodes/cp-1/boot-{next}.log")}),
    );
    let ps = run(v);
    assert!(
        ps.iter().any(|p| p.class == "unguarded-divergence"
            && p.node == "cp-1"
            && p.predicted.contains("refused")),
        "{ps:#?}"
    );
}

#[test]
fn a_run_without_shows_judges_nothing_about_values() {
    let mut v = fixture("buggy");
    v["signals"]["embedded-registry"]
        .as_object_mut()
        .expect("signal")
        .remove("shows");
    let ps = run(v);
    assert!(
        ps.iter()
            .all(|p| !p.class.name().starts_with("taken-from-")),
        "{ps:#?}"
    );
}

/// Adds `obs` (signal, observed, log line) of `node`'s boot `boot` to the first step.
fn observe(v: &mut Value, node: &str, boot: &Value, obs: &[(&str, &str, &str)]) {
    let list = v["steps"][0]["observations"].as_array_mut().expect("obs");
    for (signal, observed, line) in obs {
        list.push(json!({
            "node": node, "signal": signal, "observed": observed, "boot": boot,
            "evidence": [{"source": "log", "boot": boot, "text": line}],
            "reason": "crafted"
        }));
    }
}

/// etcd-2's boot of step 1 in the fixed run, ended as `how` with `obs` added to its step.
fn etcd2_dies(obs: &[(&str, &str, &str)], exit_code: i64) -> Vec<Piece> {
    let mut v = fixture("fixed");
    let mut boot = json!(0);
    for b in v["boots"].as_array_mut().expect("boots") {
        if b["node"] == "etcd-2" && b["step"] == 1 {
            b["end"] = json!("exited");
            b["exit_code"] = json!(exit_code);
            boot = b["boot"].clone();
        }
    }
    observe(&mut v, "etcd-2", &boot, obs);
    run(v)
}

#[test]
fn a_panic_where_the_model_says_up_is_a_died_finding_with_its_lines() {
    // Go's banner, as runtime/panic.go prints it ("panic: " + the value), then exit status 2.
    let banner = "panic: runtime error: invalid memory address or nil pointer dereference";
    let ps = etcd2_dies(
        &[
            ("panic", "up", banner),
            ("config-mismatch", "none", ""),
            ("fatal", "dead", ""),
        ],
        2,
    );
    let p = ps
        .iter()
        .find(|p| p.class == "died" && p.node == "etcd-2")
        .unwrap_or_else(|| panic!("no died piece: {ps:#?}"));
    assert_eq!(
        (p.key.as_str(), p.signal.as_str(), p.step),
        ("panic", "panic", 1)
    );
    assert!(p.evidence.iter().any(|e| e == banner), "{p:#?}");
    assert!(
        p.evidence
            .iter()
            .any(|e| e.contains("exited with status 2")),
        "{p:#?}"
    );
    assert!(super::oracle::Class::Died.is_defect());
}

#[test]
fn a_death_with_no_line_is_died_of_exit_and_a_fatal_is_died_of_fatal() {
    let ps = etcd2_dies(&[("config-mismatch", "none", "")], 137);
    assert!(
        ps.iter()
            .any(|p| p.class == "died" && p.key == "exit" && p.node == "etcd-2"),
        "{ps:#?}"
    );
    let fatal = "level=fatal msg=\"etcd: member dial failed\"";
    let ps = etcd2_dies(&[("fatal", "up", fatal)], 1);
    assert!(
        ps.iter().any(|p| p.class == "died" && p.key == "fatal"),
        "{ps:#?}"
    );
    // naming keys is a refusal: wrongly-refused, not died
    let ps = etcd2_dies(
        &[(
            "config-mismatch",
            "cluster-domain",
            "critical configuration mismatched: cluster-domain",
        )],
        1,
    );
    assert!(ps.iter().all(|p| p.class != "died"), "{ps:#?}");
    assert!(ps.iter().any(|p| p.class == "wrongly-refused"), "{ps:#?}");
}

#[test]
fn finding_classes_keep_their_serialised_names() {
    use super::oracle::Class;
    for name in [
        "taken-from-cp-1",
        "taken-from-elsewhere",
        "stale",
        "wrongly-refused",
        "died",
        "unguarded-divergence",
        "inconclusive",
    ] {
        let c = Class::parse(name).expect(name);
        assert_eq!(c.name(), name);
        let json = serde_json::to_string(&c).expect("json");
        assert_eq!(json, format!("\"{name}\""));
        assert_eq!(serde_json::from_str::<Class>(&json).expect("back"), c);
    }
    for bad in ["taken-from-", "weird", ""] {
        assert!(Class::parse(bad).is_none(), "{bad}");
        assert!(serde_json::from_str::<Class>(&format!("\"{bad}\"")).is_err());
    }
    assert!(Class::Died.is_defect() && Class::Died.is_death());
    assert!(!Class::UnguardedDivergence.is_defect() && !Class::Inconclusive.is_defect());
}

/// cp-1 restarted in step 1 with the registry on while etcd-1, its server, has it off: k3s
/// refuses it (critical configuration mismatched). It dies as `obs` say.
fn cp1_refused_dies(obs: &[(&str, &str, &str)]) -> Vec<Piece> {
    let mut v = fixture("fixed");
    let cfg = v["configs"]["1"]["cp-1"].as_str().unwrap_or("").to_string();
    v["configs"]["1"]["cp-1"] = json!(format!("{cfg}embedded-registry: true\n"));
    let boots = v["boots"].as_array_mut().expect("boots");
    let next = boots.iter().filter(|b| b["node"] == "cp-1").count() + 1;
    boots.push(
        json!({"node": "cp-1", "boot": next, "step": 1, "started_at": "2026-11-30T09:01:00Z",
        "ready_at": null, "ended_at": "2026-11-30T09:01:02Z", "end": "exited", "exit_code": 2,
        "log": format!("nodes/cp-1/boot-{next}.log")}),
    );
    observe(&mut v, "cp-1", &json!(next), obs);
    run(v)
}

/// The control-plane-panic shape (k3s #13533): where k3s's rules refuse the boot, the node
/// panics instead of naming the keys — a `died` finding of key `panic`, predicted "refused";
/// the refusal k3s's rules predict (the fatal, the keys named) is no finding.
#[test]
fn a_panic_where_the_model_says_refused_is_a_died_finding() {
    let banner = "panic: runtime error: invalid memory address or nil pointer dereference";
    let ps = cp1_refused_dies(&[
        ("panic", "up", banner),
        ("fatal", "dead", ""),
        ("config-mismatch", "none", ""),
    ]);
    let p = (ps.iter())
        .find(|p| p.class == "died" && p.node == "cp-1")
        .unwrap_or_else(|| panic!("no died piece: {ps:#?}"));
    assert_eq!((p.key.as_str(), p.signal.as_str()), ("panic", "panic"));
    assert!(
        p.predicted.contains("refused naming embedded-registry"),
        "{p:#?}"
    );
    // A death with neither the fatal nor the keys named (no panic line seen either): died, exit.
    let ps = cp1_refused_dies(&[("config-mismatch", "none", "")]);
    assert!(
        ps.iter()
            .any(|p| p.class == "died" && p.key == "exit" && p.node == "cp-1"),
        "{ps:#?}"
    );
    // k3s's own refusal: no finding on cp-1.
    let ps = cp1_refused_dies(&[
        ("fatal", "up", "level=fatal msg=\"starting kubernetes: preparing server: failed to validate server configuration: critical configuration value mismatch between servers\""),
        ("config-mismatch", "embedded-registry", "critical configuration mismatched: embedded-registry"),
        ("panic", "down", ""),
    ]);
    assert!(ps.iter().all(|p| p.node != "cp-1"), "{ps:#?}");
}

/// etcd-2's boot of step 1 in the fixed run with its log stream lost (`end: lost`), ready
/// before or never.
fn etcd2_lost(ready: bool) -> Vec<Piece> {
    let mut v = fixture("fixed");
    for b in v["boots"].as_array_mut().expect("boots") {
        if b["node"] == "etcd-2" && b["step"] == 1 {
            b["end"] = json!("lost");
            b["exit_code"] = Value::Null;
            if !ready {
                b["ready_at"] = Value::Null;
            }
        }
    }
    run(v)
}

#[test]
fn a_log_stream_lost_after_ready_is_no_death_but_lost_before_ready_is() {
    // Systemd nodes: the journal follower breaks when teardown removes the container, after the
    // node was ready; counting that made every RKE2 campaign report a `died/exit`.
    let ps = etcd2_lost(true);
    assert!(
        ps.iter()
            .all(|p| !(p.class == "died" && p.node == "etcd-2")),
        "{ps:#?}"
    );
    let ps = etcd2_lost(false);
    assert!(
        ps.iter().any(|p| p.class == "died" && p.node == "etcd-2"),
        "{ps:#?}"
    );
}
