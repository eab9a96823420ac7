//! What the user named, turned into log streams and configs.
//!
//! - a log file (plain or gzip), or `-` for standard input;
//! - a folder: each log file in it (the node named after the file, or its folder when the file
//!   is called `k3s.log`, `journal` and the like), a config beside it (`<node>.config.yaml`,
//!   `<node>-config.yaml`, `config.yaml` next to a lone log);
//! - repro's own results folder (`result.json` + `nodes/<node>/boot-<n>.log`) or its
//!   `bundle.tar.gz`: every file is one boot, with the config of the step that started it;
//! - a folder (or `.tar.gz`) as rancher's log collector writes it
//!   (rancherlabs/support-tools `collection/rancher/v2.x/logs-collector`): `journald/k3s` is the
//!   node's journal, `k3s/config.yaml` and the drop-ins copied beside it its config,
//!   `k3s/k3s.service` its command-line flags, `systeminfo/hostname` its name.
//!
//! Folders are walked without following symbolic links, and only regular files are read.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use super::boots::{End, EndKind, Kept, Recorded};
use super::deps::{folder, safe_fs, Diagnostic, BUNDLE_FILE, NODES_DIR, RESULT_FILE};
use super::model::{InputKind, Source};

/// The label of standard input (`-`) in reports and messages.
pub(crate) const STDIN_LABEL: &str = "<stdin>";
/// Files read whole (configs, result.json, hostname) may not be larger than this.
const SMALL: u64 = 16 * 1024 * 1024;
/// How deep folders are searched.
const MAX_DEPTH: usize = 6;

/// Where a stream's bytes come from.
#[derive(Debug, Clone)]
pub(crate) enum Opener {
    File(PathBuf),
    Stdin,
    /// A member of the input's archive (read in one pass over the archive).
    Member(String),
}

#[derive(Debug, Clone)]
pub(crate) struct NodeName {
    pub(crate) name: String,
    pub(crate) from: String,
    /// Given with `--node`: wins over the host names a journal carries.
    pub(crate) forced: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct Stream {
    pub(crate) label: String,
    pub(crate) open: Opener,
    pub(crate) node: Option<NodeName>,
    /// The stream is one boot (a results folder's `boot-<n>.log`) with what repro recorded.
    pub(crate) boot: Option<(u32, Recorded)>,
    pub(crate) size: Option<u64>,
    /// Named on the command line: a file that cannot be read is an error, not a skipped file.
    pub(crate) named: bool,
}

/// One config file's text, for a node (and a boot, for results folders).
#[derive(Debug, Clone)]
pub(crate) struct ConfigFile {
    pub(crate) node: String,
    pub(crate) boot: Option<u32>,
    pub(crate) label: String,
    pub(crate) text: String,
    /// `yaml` (config.yaml and drop-ins) or `unit` (a systemd unit's ExecStart flags).
    pub(crate) kind: ConfigKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConfigKind {
    Yaml,
    Unit,
}

#[derive(Debug, Clone)]
pub(crate) struct Input {
    pub(crate) path: String,
    pub(crate) kind: InputKind,
    pub(crate) streams: Vec<Stream>,
    pub(crate) configs: Vec<ConfigFile>,
    /// Logs written by repro itself: whole by construction.
    pub(crate) trusted: bool,
    /// The archive the streams are members of.
    pub(crate) archive: Option<PathBuf>,
    pub(crate) notes: Vec<String>,
    /// Files passed over, with why.
    pub(crate) skipped: Vec<(String, String)>,
}

impl Input {
    fn new(path: &str, kind: InputKind) -> Input {
        Input {
            path: path.to_string(),
            kind,
            streams: Vec::new(),
            configs: Vec::new(),
            trusted: false,
            archive: None,
            notes: Vec::new(),
            skipped: Vec::new(),
        }
    }
}

/// Bad input: the message names the file and says what would be valid (a diagnostic without a
/// position: the file is named in the message, as it was typed).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InputError(pub(crate) Diagnostic);

impl InputError {
    pub(crate) fn new(message: impl Into<String>) -> InputError {
        InputError(Diagnostic::usage(message))
    }

