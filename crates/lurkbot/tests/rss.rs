//! `lurkbot exec rss …` through the binary, against a one-shot loopback HTTP server.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;

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
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
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
