//! What repro and its stand-in (sim/) know about a Kubernetes distribution, in one place.
//!
//! A [`Distro`] is a value, resolved once when a scenario loads and carried on the plan; its
//! [`Facts`] (one module per distribution, e.g. [`k3s`]) hold every path, port, variable, flag
//! and log line the rest of the code needs, and its data files (release tables) are embedded
//! here. One [`Version`] type and one parser of the change and flag tables serve both crates, so
//! a check's idea of "fixed" and the stand-in's behaviour cannot drift apart.
//!
//! Adding a distribution: one more module of facts with its data files, one more [`Distro`]
//! variant (see CONTRIBUTING.md, "Adding a distribution").

pub mod k3s;
pub mod pace;
pub mod plant;
pub mod reported;
pub mod rke2;
pub mod sim_admin;
pub mod sim_stamp;
pub mod tables;
pub mod version;

pub use tables::{
    Change, ChangeTable, FirstCandidate, FirstRelease, FlagCommand, FlagEntry, FlagKind,
};
pub use version::{ReleaseSet, Version, VersionError};

/// A supported distribution. Serialized as its name (`k3s`, `rke2`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Distro {
    #[default]
    K3s,
    Rke2,
}

impl Distro {
    /// Every distribution, in the order messages list them.
    pub const ALL: &'static [Distro] = &[Distro::K3s, Distro::Rke2];

    /// The facts of this distribution.
    pub fn facts(self) -> &'static Facts {
        match self {
            Distro::K3s => &k3s::FACTS,
            Distro::Rke2 => &rke2::FACTS,
        }
    }

    /// Its name as users write it (`distribution: k3s`).
    pub fn name(self) -> &'static str {
        self.facts().name
    }

    /// The distribution named `name`, if there is one.
    pub fn from_name(name: &str) -> Option<Distro> {
        Distro::ALL.iter().copied().find(|d| d.name() == name)
    }

    /// The names users may write, for "expected one of" messages: `k3s, rke2`.
    pub fn names() -> String {
        Distro::ALL
            .iter()
            .map(|d| d.name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Its table of changes (which release first has each), parsed once.
    pub fn changes(self) -> &'static ChangeTable {
        self.facts().tables.changes()
    }

    /// The flags of its server and agent commands, parsed once.
    pub fn flags(self) -> &'static [FlagEntry] {
        self.facts().tables.flags()
    }

    /// A parse error in an embedded table (a build defect a unit test catches), if any.
    pub fn table_error(self) -> Option<String> {
        self.facts().tables.error()
    }
}

impl std::fmt::Display for Distro {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl serde::Serialize for Distro {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Distro {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Distro::from_name(&s).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "`{s}` is not a distribution repro knows; expected one of: {}",
                Distro::names()
            ))
        })
    }
}

/// The config keys a node's role and place in the cluster stand for, and the secret ones.
#[derive(Debug)]
pub struct RoleKeys {
    /// Set `true` on the node that creates the cluster (`cluster-init`); `None` where the
    /// distribution has no such key (rke2: the server without `server:` creates it).
    pub init: Option<&'static str>,
    /// The URL of the node to join (`server`).
    pub join: &'static str,
    /// The cluster and agent tokens (secrets: repro sets the cluster token through the
    /// environment, never in a file).
    pub token: &'static str,
    pub agent_token: &'static str,
    /// Set `true` on an etcd-only server.
    pub etcd_only: &'static [&'static str],
    /// Set `true` on a control-plane-only server.
    pub control_plane_only: &'static [&'static str],
}

/// How a node runs the distribution's server or agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeProcess {
    /// As the container's own command (`rancher/k3s`: the image's entrypoint is `k3s`, the
    /// command `server`); its log is the container's.
    Container,
    /// As a systemd unit (`Facts::units`) in a container whose PID 1 is systemd, as rke2's own
    /// Docker tests run it; its log is the unit's journal, a boot is one start of the unit.
    SystemdUnit {
        /// The folder of the file each unit reads its environment from, named after the unit
        /// (`EnvironmentFile=-/etc/default/%N` of rke2's units: `/etc/default`): a unit does not
        /// see the container's environment, so repro writes the node's there.
        env_dir: &'static str,
    },
}

