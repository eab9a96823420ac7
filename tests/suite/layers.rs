//! The layer order of CONTRIBUTING.md ("Layers", in the code map), held against the code's own
//! imports, as `cli.rs` holds the README's exit-code table: the table is the one place the order
//! is written, and this test fails when a module imports from a row above its own, when an
//! import circle appears among the files of a folder, or when a module is in no row.
//!
//! What counts as an import: every `crate::a::b` path of non-test code (`use` trees included,
//! `repro::` in src/main.rs), every `super::x`, and, in `src/`, a print macro (`outln!`,
//! `errln!`, `out!`, `err!`), which expands to `crate::term`. Comments, string literals and
//! `#[cfg(test)]` items and files are passed over: tests sit above everything they test. A
//! folder's `mod.rs` (a crate's `lib.rs`/`main.rs`) is the folder itself: it declares its files
//! and they may use what it defines, so circles are looked for between the files and subfolders
//! of each folder, and layers between the top-level modules of each crate.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::util::root;

/// A module path inside its crate (`["run", "cluster"]`; the crate root is empty).
pub(super) type Module = Vec<String>;

/// One import: where it is written, and the text that makes it one.
#[derive(Clone, Debug)]
struct Import {
    file: String,
    line: usize,
    text: String,
    to: Module,
}

/// The crates whose layers CONTRIBUTING.md's table gives, by source folder.
pub(super) const CRATES: [&str; 3] = ["src", "sim/src", "distro/src"];

