//! `repro inspect PATH…`: read logs a user already has (see `crate::inspect`).

use crate::catalog::{self, Catalog};
use crate::cli::{Global, InspectArgs, InspectFormat};
use crate::cmd::common::write_stdout;
use crate::error::Error;
use crate::exit::Exit;
use crate::inspect::model::FindingVerdict;
use crate::inspect::{self, render, sources};

pub(crate) fn run(g: &Global, a: &InspectArgs) -> Result<Exit, Error> {
    let root = catalog::find_root(g.root.as_deref());
    let cat = Catalog::load(root.as_deref()).map_err(|d| {
        Error::bad_input(format!(
            "{d}fix these first: `repro validate` shows the same problems"
        ))
    })?;
    let bad = |e: sources::InputError| Error::from(e.0);
    let resolved = sources::resolve(&a.paths, &a.nodes, &a.configs).map_err(bad)?;
    let opts = inspect::Options {
        settle: a.settle,
        excerpt: a.excerpt,
        secrets: a.secrets.clone(),
        progress: a.progress.is_live(),
    };
    let (report, _) = inspect::inspect(&resolved, &cat, &opts).map_err(bad)?;
    let out = match a.format {
        InspectFormat::Table => render::table(&report, a.evidence),
        InspectFormat::Json => render::json(&report),
        InspectFormat::Markdown => render::markdown(&report),
    };
    write_stdout(&out).map_err(anyhow::Error::from)?;
    Ok(
        if report
            .findings
            .iter()
            .any(|f| f.verdict == FindingVerdict::Matches)
        {
            Exit::OutcomeDiffers
        } else {
            Exit::Ok
        },
    )
}
