//! A node's own k3s config, from the files the user has: `config.yaml`, its drop-ins, and the
//! flags of a systemd unit's `ExecStart` — merged as k3s merges them (pkg/configfilearg: the
//! drop-ins after config.yaml in order, `key+:` appends, command-line flags win).

use indexmap::IndexMap;

use super::deps::{ConfigValue, Role};
use super::sources::{ConfigFile, ConfigKind, InputError};

#[derive(Debug, Clone, Default)]
pub(crate) struct NodeConfig {
    pub(crate) values: IndexMap<String, ConfigValue>,
    /// The file each key's value came from.
    pub(crate) origin: IndexMap<String, String>,
    /// The files it was read from, in order.
    pub(crate) files: Vec<String>,
}

impl NodeConfig {
    /// Merges the files in order (YAML first, unit flags last: flags override files).
    pub(crate) fn read(files: &[&ConfigFile]) -> Result<NodeConfig, InputError> {
        let mut out = NodeConfig::default();
        let mut ordered: Vec<&&ConfigFile> = files.iter().collect();
        ordered.sort_by_key(|f| f.kind == ConfigKind::Unit);
        for f in ordered {
            let values = match f.kind {
                ConfigKind::Yaml => parse_yaml(&f.label, &f.text)?,
                ConfigKind::Unit => parse_unit(&f.text),
            };
            for (k, v) in values {
                let key = k.clone();
                if ConfigValue::merge_into(&mut out.values, k, v) {
                    out.origin.insert(key, f.label.clone());
                }
            }
            out.files.push(f.label.clone());
        }
        Ok(out)
    }

    pub(crate) fn get(&self, key: &str) -> Option<&ConfigValue> {
        self.values.get(key)
    }

    pub(crate) fn is_true(&self, key: &str) -> bool {
        self.get(key).is_some_and(ConfigValue::is_true)
    }

    /// The server role the config gives (the distribution's "Managing Server Roles": the keys
    /// each role stands for). None when the keys make no known role (e.g. only one of etcd's three).
    /// `distro` is the boot's distribution (what its log told): its keys stand for the roles.
    pub(crate) fn server_role(&self, distro: distro::Distro) -> Option<Role> {
        let set = |r: Role| {
            let keys = r.config_keys(distro);
            !keys.is_empty() && keys.iter().all(|k| self.is_true(k))
        };
        let partial = |r: Role| r.config_keys(distro).iter().any(|k| self.is_true(k));
        match (set(Role::Etcd), set(Role::ControlPlane)) {
            (true, false) => Some(Role::Etcd),
            (false, true) if !partial(Role::Etcd) => Some(Role::ControlPlane),
            (false, false) if !partial(Role::Etcd) && !partial(Role::ControlPlane) => {
                Some(Role::All)
            }
            _ => None,
        }
    }

    /// The config says how `key` is set, as it would read in config.yaml.
    pub(crate) fn show(&self, key: &str) -> Option<String> {
        self.get(key).map(|v| format!("{key}: {}", v.to_yaml()))
    }
}

/// What a config file given to `repro inspect` must be.
const CONFIG_HELP: &str =
    "a config.yaml is a map of k3s flags without their dashes, e.g. `embedded-registry: true`";

fn parse_yaml(label: &str, text: &str) -> Result<IndexMap<String, ConfigValue>, InputError> {
    let meaningful = text
        .lines()
        .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#') && l.trim() != "---");
    if !meaningful {
        return Ok(IndexMap::new());
    }
    let v: serde_json::Value = serde_saphyr::from_str(text).map_err(|e| {
        // Printed after `error: ` as every input error is (`error: {label}: error: …`).
        InputError::new(format!("{label}: error: not a k3s config file: {e}")).help(CONFIG_HELP)
    })?;
    let serde_json::Value::Object(map) = v else {
        return Err(InputError::new(format!(
            "{label}:1:1: error: not a k3s config file (the top level is not a map)"
        ))
        .help(CONFIG_HELP));
    };
    Ok(map
        .into_iter()
        .filter_map(|(k, v)| ConfigValue::from_json(v).map(|v| (k, v)))
        .collect())
}

