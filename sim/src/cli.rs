//! Which `k3s` subcommand was asked for (`server`, `agent`, `kubectl`, …).
//!
//! Like k3s, the binary also answers as `kubectl` when called by that name,
//! so the image's `/bin/kubectl` symlink works.

use crate::version::version_env;

#[derive(Debug, PartialEq, Eq)]
pub enum Invocation {
    Server(Vec<String>),
    Agent(Vec<String>),
    Kubectl(Vec<String>),
    /// `rm [-f] [--] PATH…` (the k3s image has it; repro deletes files with it).
    Rm(Vec<String>),
    /// `cat PATH…` (k3s-root's busybox has it; repro's kubelet drop-in probe reads with it).
    Cat(Vec<String>),
    /// `cp -a FROM/. TO/`: repro's restore copies a kept baseline's volumes in a helper
    /// container of the node image, and the stand-in's image (FROM scratch) has no `cp`.
    Cp(Vec<String>),
    /// `sleep infinity`: blocks until SIGTERM/SIGINT and exits 0. repro's restore keeps a
    /// container on a kept baseline's network for the baseline's life (Podman tears an empty
    /// network's bridge down: docs/podman.md), and the stand-in's image has no `sleep`.
    Sleep(Vec<String>),
    /// `check-config`: a real output of k3s's kernel check (sim/src/check_config.rs).
    CheckConfig,
    Version,
    Help,
    Unknown(String),
}

pub fn parse_invocation(argv: &[String]) -> Invocation {
    let program = argv
        .first()
        .map(|a| a.rsplit('/').next().unwrap_or(a).to_string())
        .unwrap_or_default();
    let rest: Vec<String> = argv.iter().skip(1).cloned().collect();
    if program == "kubectl" {
        return Invocation::Kubectl(rest);
    }
    if program == "rm" {
        return Invocation::Rm(rest);
    }
    if program == "cat" {
        return Invocation::Cat(rest);
    }
    // Through the image's entrypoint (`/bin/k3s cp …`): real k3s has no `cp` command.
    if program == "cp" || rest.first().is_some_and(|a| a == "cp") {
        let skip = usize::from(program != "cp");
        return Invocation::Cp(rest.into_iter().skip(skip).collect());
    }
    // As `cp`: through the image's entrypoint (`/bin/k3s sleep infinity`).
    if program == "sleep" || rest.first().is_some_and(|a| a == "sleep") {
        let skip = usize::from(program != "sleep");
        return Invocation::Sleep(rest.into_iter().skip(skip).collect());
    }
    // Global flags k3s accepts before the subcommand.
    let mut i = 0;
    while rest
        .get(i)
        .is_some_and(|a| a == "--debug" || a.starts_with("--debug="))
    {
        i += 1;
    }
    let tail = |from: usize| rest.iter().skip(from).cloned().collect::<Vec<_>>();
    match rest.get(i).map(String::as_str) {
        None | Some("--help" | "-h" | "help") => Invocation::Help,
        Some("--version" | "-v" | "version") => Invocation::Version,
        Some("server") => Invocation::Server(tail(i + 1)),
        Some("agent") => Invocation::Agent(tail(i + 1)),
        Some("kubectl") => Invocation::Kubectl(tail(i + 1)),
        Some("check-config") => Invocation::CheckConfig,
        Some(other) => Invocation::Unknown(other.to_string()),
    }
}

fn version_text() -> String {
    crate::version::imitated()
        .and_then(|v| crate::version::parse(&v).ok())
        .map(|v| v.to_string())
        .unwrap_or_else(|| format!("(unset: {})", version_env()))
}

/// `k3s --version`, marked as the stand-in in both lines.
pub fn print_version() {
    // `rke2 -v` / `k3s -v`: the program's name, the version and its commit (root.go).
    println!(
        "{} version {} ({})",
        crate::distro::facts().binary,
        version_text(),
        crate::distro::commit()
    );
    println!("go version none (repro k3s stand-in, NOT k3s)");
}

