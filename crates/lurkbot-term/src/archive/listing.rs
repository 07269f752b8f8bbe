//! Listings (`zip list`, `tar list`): the entry record, the summary on stdout, the capped
//! `result.entries`, and the full listing written by `--out`.
//!
//! A listing holds its entries in memory (`tar list`), or only the first `--max` of them with
//! the totals, its `--out` file written beforehand by [`write_full_listing`] from a second pass
//! over the archive (`zip list`: 100,000 entries never held at once).

use std::cell::RefCell;

use chrono::TimeZone;
use lurkbot_core::HomePath;
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::work::human_bytes;
use crate::{Artifact, CommandCtx, CommandError, Outcome, output};

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

/// Hands every entry of a listing, in order, to the function it is given.
pub(crate) type EntrySource<'s> = dyn FnMut(&mut dyn FnMut(&ListEntry) -> Result<(), CommandError>) -> Result<(), CommandError>
    + 's;

/// The `--out` file of a listing, serialised as the entries come.
#[derive(Serialize)]
struct FullListing<'a, 's> {
    command: &'static str,
    #[serde(rename = "in")]
    input: &'a str,
    count_total: usize,
    #[serde(flatten)]
    extra: Map<String, Value>,
    entries: Pulled<'a, 's>,
}

/// The entries of a [`FullListing`], pulled from their source while serialised; a failure of
/// the source is kept in `failed` (serde can carry only its message).
struct Pulled<'a, 's> {
    source: RefCell<&'a mut EntrySource<'s>>,
    count: usize,
    failed: &'a RefCell<Option<CommandError>>,
}

impl Serialize for Pulled<'_, '_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeSeq};
        let mut seq = serializer.serialize_seq(Some(self.count))?;
        let mut write_failed: Option<S::Error> = None;
        let mut source = self.source.borrow_mut();
        let pulled = source(&mut |entry| {
            seq.serialize_element(entry).map_err(|e| {
                let message = e.to_string();
                write_failed = Some(e);
                CommandError::new(crate::ErrorCode::IoError, message)
            })
        });
        if let Some(e) = write_failed {
            return Err(e);
        }
        if let Err(e) = pulled {
            let message = e.message.clone();
            *self.failed.borrow_mut() = Some(e);
            return Err(S::Error::custom(message));
        }
        seq.end()
    }
}

/// Writes the full listing of `count` entries from `source` to `target` (resolved by
/// [`output::writable_target`]), streamed: the file is replaced only once it is complete.
///
/// # Errors
/// What `source` fails with, `IoError` when writing fails.
pub(crate) fn write_full_listing(
    target: &HomePath,
    command: &'static str,
    input: &HomePath,
    extra: &[(&'static str, Value)],
    count: usize,
    source: &mut EntrySource<'_>,
) -> Result<Artifact, CommandError> {
    let failed = RefCell::new(None);
    let full = FullListing {
        command,
        input: input.relative(),
        count_total: count,
        extra: extra
            .iter()
            .map(|(k, v)| ((*k).to_string(), v.clone()))
            .collect(),
        entries: Pulled {
            source: RefCell::new(source),
            count,
            failed: &failed,
        },
    };
    let written = output::write_serialized_to(
        target,
        &full,
        &format!("full listing of {}", input.relative()),
    );
    match (written, failed.into_inner()) {
        (Err(_), Some(cause)) => Err(cause),
        (written, _) => written,
    }
}

/// Where a listing's `--out` file comes from.
pub(crate) enum FullOut<'o> {
    /// No `--out`.
    None,
    /// Written from the listing's entries, which are all of them.
    FromEntries(&'o output::OutFile),
    /// Already written by [`write_full_listing`].
    Written(Artifact),
}

/// A finished listing, ready to become the command's outcome.
pub(crate) struct Listing<'a> {
    /// `"zip list"` or `"tar list"`.
    pub(crate) command: &'static str,
    /// The archive.
    pub(crate) input: &'a HomePath,
    /// Every entry, or the first ones when `totals` is given.
    pub(crate) entries: Vec<ListEntry>,
    /// The count and uncompressed bytes of all entries, when `entries` holds only the first.
    pub(crate) totals: Option<(usize, u64)>,
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
        out: FullOut<'_>,
        max: usize,
    ) -> Result<Outcome, CommandError> {
        let (total, total_bytes) = self.totals.unwrap_or_else(|| {
            (
                self.entries.len(),
                self.entries.iter().map(|e| e.uncompressed_bytes).sum(),
            )
        });
        let capped = output::Capped::new(total, max);
        let emitted = capped.emitted.min(self.entries.len());
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
        let artifact = match out {
            FullOut::None => None,
            FullOut::Written(artifact) => Some(artifact),
            FullOut::FromEntries(out) => {
                let target = output::writable_target(ctx, out)?;
                let entries = &self.entries;
                Some(write_full_listing(
                    &target,
                    self.command,
                    self.input,
                    &self.extra,
                    entries.len(),
                    &mut |each| entries.iter().try_for_each(&mut *each),
                )?)
            }
        };
        if let Some(artifact) = artifact {
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
