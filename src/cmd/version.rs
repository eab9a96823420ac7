//! `repro version`: repro's own version and the commit it was built from, as `repro --version`
//! prints them (the distribution's version of a run is `--version` after a command: one word,
//! one meaning per place, issue #32).

use crate::cli::{Format, Global, VersionArgs};
use crate::error::Error;
use crate::exit::Exit;

pub(crate) fn run(_g: &Global, a: &VersionArgs) -> Result<Exit, Error> {
    // `0.1.0 (commit abc…)`, or `(commit unknown: …)` outside a git checkout (build.rs).
    let line = env!("REPRO_VERSION_LINE");
    let text = match a.format {
        Format::Text => format!("repro {line}\n"),
        Format::Json => {
            let commit = line
                .split_once("(commit ")
                .and_then(|(_, c)| c.strip_suffix(')'))
                .filter(|c| !c.starts_with("unknown"));
            let doc = serde_json::json!({
                "kind": "repro-version",
                "name": "repro",
                "version": env!("CARGO_PKG_VERSION"),
                "commit": commit,
            });
            format!("{doc:#}\n")
        }
    };
    let _ = super::common::write_stdout(&text);
    Ok(Exit::Ok)
}
