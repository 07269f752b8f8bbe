//! `rss fetch` at its limits: redirects (followed up to five, each re-checked), body caps,
//! network failures and timeouts, and refusals made before any request — with the state files
//! after each of them.

use crate::feed_server::{FeedServer, Reply};
use crate::fixtures::Harness;
use crate::rss_fetching::{FEED, state_of, subscribe};

#[tokio::test]
async fn redirects_are_followed_up_to_five_and_rechecked() {
    let server = FeedServer::start();
    server.serve_bytes("/final", "application/rss+xml", FEED.as_bytes().to_vec());
    for (from, to) in [("/r1", "/r2"), ("/r2", "/r3"), ("/r3", "/final")] {
        let target = to.to_string();
        server.route(from, move |_| {
            Reply::status(301).header("Location", &target)
        });
    }
    server.route("/loop", |_| Reply::status(302).header("Location", "/loop"));
    server.route("/to-file", |_| {
        Reply::status(302).header("Location", "file:///etc/passwd")
    });
    server.route("/no-location", |_| Reply::status(302));
    server.route("/always-304", |_| Reply::status(304));
    let h = Harness::lan();

    let env = h
        .run(&format!("rss fetch --url {}", server.url("/r1")))
        .await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    assert_eq!(env.result["final_url"], server.url("/final"));
    assert_eq!(env.result["url"], server.url("/r1"));

    let env = h
        .run(&format!("rss fetch --url {}", server.url("/loop")))
        .await;
    assert_eq!(env.error_code.as_deref(), Some("HttpError"));
    assert!(
        env.error_message
            .as_deref()
            .unwrap()
            .contains("more than 5 redirects")
    );
    assert_eq!(env.result["http_status"], 302);
    assert_eq!(env.result["redirects"].as_array().unwrap().len(), 5);
    assert_eq!(
        server.requests("/loop").len(),
        6,
        "the original and 5 redirects"
    );

    let env = h
        .run(&format!("rss fetch --url {}", server.url("/to-file")))
        .await;
    assert_eq!(env.error_code.as_deref(), Some("HttpError"));
    assert!(env.error_message.as_deref().unwrap().contains("file://"));
    assert!(!env.stdout.contains("root:"));

    let env = h
        .run(&format!("rss fetch --url {}", server.url("/no-location")))
        .await;
    assert_eq!(env.error_code.as_deref(), Some("HttpError"));

    // A 304 to a request that offered no cached copy is the server's mistake.
    let env = h
        .run(&format!("rss fetch --url {}", server.url("/always-304")))
        .await;
    assert_eq!(env.error_code.as_deref(), Some("HttpError"));
    assert_eq!(env.result["http_status"], 304);
    assert!(env.stderr.contains("--force"), "{}", env.stderr);
}

#[tokio::test]
async fn endless_and_oversized_bodies_stop_at_the_cap_and_store_nothing() {
    use std::io::Write;
    let server = FeedServer::start();
    server.route("/endless", |_| Reply::endless());
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(b"<rss version=\"2.0\"><channel><title>")
        .unwrap();
    gz.write_all(&vec![b'a'; 64 * 1024 * 1024]).unwrap();
    let bomb = gz.finish().unwrap();
    assert!(bomb.len() < 200_000);
    server.route("/bomb", move |_| {
        Reply::ok("application/rss+xml", bomb.clone()).header("Content-Encoding", "gzip")
    });
    server.serve_bytes("/big", "application/rss+xml", vec![b' '; 3 * 1024 * 1024]);
    let h = Harness::lan();
    for path in ["/endless", "/bomb", "/big"] {
        subscribe(&h, "huge", &server.url(path)).await;
        let env = h.run("rss fetch --name huge").await;
        assert_eq!(
            env.error_code.as_deref(),
            Some("ResponseTooLarge"),
            "{path}: {}",
            env.stderr
        );
        assert_eq!(env.exit_code, 1);
        assert_eq!(env.result["max_bytes"], 2 * 1024 * 1024);
        assert!(env.stderr.contains("--max-bytes"));
        assert!(!h.path("workspace/rss/cache/huge.json").exists(), "{path}");
        assert_eq!(state_of(&h, "huge")["last_error_code"], "ResponseTooLarge");
    }
    // A smaller cap applies too, and a larger one lets a big (valid) body through.
    server.serve_bytes("/ok", "application/rss+xml", FEED.as_bytes().to_vec());
    let env = h
        .run(&format!(
            "rss fetch --url {} --max-bytes 100",
            server.url("/ok")
        ))
        .await;
    assert_eq!(env.error_code.as_deref(), Some("ResponseTooLarge"));
    let padded = FEED.replace(
        "<channel>",
        &format!("<channel>{}", " ".repeat(3 * 1024 * 1024)),
    );
    server.serve_bytes("/padded", "application/rss+xml", padded.into_bytes());
    let env = h
        .run(&format!(
            "rss fetch --url {} --max-bytes 4194304",
            server.url("/padded")
        ))
        .await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
}

