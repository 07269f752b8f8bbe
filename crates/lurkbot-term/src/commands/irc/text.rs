//! IRC text both ways. Inbound text shown to a person or a model is cleaned (control characters,
//! IRC formatting codes and ANSI sequences removed) and capped; a pull's batch is capped with
//! head + `[...TRUNCATED...]` + tail. Outbound text is split into lines on CR/LF (so no text can
//! inject a protocol command) and into pieces that fit IRC's 512-byte line.

/// Longest text of one inbound message, in characters.
pub(crate) const MESSAGE_CAP: usize = 512;
/// Longest text of one pull, in characters, over all its messages.
pub(crate) const PULL_CAP: usize = 8000;
/// The mark where a capped batch was cut.
pub(crate) const TRUNCATED: &str = "[...TRUNCATED...]";
/// IRC's line limit in bytes, CR LF included.
const LINE_BYTES: usize = 512;
/// Room kept for the `:nick!user@host ` prefix the server adds when it relays a line.
const PREFIX_RESERVE: usize = 100;

/// `text` without control characters, IRC formatting codes or ANSI escape sequences.
pub(crate) fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            // Colour: \x03 then up to two digits, optionally ",NN".
            '\x03' => {
                for _ in 0..2 {
                    chars.next_if(char::is_ascii_digit);
                }
                if chars.peek() == Some(&',') {
                    let mut ahead = chars.clone();
                    ahead.next();
                    if ahead.peek().is_some_and(char::is_ascii_digit) {
                        chars.next();
                        for _ in 0..2 {
                            chars.next_if(char::is_ascii_digit);
                        }
                    }
                }
            }
            // Hex colour: \x04 then six hex digits (and ",RRGGBB").
            '\x04' => {
                for _ in 0..6 {
                    chars.next_if(char::is_ascii_hexdigit);
                }
            }
            // ANSI: ESC [ parameters final-byte, or ESC and one character.
            '\x1b' => {
                if chars.next_if_eq(&'[').is_some() {
                    for p in chars.by_ref() {
                        if ('@'..='~').contains(&p) {
                            break;
                        }
                    }
                } else {
                    chars.next();
                }
            }
            '\t' => out.push(' '),
            c if c.is_control() || ('\u{80}'..='\u{9f}').contains(&c) => {}
            c => out.push(c),
        }
    }
    out
}

/// `text` cleaned and cut to `cap` characters (with `…` when cut).
pub(crate) fn capped(text: &str, cap: usize) -> (String, bool) {
    let cleaned = clean(text);
    if cleaned.chars().count() <= cap {
        return (cleaned, false);
    }
    let mut cut: String = cleaned.chars().take(cap.saturating_sub(1)).collect();
    cut.push('…');
    (cut, true)
}

/// Keeps a batch within [`PULL_CAP`] characters of text: as many messages from the head and
/// from the tail as fit around a [`TRUNCATED`] marker (returned at its place as `None`).
pub(crate) fn head_and_tail<T>(items: Vec<T>, len: impl Fn(&T) -> usize) -> (Vec<Option<T>>, bool) {
    let total: usize = items.iter().map(&len).sum();
    if total <= PULL_CAP {
        return (items.into_iter().map(Some).collect(), false);
    }
    let budget = PULL_CAP - TRUNCATED.len();
    let (head_budget, tail_budget) = (budget / 2, budget - budget / 2);
    let mut head = 0;
    let mut used = 0;
    for item in &items {
        if used + len(item) > head_budget {
            break;
        }
        used += len(item);
        head += 1;
    }
    let mut tail = 0;
    let mut used = 0;
    for item in items.iter().rev() {
        if used + len(item) > tail_budget || head + tail >= items.len() {
            break;
        }
        used += len(item);
        tail += 1;
    }
    let count = items.len();
    let mut out = Vec::with_capacity(head + tail + 1);
    for (i, item) in items.into_iter().enumerate() {
        if i < head || i >= count - tail {
            out.push(Some(item));
        } else if i == head {
            out.push(None);
        }
    }
    (out, true)
}

/// The lines `text` is sent as to `target`: split at CR/LF (NUL and other controls dropped),
/// then into pieces whose `PRIVMSG target :piece` line fits 512 bytes with the relay prefix,
/// cut at a space when one is near, never inside a character.
pub(crate) fn outbound_lines(target: &str, text: &str) -> Vec<String> {
    let room = LINE_BYTES - 2 - PREFIX_RESERVE - "PRIVMSG  :".len() - target.len();
    let mut lines = Vec::new();
    for raw in text.split(['\r', '\n']) {
        let line: String = raw
            .chars()
            .filter(|c| {
                !c.is_control()
                    || *c == '\t'
                    || *c == '\x02'
                    || *c == '\x03'
                    || *c == '\x1d'
                    || *c == '\x1f'
                    || *c == '\x0f'
            })
            .collect();
        let mut rest = line.as_str();
        while rest.len() > room {
            let mut cut = room;
            while !rest.is_char_boundary(cut) {
                cut -= 1;
            }
            if let Some(space) = rest[..cut].rfind(' ').filter(|s| *s > room / 2) {
                cut = space + 1;
            }
            lines.push(rest[..cut].trim_end().to_string());
            rest = &rest[cut..];
        }
        if !rest.trim().is_empty() {
            lines.push(rest.to_string());
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatting_and_control_codes_are_removed() {
        assert_eq!(
            clean("\x02bold\x02 \x0304,12red\x03 \x1b[31mansi\x1b[0m \x1fu\x1f\r\nQUIT :x\x00"),
            "bold red ansi uQUIT :x"
        );
        assert_eq!(clean("5\x03, 6"), "5, 6");
        assert_eq!(capped(&"a".repeat(600), 512).0.chars().count(), 512);
    }

    #[test]
    fn outbound_text_cannot_inject_commands_and_fits_the_line() {
        let lines = outbound_lines("#c", "hi\r\nQUIT :bye\0\nok");
        assert_eq!(lines, ["hi", "QUIT :bye", "ok"]);
        let long = "é".repeat(600);
        let pieces = outbound_lines("#chan", &long);
        assert!(pieces.len() > 1);
        for p in &pieces {
            assert!(
                p.len() + "PRIVMSG #chan :\r\n".len() + PREFIX_RESERVE <= 512,
                "{}",
                p.len()
            );
        }
        assert_eq!(pieces.concat(), long);
    }

    #[test]
    fn batches_keep_head_and_tail() {
        let items: Vec<String> = (0..100).map(|i| format!("{i:0>200}")).collect();
        let (out, cut) = head_and_tail(items, |s| s.len());
        assert!(cut);
        let marker = out.iter().position(Option::is_none).unwrap();
        let total: usize = out.iter().flatten().map(|s| s.len()).sum();
        assert!(total + TRUNCATED.len() <= PULL_CAP);
        assert!(marker > 0 && marker < out.len() - 1);
        assert_eq!(
            out.last().unwrap().as_deref(),
            Some(format!("{:0>200}", 99).as_str())
        );
    }
}
