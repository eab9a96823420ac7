//! `repro bisect --commits FILE`: the commits to bisect over, oldest first, one full SHA a line
//! (as `git log --reverse --format=%H A..B` in a k3s checkout writes them); blank lines and `#`
//! comments (whole-line or after the SHA) are allowed. Every bad line is reported at once with
//! file:line:col.

use std::path::Path;

use crate::diag::{Diagnostic, Diagnostics};

/// The largest commit list read (a few thousand commits is already more than any bisect needs).
const MAX_FILE_BYTES: u64 = 4 << 20;

/// The commits of `path`, oldest first.
pub(crate) fn read(path: &Path) -> Result<Vec<String>, Diagnostics> {
    let general = |m: String| {
        Diagnostics(vec![Diagnostic::in_file(path, 0, 0, m).help(
            "write one full commit SHA per line, oldest first, e.g. with `git log --reverse --format=%H A..B`",
        )])
    };
    // A regular file within its size, opened without blocking (a FIFO or /dev/zero is
    // refused, not read forever).
    let bytes = crate::safe_fs::read_named(path, MAX_FILE_BYTES).map_err(|e| match e {
        crate::safe_fs::ReadError::TooLarge { .. }
        | crate::safe_fs::ReadError::NotRegular { .. } => general(format!(
            "{}; a commit list is a regular file of at most {MAX_FILE_BYTES} bytes",
            e.reason()
        )),
        e => general(format!("cannot read the file: {}", e.reason())),
    })?;
    let text = String::from_utf8(bytes)
        .map_err(|e| general(format!("cannot read the file: not UTF-8 text ({e})")))?;
    // A byte-order mark (a list saved by a Windows editor) is not part of the first SHA.
    parse(path, text.strip_prefix('\u{feff}').unwrap_or(&text))
}

/// The commits of `text` (read from `path`, for the diagnostics).
pub(crate) fn parse(path: &Path, text: &str) -> Result<Vec<String>, Diagnostics> {
    let mut out = Diagnostics::default();
    let mut commits: Vec<String> = Vec::new();
    let at = |line: usize, column: usize, message: String, help: &str| {
        Diagnostic::in_file(path, line as u64, column as u64, message).help(help)
    };
    for (i, raw) in text.lines().enumerate() {
        let content = raw.split('#').next().unwrap_or_default();
        let word = content.trim();
        if word.is_empty() {
            continue;
        }
        let column = content.find(word).unwrap_or(0) + 1;
        if word.split_whitespace().count() > 1 {
            out.push(at(
                i + 1,
                column,
                format!("`{word}` is more than one word"),
                "one commit per line; comments start with #",
            ));
            continue;
        }
        match super::parse_commit(word) {
            Ok(c) if commits.contains(&c) => out.push(at(
                i + 1,
                column,
                format!("commit {c} is listed twice"),
                "list each commit once, oldest first",
            )),
            Ok(c) => commits.push(c),
            Err(e) => out.push(at(i + 1, column, e, "one full 40-hex commit SHA per line")),
        }
    }
    if out.is_empty() && commits.len() < 2 {
        out.push(
            Diagnostic::in_file(
                path,
                0,
                0,
                format!("lists {} commit(s); a bisect needs at least two", commits.len()),
            )
            .help(
                "list the commits between a known-good and a known-bad one, oldest first (`git log --reverse --format=%H A..B`)",
            ),
        );
    }
    if out.is_empty() {
        Ok(commits)
    } else {
        Err(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha(n: u8) -> String {
        format!("{n:02x}").repeat(20)
    }

    #[test]
    fn commits_comments_and_blank_lines() {
        let text = format!("# from git log\n\n{}\n  {}  # the fix?\n", sha(1), sha(2));
        assert_eq!(
            parse(Path::new("c.txt"), &text).unwrap(),
            vec![sha(1), sha(2)]
        );
    }

    #[test]
    fn bad_lines_are_pinned_to_line_and_column() {
        let text = format!("{}\n   48a3b849\n{}\n{} extra\n", sha(1), sha(1), sha(3));
        let d = parse(Path::new("c.txt"), &text).unwrap_err();
        let all: Vec<String> = d.0.iter().map(|d| d.to_string()).collect();
        assert!(
            all[0].starts_with("c.txt:2:4: error: `48a3b849` is a short commit"),
            "{all:?}"
        );
        assert!(all[1].starts_with("c.txt:3:1: error: commit"), "{all:?}");
        assert!(all[2].starts_with("c.txt:4:1: error: `"), "{all:?}");
        assert_eq!(all.len(), 3);
        let one = parse(Path::new("c.txt"), &sha(1)).unwrap_err();
        assert!(one.0[0].to_string().contains("at least two"), "{one:?}");
    }
}
