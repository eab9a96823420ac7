//! The files a user writes: topologies, checks and signal definitions, exactly as they are in
//! YAML. Positions are kept (`Spanned`) so later validation can point at the offending line.
//! Nothing here is trusted yet; `crate::load` checks it and builds a [`crate::load::Scenario`].

pub(crate) mod check;
pub(crate) mod signals;
pub(crate) mod topology;
pub(crate) mod value;

pub(crate) use check::{CheckFile, FixedIn, RestartItem, StepFile, UpgradeTo};
pub(crate) use signals::{
    Pattern, PatternFile, ProbeFile, ProbeRuleFile, ShowsFile, SignalFile, SignalsFile,
};
pub(crate) use topology::{NodeFile, Role, TopologyFile};
pub(crate) use value::ConfigValue;

use indexmap::IndexMap;
use serde_saphyr::Spanned;

/// `name -> T` with the key's position kept for error messages.
pub(crate) type SpannedMap<T> = IndexMap<Spanned<String>, T>;

/// How every scenario file is read (here, below `load`, because `raw` parses values too): YAML 1.2 booleans only, so `yes`/`no`/`on`/`off` stay
/// strings (and `init: yes` is an error that says so) instead of silently becoming booleans;
/// duplicate keys are errors (the serde-saphyr default).
pub(crate) fn yaml_options() -> serde_saphyr::Options {
    let mut o = serde_saphyr::Options::default();
    o.strict_booleans = true;
    o
}
