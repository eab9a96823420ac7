//! What `--help`, the man pages and the shell completions say beyond the flags: examples per
//! command, the environment repro reads, and the exit status (`crate::exit`'s table, which the
//! README shows too). One place: [`command`] lays them over clap's definition, `main` parses
//! with it, and `repro man` and `repro completions` render it (#32 item 7).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use clap::{CommandFactory, FromArgMatches};
use clap_complete::engine::{ArgValueCompleter, CompletionCandidate, PathCompleter};

use crate::cli::Cli;
use crate::exit::Exit;

/// One example: what it does, then the command line (no quotes: the suite splits it on spaces
/// and parses it with the real CLI; a trailing `> FILE` is the shell's, not repro's).
pub(crate) struct Example {
    pub(crate) what: &'static str,
    pub(crate) line: &'static str,
}

const fn ex(what: &'static str, line: &'static str) -> Example {
    Example { what, line }
}

/// Examples per command, by its path under `repro` ("" is repro itself, "sim build" a command
/// of a command). Every visible command has some: the suite holds it to that.
pub(crate) const EXAMPLES: &[(&str, &[Example])] = &[
    ("", &[
        ex("reproduce k3s #12753 on a buggy release of real k3s", "repro run etcd-split --version v1.33.4+k3s1"),
        ex("both runs and the validation comment, on the offline stand-in", "repro verify etcd-split --buggy v1.33.4+k3s1 --fixed v1.33.5+k3s1 --sim"),
        ex("can this host run real k3s?", "repro doctor"),
    ]),
    ("validate", &[
        ex("every shipped check, topology and signals file", "repro validate"),
        ex("your own files", "repro validate checks/my-check.yaml topologies/my-cluster.yaml"),
    ]),
    ("list", &[
        ex("the checks and topologies repro knows, and where they come from", "repro list"),
        ex("the same for scripts", "repro list --format json"),
    ]),
    ("plan", &[
        ex("the whole run on paper, and the verdict expected for the version", "repro plan etcd-split --version v1.33.5+k3s1"),
        ex("an image tag sets the version of record", "repro plan etcd-split --image rancher/k3s:v1.33.5-k3s1"),
        ex("the critical path at real k3s's boot timings, halved", "repro plan etcd-split --sim --sim-pace 0.5"),
    ]),
    ("run", &[
        ex("real k3s: reproduce #12753 on v1.33.4 (exit 0 when it does)", "repro run etcd-split --version v1.33.4+k3s1"),
        ex("the offline stand-in, on the fixed release", "repro run etcd-split --sim --version v1.33.5+k3s1"),
        ex("your own cluster shape, by path", "repro run etcd-split --topology ./my-cluster.yaml --sim"),
        ex("leave the cluster running afterwards (remove it with repro clean --run ID)", "repro run etcd-split --sim --keep"),
        ex("the run's events as JSON Lines on stdout, for CI and tools (docs/events.md)", "repro run etcd-split --sim --events -"),
    ]),
    ("verify", &[
        ex("both runs on the stand-in, then the comment on stdout", "repro verify etcd-split --buggy v1.33.4+k3s1 --fixed v1.33.5+k3s1 --sim"),
        ex("real k3s, the comment into a file", "repro verify etcd-split --buggy v1.33.4+k3s1 --fixed v1.33.5+k3s1 --out comment.md"),
        ex("RKE2 QA's reporter cluster", "repro verify etcd-split --buggy v1.32.5+rke2r1 --fixed v1.32.9+rke2r1 --topology rke2-8465"),
    ]),
    ("clean", &[
        ex("what one run left (its id, as printed at the end of a run)", "repro clean --run 3e593824"),
        ex("everything any repro run left on this Docker host", "repro clean --all"),
    ]),
    ("runs", &[
        ex("past and kept runs under ./results: id, check, version, verdict, cluster, folder", "repro runs"),
        ex("the same for scripts, from another results folder", "repro runs --results ci-results --format json"),
    ]),
    ("runs logs", &[
        ex("a kept node's log, as the run read it (container log, or its unit's journal)", "repro runs logs 3e593824 etcd-1"),
        ex("every node's log of the run, then follow one", "repro runs logs 3e59 etcd-2 --follow"),
    ]),
    ("runs exec", &[
        ex("run a command in a kept node; repro exits with its status", "repro runs exec 3e593824 etcd-1 -- k3s -v"),
        ex("the exit status is the command's, for a script to test", "repro runs exec 3e59 cp-1 -- k3s -v"),
    ]),
    ("report", &[
        ex("re-render a run's reports from its result.json and logs", "repro report results/etcd-split-v1.33.4-k3s1-20261203T114858Z-3e593824"),
        ex("the comment that closes the issue, from a buggy and a fixed run", "repro report --validation results/etcd-split-v1.33.4-k3s1-* results/etcd-split-v1.33.5-k3s1-* --out comment.md"),
        ex("the cases that did not pass, as GitHub annotations", "repro report --github-annotations results/etcd-split-v1.33.4-k3s1-20261203T114858Z-3e593824"),
    ]),
    ("redact", &[
        ex("a redacted copy of a log", "repro redact k3s.log --out k3s-redacted.log"),
        ex("a log collector's folder in place, with a token the files do not name", "repro redact collector-node1/ --secret K10example"),
    ]),
    ("sim", &[
        ex("the stand-in images of the versions the demo and tests use", "repro sim build"),
        ex("a stand-in k3s binary with the fix, to run as a build under test", "repro sim binary --version v1.33.5+k3s1 --fixed --out ./k3s"),
    ]),
    ("sim build", &[
        ex("the default versions", "repro sim build"),
        ex("two versions, rebuilt", "repro sim build --version v1.33.4+k3s1,v1.33.5+k3s1 --rebuild"),
    ]),
    ("sim binary", &[
        ex("a stand-in k3s that has the bug", "repro sim binary --version v1.33.4+k3s1 --buggy --out ./k3s"),
    ]),
    ("sim artifacts", &[
        ex("the stand-in's rke2 release artifacts, for run --artifacts offline", "repro sim artifacts --version v1.32.5+rke2r1 --out ./rke2-v1.32.5"),
    ]),
    ("matrix", &[
        ex("five versions on the stand-in, two runs at once", "repro matrix --sim --versions v1.32.8+k3s1,v1.32.9+k3s1,v1.33.4+k3s1,v1.33.5+k3s1,v1.34.1+k3s1 --jobs 2"),
        ex("the CI fan-out JSON, no Docker", "repro matrix --versions stable,v1.33.4+k3s1 --emit github-matrix"),
    ]),
    ("bisect", &[
        ex("the first release whose verdict changes", "repro bisect etcd-split --good v1.33.6+k3s1 --bad v1.33.0+k3s1 --sim"),
        ex("over commits' CI builds (one full SHA a line, oldest first)", "repro bisect etcd-split --commits commits.txt"),
    ]),
    ("merge", &[
        ex("runs made on other machines, against the planned matrix", "repro merge artifacts/ --plan matrix.json --out results/merged"),
    ]),
    ("nightly-issues", &[
        ex("what would change in the nightly's issues, changing nothing", "repro nightly-issues results/merged/summary.json --dry-run"),
    ]),
    ("inspect", &[
        ex("a journal (journalctl -u k3s, any format)", "repro inspect journal.txt"),
        ex("one file per node, with a node's config", "repro inspect --node etcd-2=e2.log --node etcd-3=e3.log --config etcd-2=config.yaml"),
        ex("lines pasted from an issue, as Markdown", "repro inspect - --format markdown"),
    ]),
    ("doctor", &[
        ex("can this host run real k3s?", "repro doctor"),
        ex("RKE2 QA's five nodes", "repro doctor --version v1.32.5+rke2r1 --topology rke2-8465"),
        ex("the stand-in, for scripts", "repro doctor --sim --format json"),
    ]),
    ("explore", &[
        ex("search etcd-split for config-order bugs in one key", "repro explore --topology etcd-split --keys embedded-registry --version v1.33.4+k3s1 --sim"),
        ex("re-judge a campaign, no Docker", "repro explore --recheck results/explore-etcd-split-20261203T100000Z"),
    ]),
    ("audit", &[
        ex("is the cluster of my kubeconfig affected by k3s #12753?", "repro audit"),
        ex("a safe order to turn a critical key on, as a check to rehearse", "repro audit --change supervisor-metrics=true --check-out change.yaml"),
        ex("config files collected from each server, no cluster", "repro audit --version v1.33.4+k3s1 --config etcd-1=etcd-1/config.yaml --config cp-1=cp-1/config.yaml"),
        ex("for node_exporter's textfile collector", "repro audit --format prometheus > /var/lib/node_exporter/textfile/repro_audit.prom"),
    ]),
    ("version", &[
        ex("repro's own version and commit (a run's k3s version is --version after a command)", "repro version"),
        ex("the same for scripts", "repro version --format json"),
    ]),
    ("init", &[
        ex("a starter check and topology in ./checks and ./topologies", "repro init my-bug"),
        ex("then repro validate and repro plan NAME in that folder", "repro init two-servers"),
    ]),
    ("completions", &[
        ex("bash: completion of commands, flags, checks, topologies and results folders", "repro completions bash > ~/.local/share/bash-completion/completions/repro"),
        ex("zsh (a folder on $fpath)", "repro completions zsh > ~/.zfunc/_repro"),
        ex("fish", "repro completions fish > ~/.config/fish/completions/repro.fish"),
    ]),
    ("man", &[
        ex("repro's page on stdout", "repro man"),
        ex("one page per command, for man -l", "repro man --out target/man"),
    ]),
];

