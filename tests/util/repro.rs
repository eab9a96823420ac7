//! The one builder every test runs the real `repro` binary with, in the spirit of ripgrep's
//! `tests/util.rs`: build a command, run it, then assert on its exit code and output.
//!
//! It runs [`crate::util::repro`] (the crate root, a clean environment), so repro finds the
//! shipped `checks/` and `topologies/` there and prints relative paths: snapshots never hold a
//! machine's paths. A run into a results folder (`repro run` on the stand-in, its result.json
//! read back) builds on it in `runs.rs`.

use std::ffi::OsStr;
use std::fmt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

pub struct Repro {
    cmd: Command,
    shown: Vec<String>,
    redactions: Vec<(String, String)>,
}

impl Repro {
    pub fn new() -> Repro {
        let mut cmd = crate::util::repro();
        // Snapshots and messages hold plain text whatever the terminal.
        cmd.env("NO_COLOR", "1");
        Repro {
            cmd,
            shown: vec!["repro".into()],
            redactions: Vec::new(),
        }
    }

    /// A repro that must not touch Docker: any attempt would fail against this endpoint.
    #[allow(dead_code)] // not every test binary has a command that must stay off the engine
    pub fn without_docker() -> Repro {
        Repro::new().env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    }

    pub fn arg(mut self, a: impl AsRef<OsStr>) -> Repro {
        self.shown.push(a.as_ref().to_string_lossy().into_owned());
        self.cmd.arg(a.as_ref());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Repro
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        for a in args {
            self = self.arg(a);
        }
        self
    }

    pub fn env(mut self, key: &str, value: impl AsRef<OsStr>) -> Repro {
        self.cmd.env(key, value);
        self
    }

    #[allow(dead_code)] // the e2e binary runs repro where it is
    pub fn current_dir(mut self, dir: &Path) -> Repro {
        self.cmd.current_dir(dir);
        self
    }

    /// Replaces `text` by `with` in the output (e.g. a temporary folder by `[ROOT]`).
    #[allow(dead_code)] // only snapshots hide paths
    pub fn redact(mut self, text: impl Into<String>, with: impl Into<String>) -> Repro {
        self.redactions.push((text.into(), with.into()));
        self
    }

    /// Starts repro with both output streams piped, for a test that reads or interrupts it
    /// while it runs; [`Output::of`] reads what it printed once it ended.
    #[allow(dead_code)] // the suite runs repro to its end
    pub fn spawn(mut self) -> Child {
        self.cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.shown.join(" ")))
    }

    pub fn run(mut self) -> Output {
        let out = self
            .cmd
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.shown.join(" ")));
        let redact = |s: String| {
            self.redactions
                .iter()
                .fold(s, |s, (from, to)| s.replace(from.as_str(), to))
        };
        Output {
            command: redact(self.shown.join(" ")),
            code: out.status.code().unwrap_or(-1),
            stdout: redact(String::from_utf8_lossy(&out.stdout).into_owned()),
            stderr: redact(String::from_utf8_lossy(&out.stderr).into_owned()),
        }
    }
}

#[derive(Debug)]
pub struct Output {
    /// The command line as a user would type it (redacted).
    pub command: String,
    /// The exit code; -1 when a signal ended repro.
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// What a spawned repro printed, once it ended.
    #[allow(dead_code)] // the suite runs repro to its end
    pub fn of(command: &str, out: std::process::Output) -> Output {
        Output {
            command: command.to_string(),
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Fails with the whole output when the exit code differs; never lets a panic pass.
    pub fn code(&self, want: i32) -> &Output {
        assert!(
            !self.stderr.contains("panicked") && !self.stdout.contains("panicked"),
            "`{}` panicked:\n{}",
            self.command,
            self.stderr
        );
        assert_eq!(self.code, want, "{self}");
        self
    }

    /// Fails with the whole output unless stdout holds `text`.
    #[allow(dead_code)] // not every test binary reads stdout
    pub fn stdout_has(&self, text: &str) -> &Output {
        assert!(self.stdout.contains(text), "stdout lacks {text:?}:\n{self}");
        self
    }

    /// Fails with the whole output unless stderr holds `text`.
    pub fn stderr_has(&self, text: &str) -> &Output {
        assert!(self.stderr.contains(text), "stderr lacks {text:?}:\n{self}");
        self
    }

    /// stdout as the one JSON document a script reads.
    #[allow(dead_code)] // not every test binary reads JSON from stdout
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}):\n{self}"))
    }
}

/// The command, its exit code and both streams, for assertion messages.
impl fmt::Display for Output {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` exited {}\n--- stdout\n{}\n--- stderr\n{}",
            self.command, self.code, self.stdout, self.stderr
        )
    }
}