impl NodeProcess {
    /// The folder of the units' environment files (see `SystemdUnit`); `None` where the
    /// distribution is the container's own process and takes the container's environment.
    pub fn unit_env_dir(self) -> Option<&'static str> {
        match self {
            NodeProcess::Container => None,
            NodeProcess::SystemdUnit { env_dir } => Some(env_dir),
        }
    }

    /// Whether systemd is the node container's PID 1 (a unit needs it): its image is built on
    /// a systemd base, the container gets systemd's tmpfs mounts, and systemd's own services
    /// hold part of the host's inotify instances.
    pub fn systemd_pid1(self) -> bool {
        self.unit_env_dir().is_some()
    }
}

/// The file names of a distribution's release artifacts for amd64, as its release scripts name
/// them and its install script reads them from an artifact folder.
#[derive(Debug)]
pub struct ReleaseArtifacts {
    /// The tarball of the binary and its units (`rke2.linux-amd64.tar.gz`).
    pub tarball: &'static str,
    /// The sha256 sum file listing the release's assets, the tarball among them.
    pub checksums: &'static str,
    /// The air-gap images tarball, imported at boot when present.
    pub images: &'static str,
    /// Where a node imports image tarballs from at start (the air-gap install's folder).
    pub images_dir: &'static str,
    /// The install script, when an artifact folder holds it, by the names it is shipped under.
    pub install_scripts: &'static [&'static str],
}

/// How much memory a node of a role needs, in MiB (for the host-capacity check).
#[derive(Debug)]
pub struct NodeMemory {
    /// A server with embedded etcd.
    pub server_with_etcd_mib: u64,
    /// A server without etcd (control plane only).
    pub server_mib: u64,
    pub agent_mib: u64,
    /// Disk a node's data volume and container layer take (the extracted data dir, etcd,
    /// containerd's state), any role. No distribution documents a figure: inferred, see
    /// docs/k3s-review-2026-12.md §10.
    pub disk_mib: u64,
    /// Where the memory figures come from, as the doctor names it ("k3s's resource profiling").
    pub source: &'static str,
}

/// What one upgrade of a node may do, by the distribution's (and Kubernetes') skew policy.
#[derive(Debug, Clone, Copy)]
pub struct UpgradeRules {
    /// How many minor versions one upgrade may go up (1: never skip a minor).
    pub max_minor_step: u32,
    /// Whether a node may move to an older version.
    pub downgrade: bool,
    /// An agent's kubelet may not run a newer minor than the oldest server's apiserver
    /// (Kubernetes' version skew policy: upgrade servers first, then agents).
    pub agents_after_servers: bool,
}

impl UpgradeRules {
    /// Why moving from `from` to `to` is outside these rules, or `None` when it is allowed.
    pub fn refuses(&self, from: &Version, to: &Version) -> Option<String> {
        if to < from && !self.downgrade {
            return Some(format!(
                "{to} is older than {from}: the distribution does not support downgrades"
            ));
        }
        let up = (to.major, to.minor) > (from.major, from.minor);
        if up && (to.major != from.major || to.minor - from.minor > self.max_minor_step) {
            return Some(format!(
                "{from} to {to} skips a minor version: upgrade through each minor in turn"
            ));
        }
        None
    }
}