#[test]
fn no_module_imports_from_a_layer_above_it() {
    let layers = layer_table();
    let mut problems = Vec::new();
    for dir in CRATES {
        let rows = layers
            .get(dir)
            .unwrap_or_else(|| panic!("CONTRIBUTING.md's layer table has no row for `{dir}/`"));
        let row_of: BTreeMap<&str, (usize, &str)> = rows
            .iter()
            .enumerate()
            .flat_map(|(i, (name, mods))| {
                mods.iter().map(move |m| (m.as_str(), (i, name.as_str())))
            })
            .collect();
        let krate = read_crate(dir);
        let tops: BTreeSet<&str> = krate
            .modules
            .iter()
            .filter_map(|m| m.first())
            .map(String::as_str)
            .collect();
        for top in &tops {
            if !row_of.contains_key(top) {
                problems.push(format!(
                    "{dir}/{top}: a module in no layer: add it to a row of CONTRIBUTING.md's layer table"
                ));
            }
        }
        for m in row_of.keys() {
            if !tops.contains(m) {
                problems.push(format!(
                    "CONTRIBUTING.md's layer table names `{m}` in `{dir}/`, which has no such module"
                ));
            }
        }
        for (from, imports) in &krate.imports {
            let Some(a) = from.first() else { continue };
            for i in imports {
                let Some(b) = i.to.first() else { continue };
                if a == b {
                    continue;
                }
                // Rows are listed highest first: a row may import from rows after it.
                if let (Some(&(ra, na)), Some(&(rb, nb))) =
                    (row_of.get(a.as_str()), row_of.get(b.as_str()))
                {
                    if rb < ra {
                        problems.push(format!(
                            "{}:{}: `{}` imports `{}`: `{a}` is in the layer \"{na}\", below \"{nb}\" where `{b}` is",
                            i.file, i.line, i.text, i.to.join("::")
                        ));
                    }
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "imports against the layer order (CONTRIBUTING.md, \"Layers\"): move the name down or \
         the import out\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn no_import_circle_in_any_folder() {
    let mut problems = Vec::new();
    for dir in CRATES {
        let krate = read_crate(dir);
        // Every folder (the crate root included): its children and the imports between them.
        let mut folders: BTreeMap<Module, BTreeMap<Module, Vec<Import>>> = BTreeMap::new();
        for (from, imports) in &krate.imports {
            for i in imports {
                let common = from.iter().zip(&i.to).take_while(|(a, b)| a == b).count();
                // An import of the folder (its mod.rs) or from it is not between two children.
                if common >= from.len() || common >= i.to.len() {
                    continue;
                }
                let folder = from[..common].to_vec();
                let (a, b) = (from[..=common].to_vec(), i.to[..=common].to_vec());
                folders
                    .entry(folder)
                    .or_default()
                    .entry(a)
                    .or_default()
                    .push(Import { to: b, ..i.clone() });
            }
        }
        for (folder, graph) in &folders {
            for circle in circles(graph) {
                let steps: Vec<String> = circle
                    .iter()
                    .zip(circle.iter().cycle().skip(1))
                    .map(|(a, b)| {
                        let i = graph[a]
                            .iter()
                            .find(|i| &i.to == b)
                            .expect("an edge of the circle");
                        format!("{}:{}: `{}`", i.file, i.line, i.text)
                    })
                    .collect();
                problems.push(format!(
                    "{dir}/{}: {} import each other in a circle:\n    {}",
                    folder.join("/"),
                    circle
                        .iter()
                        .map(|m| format!("`{}`", m.join("::")))
                        .collect::<Vec<_>>()
                        .join(" → "),
                    steps.join("\n    ")
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "import circles (CONTRIBUTING.md, \"Layers\"): move the shared name below both\n  {}",
        problems.join("\n  ")
    );
}

/// The check of this test itself: an upward import and a circle planted in a copy of a crate are
/// found and named.
#[test]
fn a_planted_upward_import_and_circle_are_found() {
    let tmp = tempfile::tempdir().expect("a temp folder");
    let src = tmp.path().join("src");
    std::fs::create_dir_all(src.join("low")).expect("a planted file");
    std::fs::write(src.join("lib.rs"), "mod high;\nmod low;\n").expect("a planted file");
    std::fs::write(
        src.join("high.rs"),
        "use crate::low::a::X;\npub(crate) struct H;\n",
    )
    .expect("a planted file");
    std::fs::write(src.join("low/mod.rs"), "mod a;\nmod b;\n").expect("a planted file");
    std::fs::write(
        src.join("low/a.rs"),
        "// crate::high in a comment is no import\nconst S: &str = \"crate::high\";\n\
         pub(crate) struct X(super::b::Y);\nfn f() -> crate::high::H { crate::high::H }\n",
    )
    .expect("a planted file");
    std::fs::write(
        src.join("low/b.rs"),
        "pub(crate) struct Y(Box<crate::low::a::X>);\n#[cfg(test)]\nmod tests { use crate::high::H; }\n",
    )
    .expect("a planted file");
    let k = read_crate_at(tmp.path(), "src");
    let low_a: Module = vec!["low".into(), "a".into()];
    let to: Vec<(String, usize)> = k.imports[&low_a]
        .iter()
        .map(|i| (i.to.join("::"), i.line))
        .collect();
    assert_eq!(
        to,
        [("low::b".to_string(), 3), ("high".to_string(), 4)],
        "comments, strings and the same target twice on a line are one import or none"
    );
    let low_b: Module = vec!["low".into(), "b".into()];
    assert!(
        k.imports[&low_b].iter().all(|i| i.to[0] == "low"),
        "a #[cfg(test)] module is no import"
    );
    let mut graph: BTreeMap<Module, Vec<Import>> = BTreeMap::new();
    for (from, imports) in &k.imports {
        for i in imports
            .iter()
            .filter(|i| from.len() == 2 && i.to.len() >= 2 && i.to[0] == "low")
        {
            let to = vec![i.to[1].clone()];
            graph
                .entry(vec![from[1].clone()])
                .or_default()
                .push(Import { to, ..i.clone() });
        }
    }
    let found = circles(&graph);
    assert_eq!(found.len(), 1, "a ↔ b is one circle: {found:?}");
}

/// CONTRIBUTING.md's layer table: per crate folder, its rows highest first, each row's name and
/// modules.
fn layer_table() -> BTreeMap<String, Vec<(String, Vec<String>)>> {
    let text = std::fs::read_to_string(root().join("CONTRIBUTING.md")).expect("CONTRIBUTING.md");
    let section = text
        .split("### Layers")
        .nth(1)
        .expect("CONTRIBUTING.md has a `### Layers` section");
    let section = section.split("\n#").next().unwrap_or(section);
    let mut out: BTreeMap<String, Vec<(String, Vec<String>)>> = BTreeMap::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let [krate, name, mods] = cells[..] else {
            panic!("CONTRIBUTING.md's layer table: a row is `| \\`crate/\\` | layer | \\`module\\`, … |`: {line}")
        };
        let krate = krate.trim_matches('`').trim_end_matches('/').to_string();
        let mods = mods
            .split(',')
            .map(|m| m.trim().trim_matches('`').to_string())
            .filter(|m| !m.is_empty())
            .collect();
        out.entry(krate).or_default().push((name.to_string(), mods));
    }
    out
}

/// One non-test source file of a crate: its module, and its code with comments, literals and
/// `#[cfg(test)]` items blanked (lines kept, so line numbers stay).
pub(super) struct SourceFile {
    pub(super) path: PathBuf,
    pub(super) module: Module,
    pub(super) code: String,
}

/// The non-test source files of the crate in `base`/`dir`, in path order: a file that only
/// tests declare (`#[cfg(test)] mod tests;`, with or without `#[path]`) is left out.
pub(super) fn non_test_sources_at(base: &Path, dir: &str) -> Vec<SourceFile> {
    let top = base.join(dir);
    let mut files = Vec::new();
    walk(&top, &mut files);
    files.sort();
    // A crate folder with both lib.rs and main.rs: main.rs is the binary, a module of its own.
    let has_lib = top.join("lib.rs").exists();
    let module_of = |p: &Path| -> Module {
        let rel = p
            .strip_prefix(&top)
            .expect("below the crate folder")
            .with_extension("");
        let mut m: Module = rel
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        match m.last().map(String::as_str) {
            Some("main") if has_lib && m.len() == 1 => {}
            Some("mod" | "lib" | "main") => {
                m.pop();
            }
            _ => {}
        }
        m
    };
    let sources: Vec<(PathBuf, Module, String, String)> = files
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).expect("a source file");
            (p.clone(), module_of(p), blank(&text), text)
        })
        .collect();
    // Files only tests declare (`#[cfg(test)] mod tests;`, with or without `#[path]`).
    let mut test_files = BTreeSet::new();
    let mut cleaned = Vec::new();
    for (p, m, text, original) in &sources {
        let (code, test_mods) = without_tests(text, original);
        let dir = p.parent().expect("a file's folder");
        let is_folder = matches!(
            p.file_stem().and_then(|s| s.to_str()),
            Some("mod" | "lib" | "main")
        );
        for (name, path) in test_mods {
            match path {
                Some(path) => test_files.insert(dir.join(path)),
                None if is_folder => {
                    test_files.insert(dir.join(format!("{name}.rs")));
                    test_files.insert(dir.join(&name).join("mod.rs"))
                }
                None => {
                    let own = dir.join(p.file_stem().expect("a file name"));
                    test_files.insert(own.join(format!("{name}.rs")));
                    test_files.insert(own.join(&name).join("mod.rs"))
                }
            };
        }
        cleaned.push((p.clone(), m.clone(), code));
    }
    cleaned
        .into_iter()
        .filter(|(p, ..)| !test_files.contains(p))
        .map(|(path, module, code)| SourceFile { path, module, code })
        .collect()
}

struct Crate {
    modules: BTreeSet<Module>,
    /// Each non-test module's imports of other modules of the crate.
    imports: BTreeMap<Module, Vec<Import>>,
}

fn read_crate(dir: &str) -> Crate {
    read_crate_at(&root(), dir)
}

fn read_crate_at(base: &Path, dir: &str) -> Crate {
    let top = base.join(dir);
    let cleaned = non_test_sources_at(base, dir);
    let modules: BTreeSet<Module> = cleaned.iter().map(|s| s.module.clone()).collect();
    let mut imports = BTreeMap::new();
    for SourceFile {
        path: p,
        module: m,
        code,
    } in &cleaned
    {
        let rel = p
            .strip_prefix(base)
            .expect("below the root")
            .display()
            .to_string();
        let crate_words: &[&str] = if m.as_slice() == ["main"] {
            &["crate", "repro"]
        } else {
            &["crate"]
        };
        let found = paths(code, crate_words, m);
        let mut list: Vec<Import> = Vec::new();
        for (line, text, path) in found {
            let Some(to) = (1..=path.len())
                .rev()
                .map(|n| path[..n].to_vec())
                .find(|c| modules.contains(c))
            else {
                continue;
            };
            if &to == m || list.iter().any(|i| i.line == line && i.to == to) {
                continue;
            }
            list.push(Import {
                file: rel.clone(),
                line,
                text,
                to,
            });
        }
        if dir_is_repro(dir_name(base, &top)) && m.as_slice() != ["term"] {
            for (line, mac) in print_macros(code) {
                let to = vec!["term".to_string()];
                if !list.iter().any(|i| i.line == line && i.to == to) {
                    list.push(Import {
                        file: rel.clone(),
                        line,
                        text: format!("{mac}!"),
                        to,
                    });
                }
            }
        }
        imports.insert(m.clone(), list);
    }
    Crate { modules, imports }
}

fn dir_name(base: &Path, top: &Path) -> String {
    top.strip_prefix(base)
        .expect("below the root")
        .display()
        .to_string()
}

/// `src/` is repro's crate, whose print macros are `#[macro_export]`ed from `term`.
fn dir_is_repro(dir: String) -> bool {
    dir == "src"
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("a source folder") {
        let p = e.expect("a folder entry").path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The source with comments, string and character literals blanked (newlines kept, so line
/// numbers stay), so neither a comment nor a message that spells `crate::x` is an import.
fn blank(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let mut out: Vec<char> = c.clone();
    let mut i = 0;
    let wipe = |out: &mut Vec<char>, from: usize, to: usize| {
        for ch in out.iter_mut().take(to.min(c.len())).skip(from) {
            if *ch != '\n' {
                *ch = ' ';
            }
        }
    };
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            let end = c[i..]
                .iter()
                .position(|&x| x == '\n')
                .map_or(c.len(), |n| i + n);
            wipe(&mut out, i, end);
            i = end;
        } else if c[i] == '/' && next == Some('*') {
            let (mut depth, mut j) = (1, i + 2);
            while j < c.len() && depth > 0 {
                if c[j] == '/' && c.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 1;
                } else if c[j] == '*' && c.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 1;
                }
                j += 1;
            }
            wipe(&mut out, i, j);
            i = j;
        } else if c[i] == 'r' && (i == 0 || !ident(c[i - 1])) && matches!(next, Some('"' | '#')) {
            // r"…", r#"…"#: ends at a quote followed by as many hashes.
            let hashes = c[i + 1..].iter().take_while(|&&x| x == '#').count();
            if c.get(i + 1 + hashes) != Some(&'"') {
                i += 1;
                continue;
            }
            let mut j = i + 2 + hashes;
            while j < c.len()
                && !(c[j] == '"'
                    && c[j + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&x| x == '#')
                        .count()
                        == hashes)
            {
                j += 1;
            }
            wipe(&mut out, i, j + 1 + hashes);
            i = j + 1 + hashes;
        } else if c[i] == '"' {
            let mut j = i + 1;
            while j < c.len() && c[j] != '"' {
                j += if c[j] == '\\' { 2 } else { 1 };
            }
            wipe(&mut out, i, j + 1);
            i = j + 1;
        } else if c[i] == '\'' {
            // A character literal ('x', '\n', '\u{1b}'), not a lifetime ('a).
            if next == Some('\\') {
                let end = c[i + 2..]
                    .iter()
                    .position(|&x| x == '\'')
                    .map_or(c.len(), |n| i + 2 + n);
                wipe(&mut out, i, end + 1);
                i = end + 1;
            } else if c.get(i + 2) == Some(&'\'') {
                wipe(&mut out, i, i + 3);
                i += 3;
            } else {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out.into_iter().collect()
}

/// The code without its `#[cfg(test)]` items (blanked, lines kept), and the modules those
/// declare in files of their own: (name, its `#[path]` if it has one).
fn without_tests(code: &str, original: &str) -> (String, Vec<(String, Option<String>)>) {
    // `#[cfg(test)]` and `#[cfg(all(test, …))]`: compiled for tests only.
    const MARK: &str = "#[cfg(";
    let mut out: Vec<char> = code.chars().collect();
    let chars = out.clone();
    let mut mods = Vec::new();
    let text: String = chars.iter().collect();
    let original: Vec<char> = original.chars().collect();
    let mut from = 0;
    while let Some(at) = text[from..].find(MARK).map(|n| n + from) {
        // Byte offsets equal char offsets only for ASCII: blanked literals keep code ASCII-ish,
        // so map through char indices to be safe.
        let start = text[..at].chars().count();
        let close = text[at..].find(")]").map_or(text.len(), |n| at + n);
        let cond = &text[at + MARK.len()..close];
        if !(cond == "test" || cond.starts_with("all(test,")) {
            from = close;
            continue;
        }
        let mut j = text[..close + 2].chars().count();
        let mut path = None;
        loop {
            while j < chars.len() && chars[j].is_whitespace() {
                j += 1;
            }
            if chars.get(j) == Some(&'#') {
                let end = chars[j..]
                    .iter()
                    .position(|&x| x == ']')
                    .map_or(chars.len(), |n| j + n);
                let attr: String = chars[j..end].iter().collect();
                if attr.contains("path") {
                    // The literal is blanked: read it from the original text.
                    let lit: String = original[j..end].iter().collect();
                    path = lit.split('"').nth(1).map(str::to_string);
                }
                j = end + 1;
            } else {
                break;
            }
        }
        let rest: String = chars[j..].iter().collect();
        let item_end = match rest.find(['{', ';']) {
            Some(n) if rest.as_bytes()[n] == b';' => {
                let decl = rest[..n].trim();
                if let Some(name) = decl
                    .strip_prefix("mod ")
                    .or_else(|| decl.strip_prefix("pub(crate) mod "))
                {
                    mods.push((name.trim().to_string(), path.clone()));
                }
                j + rest[..n].chars().count() + 1
            }
            Some(n) => {
                let mut depth = 0;
                let mut k = j + rest[..n].chars().count();
                while k < chars.len() {
                    match chars[k] {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    k += 1;
                }
                k + 1
            }
            None => chars.len(),
        };
        for ch in out.iter_mut().take(item_end.min(chars.len())).skip(start) {
            if *ch != '\n' {
                *ch = ' ';
            }
        }
        from = text
            .char_indices()
            .nth(item_end.min(chars.len().saturating_sub(1)))
            .map_or(text.len(), |(b, _)| b.max(at + MARK.len()));
    }
    (out.into_iter().collect(), mods)
}

/// Every path through `crate` (or the binary's `repro`) or `super` in the code: (line, the
/// text as written, the module path it names, `use` groups expanded).
fn paths(code: &str, crate_words: &[&str], own: &[String]) -> Vec<(usize, String, Vec<String>)> {
    let c: Vec<char> = code.chars().collect();
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1;
    while i < c.len() {
        if c[i] == '\n' {
            line += 1;
            i += 1;
            continue;
        }
        if !ident(c[i]) || (i > 0 && (ident(c[i - 1]) || c[i - 1] == '$')) {
            i += 1;
            continue;
        }
        let word_end = c[i..]
            .iter()
            .position(|&x| !ident(x))
            .map_or(c.len(), |n| i + n);
        let word: String = c[i..word_end].iter().collect();
        let preceded_by_path = i >= 2 && c[i - 1] == ':' && c[i - 2] == ':';
        let start_base: Option<Vec<String>> = if preceded_by_path {
            None
        } else if crate_words.contains(&word.as_str()) {
            Some(Vec::new())
        } else if word == "super" {
            Some(own[..own.len().saturating_sub(1)].to_vec())
        } else {
            None
        };
        let Some(mut base) = start_base else {
            i = word_end;
            continue;
        };
        let mut j = word_end;
        if !(c.get(j) == Some(&':') && c.get(j + 1) == Some(&':')) {
            i = word_end;
            continue;
        }
        j += 2;
        // More `super::`s climb further.
        while c[j..].starts_with(&['s', 'u', 'p', 'e', 'r', ':', ':']) && word == "super" {
            base.pop();
            j += 7;
        }
        let mut found = Vec::new();
        let end = tree(&c, j, base, &mut found);
        let text: String = c[i..end].iter().filter(|x| !x.is_whitespace()).collect();
        for p in found {
            out.push((line, text.clone(), p));
        }
        i = end.max(word_end);
    }
    out
}

/// Reads a path tree (`a::b`, `a::{b, c::d}`, `{self, x}`) from `j`, pushing every path it names.
fn tree(c: &[char], mut j: usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let skip_ws = |mut j: usize| {
        while j < c.len() && c[j].is_whitespace() {
            j += 1;
        }
        j
    };
    j = skip_ws(j);
    if c.get(j) == Some(&'{') {
        j += 1;
        loop {
            j = skip_ws(j);
            match c.get(j) {
                None => return j,
                Some('}') => return j + 1,
                Some(',') => j += 1,
                _ => {
                    let before = j;
                    j = tree(c, j, prefix.clone(), out);
                    // Past `as name`, `*` or anything else up to the next comma or brace.
                    while j < c.len() && c[j] != ',' && c[j] != '}' {
                        j += 1;
                    }
                    if j == before {
                        j += 1;
                    }
                }
            }
        }
    }
    let end = c[j..]
        .iter()
        .position(|&x| !ident(x))
        .map_or(c.len(), |n| j + n);
    if end == j {
        out.push(prefix);
        return j;
    }
    let word: String = c[j..end].iter().collect();
    let mut path = prefix;
    if word != "self" {
        path.push(word);
    }
    if c.get(end) == Some(&':') && c.get(end + 1) == Some(&':') {
        return tree(c, end + 2, path, out);
    }
    out.push(path);
    end
}

/// Uses of repro's print macros: (line, macro).
fn print_macros(code: &str) -> Vec<(usize, &'static str)> {
    let mut out = Vec::new();
    for (n, l) in code.lines().enumerate() {
        for mac in ["outln", "errln", "out", "err"] {
            let needle = format!("{mac}!");
            let hit = l.match_indices(&needle).any(|(at, _)| {
                at == 0
                    || !l[..at].ends_with(|ch: char| ch.is_alphanumeric() || ch == '_' || ch == '.')
            });
            if hit {
                out.push((n + 1, mac));
                break;
            }
        }
    }
    out
}

/// The circles of a graph (its strongly connected parts of two or more), each in an order that
/// follows its edges.
fn circles(graph: &BTreeMap<Module, Vec<Import>>) -> Vec<Vec<Module>> {
    let nodes: BTreeSet<&Module> = graph
        .keys()
        .chain(graph.values().flatten().map(|i| &i.to))
        .collect();
    let reach = |from: &Module| -> BTreeSet<Module> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(n) = todo.pop() {
            for next in graph.get(&n).into_iter().flatten().map(|i| &i.to) {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&Module, BTreeSet<Module>> =
        nodes.iter().map(|n| (*n, reach(n))).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for n in &nodes {
        if done.contains(*n) || !reaches[n].contains(*n) {
            continue;
        }
        let part: BTreeSet<Module> = nodes
            .iter()
            .filter(|m| reaches[n].contains(**m) && reaches[*m].contains(*n))
            .map(|m| (*m).clone())
            .collect();
        done.extend(part.iter().cloned());
        // The shortest way around through `n`, found breadth first.
        let mut parent: BTreeMap<Module, Module> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([(*n).clone()]);
        let mut last = None;
        while let Some(x) = queue.pop_front() {
            let nexts = graph.get(&x).into_iter().flatten().map(|i| &i.to);
            if nexts.clone().any(|m| m == *n) {
                last = Some(x);
                break;
            }
            for m in nexts.filter(|m| part.contains(*m)) {
                if !parent.contains_key(m) && m != *n {
                    parent.insert(m.clone(), x.clone());
                    queue.push_back(m.clone());
                }
            }
        }
        let mut walk = Vec::new();
        let mut at = last;
        while let Some(x) = at {
            at = parent.get(&x).cloned();
            walk.push(x);
        }
        walk.reverse();
        out.push(walk);
    }
    out
}
