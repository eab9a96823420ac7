//! Fault knobs for repro's reliability tests (none of these exist in k3s).
//!
//! Knobs come from the environment and, per boot, from
//! `/etc/rancher/k3s/repro-sim-faults.env` (`KEY=VALUE` lines): a value in the
//! file wins over the environment, so a test can change the faults of the next
//! boot of a container by rewriting one file, without re-creating it.

use std::collections::HashMap;
use std::time::Duration;

pub const FAULTS_FILE: &str = "/etc/rancher/k3s/repro-sim-faults.env";

pub const BOOT_DELAY: &str = "REPRO_SIM_BOOT_DELAY";
pub const CRASH_AT_BOOT: &str = "REPRO_SIM_CRASH_AT_BOOT";
pub const NEVER_READY: &str = "REPRO_SIM_NEVER_READY";
pub const EXIT_AFTER: &str = "REPRO_SIM_EXIT_AFTER";
pub const GARBAGE: &str = "REPRO_SIM_GARBAGE";
pub const FLOOD: &str = "REPRO_SIM_FLOOD";
pub const NEVER_PROMOTE: &str = "REPRO_SIM_NEVER_PROMOTE";

const KNOBS: [&str; 7] = [
    BOOT_DELAY,
    CRASH_AT_BOOT,
    NEVER_READY,
    EXIT_AFTER,
    GARBAGE,
    FLOOD,
    NEVER_PROMOTE,
];

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// Sleep this long before the node reports ready.
    pub boot_delay: Option<Duration>,
    /// Log a fatal line right after the banner and exit 1.
    pub crash_at_boot: bool,
    /// Boot, log, never print the ready line, stay alive.
    pub never_ready: bool,
    /// Exit 1 with a fatal line this long after start.
    pub exit_after: Option<Duration>,
    /// Interleave non-UTF-8 bytes and partial lines on stdout.
    pub garbage: bool,
    /// Write this many log lines at once at the start of the boot, before the banner (a log
    /// flood: Docker's log follower and rotation must not lose or stall on them).
    pub flood: Option<u64>,
    /// On the init node (etcd's leader here): never promote a learner, so a joiner waits as
    /// a learner forever (a leader that cannot promote; k3s #12794's kind of stall).
    pub never_promote: bool,
}

impl Faults {
    /// Merges env and file (file wins). Bad values are reported, not fatal:
    /// a typo in a knob should not look like a k3s crash.
    pub fn load(
        env: &dyn Fn(&str) -> Option<String>,
        file_text: Option<&str>,
    ) -> (Faults, Vec<String>) {
        let mut values: HashMap<&str, String> = HashMap::new();
        for knob in KNOBS {
            if let Some(value) = env(knob) {
                values.insert(knob, value);
            }
        }
        if let Some(text) = file_text {
            for (key, value) in parse_env_file(text) {
                if let Some(knob) = KNOBS.iter().find(|k| **k == key) {
                    values.insert(knob, value);
                }
            }
        }
        let mut problems = Vec::new();
        let mut duration = |knob: &str| -> Option<Duration> {
            let text = values.get(knob)?.trim().to_string();
            if text.is_empty() {
                return None;
            }
            match parse_duration(&text) {
                Some(d) => Some(d),
                None => {
                    problems.push(format!("ignoring {knob}={text:?}: not a duration like 3s"));
                    None
                }
            }
        };
        let boot_delay = duration(BOOT_DELAY);
        let exit_after = duration(EXIT_AFTER);
        let flag = |knob: &str| values.get(knob).is_some_and(|v| is_truthy(v));
        let flood = match values.get(FLOOD).map(|v| v.trim()) {
            None | Some("") => None,
            Some(v) => match v.parse::<u64>() {
                Ok(n) => Some(n),
                Err(_) => {
                    problems.push(format!("ignoring {FLOOD}={v:?}: not a line count"));
                    None
                }
            },
        };
        let faults = Faults {
            boot_delay,
            crash_at_boot: flag(CRASH_AT_BOOT),
            never_ready: flag(NEVER_READY),
            exit_after,
            garbage: flag(GARBAGE),
            flood,
            never_promote: flag(NEVER_PROMOTE),
        };
        (faults, problems)
    }
}

/// `KEY=VALUE` lines; `#` comments, blank lines, `export ` prefixes and
/// surrounding quotes are tolerated because people write env files by hand.
pub fn parse_env_file(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                return None;
            }
            let line = line.strip_prefix("export ").unwrap_or(line);
            let (key, value) = line.split_once('=')?;
            let value = value.trim();
            let value = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
                .unwrap_or(value);
            Some((key.trim().to_string(), value.to_string()))
        })
        .collect()
}

fn is_truthy(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "yes" | "on"
    )
}

/// `3s`, `500ms`, `2m`, `1h`, `1.5s`; a bare number means seconds.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let scale = match unit {
        "" | "s" => 1.0,
        "ms" => 0.001,
        "m" => 60.0,
        "h" => 3600.0,
        _ => return None,
    };
    let secs = number * scale;
    if !secs.is_finite() || !(0.0..=86_400.0 * 365.0).contains(&secs) {
        return None;
    }
    Some(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |key| {
            pairs
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("3s"), Some(Duration::from_secs(3)));
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("7"), Some(Duration::from_secs(7)));
        assert_eq!(parse_duration("soon"), None);
        assert_eq!(parse_duration("3 weeks"), None);
        assert_eq!(parse_duration("-1s"), None);
    }

    #[test]
    fn file_overrides_env() {
        let env = env_of(&[(BOOT_DELAY, "3s"), (GARBAGE, "1")]);
        let file = "# per boot\nREPRO_SIM_BOOT_DELAY=1s\nexport REPRO_SIM_CRASH_AT_BOOT=\"true\"\nREPRO_SIM_GARBAGE=0\nOTHER=1\n";
        let (faults, problems) = Faults::load(&env, Some(file));
        assert!(problems.is_empty());
        assert_eq!(faults.boot_delay, Some(Duration::from_secs(1)));
        assert!(faults.crash_at_boot);
        assert!(!faults.garbage);
        assert!(!faults.never_ready);
    }

    #[test]
    fn bad_values_are_reported_not_fatal() {
        let env = env_of(&[(EXIT_AFTER, "later")]);
        let (faults, problems) = Faults::load(&env, None);
        assert_eq!(faults.exit_after, None);
        assert_eq!(problems.len(), 1);
    }

    #[test]
    fn flood_is_a_line_count() {
        let (f, problems) = Faults::load(&env_of(&[(FLOOD, "40000")]), None);
        assert_eq!((f.flood, problems.len()), (Some(40_000), 0));
        let (f, problems) = Faults::load(&env_of(&[(FLOOD, "lots")]), None);
        assert_eq!(f.flood, None);
        assert!(problems[0].contains(FLOOD), "{problems:?}");
    }

    #[test]
    fn nothing_set_means_no_faults() {
        let env = env_of(&[]);
        assert_eq!(Faults::load(&env, None).0, Faults::default());
    }
}
