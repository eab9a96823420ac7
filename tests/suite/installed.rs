//! repro as a user installs it (#32): the built binary copied into a temporary folder and run
//! from an empty folder next to it, so no checkout file is reachable — every shipped check,
//! topology and signal must come from the binary, a user's `--root` lays over them, and every
//! README command that names a shipped file works there.

use std::path::PathBuf;
use std::process::Command;

use crate::util::root;

/// An installed repro and an empty folder to run it in.
struct Installed {
    _tmp: tempfile::TempDir,
    bin: PathBuf,
    work: PathBuf,
}

/// A command's exit code and both streams.
struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Installed {
    fn new() -> Installed {
        let tmp = tempfile::tempdir().expect("tmp");
        let bin = tmp.path().join("repro");
        // A hard link where it can be (no file open for writing that a process forked by another
        // test at that moment could inherit, making our exec fail with ETXTBSY); else a copy,
        // and `run` tries such an exec again.
        let built = env!("CARGO_BIN_EXE_repro");
        if std::fs::hard_link(built, &bin).is_err() {
            std::fs::copy(built, &bin).expect("install");
        }
        let work = tmp.path().join("empty");
        std::fs::create_dir(&work).expect("mkdir");
        Installed {
            _tmp: tmp,
            bin,
            work,
        }
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.bin);
        c.args(args).current_dir(&self.work);
        for v in [
            "REPRO_ROOT",
            "REPRO_K3S_VERSION",
            "REPRO_RESULTS",
            "RUST_LOG",
        ] {
            c.env_remove(v);
        }
        c
    }

    fn run(&self, args: &[&str]) -> Out {
        const ETXTBSY: i32 = 26;
        let mut tries = 0;
        let out = loop {
            match self.cmd(args).output() {
                Err(e) if e.raw_os_error() == Some(ETXTBSY) && tries < 20 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                result => break result.expect("runs"),
            }
        };
        Out {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).to_string(),
        }
    }

    /// Writes `text` at `path` under the empty folder (its folders made).
    fn write(&self, path: &str, text: &str) {
        let p = self.work.join(path);
        std::fs::create_dir_all(p.parent().expect("a folder")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }
}

/// The stems of a shipped folder's YAML files (signals.yaml left out).
fn shipped(dir: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root().join(dir))
        .expect("shipped folder")
        .map(|e| e.expect("entry").file_name().to_string_lossy().to_string())
        .filter_map(|n| n.strip_suffix(".yaml").map(str::to_string))
        .filter(|n| n != "signals")
        .collect();
    names.sort();
    names
}

