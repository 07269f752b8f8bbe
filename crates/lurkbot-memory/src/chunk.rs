//! Splitting a memory file into chunks of about 400 tokens (1,600 characters, the chars/4
//! estimate of ARCHITECTURE.md §5) whose last 80 tokens (320 characters) open the next chunk,
//! cut at line ends so every chunk has a line range. A line longer than a chunk is cut inside.

/// Characters of one chunk (400 tokens).
pub const CHUNK_CHARS: usize = 1_600;
/// Characters the next chunk repeats (80 tokens).
pub const OVERLAP_CHARS: usize = 320;

/// One chunk of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// First line (1-based).
    pub start_line: usize,
    /// Last line (inclusive).
    pub end_line: usize,
    /// The text.
    pub text: String,
}

/// The chunks of `text` (none for a file of blank lines only).
pub fn chunks(text: &str) -> Vec<Chunk> {
    // (line number, piece): long lines in pieces of at most CHUNK_CHARS characters.
    let mut pieces: Vec<(usize, String)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let chars: Vec<char> = line.chars().collect();
        if chars.is_empty() {
            pieces.push((i + 1, String::new()));
        }
        for part in chars.chunks(CHUNK_CHARS) {
            pieces.push((i + 1, part.iter().collect()));
        }
    }
    let mut out = Vec::new();
    let mut start = 0;
    while start < pieces.len() {
        let mut end = start;
        let mut size = 0;
        while end < pieces.len() {
            let next = pieces[end].1.chars().count() + 1;
            if end > start && size + next > CHUNK_CHARS {
                break;
            }
            size += next;
            end += 1;
        }
        let slice = &pieces[start..end];
        let text = slice
            .iter()
            .map(|(_, p)| p.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        if !text.trim().is_empty() {
            out.push(Chunk {
                start_line: slice[0].0,
                end_line: slice[slice.len() - 1].0,
                text,
            });
        }
        if end >= pieces.len() {
            break;
        }
        // The next chunk starts with the pieces that make up the last OVERLAP_CHARS, but
        // always moves forward.
        let mut back = end;
        let mut kept = 0;
        while back > start + 1 {
            let size = pieces[back - 1].1.chars().count() + 1;
            if kept + size > OVERLAP_CHARS {
                break;
            }
            kept += size;
            back -= 1;
        }
        start = back;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_overlap_and_keep_line_ranges() {
        let text: String = (1..=200)
            .map(|i| format!("line {i:03} {}\n", "x".repeat(30)))
            .collect();
        let all = chunks(&text);
        assert!(all.len() > 3);
        assert_eq!(all[0].start_line, 1);
        assert_eq!(all.last().map(|c| c.end_line), Some(200));
        for pair in all.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            assert!(a.text.chars().count() <= CHUNK_CHARS);
            // About 80 tokens are repeated: the next chunk starts inside the previous one.
            assert!(b.start_line > a.start_line && b.start_line <= a.end_line);
            // Each line is 39 characters and its newline.
            let repeated: usize = (b.start_line..=a.end_line).map(|_| 40).sum();
            assert!(
                repeated <= OVERLAP_CHARS && repeated > OVERLAP_CHARS / 2,
                "{repeated}"
            );
        }
    }

    #[test]
    fn long_lines_and_blank_files() {
        assert!(chunks("\n\n  \n").is_empty());
        let long = "y".repeat(CHUNK_CHARS * 2 + 10);
        let all = chunks(&format!("title\n{long}\n"));
        assert!(all.iter().all(|c| c.text.chars().count() <= CHUNK_CHARS));
        assert!(all.iter().all(|c| c.end_line <= 2));
        assert_eq!(all[0].text.lines().next(), Some("title"));
    }
}
