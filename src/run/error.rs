//! Why a run stopped before its verdict. Every one of these is an exit 3 (infrastructure),
//! except an interrupt (130).

use crate::diag::Help;
use crate::docker::DockerError;
use crate::exit::Exit;
use crate::result::FailCause;
use std::path::PathBuf;

/// A write into the results folder that failed: the file it meant to write.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The results folder is gone, or another folder is in its place (a writer would otherwise
    /// make a new one, holding only the files written after: #30 found such a run exiting 0).
    #[error("the results folder {} was removed or replaced during the run: its record is incomplete", path.display())]
    Vanished { path: PathBuf },
    #[error("cannot serialise {}: {source}", path.display())]
    Serialise {
        path: PathBuf,
        source: serde_json::Error,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Docker(#[from] DockerError),
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error("cannot get image {image}: {reason}{}", Help(format!("this host cannot pull it. Ways out:\n    --sim                  run the built-in k3s stand-in for {} (offline)\n    --image-archive FILE   load a `docker save` tarball of the image first\n    --image NAME           use an image that is already in the local store{}", .version, .artifacts)))]
    ImageMissing {
        image: String,
        version: String,
        reason: String,
        /// One more way out where the node image is built from release artifacts
        /// ([`artifacts_way_out`]); empty elsewhere.
        artifacts: String,
    },
    /// A host check of `repro doctor` failed before any node was made: its line and fix.
    #[error("this host cannot run the nodes (repro doctor): {0}")]
    Host(String),
    #[error("cannot build the stand-in image {image}: {reason}")]
    SimImage { image: String, reason: String },
    /// The node image from release artifacts: named with its tarball (the stand-in's or a real
    /// release's), the build's own last words in `reason`.
    #[error("cannot build the node image {image} from {tarball}: {reason}")]
    NodeImage {
        image: String,
        tarball: String,
        reason: String,
    },
    #[error("{node} (boot {boot}) was not ready within {timeout}{why}; last lines: {last}")]
    NotReady {
        node: String,
        boot: u32,
        timeout: String,
        /// `: <what it waited for> (`<its line>`)`, when it logged a known waiting line.
        why: String,
        last: String,
    },
    #[error("failed to delete {path} on {node} (the image needs `rm`): {source}")]
    DeleteExec {
        path: String,
        node: String,
        source: DockerError,
    },
    #[error("failed to delete {path} on {node}: {output}")]
    Delete {
        path: String,
        node: String,
        output: String,
    },
    #[error("could not render the reports: {reason} (retry with `repro report {}`)", dir.display())]
    Reports {
        dir: std::path::PathBuf,
        reason: String,
    },
    /// A boot's log could no longer be read while its node went on running (the journal
    /// follow's exec kept failing): not a death, and nothing repro can judge.
    #[error("lost the log of {node} (boot {boot}) while the node was still running: {reason}{}", Help(format!("this is not a death of the node; nothing after it can be judged.{}", .hint)))]
    LogLost {
        node: String,
        boot: u32,
        reason: String,
        hint: &'static str,
    },
    #[error("cleanup could not finish: {problems}{}", Help(format!("objects of this run may be left; remove them with `repro clean --run {}`", .run_id)))]
    Cleanup { run_id: String, problems: String },
    /// The nodes' own `-v` is not the build under test's version: the image runs its binary
    /// from elsewhere than where the build was copied, so the run would test the wrong k3s.
    #[error("the build under test is not what {node} runs: `{command}` there says `{says}`, the build carries {reported} (copied to {path}){}", Help(format!("the image keeps its binary elsewhere; use an image whose binary is {} (rancher/k3s's is), or leave out --image", .path)))]
    BuildNotRun {
        node: String,
        command: String,
        says: String,
        reported: String,
        path: String,
    },
    /// The nodes' own `-v` is not the run's version of record: the image (or the artifacts)
    /// hold another release than the run would be recorded and judged as.
    #[error(transparent)]
    VersionNotRun(Box<VersionNotRun>),
    #[error("{node}: systemd: {what}: {output}")]
    Systemd {
        node: String,
        what: String,
        output: String,
    },
    #[error("internal error (a bug in repro): {0}")]
    Internal(String),
    #[error("interrupted by the user")]
    Interrupted,
}

