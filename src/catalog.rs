//! Where scenario files come from and how they are found by name.
//!
//! The shipped files are compiled into the binary, so `repro` works from any directory; a
//! project folder with `checks/` and `topologies/` (the current directory, `--root` or
//! `REPRO_ROOT`) replaces them, so users can edit and add their own.

use std::path::{Path, PathBuf};

use crate::diag::{Diagnostic, Diagnostics};
use crate::load::{self, FileKind};
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
pub struct Source {
    pub path: PathBuf,
    pub text: String,
}

#[derive(Debug, Clone)]
pub struct Catalog {
    /// Where the files came from (a folder, or `<builtin>`).
    pub origin: String,
    pub topologies: Vec<Topology>,
    pub checks: Vec<(Check, Source)>,
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
    let cwd = std::env::current_dir().ok()?;
    cwd.join("checks/signals.yaml").is_file().then_some(cwd)
}

/// All scenario files under a root, or the built-in ones.
pub fn sources(root: Option<&Path>) -> Result<Vec<Source>, Diagnostics> {
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
        let mut entries: Vec<PathBuf> = match std::fs::read_dir(&d) {
            Ok(rd) => rd.filter_map(|e| e.ok().map(|e| e.path())).collect(),
            Err(e) => {
                diags.push(io_diag(&d, &e));
                continue;
            }
        };
        entries.retain(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"));
        entries.sort();
        for p in entries {
            match read(&p) {
                Ok(s) => out.push(s),
                Err(d) => diags.push(d),
            }
        }
    }
    if diags.is_empty() {
        Ok(out)
    } else {
        Err(diags)
    }
}

pub fn read(path: &Path) -> Result<Source, Diagnostic> {
    std::fs::read_to_string(path)
        .map(|text| Source {
            path: path.to_path_buf(),
            text,
        })
        .map_err(|e| io_diag(path, &e))
}

fn io_diag(path: &Path, e: &std::io::Error) -> Diagnostic {
    let msg = if e.kind() == std::io::ErrorKind::InvalidData {
        "the file is not UTF-8 text".to_string()
    } else {
        format!("cannot read: {e}")
    };
    Diagnostic {
        file: path.to_path_buf(),
        line: 1,
        column: 1,
        message: msg,
        help: None,
    }
}

impl Catalog {
    /// Loads and validates every file; all problems of all files are reported together.
    pub fn from_sources(origin: String, sources: Vec<Source>) -> Result<Catalog, Diagnostics> {
        let mut diags = Diagnostics::default();
        let mut topologies = Vec::new();
        let mut check_sources = Vec::new();
        let mut signal_sources = Vec::new();
        for s in sources {
            match load::file_kind(&s.path, &s.text) {
                Some(FileKind::Topology) => match load::topology(&s.path, &s.text) {
                    Ok(t) => topologies.push(t),
                    Err(d) => diags.extend(d),
                },
                Some(FileKind::Check) => check_sources.push(s),
                Some(FileKind::Signals) => signal_sources.push(s),
                None => diags.push(Diagnostic {
                    file: s.path.clone(),
                    line: 1,
                    column: 1,
                    message: "cannot tell what this file is".into(),
                    help: Some(
                        "a topology has `nodes:`, a check `steps:`, a signals file `signals:`"
                            .into(),
                    ),
                }),
            }
        }
        let mut signals = None;
        match signal_sources.len() {
            0 => diags.push(Diagnostic {
                file: PathBuf::from(&origin).join("checks/signals.yaml"),
                line: 1,
                column: 1,
                message: "no signals file".into(),
                help: Some("checks/signals.yaml defines the signals checks refer to".into()),
            }),
            _ => {
                for s in &signal_sources {
                    match load::signals(&s.path, &s.text) {
                        Ok(sig) => signals = Some(sig),
                        Err(d) => diags.extend(d),
                    }
                }
            }
        }
        let mut seen = std::collections::HashMap::new();
        for t in &topologies {
            if let Some(first) = seen.insert(t.name.clone(), t.path.clone()) {
                diags.push(Diagnostic {
                    file: t.path.clone(),
                    line: 1,
                    column: 1,
                    message: format!(
                        "topology name `{}` is also used by {}",
                        t.name,
                        first.display()
                    ),
                    help: Some("give every topology its own name".into()),
                });
            }
        }
        let mut checks = Vec::new();
        if let Some(sig) = &signals {
            for s in check_sources {
                match load::check(&s.path, &s.text, &topologies, sig) {
                    Ok(c) => checks.push((c, s)),
                    Err(d) => diags.extend(d),
                }
            }
        }
        if !diags.is_empty() {
            return Err(diags.sorted());
        }
        Ok(Catalog {
            origin,
            topologies,
            checks,
            signals: signals.unwrap_or_default(),
        })
    }

    /// The project folder's files, or the built-in ones.
    pub fn load(root: Option<&Path>) -> Result<Catalog, Diagnostics> {
        let origin = root.map_or_else(|| "<builtin>".to_string(), |r| r.display().to_string());
        Catalog::from_sources(origin, sources(root)?)
    }

    pub fn topology(&self, name: &str) -> Option<&Topology> {
        self.topologies.iter().find(|t| t.name == name)
    }

    /// A check by name or by path to a check file, with its topology (or `topology` instead,
    /// re-validated so steps naming nodes the other topology lacks are caught before Docker).
    pub fn scenario(&self, check: &str, topology: Option<&str>) -> Result<Scenario, Diagnostics> {
        let (check, source) =
            if check.ends_with(".yaml") || check.ends_with(".yml") || check.contains('/') {
                let src = read(Path::new(check)).map_err(|d| Diagnostics(vec![d]))?;
                let c = load::check(&src.path, &src.text, &self.topologies, &self.signals)?;
                (c, src)
            } else {
                match self.checks.iter().find(|(c, _)| c.name == check) {
                    Some((c, s)) => (c.clone(), s.clone()),
                    None => {
                        return Err(Diagnostics(vec![Diagnostic {
                            file: PathBuf::from(check),
                            line: 1,
                            column: 1,
                            message: format!("no check named `{check}`"),
                            help: Some(format!(
                                "known checks: {}",
                                self.checks
                                    .iter()
                                    .map(|(c, _)| c.name.as_str())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )),
                        }]))
                    }
                }
            };
        let topo_name = topology.unwrap_or(&check.topology);
        let Some(topo) = self.topology(topo_name) else {
            return Err(Diagnostics(vec![Diagnostic {
                file: PathBuf::from(topo_name),
                line: 1,
                column: 1,
                message: format!("no topology named `{topo_name}`"),
                help: Some(format!(
                    "known topologies: {}",
                    self.topologies
                        .iter()
                        .map(|t| t.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            }]));
        };
        if topology.is_some() {
            load::check_with_topology(&check, &source.text, topo, &self.signals)?;
        }
        Ok(Scenario {
            check,
            topology: topo.clone(),
            signals: self.signals.clone(),
        })
    }
}
