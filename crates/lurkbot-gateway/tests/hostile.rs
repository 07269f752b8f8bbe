//! The gateway under a hostile web page and hostile load (ARCHITECTURE.md §6): DNS rebinding, body
//! before credentials, lockout by credential-less requests, connection caps, slow headers,
//! oversized pre-connect frames, framing of the UI.

use std::time::Duration;

use futures_util::SinkExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;

use crate::common::{Client, Gateway, TOKEN};

/// Sends raw bytes and reads the answer until the server closes (or `limit` passes).
async fn raw(gw: &Gateway, request: &str, limit: Duration) -> String {
    let mut s = TcpStream::connect(gw.addr).await.unwrap();
    s.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(limit, s.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

fn http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

fn status(answer: &str) -> u16 {
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebinding_page_is_refused_even_without_auth() {
    let gw = Gateway::start_with("[gateway]\nauth = \"none\"\n", vec![], None, None).await;
    let port = gw.addr.port();
    let evil_host = format!("evil.example:{port}");
    let evil_origin = format!("http://evil.example:{port}");
    // WebSocket upgrade with a rebound Host and a matching Origin: refused.
    let refused = Client::open_with(&gw, &[("host", &evil_host), ("origin", &evil_origin)]).await;
    assert_eq!(refused.err(), Some(403));
    // The same for plain HTTP, with or without an Origin.
    for extra in ["", &format!("Origin: {evil_origin}\r\n")] {
        let answer = raw(
            &gw,
            &format!(
                "GET /v1/models HTTP/1.1\r\nHost: {evil_host}\r\n{extra}Connection: close\r\n\r\n"
            ),
            Duration::from_secs(10),
        )
        .await;
        assert_eq!(status(&answer), 403, "{answer}");
        assert!(answer.contains("allowed_hosts"), "{answer}");
    }
    // A foreign Origin is refused even when the Host is right.
    let own_host = format!("127.0.0.1:{port}");
    let refused = Client::open_with(&gw, &[("origin", &evil_origin)]).await;
    assert_eq!(refused.err(), Some(403));
    // The gateway's own names still work.
    for host in [own_host.as_str(), &format!("localhost:{port}")] {
        let answer = raw(
            &gw,
            &format!("GET /health HTTP/1.1\r\nHost: {host}\r\nOrigin: http://{host}\r\nConnection: close\r\n\r\n"),
            Duration::from_secs(10),
        )
        .await;
        assert_eq!(status(&answer), 200, "{host}: {answer}");
    }
    assert!(
        Client::open_with(&gw, &[("origin", &format!("http://{own_host}"))])
            .await
            .is_ok()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_hosts_admit_a_name() {
    let gw = Gateway::start("[gateway]\nallowed_hosts = [\"lurk.lan\"]\n", vec![]).await;
    let port = gw.addr.port();
    let answer = raw(
        &gw,
        &format!("GET /health HTTP/1.1\r\nHost: lurk.lan:{port}\r\nOrigin: http://lurk.lan:{port}\r\nConnection: close\r\n\r\n"),
        Duration::from_secs(10),
    )
    .await;
    assert_eq!(status(&answer), 200, "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_are_checked_before_the_body_is_read() {
    let gw = Gateway::start("", vec![]).await;
    let host = gw.addr.to_string();
    for path in ["/v1/chat/completions", "/hooks/agent"] {
        // Announces 100 MB and sends none of it: the answer must come at once, not after a
        // body that never arrives.
        let answer = raw(
            &gw,
            &format!("POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n"),
            Duration::from_secs(30),
        )
        .await;
        assert_eq!(status(&answer), 401, "{path}: {answer}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_over_the_cap_are_refused_after_the_token_check() {
    let gw = Gateway::start("", vec![]).await;
    // Each route's own cap: 28 MiB for chat completions (room for a picture as a data: URL),
    // 2 MiB elsewhere.
    // The client sends a little more than the cap — of a body it says is a MiB larger — and
    // then reads: the gateway answers 413 as soon as it has read past the cap (a client still
    // writing the rest would race the gateway's close of the connection).
    for (path, cap_mib) in [("/v1/chat/completions", 28), ("/hooks/agent", 2)] {
        let token = if path.starts_with("/hooks") {
            crate::common::HOOKS_TOKEN
        } else {
            TOKEN
        };
        let sent = cap_mib * 1024 * 1024 + 16 * 1024;
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            gw.addr,
            sent + 1024 * 1024
        );
        let mut s = TcpStream::connect(gw.addr).await.unwrap();
        s.write_all(head.as_bytes()).await.unwrap();
        // The gateway may answer (and close) before it has read all of it.
        let _ = s.write_all(&vec![b'x'; sent]).await;
        let mut answer = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(30), s.read_to_end(&mut answer)).await;
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 413"), "{path}: {answer}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_credentials_lock_nobody_out() {
    let gw = Gateway::start("", vec![]).await;
    let http = http();
    // What a cross-site <img> sends, many times over.
    for _ in 0..lurkbot_gateway::MAX_FAILURES * 3 {
        let r = http.get(gw.url("/v1/models")).send().await.unwrap();
        assert_eq!(r.status(), 401);
    }
    let r = http
        .get(gw.url("/v1/models"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "the right token still works");
    // Wrong ones do count.
    for _ in 0..lurkbot_gateway::MAX_FAILURES {
        let r = http
            .get(gw.url("/v1/models"))
            .bearer_auth("wrong-token")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401);
    }
    let r = http
        .get(gw.url("/v1/models"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 429);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_cap_are_closed() {
    let gw = Gateway::start("[gateway]\nmax_connections = 3\n", vec![]).await;
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut s = TcpStream::connect(gw.addr).await.unwrap();
        // A complete request keeps the connection in the server's hands (keep-alive).
        s.write_all(format!("GET /health HTTP/1.1\r\nHost: {}\r\n\r\n", gw.addr).as_bytes())
            .await
            .unwrap();
        let mut buf = [0u8; 512];
        let n = s.read(&mut buf).await.unwrap();
        assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
        held.push(s);
    }
    let answer = raw(
        &gw,
        &format!("GET /health HTTP/1.1\r\nHost: {}\r\n\r\n", gw.addr),
        Duration::from_secs(10),
    )
    .await;
    assert_eq!(
        answer, "",
        "the fourth connection is closed without an answer"
    );
    // Close the held connections and wait for the server to close its side (the event that
    // ends each exchange); the slots come back with them.
    for mut s in held {
        s.shutdown().await.unwrap();
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest).await;
    }
    // The slot is released as the server's task ends, a moment after the socket closes: retry
    // until a deadline that only a broken build reaches.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let answer = raw(
            &gw,
            &format!(
                "GET /health HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
                gw.addr
            ),
            Duration::from_secs(10),
        )
        .await;
        if status(&answer) == 200 {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "no slot was freed");
        tokio::task::yield_now().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_sent_headers_are_cut_off() {
    let gw = Gateway::start("", vec![]).await;
    let mut s = TcpStream::connect(gw.addr).await.unwrap();
    s.write_all(b"GET /health HTTP/1.1\r\nHost: x")
        .await
        .unwrap();
    let mut out = Vec::new();
    // The server closes after HEADER_TIMEOUT (10 s); the bound only keeps a broken build from
    // hanging the suite.
    let closed =
        tokio::time::timeout(lurkbot_gateway::HEADER_TIMEOUT * 6, s.read_to_end(&mut out)).await;
    assert!(closed.is_ok(), "the connection was closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_frame_before_connect_is_refused() {
    let gw = Gateway::start("", vec![]).await;
    let mut c = Client::open(&gw).await;
    c.recv().await.unwrap();
    let padding = "x".repeat(lurkbot_gateway::PRE_CONNECT_MAX + 1);
    let frame = format!(
        "{{\"type\":\"req\",\"id\":\"1\",\"method\":\"connect\",\"params\":{{\"pad\":\"{padding}\"}}}}"
    );
    c.ws.send(Message::text(frame)).await.unwrap();
    let res = c.recv().await.unwrap();
    assert_eq!(res["error"]["code"], "INVALID_REQUEST", "{res}");
    assert!(c.recv().await.is_none(), "closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ui_cannot_be_framed() {
    let gw = Gateway::start("", vec![]).await;
    let r = http().get(gw.url("/")).send().await.unwrap();
    let csp = r.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert_eq!(r.headers()["x-frame-options"], "DENY");
}

/// Wrong tokens from one client behind a trusted proxy lock that client out, not the others
/// the proxy carries; a header from anyone not listed in `trusted_proxies` is not believed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_trusted_proxy_each_client_has_its_own_failed_attempt_limit() {
    let models = |gw: &Gateway, token: &str, client: Option<&str>| {
        let mut request = http()
            .get(gw.url("/v1/models"))
            .header("authorization", format!("Bearer {token}"));
        if let Some(client) = client {
            request = request.header("x-forwarded-for", client);
        }
        request.send()
    };
    let proxied = Gateway::start("[gateway]\ntrusted_proxies = [\"127.0.0.1\"]\n", vec![]).await;
    let plain = Gateway::start("", vec![]).await;
    for gw in [&proxied, &plain] {
        for _ in 0..lurkbot_gateway::MAX_FAILURES {
            let wrong = models(gw, "wrong-token", Some("198.51.100.1"))
                .await
                .unwrap();
            assert_eq!(wrong.status(), 401);
        }
        let locked = models(gw, TOKEN, Some("198.51.100.1")).await.unwrap();
        assert_eq!(locked.status(), 429, "the guessing client is locked out");
    }
    let other = models(&proxied, TOKEN, Some("198.51.100.2")).await.unwrap();
    assert_eq!(other.status(), 200, "another client of the proxy is not");
    let spoofed = models(&plain, TOKEN, Some("198.51.100.2")).await.unwrap();
    assert_eq!(
        spoofed.status(),
        429,
        "without trusted_proxies the header is the client's own words"
    );
}
