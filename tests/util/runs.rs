//! Runs of repro into a fresh results folder, as the Docker-backed tests make them:
//! `Run::check("etcd-split").sim().version("v1.33.4+k3s1").expect("reproduced").finish()` runs
//! the real binary, finds the one run folder it wrote, checks its result.json against the schema
//! and that the run left nothing in the engine. Every test of a run starts here, so a run is
//! spelled and checked one way.

use std::path::{Path, PathBuf};
use std::process::Child;

use serde_json::Value;

use crate::docker;
use crate::repro::{Output, Repro};

/// A repro command that writes into a fresh results folder (`--results`), built up before it
/// runs.
pub struct Run {
    repro: Repro,
    results: tempfile::TempDir,
    keep: bool,
}

impl Run {
    /// `repro run <check>` with plain progress lines.
    pub fn check(check: &str) -> Run {
        Run::command(["run", check, "--progress", "never"])
    }

    /// `repro <args>` (matrix, bisect, verify: anything that takes `--results`).
    pub fn command<I, S>(args: I) -> Run
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        Run {
            repro: Repro::new().args(args),
            results: tempfile::tempdir().expect("temp dir"),
            keep: false,
        }
    }

    /// On the stand-in (`--sim`).
    pub fn sim(self) -> Run {
        self.arg("--sim")
    }

    /// The distribution's version (`--version`).
    pub fn version(self, version: &str) -> Run {
        self.args(["--version", version])
    }

    /// The outcome asked for (`--expect`).
    pub fn expect(self, outcome: &str) -> Run {
        self.args(["--expect", outcome])
    }

    /// Checks and topologies from a project folder (`--root`).
    pub fn root(self, root: &Path) -> Run {
        self.arg("--root").arg(root)
    }

    /// Another topology than the check's (`--topology`).
    pub fn topology(self, topology: &str) -> Run {
        self.args(["--topology", topology])
    }

    /// The cluster stays (`--keep`): nothing left is checked until [`Finished::clean`].
    pub fn keep(mut self) -> Run {
        self.keep = true;
        self.arg("--keep")
    }

    pub fn arg(mut self, a: impl AsRef<std::ffi::OsStr>) -> Run {
        self.repro = self.repro.arg(a);
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Run
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        self.repro = self.repro.args(args);
        self
    }

    pub fn env(mut self, key: &str, value: impl AsRef<std::ffi::OsStr>) -> Run {
        self.repro = self.repro.env(key, value);
        self
    }

    /// Where the results go: a folder that does not exist until repro makes it.
    fn with_results(self) -> (Repro, tempfile::TempDir) {
        let folder = self.results.path().join("results");
        (self.repro.arg("--results").arg(folder), self.results)
    }

    /// Runs it to its end; nothing about the results is checked.
    pub fn output(self) -> (Output, Results) {
        let (repro, tmp) = self.with_results();
        (repro.run(), Results(tmp))
    }

    /// Starts it with both streams piped (to read it or interrupt it while it runs).
    pub fn spawn(self) -> (Child, Results) {
        docker::docker_ok();
        let (repro, tmp) = self.with_results();
        (repro.spawn(), Results(tmp))
    }

    /// Runs it to its end: one run folder, its result.json as the schema says and, unless the
    /// cluster was kept, nothing left in the engine under its run id.
    pub fn finish(self) -> Finished {
        docker::docker_ok();
        let keep = self.keep;
        let (out, results) = self.output();
        results.read(out, keep)
    }
}

/// The results folder of a run, removed when dropped.
pub struct Results(tempfile::TempDir);

impl Results {
    /// The folder repro was told to write into (`--results`).
    pub fn path(&self) -> PathBuf {
        self.0.path().join("results")
    }

    /// The one folder a command wrote into the results folder.
    pub fn only_run_dir(&self) -> PathBuf {
        only_run_dir(&self.path())
    }

    /// Nothing was written: refused before anything was created.
    #[allow(dead_code)] // not every test binary has a refusal
    pub fn assert_untouched(&self, out: &Output) {
        assert!(
            !self.path().exists(),
            "a results folder was created:\n{out}"
        );
    }

    /// The run that printed `out` into this folder, checked as [`Run::finish`] checks it: for a
    /// test that does something between the end of the run and the checks.
    #[allow(dead_code)] // not every test binary has one
    pub fn finished(self, out: Output) -> Finished {
        self.read(out, false)
    }

    /// [`Results::finished`] for a kept run (`--keep`): its cluster is there until it is
    /// cleaned.
    #[allow(dead_code)] // not every test binary has one
    pub fn kept(self, out: Output) -> Finished {
        self.read(out, true)
    }

    fn read(self, out: Output, keep: bool) -> Finished {
        let found = match self.path().is_dir() {
            true => dirs(&self.path(), ""),
            false => Vec::new(),
        };
        assert_eq!(found.len(), 1, "one run folder expected: {found:?}\n{out}");
        let dir = found[0].clone();
        let result = read_result(&dir);
        if !keep {
            assert_no_leftovers(run_id(&result));
        }
        Finished {
            out,
            result,
            dir,
            _results: self,
        }
    }
}

