//! What every test binary needs: the crate root, the real `repro` binary to run, a command's
//! output for a failure message, and temporary project folders.
//!
//! Each test binary declares the modules of this folder it uses (`#[path = "../util/…"]`), so
//! everything in a module it declares is used there: no helper is compiled where it is dead.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The crate root (where `checks/`, `topologies/` and `tests/` are).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The real `repro` binary, run in the crate root (so it finds the shipped `checks/` and
/// `topologies/` and prints relative paths), with none of the caller's environment that would
/// change what it reads, where it writes or what it logs. Every test runs repro through this.
pub fn repro() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_repro"));
    c.current_dir(root());
    for v in [
        "REPRO_ROOT",
        "REPRO_RESULTS",
        "REPRO_K3S_VERSION",
        "REPRO_CHANNEL_SERVER",
        "RUST_LOG",
        // A seed of the caller's would make every stand-in run pick its servers alike.
        "REPRO_SIM_SEED",
    ] {
        c.env_remove(v);
    }
    c
}

/// Both output streams, for assertion messages.
pub fn text(o: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A temporary project folder (for `--root`) with copies of `paths` from the crate root: files
/// (`checks/signals.yaml`) or folders with all they hold (`checks`). Tests edit or add files in it.
pub fn project(paths: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for p in paths {
        let (from, to) = (root().join(p), dir.path().join(p));
        if from.is_dir() {
            copy_dir(&from, &to);
        } else {
            std::fs::create_dir_all(to.parent().expect("a file in a folder"))
                .unwrap_or_else(|e| panic!("{}: {e}", to.display()));
            std::fs::copy(&from, &to).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
        }
    }
    dir
}

/// Copies the folder `from` to `to` (created), with everything under it.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("{}: {e}", to.display()));
    for e in std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display())) {
        let p = e
            .unwrap_or_else(|e| panic!("{}: {e}", from.display()))
            .path();
        let t = to.join(p.file_name().expect("an entry has a name"));
        if p.is_dir() {
            copy_dir(&p, &t);
        } else {
            std::fs::copy(&p, &t).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        }
    }
}

/// The stand-in images' repository: `$REPRO_SIM_REPOSITORY` (so checkouts sharing an engine keep
/// their own images) or repro's default.
#[allow(dead_code)] // the suite binary builds no images
pub fn sim_repo() -> String {
    std::env::var("REPRO_SIM_REPOSITORY")
        .ok()
        .filter(|r| !r.trim().is_empty())
        .unwrap_or_else(|| "repro.local/k3s-sim".to_string())
}
