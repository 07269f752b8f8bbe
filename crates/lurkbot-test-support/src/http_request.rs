//! One HTTP/1.1 request read off a socket, for the API servers written from platform
//! documentation (Telegram, Discord, Slack): request line, headers, a Content-Length body.

use std::io::{BufRead, BufReader, Read};
use std::net::TcpStream;

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
}
