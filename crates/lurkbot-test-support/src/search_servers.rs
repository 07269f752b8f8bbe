//! Web search providers on loopback, written from each provider's API documentation, for the
//! `web_search` tests (none has a local server): Brave's `GET /res/v1/web/search` with
//! `X-Subscription-Token`, Tavily's `POST /search` with `Authorization: Bearer`, SearXNG's
//! `GET /search?format=json` and DuckDuckGo's `POST /html/` results page. Each refuses what the
//! real one refuses — a missing or wrong key (Brave 422 `SUBSCRIPTION_TOKEN_INVALID`, Tavily
//! 401), a missing query or a count past the limit (Brave 422, Tavily 400), JSON from a SearXNG
//! whose `search.formats` lacks it (403) — answers results built from the query (so a test sees
//! which provider answered and what it was asked), and scripts 429 (with `Retry-After`) or 503
//! on demand to prove the fallback.

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::http_request::HttpRequest;

/// Which provider a server plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Brave Search API.
    Brave,
    /// Tavily.
    Tavily,
    /// SearXNG (JSON format enabled unless [`SearchServer::refuse_json`]).
    Searxng,
    /// DuckDuckGo's HTML endpoint.
    DuckDuckGo,
}

/// A request as received.
#[derive(Debug, Clone)]
pub struct Asked {
    /// Method and target.
    pub method: String,
    /// The target with its query string.
    pub path: String,
    /// Headers.
    pub headers: Vec<(String, String)>,
    /// The body as text.
    pub body: String,
}

#[derive(Default)]
struct State {
    asked: Vec<Asked>,
    /// Answers for the next requests: (status, Retry-After).
    scripted: Vec<(u16, Option<u64>)>,
    json_refused: bool,
}

/// A running provider (its threads end with the test process).
pub struct SearchServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl SearchServer {
    /// Serves `kind`, accepting `key` (Brave and Tavily).
    pub fn start(kind: Kind, key: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        let key = key.to_string();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (shared, key) = (shared.clone(), key.clone());
                std::thread::spawn(move || {
                    let _ = serve(stream, kind, &key, &shared);
                });
            }
        });
        Self { addr, state }
    }

    /// The base URL (`http://127.0.0.1:port`), as `[tools.web.search] <kind>_url` takes it.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The next `times` requests answer `status` (with `Retry-After: retry_after`).
    pub fn fail_next(&self, times: usize, status: u16, retry_after: Option<u64>) {
        let mut state = self.state.lock().unwrap();
        for _ in 0..times {
            state.scripted.push((status, retry_after));
        }
    }

    /// SearXNG: JSON is not in `search.formats` (403 on `format=json`).
    pub fn refuse_json(&self) {
        self.state.lock().unwrap().json_refused = true;
    }

    /// Every request so far.
    pub fn asked(&self) -> Vec<Asked> {
        self.state.lock().unwrap().asked.clone()
    }
}

fn serve(
    mut stream: TcpStream,
    kind: Kind,
    key: &str,
    state: &Mutex<State>,
) -> std::io::Result<()> {
    let request = HttpRequest::read(&stream)?;
    let scripted = {
        let mut s = state.lock().unwrap();
        s.asked.push(Asked {
            method: request.method.clone(),
            path: request.path.clone(),
            headers: request.headers.clone(),
            body: String::from_utf8_lossy(&request.body).into_owned(),
        });
        if s.scripted.is_empty() {
            None
        } else {
            Some(s.scripted.remove(0))
        }
    };
    if let Some((status, retry_after)) = scripted {
        let extra = retry_after
            .map(|s| format!("Retry-After: {s}\r\n"))
            .unwrap_or_default();
        return reply(
            &mut stream,
            status,
            "application/json",
            &extra,
            "{\"error\":\"scripted\"}",
        );
    }
    let json_refused = state.lock().unwrap().json_refused;
    let (status, content_type, body) = match kind {
        Kind::Brave => brave(&request, key),
        Kind::Tavily => tavily(&request, key),
        Kind::Searxng => searxng(&request, json_refused),
        Kind::DuckDuckGo => duckduckgo(&request),
    };
    reply(&mut stream, status, content_type, "", &body)
}

