//! The ordered list of a distribution's releases that `repro bisect` searches (its facts'
//! `releases_path`: `releases/k3s.yaml` for k3s).
//!
//! It lives outside `checks/` and `topologies/` because the catalog reads every YAML file there
//! as a scenario. Like the scenario files, it is built into the binary and can be replaced: by
//! `releases/k3s.yaml` in the project folder, or by `--versions FILE`. Problems are reported
//! with file, line and column, and nothing runs until the file is valid.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::diag::{Diagnostic, Diagnostics, FileDiag};
use distro::{Distro, Version};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReleasesFile {
    releases: Vec<Spanned<String>>,
}

/// The releases, in file order (release order within each line).
#[derive(Debug, Clone)]
pub(crate) struct ReleaseList {
    /// Where the list came from, for messages (`<builtin>/releases/k3s.yaml` when shipped).
    pub(crate) path: PathBuf,
    pub(crate) releases: Vec<Version>,
}

impl ReleaseList {
    /// `--versions FILE`, else the project's `releases/k3s.yaml`, else the shipped list.
    pub(crate) fn find(
        distro: Distro,
        explicit: Option<&Path>,
        root: Option<&Path>,
    ) -> Result<ReleaseList, Diagnostics> {
        let facts = distro.facts();
        if let Some(p) = explicit {
            return Self::read(distro, p);
        }
        if let Some(r) = root {
            let p = r.join(facts.releases_path);
            // `./releases/k3s.yaml` reads better as `releases/k3s.yaml` in messages.
            let p = p.strip_prefix(".").map(Path::to_path_buf).unwrap_or(p);
            if p.is_file() {
                return Self::read(distro, &p);
            }
        }
        Self::parse(
            distro,
            &Path::new("<builtin>").join(facts.releases_path),
            facts.releases_yaml,
        )
    }

    pub(crate) fn read(distro: Distro, path: &Path) -> Result<ReleaseList, Diagnostics> {
        // Named on the command line: a regular file of bounded size (`--versions /dev/zero`
        // would read without end).
        let text = crate::safe_fs::read_named(path, crate::safe_fs::SCENARIO_LIMIT)
            .map_err(|e| e.reason())
            .and_then(|b| String::from_utf8(b).map_err(|_| "it is not UTF-8 text".to_string()));
        match text {
            Ok(text) => Self::parse(distro, path, &text),
            Err(e) => Err(Diagnostics(vec![Diagnostic::in_file(
                path,
                0,
                0,
                format!("cannot read the release list: {e}"),
            )
            .help(format!(
                "give a YAML file with `releases:` and one {distro} version per entry"
            ))])),
        }
    }

    pub(crate) fn parse(
        distro: Distro,
        path: &Path,
        text: &str,
    ) -> Result<ReleaseList, Diagnostics> {
        let d = FileDiag { file: path };
        let facts = distro.facts();
        let example = Version::parse_for(distro, facts.example_version)
            .map(|v| Version { patch: 0, ..v })
            .map(|v| v.to_string())
            .unwrap_or_default();
        if text.lines().all(|l| {
            let t = l.trim();
            t.is_empty() || t.starts_with('#')
        }) {
            return Err(Diagnostics(vec![d
                .start("the release list is empty (no YAML content)")
                .help(format!(
                    "write `releases:` followed by `- {example}` lines, oldest first"
                ))]));
        }
        let raw: ReleasesFile =
            serde_saphyr::from_str_with_options(text, crate::raw::yaml_options())
                .map_err(|e| Diagnostics(vec![d.yaml(&e, text)]))?;
        let mut out = Diagnostics::default();
        if raw.releases.is_empty() {
            out.push(
                d.start("`releases:` lists no version")
                    .help("list at least the releases you want to bisect over"),
            );
        }
        let mut seen: HashMap<Version, ()> = HashMap::new();
        let mut last_in_line: HashMap<(u32, u32), Version> = HashMap::new();
        let mut releases = Vec::new();
        for s in &raw.releases {
            let v = match s.value.parse::<Version>() {
                Ok(v) if v.distro == distro => v,
                Ok(v) => {
                    out.push(
                        d.span(
                            s,
                            format!("`{v}` is a {} release, not a {distro} one", v.distro),
                        )
                        .help(format!(
                            "list {distro} releases only, e.g. {}",
                            facts.example_version
                        )),
                    );
                    continue;
                }
                Err(e) => {
                    out.push(d.span(s, e.to_string()).help(format!(
                        "write the full {distro} release, e.g. {}",
                        facts.example_version
                    )));
                    continue;
                }
            };
            if seen.insert(v.clone(), ()).is_some() {
                out.push(
                    d.span(s, format!("`{v}` is listed twice"))
                        .help("list each release once"),
                );
                continue;
            }
            if let Some(prev) = last_in_line.get(&v.line()) {
                if &v < prev {
                    out.push(
                        d.span(
                            s,
                            format!("`{v}` comes after `{prev}` here, but is an older release"),
                        )
                        .help("list each release line oldest first: bisect relies on the order"),
                    );
                }
            }
            last_in_line.insert(v.line(), v.clone());
            releases.push(v);
        }
        if out.is_empty() {
            Ok(ReleaseList {
                path: path.to_path_buf(),
                releases,
            })
        } else {
            Err(out.sorted())
        }
    }

