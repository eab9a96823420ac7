//! Problems found in a user's files, each pinned to file, line and column.
//!
//! Every input error a user can make ends up here, so the CLI can print them all at once and
//! exit 2 without creating anything.

use std::fmt;
use std::path::{Path, PathBuf};

use serde_saphyr::{Location, Spanned};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub file: PathBuf,
    pub line: u64,
    pub column: u64,
    pub message: String,
    /// What would be valid instead.
    pub help: Option<String>,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: error: {}",
            self.file.display(),
            self.line,
            self.column,
            self.message
        )?;
        if let Some(help) = &self.help {
            write!(f, "\n  help: {help}")?;
        }
        Ok(())
    }
}

/// A list of problems; the loader keeps going after the first so users fix everything in one go.
#[derive(Debug, Default, Clone)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn push(&mut self, d: Diagnostic) {
        self.0.push(d);
    }

    pub fn extend(&mut self, other: Diagnostics) {
        self.0.extend(other.0);
    }

    /// Sort by file, then position, so output is stable and reads top to bottom.
    pub fn sorted(mut self) -> Self {
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

/// Builds diagnostics for one file.
#[derive(Debug, Clone)]
pub struct FileDiag<'a> {
    pub file: &'a Path,
}

impl FileDiag<'_> {
    pub fn at(&self, loc: &Location, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            file: self.file.to_path_buf(),
            line: loc.line().max(1),
            column: loc.column().max(1),
            message: message.into(),
            help: None,
        }
    }

    pub fn span<T>(&self, s: &Spanned<T>, message: impl Into<String>) -> Diagnostic {
        self.at(&s.referenced, message)
    }

    pub fn start(&self, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            file: self.file.to_path_buf(),
            line: 1,
            column: 1,
            message: message.into(),
            help: None,
        }
    }

    /// Turns a YAML parse or shape error into a diagnostic: the parser's first line without its
    /// own position prefix (we print ours) and without the source snippet.
    pub fn yaml(&self, e: &serde_saphyr::Error) -> Diagnostic {
        let rendered = e.to_string();
        let first = rendered.lines().next().unwrap_or("invalid YAML");
        let first = first.strip_prefix("error: ").unwrap_or(first);
        let message = match first.split_once(": ") {
            Some((pos, rest)) if pos.starts_with("line ") && pos.contains(" column ") => rest,
            _ => first,
        };
        let message = message
            .replace(", set DuplicateKeyPolicy in Options if acceptable", "")
            .replace(
                "data did not match any variant of untagged enum ConfigValue",
                "a k3s config value must be a string, number, boolean or a list of those",
            );
        let (line, column) = e
            .location()
            .map(|l| (l.line().max(1), l.column().max(1)))
            .unwrap_or((1, 1));
        Diagnostic {
            file: self.file.to_path_buf(),
            line,
            column,
            message,
            help: None,
        }
    }
}

impl Diagnostic {
    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}
