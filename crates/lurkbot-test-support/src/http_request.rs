//! One HTTP/1.1 request read off a socket, for the API servers written from platform
//! documentation (Telegram, Discord, Slack): request line, headers, a Content-Length body.

use std::io::{BufRead, BufReader, Read};
use std::net::TcpStream;

/// One part of a `multipart/form-data` body.
#[derive(Debug, Clone)]
pub(crate) struct Part {
    /// The field's name.
    pub(crate) name: String,
    /// The file name, for a file.
    pub(crate) file_name: Option<String>,
    /// The part's `Content-Type`.
    pub(crate) content_type: Option<String>,
    /// Its bytes.
    pub(crate) bytes: Vec<u8>,
}

/// A request as received.
pub(crate) struct HttpRequest {
    /// `GET`, `POST`, …
    pub(crate) method: String,
    /// The request target.
    pub(crate) path: String,
    /// Every header, in order.
    pub(crate) headers: Vec<(String, String)>,
    /// The body.
    pub(crate) body: Vec<u8>,
}

impl HttpRequest {
    /// Reads one request from `stream`.
    pub(crate) fn read(stream: &TcpStream) -> std::io::Result<Self> {
        let mut reader = BufReader::new(stream.try_clone()?);
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or_default().to_string();
        let path = parts.next().unwrap_or_default().to_string();
        let mut headers = Vec::new();
        loop {
            let mut header = String::new();
            reader.read_line(&mut header)?;
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((k, v)) = header.split_once(':') {
                headers.push((k.trim().to_string(), v.trim().to_string()));
            }
        }
        let mut request = Self {
            method,
            path,
            headers,
            body: Vec::new(),
        };
        let length = request
            .header("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        request.body = vec![0; length];
        reader.read_exact(&mut request.body)?;
        Ok(request)
    }

    /// A header's value (case-insensitive name).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// A `multipart/form-data` body's parts, in order.
    pub(crate) fn multipart(&self) -> Vec<Part> {
        let Some(boundary) = self
            .header("content-type")
            .and_then(|t| t.split_once("boundary="))
            .map(|(_, b)| format!("--{}", b.trim_matches('"')))
        else {
            return Vec::new();
        };
        let body = &self.body;
        let mut parts = Vec::new();
        let mut starts: Vec<usize> = body
            .windows(boundary.len())
            .enumerate()
            .filter(|(_, w)| *w == boundary.as_bytes())
            .map(|(i, _)| i)
            .collect();
        starts.dedup();
        for pair in starts.windows(2) {
            let part = &body[pair[0] + boundary.len()..pair[1]];
            let part = part.strip_prefix(b"\r\n").unwrap_or(part);
            let part = part.strip_suffix(b"\r\n").unwrap_or(part);
            let Some(split) = part.windows(4).position(|w| w == b"\r\n\r\n") else {
                continue;
            };
            let head = String::from_utf8_lossy(&part[..split]).into_owned();
            let param = |name: &str| {
                head.split(';')
                    .find_map(|p| p.trim().strip_prefix(&format!("{name}=\"")))
                    .and_then(|v| v.split('"').next())
                    .map(str::to_string)
            };
            let Some(name) = param("name") else { continue };
            parts.push(Part {
                name,
                file_name: param("filename"),
                content_type: head
                    .lines()
                    .find_map(|l| l.strip_prefix("Content-Type: "))
                    .map(str::to_string),
                bytes: part[split + 4..].to_vec(),
            });
        }
        parts
    }
}

/// Writes one HTTP/1.1 answer (`Connection: close`) with `body` of type `kind`.
pub(crate) fn reply(
    stream: &mut TcpStream,
    status: u16,
    kind: &str,
    body: &[u8],
) -> std::io::Result<()> {
    use std::io::Write;
    write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    stream.write_all(body)?;
    stream.flush()
}
