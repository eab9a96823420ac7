//! The version a distribution binary reports about itself (`k3s -v`), for builds under test: a
//! release or release candidate (`v1.33.5+k3s1`, `v1.32.9-rc1+k3s1`), a commit build
//! (`v1.30.6+k3s-48a3b849`, `-dirty` for a modified tree) or a plain `go build` (`dev`).
//! Sources: k3s's scripts/version.sh and pkg/version/version.go at v1.34.1+k3s1 (read; see
//! docs/k3s-review-2026-12.md §2).

use std::fmt;

use crate::{Distro, Version};

/// What a binary says it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reported {
    /// A release or a release candidate: `fixed-in` can place it.
    Release(Version),
    /// A build of a commit: the Kubernetes patch of its branch (not the release it will
    /// become) and the commit's first 8 hex digits; `fixed-in` cannot place it.
    Commit {
        distro: Distro,
        kubernetes: (u32, u32, u32),
        commit: String,
        dirty: bool,
    },
    /// Built without k3s's version flags (`k3s version dev (HEAD)`).
    Dev,
}

impl Reported {
    /// The version text of `text` for `distro`: the text after `<binary> version ` in the first
    /// line of its `-v` output, or that text alone (`v1.30.6+k3s-48a3b849`).
    pub fn parse(distro: Distro, text: &str) -> Result<Reported, String> {
        let facts = distro.facts();
        let first = text.lines().next().unwrap_or_default().trim();
        let word = first
            .strip_prefix(&format!("{} version ", facts.binary))
            .unwrap_or(first);
        // `v1.33.5+k3s1 (abcdef12)`: the commit in parentheses is not part of the version.
        let word = word.split_whitespace().next().unwrap_or_default();
        if word == "dev" {
            return Ok(Reported::Dev);
        }
        if let Some(v) = Version::parse_for(distro, word) {
            return Ok(Reported::Release(v));
        }
        let commit_build = || {
            let (core, rest) = word
                .strip_prefix('v')?
                .split_once(&format!("+{}-", facts.build_marker))?;
            let (commit, dirty) = match rest.strip_suffix("-dirty") {
                Some(c) => (c, true),
                None => (rest, false),
            };
            if commit.len() != 8 || !commit.chars().all(|c| c.is_ascii_hexdigit()) {
                return None;
            }
            let mut nums = core.split('.').map(|n| n.parse::<u32>().ok());
            let kubernetes = (nums.next()??, nums.next()??, nums.next()??);
            if nums.next().is_some() {
                return None;
            }
            Some(Reported::Commit {
                distro,
                kubernetes,
                commit: commit.to_string(),
                dirty,
            })
        };
        commit_build().ok_or_else(|| {
            format!(
                "`{first}` is no {} version output; expected `{} version` and a release ({}), a candidate ({}), a commit build (v1.30.6+{}-48a3b849, maybe -dirty) or dev",
                facts.name, facts.binary, facts.example_version, facts.example_candidate, facts.build_marker
            )
        })
    }

    /// The release or candidate, if this is one.
    pub fn release(&self) -> Option<&Version> {
        match self {
            Reported::Release(v) => Some(v),
            _ => None,
        }
    }
}

impl fmt::Display for Reported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reported::Release(v) => write!(f, "{v}"),
            Reported::Commit {
                distro,
                kubernetes: (a, b, c),
                commit,
                dirty,
            } => write!(
                f,
                "v{a}.{b}.{c}+{}-{commit}{}",
                distro.facts().build_marker,
                if *dirty { "-dirty" } else { "" }
            ),
            Reported::Dev => f.write_str("dev"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Reported, String> {
        Reported::parse(Distro::K3s, s)
    }

    #[test]
    fn every_form_k3s_prints() {
        assert_eq!(
            parse("k3s version v1.33.5+k3s1 (abcdef12)\ngo version go1.24.6").unwrap(),
            Reported::Release("v1.33.5+k3s1".parse().unwrap())
        );
        assert_eq!(
            parse("k3s version v1.32.9-rc1+k3s1 (062b9534)").unwrap(),
            Reported::Release("v1.32.9-rc1+k3s1".parse().unwrap())
        );
        let commit = parse("k3s version v1.30.6+k3s-48a3b849 (48a3b849)").unwrap();
        assert_eq!(
            commit,
            Reported::Commit {
                distro: Distro::K3s,
                kubernetes: (1, 30, 6),
                commit: "48a3b849".into(),
                dirty: false
            }
        );
        assert_eq!(commit.to_string(), "v1.30.6+k3s-48a3b849");
        assert_eq!(commit.release(), None);
        let dirty = parse("v1.33.5+k3s-abcdef12-dirty").unwrap();
        assert_eq!(dirty.to_string(), "v1.33.5+k3s-abcdef12-dirty");
        assert_eq!(parse("k3s version dev (HEAD)").unwrap(), Reported::Dev);
        // The stand-in's own line.
        assert!(matches!(
            parse("k3s version v1.33.4+k3s1 (repro-sim)"),
            Ok(Reported::Release(_))
        ));
    }

    #[test]
    fn anything_else_is_a_clear_error() {
        for bad in [
            "",
            "k3s version",
            "k3s version v1.33+k3s-48a3b849",
            "k3s version v1.33.5+k3s-48a3b84",
            "k3s version v1.33.5+k3s-48a3b84z",
            "rke2 version v1.33.5+rke2r1",
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains("expected `k3s version`"), "{bad}: {e}");
        }
    }
}
