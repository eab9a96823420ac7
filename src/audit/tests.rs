//! Unit tests of audit's reading and answers: node-args as k3s writes them, `server:` URLs,
//! config merging, and the model's answers on etcd-split (buggy and fixed, a pending edit, a
//! safe change that the model never refuses).

use std::collections::BTreeMap;

use distro::{Distro, Version};
use indexmap::IndexMap;

use super::change;
use super::input::{merge, parse_node_args, url_host};
use super::{audit, Cluster, Member};
use crate::explore::model::{self, Boot, Config, NodeInfo, Rules};
use crate::raw::{ConfigValue, Role};

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn node_args_read_as_configfilearg_writes_them() {
    let c = parse_node_args(
        Distro::K3s,
        &strings(&[
            "server",
            "--disable-apiserver",
            "true",
            "--token",
            "********",
            "--cluster-init",
            "--node-label",
            "a=b",
            "--node-label",
            "c=d",
            "--supervisor-metrics=false",
        ]),
    );
    assert_eq!(c["disable-apiserver"], "true");
    assert_eq!(c["cluster-init"], "true", "a bool alone");
    assert_eq!(c["node-label"], "a=b,c=d", "a repeated flag is a list");
    assert_eq!(c["supervisor-metrics"], "false");
    assert_eq!(c["token"], "********", "masked stays masked");
}

#[test]
fn server_urls_name_hosts() {
    assert_eq!(url_host("https://etcd-1:6443").as_deref(), Some("etcd-1"));
    assert_eq!(
        url_host("https://[fd00::1]:9345").as_deref(),
        Some("fd00::1")
    );
    assert_eq!(url_host("etcd-1").as_deref(), Some("etcd-1"));
    assert_eq!(url_host("https://:6443"), None);
}

#[test]
fn later_files_win_and_plus_appends() {
    let mut into: IndexMap<String, ConfigValue> = IndexMap::new();
    let file = |pairs: &[(&str, ConfigValue)]| -> IndexMap<String, ConfigValue> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    };
    merge(
        &mut into,
        file(&[
            ("a", ConfigValue::Bool(true)),
            ("l", ConfigValue::Str("x".into())),
        ]),
    );
    merge(
        &mut into,
        file(&[
            ("a", ConfigValue::Bool(false)),
            ("l+", ConfigValue::List(vec![ConfigValue::Str("y".into())])),
        ]),
    );
    assert_eq!(into["a"], ConfigValue::Bool(false));
    assert_eq!(
        into["l"],
        ConfigValue::List(vec![
            ConfigValue::Str("x".into()),
            ConfigValue::Str("y".into())
        ])
    );
}

