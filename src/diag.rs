//! Problems found in a user's files, each pinned to file, line and column.
//!
//! Every input error a user can make ends up here, so the CLI can print them all at once and
//! exit 2 without creating anything.

use std::fmt;
use std::path::{Path, PathBuf};

use serde_saphyr::{Location, Spanned};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Diagnostic {
    pub(crate) file: PathBuf,
    pub(crate) line: u64,
    pub(crate) column: u64,
    pub(crate) message: String,
    /// What would be valid instead.
    pub(crate) help: Option<String>,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Problems with no place in a file (a check name typed on the command line) carry an
        // empty path; problems about a whole file carry line 0.
        // A file name is shown on one line: a line break in it cannot forge a line (#42).
        let file = one_line(&self.file.display().to_string());
        if self.file.as_os_str().is_empty() {
            write!(f, "error: {}", self.message)?;
        } else if self.line == 0 {
            write!(f, "{file}: error: {}", self.message)?;
        } else {
            write!(
                f,
                "{file}:{}:{}: error: {}",
                self.line, self.column, self.message
            )?;
        }
        if let Some(help) = &self.help {
            write!(f, "{}", Help(help))?;
        }
        Ok(())
    }
}

/// `text` on one line: line breaks written as `\n` and `\r` (other control characters are
/// the terminal's to escape, `term::sanitize`).
pub(crate) fn one_line(text: &str) -> String {
    text.replace('\r', "\\r").replace('\n', "\\n")
}

/// The line after a message that says what would be valid instead: the one place its shape,
/// `\n  help: …`, is written. [`Diagnostic`] prints its help with it, and so do error types
/// whose text is a message then a help (`DockerError`, `RunError`, whose texts are also
/// recorded in result.json and stay as they are).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Help<T>(pub(crate) T);

impl<T: fmt::Display> fmt::Display for Help<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\n  help: {}", self.0)
    }
}

impl Diagnostic {
    /// A problem that is not in any file (a flag's value, a name given on the command line),
    /// without a help yet (add one with [`Diagnostic::help`]): `error: {message}`.
    pub(crate) fn usage(message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            file: PathBuf::new(),
            line: 0,
            column: 0,
            message: message.into(),
            help: None,
        }
    }

    /// A problem with a whole file (`file: error: {message}`), or at a place in it when `line`
    /// is not 0 (`file:line:column: error: {message}`).
    pub(crate) fn in_file(
        file: impl Into<PathBuf>,
        line: u64,
        column: u64,
        message: impl Into<String>,
    ) -> Diagnostic {
        Diagnostic {
            file: file.into(),
            line,
            column,
            message: message.into(),
            help: None,
        }
    }

    /// A problem that is not in any file (e.g. a name given on the command line).
    pub(crate) fn general(message: impl Into<String>, help: impl Into<String>) -> Diagnostic {
        Diagnostic {
            file: PathBuf::new(),
            line: 0,
            column: 0,
            message: message.into(),
            help: Some(help.into()),
        }
    }
}

/// A list of problems; the loader keeps going after the first so users fix everything in one go.
#[derive(Debug, Default, Clone)]
pub struct Diagnostics(pub(crate) Vec<Diagnostic>);

impl Diagnostics {
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn push(&mut self, d: Diagnostic) {
        self.0.push(d);
    }

    pub(crate) fn extend(&mut self, other: Diagnostics) {
        self.0.extend(other.0);
    }

    /// Sort by file, then position, so output is stable and reads top to bottom.
    pub(crate) fn sorted(mut self) -> Self {
        self.0.sort_by(|a, b| {
            (&a.file, a.line, a.column, &a.message).cmp(&(&b.file, b.line, b.column, &b.message))
        });
        self.0.dedup();
        self
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for d in &self.0 {
            writeln!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

impl From<Diagnostic> for Diagnostics {
    fn from(d: Diagnostic) -> Diagnostics {
        Diagnostics(vec![d])
    }
}

/// Builds diagnostics for one file.
#[derive(Debug, Clone)]
pub(crate) struct FileDiag<'a> {
    pub(crate) file: &'a Path,
}

impl FileDiag<'_> {
    pub(crate) fn at(&self, loc: &Location, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            file: self.file.to_path_buf(),
            line: loc.line().max(1),
            column: loc.column().max(1),
            message: message.into(),
            help: None,
        }
    }

