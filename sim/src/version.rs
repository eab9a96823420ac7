//! The k3s version the stand-in imitates, and what that version decides.
//!
//! The binary itself is version-less: each image bakes `REPRO_SIM_K3S_VERSION`
//! in, and every behaviour difference between k3s releases that repro can
//! observe is decided here, from the release notes and backports of k3s.

use std::fmt;

/// Env var that carries the imitated k3s version (set by the image).
pub const VERSION_ENV: &str = "REPRO_SIM_K3S_VERSION";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct K3sVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
    /// Exactly as given (`v1.33.4+k3s1`), for the banner.
    pub raw: String,
}

impl fmt::Display for K3sVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

impl K3sVersion {
    /// Accepts `v1.33.4+k3s1`, `1.33.4+k3s1`, the image-tag form `v1.33.4-k3s1`
    /// and release candidates `v1.33.5-rc1+k3s1`.
    pub fn parse(text: &str) -> Result<K3sVersion, String> {
        let trimmed = text.trim();
        let body = trimmed.strip_prefix('v').unwrap_or(trimmed);
        // The numeric core ends at the first '-' or '+'.
        let core_end = body.find(['-', '+']).unwrap_or(body.len());
        let mut parts = body[..core_end].split('.');
        let mut next = |what: &str| -> Result<u32, String> {
            parts
                .next()
                .ok_or_else(|| format!("invalid k3s version {trimmed:?}: missing {what}"))?
                .parse::<u32>()
                .map_err(|_| format!("invalid k3s version {trimmed:?}: bad {what}"))
        };
        let major = next("major")?;
        let minor = next("minor")?;
        let patch = next("patch")?;
        if parts.next().is_some() {
            return Err(format!("invalid k3s version {trimmed:?}: too many parts"));
        }
        let raw = if trimmed.starts_with('v') {
            trimmed.to_string()
        } else {
            format!("v{trimmed}")
        };
        Ok(K3sVersion {
            major,
            minor,
            patch,
            raw,
        })
    }

    /// Whether this release has a change of `releases/k3s-changes.yaml`.
    pub fn has(&self, change: &str) -> bool {
        crate::releases::has(change, self)
    }

    /// k3s #12753 (PR #12754, backports #12885/#12886/#12887): etcd-only
    /// servers with a `server:` URL stop bootstrapping their agent off the
    /// joined node's supervisor.
    pub fn has_etcd_only_bootstrap_fix(&self) -> bool {
        self.has("etcd-only-bootstrap-fix")
    }

    /// `--embedded-registry` (spegel).
    pub fn has_embedded_registry(&self) -> bool {
        self.has("embedded-registry")
    }

    /// `--supervisor-metrics` (k3s PR #10019).
    pub fn has_supervisor_metrics(&self) -> bool {
        self.has("supervisor-metrics")
    }

    /// `--secrets-encryption-provider` and the `EncryptProvider` critical arg.
    pub fn has_encrypt_provider(&self) -> bool {
        self.has("secrets-encryption-provider")
    }

    /// The `FlannelIPMasqDisableRandomFully` critical arg.
    pub fn has_flannel_ip_masq_disable_random_fully(&self) -> bool {
        self.has("flannel-ip-masq-disable-random-fully")
    }

    /// etcd-only agents switch their load balancer's default server to a
    /// control-plane node, and log the newer wait message.
    pub fn has_local_supervisor_default(&self) -> bool {
        self.has("etcd-only-local-supervisor-default")
    }

    /// The kubelet no longer waits for apiserver addresses on etcd-only nodes.
    pub fn has_agent_startup_sequencing(&self) -> bool {
        self.has("agent-startup-sequencing")
    }

    /// `Major`/`Minor` for the apiserver `/version` document.
    pub fn minor_string(&self) -> String {
        self.minor.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> K3sVersion {
        K3sVersion::parse(text).expect("valid version")
    }

    #[test]
    fn parses_the_forms_repro_uses() {
        assert_eq!(v("v1.33.4+k3s1").patch, 4);
        assert_eq!(v("1.33.4+k3s1").raw, "v1.33.4+k3s1");
        assert_eq!(v("v1.33.4-k3s1").minor, 33);
        assert_eq!(v("v1.33.5-rc1+k3s1").patch, 5);
        assert!(K3sVersion::parse("v1.33").is_err());
        assert!(K3sVersion::parse("banana").is_err());
        assert!(K3sVersion::parse("").is_err());
        assert!(K3sVersion::parse("v1.2.3.4").is_err());
    }

    #[test]
    fn fix_lands_per_release_line() {
        let cases = [
            ("v1.29.15+k3s1", false),
            ("v1.30.14+k3s1", false),
            ("v1.31.12+k3s1", false),
            ("v1.31.13+k3s1", true),
            ("v1.32.8+k3s1", false),
            ("v1.32.9+k3s1", true),
            ("v1.33.4+k3s1", false),
            ("v1.33.5+k3s1", true),
            ("v1.33.5-rc1+k3s1", true),
            // k3s never published v1.34.0+k3s1; the table lists v1.34.1+k3s1.
            ("v1.34.0+k3s1", false),
            ("v1.34.1+k3s1", true),
            ("v1.35.0+k3s1", true),
        ];
        for (text, fixed) in cases {
            assert_eq!(v(text).has_etcd_only_bootstrap_fix(), fixed, "{text}");
        }
    }

    #[test]
    fn embedded_registry_availability() {
        let cases = [
            ("v1.25.16+k3s4", false),
            ("v1.26.12+k3s1", false),
            ("v1.26.13+k3s1", true),
            ("v1.27.9+k3s1", false),
            ("v1.27.10+k3s1", true),
            ("v1.28.5+k3s1", false),
            ("v1.28.6+k3s2", true),
            ("v1.29.0+k3s1", false),
            ("v1.29.1+k3s2", true),
            ("v1.30.0+k3s1", true),
        ];
        for (text, has) in cases {
            assert_eq!(v(text).has_embedded_registry(), has, "{text}");
        }
    }

    #[test]
    fn supervisor_metrics_availability() {
        let cases = [
            ("v1.26.15+k3s1", false),
            ("v1.27.14+k3s1", false),
            ("v1.27.15+k3s1", true),
            ("v1.28.10+k3s1", false),
            ("v1.28.11+k3s1", true),
            ("v1.29.5+k3s1", false),
            ("v1.29.6+k3s1", true),
            ("v1.30.1+k3s1", false),
            ("v1.30.2+k3s1", true),
            ("v1.31.0+k3s1", true),
        ];
        for (text, has) in cases {
            assert_eq!(v(text).has_supervisor_metrics(), has, "{text}");
        }
    }
}
