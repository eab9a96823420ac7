//! What the nightly tells people: one labelled GitHub issue per check and release line of a
//! distribution (k3s v1.33, rke2 v1.32), opened on a regression or an unexpected fix, updated
//! (never duplicated) while it lasts, closed when the line is green again. Pure decisions here; `cmd::nightly_issues` asks `gh`
//! for the existing issues and carries the actions out.

use std::fmt::Write as _;

use crate::matrix::{Cell, Status};
use distro::{Distro, Version};

/// The label every nightly issue carries (and the only issues this tool ever touches).
pub(crate) const DEFAULT_LABEL: &str = "repro-nightly";

/// The cells of one check on one release line (`v1.33`) of one distribution: k3s's and rke2's
/// v1.32 are different lines with different fixes.
#[derive(Debug, Clone)]
pub(crate) struct Group {
    pub(crate) check: String,
    /// Whose versions these are (a version no grammar reads is grouped as k3s's, by its text).
    pub(crate) distro: Distro,
    pub(crate) line: String,
    pub(crate) cells: Vec<Cell>,
}

/// How a group came out tonight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Health {
    /// A regression or an unexpected fix: a real difference people must hear of.
    Red,
    /// Every cell as expected.
    Green,
    /// Neither (inconclusive, broken, not run): nothing is opened or closed on that.
    Unknown,
}

impl Group {
    pub(crate) fn health(&self) -> Health {
        if self
            .cells
            .iter()
            .any(|c| matches!(c.status, Status::Regression | Status::UnexpectedFix))
        {
            Health::Red
        } else if !self.cells.is_empty() && self.cells.iter().all(|c| c.status == Status::Ok) {
            Health::Green
        } else {
            Health::Unknown
        }
    }

    /// The issue's title: stable, so tomorrow's run finds today's issue by it.
    pub(crate) fn title(&self) -> String {
        format!(
            "repro nightly: {} on {} {}",
            self.check, self.distro, self.line
        )
    }

    /// `v1.33.5+k3s1=regression` for every cell that differs: changes are worth a comment.
    pub(crate) fn state(&self) -> String {
        let red: Vec<String> = self
            .cells
            .iter()
            .filter(|c| matches!(c.status, Status::Regression | Status::UnexpectedFix))
            .map(|c| format!("{}={}", c.k3s_version, c.status.label().to_lowercase()))
            .collect();
        red.join(",")
    }
}

/// Groups a summary's cells by check and release line, in the summary's order.
pub(crate) fn groups(cells: &[Cell]) -> Vec<Group> {
    let mut out: Vec<Group> = Vec::new();
    for c in cells {
        let (distro, line) = match c.k3s_version.parse::<Version>() {
            Ok(v) => (v.distro, format!("v{}.{}", v.major, v.minor)),
            Err(_) => (Distro::default(), c.k3s_version.clone()),
        };
        match out
            .iter_mut()
            .find(|g| g.check == c.check && g.distro == distro && g.line == line)
        {
            Some(g) => g.cells.push(c.clone()),
            None => out.push(Group {
                check: c.check.clone(),
                distro,
                line,
                cells: vec![c.clone()],
            }),
        }
    }
    out
}

/// Where tonight's run and its artifacts are.
#[derive(Debug, Clone, Default)]
pub(crate) struct RunLinks {
    /// The workflow run's page, e.g. `https://github.com/o/r/actions/runs/123`.
    pub(crate) run_url: Option<String>,
    /// The artifact name of a cell is this prefix + `<check>-<version>` (as nightly.yml names it).
    pub(crate) artifact_prefix: String,
}

const STATE_MARK: &str = "<!-- repro-nightly-state: ";

/// The state recorded in an issue body by [`body`].
pub(crate) fn state_in(body: &str) -> Option<String> {
    let i = body.find(STATE_MARK)? + STATE_MARK.len();
    let rest = &body[i..];
    Some(rest[..rest.find(" -->")?].to_string())
}

