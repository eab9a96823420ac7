//! What the nightly tells people: one labelled GitHub issue per check and release line of a
//! distribution (k3s v1.33, rke2 v1.32), opened on a regression or an unexpected fix, updated
//! (never duplicated) while it lasts, closed when the line is green again. Pure decisions here; `cmd::nightly_issues` asks `gh`
//! for the existing issues and carries the actions out.

use std::fmt::Write as _;

use crate::matrix::{Cell, Status};
use crate::redact::Redactor;
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

    /// The issue's title: stable, so tomorrow's run finds today's issue by it. Public: the
    /// check and line come from summary.json, so they are redacted and put on one line.
    pub(crate) fn title(&self) -> String {
        let mut p = Public::new();
        format!(
            "repro nightly: {} on {} {}",
            p.plain(&self.check),
            self.distro,
            p.plain(&self.line)
        )
        .replace('@', "@\u{2060}")
    }

    /// `v1.33.5+k3s1=regression` for every cell that differs: changes are worth a comment.
    pub(crate) fn state(&self) -> String {
        let red: Vec<String> = self
            .cells
            .iter()
            .filter(|c| matches!(c.status, Status::Regression | Status::UnexpectedFix))
            .map(|c| format!("{}={}", c.k3s_version, c.status.label().to_lowercase()))
            .collect();
        // Recorded inside an HTML comment of a public body: redacted, and only the characters
        // of a version, so a version in summary.json cannot end the comment (`-->`).
        let state = Public::new().plain(&red.join(","));
        let mut kept: String = state
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "+.=,_-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        while kept.contains("--") {
            kept = kept.replace("--", "-_");
        }
        kept
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
    // Every text of summary.json (and the run URL) goes through one redaction context, then
    // the Markdown escaper: the body is public.
    let mut p = Public::new();
    let line = p.prose(&g.line);
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
        "The nightly run of repro check {} on the {} {line} line shows {}.\n",
        p.code(&g.check),
        g.distro,
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
        let artifact = format!("{}{}-{}", links.artifact_prefix, c.check, c.k3s_version);
        let _ = writeln!(
            o,
            "| {} | {} | {} | {status} | artifact {} |",
            p.prose(&c.k3s_version),
            c.expected,
            c.verdict.map_or("—", |v| v.as_str()),
            p.code(&artifact)
        );
    }
    o.push('\n');
    let why: Vec<String> = g
        .cells
        .iter()
        .filter_map(Cell::explain)
        .map(|w| p.prose(&w))
        .collect();
    if !why.is_empty() {
        o.push_str("Why:\n\n");
        for w in why {
            let _ = writeln!(o, "- {w}");
        }
        o.push('\n');
    }
    match links.run_url.as_deref().map(|u| p.url(u)) {
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
                p.shell_word(&c.check),
                p.shell_word(&c.k3s_version),
                c.expected
            )
        })
        .collect();
    if !reruns.is_empty() {
        let _ = writeln!(
            o,
            "Re-run locally:\n\n{}",
            crate::report::code_block("sh", &reruns.join("\n"), "")
        );
    }
    o.push_str(
        "_Opened and kept up to date by the nightly workflow (`repro nightly-issues`): it closes this issue when every version of the line shows its expected verdict again._\n",
    );
    o
}

/// Text bound for a public issue (title, body, comment): redacted in one context — a URL's
/// password, a token, a K10 token in a cell's `error` is replaced as in a run's own files —,
/// put on one line, and escaped for where it goes, so nothing from summary.json can mention
/// someone, open a comment, a code block or a table of its own.
struct Public(Redactor);

impl Public {
    fn new() -> Self {
        Public(Redactor::new(&[]))
    }

