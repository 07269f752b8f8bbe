//! One `lurkbot doctor` check's outcome, as the checks (`doctor.rs`, `doctor_signal.rs`, `doctor_plugins.rs`) make
//! it and the report prints it.

use serde::Serialize;

/// The outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Status {
    Ok,
    Warn,
    Fail,
}

/// One check: its name, outcome, what was found, and the fix when it is not ok.
#[derive(Debug, Serialize)]
pub(crate) struct Check {
    pub(crate) check: &'static str,
    pub(crate) status: Status,
    pub(crate) detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) fix: Option<String>,
}

/// A check that passed.
pub(crate) fn ok(check: &'static str, detail: impl Into<String>) -> Check {
    Check {
        check,
        status: Status::Ok,
        detail: detail.into(),
        fix: None,
    }
}

/// A check that did not, with its fix.
pub(crate) fn bad(
    check: &'static str,
    status: Status,
    detail: impl Into<String>,
    fix: impl Into<String>,
) -> Check {
    Check {
        check,
        status,
        detail: detail.into(),
        fix: Some(fix.into()),
    }
}
