//! Puts the git commit into `repro --version` (`REPRO_VERSION_LINE`), so a report or a bug
//! says exactly which repro made it. Outside a git checkout (a source tarball, `cargo install`
//! from a registry) it says so instead of failing; `REPRO_BUILD_COMMIT` overrides the commit
//! for packagers.
//!
//! It also writes the table of shipped scenario files (`$OUT_DIR/builtin.rs`: every
//! `checks/*.yaml` and `topologies/*.yaml`, embedded with `include_str!`), so an installed
//! repro carries every file the README calls shipped, never a hand-kept subset (#32).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// `$OUT_DIR/builtin.rs`: `&[(relative path, text)]` of every shipped scenario file, sorted.
fn builtin_table() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it");
    let mut rows = Vec::new();
    for dir in ["checks", "topologies"] {
        // A file added or removed changes the folder: the table is regenerated.
        println!("cargo:rerun-if-changed={dir}");
        let mut names: Vec<String> = std::fs::read_dir(std::path::Path::new(&manifest).join(dir))
            .expect("the shipped folders exist")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().to_string())
            .filter(|n| n.ends_with(".yaml"))
            .collect();
        names.sort();
        for n in names {
            rows.push(format!(
                "    (\"{dir}/{n}\", include_str!(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/{dir}/{n}\"))),\n"
            ));
        }
    }
    let out =
        std::path::Path::new(&std::env::var("OUT_DIR").expect("cargo sets it")).join("builtin.rs");
    std::fs::write(out, format!("&[\n{}]\n", rows.concat())).expect("OUT_DIR is writable");
}

fn main() {
    builtin_table();
    println!("cargo:rerun-if-env-changed=REPRO_BUILD_COMMIT");
    println!("cargo:rerun-if-env-changed=GIT_DIR");
    let commit = std::env::var("REPRO_BUILD_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]));
    // Rebuild when HEAD moves (a commit, a checkout): HEAD itself, the branch it points at, and
    // packed refs. Paths come from git, so worktrees work too.
    // Only files that exist are watched: cargo treats a watched path that is missing (a checkout
    // without packed refs, a branch whose ref lives only in packed-refs) as always changed, and
    // would rebuild repro on every `cargo build`.
    let watch = |path: String| {
        if std::path::Path::new(&path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    };
    for path in ["HEAD", "packed-refs"] {
        if let Some(p) = git(&["rev-parse", "--git-path", path]) {
            watch(p);
        }
    }
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        if let Some(p) = git(&["rev-parse", "--git-path", &branch]) {
            watch(p);
        }
    }
    if commit.is_none() {
        // Not in git: nothing to watch but the override.
        println!("cargo:rerun-if-changed=build.rs");
    }
    let version = env!("CARGO_PKG_VERSION");
    let line = match commit {
        Some(c) => format!("{version} (commit {c})"),
        None => format!("{version} (commit unknown: not built from a git checkout)"),
    };
    println!("cargo:rustc-env=REPRO_VERSION_LINE={line}");
}
