//! Markdown as WhatsApp's own formatting (its messages read `*bold*`, `_italic_`, `~strike~`
//! and backticks).

/// Markdown as WhatsApp's formatting: `**bold**` as `*bold*`, `~~strike~~` as `~strike~`,
/// an `*italic*` that stands alone as `_italic_`; code is kept (WhatsApp reads backticks).
pub fn whatsapp_text(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut in_code = false;
    for (i, line) in markdown.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            out.push_str(line);
            continue;
        }
        if in_code {
            out.push_str(line);
            continue;
        }
        out.push_str(&inline(line));
    }
    out
}

/// One line's emphasis, outside inline code.
fn inline(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for (i, piece) in line.split('`').enumerate() {
        if i > 0 {
            out.push('`');
        }
        if i % 2 == 1 {
            out.push_str(piece);
            continue;
        }
        const BOLD: &str = "\u{1}";
        let piece = piece.replace("**", BOLD).replace("~~", "~");
        let piece = italic_as_underscores(&piece);
        out.push_str(&piece.replace(BOLD, "*"));
    }
    out
}

/// `*word*` (single asterisks around text, not a list bullet) as `_word_`.
fn italic_as_underscores(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let opens = chars[i] == '*' && chars.get(i + 1).is_some_and(|c| !c.is_whitespace());
        if opens && let Some(close) = (i + 1..chars.len()).find(|&j| chars[j] == '*') {
            out.push('_');
            out.extend(&chars[i + 1..close]);
            out.push('_');
            i = close + 1;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_becomes_whatsapps_formatting() {
        assert_eq!(
            whatsapp_text("**Done** and *soon*, ~~never~~"),
            "*Done* and _soon_, ~never~"
        );
        assert_eq!(whatsapp_text("`**x**` stays"), "`**x**` stays");
        assert_eq!(
            whatsapp_text("```\n**kept**\n```\n**b**"),
            "```\n**kept**\n```\n*b*"
        );
        assert_eq!(whatsapp_text("* a bullet"), "* a bullet");
    }
}
