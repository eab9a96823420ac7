//! `releases/k3s-flags.yaml`: the flags of `k3s server` and `k3s agent`, i.e. the keys a
//! config.yaml may hold.
//!
//! k3s drops a config key its command has no flag for with only a warning
//! (`Unknown flag --<key> found in config.yaml, skipping`, pkg/configfilearg), so a misspelt key
//! makes a reproduction test nothing. The validator rejects such keys with "did you mean"; the
//! stand-in reads the same table to print k3s's warning. The table is built into repro.

use std::sync::OnceLock;

use serde::Deserialize;

use crate::raw::Role;
use crate::version::{K3sVersion, ReleaseSet};

const BUILTIN: &str = include_str!("../releases/k3s-flags.yaml");
pub const PATH: &str = "releases/k3s-flags.yaml";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Command {
    Server,
    Agent,
}

impl Command {
    pub fn of(role: Role) -> Command {
        match role {
            Role::Agent => Command::Agent,
            _ => Command::Server,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Command::Server => "k3s server",
            Command::Agent => "k3s agent",
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct Flag {
    name: String,
    #[serde(default)]
    #[allow(dead_code)] // config keys are long names; the stand-in parses the short ones
    short: Option<String>,
    #[allow(dead_code)] // the stand-in's parser needs it, the validator does not
    kind: String,
    commands: Vec<Command>,
    #[serde(default)]
    since_change: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FlagsFile {
    flags: Vec<Flag>,
}

fn table() -> &'static [Flag] {
    static CELL: OnceLock<Vec<Flag>> = OnceLock::new();
    CELL.get_or_init(|| {
        serde_saphyr::from_str::<FlagsFile>(BUILTIN)
            .map(|f| f.flags)
            .unwrap_or_default()
    })
}

/// Whether some release of `version`'s line has the flag (a line the change reached at all).
fn in_line(flag: &Flag, version: Option<&K3sVersion>) -> bool {
    let (Some(change), Some(v)) = (&flag.since_change, version) else {
        return true;
    };
    let Some(firsts) = crate::changes::firsts(change) else {
        return true;
    };
    let set = ReleaseSet::new(firsts);
    set.first_in_line(v).is_some() || set.contains(v)
}

/// Why `key` (a config key, `key+` allowed) is not a flag of any of `commands` on `version`'s
/// release line, with a help line; `None` when k3s knows it.
pub fn unknown_key(
    key: &str,
    commands: &[Command],
    version: Option<&K3sVersion>,
) -> Option<(String, String)> {
    let name = key.strip_suffix('+').unwrap_or(key);
    let usable = |f: &&Flag| f.commands.iter().any(|c| commands.contains(c)) && in_line(f, version);
    if table().iter().filter(usable).any(|f| f.name == name) {
        return None;
    }
    let who = commands
        .iter()
        .map(|c| format!("`{}`", c.name()))
        .collect::<Vec<_>>()
        .join(" or ");
    let on = version
        .map(|v| format!(" in k3s {}.{}", v.major, v.minor))
        .unwrap_or_default();
    let message = format!(
        "`{name}` is not a flag of {who}{on}: k3s would skip it (\"Unknown flag --{name} found in config.yaml, skipping\") and the key would change nothing"
    );
    let names: Vec<String> = table()
        .iter()
        .filter(usable)
        .map(|f| f.name.clone())
        .collect();
    let elsewhere = table().iter().find(|f| f.name == name);
    let help = match (crate::diag::suggest(name, &names), elsewhere) {
        (Some(s), _) => {
            format!("did you mean `{s}`? ({PATH} lists the flags per command and release)")
        }
        (None, Some(f)) if !f.commands.iter().any(|c| commands.contains(c)) => format!(
            "`{name}` is a flag of {} only",
            f.commands
                .iter()
                .map(|c| format!("`{}`", c.name()))
                .collect::<Vec<_>>()
                .join(" and ")
        ),
        (None, Some(f)) => format!(
            "`{name}` came with a later release ({PATH}: since `{}` of releases/k3s-changes.yaml)",
            f.since_change.as_deref().unwrap_or("?")
        ),
        (None, None) => {
            format!("use a long flag name of {who} without the dashes; {PATH} lists them")
        }
    };
    Some((message, help))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> K3sVersion {
        s.parse().expect("version")
    }

    #[test]
    fn the_builtin_table_parses() {
        let parsed: FlagsFile = serde_saphyr::from_str(BUILTIN).expect("k3s-flags.yaml");
        assert!(parsed.flags.len() > 100);
        for f in &parsed.flags {
            if let Some(c) = &f.since_change {
                assert!(crate::changes::get(c).is_some(), "{}: {c}", f.name);
            }
        }
    }

    #[test]
    fn known_misspelt_foreign_and_later_keys() {
        let server = [Command::Server];
        let v33 = v("v1.33.4+k3s1");
        assert!(unknown_key("embedded-registry", &server, Some(&v33)).is_none());
        assert!(unknown_key("kubelet-arg+", &server, Some(&v33)).is_none());
        let (msg, help) = unknown_key("embeded-registry", &server, Some(&v33)).expect("unknown");
        assert!(
            msg.contains("`embeded-registry` is not a flag of `k3s server` in k3s 1.33"),
            "{msg}"
        );
        assert!(
            help.starts_with("did you mean `embedded-registry`?"),
            "{help}"
        );
        let (_, help) = unknown_key("cluster-init", &[Command::Agent], Some(&v33)).expect("agent");
        assert_eq!(help, "`cluster-init` is a flag of `k3s server` only");
        // supervisor-metrics reached 1.27 with v1.27.15: the 1.27 line has it, 1.26 never did.
        assert!(unknown_key("supervisor-metrics", &server, Some(&v("v1.27.2+k3s1"))).is_none());
        let (_, help) =
            unknown_key("supervisor-metrics", &server, Some(&v("v1.26.15+k3s1"))).expect("later");
        assert!(help.contains("came with a later release"), "{help}");
    }
}
