//! The results folder: the name of every file repro writes into one, and how they are created.
//!
//! One place, so the runner that writes a folder, the reports rendered from it, `matrix`,
//! `merge` and `bisect` that gather folders, and `inspect` that reads one back all agree. Every
//! file is created readable by its owner only (0600, folders 0700): results may hold what a
//! redaction rule does not know, and CI uploads the folder.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context;

/// A run's record (`crate::result`).
pub(crate) const RESULT_FILE: &str = "result.json";
pub(crate) const JUNIT_FILE: &str = "junit.xml";
pub(crate) const REPORT_FILE: &str = "report.md";
pub(crate) const TIMELINE_FILE: &str = "timeline.html";
pub(crate) const BUNDLE_FILE: &str = "bundle.tar.gz";
/// A matrix's (or a merge's) summary of its cells (`crate::matrix::Summary`).
pub(crate) const SUMMARY_FILE: &str = "summary.json";
/// A bisection's record.
pub(crate) const BISECT_FILE: &str = "bisect.json";
/// Per-node files (logs, configs, inspect) live under this folder of a results folder.
pub(crate) const NODES_DIR: &str = "nodes";
/// Each node's container as Docker saw it at the end, in its node folder.
pub(crate) const INSPECT_FILE: &str = "inspect.json";

/// `nodes/<node>` inside `dir`.
pub(crate) fn node_dir(dir: &Path, node: &str) -> PathBuf {
    dir.join(NODES_DIR).join(node)
}

/// A boot's log, relative to the results folder (as result.json records it).
pub(crate) fn boot_log(node: &str, boot: u32) -> String {
    format!("{NODES_DIR}/{node}/{}", boot_log_name(boot))
}

/// A boot's log file name inside its node folder.
pub(crate) fn boot_log_name(boot: u32) -> String {
    format!("boot-{boot}.log")
}

/// A node's config as of a step (0: before the first start), relative to the results folder.
pub(crate) fn config_step(node: &str, step: usize) -> String {
    format!("{NODES_DIR}/{node}/{}", config_step_name(step))
}

/// A node's config file name for a step, inside its node folder.
pub(crate) fn config_step_name(step: usize) -> String {
    format!("config-step-{step}.yaml")
}

/// Writes through a temporary file and a rename, so a reader (or a crash) never sees half a file.
pub(crate) fn write_atomic(path: &Path, data: &[u8]) -> anyhow::Result<()> {
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    crate::safe_fs::private_dir(parent)
        .with_context(|| format!("failed to create {}", parent.display()))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Created new (never through a link planted under its name, never a stale file with an
    // old mode), then renamed over `path`, which replaces a link there instead of following it.
    let (tmp, mut f) = crate::safe_fs::create_temp(parent, &name)?;
    if let Err(e) = std::io::Write::write_all(&mut f, data) {
        let _ = fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("failed to write {}", tmp.display()));
    }
    if let Err(e) = fs::rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("failed to write {}", path.display()));
    }
    Ok(())
}

/// Creates (or truncates) a file readable and writable by its owner only.
pub(crate) fn private_file(path: &Path) -> std::io::Result<fs::File> {
    let mut o = fs::OpenOptions::new();
    o.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    o.open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_inside_a_results_folder() {
        assert_eq!(boot_log("etcd-1", 2), "nodes/etcd-1/boot-2.log");
        assert_eq!(config_step("etcd-1", 0), "nodes/etcd-1/config-step-0.yaml");
        assert_eq!(
            node_dir(Path::new("/r"), "a").join(INSPECT_FILE),
            Path::new("/r/nodes/a/inspect.json")
        );
    }
}
