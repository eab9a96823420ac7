//! What audit reads a cluster from, offline: each server's config files (merged as k3s merges
//! them: `config.yaml`, then `config.yaml.d/*.yaml` in lexical order, later files win, `key+:`
//! appends; pkg/configfilearg), and nodes as the API shows them (a saved `kubectl get nodes -o
//! json`, or the live list `live.rs` reads): role labels, the node-args annotation, the kubelet
//! version.

use std::path::{Path, PathBuf};

use distro::{Distro, FlagKind, Version};
use indexmap::IndexMap;
use k8s_openapi::api::core::v1::Node;

use crate::diag::{Diagnostic, FileDiag};
use crate::explore::model::{value_text, Config};
use crate::raw::{ConfigValue, Role};

use super::Member;

/// What a config file must be, for help lines.
const CONFIG_HELP: &str = "a config.yaml is a map of the server's flags without their dashes, e.g. `embedded-registry: true`; `key+:` appends to a list";

/// The files of one server's config, in the order k3s reads them: `path` (a config.yaml, or a
/// folder holding one), then the `.yaml` files of the drop-in folder beside it, sorted.
pub(crate) fn config_files(path: &Path) -> Result<Vec<PathBuf>, Diagnostic> {
    let main = if path.is_dir() {
        path.join("config.yaml")
    } else {
        path.to_path_buf()
    };
    let dir = main.parent().map(Path::to_path_buf).unwrap_or_default();
    let dropins = dir.join(format!(
        "{}.d",
        main.file_name()
            .map_or("config.yaml".into(), |n| n.to_string_lossy())
    ));
    let mut files = Vec::new();
    if main.is_file() {
        files.push(main.clone());
    }
    if let Ok(entries) = std::fs::read_dir(&dropins) {
        let mut more: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
            .collect();
        more.sort();
        files.extend(more);
    }
    if files.is_empty() {
        return Err(Diagnostic::in_file(
            path,
            0,
            0,
            "no config.yaml there, nor any drop-in in a config.yaml.d folder beside it",
        )
        .help("give a server's config.yaml (its config.yaml.d/*.yaml beside it are read too) or the folder holding it"));
    }
    Ok(files)
}

/// Reads and merges one server's config files (see [`config_files`]); unknown keys are errors
/// at their line.
pub(crate) fn read_config(
    d: Distro,
    path: &Path,
) -> Result<IndexMap<String, ConfigValue>, Diagnostic> {
    let mut out: IndexMap<String, ConfigValue> = IndexMap::new();
    for file in config_files(path)? {
        let text = std::fs::read_to_string(&file).map_err(|e| {
            Diagnostic::in_file(&file, 0, 0, format!("cannot read it: {e}"))
                .help("give a readable config.yaml")
        })?;
        merge(&mut out, parse_file(d, &file, &text)?);
    }
    Ok(out)
}

/// One config file's keys, in order (`key+` kept as written).
pub(crate) fn parse_file(
    d: Distro,
    file: &Path,
    text: &str,
) -> Result<IndexMap<String, ConfigValue>, Diagnostic> {
    let meaningful = text
        .lines()
        .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#') && l.trim() != "---");
    if !meaningful {
        return Ok(IndexMap::new());
    }
    let fd = FileDiag { file };
    let v: serde_json::Value = serde_saphyr::from_str(text).map_err(|e| fd.yaml(&e, text))?;
    let serde_json::Value::Object(map) = v else {
        return Err(Diagnostic::in_file(
            file,
            1,
            1,
            "not a config file: the top level is not a map",
        )
        .help(CONFIG_HELP));
    };
    let known: Vec<String> = d.flags().iter().map(|f| f.name.clone()).collect();
    let mut out = IndexMap::new();
    for (k, v) in map {
        let base = k.strip_suffix('+').unwrap_or(&k);
        if !known.iter().any(|f| f == base) {
            let (line, col) = key_position(text, &k);
            let help = match crate::diag::suggest(base, &known) {
                Some(s) => format!("did you mean `{s}`? The keys are the flags of `{} server` (releases/{}-flags.yaml)", d.facts().binary, d.name()),
                None => format!("the keys are the flags of `{} server` without their dashes (releases/{}-flags.yaml)", d.facts().binary, d.name()),
            };
            return Err(
                Diagnostic::in_file(file, line, col, format!("unknown key `{base}`")).help(help),
            );
        }
        if let Some(v) = ConfigValue::from_json(v) {
            out.insert(k, v);
        }
    }
    Ok(out)
}

