//! `repro audit`: is my cluster affected by k3s #12753, and how to change a critical key safely
//! (see `crate::audit`, docs/audit.md).

use std::collections::BTreeMap;
use std::path::PathBuf;

use distro::{Distro, Version};

use crate::audit::{self, change, input, live, render, Cluster, Member};
use crate::cli::{AuditArgs, AuditFormat, Global};
use crate::cmd::common::write_stdout;
use crate::diag::{Diagnostic, Help};
use crate::error::Error;
use crate::exit::Exit;
use crate::explore::model::Config;
use crate::redact::Redactor;

pub(crate) async fn run(g: &Global, a: &AuditArgs) -> Result<Exit, Error> {
    let mut redactor = Redactor::new(&[]);
    let cluster = read_cluster(a, &mut redactor).await?;
    let changes = parse_changes(a, cluster.distro)?;
    let mut report = audit::audit(&cluster);
    if !a.logs.is_empty() || !a.node_logs.is_empty() {
        audit::add_evidence(&mut report, &log_evidence(g, a)?);
    }
    let plan = (!changes.is_empty()).then(|| change::plan(&cluster, &changes));
    if let (Some(p), Some(path)) = (&plan, &a.check_out) {
        let text = redactor.redact_text(&change::check_file(&cluster, p, &a.topology));
        std::fs::write(path, text).map_err(|source| Error::Write {
            path: path.clone(),
            source,
        })?;
    }
    let out = match a.format {
        AuditFormat::Text => render::text(&report, plan.as_ref()),
        AuditFormat::Json => render::json(&report, plan.as_ref()),
        AuditFormat::Prometheus => render::prometheus(&report),
    };
    write_stdout(&redactor.redact_text(&out)).map_err(anyhow::Error::from)?;
    let plan_ok = plan.as_ref().is_none_or(|p| p.impossible.is_empty());
    Ok(if report.consistent && plan_ok {
        Exit::Ok
    } else {
        Exit::OutcomeDiffers
    })
}

/// `--change KEY=VALUE`s, each key one the distribution has.
fn parse_changes(a: &AuditArgs, d: Distro) -> Result<BTreeMap<String, String>, Error> {
    let known: Vec<String> = d.flags().iter().map(|f| f.name.clone()).collect();
    let mut out = BTreeMap::new();
    for c in &a.changes {
        let Some((k, v)) = c.split_once('=').filter(|(k, _)| !k.trim().is_empty()) else {
            return Err(Diagnostic::general(
                format!("`--change {c}` is not KEY=VALUE"),
                "e.g. --change supervisor-metrics=true",
            )
            .into());
        };
        if !known.iter().any(|f| f == k.trim()) {
            let help = crate::diag::suggest(k.trim(), &known).map_or_else(
                || format!("the keys are the flags of `{} server`", d.facts().binary),
                |s| format!("did you mean `{s}`?"),
            );
            return Err(
                Diagnostic::general(format!("`--change {c}`: unknown key `{k}`"), help).into(),
            );
        }
        out.insert(k.trim().to_string(), v.trim().to_string());
    }
    Ok(out)
}

/// The distribution of config files given alone: `--distribution`, else the one whose
/// version grammar `--version` follows.
fn distribution(a: &AuditArgs) -> Result<Distro, Error> {
    if let Some(name) = &a.distribution {
        return Distro::from_name(name).ok_or_else(|| {
            Diagnostic::general(
                format!("unknown distribution `{name}`"),
                format!("one of: {}", Distro::names()),
            )
            .into()
        });
    }
    let v = a.version.as_deref().unwrap_or_default();
    (Distro::ALL.iter().copied())
        .find(|d| Version::parse_for(*d, v).is_some())
        .ok_or_else(|| {
            let examples: Vec<&str> = Distro::ALL
                .iter()
                .map(|d| d.facts().example_version)
                .collect();
            Diagnostic::general(
                if v.is_empty() {
                    "config files alone need the servers' version".to_string()
                } else {
                    format!("`--version {v}` is not a version of {}", Distro::names())
                },
                format!(
                    "add --version, e.g. --version {}",
                    examples.join(" or --version ")
                ),
            )
            .into()
        })
}

/// The cluster from the inputs given: a live cluster when `--kubeconfig`/`--context` is given
/// or nothing else is, else a node list, else config files alone.
async fn read_cluster(a: &AuditArgs, redactor: &mut Redactor) -> Result<Cluster, Error> {
    let live_asked = a.kubeconfig.is_some() || a.context.is_some();
    let mut cluster = if let Some(f) = a.nodes_file.as_ref().filter(|_| !live_asked) {
        let nodes = input::read_nodes_file(f)?;
        from_nodes(&nodes, format!("the node list {}", f.display()))?
    } else if live_asked || a.configs.is_empty() {
        let (nodes, described) = live::list_nodes(a.kubeconfig.as_deref(), a.context.as_deref())
            .await
            .map_err(|e| match e {
                live::LiveError::Input(m, help) => Error::from(Diagnostic::general(m, help)),
                live::LiveError::Unreachable(m) => {
                    let help = Help("check the cluster is up and the kubeconfig's server reachable from here (`kubectl get nodes` with the same kubeconfig)");
                    Error::Other(anyhow::anyhow!("{m}{help}"))
                }
            })?;
        from_nodes(&nodes, described)?
    } else {
        from_files(a)?
    };
    if !a.configs.is_empty() && !cluster.source.starts_with("config files") {
        add_configs(&mut cluster, &a.configs, redactor)?;
    } else {
        for (_, p) in &a.configs {
            learn_secrets(redactor, p);
        }
    }
    Ok(cluster)
}

