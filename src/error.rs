//! The error a command ends with, and its exit code. `main` is the one place that prints it
//! and exits.

use std::path::PathBuf;

use crate::docker::DockerError;
use crate::exit;
use crate::run::RunError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input or usage, already worded for the user (diagnostics with file:line:col and
    /// `help:` lines): printed as it is. Nothing was created.
    #[error("{0}")]
    BadInput(String),
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
    /// Anything else that stopped a command (rendering reports, building images).
    #[error("{0:#}")]
    Other(#[from] anyhow::Error),
}

impl Error {
    pub fn bad_input(message: impl Into<String>) -> Error {
        Error::BadInput(message.into())
    }

    pub fn exit_code(&self) -> i32 {
        match self {
            Error::BadInput(_) => exit::BAD_INPUT,
            Error::Run(e) => e.exit_code(),
            Error::Docker(_) | Error::Write { .. } | Error::Channel(_) | Error::Other(_) => {
                exit::INFRA
            }
        }
    }

    /// The text for stderr: user-input diagnostics as they are, everything else after `repro: `.
    pub fn render(&self) -> String {
        let text = match self {
            Error::BadInput(msg) | Error::Channel(msg) => msg.clone(),
            other => format!("repro: {other}"),
        };
        if text.ends_with('\n') {
            text
        } else {
            format!("{text}\n")
        }
    }
}