/// A run that ended: what it printed, its result.json, its folder.
pub struct Finished {
    pub out: Output,
    pub result: Value,
    pub dir: PathBuf,
    /// The results folder around `dir`, removed when the run is dropped.
    _results: Results,
}

impl Finished {
    /// The verdict's outcome (`reproduced`, `fixed`, `inconclusive`), null without a verdict.
    pub fn outcome(&self) -> &Value {
        &self.result["verdict"]["outcome"]
    }

    /// What `node` showed of `signal` in step `step` (from 1).
    pub fn observed(&self, step: usize, node: &str, signal: &str) -> &Value {
        &observation(&self.result, step, node, signal)["observed"]
    }

    /// The text of a file of the run folder (`nodes/etcd-2/boot-1.log`).
    pub fn file(&self, path: &str) -> String {
        let p = self.dir.join(path);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    /// The log of `node`'s boot `n`.
    pub fn boot_log(&self, node: &str, n: u64) -> String {
        self.file(&format!("nodes/{node}/boot-{n}.log"))
    }

    /// The run's id.
    #[allow(dead_code)] // only tests of kept runs need it
    pub fn run_id(&self) -> String {
        run_id(&self.result).to_string()
    }

    /// Removes a kept run (`repro clean --run <id>`): it must succeed and leave nothing.
    #[allow(dead_code)] // only tests of kept runs need it
    pub fn clean(&self) {
        clean(run_id(&self.result));
    }
}

/// A kept run's cluster (`--keep`): removed when dropped, so a test that fails half-way leaves
/// nothing; a test that gets to its end calls [`KeptCluster::done`], which asserts the removal
/// (a removal whose result is ignored once left two whole clusters for the suite's leftovers
/// check to find, naming no test).
#[allow(dead_code)] // only tests of kept runs need it
pub struct KeptCluster(Option<String>);

#[allow(dead_code)] // only tests of kept runs need it
impl KeptCluster {
    pub fn of(run_id: &str) -> KeptCluster {
        KeptCluster(Some(run_id.to_string()))
    }

    /// [`clean`]: `repro clean --run` succeeded and nothing of the run is left.
    pub fn done(mut self) {
        if let Some(id) = self.0.take() {
            clean(&id);
        }
    }
}

impl Drop for KeptCluster {
    fn drop(&mut self) {
        if let Some(id) = &self.0 {
            let _ = Repro::new().args(["clean", "--run", id]).run();
        }
    }
}

/// `repro clean --run <id>`: it must succeed and leave nothing labelled with the run id.
pub fn clean(run_id: &str) {
    Repro::new().args(["clean", "--run", run_id]).run().code(0);
    assert_no_leftovers(run_id);
}

fn run_id(result: &Value) -> &str {
    result["run_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no run id: {result}"))
}

/// Nothing labelled with this run's id may outlive the run.
pub fn assert_no_leftovers(run_id: &str) {
    let left = docker::leftovers(run_id);
    assert!(
        left.is_empty(),
        "run {run_id} left docker objects: {left:?}"
    );
}

/// Reads `<dir>/result.json`, failing the test if it does not match the schema.
pub fn read_result(dir: &Path) -> Value {
    let path = dir.join("result.json");
    let v = read_json(&path);
    crate::schema::assert_valid("schema/result.schema.json", &v, &path.display().to_string());
    // `make test-podman` runs this binary against Podman: the run must have said so.
    if let Some(engine) = v["environment"]["engine"].as_str() {
        let expected = std::env::var("REPRO_TEST_ENGINE").unwrap_or_else(|_| "docker".into());
        assert_eq!(engine, expected, "{}", path.display());
    }
    v
}

/// A JSON file repro wrote.
pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The folders directly under `base` whose names start with `prefix`.
pub fn dirs(base: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(base)
        .unwrap_or_else(|e| panic!("{}: {e}", base.display()))
        .map(|e| e.expect("a folder entry").path())
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        })
        .collect();
    dirs.sort();
    dirs
}

/// The one folder under `base`.
pub fn only_run_dir(base: &Path) -> PathBuf {
    only_dir(base, "")
}

/// The one folder directly under `base` whose name starts with `prefix`.
pub fn only_dir(base: &Path, prefix: &str) -> PathBuf {
    let mut found = dirs(base, prefix);
    assert_eq!(
        found.len(),
        1,
        "one {prefix}* folder expected in {}: {found:?}",
        base.display()
    );
    found.remove(0)
}

/// The observation of `signal` on `node` in step `step` (from 1) of a result.json.
pub fn observation<'a>(r: &'a Value, step: usize, node: &str, signal: &str) -> &'a Value {
    r["steps"][step - 1]["observations"]
        .as_array()
        .unwrap_or_else(|| panic!("no step {step}: {r}"))
        .iter()
        .find(|o| o["node"] == node && o["signal"] == signal)
        .unwrap_or_else(|| panic!("no observation step {step} {node} {signal}"))
}

/// The record of `node`'s boot `number` in a result.json.
pub fn boot<'a>(r: &'a Value, node: &str, number: u64) -> &'a Value {
    r["boots"]
        .as_array()
        .unwrap_or_else(|| panic!("no boots: {r}"))
        .iter()
        .find(|b| b["node"] == node && b["boot"] == number)
        .unwrap_or_else(|| panic!("no boot {number} of {node}"))
}