    /// Redacted, on one line, control characters shown (`\u001b`), never sent.
    fn plain(&mut self, s: &str) -> String {
        let s = self.0.redact_text(s);
        let mut out = String::with_capacity(s.len());
        for c in s.chars() {
            match c {
                '\n' | '\r' | '\t' => out.push(' '),
                c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        out
    }

    /// Prose: [`Public::plain`] with Markdown's markup characters escaped, `<`, `>` and `&` as
    /// entities (no HTML, no `<!--`/`-->`), and `@` followed by a word joiner (no mention).
    fn prose(&mut self, s: &str) -> String {
        let mut out = String::new();
        for c in self.plain(s).chars() {
            match c {
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                '&' => out.push_str("&amp;"),
                '@' => out.push_str("@\u{2060}"),
                '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' | '#' | '!' => {
                    out.push('\\');
                    out.push(c);
                }
                c => out.push(c),
            }
        }
        out
    }

    /// A code span: no markup applies inside it, and its delimiter is longer than any run of
    /// backticks in the text; a `|` still ends a table cell, so it is escaped.
    fn code(&mut self, s: &str) -> String {
        let s = self.plain(s).replace('|', "\\|").replace('@', "@\u{2060}");
        let tick = crate::report::fence_for(&s);
        // The shortest delimiter that fits (`fence_for` is for blocks: at least three).
        let n = tick.len().saturating_sub(2).max(1);
        let tick = "`".repeat(n);
        let pad = if s.starts_with('`') || s.ends_with('`') {
            " "
        } else {
            ""
        };
        format!("{tick}{pad}{s}{pad}{tick}")
    }

    /// The run's link, redacted (no credentials), as an autolink: spaces and angle brackets
    /// percent-encoded, so it cannot end early.
    fn url(&mut self, s: &str) -> String {
        let s = self.plain(&crate::redact::without_userinfo(s));
        s.replace(' ', "%20")
            .replace('<', "%3C")
            .replace('>', "%3E")
            .replace('@', "%40")
    }

    /// One word of a shell command: as is when plain, else single-quoted.
    fn shell_word(&mut self, s: &str) -> String {
        crate::run::shell_quote(&self.plain(s))
    }
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
        .as_deref()
        .map_or_else(|| "tonight's run".to_string(), |u| Public::new().url(u));
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
                    Public::new().prose(&g.line),
                    Public::new().prose(&versions.join(", "))
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

    /// summary.json is input: a cell's error with a URL password, a token and a K10 token, a
    /// mention, a code fence, an HTML comment's end and new lines reach neither the title nor the
    /// body nor a comment as they are.
    #[test]
    fn hostile_cells_are_redacted_and_escaped() {
        let k10 = "K10d1f0e8c2b4a6978563412f0e1d2c3b4a5968778695a4b3c2d1e0f9a8b7c6d5e4::server:4f9d2c7e1a8b3f60";
        let mut bad = cell("v1.33.5+k3s1", "fixed", "reproduced");
        bad.check = "etcd-split\n# @octocat".into();
        bad.error = Some(format!(
            "pull https://bob:hunter2pass@mirror.local/x failed\n```\n--> token={k10} @octocat <!-- <img src=x> | |"
        ));
        let mut broken = bad.clone();
        broken.k3s_version = "v1.33.6+k3s1 --> @octocat".into();
        broken.verdict = None;
        broken.status = Status::Broken;
        let all = groups(&[bad, broken]);
        assert_eq!(all.len(), 2, "{all:?}");
        for g in &all {
            hostile_group_is_public_safe(g);
        }
    }

    fn hostile_group_is_public_safe(g: &Group) {
        let links = RunLinks {
            run_url: Some("https://ci:runpass99@github.com/o/r/actions/runs/7".into()),
            artifact_prefix: "results-".into(),
        };
        let b = body(g, &links);
        let title = g.title();
        // A red group's reopening comment names the run; other groups have none.
        let comment = match decide(
            g,
            Some(&Existing {
                number: 1,
                open: false,
            }),
            None,
            &links,
        ) {
            Action::Reopen { comment, .. } => comment,
            _ => String::new(),
        };
        // Outside the re-run's code block (where a mention is inert and the command stays
        // what was run, quoted).
        let prose = b.split("```sh").next().unwrap_or_default().to_string();
        for text in [&prose, &title, &comment] {
            for secret in ["hunter2pass", "4f9d2c7e1a8b3f60", "K10d1f0e8", "runpass99"] {
                assert!(!text.contains(secret), "{secret} in {text}");
            }
            assert!(!text.contains("@octocat"), "a mention in {text}");
            assert!(!text.contains("<img"), "{text}");
            assert!(!b.contains("hunter2pass"), "{b}");
            assert!(!text.contains("<!-- <"), "{text}");
        }
        assert!(!title.contains('\n'), "{title}");
        // One HTML comment, the state's, and it ends on its own line (a `-->` left in a code
        // span is text there: no comment is open).
        let first = b.lines().next().unwrap_or_default();
        assert!(first.starts_with("<!-- ") && first.ends_with(" -->"), "{b}");
        assert_eq!(first.matches("-->").count(), 1, "{b}");
        assert_eq!(b.matches("<!--").count(), 1, "{b}");
        for l in b.lines().skip(1) {
            // Outside code spans, `-->` and `<` are entities.
            let outside: String = l.split('`').step_by(2).collect();
            assert!(!outside.contains("-->") && !outside.contains('<'), "{l}");
        }
        // No line of the body starts a heading or a code block of its own.
        for l in b.lines() {
            assert!(!l.starts_with('#'), "{l}");
            assert!(!l.starts_with("```") || l == "```sh" || l == "```", "{l}");
        }
        assert!(state_in(&b).is_some_and(|s| !s.contains("--")), "{b}");
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