/// The environment repro reads, as docs/commands.md's "Environment" table shows it (the suite
/// holds the two equal).
pub(crate) const ENVIRONMENT: &[(&str, &str)] = &[
    ("DOCKER_HOST", "the engine to use: `unix://`, `tcp://` or `ssh://` (Podman's Docker-compatible API too); default the local socket"),
    (
        "REPRO_ROOT",
        "as `--root`: a folder whose `checks/` and `topologies/` lay over the built-in ones by name (signals by signal name)",
    ),
    ("REPRO_RESULTS", "as `--results`: where run folders go (default `results`)"),
    ("REPRO_K3S_VERSION", "as `--version` on the commands that run or plan one check"),
    ("REPRO_SIM_REPOSITORY", "the repository of the stand-in's images (default `repro.local/k3s-sim`), so checkouts sharing an engine do not rebuild each other's"),
    ("REPRO_SIM_BINARY", "the stand-in's static binary (default `target/x86_64-unknown-linux-gnu/release/k3s`)"),
    ("REPRO_SIM_SEED", "the stand-in's load-balancer seed (default random, recorded in result.json)"),
    ("REPRO_NODE_REPOSITORY", "the repository of node images built from rke2 release artifacts (default `repro.local/rke2-node`)"),
    ("REPRO_K3S_CI_URL", "where `--k3s-commit` fetches k3s CI builds (default k3s's install.sh's)"),
    ("REPRO_RKE2_RELEASES_URL", "where real RKE2 runs fetch rke2's release artifacts (default GitHub's releases)"),
    ("REPRO_DOWNLOAD_STALL", "how long a download may stall before it ends with exit 3 (default `60s`)"),
    ("REPRO_CHANNEL_SERVER", "the k3s channel server that resolves `stable`, `latest`, `v1.33` in `matrix`"),
    ("REPRO_GH", "as `nightly-issues --gh`: the GitHub CLI to call (default `gh`)"),
    ("XDG_CACHE_HOME", "the cache of fetched builds and rke2 artifacts, under `repro/` (default `~/.cache`)"),
    ("GITHUB_SERVER_URL, GITHUB_REPOSITORY, GITHUB_RUN_ID", "the run page `nightly-issues` links when `--run-url` is not given"),
    ("CI", "set (as by most CI systems): `--progress auto` prints plain lines, never live ones"),
    ("NO_COLOR", "set to anything: no colour on a terminal (repro colours only a terminal, never a file or pipe)"),
    ("RUST_LOG", "repro's own log filter (as `-v`, `-vv`)"),
];

