//! `repro doctor`: what this host and engine can do for a run of a topology and version (the
//! checks are `crate::doctor`'s); exit 3 when a line fails.

use serde::Serialize;

use crate::catalog::{self, Catalog};
use crate::cli::{DoctorArgs, Format, Global};
use crate::diag::Diagnostic;
use crate::doctor::{self, Line, Status};
use crate::error::Error;
use crate::exit::Exit;
use distro::Version;

use super::common::out;

#[derive(Serialize)]
struct Report<'a> {
    topology: &'a str,
    version: String,
    sim: bool,
    nodes: usize,
    /// No line failed: a run can go ahead.
    ok: bool,
    checks: &'a [Line],
}

pub(crate) async fn run(g: &Global, a: &DoctorArgs) -> Result<Exit, Error> {
    let root = catalog::find_root(g.root.as_deref());
    let cat = Catalog::load(root.as_deref())?;
    // The version first: without --topology it says which distribution's topologies count.
    let example = distro::Distro::default().facts().example_version;
    let asked: Option<Version> = match &a.version {
        Some(v) => Some(v.parse().map_err(|e: distro::VersionError| {
            Diagnostic::general(
                format!("--version: {e}"),
                format!("e.g. --version {example}"),
            )
        })?),
        None => None,
    };
    let wanted = asked
        .as_ref()
        .map_or(distro::Distro::default(), |v| v.distro);
    let topology = match &a.topology {
        Some(name) => cat.topology(name).ok_or_else(|| {
            let names: Vec<&str> = cat.topologies.iter().map(|t| t.name.as_str()).collect();
            Diagnostic::general(
                format!("--topology: no topology named `{name}`"),
                format!("use one of: {}", names.join(", ")),
            )
        })?,
        // The largest shipped topology of the distribution asked for (k3s unless --version names
        // another): a host fit for it is fit for every shipped check there.
        None => cat
            .topologies
            .iter()
            .filter(|t| t.distro == wanted)
            .max_by_key(|t| t.nodes.len())
            .ok_or_else(|| {
                Diagnostic::general(
                    format!("no {wanted} topology to check against"),
                    "name one with --topology",
                )
            })?,
    };
    let facts = topology.distro.facts();
    let version: Version = asked.unwrap_or_else(|| topology.default_version.clone());
    let req = doctor::Request {
        facts,
        version: version.clone(),
        topology: &topology.name,
        roles: topology.nodes.iter().map(|n| n.role).collect(),
        sim: a.sim,
        image: a.image.clone(),
    };
    let mut lines = doctor::diagnose(&req).await;
    // A doctor report is pasted into issues: every field through one redaction context (an
    // image or DOCKER_HOST URL with a password, a token in an engine's message).
    let mut redactor = crate::redact::Redactor::new(&[]);
    // One line each in text: an engine's message with a line break cannot print a line that
    // looks like a check of its own.
    let one_line = |s: &str| s.split(['\r', '\n']).collect::<Vec<_>>().join(" ");
    for l in &mut lines {
        l.detail = redactor.redact_text(&l.detail);
        if let Some(fix) = &mut l.fix {
            *fix = redactor.redact_text(fix);
        }
    }
    let failed = lines.iter().any(|l| l.status == Status::Fail);
    match a.format {
        Format::Json => {
            let report = Report {
                topology: &topology.name,
                version: version.to_string(),
                sim: a.sim,
                nodes: topology.nodes.len(),
                ok: !failed,
                checks: &lines,
            };
            let json = serde_json::to_string_pretty(&report)
                .map_err(|e| anyhow::anyhow!("cannot write the report as JSON: {e}"))?;
            out(&json);
        }
        Format::Text => {
            let what = if a.sim {
                format!("the {} stand-in", facts.name)
            } else {
                format!("real {}", facts.name)
            };
            out(&format!(
                "repro doctor: {what} {version}, topology {} ({} nodes)",
                topology.name,
                topology.nodes.len()
            ));
            let width = lines.iter().map(|l| l.check.len()).max().unwrap_or(0);
            for l in &lines {
                out(&format!(
                    "{:<4}  {:<width$}  {}",
                    l.status.word(),
                    l.check,
                    one_line(&l.detail)
                ));
                if let Some(fix) = l.fix.as_ref().filter(|_| l.status != Status::Ok) {
                    out(&format!(
                        "{:<4}  {:<width$}  fix: {}",
                        "",
                        "",
                        one_line(fix)
                    ));
                }
            }
            out(&if failed && !a.sim {
                format!("{what} cannot run here; `repro doctor --sim` says whether the stand-in can (`repro run --sim`)")
            } else if failed {
                "the stand-in cannot run here".to_string()
            } else {
                format!("{what} can run here")
            });
        }
    }
    Ok(if failed { Exit::Infra } else { Exit::Ok })
}