fn from_nodes(
    nodes: &[k8s_openapi::api::core::v1::Node],
    source: String,
) -> Result<Cluster, Error> {
    let (distro, members) = input::members_of_nodes(nodes).map_err(Error::usage)?;
    Ok(Cluster {
        distro,
        source,
        members,
    })
}

/// Every secret in a config's files, so none is printed.
fn learn_secrets(redactor: &mut Redactor, path: &std::path::Path) {
    for f in input::config_files(path).unwrap_or_default() {
        if let Ok(text) = std::fs::read_to_string(&f) {
            redactor.learn_file(&f.to_string_lossy(), &text);
        }
    }
}

/// Each server's merged config files, as the next start's config of a listed node.
fn add_configs(
    cluster: &mut Cluster,
    configs: &[(String, PathBuf)],
    redactor: &mut Redactor,
) -> Result<(), Error> {
    for (name, path) in configs {
        learn_secrets(redactor, path);
        let values = input::read_config(cluster.distro, path)?;
        let Some(m) = cluster.members.iter_mut().find(|m| &m.name == name) else {
            let known: Vec<&str> = cluster.members.iter().map(|m| m.name.as_str()).collect();
            return Err(Diagnostic::general(
                format!("--config {name}=…: the cluster has no node `{name}`"),
                format!("its nodes: {}", known.join(", ")),
            )
            .into());
        };
        let mut cfg = input::as_config(&values);
        // Keys the files leave out that the node was started with on its command line stay.
        if let Some(running) = &m.running {
            for (k, v) in running {
                cfg.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        m.configured = Some(cfg);
    }
    Ok(())
}

/// Config files alone: roles from their keys, joins from `server:`, `--version` for all.
fn from_files(a: &AuditArgs) -> Result<Cluster, Error> {
    let d = distribution(a)?;
    let version = match &a.version {
        Some(v) => Some(Version::parse_for(d, v).ok_or_else(|| {
            Error::from(Diagnostic::general(
                format!("`--version {v}` is not a {} version", d.name()),
                format!("e.g. {}", d.facts().example_version),
            ))
        })?),
        None => {
            return Err(Diagnostic::general(
                "config files alone need the servers' version",
                format!(
                    "add --version, e.g. --version {}",
                    d.facts().example_version
                ),
            )
            .into())
        }
    };
    let names: Vec<&str> = a.configs.iter().map(|(n, _)| n.as_str()).collect();
    let mut members = Vec::new();
    for (name, path) in &a.configs {
        let cfg: Config = input::as_config(&input::read_config(d, path)?);
        let join = cfg
            .get(d.facts().role_keys.join)
            .and_then(|u| input::url_host(u));
        let join = join.map(|h| {
            names
                .iter()
                .find(|n| **n == h)
                .map_or(h.clone(), |n| n.to_string())
        });
        members.push(Member {
            name: name.clone(),
            role: input::role_of_config(d, &cfg),
            version: version.clone(),
            join,
            running: None,
            configured: Some(cfg),
        });
    }
    Ok(Cluster {
        distro: d,
        source: format!("config files of {}", names.join(", ")),
        members,
    })
}

/// What each node's last boot in the logs showed of each signal (read as `repro inspect` reads
/// them): (node, signal) → state.
fn log_evidence(g: &Global, a: &AuditArgs) -> Result<BTreeMap<(String, String), String>, Error> {
    let root = crate::catalog::find_root(g.root.as_deref());
    let cat = crate::catalog::Catalog::load(root.as_deref()).map_err(|d| {
        Error::bad_input(format!(
            "{d}fix these first: `repro validate` shows the same problems"
        ))
    })?;
    let bad = |e: crate::inspect::sources::InputError| Error::from(e.0);
    let resolved = crate::inspect::sources::resolve(&a.logs, &a.node_logs, &[]).map_err(bad)?;
    let opts = crate::inspect::Options {
        settle: None,
        excerpt: false,
        secrets: Vec::new(),
        progress: false,
    };
    let (report, _) = crate::inspect::inspect(&resolved, &cat, &opts).map_err(bad)?;
    let mut seen = BTreeMap::new();
    for node in report.inputs.iter().flat_map(|i| &i.nodes) {
        let Some(last) = node.boots.last() else {
            continue;
        };
        for (signal, s) in &last.signals {
            seen.insert(
                (node.name.clone(), signal.clone()),
                s.state.as_str().to_string(),
            );
        }
    }
    Ok(seen)
}