/// What a command's exit codes mean where they say more than the table's short names.
const EXIT_NOTES: &[(&str, &str)] = &[
    (
        "runs exec",
        "Exit status: the command's own in the node; 2 bad input (an unknown run id or node, a run
not kept, a node not running); 3 infrastructure (no engine); 130 interrupted.",
    ),
    (
    "verify",
    "Exit status: 0 the pair validates the fix (reproduced, then fixed); 1 it does not (the comment
says why); 2 bad input, or --buggy not before --fixed by the check's fixed-in (nothing is
created); 3 infrastructure (no comment); 4 a run was inconclusive; 130 interrupted.",
    ),
];

/// The heading global options are listed under in every command's help.
const GLOBAL_HEADING: &str = "Global options";

/// repro's command as parsed, helped, completed and documented: clap's definition with the
/// examples, the exit status, the environment, the globals' heading and the completers.
pub fn command() -> clap::Command {
    decorate(Cli::command(), "")
}

/// The command line parsed with [`command`] (what `Cli::try_parse` would give, with the help
/// this module adds).
pub fn parse() -> Result<Cli, clap::Error> {
    let matches = command().try_get_matches()?;
    Cli::from_arg_matches(&matches)
}

fn decorate(mut cmd: clap::Command, path: &str) -> clap::Command {
    let subs: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for name in subs {
        let sub_path = if path.is_empty() {
            name.clone()
        } else {
            format!("{path} {name}")
        };
        cmd = cmd.mut_subcommand(&name, |s| decorate(s, &sub_path));
    }
    let ids: Vec<String> = cmd
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .collect();
    for id in ids {
        cmd = cmd.mut_arg(&id, |a| {
            // repro's own globals; a command's flag global to its subcommands (`runs
            // --results`) stays with the command's options.
            let a = if a.is_global_set() && path.is_empty() {
                a.help_heading(GLOBAL_HEADING)
            } else {
                a
            };
            match completer_for(&id) {
                Some(c) => a.add(c),
                None => a,
            }
        });
    }
    let examples = examples_text(path);
    if path.is_empty() {
        cmd.after_help(format!(
            "{examples}\nExit status and environment: repro --help, or man repro."
        ))
        .after_long_help(format!(
            "{examples}\n{}\n{}\nMore: README.md and docs/ in repro's repository.",
            exit_status_text(),
            environment_text()
        ))
    } else {
        let exit = match EXIT_NOTES.iter().find(|(p, _)| *p == path) {
            Some((_, note)) => note.to_string(),
            None => format!(
                "Exit status: {} (repro --help, man repro).",
                Exit::TABLE
                    .iter()
                    .map(|(e, short, _)| format!("{} {short}", e.code()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        cmd.after_help(format!("{examples}\n{exit}"))
    }
}

/// The examples of a command path, if any.
pub(crate) fn examples_of(path: &str) -> &'static [Example] {
    EXAMPLES
        .iter()
        .find(|(p, _)| *p == path)
        .map_or(&[], |(_, e)| e)
}

fn examples_text(path: &str) -> String {
    let mut out = String::from("Examples:\n");
    for e in examples_of(path) {
        out.push_str(&format!("  # {}\n  {}\n", e.what, e.line));
    }
    out
}

/// Backticks are Markdown's: a terminal and a man page show the words alone.
pub(crate) fn plain(text: &str) -> String {
    text.replace('`', "")
}

fn exit_status_text() -> String {
    let mut out = String::from("Exit status:\n");
    for (e, _, meaning) in Exit::TABLE {
        out.push_str(&format!("  {:<4} {}\n", e.code(), plain(meaning)));
    }
    out
}

fn environment_text() -> String {
    let mut out = String::from("Environment:\n");
    for (name, meaning) in ENVIRONMENT {
        out.push_str(&format!("  {name}\n      {}\n", plain(meaning)));
    }
    out
}

/// Which completer an argument gets, by its id (the same id on every command that has it).
fn completer_for(id: &str) -> Option<ArgValueCompleter> {
    match id {
        "check" => Some(ArgValueCompleter::new(complete_check)),
        "checks" => Some(ArgValueCompleter::new(complete_checks)),
        "topology" => Some(ArgValueCompleter::new(complete_topology)),
        "run" => Some(ArgValueCompleter::new(complete_run_id)),
        "dir" | "dirs" | "validation" | "recheck" | "resume" => {
            Some(ArgValueCompleter::new(complete_results_folder))
        }
        _ => None,
    }
}

/// The names of the catalog the command would load (`REPRO_ROOT`, the current folder, or the
/// files built into repro): checks or topologies.
fn catalog_names(checks: bool) -> Vec<String> {
    let root = crate::catalog::find_root(None);
    let Ok(catalog) = crate::catalog::Catalog::load(root.as_deref()) else {
        return Vec::new();
    };
    if checks {
        catalog.checks.iter().map(|(c, _)| c.name.clone()).collect()
    } else {
        catalog.topologies.iter().map(|t| t.name.clone()).collect()
    }
}

/// Names that start with what was typed, then the YAML files and folders a path may name.
fn names_and_yaml(names: Vec<String>, current: &OsStr) -> Vec<CompletionCandidate> {
    let typed = current.to_string_lossy();
    let mut out: Vec<CompletionCandidate> = names
        .into_iter()
        .filter(|n| n.starts_with(typed.as_ref()))
        .map(CompletionCandidate::new)
        .collect();
    let yaml = PathCompleter::any()
        .filter(|p: &Path| p.is_dir() || p.extension().is_some_and(|e| e == "yaml" || e == "yml"));
    out.extend(clap_complete::engine::ValueCompleter::complete(
        &yaml, current,
    ));
    out
}

fn complete_check(current: &OsStr) -> Vec<CompletionCandidate> {
    names_and_yaml(catalog_names(true), current)
}

fn complete_topology(current: &OsStr) -> Vec<CompletionCandidate> {
    names_and_yaml(catalog_names(false), current)
}

/// `--checks a,b,<TAB>`: the names after the last comma.
fn complete_checks(current: &OsStr) -> Vec<CompletionCandidate> {
    let typed = current.to_string_lossy();
    let (done, last) = match typed.rsplit_once(',') {
        Some((done, last)) => (format!("{done},"), last.to_string()),
        None => (String::new(), typed.to_string()),
    };
    catalog_names(true)
        .into_iter()
        .filter(|n| n.starts_with(&last))
        .map(|n| CompletionCandidate::new(format!("{done}{n}")))
        .collect()
}

/// The folders under the results folder (`REPRO_RESULTS`, default `results`) that hold what
/// `report`, `merge` and `explore` read, newest first, then any folder a path may name.
fn complete_results_folder(current: &OsStr) -> Vec<CompletionCandidate> {
    let typed = current.to_string_lossy();
    let mut out: Vec<CompletionCandidate> = results_folders()
        .into_iter()
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|p| p.starts_with(typed.as_ref()))
        .map(CompletionCandidate::new)
        .collect();
    out.extend(clap_complete::engine::ValueCompleter::complete(
        &PathCompleter::dir(),
        current,
    ));
    out.dedup_by(|a, b| a.get_value() == b.get_value());
    out
}

/// The ids of the runs under the results folder (`REPRO_RESULTS`, default `results`), as
/// `repro runs` lists them, newest first, with the check and version as the description:
/// `repro runs logs|exec <TAB>` and `clean --run <TAB>`.
fn complete_run_id(current: &OsStr) -> Vec<CompletionCandidate> {
    let typed = current.to_string_lossy();
    let mut runs: Vec<crate::result::RunResult> = crate::report::runs_in(&results_base())
        .into_iter()
        .filter_map(|(_, r)| r.ok())
        .filter(|r| r.run_id.starts_with(typed.as_ref()))
        .collect();
    runs.sort_by(|a, b| b.started_at.cmp(&a.started_at));
    runs.into_iter()
        .map(|r| {
            CompletionCandidate::new(&r.run_id)
                .help(Some(format!("{} {}", r.check.name, r.k3s.version).into()))
        })
        .collect()
}

/// The results folder the completion reads (`REPRO_RESULTS`, default `results`): a flag typed
/// on the same line is not seen by a value's completer.
fn results_base() -> PathBuf {
    std::env::var_os("REPRO_RESULTS")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("results"), PathBuf::from)
}

/// Results folders (with result.json, summary.json or campaign.json), newest name first.
pub(crate) fn results_folders() -> Vec<PathBuf> {
    let base = results_base();
    let Ok(entries) = std::fs::read_dir(&base) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            ["result.json", "summary.json", "campaign.json"]
                .iter()
                .any(|f| p.join(f).is_file())
        })
        .collect();
    out.sort();
    out.reverse();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every visible command's path under `repro` ("" for repro itself).
    fn paths(cmd: &clap::Command, path: &str, out: &mut Vec<String>) {
        out.push(path.to_string());
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            if sub.get_name() == "help" {
                continue;
            }
            let p = if path.is_empty() {
                sub.get_name().to_string()
            } else {
                format!("{path} {}", sub.get_name())
            };
            paths(sub, &p, out);
        }
    }

    #[test]
    fn every_command_has_examples_and_every_example_is_for_a_command() {
        let mut all = Vec::new();
        paths(&command(), "", &mut all);
        let lacking: Vec<&String> = all.iter().filter(|p| examples_of(p).is_empty()).collect();
        assert!(
            lacking.is_empty(),
            "commands without examples (add them to help::EXAMPLES): {lacking:?}"
        );
        for (path, _) in EXAMPLES {
            assert!(
                all.iter().any(|p| p == path),
                "examples for no command: {path:?}"
            );
        }
    }

    /// Each example is a command line the real parser accepts (a trailing `> FILE` is the
    /// shell's), and is an example of its own command.
    #[test]
    fn every_example_parses() {
        for (path, examples) in EXAMPLES {
            for e in *examples {
                assert!(
                    !e.line.contains(['"', '\'']),
                    "{}: no quotes, the test splits on spaces",
                    e.line
                );
                let words: Vec<&str> = e
                    .line
                    .split_whitespace()
                    .take_while(|w| *w != ">" && *w != "|")
                    .collect();
                let want: Vec<&str> = std::iter::once("repro")
                    .chain(path.split_whitespace())
                    .collect();
                assert!(
                    path.is_empty() || words.starts_with(&want),
                    "{}: an example of `repro {path}` starts with it",
                    e.line
                );
                if let Err(err) = command().try_get_matches_from(&words) {
                    panic!("{}: {}", e.line, err.render());
                }
            }
        }
    }

    /// docs/commands.md's "Environment" table is [`ENVIRONMENT`], row for row.
    #[test]
    fn the_environment_table_is_the_docs() {
        let rows =
            crate::exit::markdown_table_rows(include_str!("../docs/commands.md"), "## Environment");
        let want: Vec<String> = ENVIRONMENT
            .iter()
            .map(|(name, meaning)| {
                let names: Vec<String> = name.split(", ").map(|n| format!("`{n}`")).collect();
                format!("| {} | {meaning} |", names.join(", "))
            })
            .collect();
        assert_eq!(
            rows, want,
            "docs/commands.md's Environment table differs from help::ENVIRONMENT"
        );
    }

    /// Every variable a flag reads (`env = …` in clap) is in the table.
    #[test]
    fn every_flag_variable_is_in_the_table() {
        fn walk(cmd: &clap::Command, out: &mut Vec<String>) {
            for a in cmd.get_arguments() {
                if let Some(v) = a.get_env() {
                    out.push(v.to_string_lossy().into_owned());
                }
            }
            for s in cmd.get_subcommands() {
                walk(s, out);
            }
        }
        let mut vars = Vec::new();
        walk(&command(), &mut vars);
        assert!(!vars.is_empty());
        for v in vars {
            assert!(
                ENVIRONMENT
                    .iter()
                    .any(|(n, _)| n.split(", ").any(|n| n == v)),
                "{v} is read by a flag but not in help::ENVIRONMENT"
            );
        }
    }

    #[test]
    fn globals_have_their_own_heading_in_every_command() {
        let mut cmd = command();
        cmd.build();
        let run = cmd.find_subcommand("run").expect("run");
        for id in ["root", "verbose"] {
            let a = run.get_arguments().find(|a| a.get_id() == id).expect(id);
            assert_eq!(a.get_help_heading(), Some(GLOBAL_HEADING), "{id}");
        }
    }
}
