//! junit.xml as CI reads it: parsed by a real XML parser (roxmltree, not the crate that wrote
//! it), and agreeing with the exit code — failures and errors 0 exactly when it is 0 (README,
//! "Exit codes"; issue #24).

use std::path::{Path, PathBuf};

/// Every `junit.xml` under `dir` (the folder itself included), sorted.
pub fn junit_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let p = e.path();
            let t = e.file_type().expect("file type");
            if t.is_dir() {
                todo.push(p);
            } else if t.is_file() && p.file_name().is_some_and(|n| n == "junit.xml") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// (failures + errors, cases) over every testsuite of `path`, counted from the elements (and
/// checked against the suites' own attributes).
pub fn not_passed(path: &Path) -> (usize, usize) {
    let xml = std::fs::read_to_string(path).expect("junit.xml is UTF-8");
    let doc = roxmltree::Document::parse(&xml)
        .unwrap_or_else(|e| panic!("{}: does not parse: {e}\n{xml}", path.display()));
    let (mut bad, mut cases) = (0, 0);
    for suite in doc.descendants().filter(|n| n.has_tag_name("testsuite")) {
        let mut counted = 0;
        for case in suite.children().filter(|n| n.has_tag_name("testcase")) {
            cases += 1;
            if case
                .children()
                .any(|c| c.has_tag_name("failure") || c.has_tag_name("error"))
            {
                counted += 1;
            }
        }
        let attr = |a: &str| -> usize {
            suite
                .attribute(a)
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{}: testsuite {a}", path.display()))
        };
        assert_eq!(
            attr("failures") + attr("errors"),
            counted,
            "{}: the counts disagree with the cases",
            path.display()
        );
        bad += counted;
    }
    (bad, cases)
}

/// The junit.xml at `path` parses, and has failures or errors exactly when `exit` is not 0.
pub fn assert_agrees(path: &Path, exit: i64) {
    let (bad, cases) = not_passed(path);
    assert!(cases > 0, "{}: no test case", path.display());
    assert_eq!(
        bad == 0,
        exit == 0,
        "{}: {bad} failures/errors with exit code {exit}",
        path.display()
    );
}