    pub(crate) fn span<T>(&self, s: &Spanned<T>, message: impl Into<String>) -> Diagnostic {
        self.at(&s.referenced, message)
    }

    pub(crate) fn start(&self, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            file: self.file.to_path_buf(),
            line: 1,
            column: 1,
            message: message.into(),
            help: None,
        }
    }

    /// Turns a YAML parse or shape error into a diagnostic: the parser's first line without its
    /// own position prefix (we print ours) and without the source snippet, reworded where the
    /// parser's words are about serde rather than the file, with a help line.
    pub(crate) fn yaml(&self, e: &serde_saphyr::Error, text: &str) -> Diagnostic {
        let rendered = e.to_string();
        let first = rendered.lines().next().unwrap_or("invalid YAML");
        let first = first.strip_prefix("error: ").unwrap_or(first);
        let raw = match first.split_once(": ") {
            Some((pos, rest)) if pos.starts_with("line ") && pos.contains(" column ") => rest,
            _ => first,
        };
        let (message, help) = explain_yaml(raw);
        let (mut line, mut column) = e
            .location()
            .map(|l| (l.line().max(1), l.column().max(1)))
            .unwrap_or((1, 1));
        // serde reports a missing key once the whole map has been read, i.e. where the next
        // thing starts; a user looks for it at the top of the map. Only the top level is
        // guessed (first line with content), nested maps keep the parser's position.
        if message.starts_with("missing key") && column == 1 {
            if let Some(l) = first_content_line(text) {
                (line, column) = (l, 1);
            }
        }
        // The parser notices a tab or a mis-indented key only once past it; point at the tab,
        // or at the start of the key whose indentation is wrong.
        let line_text = usize::try_from(line - 1)
            .ok()
            .and_then(|i| text.lines().nth(i))
            .unwrap_or("");
        let indent: String = line_text
            .chars()
            .take_while(|c| c.is_whitespace())
            .collect();
        if message.starts_with("a tab is used") {
            if let Some(i) = indent.chars().position(|c| c == '\t') {
                column = u64::try_from(i + 1).unwrap_or(column);
            }
        } else if message.starts_with("a `key: value` is not allowed") && !indent.is_empty() {
            column = u64::try_from(indent.chars().count() + 1).unwrap_or(column);
        }
        Diagnostic {
            file: self.file.to_path_buf(),
            line,
            column,
            message,
            help: Some(help),
        }
    }
}

fn first_content_line(text: &str) -> Option<u64> {
    text.lines()
        .position(|l| {
            let t = l.trim();
            !t.is_empty() && !t.starts_with('#') && t != "---"
        })
        .and_then(|i| u64::try_from(i + 1).ok())
}

/// Rewords a serde-saphyr message and says what would be valid. Matching on text is brittle,
/// but the crate offers no error kinds for these; unknown texts pass through with a general help.
fn explain_yaml(raw: &str) -> (String, String) {
    let raw = raw
        .replace(", set DuplicateKeyPolicy in Options if acceptable", "")
        .trim()
        .to_string();
    let general = "see docs/file-formats.md for the keys and values this file takes".to_string();
    if let Some(rest) = raw.strip_prefix("unknown field ") {
        let (name, expected) = split_expected(rest);
        let help = match suggest(&name, &expected) {
            Some(s) => format!(
                "did you mean `{s}`? keys allowed here: {}",
                expected.join(", ")
            ),
            None => format!("keys allowed here: {}", expected.join(", ")),
        };
        return (format!("unknown key `{name}`"), help);
    }
    if let Some(rest) = raw.strip_prefix("unknown variant ") {
        let (name, expected) = split_expected(rest);
        let help = match suggest(&name, &expected) {
            Some(s) => format!("did you mean `{s}`? use one of: {}", expected.join(", ")),
            None => format!("use one of: {}", expected.join(", ")),
        };
        return (format!("unknown value `{name}`"), help);
    }
    if let Some(rest) = raw.strip_prefix("missing field ") {
        let name = rest.trim_matches('`');
        return (
            format!("missing key `{name}`"),
            format!("add `{name}:` to this map ({general})"),
        );
    }
    if let Some(rest) = raw.strip_prefix("duplicate mapping key: ") {
        return (
            format!("duplicate key `{rest}`"),
            "a key may appear only once in a map: merge the two entries into one".to_string(),
        );
    }
    for (needle, message, help) in KNOWN_YAML {
        if raw.contains(needle) {
            return ((*message).to_string(), (*help).to_string());
        }
    }
    if let Some(rest) = raw.strip_prefix("invalid type: ") {
        if let Some((found, expected)) = rest.split_once(", expected ") {
            let found = match found {
                "map" => "a map",
                "sequence" => "a list",
                other => other,
            };
            return (
                format!("found {found}, expected {expected}"),
                format!("replace it with {expected}"),
            );
        }
    }
    // The parser's own syntax messages are clear enough; say they are syntax and how to look.
    if SYNTAX_WORDS.iter().any(|w| raw.contains(w)) {
        let message = raw.strip_prefix("while ").map_or_else(
            || format!("YAML syntax error: {raw}"),
            |r| format!("YAML syntax error while {r}"),
        );
        return (message, SYNTAX_HELP.to_string());
    }
    (raw, general)
}

