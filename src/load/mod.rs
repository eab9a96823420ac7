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
use crate::raw::{
    CheckFile, ConfigValue, FixedIn, Pattern, PatternFile, ProbeRuleFile, RestartItem, Role,
    ShowsFile, SignalsFile, SpannedMap, StepFile, TopologyFile, UpgradeTo,
};
use crate::scenario::{
    Check, Expectations, Expected, LinePattern, Node, Probe, ProbeRule, Shows, Signal, Signals,
    Step, Topology, Upgrade, UpgradeBinary,
};
use distro::{Distro, FlagCommand, ReleaseSet, Version};

/// Why `key` may not be set by hand on `distro`, if repro derives it from the topology (setting
/// it would contradict the topology) or it is a secret.
fn derived_key_help(distro: Distro, key: &str) -> Option<String> {
    let facts = distro.facts();
    let keys = &facts.role_keys;
    if keys.init == Some(key) {
        Some("mark the node `init: true` instead".into())
    } else if key == keys.join {
        Some("use `join: <node>` on the node instead".into())
    } else if key == keys.token {
        Some(format!(
            "leave it out: repro sets a random {} per run, and secrets never go in scenario files",
            facts.token_env
        ))
    } else if key == keys.agent_token {
        Some("leave it out: secrets never go in scenario files".into())
    } else if keys.control_plane_only.contains(&key) {
        Some("use `role: control-plane` instead".into())
    } else if keys.etcd_only.contains(&key) {
        Some("use `role: etcd` instead".into())
    } else {
        None
    }
}

/// The default probe timeout when a signal's probe gives none.
const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// Node names become container host names and appear in `server:` URLs: DNS labels only.
static DNS_LABEL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$").expect("static regex"));

/// A container environment name: `NAME=value` is split at the first `=`, so a name holding one
/// would set another variable (`K3S_TOKEN=x` as a name overrides the run's token).
static ENV_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[A-Za-z_][A-Za-z0-9_]*$").expect("static regex"));

/// k3s config keys are long flag names without the dashes (`+` appends to a list in k3s).
static CONFIG_KEY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[a-z0-9][a-z0-9-]*[a-z0-9]\+?$").expect("static regex"));

/// What kind of file a path holds, told by its top-level keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileKind {
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
pub(crate) fn file_kind(path: &Path, text: &str) -> Option<FileKind> {
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
    serde_saphyr::from_str_with_options::<T>(text, crate::raw::yaml_options())
        .map_err(|e| Diagnostics(vec![d.yaml(&e, text)]))
}

fn version(d: &FileDiag, s: &Spanned<String>, out: &mut Diagnostics) -> Option<Version> {
    match s.value.parse::<Version>() {
        Ok(v) => Some(v),
        Err(e) => {
            out.push(
                d.span(s, e.to_string())
                    .help(version_help(Distro::default())),
            );
            None
        }
    }
}

