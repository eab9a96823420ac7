//! `topologies/*.yaml`: the nodes of a cluster, their roles, who joins whom, per-node config.

use indexmap::IndexMap;
use serde::Deserialize;
use serde_saphyr::Spanned;

use super::{ConfigValue, SpannedMap};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct TopologyFile {
    pub name: Spanned<String>,
    #[serde(default)]
    pub description: String,
    /// Where this topology comes from (an issue URL).
    #[serde(default)]
    pub source: Option<String>,
    /// Default k3s version when the user gives none.
    pub k3s_version: Spanned<String>,
    /// Config keys written on every node (a node's own `config` wins).
    #[serde(default)]
    pub config: SpannedMap<ConfigValue>,
    /// Files written on every node before its first start (path -> content).
    #[serde(default)]
    pub files: SpannedMap<String>,
    pub nodes: Spanned<Vec<NodeFile>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct NodeFile {
    pub name: Spanned<String>,
    pub role: Spanned<Role>,
    /// The node that creates the cluster (`cluster-init: true`).
    #[serde(default)]
    pub init: Option<Spanned<bool>>,
    /// The node whose supervisor this one joins (`server: https://<node>:6443`).
    #[serde(default)]
    pub join: Option<Spanned<String>>,
    /// Not started with the cluster; a step starts it later (e.g. a brand-new joiner).
    #[serde(default)]
    pub deferred: bool,
    #[serde(default)]
    pub config: SpannedMap<ConfigValue>,
    #[serde(default)]
    pub files: SpannedMap<String>,
    /// Extra container environment (never the token: repro sets `K3S_TOKEN` itself).
    #[serde(default)]
    pub env: IndexMap<Spanned<String>, String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// etcd-only server: `disable-apiserver`, `disable-controller-manager`, `disable-scheduler`.
    Etcd,
    /// control-plane-only server: `disable-etcd`, must join an etcd node.
    ControlPlane,
    /// a server with every component.
    All,
    /// an agent (worker); runs no supervisor.
    Agent,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Etcd => "etcd",
            Role::ControlPlane => "control-plane",
            Role::All => "all",
            Role::Agent => "agent",
        }
    }

    /// Whether the node runs etcd (and so can create or anchor a cluster).
    pub fn runs_etcd(self) -> bool {
        matches!(self, Role::Etcd | Role::All)
    }

    /// Whether the node runs a k3s supervisor that others can join.
    pub fn is_server(self) -> bool {
        !matches!(self, Role::Agent)
    }

    /// The k3s config keys the role stands for (see docs.k3s.io "Managing Server Roles").
    pub fn config_keys(self) -> &'static [&'static str] {
        match self {
            Role::Etcd => &[
                "disable-apiserver",
                "disable-controller-manager",
                "disable-scheduler",
            ],
            Role::ControlPlane => &["disable-etcd"],
            Role::All | Role::Agent => &[],
        }
    }
}
