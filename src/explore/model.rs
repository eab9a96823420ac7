//! What k3s does with a config key on a boot, as the distribution's code decides it: the one
//! model both the generator (to write each sequence's `expect:`) and the oracle (to judge a
//! recorded run) use. Pure: no Docker, no files.
//!
//! The rules, each from k3s's source (docs/explore.md has the links):
//! - a server's effective value of a key is its own config's (pkg/daemons/config: the server
//!   serves and runs with its own `config.Control`);
//! - a boot that bootstraps — the first start of a node with embedded etcd joining a server,
//!   every start of a control-plane-only node (pkg/cluster/bootstrap.go: such nodes take the join
//!   path each time) — compares every critical key (`critical: true` in the flags table) with the
//!   running config of the server in its `server:`, and dies naming each differing key
//!   (`compareConfig`); if that server cannot answer, the check is skipped;
//! - an agent's effective value of a `from-server` key is that of the server it reached
//!   (pkg/agent/config/config.go `get()`).

use std::collections::{BTreeMap, BTreeSet};

use crate::raw::{ConfigValue, Role};

/// A node's config keys, each value normalised to text (`true`, `10.43.0.10`, `a,b` for lists).
pub(crate) type Config = BTreeMap<String, String>;

/// A node of the topology, as the model needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodeInfo {
    pub(crate) name: String,
    pub(crate) role: Role,
    pub(crate) init: bool,
    pub(crate) join: Option<String>,
}

impl NodeInfo {
    pub(crate) fn is_server(&self) -> bool {
        self.role != Role::Agent
    }

    /// Whether a boot of this node runs k3s's bootstrap (and so `compareConfig`).
    pub(crate) fn bootstraps(&self, first_start: bool) -> bool {
        match self.role {
            Role::ControlPlane => self.join.is_some(),
            Role::Etcd | Role::All => first_start && self.join.is_some(),
            Role::Agent => false,
        }
    }

    /// Where this node's agent may read its node config from, in words (a grouping key of
    /// findings: nodes with the same source are one cause).
    pub(crate) fn config_source(&self, nodes: &[NodeInfo]) -> String {
        let role_of = |n: &str| {
            nodes
                .iter()
                .find(|x| x.name == n)
                .map_or("?", |x| x.role.as_str())
        };
        match (&self.join, self.role) {
            (_, Role::Agent) => "the server it reached".to_string(),
            (None, _) => "its own config (init node)".to_string(),
            (Some(j), _) => {
                let role = role_of(j);
                // "an etcd node", "a control-plane node": the article follows the role's sound.
                let article = if role.starts_with(['a', 'e']) {
                    "an"
                } else {
                    "a"
                };
                format!("its own config (joins {article} {role} node)")
            }
        }
    }
}

/// The distribution's rules about keys: which are critical, which the agent takes from its
/// server, and what a node without the key runs with (a boolean: `false`; a key with `try:`
/// values in the flags table: the first, the distribution's default).
#[derive(Debug, Clone, Default)]
pub(crate) struct Rules {
    pub(crate) critical: BTreeSet<String>,
    pub(crate) from_server: BTreeSet<String>,
    pub(crate) defaults: BTreeMap<String, String>,
}

impl Rules {
    pub(crate) fn of(d: distro::Distro) -> Rules {
        let mut r = Rules::default();
        for f in d.flags() {
            if f.critical {
                r.critical.insert(f.name.clone());
            }
            if f.from_server {
                r.from_server.insert(f.name.clone());
            }
            let default = match (f.kind, f.try_values.first()) {
                (distro::FlagKind::Bool, _) => Some("false".to_string()),
                (_, first) => first.cloned(),
            };
            if let Some(d) = default {
                r.defaults.insert(f.name.clone(), d);
            }
        }
        r
    }

    /// The key's value in `c`, its default when absent; `None` when a key with no known default
    /// is absent (the distribution's default, whatever it is, is the same on every node).
    pub(crate) fn value(&self, c: &Config, key: &str) -> Option<String> {
        c.get(key).or_else(|| self.defaults.get(key)).cloned()
    }

    /// The critical keys whose values differ between `a` and `b`, sorted.
    pub(crate) fn critical_differences(&self, a: &Config, b: &Config) -> Vec<String> {
        self.critical
            .iter()
            .filter(|k| self.value(a, k) != self.value(b, k))
            .cloned()
            .collect()
    }
}

/// A config value as text (the normal form every comparison uses).
pub(crate) fn value_text(v: &ConfigValue) -> String {
    match v {
        ConfigValue::Bool(b) => b.to_string(),
        ConfigValue::Int(i) => i.to_string(),
        ConfigValue::Str(s) => s.clone(),
        ConfigValue::List(items) => items.iter().map(value_text).collect::<Vec<_>>().join(","),
    }
}

/// A rendered config.yaml read back into keys (what result.json records per step).
pub(crate) fn parse_config(text: &str) -> Config {
    let parsed: Result<indexmap::IndexMap<String, ConfigValue>, _> = serde_saphyr::from_str(text);
    parsed
        .unwrap_or_default()
        .iter()
        .map(|(k, v)| (k.clone(), value_text(v)))
        .collect()
}

