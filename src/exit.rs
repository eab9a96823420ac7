//! Exit codes. CI depends on them, so they live in one place and the README lists them.

/// The outcome is the one asked for (`--expect`, default `fixed`).
pub const OK: i32 = 0;
/// The run worked but the outcome differs from the one asked for.
pub const OUTCOME_DIFFERS: i32 = 1;
/// Bad input or usage: nothing was created.
pub const BAD_INPUT: i32 = 2;
/// Infrastructure: Docker unreachable, image missing, a node never ready in time.
pub const INFRA: i32 = 3;
/// Interrupted (Ctrl-C).
pub const INTERRUPTED: i32 = 130;