/// serde-saphyr messages by a text they contain: (that text, what to say, the help).
const KNOWN_YAML: &[(&str, &str, &str)] = &[
    (
        "invalid boolean",
        "expected a boolean",
        "write `true` or `false` without quotes (yes/no/on/off are strings in YAML 1.2)",
    ),
    (
        "expected sequence start",
        "expected a list here",
        "write a list as `[a, b]` or as one `- item` line per entry",
    ),
    (
        "expected mapping start",
        "expected a map here",
        "write a map as `key: value` lines or as `{key: value}`",
    ),
    (
        "tabs disallowed",
        "a tab is used for indentation",
        "indent with spaces only: YAML does not allow tabs in indentation",
    ),
    (
        "unclosed bracket",
        "a bracket is never closed",
        "close every `[` with `]` and every `{` with `}`",
    ),
    (
        "mapping values are not allowed",
        "a `key: value` is not allowed here",
        "check the indentation (keys of one map start in the same column) and quote values that contain `: `",
    ),
    (
        "a config value is empty (null)",
        "a config value is empty (null)",
        "to drop a key use `remove:` in a step (or leave the key out); for empty text write \"\"",
    ),
    (
        "is a decimal number",
        "a decimal number is not a k3s config value",
        "quote it (\"0.5\"): config values are text, integers, booleans or lists of those",
    ),
    (
        "cannot deserialize null into string",
        "this value is empty (null), but text is needed here",
        "give a value, or write \"\" for an empty text",
    ),
    (
        "expected string scalar",
        "expected a single value (text) here",
        "write one value, not a list or a map; quote it if it contains `: ` or starts with `[`, `{`, `*` or `&`",
    ),
    (
        "simple key expected",
        "YAML syntax error: a `:` is missing after a key",
        SYNTAX_HELP,
    ),
];

/// Words of the parser's own syntax messages.
const SYNTAX_WORDS: &[&str] = &[
    "while parsing",
    "while scanning",
    "did not find expected",
    "bracket",
    "quote",
    "unexpected character",
    "indicator",
    "block",
    "anchor",
    "alias",
    "EOF",
    "scalar",
    "flow",
];

const SYNTAX_HELP: &str =
    "check the indentation (spaces only), brackets and quotes on this line and the one before";

/// `` `x`, expected one of a, b, c `` → (`x`, [a, b, c]); serde and serde-saphyr spell the
/// list in a few ways (with or without backticks, "one of", "`a` or `b`").
fn split_expected(rest: &str) -> (String, Vec<String>) {
    let (name, expected) = rest.split_once(", expected ").unwrap_or((rest, ""));
    let expected = expected
        .strip_prefix("one of ")
        .unwrap_or(expected)
        .replace(" or ", ", ");
    let list = expected
        .split(", ")
        .map(|s| s.trim().trim_matches('`').to_string())
        .filter(|s| !s.is_empty() && s != "there are no fields")
        .collect();
    (name.trim().trim_matches('`').to_string(), list)
}

/// The closest allowed name, if it is close enough to be a typo (`rol` → `role`).
pub(crate) fn suggest(name: &str, allowed: &[String]) -> Option<String> {
    let norm = |s: &str| s.to_lowercase().replace('_', "-");
    allowed
        .iter()
        .map(|a| (edit_distance(&norm(name), &norm(a)), a))
        .filter(|(d, a)| *d <= 2.max(a.len() / 4) && *d < a.len())
        .min_by_key(|(d, _)| *d)
        .map(|(_, a)| a.clone())
}