    pub(crate) fn help(self, help: impl Into<String>) -> InputError {
        InputError(self.0.help(help))
    }
}

/// Everything named on the command line: the inputs, and the configs given with `--config`
/// (which apply to their node in every input).
#[derive(Debug)]
pub struct Resolved {
    pub(crate) inputs: Vec<Input>,
    pub(crate) configs: Vec<ConfigFile>,
}

/// Resolves everything named on the command line.
pub fn resolve(
    paths: &[PathBuf],
    nodes: &[(String, PathBuf)],
    configs: &[(String, PathBuf)],
) -> Result<Resolved, InputError> {
    let mut inputs = Vec::new();
    for p in paths {
        inputs.extend(resolve_one(p, None)?);
    }
    for (name, p) in nodes {
        let forced = NodeName {
            name: name.clone(),
            from: "--node".into(),
            forced: true,
        };
        inputs.extend(resolve_one(p, Some(forced))?);
    }
    if inputs.is_empty() {
        return Err(InputError::new(
            "nothing to inspect: name a log file, a folder, a results folder or bundle, or `-` for standard input",
        ));
    }
    let configs = configs
        .iter()
        .map(|(node, p)| read_config(p, node))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Resolved { inputs, configs })
}

fn read_config(p: &Path, node: &str) -> Result<ConfigFile, InputError> {
    let cannot =
        |e: std::io::Error| InputError::new(format!("{}: cannot read config: {e}", p.display()));
    // Named by the user: any readable file (a pipe too), but never more than SMALL bytes.
    let mut bytes = Vec::new();
    fs::File::open(p)
        .and_then(|f| f.take(SMALL + 1).read_to_end(&mut bytes))
        .map_err(cannot)?;
    if bytes.len() as u64 > SMALL {
        return Err(InputError::new(format!(
            "{}: a config file larger than {} MiB is not a k3s config",
            p.display(),
            SMALL / 1024 / 1024
        )));
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let kind = if p.extension().is_some_and(|x| x == "service") {
        ConfigKind::Unit
    } else {
        ConfigKind::Yaml
    };
    Ok(ConfigFile {
        node: node.to_string(),
        boot: None,
        label: p.display().to_string(),
        text,
        kind,
    })
}

fn read_small(p: &Path) -> std::io::Result<String> {
    // A regular file only (a pipe would block, a device never end), never more than SMALL bytes
    // even if it grows while read (`safe_fs`).
    let bytes = safe_fs::read_named(p, SMALL).map_err(|e| match e {
        safe_fs::ReadError::Io { source, .. } => source,
        other => std::io::Error::other(other.reason()),
    })?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn resolve_one(p: &Path, forced: Option<NodeName>) -> Result<Vec<Input>, InputError> {
    let shown = p.display().to_string();
    if shown == "-" {
        let mut input = Input::new("-", InputKind::Stdin);
        input.streams.push(Stream {
            label: STDIN_LABEL.into(),
            open: Opener::Stdin,
            node: forced.or(Some(NodeName {
                name: "stdin".into(),
                from: "standard input".into(),
                forced: false,
            })),
            boot: None,
            size: None,
            named: true,
        });
        return Ok(vec![input]);
    }
    let meta = fs::metadata(p).map_err(|e| {
        InputError::new(format!("{shown}: cannot read: {e}")).help(
            "name a log file, a folder of logs, a repro results folder or bundle.tar.gz, or `-` for standard input",
        )
    })?;
    if meta.is_dir() {
        let tree = FsTree {
            root: p.to_path_buf(),
        };
        let mut input = Input::new(&shown, InputKind::Folder);
        let own_name = folder_name(p);
        classify(&tree, "", 0, &own_name, &mut input, forced.as_ref());
        let mut nested = Vec::new();
        for a in tree_archives(&tree, "", 0) {
            nested.extend(resolve_one(&p.join(&a), forced.clone())?);
        }
        if input.streams.is_empty() && nested.is_empty() {
            return Err(InputError::new(format!(
                "{shown}: no log files found in this folder{}",
                skipped_note(&input)
            ))
            .help("name the log files themselves, or a folder holding them"));
        }
        let mut out = Vec::new();
        if !input.streams.is_empty() {
            out.push(input);
        }
        out.extend(nested);
        return Ok(out);
    }
    if is_tar(p) {
        return resolve_archive(p, forced).map(|i| vec![i]);
    }
    if let (Some(c), None) = (component_log(&file_name(p)), &forced) {
        let d = distro::Distro::ALL
            .iter()
            .map(|d| format!("journalctl -u {}", d.facts().units.join(" / -u ")))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(InputError::new(format!(
            "{shown}: {c}'s own log, not k3s's or RKE2's: it has no banner and none of the lines the signals read"
        ))
        .help(format!(
            "give the distribution's log ({d}, or its --log file); --node NAME={shown} reads it anyway"
        )));
    }
    // A single log file (plain or gzip).
    let mut input = Input::new(&shown, InputKind::Log);
    let node = forced.unwrap_or_else(|| {
        let parent = p.parent().map(folder_name).unwrap_or_default();
        node_from_file(&file_name(p), &parent)
    });
    input.streams.push(Stream {
        label: shown.clone(),
        open: Opener::File(p.to_path_buf()),
        node: Some(node.clone()),
        boot: None,
        size: Some(meta.len()),
        named: true,
    });
    if let Some(dir) = p.parent() {
        let tree = FsTree {
            root: dir.to_path_buf(),
        };
        let logs_beside = tree
            .children("")
            .iter()
            .filter(|(n, is_dir)| !is_dir && log_candidate(n))
            .count();
        for c in configs_beside(&tree, "", &file_name(p), logs_beside <= 1) {
            input.configs.push(ConfigFile {
                node: node.name.clone(),
                ..c
            });
        }
    }
    Ok(vec![input])
}

fn skipped_note(input: &Input) -> String {
    if input.skipped.is_empty() {
        return String::new();
    }
    let list: Vec<String> = input
        .skipped
        .iter()
        .take(5)
        .map(|(f, why)| format!("{f} ({why})"))
        .collect();
    format!(" (passed over: {})", list.join(", "))
}

fn is_tar(p: &Path) -> bool {
    let n = file_name(p);
    n.ends_with(".tar.gz") || n.ends_with(".tgz") || n.ends_with(".tar")
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn folder_name(p: &Path) -> String {
    let abs = fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    file_name(&abs)
}

/// A file or archive tree, so folders and archives are read by the same rules.
trait Tree {
    /// (name, is folder), sorted by name.
    fn children(&self, dir: &str) -> Vec<(String, bool)>;
    fn is_file(&self, path: &str) -> bool;
    fn is_dir(&self, path: &str) -> bool;
    fn small(&self, path: &str) -> Option<String>;
    fn size(&self, path: &str) -> Option<u64>;
    fn opener(&self, path: &str) -> Opener;
    fn label(&self, path: &str) -> String;
    /// Entries that are neither regular files nor folders (symlinks, devices): skipped.
    fn odd(&self, _dir: &str) -> Vec<String> {
        Vec::new()
    }
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

struct FsTree {
    root: PathBuf,
}

impl FsTree {
    fn path(&self, p: &str) -> PathBuf {
        if p.is_empty() {
            self.root.clone()
        } else {
            self.root.join(p)
        }
    }
}

impl Tree for FsTree {
    fn children(&self, dir: &str) -> Vec<(String, bool)> {
        let Ok(rd) = fs::read_dir(self.path(dir)) else {
            return Vec::new();
        };
        let mut out: Vec<(String, bool)> = rd
            .filter_map(Result::ok)
            .filter_map(|e| {
                let t = e.file_type().ok()?;
                (t.is_file() || t.is_dir())
                    .then(|| (e.file_name().to_string_lossy().into_owned(), t.is_dir()))
            })
            .collect();
        out.sort();
        out
    }

    fn odd(&self, dir: &str) -> Vec<String> {
        let Ok(rd) = fs::read_dir(self.path(dir)) else {
            return Vec::new();
        };
        let mut out: Vec<String> = rd
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| !t.is_file() && !t.is_dir()))
            .map(|e| join(dir, &e.file_name().to_string_lossy()))
            .collect();
        out.sort();
        out
    }

    fn is_file(&self, path: &str) -> bool {
        fs::symlink_metadata(self.path(path)).is_ok_and(|m| m.is_file())
    }

    fn is_dir(&self, path: &str) -> bool {
        fs::symlink_metadata(self.path(path)).is_ok_and(|m| m.is_dir())
    }

    fn small(&self, path: &str) -> Option<String> {
        if !self.is_file(path) {
            return None;
        }
        read_small(&self.path(path)).ok()
    }

    fn size(&self, path: &str) -> Option<u64> {
        fs::symlink_metadata(self.path(path)).ok().map(|m| m.len())
    }

    fn opener(&self, path: &str) -> Opener {
        Opener::File(self.path(path))
    }

    fn label(&self, path: &str) -> String {
        self.path(path).display().to_string()
    }
}

/// An archive's listing, with the small files it holds already read.
struct ArchiveTree {
    archive: PathBuf,
    /// path -> (size, content when small and wanted)
    files: BTreeMap<String, (u64, Option<String>)>,
}

impl ArchiveTree {
    fn dirs_of(&self) -> Vec<String> {
        let mut dirs: Vec<String> = Vec::new();
        for p in self.files.keys() {
            let mut d = p.as_str();
            while let Some((parent, _)) = d.rsplit_once('/') {
                if !dirs.iter().any(|x| x == parent) {
                    dirs.push(parent.to_string());
                }
                d = parent;
            }
        }
        dirs
    }
}

impl Tree for ArchiveTree {
    fn children(&self, dir: &str) -> Vec<(String, bool)> {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let mut out: Vec<(String, bool)> = Vec::new();
        for p in self.files.keys() {
            let Some(rest) = p.strip_prefix(&prefix) else {
                continue;
            };
            let (name, is_dir) = match rest.split_once('/') {
                Some((d, _)) => (d.to_string(), true),
                None => (rest.to_string(), false),
            };
            if !name.is_empty() && !out.iter().any(|(n, _)| *n == name) {
                out.push((name, is_dir));
            }
        }
        out.sort();
        out
    }

    fn is_file(&self, path: &str) -> bool {
        self.files.contains_key(path)
    }

    fn is_dir(&self, path: &str) -> bool {
        self.dirs_of().iter().any(|d| d == path)
    }

    fn small(&self, path: &str) -> Option<String> {
        self.files.get(path).and_then(|(_, c)| c.clone())
    }

    fn size(&self, path: &str) -> Option<u64> {
        self.files.get(path).map(|(s, _)| *s)
    }

    fn opener(&self, path: &str) -> Opener {
        Opener::Member(path.to_string())
    }

    fn label(&self, path: &str) -> String {
        format!("{}!{path}", self.archive.display())
    }
}

/// Files worth reading whole from an archive (configs, records, names).
fn wanted_small(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name == RESULT_FILE
        || name == "hostname"
        || name.ends_with(".yaml")
        || name.ends_with(".yml")
        || name.ends_with(".service")
}

/// Opens an archive (gzip or plain tar).
pub(crate) fn open_archive(p: &Path) -> std::io::Result<tar::Archive<Box<dyn Read>>> {
    let f = fs::File::open(p)?;
    let mut head = [0u8; 2];
    let mut f2 = fs::File::open(p)?;
    let n = f2.read(&mut head)?;
    let r: Box<dyn Read> = if n == 2 && head == [0x1f, 0x8b] {
        Box::new(flate2::read::GzDecoder::new(std::io::BufReader::new(f)))
    } else {
        Box::new(std::io::BufReader::new(f))
    };
    Ok(tar::Archive::new(r))
}

fn resolve_archive(p: &Path, forced: Option<NodeName>) -> Result<Input, InputError> {
    let shown = p.display().to_string();
    let bad = |e: std::io::Error| {
        InputError::new(format!("{shown}: cannot read as a tar archive: {e}")).help(
            "give a .tar.gz/.tgz/.tar as repro bundles or rancher's log collector write them, or unpack it and name the folder",
        )
    };
    let mut ar = open_archive(p).map_err(bad)?;
    let mut files = BTreeMap::new();
    for entry in ar.entries().map_err(bad)? {
        let mut e = entry.map_err(bad)?;
        if e.header().entry_type() != tar::EntryType::Regular {
            continue;
        }
        let path = e
            .path()
            .map_err(bad)?
            .to_string_lossy()
            .trim_start_matches("./")
            .to_string();
        let size = e.header().size().unwrap_or(0);
        let content = if wanted_small(&path) && size <= SMALL {
            let mut buf = Vec::new();
            e.read_to_end(&mut buf).map_err(bad)?;
            Some(String::from_utf8_lossy(&buf).into_owned())
        } else {
            None
        };
        files.insert(path, (size, content));
    }
    let tree = ArchiveTree {
        archive: p.to_path_buf(),
        files,
    };
    let mut input = Input::new(&shown, InputKind::Archive);
    input.archive = Some(p.to_path_buf());
    let own = file_name(p)
        .trim_end_matches(".tar.gz")
        .trim_end_matches(".tgz")
        .trim_end_matches(".tar")
        .to_string();
    classify(&tree, "", 0, &own, &mut input, forced.as_ref());
    if input.kind == InputKind::ReproResults {
        input.kind = InputKind::ReproBundle;
    }
    if input.streams.is_empty() {
        return Err(InputError::new(format!(
            "{shown}: no log files found in this archive{}",
            skipped_note(&input)
        )));
    }
    Ok(input)
}

/// Archives inside a folder are inputs of their own (e.g. a folder of collector tarballs).
fn tree_archives(tree: &FsTree, dir: &str, depth: usize) -> Vec<String> {
    let mut out = Vec::new();
    if depth > MAX_DEPTH || is_results(tree, dir) || is_collector(tree, dir) {
        return out;
    }
    for (name, is_dir) in tree.children(dir) {
        let path = join(dir, &name);
        if is_dir {
            out.extend(tree_archives(tree, &path, depth + 1));
        } else if is_tar(Path::new(&name)) && !(name == BUNDLE_FILE && is_results(tree, dir)) {
            out.push(path);
        }
    }
    out
}

fn is_results(tree: &dyn Tree, dir: &str) -> bool {
    tree.is_file(&join(dir, RESULT_FILE)) && tree.is_dir(&join(dir, NODES_DIR))
}

fn is_collector(tree: &dyn Tree, dir: &str) -> bool {
    tree.is_dir(&join(dir, "journald"))
        && (tree.is_dir(&join(dir, "systeminfo"))
            || distro::Distro::ALL
                .iter()
                .any(|d| tree.is_dir(&join(dir, d.facts().binary))))
}

/// Reads a folder (of files or of an archive) by the first layout that fits.
fn classify(
    tree: &dyn Tree,
    dir: &str,
    depth: usize,
    own_name: &str,
    input: &mut Input,
    forced: Option<&NodeName>,
) {
    if is_results(tree, dir) {
        results(tree, dir, input, forced);
        return;
    }
    if is_collector(tree, dir) {
        collector(tree, dir, own_name, input, forced);
        return;
    }
    for odd in tree.odd(dir) {
        input.skipped.push((
            tree.label(&odd),
            "not a regular file (links are not followed)".into(),
        ));
    }
    let children = tree.children(dir);
    let logs: Vec<&String> = children
        .iter()
        .filter(|(n, d)| !d && log_candidate(n))
        .map(|(n, _)| n)
        .collect();
    for (name, is_dir) in &children {
        let path = join(dir, name);
        if *is_dir {
            if depth < MAX_DEPTH {
                classify(tree, &path, depth + 1, name, input, forced);
            }
            continue;
        }
        if !log_candidate(name) {
            if let Some(c) = component_log(name) {
                input.skipped.push((
                    tree.label(&path),
                    format!("{c}'s own log, not the distribution's"),
                ));
            } else if !is_config_name(name) && !is_tar(Path::new(name)) {
                input
                    .skipped
                    .push((tree.label(&path), "not a log file by its name".into()));
            }
            continue;
        }
        let node = forced
            .cloned()
            .unwrap_or_else(|| node_from_file(name, own_name));
        input.streams.push(Stream {
            label: tree.label(&path),
            open: tree.opener(&path),
            node: Some(node.clone()),
            boot: None,
            size: tree.size(&path),
            named: false,
        });
        for c in configs_beside(tree, dir, name, logs.len() == 1) {
            input.configs.push(ConfigFile {
                node: node.name.clone(),
                ..c
            });
        }
    }
}

/// The logs of the components k3s and RKE2 run, by the names they write them under
/// (`agent/containerd/containerd.log`, RKE2's `agent/logs/kubelet.log`, rotated copies too):
/// the component's name. They hold none of the distribution's own lines — no banner, no
/// feature's line — so a node named after them would be a node that does not exist.
fn component_log(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    [("containerd", "containerd"), ("kubelet", "the kubelet")]
        .into_iter()
        .find(|(stem, _)| {
            lower
                .strip_prefix(stem)
                .is_some_and(|rest| rest.starts_with(".log") || rest.starts_with("-20"))
        })
        .map(|(_, c)| c)
}

/// Names that are not logs: configs, reports, pictures, archives (read separately), the logs of
/// components (`component_log`).
fn log_candidate(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    if lower.starts_with('.') || component_log(&lower).is_some() {
        return false;
    }
    const NOT_LOGS: [&str; 20] = [
        ".yaml", ".yml", ".json", ".html", ".htm", ".md", ".xml", ".png", ".jpg", ".jpeg", ".gif",
        ".svg", ".pdf", ".tar", ".tgz", ".zip", ".service", ".toml", ".pem", ".crt",
    ];
    !NOT_LOGS.iter().any(|x| lower.ends_with(x)) && !lower.ends_with(".tar.gz")
}

fn is_config_name(name: &str) -> bool {
    name.ends_with(".yaml") || name.ends_with(".yml")
}

/// Generic log file names: the node is named after the folder instead.
/// A distribution's own names (`k3s`, `k3s-agent`, `rke2-server`…) are generic too: see
/// [`is_generic`].
const GENERIC: [&str; 12] = [
    "journal", "journald", "log", "logs", "messages", "syslog", "output", "server", "agent",
    "docker", "stdout", "stderr",
];

/// Whether a file stem says nothing of the node: a generic name, or a distribution's binary, unit
/// or service name (`k3s`, `k3s-agent`, `k3s-server`, `k3s-service`, `rke2-server`…).
fn is_generic(stem: &str) -> bool {
    GENERIC.contains(&stem)
        || distro::Distro::ALL.iter().any(|d| {
            let f = d.facts();
            stem == f.binary
                || f.units.contains(&stem)
                || ["-server", "-agent", "-service"]
                    .iter()
                    .any(|s| stem.strip_prefix(f.binary) == Some(s))
        })
}

fn node_from_file(name: &str, folder: &str) -> NodeName {
    let mut stem = name.to_string();
    for ext in [".gz", ".log", ".txt", ".journal", ".out"] {
        if let Some(s) = stem.strip_suffix(ext) {
            stem = s.to_string();
        }
    }
    if is_generic(&stem.to_ascii_lowercase()) && !folder.is_empty() {
        return NodeName {
            name: folder.to_string(),
            from: "folder name".into(),
            forced: false,
        };
    }
    NodeName {
        name: stem,
        from: "file name".into(),
        forced: false,
    }
}

/// Config files beside a log: `<stem>.config.yaml`, `<stem>-config.yaml`, and `config.yaml`
/// (plus `config.yaml.d/`) when the log is the only one in its folder. Not `<stem>.yaml`: a
/// YAML file named like the log is as likely notes about it as its config.
fn configs_beside(tree: &dyn Tree, dir: &str, log_name: &str, lone: bool) -> Vec<ConfigFile> {
    let stem = log_name
        .trim_end_matches(".gz")
        .trim_end_matches(".log")
        .trim_end_matches(".txt");
    let mut names: Vec<String> = ["config.yaml", "config.yml"]
        .iter()
        .map(|x| format!("{stem}.{x}"))
        .collect();
    names.push(format!("{stem}-config.yaml"));
    if lone {
        names.push("config.yaml".into());
    }
    let mut out = Vec::new();
    for n in names {
        let path = join(dir, &n);
        if let Some(text) = tree.small(&path) {
            out.push(yaml(tree, &path, text));
        }
    }
    if lone {
        let d = join(dir, "config.yaml.d");
        for (n, is_dir) in tree.children(&d) {
            if !is_dir && is_config_name(&n) {
                let path = join(&d, &n);
                if let Some(text) = tree.small(&path) {
                    out.push(yaml(tree, &path, text));
                }
            }
        }
    }
    out
}

fn yaml(tree: &dyn Tree, path: &str, text: String) -> ConfigFile {
    ConfigFile {
        node: String::new(),
        boot: None,
        label: tree.label(path),
        text,
        kind: ConfigKind::Yaml,
    }
}

/// repro's results folder: one stream per boot, with what repro recorded about it.
fn results(tree: &dyn Tree, dir: &str, input: &mut Input, forced: Option<&NodeName>) {
    input.kind = InputKind::ReproResults;
    input.trusted = true;
    let record: Option<serde_json::Value> = tree
        .small(&join(dir, RESULT_FILE))
        .and_then(|t| serde_json::from_str(&t).ok());
    let Some(record) = record else {
        input.notes.push(format!(
            "{}: not readable as result.json; boots are split at banners instead",
            tree.label(&join(dir, RESULT_FILE))
        ));
        input.trusted = false;
        for (node, is_dir) in tree.children(&join(dir, NODES_DIR)) {
            if is_dir {
                plain_node_folder(tree, &join(dir, &format!("nodes/{node}")), &node, input);
            }
        }
        return;
    };
    if record["k3s"]["stand_in"].as_bool() == Some(true) {
        input.notes.push(
            "these logs come from repro's k3s stand-in, not from real k3s: a match says repro works, not that k3s has the bug"
                .into(),
        );
    }
    let boots = record["boots"].as_array().cloned().unwrap_or_default();
    for b in &boots {
        let (Some(node), Some(n), Some(log)) =
            (b["node"].as_str(), b["boot"].as_u64(), b["log"].as_str())
        else {
            continue;
        };
        let path = join(dir, log);
        if !tree.is_file(&path) {
            input
                .notes
                .push(format!("{node} boot {n}: {log} is missing"));
            continue;
        }
        let step = b["step"].as_u64().map(|s| s as usize);
        let rec = recorded(b, &tree.label(&path));
        let name = forced.cloned().unwrap_or(NodeName {
            name: node.to_string(),
            from: "results folder".into(),
            forced: true,
        });
        input.streams.push(Stream {
            label: tree.label(&path),
            open: tree.opener(&path),
            node: Some(name),
            boot: Some((n as u32, rec)),
            size: tree.size(&path),
            named: false,
        });
        if let Some(step) = step {
            let cfg = join(dir, &folder::config_step(node, step));
            if let Some(text) = tree.small(&cfg) {
                input.configs.push(ConfigFile {
                    node: node.to_string(),
                    boot: Some(n as u32),
                    label: tree.label(&cfg),
                    text,
                    kind: ConfigKind::Yaml,
                });
            }
        }
    }
}

/// A `nodes/<node>/` folder without a usable record: its boot logs in order.
fn plain_node_folder(tree: &dyn Tree, dir: &str, node: &str, input: &mut Input) {
    let mut logs: Vec<(u32, String)> = tree
        .children(dir)
        .into_iter()
        .filter_map(|(n, d)| {
            let num = n
                .strip_prefix("boot-")?
                .strip_suffix(".log")?
                .parse()
                .ok()?;
            (!d).then_some((num, n))
        })
        .collect();
    logs.sort();
    for (_, n) in logs {
        let path = join(dir, &n);
        input.streams.push(Stream {
            label: tree.label(&path),
            open: tree.opener(&path),
            node: Some(NodeName {
                name: node.to_string(),
                from: "results folder".into(),
                forced: true,
            }),
            boot: None,
            size: tree.size(&path),
            named: false,
        });
    }
}

/// What result.json says about a boot: how it ended and until when repro watched its log.
fn recorded(b: &serde_json::Value, label: &str) -> Recorded {
    let ended_at: Option<DateTime<Utc>> = b["ended_at"]
        .as_str()
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc));
    let kind = match b["end"].as_str() {
        Some("stopped") => Some(EndKind::Stopped),
        Some("exited") => Some(EndKind::Died {
            exit_code: b["exit_code"].as_i64(),
        }),
        _ => None,
    };
    let end = kind.map(|kind| {
        let text = match &kind {
            EndKind::Died { exit_code } => format!(
                "repro recorded: the container exited on its own with code {}",
                exit_code.map_or("?".to_string(), |c| c.to_string())
            ),
            _ => "repro recorded: the container was stopped by repro".to_string(),
        };
        End {
            kind,
            ts: ended_at,
            evidence: Some(Kept {
                file: usize::MAX,
                line: 0,
                ts: ended_at,
                exact: true,
                text: format!("{text} ({label})"),
            }),
            source: Source::Record,
        }
    });
    Recorded {
        end,
        watched_until: ended_at,
    }
}

/// A node's folder as rancher's log collector writes it.
fn collector(
    tree: &dyn Tree,
    dir: &str,
    own_name: &str,
    input: &mut Input,
    forced: Option<&NodeName>,
) {
    input.kind = InputKind::LogCollector;
    let name = forced.cloned().unwrap_or_else(|| {
        match tree
            .small(&join(dir, "systeminfo/hostname"))
            .and_then(|t| t.lines().next().map(|l| l.trim().to_string()))
            .filter(|h| !h.is_empty())
        {
            // A collection is one node's: its name wins over the host names in its journal.
            Some(h) => NodeName {
                name: h,
                from: "systeminfo/hostname".into(),
                forced: true,
            },
            None => NodeName {
                name: strip_date(own_name),
                from: "folder name".into(),
                forced: true,
            },
        }
    });
    let mut found = false;
    // The collector names each journal after its unit (journald/k3s, journald/rke2-server…).
    for unit in distro::Distro::ALL.iter().flat_map(|d| d.facts().units) {
        let path = join(dir, &format!("journald/{unit}"));
        if tree.is_file(&path) {
            found = true;
            input.streams.push(Stream {
                label: tree.label(&path),
                open: tree.opener(&path),
                node: Some(name.clone()),
                boot: None,
                size: tree.size(&path),
                named: false,
            });
        }
    }
    if !found {
        input.notes.push(format!(
            "{}: a log collector folder without a distribution's journal (journald/k3s, journald/k3s-agent, …)",
            tree.label(dir)
        ));
    }
    // The collector's copy of the distribution's config folder (k3s/, rke2/).
    let k3s = distro::Distro::ALL
        .iter()
        .map(|d| join(dir, d.facts().binary))
        .find(|p| tree.is_dir(p))
        .unwrap_or_else(|| join(dir, distro::Distro::default().facts().binary));
    let mut yamls: Vec<String> = tree
        .children(&k3s)
        .into_iter()
        .filter(|(n, d)| !d && is_config_name(n))
        .map(|(n, _)| n)
        .collect();
    // config.yaml first, then the drop-ins (copied beside it) in k3s's alphabetical order.
    yamls.sort_by_key(|n| (n != "config.yaml", n.clone()));
    for n in yamls {
        let path = join(&k3s, &n);
        if let Some(text) = tree.small(&path) {
            input.configs.push(ConfigFile {
                node: name.name.clone(),
                ..yaml(tree, &path, text)
            });
        }
    }
    for n in ["k3s.service", "k3s-agent.service"] {
        let path = join(&k3s, n);
        if let Some(text) = tree.small(&path) {
            input.configs.push(ConfigFile {
                node: name.name.clone(),
                boot: None,
                label: tree.label(&path),
                text,
                kind: ConfigKind::Unit,
            });
        }
    }
}

/// `node1-2024-05-01_10_00_00` → `node1`.
fn strip_date(name: &str) -> String {
    static DATE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"[-_.]\d{4}-?\d{2}-?\d{2}(?:[-_T.]?\d{2}[-_:]?\d{2}(?:[-_:]?\d{2})?)?.*$",
        )
        .expect("static regex")
    });
    let s = DATE.replace(name, "").into_owned();
    if s.is_empty() {
        name.to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_names_from_files_and_folders() {
        assert_eq!(node_from_file("etcd-2.log", "logs").name, "etcd-2");
        assert_eq!(node_from_file("server-1.txt.gz", "x").name, "server-1");
        let n = node_from_file("k3s.log", "node-a");
        assert_eq!(
            (n.name.as_str(), n.from.as_str()),
            ("node-a", "folder name")
        );
        assert_eq!(node_from_file("journal", "n2").name, "n2");
        assert_eq!(strip_date("node1-2024-05-01_10_00_00"), "node1");
        assert_eq!(strip_date("ip-10-0-0-1-20240501100000"), "ip-10-0-0-1");
        assert_eq!(strip_date("plain"), "plain");
    }

    #[test]
    fn log_candidates_by_name() {
        for n in ["k3s", "etcd-1.log", "journal.txt", "k3s.log.gz"] {
            assert!(log_candidate(n), "{n}");
        }
        for n in [
            "config.yaml",
            "result.json",
            "report.md",
            "bundle.tar.gz",
            ".hidden",
            "k3s.service",
        ] {
            assert!(!log_candidate(n), "{n}");
        }
    }
}