pub fn print_help() {
    println!(
        "NAME:\n   k3s - repro's k3s stand-in (NOT k3s: a test double for repro's end-to-end tests)\n\n\
USAGE:\n   k3s server [flags]      behave like a k3s server (see sim/README.md)\n   \
k3s kubectl get --raw PATH [--server URL] [--kubeconfig FILE]\n   \
k3s agent [flags]       behave like a k3s agent (see sim/README.md)\n   \
k3s check-config        print a real k3s check-config output (REPRO_SIM_CHECK_CONFIG=pass|fail)\n   k3s --version\n\n\
Imitated k3s version: {} (from {}){}",
        version_text(),
        match crate::version::own_stamp() {
            Some(_) => "this binary's stamp".to_string(),
            None => version_env().to_string(),
        },
        match crate::version::own_stamp() {
            Some(s) => format!(
                "\nStamped: etcd-only bootstrap fix {}",
                if s.bootstrap_fix { "present (fixed)" } else { "absent (buggy)" }
            ),
            None => String::new(),
        }
    );
}

/// A minimal `rm`: `-f` ignores missing files, `--` ends options; directories are refused
/// (nothing repro does removes one). Returns the exit status.
/// `cat PATH…`: each file's bytes to stdout; busybox's message and status 1 for one it
/// cannot read.
pub fn run_cat(args: &[String]) -> i32 {
    use std::io::Write;
    let mut code = 0;
    let mut out = std::io::stdout().lock();
    for p in args {
        match std::fs::read(p) {
            Ok(bytes) => {
                let _ = out.write_all(&bytes);
            }
            Err(e) => {
                eprintln!("cat: can't open '{p}': {e}");
                code = 1;
            }
        }
    }
    code
}

/// `cp -a FROM TO`: the tree under FROM (`dir/.`: its contents) into the folder TO, with
/// modes, owners and symlinks kept (what repro's restore asks; nothing else is known).
pub fn run_cp(args: &[String]) -> i32 {
    let (from, to) = match args {
        [a, from, to] if a == "-a" => (from, to),
        _ => {
            eprintln!("cp: the k3s stand-in's cp knows only `cp -a FROM/. TO/`");
            return 1;
        }
    };
    let from = std::path::Path::new(from.trim_end_matches("/."));
    match copy_tree(from, std::path::Path::new(to)) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("cp: {e}");
            1
        }
    }
}

/// `sleep infinity`: waits for SIGTERM or SIGINT (the caller installs the handler that exits
/// 0), never on its own; anything else is refused (nothing else is asked of it).
pub fn run_sleep(args: &[String]) -> i32 {
    if !matches!(args, [a] if a == "infinity") {
        eprintln!("sleep: the k3s stand-in's sleep knows only `sleep infinity`");
        return 1;
    }
    loop {
        std::thread::park();
    }
}

/// Copies the entries of `from` into the existing folder `to`, recursively.
fn copy_tree(from: &std::path::Path, to: &std::path::Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let entries = std::fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", from.display()))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let fail = |e: std::io::Error| format!("{} -> {}: {e}", src.display(), dst.display());
        let meta = std::fs::symlink_metadata(&src).map_err(fail)?;
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&src).map_err(fail)?;
            std::os::unix::fs::symlink(target, &dst).map_err(fail)?;
        } else if meta.is_dir() {
            if !dst.is_dir() {
                std::fs::create_dir(&dst).map_err(fail)?;
            }
            copy_tree(&src, &dst)?;
            std::fs::set_permissions(&dst, meta.permissions()).map_err(fail)?;
        } else if meta.is_file() {
            std::fs::copy(&src, &dst).map_err(fail)?;
        } else {
            // Sockets and fifos live under /run, never in a kept volume.
            continue;
        }
        // Owners only as root (a test run as a user copies what it may).
        let _ = std::os::unix::fs::lchown(&dst, Some(meta.uid()), Some(meta.gid()));
    }
    Ok(())
}