fn edit_distance(a: &str, b: &str) -> usize {
    // Optimal string alignment: a swap of two neighbours (`restrat`) counts as one edit.
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

impl Diagnostic {
    pub(crate) fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn suggests_close_names_only() {
        let keys = names(&[
            "name", "why", "config", "remove", "files", "start", "restart", "expect", "bug",
        ]);
        assert_eq!(suggest("restrat", &keys).as_deref(), Some("restart"));
        assert_eq!(suggest("expcet", &keys).as_deref(), Some("expect"));
        assert_eq!(suggest("Config", &keys).as_deref(), Some("config"));
        assert_eq!(suggest("banana", &keys), None);
        let keys = names(&["name", "role", "init", "join"]);
        assert_eq!(suggest("rol", &keys).as_deref(), Some("role"));
        assert_eq!(
            suggest("on_death", &names(&["on-death", "probe"])).as_deref(),
            Some("on-death")
        );
    }

    #[test]
    fn rewords_serde_messages() {
        let (m, h) = explain_yaml("unknown field `rol`, expected one of `name`, `role`, `init`");
        assert_eq!(m, "unknown key `rol`");
        assert_eq!(
            h,
            "did you mean `role`? keys allowed here: name, role, init"
        );
        let (m, h) = explain_yaml(
            "unknown variant `worker`, expected one of etcd, control-plane, all, agent",
        );
        assert_eq!(m, "unknown value `worker`");
        assert_eq!(h, "use one of: etcd, control-plane, all, agent");
        let (m, _) = explain_yaml("unknown field `x`, expected `a` or `b`");
        assert_eq!(m, "unknown key `x`");
        let (m, h) = explain_yaml("something new");
        assert_eq!(m, "something new");
        assert!(h.contains("file-formats"));
    }

    /// The shapes every input error is printed in, byte for byte as they were written by hand
    /// before the renderer took them over (`error: X\n  help: Y`, the file forms, the list with
    /// one help at its end).
    #[test]
    fn renders_the_shapes_users_have_seen() {
        let cases = [
            (
                Diagnostic::usage("--checks has an empty entry")
                    .help("e.g. --checks etcd-split,metrics-order"),
                "error: --checks has an empty entry\n  help: e.g. --checks etcd-split,metrics-order",
            ),
            (Diagnostic::usage("no such run"), "error: no such run"),
            (
                Diagnostic::general("a", "b\n    more"),
                "error: a\n  help: b\n    more",
            ),
            (
                Diagnostic::in_file("x.yaml", 3, 7, "bad").help("fix"),
                "x.yaml:3:7: error: bad\n  help: fix",
            ),
            (
                Diagnostic::in_file("x.yaml", 0, 0, "empty"),
                "x.yaml: error: empty",
            ),
        ];
        for (d, text) in cases {
            assert_eq!(d.to_string(), text);
        }
        let list = Diagnostics(vec![
            Diagnostic::usage("--versions has an empty entry"),
            Diagnostic::usage("--versions: bad").help("give full versions"),
        ]);
        assert_eq!(
            list.to_string(),
            "error: --versions has an empty entry\nerror: --versions: bad\n  help: give full versions\n"
        );
        assert_eq!(
            format!("cannot reach: gone{}", Help("start Docker")),
            "cannot reach: gone\n  help: start Docker"
        );
    }

    /// The help line is written by hand nowhere else: a `\n  help:` (or a string line starting
    /// `  help:`) in the non-test code of any other source file would print a shape this
    /// module no longer controls. Tests sit at the end of a file, after `#[cfg(test)]`.
    #[test]
    fn no_other_source_writes_a_help_line() {
        fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
            for e in std::fs::read_dir(dir).expect("src is readable").flatten() {
                let p = e.path();
                if p.is_dir() {
                    sources(&p, out);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    out.push(p);
                }
            }
        }
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        sources(&src, &mut files);
        let by_hand: Vec<String> = files
            .iter()
            .filter(|p| !p.ends_with("diag.rs") && !p.ends_with("tests.rs"))
            .filter_map(|p| {
                let text = std::fs::read_to_string(p).ok()?;
                let code = text.split("#[cfg(test)]").next().unwrap_or_default();
                let found =
                    code.contains("\\n  help:") || code.lines().any(|l| l.starts_with("  help:"));
                found.then(|| p.display().to_string())
            })
            .collect();
        assert!(
            by_hand.is_empty(),
            "help lines written by hand (use Diagnostic or diag::Help): {by_hand:?}"
        );
    }
}
