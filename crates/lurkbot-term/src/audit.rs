//! The audit log: one JSON file per run under `artifacts/terminal_exec/runs/`, refused runs
//! included. It never holds stdin nor a secret (the executor redacts before writing).

use std::path::PathBuf;

use lurkbot_core::{CoreError, Home, layout};
use serde::Serialize;
use serde_json::Value;

use crate::Artifact;

/// One audit record (ARCHITECTURE.md §4.4).
#[derive(Debug, Serialize)]
pub struct AuditRecord<'a> {
    /// The run id (also the file name).
    pub run_id: &'a str,
    /// When the run started.
    pub timestamp_ms: u64,
    /// The session key.
    pub session: &'a str,
    /// The command text (secret flag values masked).
    pub command: &'a str,
    /// The parsed tokens (secret flag values masked).
    pub argv: &'a [String],
    /// Exit status.
    pub exit_code: i32,
    /// Wall time.
    pub duration_ms: u64,
    /// stdout as returned.
    pub stdout: &'a str,
    /// stderr as returned.
    pub stderr: &'a str,
    /// Error code, if any.
    pub error_code: Option<&'a str>,
    /// Error message, if any.
    pub error_message: Option<&'a str>,
    /// The structured result.
    pub result: &'a Value,
    /// Files written.
    pub artifacts: &'a [Artifact],
}

/// Writes `record` to `artifacts/terminal_exec/runs/<run_id>.json` (atomically: a reader never
/// sees a partial record; an existing record is never replaced).
///
/// # Errors
/// The directory or file cannot be written.
pub fn write_audit(home: &Home, record: &AuditRecord<'_>) -> Result<PathBuf, CoreError> {
    let path = home
        .join(layout::AUDIT_RUNS)
        .join(format!("{}.json", record.run_id));
    let mut bytes = serde_json::to_vec_pretty(record).unwrap_or_else(|_| b"{}".to_vec());
    bytes.push(b'\n');
    if !lurkbot_core::write_new_atomic(&path, &bytes, 0o600)? {
        return Err(CoreError::io(
            "create",
            &path,
            std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "an audit record with this run id exists",
            ),
        ));
    }
    Ok(path)
}
