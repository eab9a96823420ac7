//! Builds under test (#20): a binary the user hands over (`--k3s-binary PATH`, a local build) or
//! the CI build of a commit (`--k3s-commit SHA`, downloaded and verified by [`ci`] first). Here:
//! reading what the file says it is (the version of record), its sha256, and which release's
//! image it runs in. The runner copies it over the image's binary in every node.

pub(crate) mod ci;
pub(crate) mod commits;
pub(crate) mod fetch;
pub(crate) mod release;

use std::path::{Path, PathBuf};

use distro::reported::Reported;
use distro::{Distro, Version};

use crate::build_file::BuildFile;

use crate::result::{BuildInfo, BuildSource};

/// A build under test, read and hashed.
#[derive(Debug, Clone)]
pub(crate) struct Build {
    /// What result.json records.
    pub(crate) info: BuildInfo,
    /// The file copied into the nodes.
    pub(crate) host_path: PathBuf,
    /// What it says it is.
    pub(crate) reported: Reported,
}

/// `--k3s-binary`: an existing regular file (links followed). A folder, a FIFO or `/dev/zero`
/// is refused here (exit 2), before anything exists.
pub(crate) fn parse_binary_path(s: &str) -> Result<PathBuf, String> {
    let give = "a k3s or rke2 binary, e.g. dist/artifacts/k3s of a k3s checkout";
    crate::safe_fs::regular_file_arg(s, give)
}

pub(crate) use crate::build_file::parse_commit;

impl Build {
    /// Reads `path` (a regular file, at most 1 GiB): its sha256, and the version it carries —
    /// of `distro`, or (`None`: a local build) of whichever distribution it says it is.
    pub(crate) fn read(
        distro: Option<Distro>,
        path: &Path,
        source: BuildSource,
        commit: Option<(String, String)>,
    ) -> Result<Build, String> {
        let (distro, file) = match distro {
            Some(d) => (d, BuildFile::read(d, path)?),
            None => BuildFile::read_any(path)?,
        };
        let Some(installed_at) = distro.facts().binary_path else {
            return Err(format!(
                "builds under test are not supported for {distro} yet (its image's binary path is not known)"
            ));
        };
        let BuildFile {
            sha256,
            size,
            reported,
        } = file;
        let (commit, url) = match commit {
            Some((c, u)) => (Some(c), Some(u)),
            None => (None, None),
        };
        Ok(Build {
            info: BuildInfo {
                source,
                path: path.display().to_string(),
                commit,
                url,
                sha256,
                size,
                reported: reported.to_string(),
                installed_at: installed_at.to_string(),
            },
            host_path: path.to_path_buf(),
            reported,
        })
    }

    /// The release whose image the build runs in, and whose version the plan carries: the
    /// release or candidate it reports; for a commit build the newest listed release of its
    /// line up to its Kubernetes patch (the branch's last release), else that patch's `+k3s1`;
    /// `None` for a `dev` build (no line: `--image` must say).
    pub(crate) fn base_version(&self, releases: &[Version]) -> Option<Version> {
        match &self.reported {
            Reported::Release(v) => Some(v.clone()),
            Reported::Commit {
                distro,
                kubernetes: (major, minor, patch),
                ..
            } => {
                let listed = releases
                    .iter()
                    .filter(|r| {
                        r.distro == *distro
                            && r.line() == (*major, *minor)
                            && r.patch <= *patch
                            && r.pre.is_none()
                    })
                    .max()
                    .cloned();
                Some(listed.unwrap_or(Version {
                    major: *major,
                    minor: *minor,
                    patch: *patch,
                    pre: None,
                    distro: *distro,
                    build: 1,
                }))
            }
            Reported::Dev => None,
        }
    }
}

impl Build {
    /// The distribution whose binary this is.
    pub(crate) fn distro(&self) -> Distro {
        match &self.reported {
            Reported::Release(v) => v.distro,
            Reported::Commit { distro, .. } => *distro,
            Reported::Dev => Distro::K3s,
        }
    }

