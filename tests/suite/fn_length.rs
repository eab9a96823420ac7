//! "No non-test function over 120 lines" (CONTRIBUTING.md, the team's standards), held against
//! the code: a function that long holds several subjects, and is split into named helpers that
//! say what each decides. The sources are read as the layer test reads them (`layers.rs`:
//! comments, literals and `#[cfg(test)]` items blanked, test-only files left out), so a brace in
//! a string or a long test does not count.

use std::path::Path;

use crate::layers::{non_test_sources_at, CRATES};
use crate::util::root;

/// The most lines a non-test function may take, from its `fn` line to its closing brace.
const MAX_LINES: usize = 120;

#[test]
fn no_function_over_120_lines() {
    let mut problems = Vec::new();
    for dir in CRATES {
        problems.extend(
            long_functions(&root(), dir)
                .into_iter()
                .map(|f| f.to_string()),
        );
    }
    assert!(
        problems.is_empty(),
        "non-test functions over {MAX_LINES} lines: split each by subject into named helpers\n  {}",
        problems.join("\n  ")
    );
}

/// The check of this test itself: a planted long function is found and named, a long test, a
/// brace in a string and a short function are not.
#[test]
fn a_planted_long_function_is_found() {
    let tmp = tempfile::tempdir().expect("a temp folder");
    let src = tmp.path().join("src");
    std::fs::create_dir_all(&src).expect("a planted folder");
    let body = |n: usize| "    let _ = 1;\n".repeat(n);
    let lib = format!(
        "fn short() {{\n{}}}\n\npub(crate) async fn long(a: [u8; 2]) -> u8 {{\n    let s = \"}}\";\n{}    a[0]\n}}\n\n#[cfg(test)]\nmod tests {{\n    fn long_test() {{\n{}    }}\n}}\n",
        body(MAX_LINES - 2),
        body(MAX_LINES),
        body(2 * MAX_LINES)
    );
    std::fs::write(src.join("lib.rs"), lib).expect("a planted file");
    let found: Vec<String> = long_functions(tmp.path(), "src")
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        found,
        [format!(
            "src/lib.rs:{}: `long` is {} lines (at most {MAX_LINES})",
            MAX_LINES + 2,
            MAX_LINES + 4
        )]
    );
}

/// A function over the limit: where it starts, its name and its length.
struct Long {
    file: String,
    line: usize,
    name: String,
    lines: usize,
}

impl std::fmt::Display for Long {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: `{}` is {} lines (at most {MAX_LINES})",
            self.file, self.line, self.name, self.lines
        )
    }
}

/// The non-test functions of the crate in `base`/`dir` longer than [`MAX_LINES`], nested ones
/// counted on their own too.
fn long_functions(base: &Path, dir: &str) -> Vec<Long> {
    let mut out = Vec::new();
    for s in non_test_sources_at(base, dir) {
        let file = (s.path.strip_prefix(base))
            .expect("below the root")
            .display()
            .to_string();
        let lines: Vec<&str> = s.code.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            let Some(name) = fn_name(l) else { continue };
            if let Some(end) = body_end(&lines, i) {
                let n = end - i + 1;
                if n > MAX_LINES {
                    out.push(Long {
                        file: file.clone(),
                        line: i + 1,
                        name,
                        lines: n,
                    });
                }
            }
        }
    }
    out
}

/// The name of the function a line declares (`pub(crate) async fn name…`), if it does.
fn fn_name(line: &str) -> Option<String> {
    let mut rest = line.trim_start();
    for q in [
        "pub(crate) ",
        "pub(super) ",
        "pub ",
        "const ",
        "async ",
        "unsafe ",
    ] {
        rest = rest.strip_prefix(q).unwrap_or(rest);
    }
    let rest = rest.strip_prefix("fn ")?;
    let name: String = (rest.chars())
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// The line of the brace that closes the body of the function declared on line `start`, or
/// `None` for a declaration without a body (`fn f();` in a trait; a `;` inside the signature's
/// brackets, `[u8; 4]`, does not end it).
fn body_end(lines: &[&str], start: usize) -> Option<usize> {
    let mut depth = 0i64;
    let mut brackets = 0i64;
    let mut opened = false;
    for (j, l) in lines.iter().enumerate().skip(start) {
        for c in l.chars() {
            match c {
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => depth -= 1,
                '(' | '[' => brackets += 1,
                ')' | ']' => brackets -= 1,
                ';' if !opened && depth == 0 && brackets == 0 => return None,
                _ => {}
            }
            if opened && depth == 0 {
                return Some(j);
            }
        }
    }
    None
}
