//! Highlighting of fenced code in the web UI's chat: comments, strings, numbers and keywords,
//! each a `<span>` of one of four classes, everything else escaped text. One small lexer serves
//! the languages models write most (C-like, Rust, Go, JavaScript/TypeScript, Python, shell,
//! TOML/YAML, SQL, JSON); an unknown language gets the same treatment without keywords.
//!
//! Why not a highlighting crate: `syntect` carries the Sublime grammars (megabytes) and
//! tree-sitter one parser per language; the chat needs colour for reading, not a parse. Every
//! character of the code is escaped here; the only markup is the spans of the four classes
//! `hl-k` (keyword), `hl-s` (string), `hl-c` (comment) and `hl-n` (number).

const KEYWORDS: &[&str] = &[
    "as",
    "async",
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "def",
    "default",
    "del",
    "do",
    "elif",
    "else",
    "enum",
    "except",
    "export",
    "extends",
    "false",
    "False",
    "finally",
    "fn",
    "for",
    "from",
    "func",
    "function",
    "if",
    "impl",
    "import",
    "in",
    "interface",
    "is",
    "let",
    "loop",
    "match",
    "mod",
    "mut",
    "new",
    "nil",
    "None",
    "not",
    "null",
    "or",
    "and",
    "package",
    "pass",
    "pub",
    "raise",
    "return",
    "self",
    "static",
    "struct",
    "super",
    "switch",
    "then",
    "this",
    "throw",
    "trait",
    "true",
    "True",
    "try",
    "type",
    "typeof",
    "undefined",
    "use",
    "var",
    "void",
    "where",
    "while",
    "with",
    "yield",
    "fi",
    "done",
    "esac",
    "echo",
    "local",
    "select",
    "insert",
    "update",
    "delete",
    "into",
    "values",
    "join",
    "on",
    "group",
    "by",
    "order",
    "limit",
    "create",
    "table",
    "SELECT",
    "INSERT",
    "UPDATE",
    "DELETE",
    "FROM",
    "WHERE",
    "INTO",
    "VALUES",
    "JOIN",
    "ON",
    "GROUP",
    "BY",
    "ORDER",
    "LIMIT",
    "CREATE",
    "TABLE",
    "AND",
    "OR",
    "NOT",
    "NULL",
];

/// How a language writes a line comment.
fn line_comment(lang: &str) -> &'static [&'static str] {
    match lang.to_ascii_lowercase().as_str() {
        "python" | "py" | "sh" | "bash" | "shell" | "zsh" | "console" | "toml" | "yaml" | "yml"
        | "ruby" | "rb" | "perl" | "r" | "dockerfile" | "make" | "makefile" | "ini" | "conf" => {
            &["#"]
        }
        "sql" | "lua" | "haskell" | "hs" => &["--"],
        "json" | "text" | "txt" | "plain" | "csv" | "markdown" | "md" => &[],
        _ => &["//"],
    }
}

/// Whether the language has `/* … */` comments.
fn block_comments(lang: &str) -> bool {
    line_comment(lang).contains(&"//") || lang.eq_ignore_ascii_case("sql")
}

/// Appends `code` of language `lang` to `out` as escaped, highlighted HTML.
pub(crate) fn push(out: &mut String, lang: &str, code: &str) {
    let comments = line_comment(lang);
    let blocks = block_comments(lang);
    let plain = matches!(
        lang.to_ascii_lowercase().as_str(),
        "text" | "txt" | "plain" | "markdown" | "md" | "csv"
    );
    let mut rest = code;
    while let Some(c) = rest.chars().next() {
        if plain {
            escape(out, rest);
            return;
        }
        let token = if comments.iter().any(|p| rest.starts_with(*p)) {
            Some(("hl-c", rest.find('\n').unwrap_or(rest.len())))
        } else if blocks && rest.starts_with("/*") {
            Some(("hl-c", rest[2..].find("*/").map_or(rest.len(), |e| e + 4)))
        } else if matches!(c, '"' | '\'' | '`') {
            Some(("hl-s", string_end(rest, c)))
        } else if c.is_ascii_digit() {
            let end = rest
                .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '.' || ch == '_'))
                .unwrap_or(rest.len());
            Some(("hl-n", end))
        } else if c.is_alphabetic() || c == '_' {
            let end = rest
                .find(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
                .unwrap_or(rest.len());
            if KEYWORDS.contains(&&rest[..end]) {
                Some(("hl-k", end))
            } else {
                escape(out, &rest[..end]);
                rest = &rest[end..];
                continue;
            }
        } else {
            None
        };
        match token {
            Some((class, end)) => {
                out.push_str("<span class=\"");
                out.push_str(class);
                out.push_str("\">");
                escape(out, &rest[..end]);
                out.push_str("</span>");
                rest = &rest[end..];
            }
            None => {
                let len = c.len_utf8();
                escape(out, &rest[..len]);
                rest = &rest[len..];
            }
        }
    }
}

/// Where a string opened by `quote` at the start of `s` ends (after its closing quote, or at
/// the end of the line for an unclosed one; backticks may span lines).
fn string_end(s: &str, quote: char) -> usize {
    let mut escaped = false;
    for (i, c) in s.char_indices().skip(1) {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == quote {
            return i + c.len_utf8();
        } else if c == '\n' && quote != '`' {
            return i;
        }
    }
    s.len()
}

/// Appends `text` with `<`, `>`, `&` and quotes escaped.
fn escape(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::push;

    fn html(lang: &str, code: &str) -> String {
        let mut out = String::new();
        push(&mut out, lang, code);
        out
    }

    #[test]
    fn keywords_strings_comments_and_numbers_are_classed_and_text_escaped() {
        assert_eq!(
            html("js", "if (a < 2) return \"<b>\"; // ok"),
            "<span class=\"hl-k\">if</span> (a &lt; <span class=\"hl-n\">2</span>) <span class=\"hl-k\">return</span> <span class=\"hl-s\">&quot;&lt;b&gt;&quot;</span>; <span class=\"hl-c\">// ok</span>"
        );
        assert_eq!(
            html("sh", "echo 'a # b' # c"),
            "<span class=\"hl-k\">echo</span> <span class=\"hl-s\">&#39;a # b&#39;</span> <span class=\"hl-c\"># c</span>"
        );
        assert_eq!(html("text", "if x"), "if x");
        assert_eq!(
            html("", "a /* x\ny */ b"),
            "a <span class=\"hl-c\">/* x\ny */</span> b"
        );
    }

    #[test]
    fn an_unclosed_string_ends_at_its_line() {
        assert_eq!(
            html("py", "s = \"abc\nx"),
            "s = <span class=\"hl-s\">&quot;abc</span>\nx"
        );
    }
}