/// What [`RunError::VersionNotRun`] says (boxed: five texts would make every `RunError` large).
#[derive(Debug, thiserror::Error)]
#[error("the nodes do not run the version of record: `{command}` on {node} says {says}, the run is of {of_record} (image {image}){}", Help(format!("name the version the image holds with --version, or use an image of {} (a local build: --k3s-binary)", .of_record)))]
pub struct VersionNotRun {
    pub(crate) node: String,
    pub(crate) command: String,
    pub(crate) says: String,
    pub(crate) of_record: String,
    pub(crate) image: String,
}

/// The `--artifacts DIR` line of [`RunError::ImageMissing`]'s ways out, for a distribution whose
/// node image is built from release artifacts (`Facts::node_base_image`); empty for one whose
/// nodes run a published image.
pub(crate) fn artifacts_way_out(facts: &distro::Facts) -> String {
    match (facts.node_base_image, &facts.release_artifacts) {
        (Some(_), Some(names)) => format!(
            "\n    --artifacts DIR        build the node image from {}'s release artifacts in DIR ({}, {})",
            facts.name, names.tarball, names.checksums
        ),
        _ => String::new(),
    }
}

/// The help a lost log's reason calls for: journalctl says "Too many open files" or names
/// inotify when the host's inotify instances are used up (each systemd node holds several).
pub(crate) fn lost_log_hint(reason: &str) -> &'static str {
    let r = reason.to_ascii_lowercase();
    if r.contains("inotify") || r.contains("too many open files") {
        " The host ran out of inotify instances (fs.inotify.max_user_instances): `repro doctor` \
         says how many a run needs and how many are free; run fewer at once or raise the limit \
         (`sudo sysctl fs.inotify.max_user_instances=1024`)."
    } else {
        ""
    }
}

impl RunError {
    /// Which [`FailCause`] this failure is.
    pub(crate) fn cause(&self) -> FailCause {
        match self {
            RunError::Docker(_) => FailCause::Engine,
            RunError::Record(_) => FailCause::Results,
            RunError::ImageMissing { .. }
            | RunError::SimImage { .. }
            | RunError::NodeImage { .. } => FailCause::Image,
            RunError::Host(_) | RunError::Systemd { .. } => FailCause::Host,
            RunError::BuildNotRun { .. } | RunError::VersionNotRun(_) => FailCause::WrongVersion,
            RunError::NotReady { .. } => FailCause::NotReady,
            RunError::LogLost { .. } => FailCause::LogLost,
            RunError::DeleteExec { .. }
            | RunError::Delete { .. }
            | RunError::Reports { .. }
            | RunError::Cleanup { .. } => FailCause::Cleanup,
            RunError::Internal(_) => FailCause::Internal,
            RunError::Interrupted => FailCause::Interrupted,
        }
    }

    /// What this failure means for the exit (the run layer's part of the one error → exit
    /// mapping, `crate::error::Error::exit`, which asks it): the run records it in result.json.
    pub(crate) fn exit(&self) -> Exit {
        match self {
            RunError::Interrupted => Exit::Interrupted,
            RunError::Docker(_)
            | RunError::Record(_)
            | RunError::ImageMissing { .. }
            | RunError::SimImage { .. }
            | RunError::NodeImage { .. }
            | RunError::Host(_)
            | RunError::Systemd { .. }
            | RunError::NotReady { .. }
            | RunError::DeleteExec { .. }
            | RunError::Delete { .. }
            | RunError::Reports { .. }
            | RunError::Cleanup { .. }
            | RunError::LogLost { .. }
            | RunError::BuildNotRun { .. }
            | RunError::VersionNotRun { .. }
            | RunError::Internal(_) => Exit::Infra,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_missing_names_artifacts_where_the_facts_build_from_them() {
        let err = |d: distro::Distro| {
            RunError::ImageMissing {
                image: "i".into(),
                version: "v".into(),
                reason: "r".into(),
                artifacts: artifacts_way_out(d.facts()),
            }
            .to_string()
        };
        let rke2 = err(distro::Distro::Rke2);
        assert!(
            rke2.ends_with("\n    --artifacts DIR        build the node image from rke2's release artifacts in DIR (rke2.linux-amd64.tar.gz, sha256sum-amd64.txt)"),
            "{rke2}"
        );
        let k3s = err(distro::Distro::K3s);
        assert!(!k3s.contains("--artifacts"), "{k3s}");
        assert!(k3s.ends_with("already in the local store"), "{k3s}");
    }
}
