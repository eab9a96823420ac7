//! Where scenario files come from and how they are found by name.
//!
//! The shipped files are compiled into the binary, so `repro` works from any directory; a
//! project folder with `checks/` and `topologies/` (the current directory, `--root` or
//! `REPRO_ROOT`) replaces them, so users can edit and add their own.

use std::path::{Path, PathBuf};

use crate::diag::{Diagnostic, Diagnostics};
use crate::load::{self, FileKind};
use crate::safe_fs;
use crate::scenario::{Check, Scenario, Signals, Topology};

/// The shipped files, for use without a project folder.
const BUILTIN: &[(&str, &str)] = &[
    (
        "checks/signals.yaml",
        include_str!("../checks/signals.yaml"),
    ),
    (
        "checks/etcd-split.yaml",
        include_str!("../checks/etcd-split.yaml"),
    ),
    (
        "checks/metrics-order.yaml",
        include_str!("../checks/metrics-order.yaml"),
    ),
    (
        "checks/bootstrap-check.yaml",
        include_str!("../checks/bootstrap-check.yaml"),
    ),
    (
        "topologies/etcd-split.yaml",
        include_str!("../topologies/etcd-split.yaml"),
    ),
    (
        "topologies/etcd-split-2cp.yaml",
        include_str!("../topologies/etcd-split-2cp.yaml"),
    ),
    (
        "topologies/bootstrap-check.yaml",
        include_str!("../topologies/bootstrap-check.yaml"),
    ),
];

/// One scenario file and its text.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    pub(crate) path: PathBuf,
    pub(crate) text: String,
}

#[derive(Debug, Clone)]
pub struct Catalog {
    pub(crate) topologies: Vec<Topology>,
    /// Each topology's file, by name: a version of another distribution re-reads it on that one.
    topology_sources: Vec<(String, Source)>,
    pub(crate) checks: Vec<(Check, Source)>,
    pub signals: Signals,
}

/// Finds the project folder: explicit root, else the current directory if it has
/// `checks/signals.yaml`, else `None` (use the built-in files).
pub fn find_root(explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = explicit {
        return Some(p.to_path_buf());
    }
    if let Ok(p) = std::env::var("REPRO_ROOT") {
        if !p.is_empty() {
            return Some(PathBuf::from(p));
        }
    }
    // Relative, so every path in messages reads `checks/x.yaml` rather than a machine path.
    Path::new("checks/signals.yaml")
        .is_file()
        .then(|| PathBuf::from("."))
}

/// `./checks/x.yaml` → `checks/x.yaml`: the form users type and messages show.
fn tidy(p: PathBuf) -> PathBuf {
    match p.strip_prefix(".") {
        Ok(rest) if !rest.as_os_str().is_empty() => rest.to_path_buf(),
        _ => p,
    }
}