/// Where `key:` starts in `text` (1-based), or the top of the file.
fn key_position(text: &str, key: &str) -> (u64, u64) {
    for (i, l) in text.lines().enumerate() {
        let t = l.trim_start();
        let t = t.trim_start_matches(['"', '\'']);
        if t.starts_with(key)
            && t[key.len()..]
                .trim_start_matches(['"', '\''])
                .starts_with(':')
        {
            let col = l.len() - l.trim_start().len() + 1;
            return (
                u64::try_from(i + 1).unwrap_or(1),
                u64::try_from(col).unwrap_or(1),
            );
        }
    }
    (1, 1)
}

/// Merges one file's keys into `into`: a later value wins, `key+:` appends to the list.
pub(crate) fn merge(into: &mut IndexMap<String, ConfigValue>, file: IndexMap<String, ConfigValue>) {
    for (k, v) in file {
        ConfigValue::merge_into(into, k, v);
    }
}

/// A merged config as the model's text values.
pub(crate) fn as_config(values: &IndexMap<String, ConfigValue>) -> Config {
    values
        .iter()
        .map(|(k, v)| (k.clone(), value_text(v)))
        .collect()
}

/// The server role a config's keys stand for (the distribution's role keys).
pub(crate) fn role_of_config(d: Distro, c: &Config) -> Role {
    let on = |k: &&str| c.get(*k).is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let etcd = Role::Etcd.config_keys(d);
    let cp = Role::ControlPlane.config_keys(d);
    if !etcd.is_empty() && etcd.iter().all(on) {
        Role::Etcd
    } else if !cp.is_empty() && cp.iter().all(on) {
        Role::ControlPlane
    } else {
        Role::All
    }
}

/// The host of a `server:` URL (`https://etcd-1:6443` → `etcd-1`).
pub(crate) fn url_host(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let host_port = rest.split('/').next()?;
    let host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split(']').next()?,
        None => host_port.rsplit_once(':').map_or(host_port, |(h, _)| h),
    };
    (!host.is_empty()).then(|| host.to_string())
}

/// The node-args annotation (`["server","--flannel-backend","none",…]`) as config keys: a
/// flag's value follows it (k3s splits `--key=value`), a boolean flag may stand alone, a
/// repeated flag is a list. Values k3s masked stay masked.
pub(crate) fn parse_node_args(d: Distro, args: &[String]) -> Config {
    let kind = |name: &str| d.flags().iter().find(|f| f.name == name).map(|f| f.kind);
    let mut out: IndexMap<String, Vec<String>> = IndexMap::new();
    let mut i = 0;
    while i < args.len() {
        let Some(flag) = args[i].strip_prefix("--") else {
            i += 1;
            continue;
        };
        let (name, inline) = match flag.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (flag.to_string(), None),
        };
        let next = args.get(i + 1).filter(|a| !a.starts_with("--"));
        let value = match (inline, kind(&name)) {
            (Some(v), _) => v,
            (None, Some(FlagKind::Bool)) => match next {
                Some(v) if v == "true" || v == "false" => {
                    i += 1;
                    v.clone()
                }
                _ => "true".to_string(),
            },
            (None, _) => match next {
                Some(v) => {
                    i += 1;
                    v.clone()
                }
                None => "true".to_string(),
            },
        };
        out.entry(name).or_default().push(value);
        i += 1;
    }
    out.into_iter().map(|(k, v)| (k, v.join(","))).collect()
}

/// The node-args annotation's name on `d` (`k3s.io/node-args`).
pub(crate) fn node_args_annotation(d: Distro) -> String {
    format!("{}.io/node-args", d.facts().binary)
}

/// The distribution whose annotation a node carries.
fn distro_of(node: &Node) -> Option<Distro> {
    let ann = node.metadata.annotations.as_ref()?;
    Distro::ALL
        .iter()
        .copied()
        .find(|d| ann.contains_key(&node_args_annotation(*d)))
}

