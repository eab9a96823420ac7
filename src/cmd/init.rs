//! `repro init <name>`: a starter for a check of one's own (#32 item 3) — a commented check and
//! topology, and the shipped signals they use, in `checks/` and `topologies/` of the current
//! folder. A folder with `checks/signals.yaml` is a project folder (`catalog::find_root`), so
//! `repro validate`, `repro plan <name>` and `repro run <name>` find them there at once.

use std::io::Write;
use std::path::Path;

use crate::cli::InitArgs;
use crate::diag::Diagnostic;
use crate::error::Error;
use crate::exit::Exit;

const TOPOLOGY: &str = "\
# The cluster shape: its nodes, their roles, who joins whom (docs/file-formats.md, Topologies).
name: NAME
description: \"two servers: one creates the cluster, one joins it\"
k3s-version: v1.33.5+k3s1          # the default version; --version on the command line wins
files:
  registries.yaml: |               # relative: under the distribution's config folder
    mirrors:                       # (the embedded registry starts only with a mirror)
      docker.io: {}
nodes:
  - {name: server-1, role: all, init: true}       # roles: all, etcd, control-plane, agent
  - {name: server-2, role: all, join: server-1}
";

const CHECK: &str = "\
# A reproduction: ordered steps, each edits config, (re)starts nodes and says what must hold
# (docs/file-formats.md, Checks). `repro validate` says what is wrong, with line and column.
name: NAME
topology: NAME
summary: what this check shows, in one line
issue: https://github.com/k3s-io/k3s/issues/NNNNN   # the issue it reproduces
# fixed-in: [v1.33.5+k3s1]    # first fixed release per line: --expect auto then predicts
steps:
  - name: enable embedded-registry on server-2 and restart it
    config:
      server-2: {embedded-registry: true}
    restart: [server-2]
    expect:                     # the correct behaviour, per node and signal (checks/signals.yaml)
      server-2: {ready: up, embedded-registry: up}
    # bug:                      # only what the documented bug changes; `any` where it cannot tell
    #   server-2: {embedded-registry: down}
";

pub(crate) fn run(args: &InitArgs) -> Result<Exit, Error> {
    let name = &args.name;
    let valid = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-');
    if !valid {
        return Err(Diagnostic::general(
            format!("`{name}` is not a check name"),
            "lower-case letters, digits and `-`, e.g. my-bug",
        )
        .into());
    }
    let signals = crate::catalog::builtin("checks/signals.yaml")
        .ok_or_else(|| anyhow::anyhow!("the shipped checks/signals.yaml is not built in"))?;
    let files = [
        (
            format!("topologies/{name}.yaml"),
            TOPOLOGY.replace("NAME", name),
        ),
        (format!("checks/{name}.yaml"), CHECK.replace("NAME", name)),
        ("checks/signals.yaml".to_string(), signals.to_string()),
    ];
    // Nothing is overwritten, and nothing is written unless all of it can be.
    let taken: Vec<&str> = (files.iter())
        .filter(|(p, _)| Path::new(p).exists())
        .map(|(p, _)| p.as_str())
        .filter(|p| *p != "checks/signals.yaml")
        .collect();
    if !taken.is_empty() {
        return Err(Diagnostic::general(
            format!(
                "{} already exist{}",
                taken.join(" and "),
                if taken.len() == 1 { "s" } else { "" }
            ),
            "choose another name, or edit the files there",
        )
        .into());
    }
    for (path, text) in &files {
        let path = Path::new(path);
        if path.exists() {
            continue; // an existing signals.yaml is the project's own: kept
        }
        write_new(path, text)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
        errln!("repro: wrote {}", path.display());
    }
    errln!("repro: next: repro validate, then repro plan {name} (and repro run {name} --sim)");
    Ok(Exit::Ok)
}

/// A new file (never one that exists, nor through a link planted there).
fn write_new(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    f.write_all(text.as_bytes())
}
