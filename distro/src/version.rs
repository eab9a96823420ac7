//! Distribution versions (`v1.33.4+k3s1`, `v1.33.5-rc1+k3s1`, the image-tag form `v1.33.4-k3s1`)
//! and per-release-line version sets.
//!
//! Distributions ship several release lines at once (1.31, 1.32, 1.33, ...) and backport fixes to
//! each, so "fixed since" or "exists since" is never one version: it is one first version per
//! line. A [`ReleaseSet`] holds exactly that and answers whether any version is at or past it.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use crate::Distro;

/// A parsed version. Ordering follows release order: an `-rcN` comes before its release.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
    /// `rc1` in `v1.33.5-rc1+k3s1`; `None` for a release.
    pub pre: Option<String>,
    /// Whose release this is: the build marker (`+k3sN`) says.
    pub distro: Distro,
    /// The `N` of `+k3sN`.
    pub build: u32,
}

/// Text that is no version of any distribution; says what the forms are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionError(pub String);

impl fmt::Display for VersionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = Distro::ALL.iter().map(|d| d.name()).collect();
        let forms: Vec<String> = Distro::ALL
            .iter()
            .map(|d| {
                let facts = d.facts();
                format!("{} (or {})", facts.example_version, facts.example_candidate)
            })
            .collect();
        write!(
            f,
            "`{}` is not a {} version; expected the form {}",
            self.0,
            names.join(" or "),
            forms.join(", or ")
        )
    }
}

impl std::error::Error for VersionError {}

impl Version {
    /// `s` as a version of `distro` only.
    pub fn parse_for(distro: Distro, s: &str) -> Option<Version> {
        let marker = distro.facts().build_marker;
        let body = s.strip_prefix('v')?;
        // Image tags spell `+` as `-`: accept `v1.33.4-k3s1` too, it is the same release.
        let (core, build) = match body.rsplit_once(&format!("+{marker}")) {
            Some(parts) => parts,
            None => body.rsplit_once(&format!("-{marker}"))?,
        };
        let build: u32 = parse_num(build)?;
        let (nums, pre) = match core.split_once('-') {
            Some((n, p)) if !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric()) => {
                (n, Some(p.to_string()))
            }
            Some(_) => return None,
            None => (core, None),
        };
        let mut parts = nums.split('.');
        let major = parts.next().and_then(parse_num)?;
        let minor = parts.next().and_then(parse_num)?;
        let patch = parts.next().and_then(parse_num)?;
        if parts.next().is_some() {
            return None;
        }
        Some(Version {
            major,
            minor,
            patch,
            pre,
            distro,
            build,
        })
    }

    /// The release line, e.g. `(1, 33)`.
    pub fn line(&self) -> (u32, u32) {
        (self.major, self.minor)
    }

    /// The Docker image tag the distribution publishes for this version (`+` is not allowed in
    /// tags).
    pub fn image_tag(&self) -> String {
        self.to_string().replace('+', "-")
    }
}

impl FromStr for Version {
    type Err = VersionError;

    /// A version of whichever distribution's grammar `s` follows.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Distro::ALL
            .iter()
            .find_map(|d| Version::parse_for(*d, s))
            .ok_or_else(|| VersionError(s.to_string()))
    }
}

fn parse_num(s: &str) -> Option<u32> {
    if s.is_empty() || !s.chars().all(|c| c.is_ascii_digit()) || (s.len() > 1 && s.starts_with('0'))
    {
        return None;
    }
    s.parse().ok()
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}.{}.{}", self.major, self.minor, self.patch)?;
        if let Some(pre) = &self.pre {
            write!(f, "-{pre}")?;
        }
        write!(f, "+{}{}", self.distro.facts().build_marker, self.build)
    }
}

impl serde::Serialize for Version {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Version {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(other.major, other.minor, other.patch))
            .then_with(|| match (&self.pre, &other.pre) {
                (None, None) => Ordering::Equal,
                (None, Some(_)) => Ordering::Greater,
                (Some(_), None) => Ordering::Less,
                (Some(a), Some(b)) => pre_key(a).cmp(&pre_key(b)),
            })
            .then(self.build.cmp(&other.build))
            // Versions of two distributions are never one history; this keeps Ord total.
            .then(self.distro.cmp(&other.distro))
    }
}

/// `rc10` after `rc2`: the word, then its number (as a number), then whatever follows.
fn pre_key(pre: &str) -> (&str, u64, &str) {
    let digits_at = pre.find(|c: char| c.is_ascii_digit()).unwrap_or(pre.len());
    let (word, rest) = pre.split_at(digits_at);
    let digits_end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let (num, tail) = rest.split_at(digits_end);
    (word, num.parse().unwrap_or(0), tail)
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// First versions per release line from which something holds (a fix, a feature).
///
/// A version holds if its line is listed and it is at or past that line's entry, or if its line
/// is newer than every listed line (later lines branch off after the change). Lines older than
/// every listed line never hold.
///
/// A release candidate of a line's first version (`v1.33.5-rc1+k3s1` for `v1.33.5+k3s1`) holds
/// only where evidence places it: `candidates` lists the first candidate that has the change, per
/// line (e.g. QA's "Validated on v1.33.5-rc1+k3s1"). Without one, [`Self::placement`] cannot say.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReleaseSet {
    pub firsts: Vec<Version>,
    /// The first release candidate of a first version that has the change, per line.
    pub candidates: Vec<Version>,
}

