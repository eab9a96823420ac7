//! What a run showed, and what a user (or `fixed-in`) expects: the verdict's outcome.
//!
//! Its own module, below both `plan` (which predicts one from `fixed-in`) and `result` (which
//! records one), so neither imports the other for it; `exit` compares two of them.

use serde::{Deserialize, Serialize};

/// What a run showed: the verdict's outcome, and what a user (or `fixed-in`) expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Outcome {
    /// Every expectation held: the correct behaviour.
    Fixed,
    /// Every observation matched the documented bug signature.
    Reproduced,
    /// Anything else.
    Inconclusive,
}

impl Outcome {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Outcome::Fixed => "fixed",
            Outcome::Reproduced => "reproduced",
            Outcome::Inconclusive => "inconclusive",
        }
    }
}

/// The text form is the JSON one.
impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
