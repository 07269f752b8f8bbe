//! `multipart/form-data` bodies (RFC 7578) for the few uploads LurkBot makes — a voice note to
//! Telegram, Discord or a transcription server — built here in a few lines rather than through
//! reqwest's `multipart` feature, which brings a MIME-guessing table the binary does not need.

/// A form being built.
#[derive(Debug, Default)]
pub struct Form {
    parts: Vec<Part>,
}

#[derive(Debug)]
struct Part {
    name: String,
    file: Option<(String, String)>,
    bytes: Vec<u8>,
}

impl Form {
    /// An empty form.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a text field.
    #[must_use]
    pub fn text(mut self, name: &str, value: &str) -> Self {
        self.parts.push(Part {
            name: name.into(),
            file: None,
            bytes: value.as_bytes().to_vec(),
        });
        self
    }

    /// Adds a file field with its file name and media type.
    #[must_use]
    pub fn file(mut self, name: &str, file_name: &str, mime: &str, bytes: Vec<u8>) -> Self {
        self.parts.push(Part {
            name: name.into(),
            file: Some((file_name.into(), mime.into())),
            bytes,
        });
        self
    }

    /// The `Content-Type` header value and the body. The boundary is one no part contains.
    pub fn finish(self) -> (String, Vec<u8>) {
        let mut boundary = String::from("lurkbot-form-7d1f3a9c0b6e");
        let mut n = 0u32;
        while self
            .parts
            .iter()
            .any(|p| contains(&p.bytes, boundary.as_bytes()))
        {
            n += 1;
            boundary = format!("lurkbot-form-7d1f3a9c0b6e-{n}");
        }
        let mut body = Vec::new();
        for part in self.parts {
            body.extend(format!("--{boundary}\r\n").as_bytes());
            let name = quoted(&part.name);
            match &part.file {
                Some((file_name, mime)) => body.extend(
                    format!(
                        "Content-Disposition: form-data; name=\"{name}\"; filename=\"{}\"\r\n\
                         Content-Type: {}\r\n\r\n",
                        quoted(file_name),
                        mime.replace(['\r', '\n'], "")
                    )
                    .as_bytes(),
                ),
                None => body.extend(
                    format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n").as_bytes(),
                ),
            }
            body.extend(part.bytes);
            body.extend(b"\r\n");
        }
        body.extend(format!("--{boundary}--\r\n").as_bytes());
        (format!("multipart/form-data; boundary={boundary}"), body)
    }
}

/// A name in a quoted header parameter: quotes and line breaks escaped as browsers do.
fn quoted(name: &str) -> String {
    name.replace('"', "%22")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_has_its_fields_and_a_boundary_no_part_contains() {
        let (kind, body) = Form::new()
            .text("chat_id", "42")
            .file(
                "voice",
                "a\"b\r\n.ogg",
                "audio/ogg",
                b"--lurkbot-form-7d1f3a9c0b6e".to_vec(),
            )
            .finish();
        assert_eq!(
            kind,
            "multipart/form-data; boundary=lurkbot-form-7d1f3a9c0b6e-1"
        );
        let text = String::from_utf8(body).unwrap();
        assert!(text.starts_with(
            "--lurkbot-form-7d1f3a9c0b6e-1\r\nContent-Disposition: form-data; name=\"chat_id\"\r\n\r\n42\r\n"
        ));
        assert!(text.contains("filename=\"a%22b%0D%0A.ogg\"\r\nContent-Type: audio/ogg\r\n\r\n"));
        assert!(text.ends_with("\r\n--lurkbot-form-7d1f3a9c0b6e-1--\r\n"));
    }
}
