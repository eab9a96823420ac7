//! The files a user writes: topologies, checks and signal definitions, exactly as they are in
//! YAML. Positions are kept (`Spanned`) so later validation can point at the offending line.
//! Nothing here is trusted yet; `crate::load` checks it and builds a [`crate::load::Scenario`].

pub mod check;
pub mod signals;
pub mod topology;
pub mod value;

pub use check::{CheckFile, FixedIn, RestartItem, StepFile};
pub use signals::{Pattern, PatternFile, ProbeRuleFile, SignalsFile};
pub use topology::{NodeFile, Role, TopologyFile};
pub use value::ConfigValue;

use indexmap::IndexMap;
use serde_saphyr::Spanned;

/// `name -> T` with the key's position kept for error messages.
pub type SpannedMap<T> = IndexMap<Spanned<String>, T>;
