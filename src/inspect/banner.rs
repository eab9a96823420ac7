//! A boot's start banner (`"Starting " + program + " " + version`, pkg/cli/server/server.go
//! and the agent's twin), of every distribution: where `boots` cuts a log, and what `formats`
//! asks of a line. Its own module so both read it from below.

use std::sync::LazyLock;

use distro::Distro;
use regex::Regex;

/// Every distribution's start banner (`Starting k3s v…`, `Starting rke2 agent v…`): which
/// distribution a boot is comes from its banner first.
static BANNERS: LazyLock<Vec<(Distro, Regex)>> = LazyLock::new(|| {
    Distro::ALL
        .iter()
        .map(|&d| {
            let facts = d.facts();
            let agent = facts
                .agent_banner_prefix
                .strip_prefix(facts.banner_prefix)
                .unwrap_or_default();
            let re = Regex::new(&format!(
                r"\b{}({})?v\d+\.\d+\.\d+\S*(?: \([0-9A-Za-z-]+\))?",
                regex::escape(facts.banner_prefix),
                regex::escape(agent)
            ))
            .expect("static regex");
            (d, re)
        })
        .collect()
});

/// The distribution whose start banner this line is, and whether it is an agent's.
pub(crate) fn banner_of(text: &str) -> Option<(Distro, bool)> {
    if !text.contains("Starting ") {
        return None;
    }
    BANNERS.iter().find_map(|(d, re)| {
        if !text.contains(d.facts().banner_prefix) {
            return None;
        }
        re.captures(text).map(|c| (*d, c.get(1).is_some()))
    })
}

/// Whether a line is the start banner of a boot (of any distribution).
pub(crate) fn is_banner(text: &str) -> bool {
    banner_of(text).is_some()
}
