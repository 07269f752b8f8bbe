//! The output envelope of a run (ARCHITECTURE.md §4.3) and the output caps.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Most characters of stdout kept.
pub const STDOUT_CAP: usize = 16_000;
/// Most characters of stderr kept.
pub const STDERR_CAP: usize = 8_000;

/// A file written by a run, relative to the home.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    /// Home-relative path with `/`.
    pub path: String,
    /// MIME type.
    pub mime: String,
    /// What it holds.
    pub description: String,
}

/// What every run answers, refused ones included.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// `YYYYMMDD_HHMMSS_mmm_<10 hex>`.
    pub run_id: String,
    /// 0, 1, 2, 124 or 127 (see `ErrorCode::exit_code`).
    pub exit_code: i32,
    /// Summary for people (capped).
    pub stdout: String,
    /// Warnings and what to do next (capped).
    pub stderr: String,
    /// Wall time of the run.
    pub duration_ms: u64,
    /// Stable error code, `null` on success.
    pub error_code: Option<String>,
    /// What went wrong, `null` on success.
    pub error_message: Option<String>,
    /// Structured result: always an object with `ok` and `command`.
    pub result: Value,
    /// Files the run wrote.
    pub artifacts: Vec<Artifact>,
    /// The parsed tokens (secret values masked).
    pub argv: Vec<String>,
}

/// Caps `text` at `cap` characters, keeping the head and the tail around a
/// `…[truncated N chars]…` marker, so a cut is never silent.
pub fn cap_text(text: &str, cap: usize) -> String {
    let total = text.chars().count();
    if total <= cap {
        return text.to_string();
    }
    // The marker length depends on N; size it for the worst case first.
    let marker_len = format!("…[truncated {total} chars]…").chars().count();
    let keep = cap.saturating_sub(marker_len);
    let head = keep * 3 / 4;
    let tail = keep - head;
    let cut = total - head - tail;
    let head_text: String = text.chars().take(head).collect();
    let tail_text: String = text.chars().skip(total - tail).collect();
    format!("{head_text}…[truncated {cut} chars]…{tail_text}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_untouched() {
        assert_eq!(cap_text("abc", 3), "abc");
    }

    #[test]
    fn long_text_is_cut_visibly_within_the_cap() {
        let text: String = (0..20_000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let capped = cap_text(&text, STDOUT_CAP);
        assert!(capped.chars().count() <= STDOUT_CAP);
        assert!(capped.starts_with("abcdef"));
        assert!(capped.ends_with(&text[text.len() - 100..]));
        let n: usize = capped
            .split("…[truncated ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap();
        assert_eq!(
            capped.chars().count() - format!("…[truncated {n} chars]…").chars().count() + n,
            20_000
        );
    }

    #[test]
    fn multibyte_text_is_cut_on_char_boundaries() {
        let text = "é".repeat(9_000);
        let capped = cap_text(&text, STDERR_CAP);
        assert!(capped.chars().count() <= STDERR_CAP && capped.contains("…[truncated "));
    }
}