impl ReleaseSet {
    pub fn new(mut firsts: Vec<Version>) -> Self {
        firsts.sort();
        ReleaseSet {
            firsts,
            candidates: Vec::new(),
        }
    }

    /// The set with the first candidates (of the listed first versions) that have the change.
    pub fn with_candidates(mut self, mut candidates: Vec<Version>) -> Self {
        candidates.sort();
        self.candidates = candidates;
        self
    }

    /// The first candidate of `v`'s line that has the change, if evidence names one.
    pub fn first_candidate_in_line(&self, v: &Version) -> Option<&Version> {
        self.candidates.iter().find(|c| c.line() == v.line())
    }

    /// Whether `v` is a release candidate of its line's first version (`v1.33.5-rc1+k3s1` when
    /// `v1.33.5+k3s1` is the first): the one kind of version the release order cannot place.
    pub fn is_candidate_of_first(&self, v: &Version) -> bool {
        v.pre.is_some()
            && self
                .first_in_line(v)
                .is_some_and(|f| (f.major, f.minor, f.patch) == (v.major, v.minor, v.patch))
    }

    /// Whether `v` has the change: `None` for a candidate of a first version that no evidence
    /// places (see [`Self::candidates`]).
    pub fn placement(&self, v: &Version) -> Option<bool> {
        if !self.is_candidate_of_first(v) {
            return Some(self.contains(v));
        }
        self.first_candidate_in_line(v).map(|c| v >= c)
    }

    /// The listed first version of `v`'s release line, if the line is listed.
    pub fn first_in_line(&self, v: &Version) -> Option<&Version> {
        self.firsts.iter().find(|f| f.line() == v.line())
    }

    /// Whether `v` has the change; a candidate no evidence places has not.
    pub fn contains(&self, v: &Version) -> bool {
        if let Some(first) = self.first_in_line(v) {
            if v < first && self.is_candidate_of_first(v) {
                return self.first_candidate_in_line(v).is_some_and(|c| v >= c);
            }
            return v >= first;
        }
        self.newer_than_every_line(v)
    }