/// Everything repro and the stand-in need to know about one distribution. One value per
/// distribution, in its own module ([`k3s::FACTS`]); nothing else spells these.
#[derive(Debug)]
pub struct Facts {
    /// As users write it and results record it: `k3s`.
    pub name: &'static str,
    /// The binary in the image (`k3s`), also the first word of its commands in messages.
    pub binary: &'static str,
    /// Its systemd units, as the install script names them and journald and log collectors
    /// label their lines (`k3s`, `k3s-agent`).
    pub units: &'static [&'static str],
    /// Whether a node runs it as the container's process or as a systemd unit.
    pub node_process: NodeProcess,
    /// The build marker of a version: `k3s` in `v1.33.4+k3s1`.
    pub build_marker: &'static str,
    /// Example versions, for help lines: a release and a release candidate.
    pub example_version: &'static str,
    pub example_candidate: &'static str,
    /// The published image repository; the tag is the version with `+` spelled `-`.
    pub image_repository: &'static str,
    /// Repository of repro's local stand-in images (`repro.local/k3s-sim:<tag>`).
    pub sim_image_repository: &'static str,
    /// The versions `repro sim build` builds stand-in images for when given none: the ones the
    /// demo and the tests use, across release lines, buggy and fixed (sim/sim.mk lists them too).
    pub sim_versions: &'static [&'static str],
    /// Env variable the stand-in image bakes its imitated version into.
    pub sim_version_env: &'static str,
    /// The systemd image a node image from release artifacts is built on by default (rke2's
    /// tests/docker/testutils.go: `rancher/systemd-node:v0.0.5`); `None` where nodes need none.
    pub node_base_image: Option<&'static str>,
    /// Container command of a server and of an agent.
    pub server_args: &'static [&'static str],
    pub agent_args: &'static [&'static str],
    /// The command printing the version (`k3s -v`).
    pub version_command: &'static [&'static str],
    /// Where the distribution's image keeps its binary: a build under test (`--k3s-binary`,
    /// `--k3s-commit`) is copied there. `None`: no build under test for it yet.
    pub binary_path: Option<&'static str>,
    /// The image's entrypoint arguments that check the host kernel's config (`k3s
    /// check-config`, which runs k3s's contrib/util/check-config.sh); `None`: the distribution
    /// ships no such subcommand (rke2's CLI has none).
    pub check_config_args: Option<&'static [&'static str]>,
    /// Where the distribution's CI publishes a build of each commit (`<binary><suffix>-<sha>`
    /// and `.sha256sum` beside it), as its install script fetches it; `None`: none known.
    pub ci_builds_url: Option<&'static str>,
    /// Where the distribution's release artifacts of a version are (`<url>/<version>/<file>`,
    /// `+` sent as `%2B`), as its install script downloads them; `None`: its nodes run a
    /// published image, nothing is fetched.
    pub release_downloads_url: Option<&'static str>,
    /// The files of a release a node image is built from (`--artifacts`, or fetched from
    /// `release_downloads_url`); `None`: its nodes run a published image.
    pub release_artifacts: Option<ReleaseArtifacts>,
    /// The config file, its drop-in folder and the folder both live in.
    pub config_dir: &'static str,
    pub config_path: &'static str,
    pub config_dropin_dir: &'static str,
    /// The private-registry file.
    pub registries_path: &'static str,
    /// The data dir (a volume of its own, kept across restarts).
    pub data_dir: &'static str,
    /// The supervisor port joiners connect to, and the Kubernetes API port.
    pub supervisor_port: u16,
    pub api_port: u16,
    /// Env variables of the cluster token, the agent token and the join URL.
    pub token_env: &'static str,
    pub agent_token_env: &'static str,
    pub url_env: &'static str,
    /// The admin kubeconfig written by servers.
    pub kubeconfig_path: &'static str,
    /// How kubectl is invoked inside a node.
    pub kubectl: &'static [&'static str],
    /// The start banner prefix (`Starting k3s v1.33.4+k3s1 (abcdef12)`), and its agent form.
    pub banner_prefix: &'static str,
    pub agent_banner_prefix: &'static str,
    /// The line a server logs once it is up.
    pub ready_line: &'static str,
    /// The line an agent logs once it is up, only under systemd (`NOTIFY_SOCKET` set, as a
    /// `Type=notify` unit has it; k3s pkg/agent/run.go, which rke2 runs): an agent in a
    /// container never prints it.
    pub agent_ready_line: &'static str,
    /// Where the kubelet writes its own lines, relative to the data dir, when not to the
    /// distribution's log (rke2: `agent/logs/kubelet.log`, pkg/cli/defaults); `None`: k3s runs
    /// the kubelet in its process, its lines are k3s's.
    pub kubelet_log: Option<&'static str>,
    /// The start of the `Description=` of the distribution's systemd units, which systemd puts
    /// in its own lines about them (`Started k3s.service - Lightweight Kubernetes.`).
    pub unit_description: &'static str,
    /// The agent load balancer's line naming a server it reached:
    /// `Server <address>@UNCHECKED->RECOVERING from successful dial` (k3s
    /// pkg/agent/loadbalancer/servers.go; rke2 runs k3s's agent code): the text before the
    /// address, and the text the line ends with. The first such line of a boot is the pick.
    pub lb_pick_prefix: &'static str,
    pub lb_pick_suffix: &'static str,
    /// Config keys an agent turns on from the config its server serves (`/v1-k3s/config`), not
    /// its own file: a buggy etcd-only joiner (k3s #12753) takes them from whichever server its
    /// load balancer reaches. Signals of the same name follow that server's value.
    pub served_agent_keys: &'static [&'static str],
    /// The signal a graceful stop sends the distribution's process (a check's `stop:`): its
    /// systemd unit sets no `KillSignal=`, so `systemctl stop` sends systemd's default, SIGTERM,
    /// which k3s handles by shutting down (pkg/cli/cmds/log_linux.go, pkg/signals).
    pub stop_signal: &'static str,
    /// Where the agent keeps the node password it registered with (generated at its first
    /// start, outside the data dir; pkg/agent/config: `/etc/rancher/node/password`): an
    /// upgrade carries it over, as the install script leaves it in place.
    pub node_password_path: &'static str,
    /// How far one `upgrade:` may move a node (docs.k3s.io/upgrades/manual: "the Kubernetes
    /// version skew policy applies. Ensure that your plan does not skip intermediate minor
    /// versions"; k3s #7537: downgrades are not supported, k3s-upgrade refuses them).
    pub upgrade: UpgradeRules,
    /// Lines a node logs while it waits for something it cannot get by itself, each with what
    /// it waits for: a boot that is not ready in time is reported with the last of them.
    pub waiting_lines: &'static [(&'static str, &'static str)],
    pub role_keys: RoleKeys,
    /// Where the embedded data files live in the source tree (for messages).
    pub changes_path: &'static str,
    pub flags_path: &'static str,
    /// The release list `repro bisect` searches: its path (in the source tree and in a project
    /// folder) and its embedded text.
    pub releases_path: &'static str,
    pub releases_yaml: &'static str,
    /// The release channel server (`stable`, `latest`, `v1.33` → a version).
    pub channel_server: &'static str,
    pub memory: NodeMemory,
    /// What repro's outputs for this distribution's maintainers look like (report.md, the
    /// validation comment): the one place a renderer learns which template to follow.
    pub outputs: Outputs,
    tables: tables::Tables,
}

