//! Third-party text made safe for a terminal (ARCHITECTURE.md §4.4): C0 and C1 control characters,
//! DEL and ESC (so ANSI/OSC sequences such as OSC 52 clipboard writes, and bare carriage
//! returns that overwrite a line) are replaced before the text reaches a human. Line feeds and
//! tabs stay: they are layout, not commands.

use std::borrow::Cow;

/// What a control character is shown as.
pub const REPLACEMENT: char = '\u{FFFD}';

/// `text` with every control character but `\n` and `\t` replaced by [`REPLACEMENT`].
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unprintable) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| if is_unprintable(c) { REPLACEMENT } else { c })
            .collect(),
    )
}

/// Whether `c` must not reach a terminal raw.
pub fn is_unprintable(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_carriage_returns_are_replaced() {
        assert!(matches!(printable("plain text\n\tok"), Cow::Borrowed(_)));
        let hostile = "a\u{1b}]52;c;cHduZWQ=\u{7}b\rc\u{9b}31md\u{7f}";
        let shown = printable(hostile);
        assert!(!shown.chars().any(|c| c.is_control()), "{shown:?}");
        assert_eq!(
            shown,
            "a\u{FFFD}]52;c;cHduZWQ=\u{FFFD}b\u{FFFD}c\u{FFFD}31md\u{FFFD}"
        );
    }
}