/// The role its labels give (`node-role.kubernetes.io/etcd`, `…/control-plane`, `…/master`).
fn role_of_labels(node: &Node) -> Role {
    let labels = node.metadata.labels.clone().unwrap_or_default();
    let has = |r: &str| {
        labels
            .get(&format!("node-role.kubernetes.io/{r}"))
            .is_some_and(|v| v == "true" || v.is_empty())
    };
    match (has("etcd"), has("control-plane") || has("master")) {
        (true, true) => Role::All,
        (true, false) => Role::Etcd,
        (false, true) => Role::ControlPlane,
        (false, false) => Role::Agent,
    }
}

/// The cluster's nodes as the API lists them. `Err` names the node whose annotation is unreadable.
pub(crate) fn members_of_nodes(nodes: &[Node]) -> Result<(Distro, Vec<Member>), String> {
    let d = nodes.iter().find_map(distro_of).ok_or_else(|| {
        format!(
            "no node carries a node-args annotation ({}): not a k3s or RKE2 cluster, or nodes registered by another distribution",
            Distro::ALL.iter().map(|d| node_args_annotation(*d)).collect::<Vec<_>>().join(", ")
        )
    })?;
    let mut members = Vec::new();
    let mut hosts: Vec<(String, String)> = Vec::new();
    for n in nodes {
        let name = n.metadata.name.clone().unwrap_or_default();
        let ann = n.metadata.annotations.clone().unwrap_or_default();
        let role = role_of_labels(n);
        let running = match ann.get(&node_args_annotation(d)) {
            Some(text) => match serde_json::from_str::<Vec<String>>(text) {
                Ok(args) => Some(parse_node_args(d, &args)),
                // An agent's keys are not audited (only servers hold critical keys): its
                // unreadable annotation does not stop the audit of the servers.
                Err(_) if role == Role::Agent => None,
                Err(e) => {
                    return Err(format!(
                        "node {name}: its {} annotation is not a JSON array of strings: {e}",
                        node_args_annotation(d)
                    ))
                }
            },
            None => None,
        };
        let info = n.status.as_ref().and_then(|s| s.node_info.as_ref());
        let version = info.and_then(|i| Version::parse_for(d, &i.kubelet_version));
        for a in n
            .status
            .as_ref()
            .and_then(|s| s.addresses.clone())
            .unwrap_or_default()
        {
            hosts.push((a.address, name.clone()));
        }
        hosts.push((name.clone(), name.clone()));
        members.push(Member {
            role,
            name,
            version,
            join: running
                .as_ref()
                .and_then(|c| c.get(d.facts().role_keys.join))
                .cloned(),
            running,
            configured: None,
        });
    }
    for m in &mut members {
        m.join = m.join.as_deref().and_then(url_host).map(|h| {
            hosts
                .iter()
                .find(|(a, _)| *a == h)
                .map_or(h, |(_, n)| n.clone())
        });
    }
    Ok((d, members))
}

/// A saved `kubectl get nodes -o json` (a `List` or `NodeList`, or one node).
pub(crate) fn read_nodes_file(path: &Path) -> Result<Vec<Node>, Diagnostic> {
    #[derive(serde::Deserialize)]
    struct List {
        items: Vec<Node>,
    }
    let text = std::fs::read_to_string(path).map_err(|e| {
        Diagnostic::in_file(path, 0, 0, format!("cannot read it: {e}"))
            .help("give the output of `kubectl get nodes -o json`")
    })?;
    let bad = |e: serde_json::Error| {
        Diagnostic::in_file(
            path,
            u64::try_from(e.line()).unwrap_or(1),
            u64::try_from(e.column()).unwrap_or(1),
            format!("not a node list: {e}"),
        )
        .help("give the output of `kubectl get nodes -o json` (a List of Node objects)")
    };
    let v: serde_json::Value = serde_json::from_str(&text).map_err(bad)?;
    if v.get("items").is_some() {
        Ok(serde_json::from_value::<List>(v).map_err(bad)?.items)
    } else {
        Ok(vec![serde_json::from_value::<Node>(v).map_err(bad)?])
    }
}
