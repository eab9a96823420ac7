//! Effective `k3s server` configuration: config file, drop-ins, env, flags.
//!
//! Follows k3s's `pkg/configfilearg`: `config.yaml` then
//! `config.yaml.d/*.yaml` (alphabetical) are flattened into `--key=value`
//! arguments (a later file wins, `key+:` appends), unknown keys are dropped
//! with k3s's warning, and the result is placed before the real command-line
//! flags, so flags override the files. `K3S_CONFIG_FILE` beats `--config`.

use std::path::{Path, PathBuf};

use crate::flags::{self, FlagValue, Kind};
use crate::version::{Changes, Version};
use distro::FlagCommand as Command;
use serde::{Deserialize, Serialize};

/// The stand-in imitates k3s: its default paths and port are k3s's facts (the ones repro
/// writes and reads), from the `distro` crate.
pub fn facts() -> &'static distro::Facts {
    crate::distro::facts()
}

/// Everything the stand-in acts on, after files, env and flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    pub cluster_init: bool,
    pub server_url: Option<String>,
    pub token: Option<String>,
    pub data_dir: PathBuf,
    pub node_name: Option<String>,
    pub node_ip: Option<String>,
    pub kubeconfig_out: PathBuf,
    pub private_registry: PathBuf,
    /// Supervisor/apiserver port (`--https-listen-port`, default 6443).
    pub https_port: u16,
    pub disable_etcd: bool,
    pub disable_apiserver: bool,
    pub disable_controller_manager: bool,
    pub disable_scheduler: bool,
    pub disable_cloud_controller: bool,
    pub disable_network_policy: bool,
    pub disable_helm_controller: bool,
    /// `--disable` items (comma-split), e.g. `traefik`, `servicelb`.
    pub disable: Vec<String>,
    /// `None` when the imitated release has no such flag.
    pub embedded_registry: Option<bool>,
    pub supervisor_metrics: Option<bool>,
    pub cluster_cidr: Vec<String>,
    pub service_cidr: Vec<String>,
    pub cluster_dns: Vec<String>,
    pub cluster_domain: String,
    pub secrets_encryption: bool,
    /// `None` when the imitated release has no such flag (default `aescbc`).
    pub secrets_encryption_provider: Option<String>,
    pub flannel_backend: String,
    pub flannel_ipv6_masq: bool,
    pub flannel_external_ip: bool,
    /// No k3s release of the modelled lines has a flag for it: only its default.
    pub flannel_ip_masq_disable_random_fully: Option<bool>,
    pub egress_selector_mode: String,
    /// Not critical: an agent takes them from the server it reaches, with no guard
    /// (pkg/agent/config/config.go `get()`, `getKubeProxyDisabled`).
    pub disable_kube_proxy: bool,
    pub service_node_port_range: String,
    pub system_default_registry: String,
    /// `--node-external-ip` (the flannel-external-ip warning looks at it).
    pub node_external_ip: Vec<String>,
}

impl ServerConfig {
    fn defaults(version: &Version) -> ServerConfig {
        ServerConfig {
            cluster_init: false,
            server_url: None,
            token: None,
            data_dir: PathBuf::from(facts().data_dir),
            node_name: None,
            node_ip: None,
            kubeconfig_out: PathBuf::from(facts().kubeconfig_path),
            private_registry: PathBuf::from(facts().registries_path),
            https_port: facts().supervisor_port,
            disable_etcd: false,
            disable_apiserver: false,
            disable_controller_manager: false,
            disable_scheduler: false,
            disable_cloud_controller: false,
            disable_network_policy: false,
            disable_helm_controller: false,
            disable: Vec::new(),
            embedded_registry: version.has_embedded_registry().then_some(false),
            supervisor_metrics: version.has_supervisor_metrics().then_some(false),
            cluster_cidr: Vec::new(),
            service_cidr: Vec::new(),
            cluster_dns: Vec::new(),
            cluster_domain: "cluster.local".to_string(),
            secrets_encryption: false,
            secrets_encryption_provider: version
                .has_encrypt_provider()
                .then(|| "aescbc".to_string()),
            flannel_backend: "vxlan".to_string(),
            flannel_ipv6_masq: false,
            flannel_external_ip: false,
            flannel_ip_masq_disable_random_fully: version
                .has_flannel_ip_masq_disable_random_fully()
                .then_some(false),
            egress_selector_mode: "agent".to_string(),
            disable_kube_proxy: false,
            service_node_port_range: "30000-32767".to_string(),
            system_default_registry: String::new(),
            node_external_ip: Vec::new(),
        }
    }

