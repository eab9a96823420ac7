//! The `k3s server` / `k3s agent` flags, and the command-line parser.
//!
//! The flags come from `releases/k3s-flags.yaml` (the table repro's validator
//! reads too), each with the release that brought it. A flag a release did
//! not have yet is unknown in that release: config-file keys are then dropped
//! with k3s's own warning. Only some flags are modelled (config.rs); the rest
//! are parsed and ignored.

use std::sync::OnceLock;

use crate::version::{Changes, Version};
use distro::{FlagCommand as Command, FlagKind};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `--flag`, `--flag=true|false`
    Bool,
    /// `--flag value`, `--flag=value`; the last one wins.
    Value,
    /// Like `Value`, but every occurrence is kept (and comma-split by k3s).
    List,
}

#[derive(Debug)]
pub struct Flag {
    pub name: &'static str,
    pub short: Option<&'static str>,
    pub kind: Kind,
    commands: &'static [Command],
    since_change: Option<&'static str>,
}

impl Flag {
    pub fn available_in(&self, version: &Version) -> bool {
        self.since_change.is_none_or(|c| version.has(c))
    }

    pub fn in_command(&self, command: Command) -> bool {
        self.commands.contains(&command)
    }
}

/// Every flag of the table, in table order.
pub fn all() -> &'static [Flag] {
    static CELL: OnceLock<Vec<Flag>> = OnceLock::new();
    CELL.get_or_init(|| {
        if let Some(e) = crate::distro::current().table_error() {
            // Compiled in and parsed by the distro crate's unit tests: a build defect.
            crate::logs::fatal(format!("repro-sim: {e}"));
        }
        crate::distro::current()
            .flags()
            .iter()
            .map(|f| Flag {
                name: f.name.as_str(),
                short: f.short.as_deref(),
                kind: match f.kind {
                    FlagKind::Bool => Kind::Bool,
                    FlagKind::List => Kind::List,
                    FlagKind::String | FlagKind::Int | FlagKind::Duration => Kind::Value,
                },
                commands: &f.commands,
                since_change: f.since_change.as_deref(),
            })
            .collect()
    })
}

/// The flag named `name` (long or short form) if `command` of `version` has it.
pub fn lookup(name: &str, version: &Version, command: Command) -> Option<&'static Flag> {
    all()
        .iter()
        .find(|f| f.name == name || f.short == Some(name))
        .filter(|f| f.in_command(command) && f.available_in(version))
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
pub fn parse(args: &[String], version: &Version, command: Command) -> Result<Parsed, String> {
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
        let Some(flag) = lookup(name, version, command) else {
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

    fn v(text: &str) -> Version {
        crate::version::parse(text).expect("valid version")
    }

    fn parse_server(args: &[String], version: &Version) -> Result<Parsed, String> {
        parse(args, version, Command::Server)
    }

    #[test]
    fn commands_have_their_own_flags() {
        let v = v("v1.33.4+k3s1");
        assert!(lookup("cluster-init", &v, Command::Server).is_some());
        assert!(lookup("cluster-init", &v, Command::Agent).is_none());
        assert!(lookup("disable-apiserver-lb", &v, Command::Agent).is_some());
        assert!(lookup("disable-apiserver-lb", &v, Command::Server).is_none());
        assert_eq!(
            lookup("s", &v, Command::Agent).map(|f| f.name),
            Some("server")
        );
        assert!(lookup("secrets-encryption-provider", &v, Command::Server).is_some());
        assert!(lookup(
            "secrets-encryption-provider",
            &crate::version::parse("v1.32.3+k3s1").expect("v"),
            Command::Server
        )
        .is_none());
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
        let parsed = parse_server(&args, &v("v1.33.4+k3s1")).expect("parses");
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
        let parsed = parse_server(&args, &v("v1.33.4+k3s1")).expect("parses");
        assert_eq!(parsed.unknown, vec!["--foo", "--bar"]);
        assert_eq!(parsed.values.len(), 1);
    }

    #[test]
    fn gated_flags_are_unknown_before_their_release() {
        let args = strings(&["--embedded-registry", "--supervisor-metrics"]);
        let old = parse_server(&args, &v("v1.26.12+k3s1")).expect("parses");
        assert_eq!(
            old.unknown,
            vec!["--embedded-registry", "--supervisor-metrics"]
        );
        let mid = parse_server(&args, &v("v1.29.1+k3s2")).expect("parses");
        assert_eq!(mid.unknown, vec!["--supervisor-metrics"]);
        let new = parse_server(&args, &v("v1.33.4+k3s1")).expect("parses");
        assert!(new.unknown.is_empty());
    }

    #[test]
    fn value_flag_without_value_is_an_error() {
        assert!(parse_server(&strings(&["--token"]), &v("v1.33.4+k3s1")).is_err());
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
