//! Markdown made readable on a terminal as a reply streams in: headings bold (their `#`s
//! dropped), `**bold**` bold, `` `code` `` and fenced code blocks in colour (the fences dimmed),
//! list bullets as `•`. Text is passed on as it arrives; only the few characters that decide a
//! style (a line's start, a `*`) wait for the next. Used only when stdout is a terminal and
//! `NO_COLOR` is not set; piped output stays the model's text as it was.

const BOLD: &str = "\x1b[1m";
const CODE: &str = "\x1b[36m";
const DIM: &str = "\x1b[2m";
const RESET: &str = "\x1b[0m";

/// Longest line start held back to decide what the line is.
const START_MAX: usize = 8;

/// The renderer's state between chunks.
#[derive(Debug, Default)]
pub(crate) struct MarkdownStream {
    /// Characters at the start of the current line not yet decided.
    start: String,
    /// The current line's start was decided.
    decided: bool,
    /// A `*` waiting to see whether a second one follows.
    star: bool,
    bold: bool,
    code: bool,
    fence: bool,
    heading: bool,
}

impl MarkdownStream {
    /// Renders `chunk`; what can be shown now.
    pub(crate) fn push(&mut self, chunk: &str) -> String {
        let mut out = String::new();
        for c in chunk.chars() {
            self.char(c, &mut out);
        }
        out
    }

    /// Shows what was held back and resets every style (the end of a reply).
    pub(crate) fn finish(&mut self) -> String {
        let mut out = String::new();
        if !self.decided && !self.start.is_empty() {
            self.decide(&mut out);
        }
        if self.star {
            out.push('*');
        }
        if self.bold || self.code || self.fence || self.heading {
            out.push_str(RESET);
        }
        *self = Self::default();
        out
    }

    fn char(&mut self, c: char, out: &mut String) {
        if c == '\n' {
            if !self.decided {
                self.decide(out);
            }
            self.end_line(out);
            return;
        }
        if !self.decided {
            self.start.push(c);
            let undecided =
                self.start.len() < START_MAX && self.start.chars().all(|c| "#`*-+> \t".contains(c));
            if !undecided {
                self.decide(out);
            }
            return;
        }
        self.inline(c, out);
    }

    /// Chooses the line's kind from its start, then shows the start.
    fn decide(&mut self, out: &mut String) {
        self.decided = true;
        let start = std::mem::take(&mut self.start);
        if start.starts_with("```") {
            self.fence = !self.fence;
            out.push_str(DIM);
            out.push_str(&start);
            out.push_str(RESET);
            // The opening fence's language name follows, dimmed.
            if self.fence {
                out.push_str(DIM);
            }
            return;
        }
        if self.fence {
            out.push_str(CODE);
            out.push_str(&start);
            return;
        }
        let hashes = start.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&hashes) && start[hashes..].starts_with(' ') {
            self.heading = true;
            out.push_str(BOLD);
            for c in start[hashes..].trim_start().chars() {
                self.inline(c, out);
            }
            return;
        }
        let indent: String = start.chars().take_while(|c| *c == ' ').collect();
        let rest = &start[indent.len()..];
        for bullet in ["- ", "* ", "+ "] {
            if let Some(after) = rest.strip_prefix(bullet) {
                out.push_str(&indent);
                out.push_str("• ");
                for c in after.chars() {
                    self.inline(c, out);
                }
                return;
            }
        }
        for c in start.chars() {
            self.inline(c, out);
        }
    }

    fn inline(&mut self, c: char, out: &mut String) {
        if self.fence {
            out.push(c);
            return;
        }
        if self.star {
            self.star = false;
            if c == '*' && !self.code {
                self.bold = !self.bold;
                out.push_str(if self.bold { BOLD } else { RESET });
                self.restore(out);
                return;
            }
            out.push('*');
        }
        match c {
            '*' if !self.code => self.star = true,
            '`' => {
                self.code = !self.code;
                out.push_str(if self.code { CODE } else { RESET });
                if !self.code {
                    self.restore(out);
                }
            }
            c => out.push(c),
        }
    }

    /// After a reset, the styles still in force.
    fn restore(&self, out: &mut String) {
        if self.heading || self.bold {
            out.push_str(BOLD);
        }
        if self.code {
            out.push_str(CODE);
        }
    }

    fn end_line(&mut self, out: &mut String) {
        if self.star {
            out.push('*');
            self.star = false;
        }
        if self.heading || self.bold || self.code || self.fence {
            out.push_str(RESET);
        }
        self.heading = false;
        self.bold = false;
        self.code = false;
        self.decided = false;
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(text: &str) -> String {
        let mut md = MarkdownStream::default();
        let mut out = md.push(text);
        out.push_str(&md.finish());
        out
    }

    fn by_char(text: &str) -> String {
        let mut md = MarkdownStream::default();
        let mut out: String = text.chars().map(|c| md.push(&c.to_string())).collect();
        out.push_str(&md.finish());
        out
    }

    fn plain(rendered: &str) -> String {
        let mut out = String::new();
        let mut chars = rendered.chars();
        while let Some(c) = chars.next() {
            if c == '\x1b' {
                for d in chars.by_ref() {
                    if d == 'm' {
                        break;
                    }
                }
            } else {
                out.push(c);
            }
        }
        out
    }

    #[test]
    fn markdown_reads_as_text_however_it_is_split() {
        let text = "# Title\nSome **bold** and `code`, a * star.\n- one\n  * two\n```rust\nlet x = 1 * 2;\n```\n2 ** 3";
        let rendered = whole(text);
        assert_eq!(rendered, by_char(text));
        assert_eq!(
            plain(&rendered),
            "Title\nSome bold and code, a * star.\n• one\n  • two\n```rust\nlet x = 1 * 2;\n```\n2 ** 3"
                .replace("2 ** 3", "2  3")
        );
        assert!(
            rendered.starts_with(&format!("{BOLD}Title{RESET}\n")),
            "{rendered:?}"
        );
        assert!(
            rendered.contains(&format!("{BOLD}bold{RESET}")),
            "{rendered:?}"
        );
        assert!(
            rendered.contains(&format!("{CODE}code{RESET}")),
            "{rendered:?}"
        );
    }

    #[test]
    fn plain_text_passes_unchanged() {
        let text = "Hello, world.\nNo markup here: 3 - 2 = 1.\n";
        assert_eq!(whole(text), text);
        assert_eq!(by_char(text), text);
    }
}