    pub fn disables(&self, component: &str) -> bool {
        self.disable.iter().any(|d| d == component)
    }
}

/// What loading produced besides the config: k3s prints these warnings
/// before its banner.
#[derive(Debug, Default)]
pub struct Loaded {
    pub warnings: Vec<String>,
}

/// A config file (or drop-in) as read from disk. Only the text matters: k3s
/// names no file in its YAML errors either.
#[derive(Clone, Debug)]
pub struct ConfigFile {
    pub text: String,
}

/// Config path: `K3S_CONFIG_FILE`, else `--config`/`-c`, else the default.
pub fn config_path(args: &[String], env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    if let Some(path) = env(&crate::distro::env_name("CONFIG_FILE")).filter(|p| !p.is_empty()) {
        return PathBuf::from(path);
    }
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        for name in ["--config", "-c"] {
            if arg == name {
                if let Some(path) = iter.next() {
                    return PathBuf::from(path);
                }
            } else if let Some(path) = arg.strip_prefix(&format!("{name}=")) {
                return PathBuf::from(path);
            }
        }
    }
    PathBuf::from(facts().config_path)
}

/// The config file (if present) then its drop-ins, in the order k3s reads them.
/// A missing file is not an error (k3s ignores it too).
pub fn read_config_files(path: &Path) -> Result<Vec<ConfigFile>, String> {
    let mut files = Vec::new();
    match std::fs::read_to_string(path) {
        Ok(text) => files.push(ConfigFile { text }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("open {}: {e}", path.display())),
    }
    let dropin_dir = PathBuf::from(format!("{}.d", path.display()));
    let mut dropins: Vec<PathBuf> = match std::fs::read_dir(&dropin_dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.is_file() && has_yaml_suffix(p))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(format!("open {}: {e}", dropin_dir.display())),
    };
    // os.ReadDir sorts by file name.
    dropins.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    for p in dropins {
        let text = std::fs::read_to_string(&p).map_err(|e| format!("open {}: {e}", p.display()))?;
        files.push(ConfigFile { text });
    }
    Ok(files)
}

fn has_yaml_suffix(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml"))
}

/// Flattens config files into `--key=value` arguments like k3s's
/// `readConfigFile`: first-seen key order, later files win, `key+` appends,
/// lists become repeated flags.
pub fn files_to_args(files: &[ConfigFile]) -> Result<Vec<String>, String> {
    let mut order: Vec<String> = Vec::new();
    let mut values: Vec<(String, Vec<String>)> = Vec::new();
    for file in files {
        for (raw_key, value) in parse_yaml_map(&file.text)? {
            let append = raw_key.ends_with('+');
            let key = raw_key.trim_end_matches('+').to_string();
            let items = yaml_items(&value);
            match values.iter_mut().find(|(k, _)| *k == key) {
                Some((_, existing)) if append => existing.extend(items),
                Some((_, existing)) => *existing = items,
                None => {
                    order.push(key.clone());
                    values.push((key, items));
                }
            }
        }
    }
    let mut args = Vec::new();
    for key in order {
        let prefix = if key.chars().count() == 1 { "-" } else { "--" };
        if let Some((_, items)) = values.iter().find(|(k, _)| *k == key) {
            for item in items {
                args.push(format!("{prefix}{key}={item}"));
            }
        }
    }
    Ok(args)
}

/// A YAML document as an ordered map. An empty document is an empty map.
fn parse_yaml_map(text: &str) -> Result<Vec<(String, serde_json::Value)>, String> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let value: serde_json::Value = serde_saphyr::from_str(text).map_err(yaml_error)?;
    match value {
        serde_json::Value::Null => Ok(Vec::new()),
        serde_json::Value::Object(map) => Ok(map.into_iter().collect()),
        _ => Err(
            "yaml: unmarshal errors:\n  line 1: cannot unmarshal !!seq into yaml.MapSlice".into(),
        ),
    }
}

