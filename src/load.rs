//! Reading and validating the user's files: YAML → raw model → checked [`Scenario`] types.
//!
//! Every problem becomes a [`Diagnostic`] with file, line and column, and the loader goes on
//! after the first one so a user sees all of them at once. Nothing here touches Docker.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Duration;

use indexmap::IndexMap;
use regex::Regex;
use serde_saphyr::Spanned;

use crate::diag::{Diagnostic, Diagnostics, FileDiag};
use crate::model::{
    CheckFile, ConfigValue, Pattern, PatternFile, RestartItem, Role, SignalsFile, SpannedMap,
    TopologyFile,
};
use crate::scenario::{
    Check, Expectations, Expected, LinePattern, Node, Probe, ProbeRule, Signal, Signals, Step,
    Topology, DEFAULT_SETTLE,
};
use crate::version::{K3sVersion, ReleaseSet};

/// Config keys repro derives from the topology; setting them by hand would contradict it.
const DERIVED_KEYS: &[(&str, &str)] = &[
    ("cluster-init", "mark the node `init: true` instead"),
    ("server", "use `join: <node>` instead"),
    (
        "token",
        "repro sets a random K3S_TOKEN per run; secrets never go in scenario files",
    ),
    ("agent-token", "secrets never go in scenario files"),
    ("disable-etcd", "use `role: control-plane` instead"),
    ("disable-apiserver", "use `role: etcd` instead"),
    ("disable-controller-manager", "use `role: etcd` instead"),
    ("disable-scheduler", "use `role: etcd` instead"),
];

/// What kind of file a path holds, told by its top-level keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Topology,
    Check,
    Signals,
}

pub fn file_kind(path: &Path, text: &str) -> Option<FileKind> {
    for line in text.lines() {
        let key = line.split(':').next().unwrap_or("").trim_end();
        match key {
            "signals" => return Some(FileKind::Signals),
            "nodes" => return Some(FileKind::Topology),
            "steps" => return Some(FileKind::Check),
            _ => {}
        }
    }
    // A file too broken to show its keys: go by where it lives.
    let dir = path
        .parent()
        .and_then(Path::file_name)
        .and_then(|s| s.to_str());
    match (path.file_name().and_then(|s| s.to_str()), dir) {
        (Some("signals.yaml"), _) => Some(FileKind::Signals),
        (_, Some("topologies")) => Some(FileKind::Topology),
        (_, Some("checks")) => Some(FileKind::Check),
        _ => None,
    }
}

fn parse<T: serde::de::DeserializeOwned>(path: &Path, text: &str) -> Result<T, Diagnostic> {
    let d = FileDiag { file: path };
    if text.trim().is_empty() {
        return Err(d.start("the file is empty"));
    }
    serde_saphyr::from_str::<T>(text).map_err(|e| d.yaml(&e))
}

fn version(d: &FileDiag, s: &Spanned<String>, out: &mut Diagnostics) -> Option<K3sVersion> {
    match s.value.parse::<K3sVersion>() {
        Ok(v) => Some(v),
        Err(e) => {
            out.push(d.span(s, e.to_string()));
            None
        }
    }
}

fn release_set(d: &FileDiag, list: &[Spanned<String>], out: &mut Diagnostics) -> ReleaseSet {
    let versions: Vec<K3sVersion> = list.iter().filter_map(|s| version(d, s, out)).collect();
    let mut lines = HashSet::new();
    for (v, s) in versions.iter().zip(list) {
        if !lines.insert(v.line()) {
            out.push(
                d.span(
                    s,
                    format!("two versions for release line {}.{}", v.major, v.minor),
                )
                .help("give one first version per release line"),
            );
        }
    }
    ReleaseSet::new(versions)
}