pub fn run_rm(args: &[String]) -> i32 {
    let mut force = false;
    let mut paths = Vec::new();
    let mut options = true;
    for a in args {
        match a.as_str() {
            "--" if options => options = false,
            "-f" if options => force = true,
            s if options && s.starts_with('-') && s.len() > 1 => {
                eprintln!("rm: unrecognized option '{s}' (the k3s stand-in's rm knows -f)");
                return 1;
            }
            s => paths.push(s.to_string()),
        }
    }
    if paths.is_empty() {
        eprintln!("rm: missing operand");
        return 1;
    }
    let mut code = 0;
    for p in &paths {
        match std::fs::remove_file(p) {
            Ok(()) => {}
            Err(e) if force && e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                eprintln!("rm: cannot remove '{p}': {e}");
                code = 1;
            }
        }
    }
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cp_copies_a_tree_with_modes_and_links() {
        use std::os::unix::fs::PermissionsExt;
        let base = std::env::temp_dir().join(format!("sim-cp-{}", std::process::id()));
        let (from, to) = (base.join("from"), base.join("to"));
        std::fs::create_dir_all(from.join("db/member")).unwrap();
        std::fs::create_dir_all(&to).unwrap();
        std::fs::write(from.join("db/member/wal"), "w").unwrap();
        std::fs::set_permissions(from.join("db"), std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::symlink("db/member/wal", from.join("link")).unwrap();
        let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let args = argv(&["/bin/k3s", "cp", "-a", "x/.", "y/"]);
        assert!(
            matches!(parse_invocation(&args), Invocation::Cp(a) if a == argv(&["-a", "x/.", "y/"]))
        );
        let f = format!("{}/.", from.display());
        assert_eq!(run_cp(&argv(&["-a", &f, &to.display().to_string()])), 0);
        assert_eq!(
            std::fs::read_to_string(to.join("db/member/wal")).unwrap(),
            "w"
        );
        let mode = std::fs::metadata(to.join("db"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        assert_eq!(
            std::fs::read_link(to.join("link")).unwrap(),
            std::path::PathBuf::from("db/member/wal")
        );
        assert_eq!(run_cp(&argv(&["-r", "a", "b"])), 1);
        std::fs::remove_dir_all(&base).unwrap();
    }

    fn argv(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn dispatches_subcommands() {
        assert_eq!(
            parse_invocation(&argv(&["/bin/k3s", "server", "--cluster-init"])),
            Invocation::Server(argv(&["--cluster-init"]))
        );
        assert_eq!(
            parse_invocation(&argv(&["k3s", "--debug", "server"])),
            Invocation::Server(vec![])
        );
        assert_eq!(
            parse_invocation(&argv(&["/bin/kubectl", "get", "--raw", "/metrics"])),
            Invocation::Kubectl(argv(&["get", "--raw", "/metrics"]))
        );
        assert_eq!(
            parse_invocation(&argv(&["k3s", "kubectl", "get"])),
            Invocation::Kubectl(argv(&["get"]))
        );
        assert_eq!(
            parse_invocation(&argv(&["k3s", "--version"])),
            Invocation::Version
        );
        assert_eq!(parse_invocation(&argv(&["k3s"])), Invocation::Help);
        assert_eq!(
            parse_invocation(&argv(&["k3s", "agent", "-s", "x"])),
            Invocation::Agent(argv(&["-s", "x"]))
        );
        assert_eq!(
            parse_invocation(&argv(&["/bin/k3s", "sleep", "infinity"])),
            Invocation::Sleep(argv(&["infinity"]))
        );
        assert_eq!(
            parse_invocation(&argv(&["sleep", "infinity"])),
            Invocation::Sleep(argv(&["infinity"]))
        );
        assert_eq!(run_sleep(&argv(&["5"])), 1);
        assert_eq!(
            parse_invocation(&argv(&["k3s", "etcd-snapshot"])),
            Invocation::Unknown("etcd-snapshot".into())
        );
    }

    #[test]
    fn rm_is_a_multi_call_name_and_removes_files() {
        let argv = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(matches!(
            parse_invocation(&argv(&["/bin/rm", "-f", "x"])),
            Invocation::Rm(_)
        ));
        let dir = std::env::temp_dir().join(format!("sim-rm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("drop-in.yaml");
        std::fs::write(&f, "a: 1\n").unwrap();
        let path = f.display().to_string();
        assert_eq!(run_rm(&argv(&["-f", "--", &path])), 0);
        assert!(!f.exists());
        assert_eq!(
            run_rm(&argv(&["-f", &path])),
            0,
            "-f ignores a missing file"
        );
        assert_eq!(
            run_rm(&argv(&[&path])),
            1,
            "without -f a missing file is an error"
        );
        assert_eq!(
            run_rm(&argv(&["-rf", &path])),
            1,
            "unknown options are refused"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