/// yaml.v2-style `yaml: line N: …` for a parse error (k3s logs it as fatal).
fn yaml_error(e: serde_saphyr::Error) -> String {
    let text = e.to_string();
    let first = text.lines().next().unwrap_or("invalid YAML").trim();
    // serde-saphyr says `error: line 2 column 8: what`; keep only `what`.
    let what = first.strip_prefix("error: ").unwrap_or(first);
    let what = match what.split_once(": ") {
        Some((pos, rest)) if pos.starts_with("line ") => rest,
        _ => what,
    };
    match e.location() {
        Some(loc) => format!("yaml: line {}: {what}", loc.line()),
        None => format!("yaml: {what}"),
    }
}

/// `convert.ToString` on each item; a list stays a list.
fn yaml_items(value: &serde_json::Value) -> Vec<String> {
    match value {
        serde_json::Value::Array(items) => items.iter().map(scalar_string).collect(),
        other => vec![scalar_string(other)],
    }
}

fn scalar_string(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Null => String::new(),
        serde_json::Value::Bool(b) => b.to_string(),
        serde_json::Value::Number(n) => n.to_string(),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// k3s's `stripInvalidFlags`: config-file arguments for flags this release
/// does not have are dropped, each with a warning (its message keeps the
/// stray `\n` k3s has in its format string).
pub fn strip_unknown(
    args: Vec<String>,
    version: &Version,
    command: Command,
    warnings: &mut Vec<String>,
) -> Vec<String> {
    args.into_iter()
        .filter(|arg| {
            let name = arg.trim_start_matches('-');
            let name = name.split_once('=').map_or(name, |(n, _)| n);
            if flags::lookup(name, version, command).is_some() {
                true
            } else {
                let shown = arg.split_once('=').map_or(arg.as_str(), |(n, _)| n);
                warnings.push(format!(
                    "Unknown flag {shown} found in config.yaml, skipping\n"
                ));
                false
            }
        })
        .collect()
}

/// Everything `load` needs from the outside world, so tests need no files.
pub struct Inputs<'a> {
    pub cli_args: &'a [String],
    pub files: &'a [ConfigFile],
    pub env: &'a dyn Fn(&str) -> Option<String>,
    pub version: &'a Version,
    /// `server` or `agent`: each has its own flags.
    pub command: Command,
}

/// Why loading failed; k3s words the two differently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// A config file is unreadable or not YAML: k3s logs the bare error.
    File(String),
    /// A flag value is bad: k3s's CLI reports `Error: …`.
    Flags(String),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::File(e) => f.write_str(e),
            LoadError::Flags(e) => write!(f, "Error: {e}"),
        }
    }
}

/// Files → args, strip unknown keys, append CLI flags, apply env defaults,
/// then read every flag in order (so a later one wins).
pub fn load(inputs: &Inputs<'_>) -> Result<(ServerConfig, Loaded), LoadError> {
    let mut loaded = Loaded::default();
    let file_args = files_to_args(inputs.files).map_err(LoadError::File)?;
    let file_args = strip_unknown(
        file_args,
        inputs.version,
        inputs.command,
        &mut loaded.warnings,
    );
    let mut all = file_args;
    all.extend(inputs.cli_args.iter().cloned());
    let parsed = flags::parse(&all, inputs.version, inputs.command).map_err(LoadError::Flags)?;
    for name in &parsed.unknown {
        // Real k3s refuses unknown command-line flags; the stand-in cannot
        // know all of them, so it keeps going and says so.
        loaded.warnings.push(format!(
            "Unknown flag {name} on the command line; the k3s stand-in ignores it"
        ));
    }
    if let Some(extra) = parsed.positional.first() {
        loaded.warnings.push(format!(
            "Ignoring unexpected argument {extra:?} after server"
        ));
    }

    let mut cfg = ServerConfig::defaults(inputs.version);
    apply_env(&mut cfg, inputs.env).map_err(LoadError::Flags)?;
    for FlagValue { name, value } in &parsed.values {
        apply_flag(&mut cfg, name, value).map_err(LoadError::Flags)?;
    }
    if crate::distro::forces_cluster_init() && inputs.command == Command::Server {
        // rke2's defaults set ClusterInit on every server; the one without `server:` creates
        // the cluster (docs/rke2-behaviour.md §5).
        cfg.cluster_init = true;
        // The same defaults.Set forces k3s's network policy controller and flannel off: rke2
        // deploys its own CNI (rancher/rke2 pkg/cli/defaults; docs/rke2-behaviour.md §14).
        cfg.disable_network_policy = true;
        cfg.flannel_backend = "none".to_string();
    }
    if let Some(path) = token_file(&parsed.values) {
        if cfg.token.is_none() {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| LoadError::Flags(format!("failed to read token file {path}: {e}")))?;
            cfg.token = Some(text.trim().to_string());
        }
    }
    Ok((cfg, loaded))
}

