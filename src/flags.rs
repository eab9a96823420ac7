//! Config keys against a distribution's flags table (`releases/k3s-flags.yaml` for k3s): the
//! flags of its server and agent commands are the keys a config.yaml may hold.
//!
//! k3s drops a config key its command has no flag for with only a warning
//! (`Unknown flag --<key> found in config.yaml, skipping`, pkg/configfilearg), so a misspelt key
//! makes a reproduction test nothing. The validator rejects such keys with "did you mean"; the
//! stand-in reads the same table to print k3s's warning. The table is parsed by the `distro` crate.

use distro::{Distro, FlagCommand, FlagEntry, ReleaseSet, Version};

use crate::raw::Role;

/// The command a node of `role` runs: a server, or an agent.
pub(crate) fn command_of(role: Role) -> FlagCommand {
    match role {
        Role::Agent => FlagCommand::Agent,
        _ => FlagCommand::Server,
    }
}

/// Whether some release of `version`'s line has the flag (a line the change reached at all).
fn in_line(distro: Distro, flag: &FlagEntry, version: Option<&Version>) -> bool {
    let (Some(set), Some(v)) = (flag.since_set(distro.changes()), version) else {
        return true;
    };
    let set: ReleaseSet = set;
    set.first_in_line(v).is_some() || set.contains(v)
}

/// Why `key` (a config key, `key+` allowed) is not a flag of any of `commands` on `version`'s
/// release line, with a help line; `None` when k3s knows it.
pub(crate) fn unknown_key(
    distro: Distro,
    key: &str,
    commands: &[FlagCommand],
    version: Option<&Version>,
) -> Option<(String, String)> {
    let facts = distro.facts();
    let table = distro.flags();
    let path = facts.flags_path;
    let name = key.strip_suffix('+').unwrap_or(key);
    let usable = |f: &&FlagEntry| {
        f.commands.iter().any(|c| commands.contains(c)) && in_line(distro, f, version)
    };
    if table.iter().filter(usable).any(|f| f.name == name) {
        return None;
    }
    let who = commands
        .iter()
        .map(|c| format!("`{}`", facts.command_name(*c)))
        .collect::<Vec<_>>()
        .join(" or ");
    let on = version
        .map(|v| format!(" in {distro} {}.{}", v.major, v.minor))
        .unwrap_or_default();
    let message = format!(
        "`{name}` is not a flag of {who}{on}: {distro} would skip it (\"Unknown flag --{name} found in config.yaml, skipping\") and the key would change nothing"
    );
    let names: Vec<String> = table
        .iter()
        .filter(usable)
        .map(|f| f.name.clone())
        .collect();
    let elsewhere = table.iter().find(|f| f.name == name);
    // A key of another distribution's table (k3s's `cluster-init` in an rke2 topology).
    let other = Distro::ALL
        .iter()
        .copied()
        .find(|o| *o != distro && o.flags().iter().any(|f| f.name == name));
    if let (None, Some(o)) = (elsewhere, other) {
        let help = format!(
            "`{name}` is a flag of {o} only ({}), not of {distro} ({path}): leave it out on {distro}",
            o.facts().flags_path
        );
        return Some((message, help));
    }
    let help = match (crate::diag::suggest(name, &names), elsewhere) {
        (Some(s), _) => {
            format!("did you mean `{s}`? ({path} lists the flags per command and release)")
        }
        (None, Some(f)) if !f.commands.iter().any(|c| commands.contains(c)) => format!(
            "`{name}` is a flag of {} only",
            f.commands
                .iter()
                .map(|c| format!("`{}`", facts.command_name(*c)))
                .collect::<Vec<_>>()
                .join(" and ")
        ),
        (None, Some(f)) => format!(
            "`{name}` came with a later release ({path}: since `{}` of {})",
            f.since_change.as_deref().unwrap_or("?"),
            facts.changes_path
        ),
        (None, None) => {
            format!("use a long flag name of {who} without the dashes; {path} lists them")
        }
    };
    Some((message, help))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        s.parse().expect("version")
    }

    #[test]
    fn a_k3s_only_key_on_rke2_says_so() {
        let server = [FlagCommand::Server];
        let v = v("v1.32.5+rke2r1");
        for key in ["cluster-init", "disable-helm-controller", "flannel-backend"] {
            let (message, help) = unknown_key(Distro::Rke2, key, &server, Some(&v)).expect(key);
            assert!(message.contains("`rke2 server` in rke2 1.32"), "{message}");
            assert!(help.contains("is a flag of k3s only"), "{help}");
            assert!(help.contains("releases/rke2-flags.yaml"), "{help}");
        }
        assert!(unknown_key(Distro::Rke2, "supervisor-metrics", &server, Some(&v)).is_none());
        assert!(unknown_key(Distro::Rke2, "cni", &server, Some(&v)).is_none());
        // rke2's own flag is no k3s key.
        let k3s = v_k3s();
        let (_, help) = unknown_key(Distro::K3s, "cni", &server, Some(&k3s)).expect("cni");
        assert!(help.contains("is a flag of rke2 only"), "{help}");
    }

    fn v_k3s() -> Version {
        v("v1.33.4+k3s1")
    }

    #[test]
    fn known_misspelt_foreign_and_later_keys() {
        let server = [FlagCommand::Server];
        let v33 = v("v1.33.4+k3s1");
        assert!(unknown_key(Distro::K3s, "embedded-registry", &server, Some(&v33)).is_none());
        assert!(unknown_key(Distro::K3s, "kubelet-arg+", &server, Some(&v33)).is_none());
        let (msg, help) =
            unknown_key(Distro::K3s, "embeded-registry", &server, Some(&v33)).expect("unknown");
        assert!(
            msg.contains("`embeded-registry` is not a flag of `k3s server` in k3s 1.33"),
            "{msg}"
        );
        assert!(
            help.starts_with("did you mean `embedded-registry`?"),
            "{help}"
        );
        let (_, help) = unknown_key(
            Distro::K3s,
            "cluster-init",
            &[FlagCommand::Agent],
            Some(&v33),
        )
        .expect("agent");
        assert_eq!(help, "`cluster-init` is a flag of `k3s server` only");
        // supervisor-metrics reached 1.27 with v1.27.15: the 1.27 line has it, 1.26 never did.
        assert!(unknown_key(
            Distro::K3s,
            "supervisor-metrics",
            &server,
            Some(&v("v1.27.2+k3s1"))
        )
        .is_none());
        let (_, help) = unknown_key(
            Distro::K3s,
            "supervisor-metrics",
            &server,
            Some(&v("v1.26.15+k3s1")),
        )
        .expect("later");
        assert!(help.contains("came with a later release"), "{help}");
    }
}
