//! What k3s does with a config key on a boot, as the distribution's code decides it: the one
//! model both the generator (to write each sequence's `expect:`) and the oracle (to judge a
//! recorded run) use. Pure: no Docker, no files.
//!
//! The rules, each from k3s's source (docs/explore.md has the links):
//! - a server's effective value of a key is its own config's (pkg/daemons/config: the server
//!   serves and runs with its own `config.Control`);
//! - a boot that bootstraps — the first start of a node with embedded etcd joining a server,
//!   every start of a control-plane-only node (pkg/cluster/bootstrap.go: such nodes take the join
//!   path each time) — first validates the token against the server in its `server:`
//!   (`shouldBootstrapLoad` → `ParseAndValidateToken`) and dies with `failed to validate token`
//!   when that server is down; then compares every critical key (`critical: true` in the flags
//!   table) with that server's running config, and dies naming each differing key
//!   (`compareConfig`);
//! - cluster-dns, when a node's config does not set it, is the service CIDR's network address +
//!   10, one per CIDR (pkg/cli/server/server.go, `utilsnet.GetIndexedIP(svcCIDR, 10)`);
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
    /// cluster-dns's default follows the node's service-cidr (`default_cluster_dns`).
    pub(crate) fn value(&self, c: &Config, key: &str) -> Option<String> {
        if let Some(v) = c.get(key) {
            return Some(v.clone());
        }
        if key == CLUSTER_DNS {
            if let Some(dns) = self
                .value(c, SERVICE_CIDR)
                .and_then(|cidrs| default_cluster_dns(&cidrs))
            {
                return Some(dns);
            }
        }
        self.defaults.get(key).cloned()
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

const CLUSTER_DNS: &str = "cluster-dns";
const SERVICE_CIDR: &str = "service-cidr";

/// k3s's cluster-dns when the flag is not set: for each service CIDR (a comma list), its
/// network address + 10 (`utilsnet.GetIndexedIP(svcCIDR, 10)`, pkg/cli/server/server.go:
/// "If cluster-dns CLI arg is not set, we set ClusterDNS address to be the first IPv4
/// ServiceCIDR network + 10"); 10.43.0.0/16 → 10.43.0.10. `None` when a CIDR does not parse.
pub(crate) fn default_cluster_dns(service_cidrs: &str) -> Option<String> {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    let mut out = Vec::new();
    for cidr in service_cidrs.split(',').map(str::trim) {
        let (addr, bits) = cidr.split_once('/')?;
        let bits: u32 = bits.parse().ok()?;
        let ip = match addr.parse::<IpAddr>().ok()? {
            IpAddr::V4(a) if bits <= 32 => {
                let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
                IpAddr::V4(Ipv4Addr::from((u32::from(a) & mask).checked_add(10)?))
            }
            IpAddr::V6(a) if bits <= 128 => {
                let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
                IpAddr::V6(Ipv6Addr::from((u128::from(a) & mask).checked_add(10)?))
            }
            _ => return None,
        };
        out.push(ip.to_string());
    }
    Some(out.join(","))
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
    /// k3s dies before any config check: a bootstrapping node whose join server is down fails
    /// `shouldBootstrapLoad` with `failed to validate token` (pkg/cluster/bootstrap.go).
    Fails(String),
}

/// What k3s's fatal says when a bootstrapping node's join server cannot be reached.
pub(crate) const JOIN_SERVER_DOWN: &str = "failed to validate token";

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
        // shouldBootstrapLoad validates the token against the join server before anything
        // else: with that server down, k3s dies there ("failed to validate token"), before
        // compareConfig could skip its check.
        let Some(server) = node.join.as_ref().and_then(|j| running.get(j)) else {
            return Boot::Fails(JOIN_SERVER_DOWN.to_string());
        };
        let diff = rules.critical_differences(own, server);
        if !diff.is_empty() {
            return Boot::Refused(diff);
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

    /// A node of a test topology: the init node joins nobody.
    pub(crate) fn node(name: &str, role: Role, join: Option<&str>) -> NodeInfo {
        NodeInfo {
            name: name.into(),
            role,
            init: join.is_none(),
            join: join.map(Into::into),
        }
    }

    /// topologies/etcd-split.yaml's nodes.
    pub(crate) fn etcd_split() -> Vec<NodeInfo> {
        vec![
            node("etcd-1", Role::Etcd, None),
            node("etcd-2", Role::Etcd, Some("etcd-1")),
            node("etcd-3", Role::Etcd, Some("etcd-1")),
            node("cp-1", Role::ControlPlane, Some("etcd-1")),
        ]
    }

    /// An agent joining etcd-split's control-plane node.
    pub(crate) fn agent_1() -> NodeInfo {
        node("agent-1", Role::Agent, Some("cp-1"))
    }

    /// topologies/split-roles.yaml's nodes.
    pub(crate) fn split_roles() -> Vec<NodeInfo> {
        vec![
            node("etcd-1", Role::Etcd, None),
            node("etcd-2", Role::Etcd, Some("etcd-1")),
            node("etcd-3", Role::Etcd, Some("etcd-1")),
            node("cp-1", Role::ControlPlane, Some("etcd-1")),
            node("cp-2", Role::ControlPlane, Some("etcd-1")),
            agent_1(),
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
            // ... and dies validating its token when its server is down
            (3, false, &no_server, Boot::Fails(JOIN_SERVER_DOWN.into())),
            // so does a brand-new etcd joiner; a member with data does not ask
            (1, true, &no_server, Boot::Fails(JOIN_SERVER_DOWN.into())),
            (1, false, &no_server, up("true")),
            // a brand-new etcd joiner is checked once
            (2, true, &running, Boot::Refused(keys.clone())),
        ] {
            assert_eq!(
                predict(&r, &nodes, &nodes[node], first, &on, running, &keys),
                want
            );
        }
        // an agent takes the servers' value when they agree, and the model cannot say otherwise
        let agent = agent_1();
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

    /// pkg/cli/server/server.go: "If cluster-dns CLI arg is not set, we set ClusterDNS address
    /// to be the first IPv4 ServiceCIDR network + 10" (`utilsnet.GetIndexedIP(svcCIDR, 10)`).
    #[test]
    fn cluster_dns_defaults_to_the_service_cidr_plus_ten() {
        assert_eq!(
            default_cluster_dns("10.43.0.0/16").as_deref(),
            Some("10.43.0.10")
        );
        assert_eq!(
            default_cluster_dns("10.53.0.0/16,fd00:43::/112").as_deref(),
            Some("10.53.0.10,fd00:43::a")
        );
        assert_eq!(
            default_cluster_dns("10.43.1.7/16").as_deref(),
            Some("10.43.0.10")
        );
        assert_eq!(default_cluster_dns("bad"), None);
        let r = Rules::of(distro::Distro::K3s);
        let other = cfg(&[("service-cidr", "10.53.0.0/16")]);
        assert_eq!(
            r.value(&other, "cluster-dns").as_deref(),
            Some("10.53.0.10")
        );
        assert_eq!(
            r.value(&Config::new(), "cluster-dns").as_deref(),
            Some("10.43.0.10")
        );
        let set = cfg(&[
            ("service-cidr", "10.53.0.0/16"),
            ("cluster-dns", "10.43.0.20"),
        ]);
        assert_eq!(r.value(&set, "cluster-dns").as_deref(), Some("10.43.0.20"));
        // a server whose service-cidr alone differs differs in cluster-dns too, as k3s's do
        assert_eq!(
            r.critical_differences(&other, &Config::new()),
            vec!["cluster-dns".to_string(), "service-cidr".to_string()]
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