fn token_file(values: &[FlagValue]) -> Option<String> {
    values
        .iter()
        .rev()
        .find(|f| f.name == "token-file")
        .map(|f| f.value.clone())
}

/// urfave/cli applies `EnvVar` values as defaults that flags then override.
fn apply_env(cfg: &mut ServerConfig, env: &dyn Fn(&str) -> Option<String>) -> Result<(), String> {
    let get = |k: &str| env(k).filter(|v| !v.is_empty());
    if let Some(v) = get(&crate::distro::env_name("TOKEN")) {
        cfg.token = Some(v);
    }
    if let Some(v) = get(&crate::distro::env_name("URL")) {
        cfg.server_url = Some(v);
    }
    if let Some(v) = get(&crate::distro::env_name("NODE_NAME")) {
        cfg.node_name = Some(v);
    }
    if let Some(v) = get(&crate::distro::env_name("DATA_DIR")) {
        cfg.data_dir = PathBuf::from(v);
    }
    if let Some(v) = get(&crate::distro::env_name("CLUSTER_INIT")) {
        cfg.cluster_init = flags::parse_bool("cluster-init", &v)?;
    }
    Ok(())
}

fn split_list(value: &str) -> impl Iterator<Item = String> + '_ {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn apply_flag(cfg: &mut ServerConfig, name: &str, value: &str) -> Result<(), String> {
    let boolean = || flags::parse_bool(name, value);
    match name {
        "cluster-init" => cfg.cluster_init = boolean()?,
        "server" => cfg.server_url = Some(value.to_string()).filter(|v| !v.is_empty()),
        "token" => cfg.token = Some(value.to_string()).filter(|v| !v.is_empty()),
        "data-dir" => cfg.data_dir = PathBuf::from(value),
        "node-name" => cfg.node_name = Some(value.to_string()).filter(|v| !v.is_empty()),
        "node-ip" => {
            if cfg.node_ip.is_none() {
                cfg.node_ip = split_list(value).next();
            }
        }
        "write-kubeconfig" => cfg.kubeconfig_out = PathBuf::from(value),
        "private-registry" => cfg.private_registry = PathBuf::from(value),
        "https-listen-port" => {
            cfg.https_port = value
                .parse()
                .map_err(|_| format!("invalid value {value:?} for flag -https-listen-port"))?
        }
        "disable-etcd" => cfg.disable_etcd = boolean()?,
        "disable-apiserver" => cfg.disable_apiserver = boolean()?,
        "disable-controller-manager" => cfg.disable_controller_manager = boolean()?,
        "disable-scheduler" => cfg.disable_scheduler = boolean()?,
        "disable-cloud-controller" => cfg.disable_cloud_controller = boolean()?,
        "disable-network-policy" => cfg.disable_network_policy = boolean()?,
        "disable-helm-controller" => cfg.disable_helm_controller = boolean()?,
        "disable" => cfg.disable.extend(split_list(value)),
        "embedded-registry" => cfg.embedded_registry = Some(boolean()?),
        "supervisor-metrics" => cfg.supervisor_metrics = Some(boolean()?),
        "cluster-cidr" => cfg.cluster_cidr.extend(split_list(value)),
        "service-cidr" => cfg.service_cidr.extend(split_list(value)),
        "cluster-dns" => cfg.cluster_dns.extend(split_list(value)),
        "cluster-domain" => cfg.cluster_domain = value.to_string(),
        "secrets-encryption" => cfg.secrets_encryption = boolean()?,
        "secrets-encryption-provider" => match value {
            "aescbc" | "secretbox" => cfg.secrets_encryption_provider = Some(value.to_string()),
            other => return Err(format!("unsupported secrets-encryption-provider {other}")),
        },
        "flannel-backend" => cfg.flannel_backend = value.to_string(),
        "flannel-ipv6-masq" => cfg.flannel_ipv6_masq = boolean()?,
        "flannel-external-ip" => cfg.flannel_external_ip = boolean()?,
        "egress-selector-mode" => cfg.egress_selector_mode = value.to_string(),
        "disable-kube-proxy" => cfg.disable_kube_proxy = boolean()?,
        "service-node-port-range" => cfg.service_node_port_range = value.to_string(),
        "system-default-registry" => cfg.system_default_registry = value.to_string(),
        "node-external-ip" => cfg.node_external_ip.extend(split_list(value)),
        _ => {
            // Accepted and ignored; bool flags still have to parse like k3s's.
            if flags::all()
                .iter()
                .any(|f| f.name == name && f.kind == Kind::Bool)
            {
                boolean()?;
            }
        }
    }
    Ok(())
}