fn dns_label(name: &str) -> bool {
    let re = Regex::new(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$").expect("static regex");
    re.is_match(name)
}

// ---------------------------------------------------------------------------------------------
// Topologies

pub fn topology(path: &Path, text: &str) -> Result<Topology, Diagnostics> {
    let raw: TopologyFile = parse(path, text).map_err(|d| Diagnostics(vec![d]))?;
    let d = FileDiag { file: path };
    let mut out = Diagnostics::default();

    let default_version = version(&d, &raw.k3s_version, &mut out);
    let mut names: HashMap<&str, &Spanned<String>> = HashMap::new();
    for n in &raw.nodes {
        if !dns_label(&n.name.value) {
            out.push(
                d.span(
                    &n.name,
                    format!("`{}` is not a valid node name", n.name.value),
                )
                .help("use lowercase letters, digits and `-` (it becomes a container hostname)"),
            );
        }
        if let Some(first) = names.insert(&n.name.value, &n.name) {
            out.push(d.span(
                &n.name,
                format!(
                    "duplicate node name `{}` (first defined at line {})",
                    n.name.value,
                    first.referenced.line()
                ),
            ));
        }
    }
    if raw.nodes.is_empty() {
        out.push(
            d.start("a topology needs at least one node")
                .help("add `nodes:` with an `init: true` etcd node"),
        );
    }
    let inits: Vec<_> = raw
        .nodes
        .iter()
        .filter(|n| n.init.as_ref().is_some_and(|i| i.value))
        .collect();
    match inits.len() {
        0 if !raw.nodes.is_empty() => out.push(
            d.at(&raw.nodes[0].name.referenced, "no node is the init node")
                .help("mark exactly one etcd (or all) node `init: true`: it creates the cluster with cluster-init"),
        ),
        1 | 0 => {}
        _ => {
            for n in &inits[1..] {
                out.push(d.span(&n.name, format!("second init node `{}`; only one node may create the cluster", n.name.value))
                    .help(format!("keep `init: true` on `{}` only and give the others `join:`", inits[0].name.value)));
            }
        }
    }
    let role_of: HashMap<&str, Role> = raw
        .nodes
        .iter()
        .map(|n| (n.name.value.as_str(), n.role.value))
        .collect();
    let deferred: HashMap<&str, bool> = raw
        .nodes
        .iter()
        .map(|n| (n.name.value.as_str(), n.deferred))
        .collect();
    for n in &raw.nodes {
        let init = n.init.as_ref().is_some_and(|i| i.value);
        if init {
            let at = n
                .init
                .as_ref()
                .map(|i| &i.referenced)
                .unwrap_or(&n.name.referenced);
            if !n.role.value.runs_etcd() {
                out.push(d.at(at, format!("init node `{}` has role {}; only a node that runs etcd can create the cluster", n.name.value, n.role.value.as_str()))
                    .help("make an `etcd` or `all` node the init node"));
            }
            if let Some(j) = &n.join {
                out.push(
                    d.span(
                        j,
                        format!("init node `{}` cannot join another node", n.name.value),
                    )
                    .help("remove `join:` from the init node"),
                );
            }
            if n.deferred {
                out.push(
                    d.at(at, "the init node cannot be deferred")
                        .help("remove `deferred: true`"),
                );
            }
        } else {
            match &n.join {
                None => out.push(d.span(&n.name, format!("node `{}` neither creates the cluster nor joins a node", n.name.value))
                    .help("add `join: <node>` naming a server, or `init: true` for the one node that creates the cluster")),
                Some(j) if j.value == n.name.value => out.push(d.span(j, format!("node `{}` joins itself", n.name.value)).help("join another server")),
                Some(j) => match role_of.get(j.value.as_str()) {
                    None => out.push(d.span(j, format!("`{}` joins unknown node `{}`", n.name.value, j.value))
                        .help(format!("known nodes: {}", names_list(raw.nodes.iter().map(|n| n.name.value.as_str()))))),
                    Some(r) if !r.is_server() => out.push(d.span(j, format!("`{}` joins `{}`, an agent, which runs no supervisor", n.name.value, j.value))
                        .help("join a server node (role etcd, control-plane or all)")),
                    Some(_) if deferred.get(j.value.as_str()) == Some(&true) && !n.deferred => out.push(
                        d.span(j, format!("`{}` joins `{}`, which is deferred and not running when the cluster starts", n.name.value, j.value))
                            .help("join a node that starts with the cluster")),
                    Some(_) => {}
                },
            }
        }
        check_config_keys(&d, &n.config, &mut out);
        check_files(&d, &n.files, &mut out);
        for k in n.env.keys() {
            if k.value == "K3S_TOKEN" || k.value == "K3S_AGENT_TOKEN" || k.value == "K3S_URL" {
                out.push(
                    d.span(k, format!("`{}` is set by repro", k.value))
                        .help("repro sets K3S_TOKEN (random per run) and the join URL itself"),
                );
            }
        }
    }
    check_config_keys(&d, &raw.config, &mut out);
    check_files(&d, &raw.files, &mut out);

    if !out.is_empty() {
        return Err(out);
    }
    Ok(Topology {
        name: raw.name.value,
        description: raw.description,
        source: raw.source,
        path: path.to_path_buf(),
        default_version: default_version.expect("checked above"),
        config: unspan(raw.config),
        files: unspan(raw.files),
        nodes: raw
            .nodes
            .into_iter()
            .map(|n| Node {
                name: n.name.value,
                role: n.role.value,
                init: n.init.is_some_and(|i| i.value),
                join: n.join.map(|j| j.value),
                deferred: n.deferred,
                config: unspan(n.config),
                files: unspan(n.files),
                env: n.env.into_iter().map(|(k, v)| (k.value, v)).collect(),
            })
            .collect(),
    })
}

fn names_list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names.collect::<Vec<_>>().join(", ")
}