/// What the model says one boot does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Boot {
    /// k3s refuses the boot: `compareConfig` names these keys, then the fatal.
    Refused(Vec<String>),
    /// The node comes up; each asked key's effective value (`None`: the model cannot say, an
    /// agent whose servers disagree — it takes the value of whichever it reaches).
    Up(BTreeMap<String, Option<String>>),
}

/// Predicts a boot of `node` with config `own`, while `running` holds the config each live
/// server runs with (its config as of its current boot).
pub(crate) fn predict(
    rules: &Rules,
    nodes: &[NodeInfo],
    node: &NodeInfo,
    first_start: bool,
    own: &Config,
    running: &BTreeMap<String, Config>,
    keys: &[String],
) -> Boot {
    if node.bootstraps(first_start) {
        // The GET of the joined server's config fails when it is down: k3s logs "Skipping
        // cluster configuration validation" and goes on.
        if let Some(server) = node.join.as_ref().and_then(|j| running.get(j)) {
            let diff = rules.critical_differences(own, server);
            if !diff.is_empty() {
                return Boot::Refused(diff);
            }
        }
    }
    let values = keys
        .iter()
        .map(|k| {
            let v = if node.is_server() {
                rules.value(own, k)
            } else {
                let servers: BTreeSet<Option<String>> = nodes
                    .iter()
                    .filter(|n| n.is_server())
                    .filter_map(|n| running.get(&n.name))
                    .map(|c| rules.value(c, k))
                    .collect();
                if servers.len() == 1 {
                    servers.into_iter().next().flatten()
                } else {
                    None
                }
            };
            (k.clone(), v)
        })
        .collect();
    Boot::Up(values)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn etcd_split() -> Vec<NodeInfo> {
        let n = |name: &str, role, join: Option<&str>| NodeInfo {
            name: name.into(),
            role,
            init: join.is_none(),
            join: join.map(Into::into),
        };
        vec![
            n("etcd-1", Role::Etcd, None),
            n("etcd-2", Role::Etcd, Some("etcd-1")),
            n("etcd-3", Role::Etcd, Some("etcd-1")),
            n("cp-1", Role::ControlPlane, Some("etcd-1")),
        ]
    }

    fn cfg(pairs: &[(&str, &str)]) -> Config {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_rules_come_from_the_flags_table() {
        let r = Rules::of(distro::Distro::K3s);
        assert!(r.critical.contains("embedded-registry"));
        assert!(!r.critical.contains("disable-kube-proxy"));
        assert!(r.from_server.contains("disable-kube-proxy"));
        assert_eq!(
            r.value(&Config::new(), "embedded-registry").as_deref(),
            Some("false")
        );
        // a key that is not a boolean: its `try:` default
        assert_eq!(
            r.value(&Config::new(), "cluster-domain").as_deref(),
            Some("cluster.local")
        );
        assert_eq!(r.value(&Config::new(), "node-name"), None);
    }

    #[test]
    fn bootstrap_runs_on_first_joins_and_every_control_plane_start() {
        let nodes = etcd_split();
        assert!(!nodes[0].bootstraps(true), "the init node joins nobody");
        assert!(nodes[1].bootstraps(true) && !nodes[1].bootstraps(false));
        assert!(nodes[3].bootstraps(true) && nodes[3].bootstraps(false));
    }

    #[test]
    fn predictions() {
        let r = Rules::of(distro::Distro::K3s);
        let nodes = etcd_split();
        let keys = vec!["embedded-registry".to_string()];
        let off = cfg(&[]);
        let on = cfg(&[("embedded-registry", "true")]);
        let running: BTreeMap<String, Config> = nodes
            .iter()
            .map(|n| (n.name.clone(), off.clone()))
            .collect();
        // an etcd member with data: its own value, no check
        let up = |v: &str| Boot::Up([(keys[0].clone(), Some(v.to_string()))].into());
        assert_eq!(
            predict(&r, &nodes, &nodes[1], false, &on, &running, &keys),
            up("true")
        );
        let mut no_server = running.clone();
        no_server.remove("etcd-1");
        for (node, first, running, want) in [
            // the control-plane-only node is checked on every start
            (3, false, &running, Boot::Refused(keys.clone())),
            // ... unless its server is down: the check is skipped
            (3, false, &no_server, up("true")),
            // a brand-new etcd joiner is checked once
            (2, true, &running, Boot::Refused(keys.clone())),
        ] {
            assert_eq!(
                predict(&r, &nodes, &nodes[node], first, &on, running, &keys),
                want
            );
        }
        // an agent takes the servers' value when they agree, and the model cannot say otherwise
        let agent = NodeInfo {
            name: "agent-1".into(),
            role: Role::Agent,
            init: false,
            join: Some("cp-1".into()),
        };
        assert_eq!(
            predict(&r, &nodes, &agent, false, &on, &running, &keys),
            up("false")
        );
        let mut split = running.clone();
        split.insert("etcd-2".into(), on.clone());
        assert_eq!(
            predict(&r, &nodes, &agent, false, &off, &split, &keys),
            Boot::Up([(keys[0].clone(), None)].into())
        );
    }

    #[test]
    fn configs_read_back_as_text() {
        let c =
            parse_config("embedded-registry: true\ncluster-dns: [10.43.0.10]\nnode-name: \"a\"\n");
        assert_eq!(c["embedded-registry"], "true");
        assert_eq!(c["cluster-dns"], "10.43.0.10");
        assert_eq!(c["node-name"], "a");
    }
}
