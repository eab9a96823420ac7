//! Reading and validating the user's files: YAML → raw model → checked [`Scenario`] types.
//!
//! Every problem becomes a [`Diagnostic`] with file, line, column and a help line saying what
//! would be valid. Two kinds of problems, two behaviours:
//!
//! - a YAML *shape* problem (syntax, unknown key, wrong type, duplicate key) stops reading that
//!   file at the first one: after it the parser no longer knows what the rest means;
//! - *semantic* problems (unknown node, impossible order, bad regex, ...) are all collected, so a
//!   user fixes a whole file in one go.
//!
//! Nothing here touches Docker.
//!
//! [`Scenario`]: crate::scenario::Scenario

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::LazyLock;
use std::time::Duration;

use indexmap::IndexMap;
use regex::Regex;
use serde_saphyr::Spanned;

use crate::diag::{Diagnostics, FileDiag};
use crate::model::{
    CheckFile, ConfigValue, Pattern, PatternFile, ProbeRuleFile, RestartItem, Role, SignalsFile,
    SpannedMap, StepFile, TopologyFile,
};
use crate::scenario::{
    Check, Expectations, Expected, LinePattern, Node, Probe, ProbeRule, Signal, Signals, Step,
    Topology, DEFAULT_SETTLE,
};
use crate::version::{K3sVersion, ReleaseSet};

/// Config keys repro derives from the topology; setting them by hand would contradict it.
const DERIVED_KEYS: &[(&str, &str)] = &[
    ("cluster-init", "mark the node `init: true` instead"),
    ("server", "use `join: <node>` on the node instead"),
    (
        "token",
        "leave it out: repro sets a random K3S_TOKEN per run, and secrets never go in scenario files",
    ),
    (
        "agent-token",
        "leave it out: secrets never go in scenario files",
    ),
    ("disable-etcd", "use `role: control-plane` instead"),
    ("disable-apiserver", "use `role: etcd` instead"),
    ("disable-controller-manager", "use `role: etcd` instead"),
    ("disable-scheduler", "use `role: etcd` instead"),
];

/// The default probe timeout when a signal's probe gives none.
const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// Node names become container host names and appear in `server:` URLs: DNS labels only.
static DNS_LABEL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$").expect("static regex"));

/// k3s config keys are long flag names without the dashes (`+` appends to a list in k3s).
static CONFIG_KEY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[a-z0-9][a-z0-9-]*[a-z0-9]\+?$").expect("static regex"));

/// What kind of file a path holds, told by its top-level keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Topology,
    Check,
    Signals,
}

impl FileKind {
    /// What a file of this kind must at least contain (for the help of an empty file).
    fn skeleton(self) -> &'static str {
        match self {
            FileKind::Topology => "a topology needs `name:`, `k3s-version:` and `nodes:`",
            FileKind::Check => {
                "a check needs `name:`, `topology:`, `issue:`, `summary:` and `steps:`"
            }
            FileKind::Signals => "a signals file needs `signals:` with one entry per signal",
        }
    }
}

/// Tells a file's kind by its first top-level key that only one kind has, else by the folder it
/// is in (a file too broken to show its keys).
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
    let dir = path
        .parent()
        .and_then(Path::file_name)
        .and_then(|s| s.to_str());
    match (path.file_name().and_then(|s| s.to_str()), dir) {
        (Some("signals.yaml"), _) | (_, Some("signals")) => Some(FileKind::Signals),
        (_, Some("topologies")) => Some(FileKind::Topology),
        (_, Some("checks")) => Some(FileKind::Check),
        _ => None,
    }
}

/// Whether a text has no YAML content at all (only blank lines and comments).
fn is_blank_yaml(text: &str) -> bool {
    text.lines().all(|l| {
        let t = l.trim();
        t.is_empty() || t.starts_with('#') || t == "---"
    })
}

/// How every scenario file is read: YAML 1.2 booleans only, so `yes`/`no`/`on`/`off` stay
/// strings (and `init: yes` is an error that says so) instead of silently becoming booleans;
/// duplicate keys are errors (the serde-saphyr default).
pub fn yaml_options() -> serde_saphyr::Options {
    let mut o = serde_saphyr::Options::default();
    o.strict_booleans = true;
    o
}

fn parse<T: serde::de::DeserializeOwned>(
    path: &Path,
    text: &str,
    kind: FileKind,
) -> Result<T, Diagnostics> {
    let d = FileDiag { file: path };
    if is_blank_yaml(text) {
        return Err(Diagnostics(vec![d
            .start("the file is empty (no YAML content)")
            .help(kind.skeleton())]));
    }
    serde_saphyr::from_str_with_options::<T>(text, yaml_options())
        .map_err(|e| Diagnostics(vec![d.yaml(&e, text)]))
}

fn version(d: &FileDiag, s: &Spanned<String>, out: &mut Diagnostics) -> Option<K3sVersion> {
    match s.value.parse::<K3sVersion>() {
        Ok(v) => Some(v),
        Err(e) => {
            out.push(
                d.span(s, e.to_string())
                    .help("write the full k3s release, e.g. v1.33.4+k3s1 or v1.33.5-rc1+k3s1"),
            );
            None
        }
    }
}

/// One first version per release line, e.g. `fixed-in` or `since`.
fn release_set(d: &FileDiag, list: &[Spanned<String>], out: &mut Diagnostics) -> ReleaseSet {
    let mut lines = HashMap::new();
    let mut versions = Vec::new();
    for s in list {
        let Some(v) = version(d, s, out) else {
            continue;
        };
        if let Some(first) = lines.insert(v.line(), s.value.clone()) {
            out.push(
                d.span(
                    s,
                    format!(
                        "two versions for release line {}.{} (`{first}` and `{}`)",
                        v.major, v.minor, s.value
                    ),
                )
                .help("give one first version per release line"),
            );
        }
        versions.push(v);
    }
    ReleaseSet::new(versions)
}

/// Scenario names end up in folder names and on command lines.
fn check_slug(d: &FileDiag, name: &Spanned<String>, what: &str, out: &mut Diagnostics) {
    if !DNS_LABEL.is_match(&name.value) {
        out.push(
            d.span(name, format!("`{}` is not a valid {what} name", name.value))
                .help("use lowercase letters, digits and `-` (at most 63), e.g. `etcd-split`"),
        );
    }
}

fn names_list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names.collect::<Vec<_>>().join(", ")
}

fn unspan<T>(m: SpannedMap<T>) -> IndexMap<String, T> {
    m.into_iter().map(|(k, v)| (k.value, v)).collect()
}

