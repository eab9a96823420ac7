//! The `k3s server` flags the stand-in knows, and the command-line parser.
//!
//! Real k3s has hundreds of flags. The stand-in models the ones repro's
//! scenarios change and accepts many more common ones silently so configs
//! written for real k3s work unchanged. Flags that a k3s release did not have
//! yet (`embedded-registry`, `supervisor-metrics`) are unknown in that release:
//! config-file keys are then dropped with k3s's own warning.

use crate::version::K3sVersion;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `--flag`, `--flag=true|false`
    Bool,
    /// `--flag value`, `--flag=value`; the last one wins.
    Value,
    /// Like `Value`, but every occurrence is kept (and comma-split by k3s).
    List,
}

/// Releases that lack a flag treat it as unknown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gate {
    Always,
    EmbeddedRegistry,
    SupervisorMetrics,
}

#[derive(Debug)]
pub struct Flag {
    pub name: &'static str,
    pub short: Option<&'static str>,
    pub kind: Kind,
    pub gate: Gate,
}

const fn flag(name: &'static str, kind: Kind) -> Flag {
    Flag {
        name,
        short: None,
        kind,
        gate: Gate::Always,
    }
}

const fn short(name: &'static str, short: &'static str, kind: Kind) -> Flag {
    Flag {
        name,
        short: Some(short),
        kind,
        gate: Gate::Always,
    }
}

const fn gated(name: &'static str, gate: Gate) -> Flag {
    Flag {
        name,
        short: None,
        kind: Kind::Bool,
        gate,
    }
}

use Kind::{Bool, List, Value};

/// Modelled flags first, then real k3s server flags accepted and ignored.
pub const FLAGS: &[Flag] = &[
    // --- modelled ---
    short("config", "c", Value),
    short("data-dir", "d", Value),
    short("server", "s", Value),
    short("token", "t", Value),
    flag("token-file", Value),
    flag("agent-token", Value),
    flag("cluster-init", Bool),
    flag("node-name", Value),
    short("node-ip", "i", List),
    short("write-kubeconfig", "o", Value),
    flag("disable-etcd", Bool),
    flag("disable-apiserver", Bool),
    flag("disable-controller-manager", Bool),
    flag("disable-scheduler", Bool),
    flag("disable-cloud-controller", Bool),
    flag("disable-network-policy", Bool),
    flag("disable-helm-controller", Bool),
    flag("disable", List),
    gated("embedded-registry", Gate::EmbeddedRegistry),
    gated("supervisor-metrics", Gate::SupervisorMetrics),
    flag("cluster-cidr", List),
    flag("service-cidr", List),
    flag("cluster-dns", List),
    flag("cluster-domain", Value),
    flag("secrets-encryption", Bool),
    flag("flannel-backend", Value),
    flag("egress-selector-mode", Value),
    flag("private-registry", Value),
    flag("debug", Bool),
    // --- accepted, not modelled ---
    flag("write-kubeconfig-mode", Value),
    flag("write-kubeconfig-group", Value),
    flag("tls-san", List),
    flag("tls-san-security", Bool),
    flag("node-external-ip", List),
    flag("node-internal-dns", List),
    flag("node-external-dns", List),
    flag("node-label", List),
    flag("node-taint", List),
    flag("with-node-id", Bool),
    flag("kube-apiserver-arg", List),
    flag("kube-controller-manager-arg", List),
    flag("kube-scheduler-arg", List),
    flag("kube-cloud-controller-manager-arg", List),
    flag("kubelet-arg", List),
    flag("kube-proxy-arg", List),
    flag("etcd-arg", List),
    flag("etcd-expose-metrics", Bool),
    flag("etcd-disable-snapshots", Bool),
    flag("etcd-snapshot-schedule-cron", Value),
    flag("etcd-snapshot-retention", Value),
    flag("etcd-snapshot-dir", Value),
    flag("etcd-snapshot-name", Value),
    flag("etcd-snapshot-compress", Bool),
    flag("etcd-s3", Bool),
    flag("bind-address", Value),
    flag("advertise-address", Value),
    flag("advertise-port", Value),
    flag("https-listen-port", Value),
    flag("supervisor-port", Value),
    flag("apiserver-port", Value),
    flag("lb-server-port", Value),
    flag("agent-token-file", Value),
    flag("datastore-endpoint", Value),
    flag("datastore-cafile", Value),
    flag("datastore-certfile", Value),
    flag("datastore-keyfile", Value),
    flag("default-local-storage-path", Value),
    flag("disable-kube-proxy", Bool),
    flag("disable-agent", Bool),
    flag("disable-default-registry-endpoint", Bool),
    flag("system-default-registry", Value),
    flag("selinux", Bool),
    flag("protect-kernel-defaults", Bool),
    flag("snapshotter", Value),
    flag("container-runtime-endpoint", Value),
    flag("image-service-endpoint", Value),
    flag("pause-image", Value),
    flag("prefer-bundled-bin", Bool),
    flag("flannel-iface", Value),
    flag("flannel-ipv6-masq", Bool),
    flag("flannel-external-ip", Bool),
    flag("flannel-conf", Value),
    flag("flannel-cni-conf", Value),
    flag("servicelb-namespace", Value),
    flag("helm-job-image", Value),
    flag("cluster-reset", Bool),
    flag("cluster-reset-restore-path", Value),
    flag("kine-tls", Bool),
    flag("enable-pprof", Bool),
    flag("service-node-port-range", Value),
    flag("secrets-encryption-provider", Value),
    flag("rootless", Bool),
    flag("resolv-conf", Value),
    flag("vpn-auth", Value),
    flag("vpn-auth-file", Value),
    flag("airgap-extra-registry", List),
    flag("nonroot-devices", Bool),
    flag("image-credential-provider-bin-dir", Value),
    flag("image-credential-provider-config", Value),
    flag("kubelet-path", Value),
    flag("vmodule", Value),
    short("log", "l", Value),
    flag("alsologtostderr", Bool),
    short("v", "v", Value),
];