    /// The flag that named it, for messages.
    pub(crate) fn flag(&self) -> &'static str {
        match self.info.source {
            BuildSource::Binary => "--k3s-binary",
            BuildSource::Commit => "--k3s-commit",
        }
    }

    /// Tells the plan what `fixed-in` can say of the build: a release or candidate is placed
    /// as its version is (the plan is of that version already); a commit or dev build cannot
    /// be placed, so `--expect auto` asks for an explicit outcome.
    pub(crate) fn place(&self, plan: &mut crate::plan::Plan) {
        let what = match &self.reported {
            Reported::Release(_) => {
                plan.expected_because = format!(
                    "the binary reports {}: {}",
                    self.info.reported, plan.expected_because
                );
                return;
            }
            Reported::Commit { .. } => "a commit build",
            Reported::Dev => "a build without k3s's version flags",
        };
        plan.expected_verdict = None;
        plan.expected_because = format!(
            "the binary reports `{}`, {what}: `fixed-in` places releases and release candidates only (the build runs in {})",
            self.info.reported, plan.image
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build_file::sha256_hex;
    use distro::sim_stamp::SimStamp;

    #[test]
    fn commits_are_full_shas() {
        let full = "48a3b849aabbccddeeff00112233445566778899";
        assert_eq!(parse_commit(full), Ok(full.to_string()));
        assert_eq!(
            parse_commit(&full.to_ascii_uppercase()),
            Ok(full.to_string())
        );
        let e = parse_commit("48a3b849").unwrap_err();
        assert!(e.contains("short commit (8 hex digits)"), "{e}");
        assert!(e.contains("git rev-parse 48a3b849"), "{e}");
        for bad in ["", "v1.33.5+k3s1", &format!("{full}0"), "zz3b849"] {
            assert!(parse_commit(bad).is_err(), "{bad}");
        }
    }

    fn read_bytes(bytes: &[u8]) -> Result<Build, String> {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("k3s");
        std::fs::write(&p, bytes).expect("write");
        Build::read(Some(Distro::K3s), &p, BuildSource::Binary, None)
    }

    #[test]
    fn the_version_comes_from_the_file() {
        // The linker keeps the -X string verbatim among other data.
        let b = read_bytes(b"\x7fELF\0\0go1.24.6\0v1.33.5-k3s1\0v1.32.9-rc1+k3s1\0k3s\0").unwrap();
        assert_eq!(b.info.reported, "v1.32.9-rc1+k3s1");
        assert_eq!(b.info.installed_at, "/bin/k3s");
        assert_eq!(b.info.size, 49);
        let commit = read_bytes(b"\0v1.30.6+k3s-48a3b849\0").unwrap();
        assert_eq!(commit.info.reported, "v1.30.6+k3s-48a3b849");
        let releases: Vec<Version> = [
            "v1.30.4+k3s1",
            "v1.30.5+k3s1",
            "v1.30.7+k3s1",
            "v1.31.1+k3s1",
        ]
        .iter()
        .map(|v| v.parse().unwrap())
        .collect();
        assert_eq!(
            commit.base_version(&releases).unwrap().to_string(),
            "v1.30.5+k3s1"
        );
        assert_eq!(
            commit.base_version(&[]).unwrap().to_string(),
            "v1.30.6+k3s1"
        );
        // A stand-in's stamp wins over the versions its embedded tables name.
        let mut sim = b"v1.31.12+k3s1 v1.34.1+k3s1".to_vec();
        sim.extend(
            SimStamp {
                version: "v1.33.5+k3s1".into(),
                bootstrap_fix: true,
            }
            .to_bytes(),
        );
        assert_eq!(read_bytes(&sim).unwrap().info.reported, "v1.33.5+k3s1");
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn a_file_without_one_version_is_refused_with_the_why() {
        let e = read_bytes(b"\x7fELF plain").unwrap_err();
        assert!(e.contains("no k3s version in this file"), "{e}");
        let e = read_bytes(b"v1.33.4+k3s1 v1.33.5+k3s1").unwrap_err();
        assert!(e.contains("v1.33.4+k3s1, v1.33.5+k3s1"), "{e}");
    }

    fn read_local(bytes: &[u8]) -> Result<Build, String> {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("build");
        std::fs::write(&p, bytes).expect("write");
        Build::read(None, &p, BuildSource::Binary, None)
    }

    /// `--k3s-binary` takes either distribution's build: the version it carries says which,
    /// and so where it is copied (rke2's install prefix for an RKE2 build).
    #[test]
    fn a_local_build_says_its_distribution() {
        let rke2 = read_local(b"\0go1.24.6\0v1.33.5-rc1+rke2r1\0rke2\0").unwrap();
        assert_eq!(rke2.distro(), Distro::Rke2);
        assert_eq!(rke2.info.reported, "v1.33.5-rc1+rke2r1");
        assert_eq!(rke2.info.installed_at, "/usr/local/bin/rke2");
        let k3s = read_local(b"\0v1.33.5+k3s1\0").unwrap();
        assert_eq!(
            (k3s.distro(), k3s.info.installed_at.as_str()),
            (Distro::K3s, "/bin/k3s")
        );
        let mut stamped = b"v1.33.5+k3s1".to_vec();
        stamped.extend(
            SimStamp {
                version: "v1.32.9+rke2r1".into(),
                bootstrap_fix: true,
            }
            .to_bytes(),
        );
        assert_eq!(read_local(&stamped).unwrap().distro(), Distro::Rke2);
        let e = read_local(b"\0v1.33.5+k3s1\0v1.33.5+rke2r1\0").unwrap_err();
        assert!(
            e.contains("carries versions of k3s and rke2 at once"),
            "{e}"
        );
        // Neither: said as the usual build under test's (k3s's) error.
        let e = read_local(b"\x7fELF plain").unwrap_err();
        assert!(e.contains("no k3s version in this file"), "{e}");
    }
}