#[tokio::test]
async fn network_failures_and_timeouts() {
    let server = FeedServer::start();
    server.route("/stall", |_| Reply::stall());
    let h = Harness::lan();
    let started = std::time::Instant::now();
    let env = h
        .run(&format!(
            "rss fetch --url {} --timeout-ms 400",
            server.url("/stall")
        ))
        .await;
    assert_eq!(
        env.error_code.as_deref(),
        Some("NetworkError"),
        "{}",
        env.stderr
    );
    assert!(env.error_message.as_deref().unwrap().contains("400 ms"));
    assert!(started.elapsed() < std::time::Duration::from_secs(10));

    // A port nobody listens on.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let env = h
        .run(&format!("rss fetch --url http://127.0.0.1:{port}/feed"))
        .await;
    assert_eq!(env.error_code.as_deref(), Some("NetworkError"));
    assert!(
        env.error_message
            .as_deref()
            .unwrap()
            .contains("cannot connect"),
        "{:?}",
        env.error_message
    );
    assert!(env.result.get("http_status").is_none());

    // A name that cannot resolve (.invalid is reserved for this).
    let env = h
        .run("rss fetch --url http://feed.lurkbot-test.invalid/rss --timeout-ms 5000")
        .await;
    assert_eq!(
        env.error_code.as_deref(),
        Some("NetworkError"),
        "{}",
        env.stderr
    );
}

#[tokio::test]
async fn refusals_happen_before_any_request() {
    let server = FeedServer::start();
    server.serve_bytes("/f", "application/rss+xml", FEED.as_bytes().to_vec());
    let h = Harness::lan();
    let url = server.url("/f");
    for (command, code) in [
        (
            format!("rss fetch --url {url} --out ../escape.json"),
            "PathEscapesAgentsRoot",
        ),
        (
            format!("rss fetch --url {url} --out /tmp/abs.json"),
            "PathEscapesAgentsRoot",
        ),
        (
            format!("rss fetch --url {url} --out config.toml"),
            "PermissionDenied",
        ),
        (format!("rss fetch --url {url} --name x"), "InvalidArgs"),
        ("rss fetch".to_string(), "InvalidArgs"),
        (
            format!("rss fetch --url {url} --max-items -1"),
            "InvalidArgs",
        ),
        (
            format!("rss fetch --url {url} --timeout-ms 0"),
            "InvalidArgs",
        ),
        (
            format!("rss fetch --url {url} --max-bytes 0"),
            "InvalidArgs",
        ),
        (
            "rss fetch --url file:///etc/passwd".to_string(),
            "InvalidArgs",
        ),
        (
            "rss fetch --url ftp://example.com/f".to_string(),
            "InvalidArgs",
        ),
        ("rss fetch --name nope".to_string(), "NotFound"),
        ("rss fetch --name Bad_Name".to_string(), "InvalidArgs"),
    ] {
        let env = h.run(&command).await;
        assert_eq!(
            env.error_code.as_deref(),
            Some(code),
            "{command}: {}",
            env.stderr
        );
        assert!(!env.stderr.is_empty(), "{command}");
    }
    assert_eq!(server.all_requests(), 0);
    assert!(!h.path("../escape.json").exists());
}