/// What a version of `distro` looks like, for help lines.
fn version_help(distro: Distro) -> String {
    let facts = distro.facts();
    format!(
        "write the full {distro} release, e.g. {} or {}",
        facts.example_version, facts.example_candidate
    )
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

/// Keys are checked for their form, for keys repro derives, and against the flags of the
/// distribution's `commands` they are written for (on `version`'s release line, when it is known).
fn check_config_keys<T>(
    d: &FileDiag,
    distro: Distro,
    config: &SpannedMap<T>,
    commands: &[FlagCommand],
    version: Option<&Version>,
    out: &mut Diagnostics,
) {
    for k in config.keys() {
        if let Some(help) = derived_key_help(distro, &k.value) {
            out.push(
                d.span(
                    k,
                    format!("`{}` is derived by repro from the topology", k.value),
                )
                .help(help),
            );
        } else if !CONFIG_KEY.is_match(&k.value) {
            out.push(
                d.span(k, format!("`{}` is not a {distro} config key", k.value))
                    .help(format!("{distro} keys are the long flag names without the leading dashes, e.g. `embedded-registry`")),
            );
        } else if let Some((message, help)) =
            crate::flags::unknown_key(distro, &k.value, commands, version)
        {
            out.push(d.span(k, message).help(help));
        }
    }
}

/// The text a `files:` entry writes (`None`: the entry deletes the file).
trait FileBody {
    fn body(&self) -> Option<&str>;
}

impl FileBody for String {
    fn body(&self) -> Option<&str> {
        Some(self)
    }
}

impl FileBody for Option<String> {
    fn body(&self) -> Option<&str> {
        self.as_deref()
    }
}

/// The line (1-based) and key of a drop-in config file (`config.yaml.d/*.yaml`) that sets a
/// key repro derives or a secret (`token:`, `agent-token:`, …): refused like one in `config:`.
fn derived_key_in_dropin(distro: Distro, text: &str) -> Option<(usize, String, String)> {
    text.lines().enumerate().find_map(|(i, line)| {
        // a top-level key: at column 0, plain or quoted
        let (key, _) = line.split_once(':')?;
        let key = key.trim_end().trim_matches(|c| c == '"' || c == '\'');
        if key.is_empty() || line.starts_with([' ', '\t', '#', '-']) {
            return None;
        }
        derived_key_help(distro, key).map(|h| (i + 1, key.to_string(), h))
    })
}

fn check_files<T: FileBody>(
    d: &FileDiag,
    distro: Distro,
    files: &SpannedMap<T>,
    out: &mut Diagnostics,
) {
    let facts = distro.facts();
    for (p, body) in files.iter() {
        let v = node_file(distro, &p.value);
        let dropin = v.starts_with(&format!("{}/", facts.config_dropin_dir));
        if let Some((line, key, help)) = body
            .body()
            .filter(|_| dropin)
            .and_then(|t| derived_key_in_dropin(distro, t))
        {
            out.push(
                d.span(
                    p,
                    format!(
                        "`{}` sets `{key}` (line {line} of the file): a key repro derives or a secret, refused in a drop-in as in `config:`",
                        crate::term::sanitize(&p.value)
                    ),
                )
                .help(help),
            );
        }
        // `etc/rancher/k3s/x` is relative to the config folder too, so it would name
        // /etc/rancher/k3s/etc/rancher/k3s/x: almost surely a missing leading `/`.
        let root_folder = facts.config_dir.trim_start_matches('/').split('/').next();
        if !p.value.starts_with('/')
            && root_folder.is_some_and(|r| p.value.starts_with(&format!("{r}/")))
        {
            out.push(
                d.span(
                    p,
                    format!(
                        "`{}` is relative to {}, so it names {v}",
                        p.value, facts.config_dir
                    ),
                )
                .help(format!(
                    "start a full path with `/` (/{}), or give it relative to {} (e.g. {})",
                    p.value,
                    facts.config_dir,
                    facts
                        .registries_path
                        .strip_prefix(facts.config_dir)
                        .unwrap_or_default()
                        .trim_start_matches('/')
                )),
            );
        } else if let Err(why) = node_path(&v) {
            out.push(
                d.span(p, format!("`{}` is not a valid file path: {why}", p.value))
                    .help(format!("give the full, plain path of a file inside the node, or one relative to {}: no `.` or `..` parts, no `//` and no trailing `/`, e.g. {} or {}", facts.config_dir, facts.registries_path, facts.registries_path.strip_prefix(facts.config_dir).unwrap_or_default().trim_start_matches('/'))),
            );
        } else if v == facts.config_path {
            out.push(
                d.span(p, "config.yaml is rendered by repro from `config:`")
                    .help(format!(
                        "set keys under `config:`, or add a drop-in under {}/",
                        facts.config_dropin_dir
                    )),
            );
        } else if let Some(unit) = owned_env_file(facts, &v) {
            // repro writes the unit's environment file itself (the run token, the node's
            // `env:`): a topology's own would be replaced without a word (#30).
            out.push(
                d.span(
                    p,
                    format!("{v} is written by repro: the {unit} unit's environment (the join token and the node's `env:`)"),
                )
                .help(format!(
                    "set the variables under the node's `env:` (e.g. `env: {{HTTP_PROXY: http://proxy:3128}}`): repro writes them into {v}"
                )),
            );
        }
    }
}

/// The unit whose environment file `path` is, when repro writes it (`Facts::unit_env_file`:
/// `/etc/default/<unit>` of a distribution that runs as a systemd unit; the systemd mechanism,
/// run/node/systemd.rs, writes it).
fn owned_env_file(facts: &distro::Facts, path: &str) -> Option<&'static str> {
    [false, true]
        .into_iter()
        .find(|agent| facts.unit_env_file(*agent).as_deref() == Some(path))
        .map(|agent| facts.unit(agent))
}

/// A `files:` key as a path inside the node: a key not starting with `/` is relative to the
/// distribution's config folder, so one check can run on every distribution.
fn node_file(distro: Distro, key: &str) -> String {
    if key.starts_with('/') {
        key.to_string()
    } else {
        distro.facts().in_config_dir(key)
    }
}

/// The `files:` of a topology or node with every key a path inside the node.
fn node_files(distro: Distro, files: SpannedMap<String>) -> IndexMap<String, String> {
    files
        .into_iter()
        .map(|(k, v)| (node_file(distro, &k.value), v))
        .collect()
}

/// Whether a `files:` key is a path in its one plain spelling, so comparing strings compares
/// files: `/etc/rancher/k3s/./config.yaml` and `//etc/...` name repro's own config.yaml too, and
/// the tar upload would drop `.` parts silently. Returns why not.
pub(crate) fn node_path(v: &str) -> Result<(), &'static str> {
    let Some(rest) = v.strip_prefix('/') else {
        return Err("it is relative");
    };
    if rest.is_empty() {
        return Err("it is the root folder");
    }
    if v.chars().any(char::is_control) {
        return Err("it holds a control character");
    }
    for part in rest.split('/') {
        match part {
            "" => return Err("it has an empty part (`//` or a trailing `/`)"),
            "." => return Err("it has a `.` part"),
            ".." => return Err("it has a `..` part"),
            _ => {}
        }
    }
    Ok(())
}

fn duration(d: &FileDiag, s: &Spanned<String>, out: &mut Diagnostics) -> Option<Duration> {
    match humantime::parse_duration(&s.value) {
        // A deadline this far out would overflow an `Instant` mid-run.
        Ok(v) if v > Duration::from_secs(24 * 3600) => {
            out.push(
                d.span(s, format!("`{}` is longer than a day", s.value))
                    .help("write a margin of seconds or minutes, e.g. 3s, 500ms, 1m"),
            );
            None
        }
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

mod check;
mod placeholders;
mod signals;
mod topology;

#[cfg(test)]
mod lifecycle_tests;
#[cfg(test)]
mod tests;

pub(crate) use check::{check, check_in, check_with_topology, Context};
pub use signals::signals;
pub(crate) use topology::{topology, topology_name, topology_on};