/// An installed repro in an empty folder carries every shipped check and topology (#32: outside
/// a checkout it had 3 and 3 of 5 and 6), and `--topology FILE` runs a user's own cluster shape.
#[test]
fn an_installed_binary_in_an_empty_folder_has_every_shipped_file() {
    let i = Installed::new();
    let o = i.run(&["list", "--format", "json"]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).expect("json");
    let count = |k: &str| v[k].as_array().map(Vec::len);
    assert_eq!(
        count("checks"),
        Some(shipped("checks").len()),
        "{}",
        o.stdout
    );
    assert_eq!(
        count("topologies"),
        Some(shipped("topologies").len()),
        "{}",
        o.stdout
    );
    // A user's own topology by path: a copy of the shipped one under another name.
    let topo = std::fs::read_to_string(root().join("topologies/etcd-split.yaml"))
        .expect("shipped")
        .replacen("name: etcd-split", "name: my-etcd", 1);
    i.write("my-etcd.yaml", &topo);
    let o = i.run(&["plan", "etcd-split", "--topology", "./my-etcd.yaml"]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(o.stdout.contains("topology  my-etcd"), "{}", o.stdout);
    // A missing name says where names come from, and --root.
    let o = i.run(&["plan", "etcd-split", "--topology", "nope"]);
    assert_eq!(o.code, Some(2));
    assert!(
        o.stderr.contains(
            "(or the path of a topology file); names come from the files built into repro"
        ) && o.stderr.contains("--root DIR"),
        "{}",
        o.stderr
    );
}

/// A check of one's own, in a `--root` holding nothing else, that runs on a built-in topology
/// and reads a signal of its own next to the built-in ones.
const MY_CHECK: &str = "\
name: my-check
topology: etcd-split
summary: a check of one's own on a built-in topology
issue: https://github.com/k3s-io/k3s/issues/12753
steps:
  - name: restart etcd-2
    restart: [etcd-2]
    expect:
      etcd-2: {ready: up, my-signal: up}
";

const MY_SIGNALS: &str = "\
signals:
  my-signal:
    description: a signal of one's own
    up: ['Starting etcd']
";

/// `--root` lays over the built-in files (#32): a user's folder with one check of its own
/// (using a built-in topology and signal, and a signal of its own) is planned with every
/// built-in check still there, `repro list` says which came from where, and a signal of the
/// folder with a built-in name takes the built-in one's place.
#[test]
fn a_root_lays_over_the_built_in_files() {
    let i = Installed::new();
    i.write("mine/checks/my-check.yaml", MY_CHECK);
    i.write("mine/checks/signals.yaml", MY_SIGNALS);
    let o = i.run(&["--root", "mine", "plan", "my-check"]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(o.stdout.contains("my-signal"), "{}", o.stdout);
    // The built-in checks are still there, through the same --root.
    let o = i.run(&["--root", "mine", "plan", "etcd-split"]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);

    let o = i.run(&["--root", "mine", "list"]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(
        o.stdout
            .contains("Checks (yours from mine/checks, over the ones built into repro):"),
        "{}",
        o.stdout
    );
    let row = |name: &str| {
        o.stdout
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no row for {name}:\n{}", o.stdout))
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(row("my-check"), "yours");
    assert_eq!(row("metrics-order"), "built-in");
    // Topologies all come from the binary: no FROM column there.
    assert!(
        o.stdout
            .contains("Topologies (built into repro; none in mine/topologies):\n  NAME "),
        "{}",
        o.stdout
    );
    let o = i.run(&["--root", "mine", "validate"]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let all = shipped("checks").len() + 1;
    assert!(
        o.stdout.starts_with(&format!("ok: {all} checks, ")),
        "{}",
        o.stdout
    );

    // A signal with a built-in name replaces the built-in one: `ready` that no line can match
    // is what the plan shows for every check now.
    i.write(
        "mine/checks/signals.yaml",
        &format!("{MY_SIGNALS}  ready:\n    description: overridden ready\n    up: ['never printed by anything 7f3a']\n"),
    );
    let o = i.run(&["--root", "mine", "plan", "etcd-split", "--format", "json"]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let o = i.run(&["--root", "mine", "validate"]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let plain = i.run(&["validate"]);
    let signals = |s: &str| {
        s.split(" and ")
            .nth(1)
            .and_then(|t| t.split_whitespace().next())
            .and_then(|n| n.parse::<usize>().ok())
    };
    // One signal more than the built-in ones (my-signal); `ready` replaced, not added.
    assert_eq!(
        signals(&o.stdout),
        signals(&plain.stdout).map(|n| n + 1),
        "{}\n{}",
        o.stdout,
        plain.stdout
    );
}

/// What `repro inspect` reads with a signal replaced: the folder's, not the built-in one.
#[test]
fn a_replaced_signal_is_the_one_used() {
    let i = Installed::new();
    i.write(
        "mine/checks/signals.yaml",
        "signals:\n  embedded-registry:\n    description: replaced\n    up: ['my own registry line 5d1e']\n",
    );
    i.write(
        "journal.txt",
        "Dec 03 10:00:00 etcd-1 k3s[1]: time=\"2026-12-03T10:00:00Z\" level=info msg=\"Starting k3s v1.33.4+k3s1 (abc)\"\nDec 03 10:00:01 etcd-1 k3s[1]: my own registry line 5d1e\n",
    );
    let o = i.run(&[
        "--root",
        "mine",
        "inspect",
        "journal.txt",
        "--format",
        "json",
    ]);
    let builtin = i.run(&["inspect", "journal.txt", "--format", "json"]);
    assert!(
        o.stdout.contains("my own registry line 5d1e") && o.stdout != builtin.stdout,
        "exit {:?}\n{}\n{}\n--- built-in:\n{}",
        o.code,
        o.stdout,
        o.stderr,
        builtin.stdout
    );
}

/// Something missing or malformed in a `--root` is an error naming the folder or the file (with
/// line and column) and `--root`; a built-in check a folder's topology no longer fits is set
/// aside, not a failure of every command.
#[test]
fn a_root_that_is_missing_or_broken_says_where() {
    let i = Installed::new();
    let o = i.run(&["--root", "nowhere", "list"]);
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert!(
        o.stderr.contains("nowhere: error:") && o.stderr.contains("--root"),
        "{}",
        o.stderr
    );
    std::fs::create_dir(i.work.join("bare")).expect("mkdir");
    let o = i.run(&["--root", "bare", "validate"]);
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert!(
        o.stderr
            .contains("bare: error: the project folder (--root or REPRO_ROOT) has neither checks/ nor topologies/"),
        "{}",
        o.stderr
    );
    i.write(
        "broken/checks/my-check.yaml",
        &MY_CHECK.replace("restart:", "restrat:"),
    );
    let o = i.run(&["--root", "broken", "plan", "my-check"]);
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert!(
        o.stderr.contains("broken/checks/my-check.yaml:7:5: error:"),
        "{}",
        o.stderr
    );

    // The folder's etcd-split topology has no etcd-3: the built-in checks on it are set aside.
    let topo = std::fs::read_to_string(root().join("topologies/etcd-split.yaml")).expect("shipped");
    let cut: String = topo
        .lines()
        .filter(|l| !l.contains("etcd-3"))
        .map(|l| format!("{l}\n"))
        .collect();
    i.write("small/topologies/etcd-split.yaml", &cut);
    let o = i.run(&["--root", "small", "plan", "bootstrap-check"]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let o = i.run(&["--root", "small", "plan", "etcd-split"]);
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert!(
        o.stderr.contains(
            "error: the built-in check `etcd-split` does not hold over the files of small"
        ) && o.stderr.contains("etcd-3"),
        "{}",
        o.stderr
    );
    let o = i.run(&["--root", "small", "list"]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(
        o.stdout
            .contains("Not listed: built-in checks that do not hold over your files (`repro plan NAME` says why):\n  etcd-split: <builtin>/checks/etcd-split.yaml:"),
        "{}",
        o.stdout
    );
    let o = i.run(&["--root", "small", "validate"]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(o.stdout.contains("left out"), "{}", o.stdout);
}

// ---------------------------------------------------------------------------------------------
// The README's commands

/// The `repro …` commands of README.md: each line of a code block that starts with `repro `,
/// and each inline code span that does.
fn readme_commands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block {
            if line.starts_with("repro ") {
                out.push(line.to_string());
            }
            continue;
        }
        for (i, span) in line.split('`').enumerate() {
            if i % 2 == 1 && span.starts_with("repro ") {
                out.push(span.to_string());
            }
        }
    }
    out
}

/// A README command as words, or `None` when it is a pattern rather than a command (a
/// placeholder like `V`, `<id>`, `FILES…`, alternatives with `|`, a glob) or names a file of
/// the user's. Comments, redirections and optional `[…]` parts are left out.
fn words(command: &str) -> Option<Vec<String>> {
    let c = command.split(" #").next().unwrap_or_default();
    let c = c.split(" > ").next().unwrap_or_default();
    let optional = regex::Regex::new(r"\[[^\]]*\]").expect("regex");
    let c = optional.replace_all(c, "");
    let placeholder = regex::Regex::new(r"^[A-Z][A-Z,]*…?$").expect("regex");
    let w: Vec<String> = c.split_whitespace().map(str::to_string).collect();
    let pattern = w.iter().any(|t| {
        placeholder.is_match(t)
            || t.contains(['<', '|', '*', '…', '/'])
            || t.ends_with(".yaml")
            || t.ends_with(".txt")
    });
    let subcommand = w
        .get(1)
        .is_some_and(|s| s.chars().all(|c| c.is_ascii_lowercase() || c == '-'));
    (!pattern && subcommand).then_some(w)
}

/// Options of `run` (and `verify`) that `plan` does not take: left out of the plan made of a
/// run, each `true` when a value follows it.
const RUN_ONLY: &[(&str, bool)] = &[
    ("--expect", true),
    ("--timeout", true),
    ("--results", true),
    ("--settle", true),
    ("--progress", true),
    ("--events", true),
    ("--privileged", true),
    ("--out", true),
    ("--mtu", true),
    ("--keep", false),
    ("--no-host-check", false),
    ("--github-annotations", false),
];

/// The Docker-free forms of a README command: `plan` for `run`, one `plan` per version for
/// `verify`, the command itself for `plan`, `validate` and `list`; `doctor`'s topology (and
/// version) planned with a check that runs on it.
fn docker_free(w: &[String], checks_on: &dyn Fn(&str) -> String) -> Vec<Vec<String>> {
    let sub = w[1].as_str();
    let mut rest: Vec<String> = Vec::new();
    let mut versions: Vec<String> = Vec::new();
    let mut it = w[2..].iter();
    while let Some(t) = it.next() {
        if let Some((_, takes)) = RUN_ONLY.iter().find(|(f, _)| f == t) {
            if *takes {
                it.next();
            }
        } else if t == "--buggy" || t == "--fixed" {
            versions.push(it.next().cloned().unwrap_or_default());
        } else {
            rest.push(t.clone());
        }
    }
    let plan = |extra: &[String]| {
        let mut v = vec!["plan".to_string()];
        v.extend(rest.iter().cloned());
        v.extend(extra.iter().cloned());
        v
    };
    match sub {
        "run" => vec![plan(&[])],
        "verify" => versions
            .iter()
            .map(|v| plan(&["--version".into(), v.clone()]))
            .collect(),
        "doctor" => {
            let topology = rest.iter().skip_while(|t| *t != "--topology").nth(1);
            let check = checks_on(topology.map_or("etcd-split", String::as_str));
            vec![plan(&[check])]
        }
        _ => vec![w[1..].to_vec()],
    }
}

/// From an installed binary in an empty folder, every README command that names a shipped
/// check or topology works (#32), in its Docker-free form: so the README cannot name a file
/// the binary lacks, or an option the command refuses.
#[test]
fn every_readme_command_naming_a_shipped_file_works_from_an_installed_binary() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README");
    let names: Vec<String> = [shipped("checks"), shipped("topologies")].concat();
    let i = Installed::new();
    let o = i.run(&["list", "--format", "json"]);
    let list: serde_json::Value = serde_json::from_str(&o.stdout).expect("list json");
    // A shipped check that runs on a topology (`doctor` names only the topology).
    let checks_on = |topology: &str| -> String {
        let checks = list["checks"].as_array().expect("checks");
        // Else the README's own check, which every shipped topology of the QA flow runs.
        let on = |c: &&serde_json::Value| c["topology"] == topology;
        checks
            .iter()
            .find(on)
            .map_or("etcd-split", |c| c["name"].as_str().unwrap_or_default())
            .to_string()
    };
    let mut tried = Vec::new();
    for command in readme_commands(&readme) {
        let Some(w) = words(&command) else { continue };
        if !w.iter().any(|t| names.contains(t)) {
            continue;
        }
        for args in docker_free(&w, &checks_on) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let o = i.run(&args);
            assert_eq!(
                o.code,
                Some(0),
                "README's `{command}` as `repro {}` from an installed binary in an empty folder:\n{}{}",
                args.join(" "),
                o.stdout,
                o.stderr
            );
            tried.push(args.join(" "));
        }
    }
    // The README's QA flow, its RKE2 section and the commands table are all in (a scan that
    // found nothing would pass for the wrong reason).
    for must in [
        "plan etcd-split --version v1.33.4+k3s1",
        "plan etcd-split --topology rke2-8465 --version v1.32.9+rke2r1",
        "plan etcd-split --topology etcd-split-2cp --version v1.33.4+k3s1",
    ] {
        assert!(
            tried.iter().any(|t| t == must),
            "{must:?} not tried: {tried:#?}"
        );
    }
}

/// The scan reads the README's forms as intended.
#[test]
fn readme_commands_are_read_as_written() {
    let text = "a `repro plan x --version v1` b\n```sh\nrepro run x --keep   # c\nrepro verify x --buggy A --fixed B > c.md\nrepro list [--format json]\nrepro clean --run <id> | --all\n```\n";
    let found = readme_commands(text);
    assert_eq!(found.len(), 5, "{found:?}");
    let w: Vec<Option<Vec<String>>> = found.iter().map(|c| words(c)).collect();
    assert_eq!(w[0].as_ref().map(Vec::len), Some(5));
    let none = |_: &str| String::new();
    let run = w[1].as_ref().expect("run");
    assert_eq!(docker_free(run, &none), vec![vec!["plan", "x"]]);
    assert!(w[2].is_none(), "placeholders A and B");
    assert_eq!(
        w[3].as_deref(),
        Some(&["repro".to_string(), "list".into()][..])
    );
    assert!(w[4].is_none());
    let verify: Vec<String> = [
        "repro", "verify", "x", "--buggy", "v1", "--fixed", "v2", "--sim",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(
        docker_free(&verify, &none),
        vec![
            vec!["plan", "x", "--sim", "--version", "v1"],
            vec!["plan", "x", "--sim", "--version", "v2"]
        ]
    );
}
