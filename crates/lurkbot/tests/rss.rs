//! `lurkbot exec rss …` through the binary, against a one-shot loopback HTTP server.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;

use lurkbot_test_support::tls::{TlsServer, issue};

use crate::util::Test;

/// Serves `body` as an RSS feed to the next `count` requests; returns the feed URL.
fn serve(body: &'static str, count: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/feed.xml", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().take(count) {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap() > 2 {
                line.clear();
            }
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/rss+xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

const FEED: &str = "<rss version=\"2.0\"><channel><title>CLI feed</title><item><title>Hello from the feed</title><link>http://x/1</link><pubDate>Sat, 21 Nov 2026 08:00:00 GMT</pubDate></item></channel></rss>";

#[test]
fn subscribe_and_fetch_through_the_binary() {
    let t = Test::init();
    // The feed is served on loopback, which the network policy refuses by default.
    let out = t.run(&["config", "set", "network.allow_private", "true"]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let url = serve(FEED, 2);
    let out = t.run(&["exec", &format!("rss add --name cli-feed --url {url}")]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let out = t.run(&["exec", "rss fetch --name cli-feed"]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert!(out.stdout.contains("Hello from the feed"), "{}", out.stdout);
    assert!(out.stdout.contains("untrusted") || out.stdout.contains("third-party"));
    let out = t.run(&[
        "exec",
        "--json",
        &format!("rss fetch --url {url} --max-items 0"),
    ]);
    let env = out.json();
    assert_eq!(env["result"]["count_total"], 1);
    assert_eq!(env["result"]["count_emitted"], 0);
    assert!(t.path("skills/rss-cli/SKILL.md").is_file());
}

#[test]
fn failures_exit_with_the_documented_status() {
    let t = Test::init();
    let out = t.run(&["exec", "rss fetch --url file:///etc/passwd"]);
    assert_eq!(out.status, 2);
    assert!(out.stderr.contains("http"), "{}", out.stderr);
    let out = t.run(&["exec", "rss remove --name nobody"]);
    assert_eq!(out.status, 1);
    let port = lurkbot_test_support::ports::free_port();
    // Loopback is refused by the network policy (exit 2, the setting named) before any request.
    let out = t.run(&["exec", &format!("rss fetch --url http://127.0.0.1:{port}/")]);
    assert_eq!(out.status, 2);
    assert!(out.stderr.contains("allow_private"), "{}", out.stderr);
    let out = t.run(&["config", "set", "network.allow_private", "true"]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let out = t.run(&[
        "exec",
        "--json",
        &format!("rss fetch --url http://127.0.0.1:{port}/"),
    ]);
    assert_eq!(out.status, 1);
    assert_eq!(out.json()["error_code"], "NetworkError");
}

/// HTTPS that verifies: a real TLS server (`openssl s_server -WWW`) with a certificate issued
/// by a test CA is fetched when that CA is the trust store (`SSL_CERT_FILE`, in the spawned
/// process), refused with `NetworkError` naming the certificate when it is not, and refused
/// with a `NetworkError` that says what to install when no CA certificate can be loaded.
#[test]
fn https_feeds_are_fetched_when_the_certificate_chains_to_a_trusted_root() {
    let t = Test::init();
    let out = t.run(&["config", "set", "network.allow_private", "true"]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pki = issue(d, "LurkBot test CA");
    // A second CA that signed nothing: a trust store that does not know the server's issuer.
    std::fs::create_dir(d.join("other")).unwrap();
    let other = issue(&d.join("other"), "Another CA");
    std::fs::create_dir(d.join("www")).unwrap();
    std::fs::write(d.join("www/feed.xml"), FEED).unwrap();
    std::fs::create_dir(d.join("no-certs")).unwrap();
    let server = TlsServer::serve_dir(&pki.cert, &pki.key, &d.join("www"));
    let port = server.port;
    let fetch = format!("rss fetch --url https://127.0.0.1:{port}/feed.xml");
    let no_dir = d.join("no-certs").display().to_string();
    // `rss fetch` in a process whose trust store is the bundle `ca_file` alone.
    let fetch_trusting = |ca_file: &Path| {
        let ca_file = ca_file.display().to_string();
        let out = t.run_env(
            &["exec", "--json", &fetch],
            &[("SSL_CERT_FILE", &ca_file), ("SSL_CERT_DIR", &no_dir)],
        );
        (out.status, out.json())
    };
    let (status, envelope) = fetch_trusting(&pki.ca);
    assert_eq!(status, 0, "{envelope}");
    assert!(
        envelope["stdout"]
            .as_str()
            .unwrap_or_default()
            .contains("Hello from the feed"),
        "{envelope}"
    );
    // The same server with a trust store that does not hold its CA: refused.
    let (status, envelope) = fetch_trusting(&other.ca);
    assert_eq!(status, 1, "{envelope}");
    assert_eq!(envelope["error_code"], "NetworkError", "{envelope}");
    assert!(
        envelope["error_message"]
            .as_str()
            .unwrap_or_default()
            .to_lowercase()
            .contains("certificate"),
        "{envelope}"
    );
    // No CA certificate at all (an empty bundle, an empty folder): a clear NetworkError that
    // says what to install, not an internal "builder error".
    std::fs::write(d.join("empty.pem"), "").unwrap();
    let (status, envelope) = fetch_trusting(&d.join("empty.pem"));
    assert_eq!(status, 1, "{envelope}");
    assert_eq!(envelope["error_code"], "NetworkError", "{envelope}");
    let stderr = envelope["stderr"].as_str().unwrap_or_default().to_string();
    assert!(
        stderr.contains("No CA certificates") && stderr.contains("SSL_CERT_FILE"),
        "{stderr}"
    );
}