/// All scenario files under a root, or the built-in ones.
pub(crate) fn sources(root: Option<&Path>) -> Result<Vec<Source>, Diagnostics> {
    let Some(root) = root else {
        return Ok(BUILTIN
            .iter()
            .map(|(p, t)| Source {
                path: Path::new("<builtin>").join(p),
                text: (*t).to_string(),
            })
            .collect());
    };
    let mut out = Vec::new();
    let mut diags = Diagnostics::default();
    for dir in ["checks", "topologies"] {
        let d = root.join(dir);
        // A project may come from anyone (a pull request): links out of it, pipes and
        // oversized files are refused (see `safe_fs`).
        let mut entries: Vec<PathBuf> = match safe_fs::paths_in(root, &d) {
            Ok(paths) => paths,
            Err(e) => {
                diags.push(read_diag(&d, &e));
                continue;
            }
        };
        entries.retain(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"));
        for p in entries {
            let p = tidy(p);
            match safe_fs::read_in(root, &p, safe_fs::SCENARIO_LIMIT) {
                Ok(bytes) => match decode(&p, bytes) {
                    Ok(s) => out.push(s),
                    Err(d) => diags.push(d),
                },
                Err(e) => diags.push(read_diag(&p, &e)),
            }
        }
    }
    if diags.is_empty() {
        Ok(out)
    } else {
        Err(diags)
    }
}

/// A scenario file named on the command line: links followed (the user named it), but only a
/// regular file of at most `safe_fs::SCENARIO_LIMIT`.
pub(crate) fn read(path: &Path) -> Result<Source, Diagnostic> {
    let bytes =
        safe_fs::read_named(path, safe_fs::SCENARIO_LIMIT).map_err(|e| read_diag(path, &e))?;
    decode(path, bytes)
}

fn decode(path: &Path, bytes: Vec<u8>) -> Result<Source, Diagnostic> {
    match String::from_utf8(bytes) {
        Ok(text) => Ok(Source {
            path: path.to_path_buf(),
            text,
        }),
        Err(e) => Err(not_utf8(path, e.as_bytes(), e.utf8_error().valid_up_to())),
    }
}

fn read_diag(path: &Path, e: &safe_fs::ReadError) -> Diagnostic {
    match e {
        safe_fs::ReadError::Io { source, .. } => io_diag(path, source),
        other => Diagnostic {
            file: path.to_path_buf(),
            line: 0,
            column: 0,
            message: format!("cannot read: {}", other.reason()),
            help: Some(other.help().into()),
        },
    }
}

/// Points at the first byte that is not UTF-8, so the user finds the stray character.
fn not_utf8(path: &Path, bytes: &[u8], valid_up_to: usize) -> Diagnostic {
    let before = String::from_utf8_lossy(&bytes[..valid_up_to]);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    let byte = bytes.get(valid_up_to).copied().unwrap_or(0);
    Diagnostic {
        file: path.to_path_buf(),
        line: line as u64,
        column: column as u64,
        message: format!("the file is not UTF-8 text (byte 0x{byte:02X} here)"),
        help: Some("save the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8`)".into()),
    }
}

fn io_diag(path: &Path, e: &std::io::Error) -> Diagnostic {
    let help = match e.kind() {
        std::io::ErrorKind::NotFound => {
            "check the path; `repro list` shows the checks and topologies repro knows"
        }
        _ => "check that the file exists and is readable",
    };
    Diagnostic {
        file: path.to_path_buf(),
        line: 0,
        column: 0,
        message: format!("cannot read: {e}"),
        help: Some(help.into()),
    }
}

impl Catalog {
    /// Loads and validates every file; all problems of all files are reported together.
    pub(crate) fn from_sources(
        origin: String,
        sources: Vec<Source>,
    ) -> Result<Catalog, Diagnostics> {
        let mut diags = Diagnostics::default();
        let mut topologies: Vec<Topology> = Vec::new();
        let mut topology_sources = Vec::new();
        let mut broken_topologies = Vec::new();
        let mut check_sources = Vec::new();
        let mut signal_sources = Vec::new();
        for s in sources {
            match load::file_kind(&s.path, &s.text) {
                Some(FileKind::Topology) => match load::topology(&s.path, &s.text) {
                    Ok(t) => {
                        if let Some(first) = topologies.iter().find(|o| o.name == t.name) {
                            diags.push(Diagnostic {
                                file: t.path.clone(),
                                line: 0,
                                column: 0,
                                message: format!(
                                    "topology name `{}` is also used by {}",
                                    t.name,
                                    first.path.display()
                                ),
                                help: Some("give every topology its own `name:`".into()),
                            });
                        }
                        topology_sources.push((t.name.clone(), s.clone()));
                        topologies.push(t);
                    }
                    Err(d) => {
                        broken_topologies.extend(load::topology_name(&s.text));
                        diags.extend(d);
                    }
                },
                Some(FileKind::Check) => check_sources.push(s),
                Some(FileKind::Signals) => signal_sources.push(s),
                None => diags.push(Diagnostic {
                    file: s.path.clone(),
                    line: 0,
                    column: 0,
                    message: "cannot tell what this file is".into(),
                    help: Some(
                        "a topology has `nodes:`, a check `steps:`, a signals file `signals:` (at the top level)"
                            .into(),
                    ),
                }),
            }
        }
        let mut signals = None;
        if signal_sources.is_empty() {
            diags.push(Diagnostic {
                file: PathBuf::from(&origin).join("checks/signals.yaml"),
                line: 0,
                column: 0,
                message: "no signals file".into(),
                help: Some(
                    "add checks/signals.yaml: it defines the signals checks refer to (copy the shipped one)"
                        .into(),
                ),
            });
        }
        for s in &signal_sources {
            match load::signals(&s.path, &s.text) {
                Ok(sig) => signals = Some(sig),
                Err(d) => diags.extend(d),
            }
        }
        // Checks are validated only against signals that loaded: against a broken signals file
        // every expectation would read as "unknown signal".
        let mut checks: Vec<(Check, Source)> = Vec::new();
        if let Some(sig) = &signals {
            let cx = load::Context {
                topologies: &topologies,
                broken_topologies: &broken_topologies,
                signals: sig,
                topology_override: None,
            };
            for s in check_sources {
                match load::check_in(&s.path, &s.text, &cx) {
                    Ok(c) => {
                        if let Some((first, _)) = checks.iter().find(|(o, _)| o.name == c.name) {
                            diags.push(Diagnostic {
                                file: c.path.clone(),
                                line: 0,
                                column: 0,
                                message: format!(
                                    "check name `{}` is also used by {}",
                                    c.name,
                                    first.path.display()
                                ),
                                help: Some("give every check its own `name:`".into()),
                            });
                        }
                        // The bug world on the check's own topology (src/bug_world.rs).
                        if let Some(t) = topologies.iter().find(|t| t.name == c.topology) {
                            let sc = Scenario {
                                check: c.clone(),
                                topology: t.clone(),
                                signals: sig.clone(),
                            };
                            if let Err(d) = crate::bug_world::check(&sc) {
                                diags.extend(d);
                            }
                        }
                        checks.push((c, s));
                    }
                    Err(d) => diags.extend(d),
                }
            }
        }
        if !diags.is_empty() {
            return Err(diags.sorted());
        }
        Ok(Catalog {
            topologies,
            topology_sources,
            checks,
            signals: signals.unwrap_or_default(),
        })
    }

    /// The project folder's files, or the built-in ones.
    pub fn load(root: Option<&Path>) -> Result<Catalog, Diagnostics> {
        let origin = root.map_or_else(|| "<builtin>".to_string(), |r| r.display().to_string());
        Catalog::from_sources(origin, sources(root)?)
    }

    pub(crate) fn topology(&self, name: &str) -> Option<&Topology> {
        self.topologies.iter().find(|t| t.name == name)
    }

    /// A check by name or by path to a check file, with its topology (or `topology` instead,
    /// re-validated so steps naming nodes the other topology lacks are caught before Docker).
    pub(crate) fn scenario(
        &self,
        check: &str,
        topology: Option<&str>,
    ) -> Result<Scenario, Diagnostics> {
        self.scenario_on(check, topology, None)
    }

    /// [`Catalog::scenario`] on `version` (`--version`): a version of another distribution than
    /// the topology's re-reads the topology on that distribution (its paths, ports and flags)
    /// and re-validates the check against it, unless the topology names its `distribution:`.
    pub(crate) fn scenario_on(
        &self,
        check: &str,
        topology: Option<&str>,
        version: Option<&distro::Version>,
    ) -> Result<Scenario, Diagnostics> {
        let (check, source) =
            if check.ends_with(".yaml") || check.ends_with(".yml") || check.contains('/') {
                let src = read(Path::new(check)).map_err(|d| Diagnostics(vec![d]))?;
                let c = load::check(&src.path, &src.text, &self.topologies, &self.signals)?;
                (c, src)
            } else {
                match self.checks.iter().find(|(c, _)| c.name == check) {
                    Some((c, s)) => (c.clone(), s.clone()),
                    None => {
                        return Err(Diagnostics(vec![Diagnostic::general(
                            format!("no check named `{check}`"),
                            format!(
                                "use one of: {} (or the path of a check file)",
                                self.checks
                                    .iter()
                                    .map(|(c, _)| c.name.as_str())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        )]))
                    }
                }
            };
        let topo_name = topology.unwrap_or(&check.topology);
        let Some(topo) = self.topology(topo_name) else {
            return Err(Diagnostics(vec![Diagnostic::general(
                format!("no topology named `{topo_name}`"),
                format!(
                    "use one of: {}",
                    self.topologies
                        .iter()
                        .map(|t| t.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )]));
        };
        let written_on = topo.distro;
        let on_other = version.filter(|v| v.distro != written_on);
        let reread;
        let topo = match (
            on_other,
            self.topology_sources.iter().find(|(n, _)| *n == topo.name),
        ) {
            (Some(v), Some((_, src))) => {
                reread = load::topology_on(&src.path, &src.text, Some(v))?;
                &reread
            }
            _ => topo,
        };
        let mut check = check;
        if topology.is_some_and(|t| t != check.topology) || on_other.is_some() {
            match load::check_with_topology(&check, &source.text, topo, &self.signals) {
                // Re-read on the topology's distribution: its file paths are that one's.
                Ok(c) => check = c,
                Err(mut d) => {
                    // Say up front why a check that validates on its own is rejected now.
                    let why = match on_other {
                    Some(v) => Diagnostic {
                        file: check.path.clone(),
                        line: 0,
                        column: 0,
                        message: format!(
                            "check `{}` cannot run on {} {v} as written",
                            check.name, v.distro
                        ),
                        help: Some(format!(
                            "the errors below are what {} lacks; run a {} version, or write the check for {}",
                            v.distro, written_on, v.distro
                        )),
                    },
                    None => Diagnostic {
                        file: check.path.clone(),
                        line: 0,
                        column: 0,
                        message: format!(
                            "check `{}` does not fit topology `{}` given with --topology (it was written for `{}`)",
                            check.name, topo.name, check.topology
                        ),
                        help: Some(format!(
                            "pick a topology whose nodes match what the check edits, restarts and observes; `{}` has: {}",
                            topo.name,
                            topo.nodes
                                .iter()
                                .map(|n| if n.deferred {
                                    format!("{} (deferred)", n.name)
                                } else {
                                    n.name.clone()
                                })
                                .collect::<Vec<_>>()
                                .join(", ")
                        )),
                    },
                };
                    d.0.insert(0, why);
                    return Err(d);
                }
            }
        }
        let sc = Scenario {
            check,
            topology: topo.clone(),
            signals: self.signals.for_distro(topo.distro),
        };
        // On another topology than its own a check may hold no longer (src/bug_world.rs).
        crate::bug_world::check(&sc)?;
        Ok(sc)
    }
}