/// The shape of a distribution's bug report and of its QA's validation comment.
#[derive(Debug)]
pub struct Outputs {
    /// The product as its bug template spells it: `K3s Version:`, `- Installed RKE2:`.
    pub product: &'static str,
    /// The bug template report.md follows (its `.github/ISSUE_TEMPLATE/bug_report.md`).
    pub bug_template: &'static str,
    /// The node image a real (not stand-in) run uses, in words.
    pub image: &'static str,
    /// How a node of this distribution is installed and started, for the template's
    /// "Installed …" line; `{container}` stands for "privileged container" or its opposite.
    pub installed: &'static str,
    /// Where a node's log comes from, for the report's log sections.
    pub log_source: &'static str,
    /// The form of QA's validation comment.
    pub validation: ValidationForm,
}

/// The validation comments QA posts when it closes an issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValidationForm {
    /// k3s QA (k3s-io/k3s#12816): `### Validated on`, environment details, cluster
    /// configuration, every config.yaml, testing steps, replication and validation results.
    Full,
    /// RKE2 QA on this bug (rancher/rke2#8875, #8876): `# Validated on <rc>`, `Steps: <link>`,
    /// `### Validation` with `rke2 -v`, the cluster's node list, then the results.
    Short,
}

impl Facts {
    /// The published image of `v`.
    pub fn image(&self, v: &Version) -> String {
        format!("{}:{}", self.image_repository, v.image_tag())
    }

