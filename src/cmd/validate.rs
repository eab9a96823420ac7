//! `repro validate [FILES…]`: every problem of the scenario files, with file, line and column.
//!
//! Without files it validates the whole project (or the built-in files). With files it
//! validates those, next to the project's own topologies and signals so a check can name a
//! shipped topology; a given topology or signals file takes the place of the project's one with
//! the same name (a given signals file lays over the built-in signals by name). Every problem
//! found is printed; exit 2 if there is any.

use std::path::{Path, PathBuf};

use crate::catalog::{self, Catalog, Source};
use crate::cli::{Format, Global, ValidateArgs};
use crate::cmd::common::write_stdout;
use crate::diag::Diagnostics;
use crate::error::Error;
use crate::exit::Exit;
use crate::load::{self, FileKind};

pub(crate) fn run(g: &Global, args: &ValidateArgs) -> Result<Exit, Error> {
    let root = catalog::find_root(g.root.as_deref());
    let result = if args.files.is_empty() {
        Catalog::load(root.as_deref()).map(|c| {
            format!(
                "ok: {}, {} and {} are valid ({})",
                count(c.checks.len(), "check"),
                count(c.topologies.len(), "topology"),
                count(c.signals.by_name.len(), "signal"),
                where_from(root.as_deref(), &c)
            )
        })
    } else {
        validate_files(root.as_deref(), &args.files).map(|()| {
            let names: Vec<String> = args.files.iter().map(|f| f.display().to_string()).collect();
            format!(
                "ok: {} valid: {}",
                count(names.len(), "file"),
                names.join(", ")
            )
        })
    };
    let json = args.format == Format::Json;
    match result {
        Ok(msg) if json => {
            let doc = serde_json::json!({
                "kind": "repro-validate", "valid": true, "summary": msg, "problems": [],
            });
            write_stdout(&format!("{doc:#}\n")).map_err(anyhow::Error::from)?;
            Ok(Exit::Ok)
        }
        Ok(msg) => {
            write_stdout(&format!("{msg}\n")).map_err(anyhow::Error::from)?;
            Ok(Exit::Ok)
        }
        Err(d) => {
            let redact = |text: &str| redact_messages(root.as_deref(), &args.files, text);
            if json {
                let problems: Vec<serde_json::Value> =
                    d.0.iter()
                        .map(|p| {
                            serde_json::json!({
                                "file": p.file.display().to_string(),
                                "line": p.line,
                                "column": p.column,
                                "message": redact(&p.message),
                                "help": p.help.as_deref().map(redact),
                            })
                        })
                        .collect();
                let doc = serde_json::json!({
                    "kind": "repro-validate", "valid": false,
                    "summary": format!("{} found", count(d.len(), "problem")),
                    "problems": problems,
                });
                let _ = write_stdout(&format!("{doc:#}\n"));
            }
            let text = format!("{d}{} found", count(d.len(), "problem"));
            Err(Error::bad_input(redact(&text)))
        }
    }
}

/// Messages quote values of the files (an unknown node's name, a value that is not a URL): the
/// secrets the files set are learned, by key as a run learns them, and hidden in the messages.
/// `main` redacts every error by shape too; this adds what only knowledge of the files tells.
fn redact_messages(root: Option<&Path>, files: &[PathBuf], text: &str) -> String {
    let mut r = crate::redact::Redactor::new(&[]);
    let given = files.iter().filter_map(|f| catalog::read(f).ok());
    let project = catalog::sources(root).unwrap_or_default();
    for s in given.chain(project) {
        crate::redact::learn_source(&mut r, &s.path.to_string_lossy(), &s.text);
    }
    r.redact_text(text)
}

fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        // The nouns used here take a plain `s`, except the one ending in `y`.
        match what.strip_suffix('y') {
            Some(stem) => format!("{n} {stem}ies"),
            None => format!("{n} {what}s"),
        }
    }
}

/// Where the files validated came from: the built-in ones, a project folder's, or a project
/// folder's laid over the built-in ones (with how many of each, and which were set aside).
fn where_from(root: Option<&Path>, c: &Catalog) -> String {
    let own = match root {
        None => return "the files built into repro".into(),
        Some(r) if r == Path::new(".") => "checks/ and topologies/".to_string(),
        Some(r) => format!("{}/checks and {}/topologies", r.display(), r.display()),
    };
    let builtin =
        |paths: &mut dyn Iterator<Item = &Path>| paths.filter(|p| catalog::is_builtin(p)).count();
    let checks = builtin(&mut c.checks.iter().map(|(c, _)| c.path.as_path()));
    let topologies = builtin(&mut c.topologies.iter().map(|t| t.path.as_path()));
    let set_aside = c.set_aside();
    if checks + topologies == 0 && set_aside.is_empty() {
        return own;
    }
    let mut s = format!(
        "{own} laid over the files built into repro: {checks} of the checks and {topologies} of the topologies are built in"
    );
    if !set_aside.is_empty() {
        let names: Vec<&str> = set_aside.iter().map(|(n, _)| n.as_str()).collect();
        s.push_str(&format!(
            "; built-in check{} {} left out: {} not hold over yours (`repro plan NAME` says why)",
            if names.len() == 1 { "" } else { "s" },
            names.join(", "),
            if names.len() == 1 {
                "it does"
            } else {
                "they do"
            },
        ));
    }
    s
}

/// Validates the given files together with the project's topologies and signals.
fn validate_files(root: Option<&Path>, files: &[PathBuf]) -> Result<(), Diagnostics> {
    let mut diags = Diagnostics::default();
    let mut given = Vec::new();
    for f in files {
        match catalog::read(f) {
            Ok(s) => given.push(s),
            Err(d) => diags.push(d),
        }
    }
    let mut project = match catalog::sources(root) {
        Ok(s) => s,
        Err(d) => {
            diags.extend(d);
            Vec::new()
        }
    };
    let kind = |s: &Source| load::file_kind(&s.path, &s.text);

    // The given files take the place of the project's: the same file, a signals file, or a
    // topology with the same name (an edited copy must not clash with its original).
    project.retain(|p| !given.iter().any(|g| same_file(&g.path, &p.path)));
    // A given signals file lays over the built-in one as the project's own would.
    if given.iter().any(|s| kind(s) == Some(FileKind::Signals)) {
        project.retain(|s| kind(s) != Some(FileKind::Signals) || s.is_builtin());
    }
    let given_topologies: Vec<String> = given
        .iter()
        .filter(|s| kind(s) == Some(FileKind::Topology))
        .filter_map(|s| load::topology_name(&s.text))
        .collect();
    project.retain(|s| {
        kind(s) != Some(FileKind::Topology)
            || load::topology_name(&s.text).is_none_or(|n| !given_topologies.contains(&n))
    });
    // Only the checks the user named are validated.
    project.retain(|s| kind(s) != Some(FileKind::Check));

    project.extend(given);
    if let Err(d) = Catalog::from_sources("validate".into(), project) {
        diags.extend(d);
    }
    if diags.is_empty() {
        Ok(())
    } else {
        Err(diags.sorted())
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::count;

    #[test]
    fn counts_read_naturally() {
        assert_eq!(count(1, "problem"), "1 problem");
        assert_eq!(count(3, "problem"), "3 problems");
        assert_eq!(count(2, "topology"), "2 topologies");
        assert_eq!(count(0, "check"), "0 checks");
    }
}
