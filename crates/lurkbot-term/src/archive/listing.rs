//! Listings (`zip list`, `tar list`): the entry record, the summary on stdout, the capped
//! `result.entries`, and the full listing written by `--out`.

use chrono::TimeZone;
use lurkbot_core::HomePath;
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::work::human_bytes;
use crate::{CommandCtx, CommandError, Outcome, output};

/// One entry of a listing (the documented fields, plus tar's optional ones).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ListEntry {
    /// The name as stored (decoded for display).
    pub(crate) name: String,
    /// Bytes in the archive; `null` for tar, which compresses the stream rather than entries.
    pub(crate) compressed_bytes: Option<u64>,
    /// Bytes once extracted.
    pub(crate) uncompressed_bytes: u64,
    /// Whether the entry is a directory.
    pub(crate) is_dir: bool,
    /// Modification time in ms since the epoch, when the archive records one.
    pub(crate) modified_time_ms: Option<i64>,
    /// Tar-only fields.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub(crate) tar: Option<TarFields>,
}

/// The optional tar fields of a listing entry.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TarFields {
    /// `file`, `dir`, `symlink`, `hardlink`, `char`, `block`, `fifo` or `other`.
    pub(crate) kind: &'static str,
    /// Permission bits.
    pub(crate) mode: u32,
    /// Owner id.
    pub(crate) uid: u64,
    /// Group id.
    pub(crate) gid: u64,
    /// Link target of a link entry.
    pub(crate) link_name: Option<String>,
}

/// The `--out` file of a listing, serialised straight from the entries.
#[derive(Serialize)]
struct FullListing<'a> {
    command: &'static str,
    #[serde(rename = "in")]
    input: &'a str,
    count_total: usize,
    #[serde(flatten)]
    extra: Map<String, Value>,
    entries: &'a [ListEntry],
}

/// A finished listing, ready to become the command's outcome.
pub(crate) struct Listing<'a> {
    /// `"zip list"` or `"tar list"`.
    pub(crate) command: &'static str,
    /// The archive.
    pub(crate) input: &'a HomePath,
    /// Every entry.
    pub(crate) entries: Vec<ListEntry>,
    /// Command-specific result fields (`encoding`, `format`).
    pub(crate) extra: Vec<(&'static str, Value)>,
}

impl Listing<'_> {
    /// The outcome: a summary with the first `max` entries, and the full listing at `--out`.
    ///
    /// # Errors
    /// Those of [`output::write_json_out`].
    pub(crate) fn into_outcome(
        self,
        ctx: &CommandCtx<'_>,
        out: Option<&output::OutFile>,
        max: usize,
    ) -> Result<Outcome, CommandError> {
        let capped = output::Capped::new(self.entries.len(), max);
        let (total, emitted) = (capped.total, capped.emitted);
        let total_bytes: u64 = self.entries.iter().map(|e| e.uncompressed_bytes).sum();
        let mut stdout = format!(
            "{}: {total} entries, {} uncompressed\n",
            self.input.relative(),
            human_bytes(total_bytes)
        );
        for entry in &self.entries[..emitted] {
            stdout.push_str(&format!(
                "{:>12}  {}  {}\n",
                entry.uncompressed_bytes,
                local_time(entry.modified_time_ms),
                entry.name
            ));
        }
        stdout.push_str(&capped.more_line("entries", "--max"));
        let mut artifacts = Vec::new();
        if let Some(out) = out {
            let full = FullListing {
                command: self.command,
                input: self.input.relative(),
                count_total: total,
                extra: self
                    .extra
                    .iter()
                    .map(|(k, v)| ((*k).to_string(), v.clone()))
                    .collect(),
                entries: &self.entries,
            };
            let artifact = output::write_serialized_out(
                ctx,
                out,
                &full,
                &format!("full listing of {}", self.input.relative()),
            )?;
            stdout.push_str(&format!("Full listing written to {}\n", artifact.path));
            artifacts.push(artifact);
        }
        let mut result = Map::new();
        result.insert("ok".into(), true.into());
        result.insert("command".into(), self.command.into());
        result.insert("in".into(), self.input.relative().into());
        for (k, v) in self.extra {
            result.insert(k.into(), v);
        }
        capped.insert_into(&mut result);
        let mut entries = self.entries;
        entries.truncate(emitted);
        result.insert("entries".into(), json!(entries));
        Ok(Outcome {
            stdout,
            stderr: String::new(),
            result,
            artifacts,
        })
    }
}

fn local_time(ms: Option<i64>) -> String {
    ms.and_then(|ms| chrono::Local.timestamp_millis_opt(ms).single())
        .map_or_else(
            || "????-??-?? ??:??".to_string(),
            |t| t.format("%Y-%m-%d %H:%M").to_string(),
        )
}
