//! systemd's lines about a distribution's unit, and the distribution a journal identifier,
//! unit name or unit line names (`rke2[…]`, `k3s.service`, `Starting Rancher Kubernetes
//! Engine v2…`), from every distribution's facts.

use std::sync::LazyLock;

use regex::Regex;

/// The distribution a journal identifier, unit name or unit line names (`rke2`, `k3s-agent`,
/// `rke2-server.service`), from every distribution's binary name.
pub(crate) fn distro_named(word: &str) -> Option<distro::Distro> {
    // The longest binary that names the word, so a name that starts with another's is told
    // right (every journal line asks: no allocation).
    distro::Distro::ALL
        .iter()
        .copied()
        .filter(|d| {
            let b = d.facts().binary;
            word.starts_with(b)
                && word[b.len()..]
                    .chars()
                    .next()
                    .is_none_or(|c| !c.is_ascii_alphanumeric())
        })
        .max_by_key(|d| d.facts().binary.len())
}

/// The distribution a systemd line about a unit names: its unit (`rke2-server.service: …`) or
/// its unit's description (`Starting Rancher Kubernetes Engine v2 (server)...`, which systemd
/// prints without the unit's name).
pub(super) fn distro_in_unit_line(msg: &str) -> Option<distro::Distro> {
    static UNITS: LazyLock<Vec<(distro::Distro, String)>> = LazyLock::new(|| {
        distro::Distro::ALL
            .iter()
            .flat_map(|&d| {
                d.facts()
                    .units
                    .iter()
                    .map(move |u| (d, format!("{u}.service")))
            })
            .collect()
    });
    let by_unit = msg.contains(".service").then(|| {
        UNITS
            .iter()
            .find(|(_, u)| msg.contains(u.as_str()))
            .map(|(d, _)| *d)
    });
    by_unit.flatten().or_else(|| {
        distro::Distro::ALL
            .iter()
            .copied()
            .find(|d| msg.contains(d.facts().unit_description))
    })
}

/// Whether a journal identifier or command is a distribution's binary (`k3s`, `k3s-agent`…).
pub(super) fn is_distribution_binary(word: &str) -> bool {
    distro::Distro::ALL
        .iter()
        .any(|d| word.starts_with(d.facts().binary))
}

/// Every distribution's unit names (its `units`, and its binary with `-agent`/`-server`, as
/// custom units name it) and unit descriptions, as regex alternations.
pub(super) fn unit_words() -> (String, String) {
    let mut names = Vec::new();
    let mut descriptions = Vec::new();
    for d in distro::Distro::ALL {
        let f = d.facts();
        for n in f.units.iter().map(|u| u.to_string()).chain(
            ["", "-agent", "-server"]
                .iter()
                .map(|s| format!("{}{s}", f.binary)),
        ) {
            let n = regex::escape(&n);
            if !names.contains(&n) {
                names.push(n);
            }
        }
        descriptions.push(regex::escape(f.unit_description));
    }
    (names.join("|"), descriptions.join("|"))
}

pub(super) static UNIT: LazyLock<Regex> = LazyLock::new(|| {
    let (names, descriptions) = unit_words();
    Regex::new(&format!(r"(?i)\b(?:{names})\.service\b|{descriptions}")).expect("static regex")
});

/// systemd's own words about a distribution's unit, as `-o cat` shows them (no identifier).
pub(super) static UNIT_LINE: LazyLock<Regex> = LazyLock::new(|| {
    let (names, descriptions) = unit_words();
    Regex::new(&format!(
        r"^(?:(?:{names})\.service: |(?:Started|Starting|Stopping|Stopped|Failed to start) .*(?:{descriptions}))"
    ))
    .expect("static regex")
});