    pub(crate) fn contains(&self, v: &Version) -> bool {
        self.releases.contains(v)
    }

    /// The releases of `v`'s line, in release order.
    pub(crate) fn line_of(&self, v: &Version) -> Vec<Version> {
        let mut l: Vec<Version> = self
            .releases
            .iter()
            .filter(|r| r.line() == v.line())
            .cloned()
            .collect();
        l.sort();
        l
    }

    /// Every release from `a` to `b` (both included, either order), oldest first. Both must be
    /// listed and in the same release line; the caller checks that first.
    pub(crate) fn range(&self, a: &Version, b: &Version) -> Vec<Version> {
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        self.line_of(a)
            .into_iter()
            .filter(|v| v >= lo && v <= hi)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        s.parse().expect("valid version")
    }

    #[test]
    fn shipped_list_is_valid_and_ordered() {
        let l = ReleaseList::find(Distro::K3s, None, None).expect("shipped list parses");
        assert!(l.contains(&v("v1.33.0+k3s1")));
        assert!(l.contains(&v("v1.33.5+k3s1")));
        assert!(l.contains(&v("v1.31.14+k3s1")));
        // k3s never published v1.34.0+k3s1: the first 1.34 release is v1.34.1+k3s1.
        assert!(!l.contains(&v("v1.34.0+k3s1")));
        let r = l.range(&v("v1.33.6+k3s1"), &v("v1.33.0+k3s1"));
        assert_eq!(r.len(), 7);
        assert_eq!(r[0], v("v1.33.0+k3s1"));
        assert_eq!(r[6], v("v1.33.6+k3s1"));
    }

    #[test]
    fn errors_carry_positions() {
        let text = "releases:\n  - v1.33.1+k3s1\n  - v1.33.0+k3s1\n  - banana\n  - v1.33.1+k3s1\n";
        let e = ReleaseList::parse(Distro::K3s, Path::new("r.yaml"), text).expect_err("invalid");
        let s = e.to_string();
        assert!(
            s.contains("r.yaml:3:5: error: `v1.33.0+k3s1` comes after"),
            "{s}"
        );
        assert!(
            s.contains("r.yaml:4:5: error: `banana` is not a k3s or rke2 version"),
            "{s}"
        );
        assert!(
            s.contains("r.yaml:5:5: error: `v1.33.1+k3s1` is listed twice"),
            "{s}"
        );
        let e = ReleaseList::parse(Distro::K3s, Path::new("r.yaml"), "versions: []\n")
            .expect_err("unknown");
        assert!(
            e.to_string()
                .contains("r.yaml:1:1: error: unknown key `versions`"),
            "{e}"
        );
        let e =
            ReleaseList::parse(Distro::K3s, Path::new("r.yaml"), "# nothing\n").expect_err("empty");
        assert!(e.to_string().contains("empty"), "{e}");
    }
}
