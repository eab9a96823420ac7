//! k3s version strings (`v1.33.4+k3s1`, `v1.33.5-rc1+k3s1`) and per-release-line version sets.
//!
//! k3s ships several release lines at once (1.31, 1.32, 1.33, ...) and backports fixes to each, so
//! "fixed since" or "exists since" is never one version: it is one first version per line. A
//! [`ReleaseSet`] holds exactly that and answers whether any version is at or past it.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

/// A parsed k3s version. Ordering follows release order: an `-rcN` comes before its release.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct K3sVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
    /// `rc1` in `v1.33.5-rc1+k3s1`; `None` for a release.
    pub pre: Option<String>,
    /// The `N` of `+k3sN`.
    pub k3s: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a k3s version; expected the form v1.33.4+k3s1 (or v1.33.5-rc1+k3s1)")]
pub struct VersionError(pub String);

impl FromStr for K3sVersion {
    type Err = VersionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || VersionError(s.to_string());
        // Image tags spell `+` as `-`: accept `v1.33.4-k3s1` too, it is the same release.
        let body = s.strip_prefix('v').ok_or_else(err)?;
        let (core, k3s) = match body.rsplit_once("+k3s") {
            Some(parts) => parts,
            None => body.rsplit_once("-k3s").ok_or_else(err)?,
        };
        let k3s: u32 = parse_num(k3s).ok_or_else(err)?;
        let (nums, pre) = match core.split_once('-') {
            Some((n, p)) if !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric()) => {
                (n, Some(p.to_string()))
            }
            Some(_) => return Err(err()),
            None => (core, None),
        };
        let mut parts = nums.split('.');
        let major = parts.next().and_then(parse_num).ok_or_else(err)?;
        let minor = parts.next().and_then(parse_num).ok_or_else(err)?;
        let patch = parts.next().and_then(parse_num).ok_or_else(err)?;
        if parts.next().is_some() {
            return Err(err());
        }
        Ok(K3sVersion {
            major,
            minor,
            patch,
            pre,
            k3s,
        })
    }
}

fn parse_num(s: &str) -> Option<u32> {
    if s.is_empty() || !s.chars().all(|c| c.is_ascii_digit()) || (s.len() > 1 && s.starts_with('0'))
    {
        return None;
    }
    s.parse().ok()
}

impl fmt::Display for K3sVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}.{}.{}", self.major, self.minor, self.patch)?;
        if let Some(pre) = &self.pre {
            write!(f, "-{pre}")?;
        }
        write!(f, "+k3s{}", self.k3s)
    }
}

impl serde::Serialize for K3sVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for K3sVersion {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl Ord for K3sVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(other.major, other.minor, other.patch))
            .then_with(|| match (&self.pre, &other.pre) {
                (None, None) => Ordering::Equal,
                (None, Some(_)) => Ordering::Greater,
                (Some(_), None) => Ordering::Less,
                (Some(a), Some(b)) => a.cmp(b),
            })
            .then(self.k3s.cmp(&other.k3s))
    }
}

impl PartialOrd for K3sVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl K3sVersion {
    /// The release line, e.g. `(1, 33)`.
    pub fn line(&self) -> (u32, u32) {
        (self.major, self.minor)
    }

    /// The Docker image tag k3s publishes for this version (`+` is not allowed in tags).
    pub fn image_tag(&self) -> String {
        self.to_string().replace('+', "-")
    }
}

/// First versions per release line from which something holds (a fix, a feature).
///
/// A version holds if its line is listed and it is at or past that line's entry, or if its line
/// is newer than every listed line (later lines branch off after the change). Lines older than
/// every listed line never hold.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReleaseSet {
    pub firsts: Vec<K3sVersion>,
}

impl ReleaseSet {
    pub fn new(mut firsts: Vec<K3sVersion>) -> Self {
        firsts.sort();
        ReleaseSet { firsts }
    }

    /// The listed first version of `v`'s release line, if the line is listed.
    pub fn first_in_line(&self, v: &K3sVersion) -> Option<&K3sVersion> {
        self.firsts.iter().find(|f| f.line() == v.line())
    }

    pub fn contains(&self, v: &K3sVersion) -> bool {
        if let Some(first) = self.first_in_line(v) {
            return v >= first;
        }
        match self.firsts.iter().map(K3sVersion::line).max() {
            Some(newest) => v.line() > newest,
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> K3sVersion {
        s.parse().expect("valid version")
    }

    #[test]
    fn parses_and_prints_releases_and_candidates() {
        assert_eq!(v("v1.33.4+k3s1").to_string(), "v1.33.4+k3s1");
        assert_eq!(v("v1.33.5-rc1+k3s1").to_string(), "v1.33.5-rc1+k3s1");
        assert_eq!(v("v1.33.4-k3s1"), v("v1.33.4+k3s1"));
        assert_eq!(v("v1.33.4+k3s1").image_tag(), "v1.33.4-k3s1");
        for bad in [
            "1.33.4+k3s1",
            "v1.33+k3s1",
            "v1.33.4",
            "latest",
            "v1.33.4+k3s",
            "v01.2.3+k3s1",
            "v1.2.3.4+k3s1",
            "",
        ] {
            assert!(
                bad.parse::<K3sVersion>().is_err(),
                "{bad} should be rejected"
            );
        }
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
        // A later k3s rebuild of the same Kubernetes patch is still fixed.
        assert!(fixed.contains(&v("v1.33.5+k3s2")));
        assert_eq!(
            fixed.first_in_line(&v("v1.33.9+k3s1")),
            Some(&v("v1.33.5+k3s1"))
        );
        assert_eq!(fixed.first_in_line(&v("v1.34.0+k3s1")), None);
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
