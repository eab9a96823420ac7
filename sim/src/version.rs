//! The k3s version the stand-in imitates, and what that version decides.
//!
//! The binary itself is version-less: each image bakes `REPRO_SIM_K3S_VERSION`
//! in, and every behaviour difference between k3s releases that repro can
//! observe is decided here, from the change table of the `distro` crate (the
//! one repro's checks read, so "fixed" means the same to both).

use std::io::{Read, Seek, SeekFrom};
use std::sync::OnceLock;

use distro::sim_stamp::SimStamp;
pub use distro::Version;

/// Env var that carries the imitated k3s version (set by the image; spelled once, in the
/// `distro` crate's k3s facts, which repro's image builder reads too).
pub fn version_env() -> &'static str {
    crate::distro::facts().sim_version_env
}

/// This executable's own stamp (`repro sim binary`), read once: a stamped binary reports its
/// stamp's version and has the fix or not as stamped, whatever the image's variable says.
pub fn own_stamp() -> Option<&'static SimStamp> {
    static STAMP: OnceLock<Option<SimStamp>> = OnceLock::new();
    STAMP
        .get_or_init(|| {
            let mut f = std::fs::File::open(std::env::current_exe().ok()?).ok()?;
            let len = f.metadata().ok()?.len();
            let tail = (SimStamp::TAIL_BYTES as u64).min(len);
            f.seek(SeekFrom::Start(len - tail)).ok()?;
            let mut buf = Vec::new();
            f.read_to_end(&mut buf).ok()?;
            SimStamp::find(&buf)
        })
        .as_ref()
}

/// The version text to imitate: the binary's stamp, else the image's variable.
pub fn imitated() -> Option<String> {
    match own_stamp() {
        Some(s) => Some(s.version.clone()),
        None => std::env::var(version_env()).ok(),
    }
}

/// `v1.33.4+k3s1`, `1.33.4+k3s1`, the image-tag form `v1.33.4-k3s1` and
/// release candidates `v1.33.5-rc1+k3s1`.
pub fn parse(text: &str) -> Result<Version, String> {
    let trimmed = text.trim();
    let with_v = if trimmed.starts_with('v') {
        trimmed.to_string()
    } else {
        format!("v{trimmed}")
    };
    with_v
        .parse()
        .map_err(|e: distro::VersionError| format!("invalid k3s version: {e}"))
}

/// What the imitated version decides: the changes of the distribution's table it has.
pub trait Changes {
    fn has(&self, change: &str) -> bool;
    fn has_etcd_only_bootstrap_fix(&self) -> bool;
    fn has_embedded_registry(&self) -> bool;
    fn has_supervisor_metrics(&self) -> bool;
    fn has_encrypt_provider(&self) -> bool;
    fn has_flannel_ip_masq_disable_random_fully(&self) -> bool;
    fn has_local_supervisor_default(&self) -> bool;
    fn has_agent_startup_sequencing(&self) -> bool;
    fn has_kubelet_config_file(&self) -> bool;
    fn minor_string(&self) -> String;
}

impl Changes for Version {
    /// Whether this release has a change of `releases/k3s-changes.yaml`: at or
    /// past its line's first patch, or on a line newer than every listed one.
    /// A release candidate of the first patch is placed by the table's `rc:`
    /// (`v1.33.5-rc1` has the v1.33.5 fix: k3s QA validated it on the rc), as
    /// `fixed-in` places it; one no evidence places counts as having the change,
    /// as it always has in the stand-in. An unknown name is a build defect and
    /// counts as absent.
    fn has(&self, change: &str) -> bool {
        let Some(change) = self.distro.changes().get(change) else {
            return false;
        };
        // A candidate the table's `rc:` does not place counts as having it (see above).
        change.release_set().placement(self).unwrap_or(true)
    }

    /// k3s #12753 (PR #12754, backports #12885/#12886/#12887): etcd-only
    /// servers with a `server:` URL stop bootstrapping their agent off the
    /// joined node's supervisor.
    fn has_etcd_only_bootstrap_fix(&self) -> bool {
        if let Some(stamp) = own_stamp() {
            return stamp.bootstrap_fix;
        }
        self.has("etcd-only-bootstrap-fix")
    }

    /// `--embedded-registry` (spegel).
    fn has_embedded_registry(&self) -> bool {
        self.has("embedded-registry")
    }

    /// `--supervisor-metrics` (k3s PR #10019).
    fn has_supervisor_metrics(&self) -> bool {
        self.has("supervisor-metrics")
    }

    /// `--secrets-encryption-provider` and the `EncryptProvider` critical arg.
    fn has_encrypt_provider(&self) -> bool {
        self.has("secrets-encryption-provider")
    }

    /// The `FlannelIPMasqDisableRandomFully` critical arg.
    fn has_flannel_ip_masq_disable_random_fully(&self) -> bool {
        self.has("flannel-ip-masq-disable-random-fully")
    }

    /// etcd-only agents switch their load balancer's default server to a
    /// control-plane node, and log the newer wait message.
    fn has_local_supervisor_default(&self) -> bool {
        self.has("etcd-only-local-supervisor-default")
    }

    /// The kubelet no longer waits for apiserver addresses on etcd-only nodes.
    fn has_agent_startup_sequencing(&self) -> bool {
        self.has("agent-startup-sequencing")
    }

    /// The kubelet reads k3s's defaults (cluster DNS and domain among them) from a drop-in
    /// file, so its command line no longer shows them (k3s #2116).
    fn has_kubelet_config_file(&self) -> bool {
        self.has("kubelet-config-file")
    }

    /// `Major`/`Minor` for the apiserver `/version` document.
    fn minor_string(&self) -> String {
        self.minor.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Version {
        parse(text).expect("valid version")
    }

    #[test]
    fn parses_the_forms_repro_uses() {
        assert_eq!(v("v1.33.4+k3s1").patch, 4);
        assert_eq!(v("1.33.4+k3s1").to_string(), "v1.33.4+k3s1");
        assert_eq!(v("v1.33.4-k3s1").minor, 33);
        assert_eq!(v("v1.33.5-rc1+k3s1").patch, 5);
        assert!(parse("v1.33").is_err());
        assert!(parse("banana").is_err());
        assert!(parse("").is_err());
        assert!(parse("v1.2.3.4").is_err());
    }

    #[test]
    fn changes_follow_fixed_in_semantics() {
        let fix = "etcd-only-bootstrap-fix";
        assert!(!v("v1.30.14+k3s1").has(fix), "older lines never");
        assert!(v("v1.35.0+k3s1").has(fix), "newer lines always");
        assert!(
            !v("v1.34.1+k3s1").has("flannel-ip-masq-disable-random-fully"),
            "an empty `first:` is never"
        );
        assert!(!v("v1.34.1+k3s1").has("no-such-change"));
    }

    #[test]
    fn fix_lands_per_release_line() {
        // The sim reads the fix from distro's table, whose every release is checked there
        // (tables.rs, `the_fix_of_12753`): one line's buggy and fixed release and its candidate.
        let cases = [
            ("v1.29.15+k3s1", false),
            ("v1.33.4+k3s1", false),
            ("v1.33.5-rc1+k3s1", true),
            ("v1.33.5+k3s1", true),
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
