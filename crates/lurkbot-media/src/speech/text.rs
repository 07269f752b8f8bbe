//! Text made ready to speak: cut at a sentence end when it is too long, and split into pieces
//! each provider accepts in one request.

/// The longest piece sent in one request (OpenAI's limit is 4,096 characters; shorter pieces
/// also keep one slow request from holding the whole answer).
pub(super) const PIECE_CHARS: usize = 1_000;

/// `text` cut to at most `max_chars` characters, at the last sentence end before the limit
/// (else the last space), and whether it was cut.
pub(super) fn capped(text: &str, max_chars: usize) -> (&str, bool) {
    let text = text.trim();
    let Some((limit, _)) = text.char_indices().nth(max_chars) else {
        return (text, false);
    };
    let head = &text[..limit];
    let cut = last_sentence_end(head)
        .or_else(|| head.rfind(char::is_whitespace))
        .unwrap_or(limit);
    (head[..cut].trim_end(), true)
}

/// `text` in pieces of at most `max_chars` characters, split after sentence ends where it can
/// be, else at spaces, else anywhere.
pub(super) fn pieces(text: &str, max_chars: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let (piece, cut) = capped(rest, max_chars);
        let piece = if piece.is_empty() {
            // One word longer than a piece: split inside it.
            let end = rest
                .char_indices()
                .nth(max_chars)
                .map_or(rest.len(), |(i, _)| i);
            &rest[..end]
        } else {
            piece
        };
        out.push(piece);
        if !cut {
            break;
        }
        rest = rest[piece.len()..].trim_start();
    }
    out
}

/// The byte offset just after the last `.`, `!`, `?` (or their CJK forms) followed by
/// whitespace or the end, or a line break.
fn last_sentence_end(text: &str) -> Option<usize> {
    let mut best = None;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let ends = matches!(c, '.' | '!' | '?' | '…')
            && chars.peek().is_none_or(|(_, n)| n.is_whitespace())
            || matches!(c, '。' | '！' | '？' | '\n');
        if ends {
            best = Some(i + c.len_utf8());
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_is_cut_at_a_sentence_end() {
        assert_eq!(capped("Short.", 100), ("Short.", false));
        assert_eq!(capped("One two. Three four five.", 15), ("One two.", true));
        assert_eq!(capped("no sentence ends here", 12), ("no sentence", true));
        assert_eq!(
            capped("v1.2 is out", 6),
            ("v1.2", true),
            "a dot inside a word is no end"
        );
        assert_eq!(capped("你好。再见。", 4), ("你好。", true));
    }

    #[test]
    fn pieces_cover_the_text_in_order() {
        let text = "First sentence. Second one! A third? Yes.";
        let pieces = pieces(text, 20);
        assert_eq!(pieces, ["First sentence.", "Second one! A third?", "Yes."]);
        assert_eq!(super::pieces("abcdefghij", 4), ["abcd", "efgh", "ij"]);
    }
}
