//! The outcomes of `extract` and `create`: the `result` fields the README lists for zip and tar and a short summary
//! for stdout.

use lurkbot_core::HomePath;
use serde_json::{Map, Value, json};

use super::create::Created;
use super::extractor::{ExtractReport, SkippedEntry};
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
    let skipped_total =
        s.existing + s.unsafe_path + s.protected + s.unsafe_link + s.too_large + s.unsupported;
    let mut stdout = format!(
        "Extracted {} ({}) from {} into {dest_shown}; created {}.\n",
        count(report.files_written, "file", "files"),
        human_bytes(report.bytes_written),
        input.relative(),
        count(report.dirs_created, "folder", "folders"),
    );
    let mut stderr = String::new();
    if skipped_total > 0 {
        let parts: Vec<String> = [
            (s.existing, "existing"),
            (s.unsafe_path, "unsafe path"),
            (s.protected, "protected"),
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
        if s.protected > 0 {
            stderr.push_str(&format!(
                "warning: the archive holds {} entries that would write LurkBot's secrets or state (.env, config.toml, sessions/, …); they were not extracted\n",
                s.protected
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
pub(crate) struct CreateReport {
    /// `"zip create"` or `"tar create"`.
    pub(crate) command: &'static str,
    /// The published archive.
    pub(crate) created: Created,
    /// The compression level used (`null` for an uncompressed tar).
    pub(crate) compression_level: Option<u32>,
    /// Command-specific fields (`format`).
    pub(crate) extra: Vec<(&'static str, Value)>,
}

impl CreateReport {
    /// The outcome.
    pub(crate) fn into_outcome(self) -> Outcome {
        let Created {
            src,
            out,
            bytes_written,
            stats,
            tree,
        } = self.created;
        let s = tree.skipped;
        let skipped_total = s.secret + s.unsafe_link + s.unsupported;
        let mut stdout = format!(
            "Created {} ({}) with {} and {} ({}) from {}.\n",
            out.relative(),
            human_bytes(bytes_written),
            count(stats.files, "file", "files"),
            count(stats.dirs, "folder", "folders"),
            human_bytes(stats.bytes_in),
            if src.relative().is_empty() {
                "the home"
            } else {
                src.relative()
            },
        );
        if skipped_total > 0 {
            stdout.push_str(&format!(
                "Left out {skipped_total}: {} secret, {} unsafe link, {} special file.\n",
                s.secret, s.unsafe_link, s.unsupported
            ));
            push_skipped_lines(&mut stdout, &tree.skipped_entries, skipped_total);
        }
        let mut result = Map::new();
        result.insert("ok".into(), true.into());
        result.insert("command".into(), self.command.into());
        result.insert("src".into(), src.relative().into());
        result.insert("out".into(), out.relative().into());
        for (k, v) in self.extra {
            result.insert(k.into(), v);
        }
        result.insert("files_added".into(), stats.files.into());
        result.insert("dirs_added".into(), stats.dirs.into());
        result.insert("bytes_in".into(), stats.bytes_in.into());
        result.insert("bytes_written".into(), bytes_written.into());
        result.insert("compression_level".into(), json!(self.compression_level));
        result.insert("skipped".into(), json!(tree.skipped));
        result.insert("skipped_entries".into(), json!(tree.skipped_entries));
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

/// `1 file`, `2 files`.
fn count(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod count_tests {
    #[test]
    fn one_is_singular() {
        assert_eq!(super::count(1u64, "folder", "folders"), "1 folder");
        assert_eq!(super::count(0u64, "file", "files"), "0 files");
        assert_eq!(super::count(2u64, "file", "files"), "2 files");
    }
}
