//! A real HTTP/1.1 server on loopback for the feed, web_fetch and redirect tests: each path answers with a scripted
//! reply, and every request is recorded so tests can check what the client sent.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A request as received.
#[derive(Debug, Clone)]
pub struct Request {
    /// The request target (path and query).
    pub path: String,
    /// Every header, in order.
    pub headers: Vec<(String, String)>,
}

impl Request {
    /// A header's value (case-insensitive name).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// How the body is sent.
pub enum Body {
    /// Exactly these bytes, with a Content-Length.
    Bytes(Vec<u8>),
    /// Chunked, never ending (until the client hangs up).
    Endless,
    /// A first chunk, then silence for up to 30 s.
    Stall,
}

/// A scripted reply.
pub struct Reply {
    /// HTTP status code.
    pub status: u16,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// How the body is sent.
    pub body: Body,
}

impl Reply {
    /// 200 with a body and content type.
    pub fn ok(content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self::status(200)
            .header("Content-Type", content_type)
            .body(body)
    }

    /// An empty reply with this status.
    pub fn status(status: u16) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: Body::Bytes(Vec::new()),
        }
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the body.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = Body::Bytes(body.into());
        self
    }

    /// A 200 whose chunked body never ends.
    pub fn endless() -> Self {
        Self {
            status: 200,
            headers: vec![("Content-Type".into(), "application/rss+xml".into())],
            body: Body::Endless,
        }
    }

    /// A 200 that sends its headers and a little of the body, then stalls.
    pub fn stall() -> Self {
        Self {
            status: 200,
            headers: vec![("Content-Type".into(), "application/rss+xml".into())],
            body: Body::Stall,
        }
    }
}

type Handler = Arc<dyn Fn(&Request) -> Reply + Send + Sync>;

/// The server; stops when dropped.
pub struct FeedServer {
    addr: SocketAddr,
    routes: Arc<Mutex<HashMap<String, Handler>>>,
    log: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
}

impl FeedServer {
    /// Starts listening on a free loopback port.
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = Self {
            addr,
            routes: Arc::default(),
            log: Arc::default(),
            stop: Arc::default(),
        };
        let (routes, log, stop) = (
            server.routes.clone(),
            server.log.clone(),
            server.stop.clone(),
        );
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (routes, log, stop) = (routes.clone(), log.clone(), stop.clone());
                std::thread::spawn(move || serve(stream, &routes, &log, &stop));
            }
        });
        server
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Answers `path` with `handler`.
    pub fn route(&self, path: &str, handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) {
        self.routes
            .lock()
            .unwrap()
            .insert(path.into(), Arc::new(handler));
    }

    /// Answers `path` with a fixed 200 body.
    pub fn serve_bytes(&self, path: &str, content_type: &'static str, body: Vec<u8>) {
        self.route(path, move |_| Reply::ok(content_type, body.clone()));
    }

    /// The requests received for `path`.
    pub fn requests(&self, path: &str) -> Vec<Request> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.path == path)
            .cloned()
            .collect()
    }

    /// Every request received.
    pub fn all_requests(&self) -> usize {
        self.log.lock().unwrap().len()
    }
}

impl Drop for FeedServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve(
    stream: TcpStream,
    routes: &Mutex<HashMap<String, Handler>>,
    log: &Mutex<Vec<Request>>,
    stop: &AtomicBool,
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let request = Request { path, headers };
    log.lock().unwrap().push(request.clone());
    let handler = routes.lock().unwrap().get(&request.path).cloned();
    let reply = match handler {
        Some(h) => h(&request),
        None => Reply::status(404).body("no such feed"),
    };
    let _ = write_reply(stream, reply, stop);
}

fn write_reply(mut stream: TcpStream, reply: Reply, stop: &AtomicBool) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {} Scripted\r\nConnection: close\r\n",
        reply.status
    );
    for (k, v) in &reply.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    match reply.body {
        Body::Bytes(bytes) => {
            head.push_str(&format!("Content-Length: {}\r\n\r\n", bytes.len()));
            stream.write_all(head.as_bytes())?;
            stream.write_all(&bytes)?;
        }
        Body::Endless => {
            head.push_str("Transfer-Encoding: chunked\r\n\r\n");
            stream.write_all(head.as_bytes())?;
            stream.write_all(
                chunk(r#"<?xml version="1.0"?><rss version="2.0"><channel><title>endless</title>"#)
                    .as_bytes(),
            )?;
            let framed = chunk(&"<item><title>more and more</title></item>".repeat(1500));
            while !stop.load(Ordering::Relaxed) {
                stream.write_all(framed.as_bytes())?;
            }
        }
        Body::Stall => {
            head.push_str("Transfer-Encoding: chunked\r\n\r\n");
            stream.write_all(head.as_bytes())?;
            stream.write_all(chunk(r#"<?xml version="1.0"?><rss version="2.0">"#).as_bytes())?;
            stream.flush()?;
            let started = Instant::now();
            while !stop.load(Ordering::Relaxed) && started.elapsed() < Duration::from_secs(30) {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    stream.flush()
}

/// One chunk of a chunked body.
fn chunk(text: &str) -> String {
    format!("{:x}\r\n{text}\r\n", text.len())
}
