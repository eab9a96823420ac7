//! A `repro` process watched as it runs: its stderr read line by line as it comes, so a test
//! acts at the moment a progress line marks (an event, never a sleep) — the faults suite's
//! signals and the end-to-end tests' faults (a node stopped, a journal broken, a network held).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

/// One `repro` process whose stderr is read line by line as it comes.
pub struct Running {
    pub child: Child,
    lines: mpsc::Receiver<String>,
    pub seen: Vec<String>,
    pub run_id: Option<String>,
}

impl Running {
    pub fn spawn(mut cmd: Command) -> Running {
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let err = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(err).lines() {
                let Ok(l) = l else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Running {
            child,
            lines: rx,
            seen: Vec::new(),
            run_id: None,
        }
    }

    /// Reads stderr until the `n`-th line containing `needle` (true) or the end (false).
    #[allow(dead_code)] // the faults suite's
    pub fn wait_nth(&mut self, needle: &str, n: usize) -> bool {
        (0..n).all(|_| self.wait_line(needle))
    }

    /// Reads stderr until a line contains `needle` (true) or the process ends (false).
    pub fn wait_line(&mut self, needle: &str) -> bool {
        while let Ok(l) = self.lines.recv() {
            if self.run_id.is_none() {
                // The first progress line: `… run 50a8b14b: etcd-split on …`.
                if let Some(rest) = l.split(" run ").nth(1) {
                    if let Some((id, _)) = rest.split_once(':') {
                        self.run_id = Some(id.trim().to_string());
                    }
                }
            }
            let hit = l.contains(needle);
            self.seen.push(l);
            if hit {
                return true;
            }
        }
        false
    }

    #[allow(dead_code)] // the faults suite's
    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .args([&format!("-{sig}"), &self.child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -{sig}");
    }

    /// Waits for the exit; returns the code and all of stderr.
    pub fn finish(mut self) -> (Option<i32>, String) {
        while let Ok(l) = self.lines.recv() {
            self.seen.push(l);
        }
        let status = self.child.wait().unwrap();
        (status.code(), self.seen.join("\n"))
    }
}
