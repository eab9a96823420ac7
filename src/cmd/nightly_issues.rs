//! `repro nightly-issues <merged summary.json>`: opens, updates, reopens and closes the nightly's
//! GitHub issues (one per check and release line) through the `gh` CLI, which the workflow has
//! with `GH_TOKEN`. Only issues with the label are read or touched, and each is found by its
//! exact title, so a second night never opens a second issue.
//!
//! Exit codes: 0 done (including nothing to do), 2 the summary cannot be read, 3 `gh` failed.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};
use serde::Deserialize;

use crate::cli::{Global, NightlyIssuesArgs};
use crate::error::Error;
use crate::exit::Exit;
use crate::nightly::{self, Action, Existing, Health, RunLinks};

pub(crate) fn run(_g: &Global, a: &NightlyIssuesArgs) -> Result<Exit, Error> {
    let cells = crate::matrix::merge::cells_from_summary(&a.summary)
        .map_err(|e| Error::bad_input(e.to_string()))?;
    let links = RunLinks {
        run_url: a.run_url.clone().or_else(github_run_url),
        artifact_prefix: a.artifact_prefix.clone(),
    };
    let gh = Gh {
        program: a.gh.clone(),
        dry_run: a.dry_run,
    };
    // A failing `gh` (no token, no network) is infrastructure: exit 3 with its message.
    apply(&gh, &a.label, &nightly::groups(&cells), &links)
        .map_err(|e| Error::Other(e.context("nightly-issues")))?;
    Ok(Exit::Ok)
}

/// `$GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/$GITHUB_RUN_ID` inside GitHub Actions.
fn github_run_url() -> Option<String> {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    Some(format!(
        "{}/{}/actions/runs/{}",
        var("GITHUB_SERVER_URL")?,
        var("GITHUB_REPOSITORY")?,
        var("GITHUB_RUN_ID")?
    ))
}

fn apply(gh: &Gh, label: &str, groups: &[nightly::Group], links: &RunLinks) -> anyhow::Result<()> {
    // Green and unknown groups with no issue need no call at all; red ones need the list.
    let issues = gh.list(label)?;
    let mut label_made = false;
    for g in groups {
        let title = g.title();
        let matches: Vec<Existing> = issues
            .iter()
            .filter(|i| i.title == title)
            .map(|i| Existing {
                number: i.number,
                open: i.state.eq_ignore_ascii_case("open"),
            })
            .collect();
        let existing = nightly::pick(&matches);
        let old_body = match (&existing, g.health()) {
            (Some(e), Health::Red) if e.open => Some(gh.body(e.number)?),
            _ => None,
        };
        let action = nightly::decide(g, existing.as_ref(), old_body.as_deref(), links);
        if matches!(action, Action::Create { .. } | Action::Reopen { .. }) && !label_made {
            gh.ensure_label(label)?;
            label_made = true;
        }
        let what = match action {
            Action::Create { title, body } => {
                let url = gh.create(&title, label, &body)?;
                format!("opened {}", url.trim())
            }
            Action::Update {
                number,
                body,
                comment,
            } => {
                gh.edit(number, &body)?;
                if let Some(c) = &comment {
                    gh.comment(number, c)?;
                }
                format!(
                    "updated #{number}{}",
                    if comment.is_some() {
                        " (the differing cells changed: commented)"
                    } else {
                        ""
                    }
                )
            }
            Action::Reopen {
                number,
                body,
                comment,
            } => {
                gh.call(&["issue", "reopen", &number.to_string()])?;
                gh.edit(number, &body)?;
                gh.comment(number, &comment)?;
                format!("reopened #{number}")
            }
            Action::Close { number, comment } => {
                gh.call(&["issue", "close", &number.to_string(), "--comment", &comment])?;
                format!("closed #{number} (green again)")
            }
            Action::Nothing => match g.health() {
                Health::Green => "green, no open issue".to_string(),
                Health::Unknown => {
                    "no verdict to act on (inconclusive, broken or not run): left as is".to_string()
                }
                Health::Red => "nothing".to_string(),
            },
        };
        outln!("{} {}: {what}", g.check, g.line);
    }
    Ok(())
}

#[derive(Debug, Deserialize)]
struct Listed {
    number: u64,
    title: String,
    state: String,
}

/// The `gh` CLI. With `dry_run`, calls that change anything are printed instead of made.
struct Gh {
    program: PathBuf,
    dry_run: bool,
}

impl Gh {
    fn call(&self, args: &[&str]) -> anyhow::Result<String> {
        let writes = !matches!(
            (args.first(), args.get(1)),
            (Some(&"issue"), Some(&"list" | &"view"))
        );
        if self.dry_run && writes {
            outln!("(dry run) gh {}", args.join(" "));
            return Ok(String::new());
        }
        let out = Command::new(&self.program)
            .args(args)
            .output()
            .with_context(|| format!("cannot run {}", self.program.display()))?;
        if !out.status.success() {
            bail!(
                "`gh {}` failed ({}): {}",
                args.first().copied().unwrap_or_default(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn list(&self, label: &str) -> anyhow::Result<Vec<Listed>> {
        let text = self.call(&[
            "issue",
            "list",
            "--label",
            label,
            "--state",
            "all",
            "--limit",
            "500",
            "--json",
            "number,title,state",
        ])?;
        serde_json::from_str(&text)
            .with_context(|| format!("unexpected `gh issue list` output: {text}"))
    }

    fn body(&self, number: u64) -> anyhow::Result<String> {
        self.call(&[
            "issue",
            "view",
            &number.to_string(),
            "--json",
            "body",
            "--jq",
            ".body",
        ])
    }

    fn ensure_label(&self, label: &str) -> anyhow::Result<()> {
        self.call(&[
            "label",
            "create",
            label,
            "--color",
            "B60205",
            "--description",
            "Opened by repro's nightly: a regression or an unexpected fix",
            "--force",
        ])
        .map(drop)
    }

    fn create(&self, title: &str, label: &str, body: &str) -> anyhow::Result<String> {
        let f = BodyFile::new(body)?;
        self.call(&[
            "issue",
            "create",
            "--title",
            title,
            "--label",
            label,
            "--body-file",
            f.arg(),
        ])
    }

    fn edit(&self, number: u64, body: &str) -> anyhow::Result<()> {
        let f = BodyFile::new(body)?;
        self.call(&["issue", "edit", &number.to_string(), "--body-file", f.arg()])
            .map(drop)
    }

    fn comment(&self, number: u64, body: &str) -> anyhow::Result<()> {
        let f = BodyFile::new(body)?;
        self.call(&[
            "issue",
            "comment",
            &number.to_string(),
            "--body-file",
            f.arg(),
        ])
        .map(drop)
    }
}

/// A body handed to `gh` as a file (bodies hold newlines and backticks; argv would do, a file is
/// what `gh` documents), removed when dropped.
struct BodyFile {
    path: PathBuf,
    arg: String,
}

impl BodyFile {
    fn new(body: &str) -> anyhow::Result<BodyFile> {
        // Created new, 0600 (`O_EXCL`): a link planted in the shared temporary folder under a
        // guessable name is never written through.
        let (path, mut f) = crate::safe_fs::create_temp(&std::env::temp_dir(), "repro-nightly.md")?;
        std::io::Write::write_all(&mut f, body.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
        let arg = path.display().to_string();
        Ok(BodyFile { path, arg })
    }

    fn arg(&self) -> &str {
        &self.arg
    }
}

impl Drop for BodyFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(Path::new(&self.path));
    }
}
