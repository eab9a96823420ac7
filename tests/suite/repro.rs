//! A small fluent runner of the real `repro` binary, in the spirit of ripgrep's
//! `tests/util.rs`: build a command, run it, then assert on exit code and output.
//!
//! It runs [`crate::util::repro`] (the crate root, a clean environment), so repro finds the
//! shipped `checks/` and `topologies/` there and prints relative paths: snapshots never hold a
//! machine's paths.

use std::path::Path;
use std::process::Command;

pub struct Repro {
    cmd: Command,
    shown: Vec<String>,
    redactions: Vec<(String, String)>,
}

impl Repro {
    pub fn new() -> Repro {
        let mut cmd = crate::util::repro();
        // Snapshots hold plain text whatever the terminal.
        cmd.env("NO_COLOR", "1");
        Repro {
            cmd,
            shown: vec!["repro".into()],
            redactions: Vec::new(),
        }
    }

    pub fn arg(mut self, a: impl AsRef<str>) -> Repro {
        self.shown.push(a.as_ref().to_string());
        self.cmd.arg(a.as_ref());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Repro
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        for a in args {
            self = self.arg(a);
        }
        self
    }

    pub fn env(mut self, key: &str, value: impl AsRef<std::ffi::OsStr>) -> Repro {
        self.cmd.env(key, value);
        self
    }

    pub fn current_dir(mut self, dir: &Path) -> Repro {
        self.cmd.current_dir(dir);
        self
    }

    /// Replaces `text` by `with` in the output (e.g. a temporary folder by `[ROOT]`).
    pub fn redact(mut self, text: impl Into<String>, with: impl Into<String>) -> Repro {
        self.redactions.push((text.into(), with.into()));
        self
    }

    pub fn run(mut self) -> Output {
        let out = self
            .cmd
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.shown.join(" ")));
        let redact = |bytes: &[u8]| {
            let mut s = String::from_utf8_lossy(bytes).into_owned();
            for (from, to) in &self.redactions {
                s = s.replace(from.as_str(), to);
            }
            s
        };
        let mut command = self.shown.join(" ");
        for (from, to) in &self.redactions {
            command = command.replace(from.as_str(), to);
        }
        Output {
            command,
            code: out.status.code().unwrap_or(-1),
            stdout: redact(&out.stdout),
            stderr: redact(&out.stderr),
        }
    }
}

#[derive(Debug)]
pub struct Output {
    /// The command line as a user would type it (redacted).
    pub command: String,
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// Fails with the whole output when the exit code differs; never lets a panic pass.
    pub fn code(&self, want: i32) -> &Output {
        assert!(
            !self.stderr.contains("panicked") && !self.stdout.contains("panicked"),
            "`{}` panicked:\n{}",
            self.command,
            self.stderr
        );
        assert_eq!(
            self.code, want,
            "`{}` exited {} (want {want})\n--- stdout\n{}\n--- stderr\n{}",
            self.command, self.code, self.stdout, self.stderr
        );
        self
    }

    /// Exit code and both streams, as stored in a snapshot.
    pub fn snapshot(&self) -> String {
        let mut s = format!("exit: {}\n", self.code);
        if !self.stdout.is_empty() {
            s.push_str("--- stdout\n");
            s.push_str(&self.stdout);
        }
        if !self.stderr.is_empty() {
            s.push_str("--- stderr\n");
            s.push_str(&self.stderr);
        }
        s
    }
}

/// Snapshots an output under `name`, with the command line as the snapshot's description.
macro_rules! snap {
    ($name:expr, $out:expr) => {{
        let out = &$out;
        insta::with_settings!({ description => out.command.clone(), omit_expression => true }, {
            insta::assert_snapshot!($name, out.snapshot());
        });
    }};
}