    /// Whether `v`'s line is newer than every listed line (and so has what they all got).
    pub fn newer_than_every_line(&self, v: &Version) -> bool {
        match self.firsts.iter().map(Version::line).max() {
            Some(newest) => v.line() > newest,
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        s.parse().expect("valid version")
    }

    #[test]
    fn parses_and_prints_releases_and_candidates() {
        assert_eq!(v("v1.33.4+k3s1").to_string(), "v1.33.4+k3s1");
        assert_eq!(v("v1.33.5-rc1+k3s1").to_string(), "v1.33.5-rc1+k3s1");
        assert_eq!(v("v1.33.5-rc1-k3s1"), v("v1.33.5-rc1+k3s1"));
        assert_eq!(v("v1.33.4-k3s1"), v("v1.33.4+k3s1"));
        assert_eq!(v("v1.33.4+k3s1").image_tag(), "v1.33.4-k3s1");
        assert_eq!(v("v1.33.4+k3s2").build, 2);
        assert_eq!(v("v1.33.4+k3s1").distro, Distro::K3s);
        for bad in [
            "1.33.4+k3s1",
            "v1.33+k3s1",
            "v1.33.4",
            "latest",
            "v1.33.4+k3s",
            "v01.2.3+k3s1",
            "v1.2.3.4+k3s1",
            "v1.33.4+rke2r1x",
            "",
        ] {
            assert!(bad.parse::<Version>().is_err(), "{bad} should be rejected");
        }
        assert_eq!(
            "latest".parse::<Version>().unwrap_err().to_string(),
            "`latest` is not a k3s or rke2 version; expected the form v1.33.4+k3s1 (or v1.33.5-rc1+k3s1), or v1.32.5+rke2r1 (or v1.33.5-rc1+rke2r1)"
        );
    }

    #[test]
    fn parses_rke2_versions_by_their_build_marker() {
        assert_eq!(v("v1.32.5+rke2r1").distro, Distro::Rke2);
        assert_eq!(v("v1.32.5+rke2r1").to_string(), "v1.32.5+rke2r1");
        assert_eq!(v("v1.33.5-rc1+rke2r1").to_string(), "v1.33.5-rc1+rke2r1");
        assert_eq!(v("v1.33.5-rc1+rke2r1").pre.as_deref(), Some("rc1"));
        assert_eq!(v("v1.32.5-rke2r1"), v("v1.32.5+rke2r1"));
        assert_eq!(v("v1.32.5+rke2r1").image_tag(), "v1.32.5-rke2r1");
        assert_eq!(v("v1.31.14+rke2r2").build, 2);
        assert!(v("v1.33.5-rc1+rke2r1") < v("v1.33.5+rke2r1"));
        assert!(v("v1.31.14+rke2r1") < v("v1.31.14+rke2r2"));
        // Not rke2's grammar (`+rke2rN`), and no k3s version either.
        for bad in [
            "v1.32.5+rke21",
            "v1.32.5+rke2r",
            "v1.32.5+rke2",
            "v1.32.5+rke2r01",
        ] {
            assert!(bad.parse::<Version>().is_err(), "{bad} should be rejected");
        }
        assert_ne!(v("v1.32.5+rke2r1"), v("v1.32.5+k3s1"));
    }

    #[test]
    fn orders_candidates_before_releases() {
        assert!(v("v1.33.5-rc1+k3s1") < v("v1.33.5+k3s1"));
        assert!(v("v1.33.4+k3s1") < v("v1.33.5-rc1+k3s1"));
        assert!(v("v1.33.4+k3s1") < v("v1.33.4+k3s2"));
        assert!(v("v1.32.9+k3s1") < v("v1.33.0+k3s1"));
    }

    #[test]
    fn release_set_per_line() {
        let fixed = ReleaseSet::new(
            ["v1.31.13+k3s1", "v1.32.9+k3s1", "v1.33.5+k3s1"]
                .iter()
                .map(|s| v(s))
                .collect(),
        );
        assert!(!fixed.contains(&v("v1.33.4+k3s1")));
        assert!(fixed.contains(&v("v1.33.5+k3s1")));
        assert!(fixed.contains(&v("v1.34.1+k3s1")));
        assert!(!fixed.contains(&v("v1.32.8+k3s1")));
        assert!(fixed.contains(&v("v1.32.9+k3s1")));
        assert!(!fixed.contains(&v("v1.30.14+k3s1")));
        assert!(!ReleaseSet::default().contains(&v("v1.33.4+k3s1")));
    }

    #[test]
    fn release_set_candidates_and_rebuilds() {
        let fixed = ReleaseSet::new(vec![v("v1.33.5+k3s1"), v("v1.32.9+k3s1")]);
        // Sorted on construction, whatever order the file gives.
        assert_eq!(fixed.firsts[0], v("v1.32.9+k3s1"));
        // A release candidate of the fixed release comes before it.
        assert!(!fixed.contains(&v("v1.33.5-rc1+k3s1")));
        // A later rebuild of the same Kubernetes patch is still fixed.
        assert!(fixed.contains(&v("v1.33.5+k3s2")));
        assert_eq!(
            fixed.first_in_line(&v("v1.33.9+k3s1")),
            Some(&v("v1.33.5+k3s1"))
        );
        assert_eq!(fixed.first_in_line(&v("v1.34.0+k3s1")), None);
    }

    #[test]
    fn candidates_order_by_number_and_place_by_evidence() {
        assert!(v("v1.33.5-rc2+k3s1") < v("v1.33.5-rc10+k3s1"));
        assert!(v("v1.33.5-rc1+k3s1") < v("v1.33.5-rc2+k3s1"));
        let fixed = ReleaseSet::new(vec![v("v1.33.5+k3s1"), v("v1.32.9+k3s1")])
            .with_candidates(vec![v("v1.33.5-rc2+k3s1")]);
        assert_eq!(fixed.placement(&v("v1.33.5-rc1+k3s1")), Some(false));
        assert_eq!(fixed.placement(&v("v1.33.5-rc2+k3s1")), Some(true));
        assert_eq!(fixed.placement(&v("v1.33.5-rc3+k3s1")), Some(true));
        assert!(fixed.contains(&v("v1.33.5-rc3+k3s1")));
        // No evidence for 1.32's candidates: not placed, and not counted as fixed.
        assert_eq!(fixed.placement(&v("v1.32.9-rc1+k3s1")), None);
        assert!(!fixed.contains(&v("v1.32.9-rc1+k3s1")));
        // Candidates of other releases follow release order.
        assert_eq!(fixed.placement(&v("v1.32.8-rc1+k3s1")), Some(false));
        assert_eq!(fixed.placement(&v("v1.32.10-rc1+k3s1")), Some(true));
        assert_eq!(fixed.placement(&v("v1.34.0-rc1+k3s1")), Some(true));
    }

    #[test]
    fn release_set_for_a_feature_since() {
        // Embedded registry: backported to four lines at once.
        let since = ReleaseSet::new(
            [
                "v1.26.13+k3s1",
                "v1.27.10+k3s1",
                "v1.28.6+k3s1",
                "v1.29.1+k3s1",
            ]
            .iter()
            .map(|s| v(s))
            .collect(),
        );
        assert!(!since.contains(&v("v1.29.0+k3s1")));
        assert!(since.contains(&v("v1.30.0+k3s1")));
        assert!(!since.contains(&v("v1.25.16+k3s4")));
        assert!(since.contains(&v("v1.26.13+k3s1")));
    }
}