/// The issue body: what differs, the table of the line, links to the run and each cell's
/// artifact, and how to re-run a cell locally.
pub(crate) fn body(g: &Group, links: &RunLinks) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{STATE_MARK}{} -->", g.state());
    let kinds: Vec<&str> = {
        let mut k = Vec::new();
        if g.cells.iter().any(|c| c.status == Status::Regression) {
            k.push("a **regression** (a release that should have the fix shows the bug)");
        }
        if g.cells.iter().any(|c| c.status == Status::UnexpectedFix) {
            k.push("an **unexpected fix** (a release its `fixed-in` calls buggy behaves correctly: the fix reached it, or `fixed-in` is wrong)");
        }
        k
    };
    let _ = writeln!(
        o,
        "The nightly run of repro check `{}` on the {} {} line shows {}.\n",
        g.check,
        g.distro,
        g.line,
        if kinds.is_empty() {
            "no difference tonight".to_string()
        } else {
            kinds.join(" and ")
        }
    );
    let _ = writeln!(
        o,
        "| {} version | expected | verdict | status | results |\n|---|---|---|---|---|",
        g.distro
    );
    for c in &g.cells {
        let status = if c.status == Status::Ok {
            c.status.label().to_string()
        } else {
            format!("**{}**", c.status.label())
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {status} | artifact `{}{}-{}` |",
            c.k3s_version,
            c.expected,
            c.verdict.map_or("—", |v| v.as_str()),
            links.artifact_prefix,
            c.check,
            c.k3s_version
        );
    }
    o.push('\n');
    let why: Vec<String> = g.cells.iter().filter_map(Cell::explain).collect();
    if !why.is_empty() {
        o.push_str("Why:\n\n");
        for w in why {
            let _ = writeln!(o, "- {w}");
        }
        o.push('\n');
    }
    match &links.run_url {
        Some(u) => {
            let _ = writeln!(
                o,
                "Run: {u} · artifacts: {u}#artifacts — each cell's artifact holds its `report.md` ({}'s bug template, evidence in words), `result.json`, `junit.xml`, `timeline.html` and the redacted `bundle.tar.gz` with every boot's log.\n",
                g.distro
            );
        }
        None => o.push_str("Run: (no run URL given)\n\n"),
    }
    let reruns: Vec<String> = g
        .cells
        .iter()
        .filter(|c| matches!(c.status, Status::Regression | Status::UnexpectedFix))
        .map(|c| {
            format!(
                "repro run {} --version {} --expect {}",
                c.check, c.k3s_version, c.expected
            )
        })
        .collect();
    if !reruns.is_empty() {
        let _ = writeln!(o, "Re-run locally:\n\n```sh\n{}\n```\n", reruns.join("\n"));
    }
    o.push_str(
        "_Opened and kept up to date by the nightly workflow (`repro nightly-issues`): it closes this issue when every version of the line shows its expected verdict again._\n",
    );
    o
}

/// An issue the nightly made before, as `gh issue list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Existing {
    pub(crate) number: u64,
    pub(crate) open: bool,
}

/// What to do for one group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    Create {
        title: String,
        body: String,
    },
    /// Refresh the body; comment only when the set of differing cells changed.
    Update {
        number: u64,
        body: String,
        comment: Option<String>,
    },
    /// A closed issue of this group fails again: reopen it rather than open a duplicate.
    Reopen {
        number: u64,
        body: String,
        comment: String,
    },
    Close {
        number: u64,
        comment: String,
    },
    Nothing,
}

/// Picks the issue of a group among the labelled ones with its title: the open one with the
/// lowest number (should a person have made a second, the first stays the one), else the most
/// recently closed.
pub(crate) fn pick(title_matches: &[Existing]) -> Option<Existing> {
    let open = title_matches
        .iter()
        .filter(|e| e.open)
        .min_by_key(|e| e.number);
    open.or_else(|| title_matches.iter().max_by_key(|e| e.number))
        .cloned()
}