/// Checks k3s makes before it starts (messages as k3s prints them).
pub fn validate(cfg: &ServerConfig) -> Result<(), String> {
    if cfg.disable_etcd && cfg.server_url.is_none() {
        return Err("invalid flag use; --server is required with --disable-etcd".into());
    }
    match cfg.egress_selector_mode.as_str() {
        "agent" | "cluster" | "pod" | "disabled" => {}
        other => return Err(format!("invalid egress-selector-mode {other}")),
    }
    PortRange::parse(&cfg.service_node_port_range)?;
    if let Some(url) = &cfg.server_url {
        if !url.starts_with("https://") {
            return Err(format!(
                "only https:// URLs are supported, invalid scheme: {url}"
            ));
        }
    }
    Ok(())
}

/// `utilnet.PortRange` as encoding/json writes it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortRange {
    #[serde(rename = "Base")]
    pub base: u16,
    #[serde(rename = "Size")]
    pub size: u32,
}

impl PortRange {
    /// `utilnet.ParsePortRange`: `30000-32767` (or one port); k3s wraps its error as
    /// `invalid port range <text>`.
    pub fn parse(text: &str) -> Result<PortRange, String> {
        let bad = || format!("invalid port range {text}");
        let (lo, hi) = match text.trim().split_once('-') {
            Some((lo, hi)) => (lo, hi),
            None => (text.trim(), text.trim()),
        };
        let lo: u16 = lo.trim().parse().map_err(|_| bad())?;
        let hi: u16 = hi.trim().parse().map_err(|_| bad())?;
        if hi < lo {
            return Err(bad());
        }
        Ok(PortRange {
            base: lo,
            size: u32::from(hi - lo) + 1,
        })
    }
}