    /// The address of a load-balancer pick line (see `lb_pick_prefix`), if `line` is one.
    pub fn lb_pick<'a>(&self, line: &'a str) -> Option<&'a str> {
        let before = &line[..line.find(self.lb_pick_suffix)?];
        let from = before.rfind(self.lb_pick_prefix)? + self.lb_pick_prefix.len();
        let label = &before[from..];
        let address = &label[..label.find('@')?];
        (!address.is_empty() && !address.contains(char::is_whitespace)).then_some(address)
    }

    /// The systemd unit of a server or an agent (`rke2-server`, `rke2-agent`).
    pub fn unit(&self, agent: bool) -> &'static str {
        self.units[usize::from(agent).min(self.units.len() - 1)]
    }

    /// The environment file of a server's or an agent's unit (`/etc/default/rke2-server`), which
    /// repro writes; `None` where the node takes the container's environment.
    pub fn unit_env_file(&self, agent: bool) -> Option<String> {
        let dir = self.node_process.unit_env_dir()?;
        Some(format!("{dir}/{}", self.unit(agent)))
    }

    /// The arguments of a server's or an agent's command (after the binary).
    pub fn node_args(&self, agent: bool) -> &'static [&'static str] {
        if agent {
            self.agent_args
        } else {
            self.server_args
        }
    }

    /// `k3s server` / `k3s agent`, as messages name the commands.
    pub fn command_name(&self, c: FlagCommand) -> String {
        match c {
            FlagCommand::Server => format!("{} server", self.binary),
            FlagCommand::Agent => format!("{} agent", self.binary),
        }
    }

    /// How the node that creates the cluster is told so, for messages: `cluster-init`, or
    /// `no server:` where the distribution has no init key.
    pub fn init_marker(&self) -> String {
        match self.role_keys.init {
            Some(k) => k.to_string(),
            None => format!("no {}:", self.role_keys.join),
        }
    }

    /// The path of `relative` inside the config folder (`registries.yaml` →
    /// `/etc/rancher/k3s/registries.yaml`).
    pub fn in_config_dir(&self, relative: &str) -> String {
        format!("{}/{relative}", self.config_dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lb_pick_reads_the_address_of_a_successful_dial() {
        let f = Distro::K3s.facts();
        let line = r#"time="2026-12-01T20:01:00Z" level=info msg="Server 10.213.4.5:6443@UNCHECKED->RECOVERING from successful dial""#;
        assert_eq!(f.lb_pick(line), Some("10.213.4.5:6443"));
        let default = "Server etcd-1:6443@UNCHECKED*->RECOVERING from successful dial";
        assert_eq!(f.lb_pick(default), Some("etcd-1:6443"));
        assert_eq!(
            f.lb_pick("Server 10.0.0.2:6443@RECOVERING->FAILED from failed dial"),
            None
        );
        assert_eq!(
            f.lb_pick("Server @X->RECOVERING from successful dial"),
            None
        );
        assert_eq!(f.lb_pick("->RECOVERING from successful dial"), None);
    }

    #[test]
    fn names_round_trip_and_tables_parse() {
        for d in Distro::ALL {
            assert_eq!(Distro::from_name(d.name()), Some(*d));
            assert_eq!(d.table_error(), None, "{d}");
            assert!(!d.changes().is_empty(), "{d}");
            assert!(d.flags().len() > 100, "{d}");
        }
        assert_eq!(Distro::from_name("k8s"), None);
        assert_eq!(Distro::names(), "k3s, rke2");
    }
}
