//! A server-sent events decoder (the WHATWG event-stream format both wire formats stream in):
//! bytes in, `(event, data)` pairs out. Lines end with LF, CRLF or CR; `data:` lines of one event
//! join with LF; comments (`:`) and unknown fields are ignored. Written here rather than pulled in
//! as a crate because the format is a dozen rules and every crate for it brings a parser stack.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field (empty when absent).
    pub event: String,
    /// The joined `data:` lines.
    pub data: String,
}

/// Incremental decoder.
#[derive(Debug, Default)]
pub struct SseDecoder {
    pending: Vec<u8>,
    event: String,
    data: Vec<String>,
    skip_lf: bool,
}

impl SseDecoder {
    /// Feeds bytes; returns the events completed by them.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        for &b in bytes {
            if self.skip_lf {
                self.skip_lf = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' | b'\r' => {
                    self.skip_lf = b == b'\r';
                    let line = String::from_utf8_lossy(&self.pending).into_owned();
                    self.pending.clear();
                    if let Some(event) = self.line(&line) {
                        out.push(event);
                    }
                }
                _ => self.pending.push(b),
            }
        }
        out
    }

    /// Ends the stream: an event not closed by a blank line is dispatched too.
    pub fn finish(&mut self) -> Option<SseEvent> {
        if !self.pending.is_empty() {
            let line = String::from_utf8_lossy(&self.pending).into_owned();
            self.pending.clear();
            if let Some(event) = self.line(&line) {
                return Some(event);
            }
        }
        self.line("")
    }

    fn line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            if self.data.is_empty() {
                self.event.clear();
                return None;
            }
            let event = SseEvent {
                event: std::mem::take(&mut self.event),
                data: std::mem::take(&mut self.data).join("\n"),
            };
            return Some(event);
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = value.to_string(),
            "data" => self.data.push(value.to_string()),
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_across_chunks_and_line_endings() {
        let mut d = SseDecoder::default();
        let mut got = d.push(b"event: message_start\r\ndata: {\"a\":");
        assert!(got.is_empty());
        got.extend(d.push(b"1}\r\n\r\n: keep-alive\n\ndata: x\ndata: y\n\rdata:[DONE]"));
        got.extend(d.finish());
        assert_eq!(
            got,
            vec![
                SseEvent {
                    event: "message_start".into(),
                    data: "{\"a\":1}".into()
                },
                SseEvent {
                    event: String::new(),
                    data: "x\ny".into()
                },
                SseEvent {
                    event: String::new(),
                    data: "[DONE]".into()
                },
            ]
        );
    }
}
