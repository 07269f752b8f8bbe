//! The outcomes of `extract` and `create`: the `result` fields of PRD-0017 and a short summary
//! for stdout.

use lurkbot_core::HomePath;
use serde_json::{Map, Value, json};

use super::extractor::{ExtractReport, SkippedEntry};
use super::source::SourceSkips;
use super::work::human_bytes;
use crate::Outcome;

/// How many skipped entries stdout names (the result names up to 100).
const STDOUT_SKIPPED: usize = 20;

/// The outcome of an extraction.
pub(crate) fn extract_outcome(
    command: &str,
    input: &HomePath,
    dest: &HomePath,
    report: ExtractReport,
    extra: Vec<(&'static str, Value)>,
) -> Outcome {
    let dest_shown = if dest.relative().is_empty() {
        "."
    } else {
        dest.relative()
    };
    let s = report.skipped;
    let skipped_total = s.existing + s.unsafe_path + s.unsafe_link + s.too_large + s.unsupported;
    let mut stdout = format!(
        "Extracted {} files ({}) from {} into {dest_shown}; created {} folders.\n",
        report.files_written,
        human_bytes(report.bytes_written),
        input.relative(),
        report.dirs_created,
    );
    let mut stderr = String::new();
    if skipped_total > 0 {
        let parts: Vec<String> = [
            (s.existing, "existing"),
            (s.unsafe_path, "unsafe path"),
            (s.unsafe_link, "link"),
            (s.too_large, "too large"),
            (s.unsupported, "special file"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        stdout.push_str(&format!(
            "Skipped {skipped_total} entries: {}.\n",
            parts.join(", ")
        ));
        push_skipped_lines(&mut stdout, &report.skipped_entries, skipped_total);
        if s.unsafe_path + s.unsafe_link > 0 {
            stderr.push_str(&format!(
                "warning: the archive holds {} entries that would write outside --dest or create links; they were not extracted\n",
                s.unsafe_path + s.unsafe_link
            ));
        }
        if s.existing > 0 {
            stderr.push_str(
                "note: existing files were kept; add --overwrite --confirm to replace them\n",
            );
        }
    }
    let mut result = Map::new();
    result.insert("ok".into(), true.into());
    result.insert("command".into(), command.into());
    result.insert("in".into(), input.relative().into());
    result.insert("dest".into(), dest.relative().into());
    for (k, v) in extra {
        result.insert(k.into(), v);
    }
    result.insert("entries_total".into(), report.entries_total.into());
    result.insert("files_written".into(), report.files_written.into());
    result.insert("dirs_created".into(), report.dirs_created.into());
    result.insert("bytes_written".into(), report.bytes_written.into());
    result.insert("skipped".into(), json!(report.skipped));
    result.insert("skipped_entries".into(), json!(report.skipped_entries));
    Outcome {
        stdout,
        stderr,
        result,
        artifacts: Vec::new(),
    }
}

/// What a creation did.
pub(crate) struct CreateReport<'a> {
    /// `"zip create"` or `"tar create"`.
    pub(crate) command: &'static str,
    /// The source.
    pub(crate) src: &'a HomePath,
    /// The archive.
    pub(crate) out: &'a HomePath,
    /// Files stored.
    pub(crate) files_added: u64,
    /// Folders stored.
    pub(crate) dirs_added: u64,
    /// Bytes of the stored files.
    pub(crate) bytes_in: u64,
    /// Size of the archive.
    pub(crate) bytes_written: u64,
    /// The compression level used (`null` for an uncompressed tar).
    pub(crate) compression_level: Option<u32>,
    /// Sources left out.
    pub(crate) skipped: SourceSkips,
    /// The first sources left out.
    pub(crate) skipped_entries: Vec<SkippedEntry>,
    /// Command-specific fields (`format`).
    pub(crate) extra: Vec<(&'static str, Value)>,
}

impl CreateReport<'_> {
    /// The outcome.
    pub(crate) fn into_outcome(self) -> Outcome {
        let s = self.skipped;
        let skipped_total = s.secret + s.unsafe_link + s.unsupported;
        let mut stdout = format!(
            "Created {} ({}) with {} files and {} folders ({}) from {}.\n",
            self.out.relative(),
            human_bytes(self.bytes_written),
            self.files_added,
            self.dirs_added,
            human_bytes(self.bytes_in),
            if self.src.relative().is_empty() {
                "the home"
            } else {
                self.src.relative()
            },
        );
        if skipped_total > 0 {
            stdout.push_str(&format!(
                "Left out {skipped_total}: {} secret, {} unsafe link, {} special file.\n",
                s.secret, s.unsafe_link, s.unsupported
            ));
            push_skipped_lines(&mut stdout, &self.skipped_entries, skipped_total);
        }
        let mut result = Map::new();
        result.insert("ok".into(), true.into());
        result.insert("command".into(), self.command.into());
        result.insert("src".into(), self.src.relative().into());
        result.insert("out".into(), self.out.relative().into());
        for (k, v) in self.extra {
            result.insert(k.into(), v);
        }
        result.insert("files_added".into(), self.files_added.into());
        result.insert("dirs_added".into(), self.dirs_added.into());
        result.insert("bytes_in".into(), self.bytes_in.into());
        result.insert("bytes_written".into(), self.bytes_written.into());
        result.insert("compression_level".into(), json!(self.compression_level));
        result.insert("skipped".into(), json!(self.skipped));
        result.insert("skipped_entries".into(), json!(self.skipped_entries));
        Outcome {
            stdout,
            stderr: String::new(),
            result,
            artifacts: Vec::new(),
        }
    }
}

fn push_skipped_lines(stdout: &mut String, entries: &[SkippedEntry], total: u64) {
    for entry in entries.iter().take(STDOUT_SKIPPED) {
        stdout.push_str(&format!("  skipped {:?}: {}\n", entry.name, entry.reason));
    }
    let shown = entries.len().min(STDOUT_SKIPPED) as u64;
    if total > shown {
        stdout.push_str(&format!(
            "  … and {} more (see result.skipped_entries)\n",
            total - shown
        ));
    }
}
