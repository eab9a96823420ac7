//! The error a command ends with, and what it means for the exit (the one error → exit
//! mapping, [`Error::exit`]; the numbers are in `crate::exit`). `main` is the one place that
//! prints it and exits.

use std::path::PathBuf;

use crate::diag::{Diagnostic, Diagnostics};
use crate::docker::DockerError;
use crate::exit::Exit;
use crate::run::RunError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input or usage, already worded for the user (diagnostics with file:line:col and
    /// `help:` lines): printed as it is. Nothing was created.
    #[error("{0}")]
    BadInput(String),
    /// Bad input or usage said as diagnostics (message, help, and a file position when there
    /// is one), printed by `crate::diag`, the one place their shape is written. Nothing was
    /// created.
    #[error("{0}")]
    Usage(Diagnostics),
    #[error(transparent)]
    Docker(#[from] DockerError),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A release channel could not be resolved (the network is missing).
    #[error("{0}")]
    Channel(String),
    /// `repro clean` could not remove some objects: one line per problem, each already said
    /// in full (the counts of what was removed are on stdout).
    #[error("{}", .0.join("; "))]
    Clean(Vec<String>),
    /// A commit build could not be fetched or verified (`--k3s-commit`): the storage, the network
    /// or a download that does not match its sum. Nothing was created.
    #[error("{0}")]
    Fetch(String),
    /// Anything else that stopped a command (rendering reports, building images).
    #[error("{0:#}")]
    Other(#[from] anyhow::Error),
}

impl From<crate::redact::FilesError> for Error {
    fn from(e: crate::redact::FilesError) -> Error {
        match e {
            crate::redact::FilesError::BadInput(d) => Error::Usage(d.into()),
            crate::redact::FilesError::Other(e) => Error::Other(e),
        }
    }
}

impl From<Diagnostic> for Error {
    fn from(d: Diagnostic) -> Error {
        Error::Usage(d.into())
    }
}

impl From<Diagnostics> for Error {
    fn from(d: Diagnostics) -> Error {
        Error::Usage(d)
    }
}

impl Error {
    /// Text already worded for the user, printed as it is (after `error: ` unless it is a
    /// diagnostic already): a report of problems with a closing line, a redacted validation.
    pub(crate) fn bad_input(message: impl Into<String>) -> Error {
        Error::BadInput(message.into())
    }

    /// `error: {message}`: bad input with no help and no file (with a help, a file or a
    /// position, build the [`Diagnostic`] and convert it).
    pub(crate) fn usage(message: impl Into<String>) -> Error {
        Diagnostic::usage(message).into()
    }

    /// The one match from error to exit (a run's own failures through [`RunError::exit`], which
    /// the run also writes into result.json).
    pub fn exit(&self) -> Exit {
        match self {
            Error::BadInput(_) | Error::Usage(_) => Exit::BadInput,
            Error::Run(e) => e.exit(),
            Error::Docker(_)
            | Error::Write { .. }
            | Error::Channel(_)
            | Error::Fetch(_)
            | Error::Clean(_)
            | Error::Other(_) => Exit::Infra,
        }
    }

    /// The text for stderr, every error after one prefix, `error: ` (as clap's own errors and
    /// the file diagnostics `file:line:col: error: …` say it): a message already worded as a
    /// diagnostic stays as it is; anything else gets the prefix.
    pub fn render(&self) -> String {
        let text = match self {
            Error::BadInput(msg) | Error::Channel(msg) => prefixed(msg),
            Error::Usage(d) => d.to_string(),
            Error::Clean(problems) => problems
                .iter()
                .map(|p| prefixed(&format!("{p}\n")))
                .collect(),
            other => prefixed(&other.to_string()),
        };
        if text.ends_with('\n') {
            text
        } else {
            format!("{text}\n")
        }
    }
}

/// `msg` after `error: `, unless its first line is a diagnostic already (`error: …`, or
/// `file: error: …` / `file:line:col: error: …`).
fn prefixed(msg: &str) -> String {
    let first = msg.lines().next().unwrap_or("");
    if first.starts_with("error: ") || first.contains(": error: ") {
        msg.to_string()
    } else {
        format!("error: {msg}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_maps_to_its_exit_code_and_is_rendered_once() {
        let unreachable = || DockerError::Unreachable {
            endpoint: "unix:///x".into(),
            reason: "gone".into(),
        };
        let cases: Vec<(Error, i32, &str)> = vec![
            (
                Diagnostic::in_file("x.yaml", 1, 2, "bad")
                    .help("fix")
                    .into(),
                2,
                "x.yaml:1:2: error: bad\n  help: fix\n",
            ),
            (
                Diagnostic::general("--checks has an empty entry", "e.g. --checks a,b").into(),
                2,
                "error: --checks has an empty entry\n  help: e.g. --checks a,b\n",
            ),
            (
                Diagnostic::usage("run r has no results folder here").into(),
                2,
                "error: run r has no results folder here\n",
            ),
            (
                Error::Docker(unreachable()),
                3,
                "error: cannot reach the Docker engine at unix:///x",
            ),
            (
                RunError::Docker(unreachable()).into(),
                3,
                "error: cannot reach",
            ),
            (
                RunError::Interrupted.into(),
                130,
                "error: interrupted by the user\n",
            ),
            (
                RunError::NotReady {
                    node: "etcd-3".into(),
                    boot: 1,
                    timeout: "4s".into(),
                    why: String::new(),
                    last: "(no output)".into(),
                }
                .into(),
                3,
                "error: etcd-3 (boot 1) was not ready within 4s",
            ),
            (
                Error::Write {
                    path: "/r/summary.json".into(),
                    source: std::io::Error::other("disk full"),
                },
                3,
                "error: cannot write /r/summary.json: disk full",
            ),
            (
                Error::Channel("error: --k3s-versions: no network".into()),
                3,
                "error: --k3s-versions",
            ),
            (
                Error::Clean(vec!["a busy".into(), "b gone".into()]),
                3,
                "error: a busy\nerror: b gone\n",
            ),
            (anyhow::anyhow!("boom").into(), 3, "error: boom"),
            (Error::bad_input("no such run"), 2, "error: no such run\n"),
            (
                Error::bad_input("x.yaml: error: empty\n"),
                2,
                "x.yaml: error: empty\n",
            ),
        ];
        for (e, code, text) in cases {
            if matches!(e, Error::Usage(_)) {
                // A diagnostic is rendered whole: the text is all of it.
                assert_eq!(e.render(), text);
            }
            assert_eq!(e.exit().code(), code, "{e}");
            let r = e.render();
            assert!(r.starts_with(text), "{r:?} should start with {text:?}");
            assert!(r.ends_with('\n') && !r.ends_with("\n\n"), "{r:?}");
        }
    }
}
