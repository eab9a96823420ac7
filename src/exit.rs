//! Exit codes. CI depends on them, so they live in one place ([`Exit::TABLE`]), which the
//! README, `repro --help` and the man pages show.
//!
//! Modelled on cargo-nextest's `exit_codes.rs`: the numbers are named here and nowhere else. A
//! command returns an [`Exit`] (how it came out) or an `Error` (`crate::error`, whose one match
//! says which [`Exit`] each error is); `main` turns that into a number with [`Exit::code`].
//! This module sits at the bottom of the module graph (it knows only [`Outcome`]), so the
//! runner and the matrix can say what their results mean without importing the commands.

use crate::outcome::Outcome;

/// The outcome is the one asked for (`--expect`, default `auto`: what `fixed-in` predicts).
pub(crate) const OK: i32 = 0;
/// A real difference: the run showed the other definite outcome (a regression, or an
/// unexpected fix).
pub(crate) const OUTCOME_DIFFERS: i32 = 1;
/// Bad input or usage: nothing was created.
pub(crate) const BAD_INPUT: i32 = 2;
/// Infrastructure: Docker unreachable, image missing, a node never ready in time, a results
/// folder that cannot be written.
pub(crate) const INFRA: i32 = 3;
/// The run worked, but the observations match neither behaviour (flaky or misconfigured):
/// not a finding about k3s.
pub(crate) const INCONCLUSIVE: i32 = 4;
/// Interrupted (SIGINT / Ctrl-C, SIGTERM, SIGHUP).
pub(crate) const INTERRUPTED: i32 = 130;
/// stdout was closed under us (`repro … | head -c0`): 128 + SIGPIPE, as a shell reports it.
pub const CLOSED_STDOUT: i32 = 141;

/// How a command came out: one meaning per row of the README's exit-code table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Exit {
    /// 0: what was asked for.
    Ok,
    /// 1: the other definite outcome.
    OutcomeDiffers,
    /// 2: bad input or usage.
    BadInput,
    /// 3: infrastructure (or a set of runs left incomplete by it).
    Infra,
    /// 4: neither behaviour.
    Inconclusive,
    /// 130: interrupted.
    Interrupted,
    /// A command's own exit status, passed through (`repro runs exec`): not one of the table's
    /// meanings, the command's.
    Passed(u8),
}

impl Exit {
    /// The exit-code table, row by row: each meaning, a short name for one-line summaries, and
    /// the words the README's table, `repro --help` and the man pages' EXIT STATUS show (the
    /// README test below holds its table to these rows, exactly and in this order).
    pub(crate) const TABLE: &'static [(Exit, &'static str, &'static str)] = &[
        (Exit::Ok, "as asked", "the outcome is the one asked for (`--expect`, default `auto`: what `fixed-in` predicts)"),
        (Exit::OutcomeDiffers, "a real difference", "a real difference: the other definite outcome — a regression (`reproduced` where `fixed` was asked) or an unexpected fix"),
        (Exit::BadInput, "bad input", "bad input or usage — nothing was created"),
        (Exit::Infra, "infrastructure", "infrastructure: Docker unreachable, image missing, a host that cannot run the nodes (`repro doctor` fails a line; a privileged run stops on that line before creating anything), a node not ready within `--timeout`, a results folder that cannot be written"),
        (Exit::Inconclusive, "inconclusive", "inconclusive: the run worked but the observations match neither behaviour (flaky or misconfigured, not a finding about k3s)"),
        (Exit::Interrupted, "interrupted", "interrupted: SIGINT (Ctrl-C), SIGTERM or SIGHUP (terminal closed), in any phase — image build, cluster creation, steps, teardown; `repro sim build` too"),
    ];

    /// The one table from meaning to number.
    pub fn code(self) -> i32 {
        match self {
            Exit::Ok => OK,
            Exit::OutcomeDiffers => OUTCOME_DIFFERS,
            Exit::BadInput => BAD_INPUT,
            Exit::Infra => INFRA,
            Exit::Inconclusive => INCONCLUSIVE,
            Exit::Interrupted => INTERRUPTED,
            Exit::Passed(code) => i32::from(code),
        }
    }

    /// How a run's outcome compares with the one asked for.
    pub(crate) fn of_outcome(got: Outcome, asked: Outcome) -> Exit {
        if got == asked {
            Exit::Ok
        } else if got == Outcome::Inconclusive {
            Exit::Inconclusive
        } else {
            Exit::OutcomeDiffers
        }
    }

    /// A number written by a run (a cell's `exit_code` in summary.json) read back as its
    /// meaning; a number outside the table (none should occur) counts as infrastructure.
    pub(crate) fn of_code(code: i32) -> Exit {
        match code {
            OK => Exit::Ok,
            OUTCOME_DIFFERS => Exit::OutcomeDiffers,
            BAD_INPUT => Exit::BadInput,
            INCONCLUSIVE => Exit::Inconclusive,
            INTERRUPTED => Exit::Interrupted,
            _ => Exit::Infra,
        }
    }

    /// The exit of many runs (`matrix`, `merge`, `bisect`): the worst of theirs, by priority
    /// 130 > 3 > 1 > 4 > 0. An interrupt or a broken run means the set is incomplete, so it wins
    /// over a finding; a real difference wins over an inconclusive run. Bad input among them
    /// (none should occur: input is checked before any run) counts as infrastructure.
    pub(crate) fn worst(exits: impl IntoIterator<Item = Exit>) -> Exit {
        let rank = |e: Exit| match e {
            Exit::Ok => 0,
            Exit::Inconclusive => 1,
            Exit::OutcomeDiffers => 2,
            Exit::Infra | Exit::BadInput | Exit::Passed(_) => 3,
            Exit::Interrupted => 5,
        };
        let mut worst = Exit::Ok;
        for e in exits {
            let e = if e == Exit::BadInput { Exit::Infra } else { e };
            if rank(e) > rank(worst) {
                worst = e;
            }
        }
        worst
    }
}