fn check_config_keys<T>(d: &FileDiag, config: &SpannedMap<T>, out: &mut Diagnostics) {
    for k in config.keys() {
        if let Some((_, help)) = DERIVED_KEYS.iter().find(|(key, _)| *key == k.value) {
            out.push(
                d.span(
                    k,
                    format!("`{}` is derived by repro from the topology", k.value),
                )
                .help(*help),
            );
        } else if !CONFIG_KEY.is_match(&k.value) {
            out.push(
                d.span(k, format!("`{}` is not a k3s config key", k.value))
                    .help("k3s keys are the long flag names without the leading dashes, e.g. `embedded-registry`"),
            );
        }
    }
}

fn check_files<T>(d: &FileDiag, files: &SpannedMap<T>, out: &mut Diagnostics) {
    for p in files.keys() {
        let v = &p.value;
        if !v.starts_with('/') || v.ends_with('/') || v.split('/').any(|c| c == "..") {
            out.push(
                d.span(p, format!("`{v}` is not an absolute file path"))
                    .help("give the full path of a file inside the node, e.g. /etc/rancher/k3s/registries.yaml"),
            );
        } else if v == "/etc/rancher/k3s/config.yaml" {
            out.push(
                d.span(p, "config.yaml is rendered by repro from `config:`")
                    .help("set keys under `config:`, or add a drop-in under /etc/rancher/k3s/config.yaml.d/"),
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Topologies

/// The `name:` of a topology file that may be otherwise broken, so a check naming it can say
/// "that topology has errors" instead of "does not exist".
pub fn topology_name(text: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct NameOnly {
        name: String,
    }
    serde_saphyr::from_str_with_options::<NameOnly>(text, yaml_options())
        .ok()
        .map(|n| n.name)
}

pub fn topology(path: &Path, text: &str) -> Result<Topology, Diagnostics> {
    let raw: TopologyFile = parse(path, text, FileKind::Topology)?;
    let d = FileDiag { file: path };
    let mut out = Diagnostics::default();

    check_slug(&d, &raw.name, "topology", &mut out);
    let default_version = version(&d, &raw.k3s_version, &mut out);
    check_nodes(&d, &raw, &mut out);
    check_config_keys(&d, &raw.config, &mut out);
    check_files(&d, &raw.files, &mut out);

    let Some(default_version) = default_version else {
        return Err(out);
    };
    if !out.is_empty() {
        return Err(out);
    }
    Ok(Topology {
        name: raw.name.value,
        description: raw.description,
        source: raw.source,
        path: path.to_path_buf(),
        default_version,
        config: unspan(raw.config),
        files: unspan(raw.files),
        nodes: raw
            .nodes
            .value
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

fn check_nodes(d: &FileDiag, raw: &TopologyFile, out: &mut Diagnostics) {
    let nodes = &raw.nodes.value;
    if nodes.is_empty() {
        out.push(
            d.span(&raw.nodes, "a topology needs at least one node")
                .help("list the nodes, e.g. `- {name: etcd-1, role: etcd, init: true}`"),
        );
        return;
    }
    let mut names: HashMap<&str, &Spanned<String>> = HashMap::new();
    for n in nodes {
        if !DNS_LABEL.is_match(&n.name.value) {
            out.push(
                d.span(
                    &n.name,
                    format!("`{}` is not a valid node name", n.name.value),
                )
                .help("use lowercase letters, digits and `-` (it becomes a container host name)"),
            );
        }
        if let Some(first) = names.insert(&n.name.value, &n.name) {
            out.push(
                d.span(
                    &n.name,
                    format!(
                        "duplicate node name `{}` (first defined at line {})",
                        n.name.value,
                        first.referenced.line()
                    ),
                )
                .help("give every node its own name"),
            );
        }
    }

    let is_init = |n: &crate::model::NodeFile| n.init.as_ref().is_some_and(|i| i.value);
    let inits: Vec<_> = nodes.iter().filter(|n| is_init(n)).collect();
    match inits.as_slice() {
        [] => out.push(
            d.span(&nodes[0].name, "no node creates the cluster (no `init: true`)")
                .help("mark exactly one node that runs etcd (role etcd or all) `init: true`; it starts with cluster-init"),
        ),
        [_] => {}
        [first, rest @ ..] => {
            for n in rest {
                let at = n.init.as_ref().map_or(&n.name.referenced, |i| &i.referenced);
                out.push(
                    d.at(at, format!("`{}` is a second init node; only one node creates the cluster", n.name.value))
                        .help(format!("keep `init: true` on `{}` only and give `{}` a `join:`", first.name.value, n.name.value)),
                );
            }
        }
    }

    // Start order (see `plan::start_order`): the init node, the other etcd-running servers one
    // at a time in file order, then control-plane-only servers, then agents. A node can only
    // join a node that is already up when it starts.
    let position: HashMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.value.as_str(), i))
        .collect();
    let known = names_list(nodes.iter().map(|n| n.name.value.as_str()));
    // Whether `target` (at index `ti`) is up before an etcd-running node at index `i` starts.
    let starts_before = |target: &crate::model::NodeFile, ti: usize, i: usize| {
        is_init(target) || (target.role.value.runs_etcd() && ti < i)
    };
    for (i, n) in nodes.iter().enumerate() {
        let role = n.role.value;
        if is_init(n) {
            let at = n
                .init
                .as_ref()
                .map_or(&n.name.referenced, |i| &i.referenced);
            if !role.runs_etcd() {
                out.push(
                    d.at(at, format!("init node `{}` has role {}; only a node that runs etcd can create the cluster", n.name.value, role.as_str()))
                        .help("make an `etcd` or `all` node the init node, and let this one `join:` it"),
                );
            }
            if let Some(j) = &n.join {
                out.push(
                    d.span(j, format!("init node `{}` cannot join another node", n.name.value))
                        .help("remove `join:` from the init node (it creates the cluster), or remove its `init: true`"),
                );
            }
            if n.deferred {
                out.push(
                    d.at(at, "the init node cannot be deferred")
                        .help("remove `deferred: true`: the cluster starts with its init node"),
                );
            }
            continue;
        }
        let Some(j) = &n.join else {
            out.push(
                d.span(&n.name, format!("node `{}` neither creates the cluster nor joins a node", n.name.value))
                    .help("add `join: <node>` naming a server, or `init: true` if this is the one node that creates the cluster"),
            );
            continue;
        };
        if j.value == n.name.value {
            out.push(
                d.span(j, format!("node `{}` joins itself", n.name.value))
                    .help("join another server, e.g. the init node"),
            );
            continue;
        }
        let Some(&ti) = position.get(j.value.as_str()) else {
            out.push(
                d.span(
                    j,
                    format!("`{}` joins unknown node `{}`", n.name.value, j.value),
                )
                .help(format!("join one of the nodes of this topology: {known}")),
            );
            continue;
        };
        let target = &nodes[ti];
        let trole = target.role.value;
        if !trole.is_server() {
            out.push(
                d.span(
                    j,
                    format!(
                        "`{}` joins `{}`, an agent, which runs no supervisor",
                        n.name.value, j.value
                    ),
                )
                .help("join a server node (role etcd, control-plane or all)"),
            );
        } else if role == Role::ControlPlane && !trole.runs_etcd() {
            out.push(
                d.span(j, format!("control-plane-only `{}` joins `{}`, which runs no etcd", n.name.value, j.value))
                    .help("a control-plane-only server (disable-etcd) must join a node that runs etcd (role etcd or all)"),
            );
        } else if !inits.is_empty() && role.runs_etcd() && !starts_before(target, ti, i) {
            // (Without an init node there is no start order to judge; that is reported above.)
            out.push(
                d.span(j, format!("`{}` joins `{}`, which is not up yet when `{}` starts", n.name.value, j.value, n.name.value))
                    .help("servers that run etcd start one at a time in file order, before the others: join the init node or an etcd node listed above"),
            );
        } else if target.deferred && !n.deferred {
            out.push(
                d.span(j, format!("`{}` joins `{}`, which is deferred and not running when the cluster starts", n.name.value, j.value))
                    .help("join a node that starts with the cluster, or make this node deferred too"),
            );
        }
    }

    for n in nodes {
        check_config_keys(d, &n.config, out);
        check_files(d, &n.files, out);
        for k in n.env.keys() {
            if matches!(
                k.value.as_str(),
                "K3S_TOKEN" | "K3S_AGENT_TOKEN" | "K3S_URL"
            ) {
                out.push(
                    d.span(k, format!("`{}` is set by repro", k.value))
                        .help("leave it out: repro sets K3S_TOKEN (random per run) and the join URL from `join:`"),
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Signals

pub fn signals(path: &Path, text: &str) -> Result<Signals, Diagnostics> {
    let raw: SignalsFile = parse(path, text, FileKind::Signals)?;
    let d = FileDiag { file: path };
    let mut out = Diagnostics::default();
    let mut by_name = IndexMap::new();
    for (name, s) in raw.signals {
        check_slug(&d, &name, "signal", &mut out);
        let since = (!s.since.is_empty()).then(|| release_set(&d, &s.since, &mut out));
        let up = patterns(&d, &s.up, &mut out);
        let down = patterns(&d, &s.down, &mut out);
        let value = patterns(&d, &s.value, &mut out);
        let settled_by = line_patterns(&d, &s.settled_by, true, &mut out);
        // Judged on what the file says, not on what compiled: a bad regex is its own error.
        let is_value = !s.value.is_empty();
        let is_state = !s.up.is_empty() || !s.down.is_empty() || s.probe.is_some();
        if is_value && is_state {
            out.push(
                d.span(&name, format!("signal `{}` mixes `value:` with up/down/probe", name.value))
                    .help("a signal is either a value (a version, roles) or a state (up/down): keep one kind"),
            );
        }
        if !is_value && !is_state {
            out.push(
                d.span(
                    &name,
                    format!("signal `{}` has no way to be observed", name.value),
                )
                .help("give `up:`/`down:` log regexes, `value:` regexes or a `probe:`"),
            );
        }
        for p in &s.value {
            let (re, fixed) = match &p.value {
                PatternFile::Plain(r) => (r.as_str(), false),
                PatternFile::Full(f) => (f.regex.value.as_str(), f.value.is_some()),
            };
            if !fixed && !re.contains("(?P<value>") && !re.contains("(?<value>") {
                out.push(
                    d.span(p, "a value pattern needs a named group `(?P<value>...)` or a fixed `value:`")
                        .help("e.g. 'Starting k3s (?P<value>v\\S+)' or {match: 'ETCD server is now running', value: etcd}"),
                );
            }
        }
        let on_death = s.on_death.as_ref().and_then(|v| match v.value.as_str() {
            "up" => Some(Expected::Up),
            "down" => Some(Expected::Down),
            other => {
                out.push(
                    d.span(v, format!("`on-death: {other}` is not a state"))
                        .help("use `up` or `down`: what the signal counts as when the node dies"),
                );
                None
            }
        });
        let probe = s.probe.as_ref().map(|p| {
            if p.command.value.is_empty() {
                out.push(
                    d.span(&p.command, "the probe command is empty")
                        .help("give the command run inside the node as a list, e.g. [k3s, kubectl, get, --raw, /metrics]"),
                );
            }
            for (list, which) in [(&p.up, "up"), (&p.down, "down")] {
                if list.is_empty() {
                    out.push(
                        d.span(&name, format!("the probe of `{}` has no `{which}` rule", name.value))
                            .help("a probe needs at least one `up` and one `down` rule, e.g. {exit: 0, output: 'regex'}"),
                    );
                }
            }
            Probe {
                command: p.command.value.clone(),
                after: patterns(&d, &p.after, &mut out),
                up: rules(&d, &p.up, &mut out),
                down: rules(&d, &p.down, &mut out),
                timeout: p
                    .timeout
                    .as_ref()
                    .and_then(|t| duration(&d, t, &mut out))
                    .unwrap_or(DEFAULT_PROBE_TIMEOUT),
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
                roles: s.roles.iter().map(|r| r.value).collect(),
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

fn rules(d: &FileDiag, rs: &[Spanned<ProbeRuleFile>], out: &mut Diagnostics) -> Vec<ProbeRule> {
    rs.iter()
        .map(|r| {
            if r.value.exit.is_none() && r.value.output.is_none() {
                out.push(
                    d.span(r, "a probe rule with neither `exit:` nor `output:` matches every result")
                        .help("give an exit code, an output regex or both, e.g. {exit: 1, output: 'apiserver disabled'}"),
                );
            }
            ProbeRule {
                exit: r.value.exit,
                output: r
                    .value
                    .output
                    .as_ref()
                    .and_then(|o| compile(d, o, &o.value, out)),
            }
        })
        .collect()
}

fn compile<T>(d: &FileDiag, at: &Spanned<T>, re: &str, out: &mut Diagnostics) -> Option<Regex> {
    match Regex::new(re) {
        Ok(r) => Some(r),
        Err(e) => {
            // The regex crate's message is a multi-line drawing; its last line is the reason.
            let detail = e.to_string();
            let last = detail.lines().last().unwrap_or("invalid").trim();
            let last = last.strip_prefix("error: ").unwrap_or(last);
            out.push(
                d.span(at, format!("invalid regex `{re}`: {last}"))
                    .help("Rust regex syntax (https://docs.rs/regex); escape `[`, `(`, `.` and `+` with `\\` to match them literally"),
            );
            None
        }
    }
}

fn patterns(d: &FileDiag, list: &[Pattern], out: &mut Diagnostics) -> Vec<LinePattern> {
    line_patterns(d, list, false, out)
}

/// Compiles patterns; `order:` is accepted only where it means something (`settled-by`).
fn line_patterns(
    d: &FileDiag,
    list: &[Pattern],
    settled_by: bool,
    out: &mut Diagnostics,
) -> Vec<LinePattern> {
    list.iter()
        .filter_map(|p| match &p.value {
            PatternFile::Plain(r) => compile(d, p, r, out).map(|regex| LinePattern {
                regex,
                since: None,
                until: None,
                value: None,
                ordered: false,
            }),
            PatternFile::Full(f) => {
                let since = (!f.since.is_empty()).then(|| release_set(d, &f.since, out));
                let until = (!f.until.is_empty()).then(|| release_set(d, &f.until, out));
                let ordered = match &f.order {
                    None => false,
                    Some(o) if !settled_by => {
                        out.push(
                            d.span(o, "`order:` only means something in a `settled-by` pattern")
                                .help("remove it: it says whether a settled-by line comes after the feature's own line"),
                        );
                        false
                    }
                    Some(o) => match o.value.as_str() {
                        "after-feature" => true,
                        "hint" => false,
                        other => {
                            out.push(
                                d.span(o, format!("`order: {other}` is not an order"))
                                    .help("use `after-feature` (k3s prints the line after the feature's own line: its arrival proves down) or `hint` (needs the settle window)"),
                            );
                            false
                        }
                    },
                };
                compile(d, &f.regex, &f.regex.value, out).map(|regex| LinePattern {
                    regex,
                    since,
                    until,
                    value: f.value.clone(),
                    ordered,
                })
            }
        })
        .collect()
}

fn duration(d: &FileDiag, s: &Spanned<String>, out: &mut Diagnostics) -> Option<Duration> {
    match humantime::parse_duration(&s.value) {
        Ok(v) => Some(v),
        Err(_) => {
            out.push(
                d.span(s, format!("`{}` is not a duration", s.value))
                    .help("write a number and a unit, e.g. 3s, 500ms, 1m"),
            );
            None
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Checks

/// What a check is validated against.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// Every topology that loaded.
    pub topologies: &'a [Topology],
    /// Names of topologies whose files have errors of their own (reported there).
    pub broken_topologies: &'a [String],
    pub signals: &'a Signals,
    /// Validate against this topology instead of the one the check names (`--topology`).
    pub topology_override: Option<&'a Topology>,
}

/// Validates a check against its topology and the signals. `topologies` are all known ones.
pub fn check(
    path: &Path,
    text: &str,
    topologies: &[Topology],
    signals: &Signals,
) -> Result<Check, Diagnostics> {
    check_in(
        path,
        text,
        &Context {
            topologies,
            broken_topologies: &[],
            signals,
            topology_override: None,
        },
    )
}

/// Re-validates a check's steps against another topology (`--topology` override), so steps
/// naming nodes the other topology lacks are caught before anything runs.
pub fn check_with_topology(
    check: &Check,
    text: &str,
    topology: &Topology,
    signals: &Signals,
) -> Result<Check, Diagnostics> {
    check_in(
        &check.path,
        text,
        &Context {
            topologies: &[],
            broken_topologies: &[],
            signals,
            topology_override: Some(topology),
        },
    )
}

pub fn check_in(path: &Path, text: &str, cx: &Context) -> Result<Check, Diagnostics> {
    let raw: CheckFile = parse(path, text, FileKind::Check)?;
    let d = FileDiag { file: path };
    let mut out = Diagnostics::default();

    check_slug(&d, &raw.name, "check", &mut out);
    if !raw.issue.value.starts_with("https://") && !raw.issue.value.starts_with("http://") {
        out.push(
            d.span(&raw.issue, format!("`{}` is not a URL", raw.issue.value))
                .help(
                    "give the issue's web address, e.g. https://github.com/k3s-io/k3s/issues/12753",
                ),
        );
    }
    let fixed_in = release_set(&d, &raw.fixed_in, &mut out);
    let settle = raw
        .settle
        .as_ref()
        .and_then(|s| duration(&d, s, &mut out))
        .unwrap_or(DEFAULT_SETTLE);

    let topo = match cx.topology_override {
        Some(t) => Some(t),
        None => {
            let found = cx.topologies.iter().find(|t| t.name == raw.topology.value);
            if found.is_none() && !cx.broken_topologies.contains(&raw.topology.value) {
                out.push(
                    d.span(
                        &raw.topology,
                        format!("topology `{}` does not exist", raw.topology.value),
                    )
                    .help(format!(
                        "name one of the topologies: {}",
                        names_list(cx.topologies.iter().map(|t| t.name.as_str()))
                    )),
                );
            }
            found
        }
    };
    if raw.steps.value.is_empty() {
        out.push(
            d.span(&raw.steps, "a check needs at least one step")
                .help("add a step: `- {name: ..., config: ..., restart: [...], expect: ...}`"),
        );
    }
    let steps = match topo {
        Some(t) => steps(&d, &raw.steps.value, t, cx.signals, &mut out),
        None => Vec::new(),
    };
    if topo.is_some()
        && !raw.steps.value.is_empty()
        && raw.steps.value.iter().all(|s| s.expect.is_empty())
    {
        out.push(
            d.span(
                &raw.steps,
                "the check expects nothing, so it can never pass or fail",
            )
            .help("add `expect: {<node>: {<signal>: <value>}}` to at least one step"),
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

/// The state of the cluster as the steps go, to catch impossible orders.
struct Walk<'a> {
    topo: &'a Topology,
    /// Nodes that have been started (non-deferred ones from the beginning).
    running: HashSet<String>,
    /// Each node's user config keys so far (topology-wide, own, step edits), to catch bad removes.
    keys: HashMap<String, HashSet<String>>,
}

impl Walk<'_> {
    /// Whether the topology has this node; reports it if not.
    fn known(&self, d: &FileDiag, n: &Spanned<String>, out: &mut Diagnostics) -> bool {
        if self.topo.node(&n.value).is_some() {
            return true;
        }
        out.push(
            d.span(
                n,
                format!("unknown node `{}` (topology `{}`)", n.value, self.topo.name),
            )
            .help(format!(
                "name one of the topology's nodes: {}",
                names_list(self.topo.nodes.iter().map(|n| n.name.as_str()))
            )),
        );
        false
    }
}

fn steps(
    d: &FileDiag,
    raw: &[StepFile],
    topo: &Topology,
    signals: &Signals,
    out: &mut Diagnostics,
) -> Vec<Step> {
    let mut w = Walk {
        topo,
        running: topo
            .nodes
            .iter()
            .filter(|n| !n.deferred)
            .map(|n| n.name.clone())
            .collect(),
        keys: topo
            .nodes
            .iter()
            .map(|n| {
                let keys = topo.config.keys().chain(n.config.keys()).cloned().collect();
                (n.name.clone(), keys)
            })
            .collect(),
    };
    raw.iter()
        .map(|s| step(d, s, &mut w, signals, out))
        .collect()
}

fn step(
    d: &FileDiag,
    s: &StepFile,
    w: &mut Walk,
    signals: &Signals,
    out: &mut Diagnostics,
) -> Step {
    if s.name.value.trim().is_empty() {
        out.push(
            d.span(&s.name, "the step has an empty name")
                .help("say in a few words what the step does; plans and reports show it"),
        );
    }

    // Edits first: this is the order a run applies them in.
    let mut config = IndexMap::new();
    for (node, kv) in &s.config {
        if !w.known(d, node, out) {
            continue;
        }
        check_config_keys(d, kv, out);
        if kv.is_empty() {
            out.push(
                d.span(node, format!("empty config edit for `{}`", node.value))
                    .help("give at least one `key: value`, or drop the entry"),
            );
        }
        let entry: IndexMap<String, ConfigValue> = kv
            .iter()
            .map(|(k, v)| (k.value.clone(), v.clone()))
            .collect();
        if let Some(ks) = w.keys.get_mut(&node.value) {
            ks.extend(entry.keys().cloned());
        }
        config.insert(node.value.clone(), entry);
    }
    let mut remove = IndexMap::new();
    for (node, ks) in &s.remove {
        if !w.known(d, node, out) {
            continue;
        }
        if ks.is_empty() {
            out.push(
                d.span(node, format!("empty remove list for `{}`", node.value))
                    .help("list the keys to remove, e.g. [embedded-registry], or drop the entry"),
            );
        }
        for k in ks {
            let had = w
                .keys
                .get_mut(&node.value)
                .is_some_and(|set| set.remove(&k.value));
            if !had {
                out.push(
                    d.span(k, format!("`{}` has no `{}` to remove at this step", node.value, k.value))
                        .help("remove only keys the topology or an earlier step (or this step's `config:`) set on this node"),
                );
            }
        }
        remove.insert(
            node.value.clone(),
            ks.iter().map(|k| k.value.clone()).collect(),
        );
    }
    let mut files = IndexMap::new();
    for (node, fs) in &s.files {
        if !w.known(d, node, out) {
            continue;
        }
        check_files(d, fs, out);
        if fs.is_empty() {
            out.push(
                d.span(node, format!("empty files edit for `{}`", node.value))
                    .help("give `path: content` to write or `path: null` to delete, or drop the entry"),
            );
        }
        files.insert(
            node.value.clone(),
            fs.iter()
                .map(|(k, v)| (k.value.clone(), v.clone()))
                .collect(),
        );
    }

    // Nodes this step names to start or restart, known or not: a typo in a node name is its own
    // error and must not also read as "this step restarts nothing".
    let mut named: HashSet<String> = HashSet::new();
    let mut booted: Vec<String> = Vec::new();
    let mut start = Vec::new();
    for n in &s.start {
        named.insert(n.value.clone());
        if !w.known(d, n, out) {
            continue;
        }
        if booted.contains(&n.value) {
            out.push(
                d.span(n, format!("`{}` is started twice in this step", n.value))
                    .help("name each node once per step"),
            );
            continue;
        }
        if w.running.contains(&n.value) {
            let help = if w.topo.node(&n.value).is_some_and(|x| x.deferred) {
                "it was started by an earlier step: use `restart:` for a running node"
            } else {
                "`start:` is for `deferred: true` nodes; use `restart:` for a running node"
            };
            out.push(
                d.span(n, format!("`{}` is already running at this step", n.value))
                    .help(help),
            );
        } else if let Some(j) = w.topo.node(&n.value).and_then(|x| x.join.as_deref()) {
            if !w.running.contains(j) && !start.iter().any(|s: &String| s == j) {
                out.push(
                    d.span(n, format!("`{}` joins `{j}`, which is not running at this step", n.value))
                        .help(format!("start `{j}` first (in an earlier step, or before `{}` in this `start:` list)", n.value)),
                );
            }
        }
        booted.push(n.value.clone());
        start.push(n.value.clone());
    }
    let mut restart = Vec::new();
    for item in &s.restart {
        let members: Vec<Spanned<String>> = match &item.value {
            RestartItem::One(n) => vec![Spanned::new(n.clone(), item.referenced, item.defined)],
            RestartItem::Group(g) => g.clone(),
        };
        if members.is_empty() {
            out.push(d.span(item, "empty restart group").help(
                "list the nodes to restart at once, e.g. [etcd-2, etcd-3], or drop the entry",
            ));
        }
        let mut group = Vec::new();
        for n in &members {
            named.insert(n.value.clone());
            if !w.known(d, n, out) {
                continue;
            }
            if booted.contains(&n.value) {
                out.push(
                    d.span(
                        n,
                        format!("`{}` is started or restarted twice in this step", n.value),
                    )
                    .help("name each node once per step; use another step to restart it again"),
                );
                continue;
            }
            if !w.running.contains(&n.value) && !start.contains(&n.value) {
                out.push(
                    d.span(n, format!("`{}` is deferred and not started yet at this step, so it cannot restart", n.value))
                        .help("start it first with `start:` (in this or an earlier step)"),
                );
            }
            booted.push(n.value.clone());
            group.push(n.value.clone());
        }
        restart.push(group);
    }
    if s.start.is_empty() && s.restart.is_empty() {
        out.push(
            d.span(&s.name, "this step starts and restarts nothing, so nothing in the cluster changes")
                .help("k3s reads its config only when it starts: add the edited nodes to `restart:` (or `start:` for a deferred node); to observe more nodes, add them to the `expect:` of the step that restarts"),
        );
    }

    // An edit only takes effect when the node boots in the same step.
    let booted_set: HashSet<&str> = booted.iter().map(String::as_str).collect();
    let mut edited_not_booted: HashSet<&str> = HashSet::new();
    for node in s.config.keys().chain(s.remove.keys()).chain(s.files.keys()) {
        if w.topo.node(&node.value).is_none() || booted_set.contains(node.value.as_str()) {
            continue;
        }
        if !edited_not_booted.insert(&node.value) {
            continue; // one report per node and step is enough
        }
        let how = if w.running.contains(&node.value) {
            "restart:"
        } else {
            "start:"
        };
        out.push(
            d.span(node, format!("`{}` is edited in this step but not restarted; k3s would never read the change", node.value))
                .help(format!("add `{}` to `{how}` in this step", node.value)),
        );
    }

    for n in &start {
        w.running.insert(n.clone());
    }
    let ex = ExpectCx {
        d,
        topo: w.topo,
        signals,
        running: &w.running,
        named: &named,
        edited_not_booted: &edited_not_booted,
    };
    let expect = ex.expectations(&s.expect, out);
    let bug = ex.expectations(&s.bug, out);
    check_bug_against_expect(d, s, &expect, &bug, out);

    Step {
        name: s.name.value.clone(),
        why: s.why.clone(),
        config,
        remove,
        files,
        start,
        restart,
        expect,
        bug,
    }
}

/// The bug signature lists only how the bug differs from `expect`; entries the loader already
/// rejected (unknown node or signal) are left out of `expect`/`bug` and not judged again.
fn check_bug_against_expect(
    d: &FileDiag,
    s: &StepFile,
    expect: &Expectations,
    bug: &Expectations,
    out: &mut Diagnostics,
) {
    for (node, sigs) in &s.bug {
        for (sig, v) in sigs {
            if !bug
                .get(&node.value)
                .is_some_and(|b| b.contains_key(&sig.value))
            {
                continue;
            }
            match expect.get(&node.value).and_then(|e| e.get(&sig.value)) {
                None => out.push(
                    d.span(sig, format!("bug entry {}/{} has no matching `expect` entry", node.value, sig.value))
                        .help(format!("the bug signature says how the bug differs from `expect`: add the correct value under `expect: {{{}: {{{}: ...}}}}` too", node.value, sig.value)),
                ),
                Some(e) if e.as_str() == v.value => out.push(
                    d.span(v, format!("bug value for {}/{} equals the expected value `{}`", node.value, sig.value, v.value))
                        .help("list under `bug:` only what the bug changes; drop this entry"),
                ),
                Some(_) => {}
            }
        }
    }
}

/// What expectations of one step are checked against.
struct ExpectCx<'a> {
    d: &'a FileDiag<'a>,
    topo: &'a Topology,
    signals: &'a Signals,
    /// Nodes running after this step's starts.
    running: &'a HashSet<String>,
    /// Nodes this step names in `start:`/`restart:` (problems there are reported there).
    named: &'a HashSet<String>,
    /// Nodes whose files this step edits without booting them (reported at the edit too).
    edited_not_booted: &'a HashSet<&'a str>,
}

impl ExpectCx<'_> {
    fn expectations(
        &self,
        raw: &SpannedMap<SpannedMap<Spanned<String>>>,
        out: &mut Diagnostics,
    ) -> Expectations {
        let d = self.d;
        let mut res = Expectations::new();
        for (node, sigs) in raw {
            if self.topo.node(&node.value).is_none() {
                out.push(
                    d.span(
                        node,
                        format!(
                            "unknown node `{}` (topology `{}`)",
                            node.value, self.topo.name
                        ),
                    )
                    .help(format!(
                        "name one of the topology's nodes: {}",
                        names_list(self.topo.nodes.iter().map(|n| n.name.as_str()))
                    )),
                );
                continue;
            }
            // Expectations on a node the step leaves alone are fine: they re-observe its current
            // boot ("etcd-1 stays down"). Not so for a node that has no boot yet, or whose config
            // changed without a restart: the observed boot would not be the one described.
            if !self.running.contains(&node.value) && !self.named.contains(&node.value) {
                out.push(
                    d.span(node, format!("`{}` is deferred and not started at this step; there is no boot to observe", node.value))
                        .help(format!("add `{}` to `start:` in this step or an earlier one", node.value)),
                );
            } else if self.edited_not_booted.contains(node.value.as_str()) {
                out.push(
                    d.span(node, format!("this expectation would observe `{}`'s old boot: the step edits its config but does not restart it", node.value))
                        .help(format!("restart `{}` in this step, or move the edit to the step that restarts it", node.value)),
                );
            }
            if sigs.is_empty() {
                out.push(
                    d.span(node, format!("no signals expected of `{}`", node.value))
                        .help("give at least one `signal: value`, e.g. {ready: up}, or drop the entry"),
                );
            }
            let mut entry = IndexMap::new();
            for (sig, v) in sigs {
                let Some(def) = self.signals.get(&sig.value) else {
                    out.push(
                        d.span(sig, format!("unknown signal `{}`", sig.value))
                            .help(format!(
                                "use a signal defined in signals.yaml: {}",
                                names_list(self.signals.by_name.keys().map(String::as_str))
                            )),
                    );
                    continue;
                };
                if let Some(n) = self.topo.node(&node.value) {
                    if !def.observable_on(n.role) {
                        out.push(
                            d.span(
                                sig,
                                format!(
                                    "`{}` cannot be observed on `{}`, a {} node",
                                    sig.value,
                                    node.value,
                                    n.role.as_str()
                                ),
                            )
                            .help(format!(
                                "signals.yaml says `{}` is observable only on: {}",
                                sig.value,
                                names_list(def.roles.iter().map(|r| r.as_str()))
                            )),
                        );
                        continue;
                    }
                }
                let state = v.value == "up" || v.value == "down";
                if v.value.trim().is_empty() {
                    out.push(
                        d.span(v, format!("empty expected value for `{}`", sig.value))
                            .help(if def.is_value() {
                                "give the value, e.g. v1.33.4+k3s1"
                            } else {
                                "use `up` or `down`"
                            }),
                    );
                } else if !def.is_value() && !state {
                    out.push(
                        d.span(
                            v,
                            format!("`{}` is not a state of signal `{}`", v.value, sig.value),
                        )
                        .help(format!("`{}` is either `up` or `down`", sig.value)),
                    );
                } else if def.is_value() && state {
                    out.push(
                        d.span(v, format!("`{}` reports a value, not up/down", sig.value))
                            .help(format!(
                                "expect the text it reports, e.g. `{}`",
                                value_example(&sig.value)
                            )),
                    );
                } else {
                    entry.insert(sig.value.clone(), Expected::parse(&v.value));
                }
            }
            res.insert(node.value.clone(), entry);
        }
        res
    }
}

fn value_example(signal: &str) -> &'static str {
    match signal {
        "version" => "v1.33.4+k3s1",
        "roles" => "etcd",
        _ => "the value the log line shows",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIGNALS: &str = include_str!("../checks/signals.yaml");
    const ETCD_SPLIT: &str = include_str!("../topologies/etcd-split.yaml");
    const BOOTSTRAP: &str = include_str!("../topologies/bootstrap-check.yaml");

    fn sig() -> Signals {
        signals(Path::new("signals.yaml"), SIGNALS).expect("shipped signals are valid")
    }

    fn topo(text: &str) -> Result<Topology, Vec<String>> {
        topology(Path::new("t.yaml"), text).map_err(messages)
    }

    fn messages(d: Diagnostics) -> Vec<String> {
        d.0.into_iter()
            .map(|d| format!("{}:{}: {}", d.line, d.column, d.message))
            .collect()
    }

    fn topologies() -> Vec<Topology> {
        vec![
            topology(Path::new("etcd-split.yaml"), ETCD_SPLIT).expect("valid"),
            topology(Path::new("bootstrap-check.yaml"), BOOTSTRAP).expect("valid"),
        ]
    }

    fn chk(text: &str) -> Result<Check, Vec<String>> {
        check(Path::new("c.yaml"), text, &topologies(), &sig()).map_err(messages)
    }

    const HEAD: &str = "name: c\ntopology: etcd-split\nissue: https://x/1\nsummary: s\n";

    #[test]
    fn shipped_topologies_load_with_roles_and_joins() {
        let t = topo(ETCD_SPLIT).expect("valid");
        assert_eq!(t.name, "etcd-split");
        assert_eq!(t.nodes.len(), 4);
        assert!(t.nodes[0].init && t.nodes[0].role == Role::Etcd);
        assert_eq!(t.nodes[3].role, Role::ControlPlane);
        assert_eq!(t.nodes[3].join.as_deref(), Some("etcd-1"));
        assert!(t.files.contains_key("/etc/rancher/k3s/registries.yaml"));
        // The description has ` #` in it: it must not be cut off as a YAML comment.
        assert!(
            t.description.ends_with("(k3s #12753 as QA wrote it)"),
            "{}",
            t.description
        );
    }

    #[test]
    fn role_expansion_is_what_k3s_documents() {
        assert_eq!(
            Role::Etcd.config_keys(),
            [
                "disable-apiserver",
                "disable-controller-manager",
                "disable-scheduler"
            ]
        );
        assert_eq!(Role::ControlPlane.config_keys(), ["disable-etcd"]);
        assert!(Role::All.config_keys().is_empty());
        assert!(Role::Agent.config_keys().is_empty());
        assert!(Role::Etcd.runs_etcd() && Role::All.runs_etcd());
        assert!(!Role::ControlPlane.runs_etcd() && !Role::Agent.is_server());
    }

    #[test]
    fn topology_order_rules() {
        let base = "name: t\nk3s-version: v1.33.4+k3s1\nnodes:\n  - {name: etcd-1, role: etcd, init: true}\n";
        // An etcd node may join an etcd node listed above it.
        assert!(topo(&format!("{base}  - {{name: etcd-2, role: etcd, join: etcd-1}}\n  - {{name: etcd-3, role: etcd, join: etcd-2}}\n")).is_ok());
        // ... but not one below it (it would not be up yet); this also rules out join cycles.
        let e = topo(&format!("{base}  - {{name: etcd-2, role: etcd, join: etcd-3}}\n  - {{name: etcd-3, role: etcd, join: etcd-1}}\n")).expect_err("should be rejected");
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].contains("not up yet"), "{e:?}");
        // Agents may join a control-plane-only server (those start before agents).
        assert!(topo(&format!("{base}  - {{name: cp-1, role: control-plane, join: etcd-1}}\n  - {{name: a-1, role: agent, join: cp-1}}\n")).is_ok());
        // A control-plane-only server needs an etcd node to join.
        let e = topo(&format!("{base}  - {{name: cp-1, role: control-plane, join: etcd-1}}\n  - {{name: cp-2, role: control-plane, join: cp-1}}\n")).expect_err("should be rejected");
        assert!(e[0].contains("runs no etcd"), "{e:?}");
    }

    #[test]
    fn topology_problems_are_all_reported() {
        let e = topo("name: Bad_Name\nk3s-version: latest\nnodes:\n  - {name: etcd-1, role: etcd}\n  - {name: etcd-1, role: agent, init: true}\n").expect_err("should be rejected");
        // bad name, bad version, duplicate node, agent init, etcd-1 neither inits nor joins
        assert_eq!(e.len(), 5, "{e:#?}");
    }

    #[test]
    fn shipped_checks_load() {
        for (name, text) in [
            ("etcd-split", include_str!("../checks/etcd-split.yaml")),
            (
                "metrics-order",
                include_str!("../checks/metrics-order.yaml"),
            ),
            (
                "bootstrap-check",
                include_str!("../checks/bootstrap-check.yaml"),
            ),
        ] {
            let c = chk(text).unwrap_or_else(|e| panic!("{name}: {e:#?}"));
            assert_eq!(c.name, name);
        }
    }

    #[test]
    fn restart_groups_and_bug_world() {
        let c = chk(&format!("{HEAD}steps:\n  - name: s\n    restart: [etcd-1, [etcd-2, etcd-3]]\n    expect:\n      etcd-2: {{ready: up, embedded-registry: up}}\n    bug:\n      etcd-2: {{embedded-registry: down}}\n")).expect("valid");
        let s = &c.steps[0];
        assert_eq!(
            s.restart,
            vec![
                vec!["etcd-1".to_string()],
                vec!["etcd-2".into(), "etcd-3".into()]
            ]
        );
        let bug = s.bug_world();
        assert_eq!(bug["etcd-2"]["ready"], Expected::Up);
        assert_eq!(bug["etcd-2"]["embedded-registry"], Expected::Down);
        assert_eq!(c.settle, DEFAULT_SETTLE);
    }

    #[test]
    fn expectation_on_an_untouched_running_node_is_allowed() {
        // etcd-1 is not restarted: the expectation re-observes its current boot.
        let c = chk(&format!("{HEAD}steps:\n  - name: s\n    config: {{etcd-2: {{embedded-registry: true}}}}\n    restart: [etcd-2]\n    expect:\n      etcd-1: {{embedded-registry: down}}\n"));
        assert!(c.is_ok(), "{c:?}");
    }

    #[test]
    fn expectation_on_an_edited_node_without_restart_is_an_error() {
        let e = chk(&format!("{HEAD}steps:\n  - name: s\n    config: {{etcd-1: {{embedded-registry: true}}, etcd-2: {{embedded-registry: true}}}}\n    restart: [etcd-2]\n    expect:\n      etcd-1: {{embedded-registry: up}}\n")).expect_err("should be rejected");
        assert_eq!(e.len(), 2, "{e:#?}");
        assert!(e[0].contains("not restarted"));
        assert!(e[1].contains("old boot"));
    }

    #[test]
    fn deferred_nodes_follow_their_start() {
        let head = HEAD.replace("etcd-split", "bootstrap-check");
        // Start, then restart in a later step, then observe: fine.
        let ok = chk(&format!("{head}steps:\n  - name: a\n    start: [etcd-3]\n    expect: {{etcd-3: {{ready: up}}}}\n  - name: b\n    restart: [etcd-3]\n    expect: {{etcd-3: {{ready: up}}}}\n"));
        assert!(ok.is_ok(), "{ok:?}");
        // Start twice (second time it is running).
        let e = chk(&format!("{head}steps:\n  - name: a\n    start: [etcd-3]\n    expect: {{etcd-3: {{ready: up}}}}\n  - name: b\n    start: [etcd-3]\n")).expect_err("should be rejected");
        assert!(e[0].contains("already running"), "{e:?}");
        // Start and restart in one step.
        let e = chk(&format!("{head}steps:\n  - name: a\n    start: [etcd-3]\n    restart: [etcd-3]\n    expect: {{etcd-3: {{ready: up}}}}\n")).expect_err("should be rejected");
        assert!(e[0].contains("twice"), "{e:?}");
    }

    #[test]
    fn a_deferred_node_starts_only_after_the_node_it_joins() {
        let t = "name: late\nk3s-version: v1.33.4+k3s1\nnodes:\n  - {name: etcd-1, role: etcd, init: true}\n  - {name: etcd-2, role: etcd, join: etcd-1, deferred: true}\n  - {name: etcd-3, role: etcd, join: etcd-2, deferred: true}\n";
        let topo = topology(Path::new("late.yaml"), t).expect("deferred chain is a valid topology");
        let run = |steps: &str| {
            let text =
                format!("name: c\ntopology: late\nissue: https://x/1\nsummary: s\nsteps:\n{steps}");
            check(
                Path::new("c.yaml"),
                &text,
                std::slice::from_ref(&topo),
                &sig(),
            )
            .map_err(messages)
        };
        // etcd-3 joins etcd-2: starting it first is an error ...
        let e = run("  - name: a\n    start: [etcd-3]\n    expect: {etcd-3: {ready: up}}\n")
            .expect_err("etcd-2 is not running yet");
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].contains("which is not running at this step"), "{e:?}");
        // ... starting both in order in one step is fine.
        let ok =
            run("  - name: a\n    start: [etcd-2, etcd-3]\n    expect: {etcd-3: {ready: up}}\n");
        assert!(ok.is_ok(), "{ok:?}");
    }

    #[test]
    fn remove_tracks_keys_across_steps() {
        let ok = chk(&format!("{HEAD}steps:\n  - name: a\n    config: {{etcd-2: {{embedded-registry: true}}}}\n    restart: [etcd-2]\n    expect: {{etcd-2: {{ready: up}}}}\n  - name: b\n    remove: {{etcd-2: [embedded-registry]}}\n    restart: [etcd-2]\n  - name: c\n    remove: {{etcd-2: [embedded-registry]}}\n    restart: [etcd-2]\n")).expect_err("should be rejected");
        // Removed in b, so c has nothing left to remove.
        assert_eq!(ok.len(), 1, "{ok:?}");
        assert!(ok[0].starts_with("14:"), "{ok:?}");
    }

    #[test]
    fn value_signals_take_values() {
        let c = chk(&format!("{HEAD}steps:\n  - name: a\n    restart: [etcd-2]\n    expect: {{etcd-2: {{version: v1.33.4+k3s1, roles: etcd}}}}\n")).expect("valid");
        assert_eq!(
            c.steps[0].expect["etcd-2"]["version"],
            Expected::Value("v1.33.4+k3s1".into())
        );
    }

    #[test]
    fn topology_override_reports_nodes_it_lacks() {
        let c = chk(include_str!("../checks/etcd-split.yaml")).expect("valid");
        let other = topology(Path::new("b.yaml"), BOOTSTRAP).expect("valid");
        let e = check_with_topology(
            &c,
            include_str!("../checks/etcd-split.yaml"),
            &other,
            &sig(),
        )
        .map_err(messages)
        .expect_err("should be rejected");
        // etcd-3 is deferred in bootstrap-check: it cannot be edited, restarted or observed.
        assert!(e.iter().all(|m| m.contains("etcd-3")), "{e:#?}");
        assert!(!e.is_empty());
    }

    #[test]
    fn a_check_naming_a_broken_topology_says_nothing_more() {
        let cx = Context {
            topologies: &[],
            broken_topologies: &["etcd-split".into()],
            signals: &sig(),
            topology_override: None,
        };
        let e = check_in(
            Path::new("c.yaml"),
            include_str!("../checks/etcd-split.yaml"),
            &cx,
        );
        assert!(e.is_ok_and(|c| c.steps.is_empty()));
    }

    #[test]
    fn empty_and_comment_only_files() {
        for text in ["", "\n\n", "# only a comment\n", "---\n# x\n"] {
            let e = topo(text).expect_err("should be rejected");
            assert_eq!(e, vec!["1:1: the file is empty (no YAML content)"]);
        }
    }

    #[test]
    fn file_kinds() {
        let p = Path::new("x/checks/a.yaml");
        assert_eq!(file_kind(p, "name: a\nsteps: []\n"), Some(FileKind::Check));
        assert_eq!(file_kind(p, "nodes: []\n"), Some(FileKind::Topology));
        assert_eq!(file_kind(p, "signals: {}\n"), Some(FileKind::Signals));
        assert_eq!(file_kind(p, ""), Some(FileKind::Check));
        assert_eq!(
            file_kind(Path::new("x/topologies/a.yaml"), ""),
            Some(FileKind::Topology)
        );
        assert_eq!(file_kind(Path::new("a.yaml"), "name: x\n"), None);
    }
}