fn unspan<T>(m: SpannedMap<T>) -> IndexMap<String, T> {
    m.into_iter().map(|(k, v)| (k.value, v)).collect()
}

fn check_config_keys<T>(d: &FileDiag, config: &SpannedMap<T>, out: &mut Diagnostics) {
    let key_re = Regex::new(r"^[a-z0-9][a-z0-9-]*[a-z0-9]\+?$").expect("static regex");
    for k in config.keys() {
        if let Some((_, help)) = DERIVED_KEYS.iter().find(|(key, _)| *key == k.value) {
            out.push(
                d.span(
                    k,
                    format!("`{}` is derived by repro from the topology", k.value),
                )
                .help(*help),
            );
        } else if !key_re.is_match(&k.value) {
            out.push(d.span(k, format!("`{}` is not a k3s config key", k.value))
                .help("k3s keys are the long flag names without dashes in front, e.g. `embedded-registry`"));
        }
    }
}

fn check_files<T>(d: &FileDiag, files: &SpannedMap<T>, out: &mut Diagnostics) {
    for p in files.keys() {
        if !p.value.starts_with('/') || p.value.ends_with('/') || p.value.contains("/../") {
            out.push(
                d.span(p, format!("`{}` is not an absolute file path", p.value))
                    .help(
                        "give the full path inside the node, e.g. /etc/rancher/k3s/registries.yaml",
                    ),
            );
        } else if p.value == "/etc/rancher/k3s/config.yaml" {
            out.push(d.span(p, "config.yaml is rendered by repro from `config:`")
                .help("set keys under `config:` or add a drop-in under /etc/rancher/k3s/config.yaml.d/"));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Signals

pub fn signals(path: &Path, text: &str) -> Result<Signals, Diagnostics> {
    let raw: SignalsFile = parse(path, text).map_err(|d| Diagnostics(vec![d]))?;
    let d = FileDiag { file: path };
    let mut out = Diagnostics::default();
    let mut by_name = IndexMap::new();
    for (name, s) in raw.signals {
        let since = (!s.since.is_empty()).then(|| release_set(&d, &s.since, &mut out));
        let up = patterns(&d, &s.up, &mut out);
        let down = patterns(&d, &s.down, &mut out);
        let value = patterns(&d, &s.value, &mut out);
        let settled_by = patterns(&d, &s.settled_by, &mut out);
        if !value.is_empty() && (!up.is_empty() || !down.is_empty() || s.probe.is_some()) {
            out.push(
                d.span(
                    &name,
                    format!("signal `{}` mixes `value` with up/down/probe", name.value),
                )
                .help("a signal is either a value (version, roles) or a state (up/down)"),
            );
        }
        if value.is_empty() && up.is_empty() && down.is_empty() && s.probe.is_none() {
            out.push(
                d.span(
                    &name,
                    format!("signal `{}` has no way to be observed", name.value),
                )
                .help("give `up:`/`down:` log regexes, `value:` regexes or a `probe:`"),
            );
        }
        for p in &s.value {
            if let PatternFile::Plain(r) = &p.value {
                if !r.contains("(?P<value>") && !r.contains("(?<value>") {
                    out.push(d.span(p, "a value pattern needs a named group `(?P<value>...)` or a fixed `value:`")
                        .help("e.g. {match: 'ETCD server is now running', value: etcd}"));
                }
            }
        }
        let on_death = s.on_death.as_ref().and_then(|v| match v.value.as_str() {
            "up" => Some(Expected::Up),
            "down" => Some(Expected::Down),
            other => {
                out.push(
                    d.span(v, format!("`on-death: {other}` is not a state"))
                        .help("use `up` or `down`"),
                );
                None
            }
        });
        let probe = s.probe.as_ref().map(|p| {
            if p.command.is_empty() {
                out.push(
                    d.span(&name, "probe command is empty")
                        .help("e.g. [k3s, kubectl, get, --raw, /metrics]"),
                );
            }
            if p.up.is_empty() || p.down.is_empty() {
                out.push(d.span(&name, "a probe needs at least one `up` and one `down` rule"));
            }
            let rules =
                |rs: &[crate::model::ProbeRuleFile], out: &mut Diagnostics| -> Vec<ProbeRule> {
                    rs.iter()
                        .map(|r| ProbeRule {
                            exit: r.exit,
                            output: r
                                .output
                                .as_ref()
                                .and_then(|o| compile(&d, o, &o.value, out)),
                        })
                        .collect()
                };
            Probe {
                command: p.command.clone(),
                after: patterns(&d, &p.after, &mut out),
                up: rules(&p.up, &mut out),
                down: rules(&p.down, &mut out),
                timeout: p
                    .timeout
                    .as_ref()
                    .and_then(|t| duration(&d, t, &mut out))
                    .unwrap_or(Duration::from_secs(30)),
            }
        });
        by_name.insert(
            name.value.clone(),
            Signal {
                name: name.value,
                description: s.description,
                since,
                up,
                down,
                value,
                settled_by,
                probe,
                on_death,
            },
        );
    }
    if out.is_empty() {
        Ok(Signals {
            path: path.to_path_buf(),
            by_name,
        })
    } else {
        Err(out)
    }
}

fn compile<T>(d: &FileDiag, at: &Spanned<T>, re: &str, out: &mut Diagnostics) -> Option<Regex> {
    match Regex::new(re) {
        Ok(r) => Some(r),
        Err(e) => {
            let detail = e.to_string();
            let last = detail
                .lines()
                .last()
                .unwrap_or("invalid")
                .trim()
                .to_string();
            out.push(d.span(at, format!("invalid regex `{re}`: {last}"))
                .help("Rust regex syntax (https://docs.rs/regex); escape `[`, `(`, `.` and `+` to match them literally"));
            None
        }
    }
}

fn patterns(d: &FileDiag, list: &[Pattern], out: &mut Diagnostics) -> Vec<LinePattern> {
    list.iter()
        .filter_map(|p| {
            let (re, since, until, value) = match &p.value {
                PatternFile::Plain(r) => (r.as_str(), &[][..], &[][..], None),
                PatternFile::Full(f) => (
                    f.regex.as_str(),
                    &f.since[..],
                    &f.until[..],
                    f.value.clone(),
                ),
            };
            let set = |vs: &[String], out: &mut Diagnostics| {
                let spanned: Vec<Spanned<String>> = vs
                    .iter()
                    .map(|v| Spanned::new(v.clone(), p.referenced, p.defined))
                    .collect();
                (!vs.is_empty()).then(|| release_set(d, &spanned, out))
            };
            let since = set(since, out);
            let until = set(until, out);
            compile(d, p, re, out).map(|regex| LinePattern {
                regex,
                since,
                until,
                value,
            })
        })
        .collect()
}

fn duration(d: &FileDiag, s: &Spanned<String>, out: &mut Diagnostics) -> Option<Duration> {
    match humantime::parse_duration(&s.value) {
        Ok(v) => Some(v),
        Err(e) => {
            out.push(
                d.span(s, format!("`{}` is not a duration: {e}", s.value))
                    .help("e.g. 3s, 500ms, 1m"),
            );
            None
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Checks

/// Validates a check against its topology and the signals. `topologies` are all known ones.
pub fn check(
    path: &Path,
    text: &str,
    topologies: &[Topology],
    signals: &Signals,
) -> Result<Check, Diagnostics> {
    let raw: CheckFile = parse(path, text).map_err(|d| Diagnostics(vec![d]))?;
    let d = FileDiag { file: path };
    let mut out = Diagnostics::default();
    let fixed_in = release_set(&d, &raw.fixed_in, &mut out);
    let settle = raw
        .settle
        .as_ref()
        .and_then(|s| duration(&d, s, &mut out))
        .unwrap_or(DEFAULT_SETTLE);
    let topo = topologies.iter().find(|t| t.name == raw.topology.value);
    if topo.is_none() {
        out.push(
            d.span(
                &raw.topology,
                format!("topology `{}` does not exist", raw.topology.value),
            )
            .help(format!(
                "known topologies: {}",
                names_list(topologies.iter().map(|t| t.name.as_str()))
            )),
        );
    }
    if raw.steps.is_empty() {
        out.push(d.span(&raw.name, "a check needs at least one step"));
    }
    let steps = match topo {
        Some(t) => steps(&d, &raw, t, signals, &mut out),
        None => Vec::new(),
    };
    if topo.is_some() && !raw.steps.is_empty() && steps.iter().all(|s| s.expect.is_empty()) {
        out.push(
            d.span(
                &raw.name,
                "the check expects nothing, so it can never pass or fail",
            )
            .help("add `expect:` to at least one step"),
        );
    }
    if !out.is_empty() {
        return Err(out);
    }
    Ok(Check {
        name: raw.name.value,
        topology: raw.topology.value,
        issue: raw.issue.value,
        summary: raw.summary,
        description: raw.description,
        sources: raw.sources,
        path: path.to_path_buf(),
        fixed_in,
        settle,
        steps,
    })
}

/// Re-validates a check's steps against another topology (`--topology` override).
pub fn check_with_topology(
    check: &Check,
    text: &str,
    topology: &Topology,
    signals: &Signals,
) -> Result<(), Diagnostics> {
    self::check(
        &check.path,
        text,
        std::slice::from_ref(&with_name(topology, &check.topology)),
        signals,
    )
    .map(|_| ())
}

fn with_name(t: &Topology, name: &str) -> Topology {
    let mut t = t.clone();
    t.name = name.to_string();
    t
}

fn steps(
    d: &FileDiag,
    raw: &CheckFile,
    topo: &Topology,
    signals: &Signals,
    out: &mut Diagnostics,
) -> Vec<Step> {
    // Which nodes have been started, and each node's config keys so far (to catch bad removes).
    let mut running: HashSet<String> = topo
        .nodes
        .iter()
        .filter(|n| !n.deferred)
        .map(|n| n.name.clone())
        .collect();
    let mut keys: HashMap<String, HashSet<String>> = topo
        .nodes
        .iter()
        .map(|n| {
            (
                n.name.clone(),
                topo.config.keys().chain(n.config.keys()).cloned().collect(),
            )
        })
        .collect();
    let known = |n: &Spanned<String>, out: &mut Diagnostics| -> bool {
        if topo.node(&n.value).is_some() {
            return true;
        }
        out.push(
            d.span(
                n,
                format!("unknown node `{}` (topology `{}`)", n.value, topo.name),
            )
            .help(format!(
                "nodes: {}",
                names_list(topo.nodes.iter().map(|n| n.name.as_str()))
            )),
        );
        false
    };
    let mut steps = Vec::new();
    for s in &raw.steps {
        let mut config = IndexMap::new();
        for (node, kv) in &s.config {
            if known(node, out) {
                check_config_keys(d, kv, out);
                if kv.is_empty() {
                    out.push(
                        d.span(node, "empty config edit")
                            .help("give at least one `key: value`"),
                    );
                }
                let entry: IndexMap<String, ConfigValue> = kv
                    .iter()
                    .map(|(k, v)| (k.value.clone(), v.clone()))
                    .collect();
                if let Some(ks) = keys.get_mut(&node.value) {
                    ks.extend(entry.keys().cloned());
                }
                config.insert(node.value.clone(), entry);
            }
        }
        let mut remove = IndexMap::new();
        for (node, ks) in &s.remove {
            if known(node, out) {
                for k in ks {
                    let had = keys
                        .get_mut(&node.value)
                        .is_some_and(|set| set.remove(&k.value));
                    if !had {
                        out.push(
                            d.span(
                                k,
                                format!(
                                    "`{}` has no `{}` to remove at this step",
                                    node.value, k.value
                                ),
                            )
                            .help("remove only keys set by the topology or an earlier step"),
                        );
                    }
                }
                remove.insert(
                    node.value.clone(),
                    ks.iter().map(|k| k.value.clone()).collect(),
                );
            }
        }
        let mut files = IndexMap::new();
        for (node, fs) in &s.files {
            if known(node, out) {
                check_files(d, fs, out);
                files.insert(
                    node.value.clone(),
                    fs.iter()
                        .map(|(k, v)| (k.value.clone(), v.clone()))
                        .collect(),
                );
            }
        }
        let mut booted: Vec<String> = Vec::new();
        let mut start = Vec::new();
        for n in &s.start {
            if !known(n, out) {
                continue;
            }
            if running.contains(&n.value) {
                out.push(
                    d.span(
                        n,
                        format!(
                            "`{}` is already running at this step; `start` is for deferred nodes",
                            n.value
                        ),
                    )
                    .help("use `restart:` for a running node"),
                );
            }
            booted.push(n.value.clone());
            start.push(n.value.clone());
        }
        let mut restart = Vec::new();
        for item in &s.restart {
            let group: Vec<String> = match &item.value {
                RestartItem::One(n) => vec![n.clone()],
                RestartItem::Group(g) => g.clone(),
            };
            if group.is_empty() {
                out.push(d.span(item, "empty restart group"));
            }
            for n in &group {
                let sn = Spanned::new(n.clone(), item.referenced, item.defined);
                if !known(&sn, out) {
                    continue;
                }
                if !running.contains(n) && !start.contains(n) {
                    out.push(
                        d.span(
                            item,
                            format!("`{n}` is not started yet at this step, so it cannot restart"),
                        )
                        .help("start a deferred node with `start:` first"),
                    );
                }
                if booted.contains(n) {
                    out.push(d.span(
                        item,
                        format!("`{n}` is started or restarted twice in this step"),
                    ));
                }
                booted.push(n.clone());
            }
            restart.push(group);
        }
        for n in &start {
            running.insert(n.clone());
        }
        let booted_names: HashSet<&str> = booted.iter().map(String::as_str).collect();
        if booted.is_empty() {
            out.push(
                d.span(
                    &s.name,
                    "this step starts and restarts nothing, so it changes nothing in the cluster",
                )
                .help("k3s reads its config only at start: add the edited nodes to `restart:`"),
            );
        }
        for node in s.config.keys().chain(s.remove.keys()).chain(s.files.keys()) {
            if topo.node(&node.value).is_some() && !booted_names.contains(node.value.as_str()) {
                out.push(d.span(node, format!("`{}` is edited in this step but not restarted; k3s would not see the change", node.value))
                    .help(format!("add `{}` to `restart:` (or `start:`) in this step", node.value)));
            }
        }
        let expect = expectations(d, &s.expect, topo, signals, &running, out);
        let bug = expectations(d, &s.bug, topo, signals, &running, out);
        for (node, sigs) in &s.bug {
            for (sig, v) in sigs {
                match s.expect.iter().find(|(n, _)| n.value == node.value).and_then(|(_, e)| e.iter().find(|(k, _)| k.value == sig.value)) {
                    None => out.push(d.span(sig, format!("bug entry {}/{} has no matching `expect` entry", node.value, sig.value))
                        .help("the bug signature lists how the bug differs from `expect`: add the correct value under `expect` too")),
                    Some((_, e)) if e.value == v.value => out.push(d.span(v, format!("bug value for {}/{} equals the expected value `{}`", node.value, sig.value, v.value))
                        .help("list only what the bug changes")),
                    Some(_) => {}
                }
            }
        }
        steps.push(Step {
            name: s.name.value.clone(),
            why: s.why.clone(),
            config,
            remove,
            files,
            start,
            restart,
            expect,
            bug,
        });
    }
    steps
}

fn expectations(
    d: &FileDiag,
    raw: &SpannedMap<SpannedMap<Spanned<String>>>,
    topo: &Topology,
    signals: &Signals,
    running: &HashSet<String>,
    out: &mut Diagnostics,
) -> Expectations {
    let mut res = Expectations::new();
    for (node, sigs) in raw {
        if topo.node(&node.value).is_none() {
            out.push(
                d.span(
                    node,
                    format!("unknown node `{}` (topology `{}`)", node.value, topo.name),
                )
                .help(format!(
                    "nodes: {}",
                    names_list(topo.nodes.iter().map(|n| n.name.as_str()))
                )),
            );
            continue;
        }
        if !running.contains(&node.value) {
            out.push(
                d.span(
                    node,
                    format!(
                        "`{}` has not been started at this step; there is nothing to observe",
                        node.value
                    ),
                )
                .help("start the deferred node first with `start:`"),
            );
        }
        let mut entry = IndexMap::new();
        for (sig, v) in sigs {
            match signals.get(&sig.value) {
                None => out.push(d.span(sig, format!("unknown signal `{}`", sig.value)).help(
                    format!(
                        "signals: {}",
                        names_list(signals.by_name.keys().map(String::as_str))
                    ),
                )),
                Some(def) if !def.is_value() && v.value != "up" && v.value != "down" => out.push(
                    d.span(
                        v,
                        format!("`{}` is not a state of signal `{}`", v.value, sig.value),
                    )
                    .help("use `up` or `down`"),
                ),
                Some(_) if v.value.trim().is_empty() => out.push(d.span(v, "empty expected value")),
                Some(_) => {
                    entry.insert(sig.value.clone(), Expected::parse(&v.value));
                }
            }
        }
        res.insert(node.value.clone(), entry);
    }
    res
}