/// Decides a group's action from tonight's health, its issue (if any) and that issue's body.
pub(crate) fn decide(
    g: &Group,
    existing: Option<&Existing>,
    old_body: Option<&str>,
    links: &RunLinks,
) -> Action {
    let run = links
        .run_url
        .clone()
        .unwrap_or_else(|| "tonight's run".to_string());
    match (g.health(), existing) {
        (Health::Red, None) => Action::Create {
            title: g.title(),
            body: body(g, links),
        },
        (Health::Red, Some(e)) if e.open => {
            let changed = old_body.and_then(state_in).as_deref() != Some(g.state().as_str());
            Action::Update {
                number: e.number,
                body: body(g, links),
                comment: changed.then(|| {
                    format!(
                        "The differing cells changed in {run}: {}.",
                        g.state().replace(',', ", ")
                    )
                }),
            }
        }
        (Health::Red, Some(e)) => Action::Reopen {
            number: e.number,
            body: body(g, links),
            comment: format!("Failing again in {run}: {}.", g.state().replace(',', ", ")),
        },
        (Health::Green, Some(e)) if e.open => {
            let versions: Vec<&str> = g.cells.iter().map(|c| c.k3s_version.as_str()).collect();
            Action::Close {
                number: e.number,
                comment: format!(
                    "Green again in {run}: every version of the {} line shows its expected verdict ({}).",
                    g.line,
                    versions.join(", ")
                ),
            }
        }
        _ => Action::Nothing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Outcome;

    fn outcome(s: &str) -> Outcome {
        serde_json::from_value(serde_json::Value::from(s)).expect("an outcome")
    }

    fn cell(version: &str, expected: &str, verdict: &str) -> Cell {
        let (expected, verdict) = (outcome(expected), outcome(verdict));
        Cell {
            check: "etcd-split".into(),
            k3s_version: version.into(),
            expected,
            expected_because: "fixed-in".into(),
            verdict: Some(verdict),
            status: Status::of(expected, Some(verdict)),
            seconds: 1.0,
            exit_code: Some(0),
            run_id: Some(format!("id-{version}")),
            results: None,
            stand_in: false,
            error: None,
        }
    }

    fn links() -> RunLinks {
        RunLinks {
            run_url: Some("https://github.com/o/r/actions/runs/7".into()),
            artifact_prefix: "results-".into(),
        }
    }

    #[test]
    fn groups_are_per_check_and_release_line() {
        let g = groups(&[
            cell("v1.32.9+k3s1", "fixed", "fixed"),
            cell("v1.33.4+k3s1", "reproduced", "reproduced"),
            cell("v1.33.5+k3s1", "fixed", "reproduced"),
        ]);
        assert_eq!(g.len(), 2);
        assert_eq!(g[1].title(), "repro nightly: etcd-split on k3s v1.33");
        assert_eq!(g[0].health(), Health::Green);
        assert_eq!(g[1].health(), Health::Red);
        assert_eq!(g[1].state(), "v1.33.5+k3s1=regression");
    }

    /// rke2's v1.32 line is not k3s's: its cells get an issue of their own, in rke2's words.
    #[test]
    fn rke2_cells_group_apart_from_k3s_cells_of_the_same_line() {
        let g = groups(&[
            cell("v1.32.9+k3s1", "fixed", "fixed"),
            cell("v1.32.8+rke2r1", "reproduced", "reproduced"),
            cell("v1.32.9+rke2r1", "fixed", "reproduced"),
        ]);
        assert_eq!(g.len(), 2, "{g:?}");
        assert_eq!(g[0].title(), "repro nightly: etcd-split on k3s v1.32");
        assert_eq!(g[0].health(), Health::Green);
        assert_eq!(g[1].title(), "repro nightly: etcd-split on rke2 v1.32");
        assert_eq!(g[1].health(), Health::Red);
        assert_eq!(g[1].state(), "v1.32.9+rke2r1=regression");
        let b = body(&g[1], &links());
        assert!(
            b.contains("The nightly run of repro check `etcd-split` on the rke2 v1.32 line shows a **regression**"),
            "{b}"
        );
        assert!(
            b.contains("| rke2 version | expected | verdict | status | results |"),
            "{b}"
        );
        assert!(
            b.contains("(rke2's bug template, evidence in words)"),
            "{b}"
        );
        assert!(
            b.contains("repro run etcd-split --version v1.32.9+rke2r1 --expect fixed"),
            "{b}"
        );
        assert!(!b.contains("k3s"), "{b}");
    }

    #[test]
    fn the_body_has_the_table_links_and_its_state() {
        let g = &groups(&[
            cell("v1.33.4+k3s1", "reproduced", "reproduced"),
            cell("v1.33.5+k3s1", "fixed", "reproduced"),
        ])[0];
        let b = body(g, &links());
        assert!(b.contains("| v1.33.5+k3s1 | fixed | reproduced | **REGRESSION** | artifact `results-etcd-split-v1.33.5+k3s1` |"), "{b}");
        assert!(
            b.contains("https://github.com/o/r/actions/runs/7#artifacts"),
            "{b}"
        );
        assert!(b.contains("repro run etcd-split --version v1.33.5+k3s1 --expect fixed"));
        assert_eq!(state_in(&b).as_deref(), Some("v1.33.5+k3s1=regression"));
    }

    #[test]
    fn decisions_open_update_reopen_close() {
        let red = &groups(&[cell("v1.33.5+k3s1", "fixed", "reproduced")])[0];
        let green = &groups(&[cell("v1.33.5+k3s1", "fixed", "fixed")])[0];
        let unknown = &groups(&[cell("v1.33.5+k3s1", "fixed", "inconclusive")])[0];
        let open = Existing {
            number: 4,
            open: true,
        };
        let closed = Existing {
            number: 4,
            open: false,
        };
        assert!(matches!(
            decide(red, None, None, &links()),
            Action::Create { .. }
        ));
        let same = body(red, &links());
        assert!(matches!(
            decide(red, Some(&open), Some(&same), &links()),
            Action::Update {
                number: 4,
                comment: None,
                ..
            }
        ));
        assert!(matches!(
            decide(red, Some(&open), Some("old body"), &links()),
            Action::Update {
                number: 4,
                comment: Some(_),
                ..
            }
        ));
        assert!(matches!(
            decide(red, Some(&closed), None, &links()),
            Action::Reopen { number: 4, .. }
        ));
        assert!(matches!(
            decide(green, Some(&open), None, &links()),
            Action::Close { number: 4, .. }
        ));
        assert_eq!(decide(green, None, None, &links()), Action::Nothing);
        assert_eq!(
            decide(green, Some(&closed), None, &links()),
            Action::Nothing
        );
        assert_eq!(
            decide(unknown, Some(&open), None, &links()),
            Action::Nothing
        );
    }

    #[test]
    fn the_open_issue_wins_over_closed_ones_and_duplicates() {
        let list = [
            Existing {
                number: 9,
                open: false,
            },
            Existing {
                number: 12,
                open: true,
            },
            Existing {
                number: 15,
                open: true,
            },
        ];
        assert_eq!(
            pick(&list),
            Some(Existing {
                number: 12,
                open: true
            })
        );
        assert_eq!(
            pick(&list[..1]),
            Some(Existing {
                number: 9,
                open: false
            })
        );
        assert_eq!(pick(&[]), None);
    }
}