impl Flag {
    pub fn available_in(&self, version: &K3sVersion) -> bool {
        match self.gate {
            Gate::Always => true,
            Gate::EmbeddedRegistry => version.has_embedded_registry(),
            Gate::SupervisorMetrics => version.has_supervisor_metrics(),
        }
    }
}

/// The flag named `name` (long or short form) if `version` has it.
pub fn lookup(name: &str, version: &K3sVersion) -> Option<&'static Flag> {
    FLAGS
        .iter()
        .find(|f| f.name == name || f.short == Some(name))
        .filter(|f| f.available_in(version))
}

/// One flag occurrence, by canonical name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlagValue {
    pub name: &'static str,
    pub value: String,
}

/// Result of reading a `--a=b --c d` list.
#[derive(Debug, Default)]
pub struct Parsed {
    pub values: Vec<FlagValue>,
    /// Unknown flags, as written (`--foo`), in order.
    pub unknown: Vec<String>,
    /// Arguments that are not flags (k3s takes none for `server`).
    pub positional: Vec<String>,
}

/// Parses flags in order. `--flag value` takes the next argument only for
/// value flags the stand-in knows; an unknown `--foo` never swallows the next
/// argument, which keeps leniency from eating real flags.
pub fn parse(args: &[String], version: &K3sVersion) -> Result<Parsed, String> {
    let mut out = Parsed::default();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if arg == "--" {
            out.positional.extend(args[i..].iter().cloned());
            break;
        }
        let Some(stripped) = arg
            .strip_prefix("--")
            .or_else(|| arg.strip_prefix('-').filter(|s| !s.is_empty()))
        else {
            out.positional.push(arg.clone());
            continue;
        };
        let (name, inline) = match stripped.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (stripped, None),
        };
        let Some(flag) = lookup(name, version) else {
            out.unknown.push(format!("--{name}"));
            continue;
        };
        let value = match (flag.kind, inline) {
            (Kind::Bool, Some(v)) => v,
            (Kind::Bool, None) => "true".to_string(),
            (_, Some(v)) => v,
            (_, None) => {
                let Some(next) = args.get(i) else {
                    return Err(format!("flag needs an argument: -{name}"));
                };
                i += 1;
                next.clone()
            }
        };
        out.values.push(FlagValue {
            name: flag.name,
            value,
        });
    }
    Ok(out)
}

