//! `repro inspect PATH…`: read logs a user already has (see `crate::inspect`).

use std::io::IsTerminal;

use crate::catalog::{self, Catalog};
use crate::cli::{Global, InspectArgs, InspectFormat, Progress};
use crate::exit;
use crate::inspect::{self, render, sources};

pub fn run(g: &Global, a: &InspectArgs) -> anyhow::Result<i32> {
    let root = catalog::find_root(g.root.as_deref());
    let cat = match Catalog::load(root.as_deref()) {
        Ok(c) => c,
        Err(d) => {
            eprint!("{d}");
            eprintln!("fix these first: `repro validate` shows the same problems");
            return Ok(exit::BAD_INPUT);
        }
    };
    let resolved = match sources::resolve(&a.paths, &a.nodes, &a.configs) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("repro: {e}");
            return Ok(exit::BAD_INPUT);
        }
    };
    let opts = inspect::Options {
        settle: a.settle,
        excerpt: a.excerpt,
        secrets: a.secrets.clone(),
        progress: match a.progress {
            Progress::Always => true,
            Progress::Never | Progress::Off => false,
            Progress::Auto => std::io::stderr().is_terminal() && !is_ci::cached(),
        },
    };
    let (report, _) = match inspect::inspect(&resolved, &cat, &opts) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("repro: {e}");
            return Ok(exit::BAD_INPUT);
        }
    };
    let out = match a.format {
        InspectFormat::Table => render::table(&report, a.evidence),
        InspectFormat::Json => render::json(&report),
        InspectFormat::Markdown => render::markdown(&report),
    };
    print!("{out}");
    Ok(if report.findings.iter().any(|f| f.verdict == "matches") {
        exit::OUTCOME_DIFFERS
    } else {
        exit::OK
    })
}