fn reply(
    stream: &mut TcpStream,
    status: u16,
    content_type: &str,
    extra: &str,
    body: &str,
) -> std::io::Result<()> {
    write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn query_pairs(path: &str) -> Vec<(String, String)> {
    let query = path.split_once('?').map(|(_, q)| q).unwrap_or("");
    form_pairs(query)
}

fn form_pairs(text: &str) -> Vec<(String, String)> {
    text.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn get<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// `count` results for `query` from `provider`, each with a distinct address.
fn hits(provider: &str, query: &str, count: usize) -> Vec<(String, String, String)> {
    (1..=count)
        .map(|i| {
            (
                format!("{provider} result {i} for {query}"),
                format!("https://{provider}.example/{i}"),
                format!("What {provider} found about {query} ({i})."),
            )
        })
        .collect()
}

fn brave(request: &HttpRequest, key: &str) -> (u16, &'static str, String) {
    let invalid = |code: &str, detail: &str| {
        (
            422,
            "application/json",
            json!({"type": "ErrorResponse", "error": {"code": code, "status": 422, "detail": detail}}).to_string(),
        )
    };
    if request.method != "GET" || !request.path.starts_with("/res/v1/web/search") {
        return (404, "application/json", "{}".into());
    }
    if request.header("x-subscription-token") != Some(key) {
        return invalid(
            "SUBSCRIPTION_TOKEN_INVALID",
            "The provided subscription token is invalid.",
        );
    }
    let pairs = query_pairs(&request.path);
    let Some(q) = get(&pairs, "q").filter(|q| !q.is_empty()) else {
        return invalid(
            "VALIDATION",
            "Unable to validate request parameter(s): q is required.",
        );
    };
    let count: usize = match get(&pairs, "count").map(str::parse) {
        None => 20,
        Some(Ok(n)) if (1..=20).contains(&n) => n,
        Some(_) => return invalid("VALIDATION", "count must be between 1 and 20."),
    };
    if let Some(f) = get(&pairs, "freshness")
        && !["pd", "pw", "pm", "py"].contains(&f)
        && !f.contains("to")
    {
        return invalid("VALIDATION", "freshness is pd, pw, pm, py or a date range.");
    }
    let results: Vec<Value> = hits("brave", q, count)
        .into_iter()
        .map(|(title, url, snippet)| {
            json!({"title": title, "url": url, "description": format!("<strong>{snippet}</strong>"), "page_age": "2026-11-20T08:00:00", "age": "5 days ago"})
        })
        .collect();
    (200, "application/json", json!({"type": "search", "query": {"original": q}, "web": {"type": "search", "results": results}}).to_string())
}

fn tavily(request: &HttpRequest, key: &str) -> (u16, &'static str, String) {
    if request.method != "POST" || request.path != "/search" {
        return (404, "application/json", "{}".into());
    }
    if request.header("authorization") != Some(&format!("Bearer {key}")) {
        return (
            401,
            "application/json",
            json!({"detail": {"error": "Unauthorized: missing or invalid API key."}}).to_string(),
        );
    }
    let bad = |message: &str| {
        (
            400,
            "application/json",
            json!({"detail": {"error": message}}).to_string(),
        )
    };
    let Ok(body) = serde_json::from_slice::<Value>(&request.body) else {
        return bad("Invalid JSON body.");
    };
    let Some(q) = body
        .get("query")
        .and_then(Value::as_str)
        .filter(|q| !q.is_empty())
    else {
        return bad("Query is missing.");
    };
    let count = match body.get("max_results") {
        None => 5,
        Some(n) => match n.as_u64() {
            Some(n) if n <= 20 => usize::try_from(n).unwrap_or(5),
            _ => return bad("max_results must be between 0 and 20."),
        },
    };
    if let Some(t) = body.get("time_range").and_then(Value::as_str)
        && !["day", "week", "month", "year", "d", "w", "m", "y"].contains(&t)
    {
        return bad("Invalid time_range.");
    }
    let results: Vec<Value> = hits("tavily", q, count)
        .into_iter()
        .map(|(title, url, content)| json!({"title": title, "url": url, "content": content, "score": 0.9}))
        .collect();
    (
        200,
        "application/json",
        json!({"query": q, "results": results, "response_time": 0.4}).to_string(),
    )
}

fn searxng(request: &HttpRequest, json_refused: bool) -> (u16, &'static str, String) {
    if request.method != "GET" || !request.path.starts_with("/search") {
        return (404, "text/html", "<html>not found</html>".into());
    }
    let pairs = query_pairs(&request.path);
    let q = get(&pairs, "q").unwrap_or("");
    if get(&pairs, "format") != Some("json") {
        return (
            200,
            "text/html",
            format!("<html><body>results for {q}</body></html>"),
        );
    }
    if json_refused {
        return (
            403,
            "text/html",
            "<html><body>403 Forbidden</body></html>".into(),
        );
    }
    if q.is_empty() {
        return (400, "text/html", "<html>Bad Request</html>".into());
    }
    let results: Vec<Value> = hits("searxng", q, 8)
        .into_iter()
        .map(|(title, url, content)| json!({"title": title, "url": url, "content": content, "engine": "wikipedia", "publishedDate": null}))
        .collect();
    (
        200,
        "application/json",
        json!({"query": q, "number_of_results": 8, "results": results}).to_string(),
    )
}

fn duckduckgo(request: &HttpRequest) -> (u16, &'static str, String) {
    if request.path != "/html/" && !request.path.starts_with("/html/?") {
        return (404, "text/html", String::new());
    }
    let pairs = if request.method == "POST" {
        form_pairs(&String::from_utf8_lossy(&request.body))
    } else {
        query_pairs(&request.path)
    };
    let q = get(&pairs, "q").unwrap_or("");
    if q.is_empty() {
        return (
            200,
            "text/html",
            "<html><body><div class=\"no-results\">No results.</div></body></html>".into(),
        );
    }
    let mut page = String::from("<html><body><div class=\"results\">");
    page.push_str("<div class=\"result results_links result--ad\"><a class=\"result__a\" href=\"https://duckduckgo.com/y.js?ad_domain=shop.example\">Buy now</a><a class=\"result__snippet\">An ad.</a></div>");
    for (title, url, snippet) in hits("duckduckgo", q, 12) {
        let link = format!("//duckduckgo.com/l/?uddg={}&amp;rut=abc", encode(&url));
        page.push_str(&format!(
            "<div class=\"result results_links results_links_deep web-result\"><h2 class=\"result__title\"><a rel=\"nofollow\" class=\"result__a\" href=\"{link}\">{}</a></h2><a class=\"result__snippet\" href=\"{link}\">{}</a></div>",
            escape(&title),
            escape(&snippet)
        ));
    }
    page.push_str("</div></body></html>");
    (200, "text/html; charset=UTF-8", page)
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            b => format!("%{b:02X}"),
        })
        .collect()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