fn etcd_split(version: &str, etcd2: &[(&str, &str)], cp1_next: &[(&str, &str)]) -> Cluster {
    let cfg = |pairs: &[(&str, &str)]| -> Config {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let v: Version = version.parse().expect("version");
    let m = |name: &str, role, join: Option<&str>, running: Config, next: Option<Config>| Member {
        name: name.into(),
        role,
        version: Some(v.clone()),
        join: join.map(Into::into),
        running: Some(running),
        configured: next,
    };
    Cluster {
        distro: Distro::K3s,
        source: "test".into(),
        members: vec![
            m("etcd-1", Role::Etcd, None, cfg(&[]), None),
            m("etcd-2", Role::Etcd, Some("etcd-1"), cfg(etcd2), None),
            m("etcd-3", Role::Etcd, Some("etcd-1"), cfg(&[]), None),
            m(
                "cp-1",
                Role::ControlPlane,
                Some("etcd-1"),
                cfg(&[]),
                Some(cfg(cp1_next)),
            ),
        ],
    }
}

#[test]
fn a_borrowed_value_on_the_buggy_version_only() {
    let on = [("supervisor-metrics", "true")];
    for (version, borrowed) in [("v1.33.4+k3s1", true), ("v1.33.5+k3s1", false)] {
        let r = audit(&etcd_split(version, &on, &[]));
        let key = r
            .keys
            .iter()
            .find(|k| k.key == "supervisor-metrics")
            .expect("key");
        let etcd2 = key
            .nodes
            .iter()
            .find(|n| n.node == "etcd-2")
            .expect("etcd-2");
        assert_eq!(etcd2.borrowed, borrowed, "{version}");
        assert!(etcd2.unshared, "{version}");
        assert!(!r.consistent);
        assert!(r.refused_at_next_start.is_empty());
    }
    assert!(audit(&etcd_split("v1.33.4+k3s1", &[], &[])).consistent);
}

#[test]
fn a_pending_edit_of_a_control_plane_node_is_refused_at_next_start() {
    let r = audit(&etcd_split(
        "v1.33.5+k3s1",
        &[],
        &[("embedded-registry", "true")],
    ));
    assert_eq!(r.refused_at_next_start.len(), 1);
    assert_eq!(r.refused_at_next_start[0].node, "cp-1");
    assert_eq!(r.refused_at_next_start[0].keys, ["embedded-registry"]);
    let key = r
        .keys
        .iter()
        .find(|k| k.key == "embedded-registry")
        .expect("key");
    assert!(key.nodes.iter().any(|n| n.node == "cp-1" && n.pending));
}

/// Replays a plan through the model: no step is refused, no joiner may take another value.
fn replay_holds(c: &Cluster, p: &change::ChangePlan) {
    let rules = Rules::of(c.distro);
    let nodes: Vec<NodeInfo> = c.members.iter().map(Member::info).collect();
    let mut running: BTreeMap<String, Config> = c
        .members
        .iter()
        .map(|m| (m.name.clone(), m.now().cloned().unwrap_or_default()))
        .collect();
    let keys: Vec<String> = p.changes.keys().cloned().collect();
    for s in &p.steps {
        let m = c.members.iter().find(|m| m.name == s.node).expect("member");
        let mut target = m.next().cloned().unwrap_or_default();
        target.extend(s.set.clone());
        let info = nodes.iter().find(|n| n.name == s.node).expect("node");
        let boot = model::predict(&rules, &nodes, info, false, &target, &running, &keys);
        assert!(
            !matches!(boot, Boot::Refused(_)),
            "{} refused: {boot:?}",
            s.node
        );
        running.insert(s.node.clone(), target);
    }
    for m in &c.members {
        for (k, v) in &p.changes {
            assert_eq!(
                rules.value(&running[&m.name], k).as_ref(),
                Some(v),
                "{}",
                m.name
            );
        }
    }
}

#[test]
fn a_change_plan_is_never_refused_and_ends_on_the_new_value() {
    let changes: BTreeMap<String, String> =
        [("supervisor-metrics".to_string(), "true".to_string())].into();
    for version in ["v1.33.4+k3s1", "v1.33.5+k3s1"] {
        let c = etcd_split(version, &[], &[]);
        let p = change::plan(&c, &changes);
        assert!(p.impossible.is_empty(), "{p:?}");
        let order: Vec<&str> = p.steps.iter().map(|s| s.node.as_str()).collect();
        assert_eq!(order, ["etcd-1", "cp-1", "etcd-2", "etcd-3"]);
        replay_holds(&c, &p);
    }
}

#[test]
fn no_safe_order_is_said_with_its_reason() {
    // cp-1 joins etcd-2 and etcd-2 joins cp-1: each start checks against a server that does not
    // run the new value yet.
    let mut c = etcd_split("v1.33.5+k3s1", &[], &[]);
    c.members.retain(|m| m.name == "cp-1" || m.name == "etcd-2");
    c.members[0].role = Role::ControlPlane;
    c.members[0].join = Some("cp-1".into());
    c.members[1].join = Some("etcd-2".into());
    let changes: BTreeMap<String, String> =
        [("cluster-domain".to_string(), "example.local".to_string())].into();
    let p = change::plan(&c, &changes);
    assert!(p.steps.is_empty(), "{p:?}");
    assert_eq!(p.impossible.len(), 2, "{p:?}");
    assert!(p.impossible[0].contains("would be refused"), "{p:?}");
}

/// An agent's node-args annotation is not needed to audit the servers: an unreadable one is
/// left out; a server's still stops the audit, naming the node.
#[test]
fn an_agents_unreadable_node_args_do_not_stop_the_audit() {
    use k8s_openapi::api::core::v1::Node;
    let node = |name: &str, role: Option<&str>, args: &str| -> Node {
        let mut labels = serde_json::Map::new();
        if let Some(r) = role {
            labels.insert(format!("node-role.kubernetes.io/{r}"), "true".into());
        }
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "labels": labels,
                         "annotations": {"k3s.io/node-args": args}},
        }))
        .expect("a node")
    };
    let server = node(
        "etcd-1",
        Some("etcd"),
        r#"["server","--cluster-init","true"]"#,
    );
    let (_, members) =
        super::input::members_of_nodes(&[server.clone(), node("agent-1", None, "")]).unwrap();
    assert_eq!(members.len(), 2);
    assert!(members[1].running.is_none());
    let e =
        super::input::members_of_nodes(&[server, node("etcd-2", Some("etcd"), "")]).unwrap_err();
    assert!(
        e.contains("node etcd-2: its k3s.io/node-args annotation"),
        "{e}"
    );
}