/// Leaves the process at once with `exit`'s code, skipping what `main` would still do: for a
/// second interrupt (the user asked not to wait for the cleanup) and a closed stdout.
pub fn now(exit: i32) -> ! {
    std::process::exit(exit)
}

/// The body rows of the first Markdown table after `heading` in `doc` (for the tests that hold a
/// document's table to the table in the code).
#[cfg(test)]
pub(crate) fn markdown_table_rows<'a>(doc: &'a str, heading: &str) -> Vec<&'a str> {
    let section = doc
        .split(heading)
        .nth(1)
        .unwrap_or_else(|| panic!("no `{heading}` section"));
    section
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_the_readmes() {
        let table = [
            (Exit::Ok, 0),
            (Exit::OutcomeDiffers, 1),
            (Exit::BadInput, 2),
            (Exit::Infra, 3),
            (Exit::Inconclusive, 4),
            (Exit::Interrupted, 130),
        ];
        for (e, code) in table {
            assert_eq!(e.code(), code, "{e:?}");
            assert_eq!(Exit::of_code(code), e);
        }
        assert_eq!(Exit::of_code(-1), Exit::Infra);
        // The README's table is this one, row for row: the same codes, the same words, in order.
        let rows = markdown_table_rows(include_str!("../README.md"), "### Exit codes");
        let want: Vec<String> = Exit::TABLE
            .iter()
            .map(|(e, _, meaning)| format!("| {} | {meaning} |", e.code()))
            .collect();
        assert_eq!(
            rows, want,
            "README's exit-code table differs from Exit::TABLE"
        );
        let codes: Vec<Exit> = Exit::TABLE.iter().map(|(e, _, _)| *e).collect();
        assert_eq!(
            codes,
            table.map(|(e, _)| e),
            "one row per meaning, in order"
        );
    }

    #[test]
    fn a_run_against_what_was_asked() {
        use Outcome::*;
        assert_eq!(Exit::of_outcome(Fixed, Fixed), Exit::Ok);
        assert_eq!(Exit::of_outcome(Reproduced, Reproduced), Exit::Ok);
        assert_eq!(Exit::of_outcome(Inconclusive, Inconclusive), Exit::Ok);
        assert_eq!(Exit::of_outcome(Reproduced, Fixed), Exit::OutcomeDiffers);
        assert_eq!(Exit::of_outcome(Fixed, Reproduced), Exit::OutcomeDiffers);
        assert_eq!(Exit::of_outcome(Inconclusive, Fixed), Exit::Inconclusive);
        assert_eq!(Exit::of_outcome(Fixed, Inconclusive), Exit::OutcomeDiffers);
    }

    #[test]
    fn the_worst_exit_by_priority() {
        use Exit::*;
        let worst = |e: &[Exit]| Exit::worst(e.iter().copied()).code();
        assert_eq!(worst(&[]), 0);
        assert_eq!(worst(&[Ok, Ok]), 0);
        assert_eq!(worst(&[Ok, Inconclusive]), 4);
        assert_eq!(worst(&[Inconclusive, OutcomeDiffers, Ok]), 1);
        assert_eq!(worst(&[OutcomeDiffers, Infra, Inconclusive]), 3);
        assert_eq!(worst(&[Infra, Interrupted, OutcomeDiffers]), 130);
        assert_eq!(worst(&[BadInput]), 3);
    }
}
