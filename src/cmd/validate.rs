//! `repro validate [FILES…]`.

use crate::catalog::{self, Catalog};
use crate::cli::{Global, ValidateArgs};
use crate::exit;

pub fn run(g: &Global, args: &ValidateArgs) -> anyhow::Result<i32> {
    let root = catalog::find_root(g.root.as_deref());
    let result = if args.files.is_empty() {
        Catalog::load(root.as_deref()).map(|c| (c.checks.len(), c.topologies.len()))
    } else {
        validate_files(root.as_deref(), &args.files)
    };
    match result {
        Ok((checks, topologies)) => {
            println!(
                "ok: {checks} check(s), {topologies} topology file(s) and the signals are valid"
            );
            Ok(exit::OK)
        }
        Err(d) => {
            eprint!("{}", d);
            eprintln!("{} problem(s) found", d.len());
            Ok(exit::BAD_INPUT)
        }
    }
}

/// Validates the given files together with the project's own (so a check can name a shipped
/// topology), reporting problems of the given files only.
fn validate_files(
    root: Option<&std::path::Path>,
    files: &[std::path::PathBuf],
) -> Result<(usize, usize), crate::diag::Diagnostics> {
    let mut diags = crate::diag::Diagnostics::default();
    let mut given = Vec::new();
    for f in files {
        match catalog::read(f) {
            Ok(s) => given.push(s),
            Err(d) => diags.push(d),
        }
    }
    let mut all = catalog::sources(root).unwrap_or_default();
    // A given file replaces a project file of the same kind and name; keep it simple: a given
    // signals file replaces the project's, given topologies/checks are added.
    let given_has_signals = given
        .iter()
        .any(|s| crate::load::file_kind(&s.path, &s.text) == Some(crate::load::FileKind::Signals));
    if given_has_signals {
        all.retain(|s| {
            crate::load::file_kind(&s.path, &s.text) != Some(crate::load::FileKind::Signals)
        });
    }
    let given_paths: Vec<_> = given.iter().map(|s| s.path.clone()).collect();
    all.retain(|s| !given_paths.iter().any(|p| same_file(p, &s.path)));
    // Project checks are not re-validated here: only what the user named.
    all.retain(|s| crate::load::file_kind(&s.path, &s.text) != Some(crate::load::FileKind::Check));
    all.extend(given);
    match Catalog::from_sources("validate".into(), all) {
        Ok(c) => {
            if diags.is_empty() {
                Ok((c.checks.len(), c.topologies.len()))
            } else {
                Err(diags.sorted())
            }
        }
        Err(d) => {
            diags.extend(d);
            let wanted: Vec<_> = files.to_vec();
            diags
                .0
                .retain(|d| wanted.iter().any(|w| same_file(w, &d.file)));
            Err(diags.sorted())
        }
    }
}

fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}
