//! The doctor's report: each check's answer as a [`Line`] (ok, warn or fail, with the fix),
//! its text (the run's error and `repro doctor`'s output print it) and its JSON (`Serialize`).

use super::*;

/// How one check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Status {
    Ok,
    Warn,
    Fail,
}

impl Status {
    pub(crate) fn word(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "FAIL",
        }
    }
}

/// One answer: what was checked, how it came out, what was seen and, unless ok, what to do.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Line {
    pub(crate) check: &'static str,
    pub(crate) status: Status,
    pub(crate) detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) fix: Option<String>,
}

impl Line {
    pub(super) fn ok(check: &'static str, detail: impl Into<String>) -> Line {
        Line {
            check,
            status: Status::Ok,
            detail: detail.into(),
            fix: None,
        }
    }

    pub(super) fn warn(
        check: &'static str,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Line {
        Line::with_fix(check, Status::Warn, detail.into(), fix.into())
    }

    pub(super) fn fail(
        check: &'static str,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Line {
        Line::with_fix(check, Status::Fail, detail.into(), fix.into())
    }

    fn with_fix(check: &'static str, status: Status, detail: String, fix: String) -> Line {
        Line {
            check,
            status,
            detail,
            fix: Some(fix),
        }
    }

    /// The line as the run's error and the doctor's text print it.
    pub(crate) fn text(&self) -> String {
        let mut s = format!("{} {}: {}", self.status.word(), self.check, self.detail);
        if let Some(fix) = &self.fix {
            s.push_str(&crate::diag::Help(fix).to_string());
        }
        s
    }
}

pub(super) fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or_default().to_string()
}
