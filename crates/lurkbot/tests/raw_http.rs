//! One HTTP/1.1 request written by hand on a fresh connection, for the tests that need its
//! status and headers exactly as a gateway sends them.

use std::io::{Read, Write};
use std::net::TcpStream;

/// One HTTP/1.1 request on `addr`: (status, the head's lines lowercased, the body).
pub(crate) fn http(addr: &str, head: &str, body: &str) -> (u16, String, String) {
    let Ok(mut stream) = TcpStream::connect(addr) else {
        return (0, String::new(), String::new());
    };
    let request = format!(
        "{head}\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    if stream.write_all(request.as_bytes()).is_err() {
        return (0, String::new(), String::new());
    }
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    (status, head.to_ascii_lowercase(), body.to_string())
}
