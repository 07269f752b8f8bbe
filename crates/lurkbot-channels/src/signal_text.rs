//! Markdown as Signal's text styles: Signal messages are plain text with ranges styled
//! `BOLD`, `ITALIC`, `STRIKETHROUGH`, `MONOSPACE` or `SPOILER`, given to signal-cli as
//! `start:length:STYLE` in UTF-16 code units (its `--text-style`).

/// `markdown` as plain text and its styles (`start:length:STYLE`, UTF-16 units): `**bold**`,
/// `*italic*` or `_italic_`, `~~strike~~`, `` `code` `` and fenced blocks as monospace,
/// `||spoiler||`. Markers that do not close are kept as text.
pub(crate) fn signal_text(markdown: &str) -> (String, Vec<String>) {
    let mut out = Styled::default();
    let mut in_fence = false;
    let mut fence_start = None;
    let mut first = true;
    for line in markdown.split('\n') {
        // A fence line is dropped; the block between two is monospace.
        if line.trim_start().starts_with("```") {
            if in_fence && let Some(start) = fence_start.take() {
                out.style(start, "MONOSPACE");
            }
            in_fence = !in_fence;
            continue;
        }
        if !first {
            out.push_str("\n");
        }
        first = false;
        if in_fence {
            fence_start.get_or_insert(out.units);
            out.push_str(line);
        } else {
            inline(line, &mut out);
        }
    }
    if let Some(start) = fence_start {
        out.style(start, "MONOSPACE");
    }
    (out.text, out.styles)
}

/// Text being built, with its length in UTF-16 units and its styles.
#[derive(Default)]
struct Styled {
    text: String,
    units: usize,
    styles: Vec<String>,
}

impl Styled {
    fn push_str(&mut self, s: &str) {
        self.text.push_str(s);
        self.units += s.encode_utf16().count();
    }

    /// Styles everything written since `start` (nothing when it is empty).
    fn style(&mut self, start: usize, style: &str) {
        if self.units > start {
            self.styles
                .push(format!("{start}:{}:{style}", self.units - start));
        }
    }
}

/// The markers of one line, longest first.
const MARKERS: &[(&str, &str)] = &[
    ("**", "BOLD"),
    ("~~", "STRIKETHROUGH"),
    ("||", "SPOILER"),
    ("`", "MONOSPACE"),
    ("*", "ITALIC"),
    ("_", "ITALIC"),
];

/// One line's inline styles (code spans take their content as it is).
fn inline(line: &str, out: &mut Styled) {
    let mut rest = line;
    while !rest.is_empty() {
        let opened = MARKERS.iter().find_map(|(marker, style)| {
            let inner = rest.strip_prefix(marker)?;
            // An opening marker is followed by text, and closes later on the line.
            if inner.starts_with(char::is_whitespace) || inner.is_empty() {
                return None;
            }
            let close = inner.find(marker)?;
            (close > 0).then_some((
                *marker,
                *style,
                &inner[..close],
                &inner[close + marker.len()..],
            ))
        });
        match opened {
            // A lone `_` inside a word (snake_case) is not emphasis.
            Some(("_", ..)) if out.text.ends_with(|c: char| c.is_alphanumeric()) => {
                out.push_str("_");
                rest = &rest[1..];
            }
            Some((marker, style, inner, after)) => {
                let start = out.units;
                if marker == "`" {
                    out.push_str(inner);
                } else {
                    inline(inner, out);
                }
                out.style(start, style);
                rest = after;
            }
            None => {
                let next = rest.chars().next().map_or(1, char::len_utf8);
                out.push_str(&rest[..next]);
                rest = &rest[next..];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_becomes_plain_text_with_styles_in_utf16_units() {
        let (text, styles) =
            signal_text("**Done**, and ~~nothing~~ *else*: `a*b*c` snake_case_name");
        assert_eq!(text, "Done, and nothing else: a*b*c snake_case_name");
        assert_eq!(
            styles,
            [
                "0:4:BOLD",
                "10:7:STRIKETHROUGH",
                "18:4:ITALIC",
                "24:5:MONOSPACE"
            ]
        );
        // Offsets count UTF-16 units: an emoji before a style is two.
        let (text, styles) = signal_text("😀 **hi**");
        assert_eq!(text, "😀 hi");
        assert_eq!(styles, ["3:2:BOLD"]);
    }

    #[test]
    fn fences_are_monospace_and_unclosed_markers_stay_text() {
        let (text, styles) = signal_text("Run:\n```\nls -l\n```\n2 * 3 = 6, a ** b");
        assert_eq!(text, "Run:\nls -l\n2 * 3 = 6, a ** b");
        assert_eq!(styles, ["5:5:MONOSPACE"]);
        let (text, styles) = signal_text("**bold _and italic_**");
        assert_eq!(text, "bold and italic");
        assert_eq!(styles, ["5:10:ITALIC", "0:15:BOLD"]);
    }
}