/// Go's `strconv.ParseBool`, plus the YAML 1.1 words that k3s's yaml.v2 turns
/// into booleans before they reach the flag parser.
pub fn parse_bool(name: &str, value: &str) -> Result<bool, String> {
    match value {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        other => match other.to_ascii_lowercase().as_str() {
            "yes" | "y" | "on" => Ok(true),
            "no" | "n" | "off" => Ok(false),
            _ => Err(format!(
                "invalid boolean value {} for -{name}: parse error",
                crate::logs::go_quote(value)
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn v(text: &str) -> K3sVersion {
        K3sVersion::parse(text).expect("valid version")
    }

    #[test]
    fn parses_long_short_inline_and_bool_forms() {
        let args = strings(&[
            "--cluster-init",
            "-t",
            "secret",
            "--server=https://etcd-1:6443",
            "--disable-apiserver=false",
            "--disable",
            "traefik",
            "--disable=servicelb",
        ]);
        let parsed = parse(&args, &v("v1.33.4+k3s1")).expect("parses");
        let pairs: Vec<(&str, &str)> = parsed
            .values
            .iter()
            .map(|f| (f.name, f.value.as_str()))
            .collect();
        assert_eq!(
            pairs,
            vec![
                ("cluster-init", "true"),
                ("token", "secret"),
                ("server", "https://etcd-1:6443"),
                ("disable-apiserver", "false"),
                ("disable", "traefik"),
                ("disable", "servicelb"),
            ]
        );
        assert!(parsed.unknown.is_empty());
    }

    #[test]
    fn unknown_flags_are_collected_without_eating_the_next_flag() {
        let args = strings(&["--foo", "--bar=1", "--cluster-init"]);
        let parsed = parse(&args, &v("v1.33.4+k3s1")).expect("parses");
        assert_eq!(parsed.unknown, vec!["--foo", "--bar"]);
        assert_eq!(parsed.values.len(), 1);
    }

    #[test]
    fn gated_flags_are_unknown_before_their_release() {
        let args = strings(&["--embedded-registry", "--supervisor-metrics"]);
        let old = parse(&args, &v("v1.26.12+k3s1")).expect("parses");
        assert_eq!(
            old.unknown,
            vec!["--embedded-registry", "--supervisor-metrics"]
        );
        let mid = parse(&args, &v("v1.29.1+k3s2")).expect("parses");
        assert_eq!(mid.unknown, vec!["--supervisor-metrics"]);
        let new = parse(&args, &v("v1.33.4+k3s1")).expect("parses");
        assert!(new.unknown.is_empty());
    }

    #[test]
    fn value_flag_without_value_is_an_error() {
        assert!(parse(&strings(&["--token"]), &v("v1.33.4+k3s1")).is_err());
    }

    #[test]
    fn booleans_like_go_and_yaml_1_1() {
        assert_eq!(parse_bool("x", "True"), Ok(true));
        assert_eq!(parse_bool("x", "0"), Ok(false));
        assert_eq!(parse_bool("x", "yes"), Ok(true));
        assert_eq!(parse_bool("x", "off"), Ok(false));
        assert!(parse_bool("x", "maybe").is_err());
        assert!(parse_bool("x", "").is_err());
    }
}
