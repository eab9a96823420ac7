//! Images the Docker-backed tests make: the stand-in's (`repro sim build`) and images built
//! from them or tagged anew, each removed when dropped, also when the test fails.

use std::path::Path;
use std::process::Command;

use crate::repro::Repro;
use crate::util::{sim_repo, text};

/// The stand-in images of `versions` (`v1.33.4+k3s1,v1.33.5+k3s1`), in this checkout's
/// repository, built if missing.
pub fn sim_build(versions: &str) {
    crate::docker::docker_ok();
    Repro::new()
        .args(["sim", "build", "--version", versions])
        .run()
        .code(0);
}

/// The stand-in image of `version` (its tag is the version with `-` for `+`).
pub fn sim_image(version: &str) -> String {
    format!("{}:{}", sim_repo(), version.replace('+', "-"))
}

/// An image this test made, by name; `docker rmi -f` when dropped.
pub struct Image(pub String);

impl Image {
    /// Builds `name` from `dockerfile`, with `files` (name in the context, file to copy) beside
    /// it in the build context.
    pub fn build(name: String, dockerfile: &str, files: &[(&str, &Path)]) -> Image {
        let ctx = tempfile::tempdir().expect("temp dir");
        std::fs::write(ctx.path().join("Dockerfile"), dockerfile).expect("Dockerfile");
        for (to, from) in files {
            std::fs::copy(from, ctx.path().join(to))
                .unwrap_or_else(|e| panic!("{}: {e}", from.display()));
        }
        let image = Image(name);
        docker(&["build", "-q", "-t", &image.0, &ctx.path().to_string_lossy()]);
        image
    }

    /// The stand-in image of `version` with `lines` after its FROM line, as `name`.
    pub fn on_stand_in(name: String, version: &str, lines: &str) -> Image {
        sim_build(version);
        Image::build(
            name,
            &format!("FROM {}\n{lines}\n", sim_image(version)),
            &[],
        )
    }

    /// `from` under a second name.
    pub fn tagged(from: &str, name: String) -> Image {
        let image = Image(name);
        docker(&["tag", from, &image.0]);
        image
    }
}

impl Drop for Image {
    fn drop(&mut self) {
        let _ = Command::new("docker").args(["rmi", "-f", &self.0]).output();
    }
}

/// `docker <args>`, which must succeed.
pub fn docker(args: &[&str]) {
    let out = Command::new("docker")
        .args(args)
        .output()
        .expect("docker runs");
    assert!(out.status.success(), "docker {args:?}: {}", text(&out));
}
