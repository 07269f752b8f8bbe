//! Splitting a reply into messages the platform accepts: at a paragraph break when one is near
//! the limit, else at a line break, else at a space, else anywhere (never inside a character).

/// `text` in pieces of at most `max_chars` characters each, none empty.
pub fn chunks(text: &str, max_chars: usize) -> Vec<String> {
    let max_chars = max_chars.max(1);
    let mut out = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        if rest.chars().count() <= max_chars {
            out.push(rest.to_string());
            break;
        }
        // The byte offset just past `max_chars` characters.
        let hard = rest
            .char_indices()
            .nth(max_chars)
            .map_or(rest.len(), |(i, _)| i);
        let window = &rest[..hard];
        // A break in the second half of the window keeps pieces from getting tiny.
        let half = window.len() / 2;
        let cut = ["\n\n", "\n", " "]
            .iter()
            .find_map(|sep| window.rfind(sep).filter(|&i| i >= half))
            .unwrap_or(hard);
        let piece = rest[..cut].trim_end();
        if !piece.is_empty() {
            out.push(piece.to_string());
        }
        rest = rest[cut..].trim_start();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_fit_and_break_where_a_reader_expects() {
        assert_eq!(chunks("short", 10), ["short"]);
        assert!(chunks("   ", 10).is_empty());
        let text = format!("{}\n\n{}", "a".repeat(30), "b".repeat(30));
        assert_eq!(chunks(&text, 40), ["a".repeat(30), "b".repeat(30)]);
        let words = "word ".repeat(100);
        for piece in chunks(&words, 42) {
            assert!(
                piece.chars().count() <= 42 && piece.ends_with("word"),
                "{piece}"
            );
        }
        // No break at all: cut at the limit, on character boundaries.
        let long = "é".repeat(25);
        let pieces = chunks(&long, 10);
        assert_eq!(pieces.len(), 3);
        assert_eq!(pieces.concat(), long);
        assert_eq!(
            chunks(&"x".repeat(8192), 4096)
                .iter()
                .map(String::len)
                .collect::<Vec<_>>(),
            [4096, 4096]
        );
    }
}