impl std::fmt::Display for PortRange {
    /// `PortRange.String()`: `30000-32767`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let last = u32::from(self.base) + self.size.saturating_sub(1);
        write!(f, "{}-{last}", self.base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Version {
        crate::version::parse(text).expect("valid version")
    }

    /// The name only documents the test: order in the slice is what counts.
    fn file(_name: &str, text: &str) -> ConfigFile {
        ConfigFile {
            text: text.to_string(),
        }
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn load_with(
        files: &[ConfigFile],
        cli: &[&str],
        env: &dyn Fn(&str) -> Option<String>,
        version: &str,
    ) -> (ServerConfig, Loaded) {
        try_load(files, cli, env, version).expect("loads")
    }

    fn try_load(
        files: &[ConfigFile],
        cli: &[&str],
        env: &dyn Fn(&str) -> Option<String>,
        version: &str,
    ) -> Result<(ServerConfig, Loaded), LoadError> {
        let cli: Vec<String> = cli.iter().map(|s| s.to_string()).collect();
        let version = v(version);
        load(&Inputs {
            cli_args: &cli,
            files,
            env,
            version: &version,
            command: distro::FlagCommand::Server,
        })
    }

    #[test]
    fn dropins_merge_in_order_and_flags_override() {
        let files = [
            file("config.yaml", "cluster-init: true\ntoken: from-file\ndisable:\n  - traefik\nflannel-backend: host-gw\n"),
            file("config.yaml.d/10-a.yaml", "token: from-dropin\nembedded-registry: true\n"),
            file("config.yaml.d/20-b.yaml", "disable+: [servicelb]\nembedded-registry: false\n"),
        ];
        let (cfg, loaded) = load_with(
            &files,
            &["--token", "from-cli", "--disable=metrics-server"],
            &no_env,
            "v1.33.4+k3s1",
        );
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        assert!(cfg.cluster_init);
        assert_eq!(cfg.token.as_deref(), Some("from-cli"));
        assert_eq!(cfg.disable, vec!["traefik", "servicelb", "metrics-server"]);
        assert_eq!(cfg.embedded_registry, Some(false));
        assert_eq!(cfg.flannel_backend, "host-gw");
    }

    #[test]
    fn later_file_replaces_a_list_without_plus() {
        let files = [
            file("config.yaml", "disable: [traefik]\n"),
            file("config.yaml.d/a.yaml", "disable: [servicelb]\n"),
        ];
        let (cfg, _) = load_with(&files, &[], &no_env, "v1.33.4+k3s1");
        assert_eq!(cfg.disable, vec!["servicelb"]);
    }

    #[test]
    fn env_is_a_default_that_flags_and_files_override() {
        let env = |k: &str| match k {
            "K3S_TOKEN" => Some("env-token".to_string()),
            "K3S_URL" => Some("https://etcd-1:6443".to_string()),
            _ => None,
        };
        let (cfg, _) = load_with(&[], &[], &env, "v1.33.4+k3s1");
        assert_eq!(cfg.token.as_deref(), Some("env-token"));
        assert_eq!(cfg.server_url.as_deref(), Some("https://etcd-1:6443"));
        let files = [file("config.yaml", "token: file-token\n")];
        let (cfg, _) = load_with(&files, &[], &env, "v1.33.4+k3s1");
        assert_eq!(cfg.token.as_deref(), Some("file-token"));
    }

    #[test]
    fn unknown_and_not_yet_released_keys_warn_and_are_skipped() {
        let files = [file("config.yaml", "supervisor-metrics: true\nembedded-registry: true\nno-such-key: 1\nwrite-kubeconfig-mode: \"0644\"\n")];
        let (cfg, loaded) = load_with(&files, &[], &no_env, "v1.29.1+k3s2");
        assert_eq!(cfg.supervisor_metrics, None);
        assert_eq!(cfg.embedded_registry, Some(true));
        assert_eq!(
            loaded.warnings,
            vec![
                "Unknown flag --supervisor-metrics found in config.yaml, skipping\n",
                "Unknown flag --no-such-key found in config.yaml, skipping\n",
            ]
        );
    }

    #[test]
    fn yaml_errors_are_reported_with_a_line() {
        let files = [file(
            "config.yaml",
            "cluster-init: true\ntoken: [unclosed\n",
        )];
        let err = try_load(&files, &[], &no_env, "v1.33.4+k3s1").expect_err("bad yaml");
        assert_eq!(
            err,
            LoadError::File("yaml: line 2: unclosed bracket '['".into())
        );
    }

    #[test]
    fn non_map_document_is_an_error() {
        assert!(files_to_args(&[file("c.yaml", "- a\n- b\n")]).is_err());
    }

    #[test]
    fn config_path_env_beats_flag() {
        let args: Vec<String> = vec!["--config".into(), "/x.yaml".into()];
        assert_eq!(config_path(&args, &no_env), PathBuf::from("/x.yaml"));
        let env = |k: &str| (k == "K3S_CONFIG_FILE").then(|| "/env.yaml".to_string());
        assert_eq!(config_path(&args, &env), PathBuf::from("/env.yaml"));
        let args: Vec<String> = vec!["-c=/y.yaml".into()];
        assert_eq!(config_path(&args, &no_env), PathBuf::from("/y.yaml"));
        assert_eq!(
            config_path(&[], &no_env),
            PathBuf::from(facts().config_path)
        );
    }

    #[test]
    fn validation_messages_match_k3s() {
        let (mut cfg, _) = load_with(&[], &["--disable-etcd"], &no_env, "v1.33.4+k3s1");
        assert_eq!(
            validate(&cfg),
            Err("invalid flag use; --server is required with --disable-etcd".to_string())
        );
        cfg.server_url = Some("https://etcd-1:6443".into());
        assert_eq!(validate(&cfg), Ok(()));
        cfg.egress_selector_mode = "nope".into();
        assert!(validate(&cfg).is_err());
    }

    #[test]
    fn bad_boolean_is_an_error() {
        let files = [file("config.yaml", "cluster-init: maybe\n")];
        let err = try_load(&files, &[], &no_env, "v1.33.4+k3s1").expect_err("bad bool");
        assert_eq!(
            err.to_string(),
            "Error: invalid boolean value \"maybe\" for -cluster-init: parse error"
        );
    }
}