/// The flags of a systemd unit's `ExecStart=` (the k3s install script writes one flag per line,
/// quoted, with `\` continuations).
fn parse_unit(text: &str) -> IndexMap<String, ConfigValue> {
    let joined = text.replace("\\\n", " ");
    let mut out = IndexMap::new();
    for line in joined.lines() {
        let Some(cmd) = line.trim().strip_prefix("ExecStart=") else {
            continue;
        };
        let words: Vec<String> = cmd
            .split_whitespace()
            .map(|w| w.trim_matches(|c| c == '\'' || c == '"').to_string())
            .collect();
        let mut i = 0;
        while i < words.len() {
            let w = &words[i];
            if let Some(flag) = w.strip_prefix("--") {
                match flag.split_once('=') {
                    Some((k, v)) => {
                        out.insert(k.to_string(), flag_value(v));
                    }
                    None => {
                        let next = words.get(i + 1);
                        if let Some(v) = next.filter(|n| !n.starts_with('-')) {
                            out.insert(flag.to_string(), flag_value(v));
                            i += 1;
                        } else {
                            out.insert(flag.to_string(), ConfigValue::Bool(true));
                        }
                    }
                }
            }
            i += 1;
        }
    }
    out
}

fn flag_value(v: &str) -> ConfigValue {
    match v {
        "true" => ConfigValue::Bool(true),
        "false" => ConfigValue::Bool(false),
        _ => match v.parse::<i64>() {
            Ok(i) => ConfigValue::Int(i),
            Err(_) => ConfigValue::Str(v.to_string()),
        },
    }
}

/// Whether a config value means what a check's config sets (`true` and `"true"` are the same
/// to k3s).
pub(crate) fn same(have: &ConfigValue, want: &ConfigValue) -> bool {
    match (have, want) {
        (h, ConfigValue::Bool(b)) => {
            if *b {
                h.is_true()
            } else {
                !h.is_true()
            }
        }
        (h, w) => h == w || h.to_yaml() == w.to_yaml(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str, kind: ConfigKind) -> ConfigFile {
        ConfigFile {
            node: "n".into(),
            boot: None,
            label: "cfg".into(),
            text: text.into(),
            kind,
        }
    }

    #[test]
    fn merges_files_drop_ins_and_unit_flags() {
        let a = file(
            "disable-apiserver: true\ndisable-controller-manager: true\ndisable-scheduler: true\nnode-label: [a=1]\n",
            ConfigKind::Yaml,
        );
        let b = file(
            "node-label+: [b=2]\nembedded-registry: false\n",
            ConfigKind::Yaml,
        );
        let unit = file(
            "[Service]\nExecStart=/usr/local/bin/k3s \\\n    server \\\n\t'--embedded-registry' \\\n\t'--server' \\\n\t'https://10.0.0.1:6443' \\\n",
            ConfigKind::Unit,
        );
        let c = NodeConfig::read(&[&unit, &a, &b]).unwrap();
        assert_eq!(c.server_role(distro::Distro::K3s), Some(Role::Etcd));
        assert!(
            c.is_true("embedded-registry"),
            "flags win over files: {c:?}"
        );
        assert_eq!(
            c.get("server"),
            Some(&ConfigValue::Str("https://10.0.0.1:6443".into()))
        );
        assert_eq!(
            c.get("node-label"),
            Some(&ConfigValue::List(vec![
                ConfigValue::Str("a=1".into()),
                ConfigValue::Str("b=2".into())
            ]))
        );
    }

    #[test]
    fn roles_from_keys() {
        let cp = NodeConfig::read(&[&file("disable-etcd: true\n", ConfigKind::Yaml)]).unwrap();
        assert_eq!(
            cp.server_role(distro::Distro::K3s),
            Some(Role::ControlPlane)
        );
        let all = NodeConfig::read(&[&file("# nothing\n", ConfigKind::Yaml)]).unwrap();
        assert_eq!(all.server_role(distro::Distro::K3s), Some(Role::All));
        let odd =
            NodeConfig::read(&[&file("disable-apiserver: true\n", ConfigKind::Yaml)]).unwrap();
        assert_eq!(odd.server_role(distro::Distro::K3s), None);
    }

    #[test]
    fn a_broken_config_names_the_file() {
        let e = NodeConfig::read(&[&file("a: [1\n", ConfigKind::Yaml)]).unwrap_err();
        assert!(e.0.message.starts_with("cfg"), "{e}");
        let e = NodeConfig::read(&[&file("- a\n- b\n", ConfigKind::Yaml)]).unwrap_err();
        assert!(e.to_string().contains("not a map"), "{e}");
    }

    #[test]
    fn booleans_compare_as_k3s_reads_them() {
        assert!(same(
            &ConfigValue::Str("true".into()),
            &ConfigValue::Bool(true)
        ));
        assert!(same(&ConfigValue::Bool(false), &ConfigValue::Bool(false)));
        assert!(!same(&ConfigValue::Bool(false), &ConfigValue::Bool(true)));
    }
}
