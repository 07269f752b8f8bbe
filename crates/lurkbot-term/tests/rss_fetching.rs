//! `rss fetch` against a loopback HTTP server: conditional GET round trips, every failure code,
//! redirects, caps and timeouts — and the state files after each of them.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

use crate::feed_server::{FeedServer, Reply};
use crate::fixtures::Harness;

pub(crate) const FEED: &str = r#"<?xml version="1.0"?><rss version="2.0"><channel><title>Tiny</title><link>http://tiny/</link>
<item><title>one</title><link>http://tiny/1</link><guid>1</guid></item>
<item><title>two</title><link>http://tiny/2</link><guid>2</guid></item>
<item><title>three</title><link>http://tiny/3</link><guid>3</guid></item>
</channel></rss>"#;

pub(crate) fn read_json(h: &Harness, rel: &str) -> Value {
    serde_json::from_slice(&std::fs::read(h.path(rel)).unwrap()).unwrap()
}

pub(crate) fn state_of(h: &Harness, name: &str) -> Value {
    read_json(h, "workspace/rss/fetch_state.json")
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .cloned()
        .unwrap_or(Value::Null)
}

pub(crate) async fn subscribe(h: &Harness, name: &str, url: &str) {
    let env = h.run(&format!("rss add --name {name} --url {url}")).await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
}

#[tokio::test]
async fn etag_round_trip_answers_304_from_the_cache() {
    let server = FeedServer::start();
    server.route("/f", |req| {
        if req.header("if-none-match") == Some("\"v1\"") {
            Reply::status(304).header("ETag", "\"v1\"")
        } else {
            Reply::ok("application/rss+xml", FEED).header("ETag", "\"v1\"")
        }
    });
    let h = Harness::lan();
    subscribe(&h, "tiny", &server.url("/f")).await;

    let first = h.run("rss fetch --name tiny --max-items 2").await;
    assert_eq!(first.exit_code, 0, "{}", first.stderr);
    assert_eq!(first.result["http_status"], 200);
    assert_eq!(first.result["not_modified"], false);
    assert_eq!(first.result["name"], "tiny");
    assert_eq!(first.result["count_total"], 3);
    assert_eq!(first.result["count_emitted"], 2);
    assert_eq!(first.result["truncated"], true);
    assert!(
        first.stdout.contains("1 more items not shown"),
        "{}",
        first.stdout
    );
    assert_eq!(server.requests("/f")[0].header("if-none-match"), None);
    let state = state_of(&h, "tiny");
    assert_eq!(state["etag"], "\"v1\"");
    assert_eq!(state["last_status"], 200);
    assert!(state["last_fetch_ms"].as_u64().unwrap() > 0);
    let cache = read_json(&h, "workspace/rss/cache/tiny.json");
    assert_eq!(cache["items"].as_array().unwrap().len(), 3);

    let second = h.run("rss fetch --name tiny --max-items 2").await;
    assert_eq!(second.exit_code, 0, "{}", second.stderr);
    assert_eq!(second.result["http_status"], 304);
    assert_eq!(second.result["not_modified"], true);
    assert_eq!(second.result["items"], first.result["items"]);
    assert_eq!(second.result["count_total"], 3);
    assert!(second.stdout.contains("answered from the cache"));
    assert_eq!(
        server.requests("/f")[1].header("if-none-match"),
        Some("\"v1\"")
    );
    let state = state_of(&h, "tiny");
    assert_eq!(state["last_status"], 304);
    assert_eq!(state["etag"], "\"v1\"", "a 304 keeps the validator");

    // --force skips the validators.
    let forced = h.run("rss fetch --name tiny --force").await;
    assert_eq!(forced.result["http_status"], 200);
    assert_eq!(server.requests("/f")[2].header("if-none-match"), None);

    // Without a cache file there is nothing to revalidate: a full download.
    std::fs::remove_file(h.path("workspace/rss/cache/tiny.json")).unwrap();
    let refetched = h.run("rss fetch --name tiny").await;
    assert_eq!(refetched.result["http_status"], 200);
    assert_eq!(server.requests("/f")[3].header("if-none-match"), None);

    // A --url fetch is stateless: no validators, no state change.
    let before = std::fs::read(h.path("workspace/rss/fetch_state.json")).unwrap();
    let by_url = h
        .run(&format!("rss fetch --url {}", server.url("/f")))
        .await;
    assert_eq!(by_url.result["http_status"], 200);
    assert!(by_url.result.get("name").is_none());
    assert_eq!(server.requests("/f")[4].header("if-none-match"), None);
    assert_eq!(
        std::fs::read(h.path("workspace/rss/fetch_state.json")).unwrap(),
        before
    );
}

#[tokio::test]
async fn last_modified_round_trip() {
    const STAMP: &str = "Sat, 21 Nov 2026 08:00:00 GMT";
    let server = FeedServer::start();
    server.route("/f", |req| {
        if req.header("if-modified-since") == Some(STAMP) {
            Reply::status(304)
        } else {
            Reply::ok("application/rss+xml", FEED).header("Last-Modified", STAMP)
        }
    });
    let h = Harness::lan();
    subscribe(&h, "lm", &server.url("/f")).await;
    assert_eq!(
        h.run("rss fetch --name lm").await.result["http_status"],
        200
    );
    assert_eq!(state_of(&h, "lm")["last_modified"], STAMP);
    let again = h.run("rss fetch --name lm").await;
    assert_eq!(again.result["not_modified"], true);
    assert_eq!(again.result["count_total"], 3);
    assert_eq!(
        server.requests("/f")[1].header("if-modified-since"),
        Some(STAMP)
    );
}

#[tokio::test]
async fn changed_feeds_replace_the_cache_and_validators() {
    let server = FeedServer::start();
    let version = Arc::new(AtomicUsize::new(1));
    let v = version.clone();
    server.route("/f", move |req| {
        let current = format!("\"v{}\"", v.load(Ordering::SeqCst));
        if req.header("if-none-match") == Some(current.as_str()) {
            return Reply::status(304);
        }
        let body = if current == "\"v1\"" {
            FEED.to_string()
        } else {
            FEED.replace("<title>one</title>", "<title>uno</title>")
        };
        Reply::ok("application/rss+xml", body).header("ETag", &current)
    });
    let h = Harness::lan();
    subscribe(&h, "tiny", &server.url("/f")).await;
    h.run("rss fetch --name tiny").await;
    version.store(2, Ordering::SeqCst);
    let env = h.run("rss fetch --name tiny").await;
    assert_eq!(env.result["http_status"], 200);
    assert_eq!(env.result["items"][0]["title"], "uno");
    assert_eq!(state_of(&h, "tiny")["etag"], "\"v2\"");
    let cache = read_json(&h, "workspace/rss/cache/tiny.json");
    assert_eq!(cache["items"][0]["title"], "uno");
}

#[tokio::test]
async fn rate_limits_report_retry_after_in_both_forms() {
    let server = FeedServer::start();
    server.route("/seconds", |_| {
        Reply::status(429).header("Retry-After", "120")
    });
    server.route("/date", |_| {
        let when = chrono::Utc::now() + chrono::TimeDelta::seconds(90);
        let http_date = when.format("%a, %d %b %Y %H:%M:%S GMT").to_string();
        Reply::status(429).header("Retry-After", &http_date)
    });
    server.route("/bare", |_| Reply::status(429));
    let h = Harness::lan();
    subscribe(&h, "limited", &server.url("/seconds")).await;
    let env = h.run("rss fetch --name limited").await;
    assert_eq!(env.error_code.as_deref(), Some("RateLimited"));
    assert_eq!(env.exit_code, 1);
    assert_eq!(env.result["http_status"], 429);
    assert_eq!(env.result["retry_after_ms"], 120_000);
    assert!(env.stderr.contains("wait 120 s"), "{}", env.stderr);
    let state = state_of(&h, "limited");
    assert_eq!(state["last_status"], 429);
    assert_eq!(state["last_error_code"], "RateLimited");
    assert!(!h.path("workspace/rss/cache/limited.json").exists());

    let env = h
        .run(&format!("rss fetch --url {}", server.url("/date")))
        .await;
    assert_eq!(env.error_code.as_deref(), Some("RateLimited"));
    let ms = env.result["retry_after_ms"].as_u64().unwrap();
    assert!((80_000..=90_000).contains(&ms), "{ms}");

    let env = h
        .run(&format!("rss fetch --url {}", server.url("/bare")))
        .await;
    assert_eq!(env.error_code.as_deref(), Some("RateLimited"));
    assert!(env.result.get("retry_after_ms").is_none());
}

#[tokio::test]
async fn http_errors_keep_the_previous_good_state() {
    let server = FeedServer::start();
    let fail = Arc::new(AtomicUsize::new(0));
    let f = fail.clone();
    server.route("/f", move |_| match f.load(Ordering::SeqCst) {
        0 => Reply::ok("application/rss+xml", FEED).header("ETag", "\"good\""),
        1 => Reply::status(500).body("oops"),
        2 => Reply::status(404),
        _ => Reply::ok(
            "application/rss+xml",
            "<rss version=\"2.0\"><channel><item>",
        ),
    });
    let h = Harness::lan();
    subscribe(&h, "tiny", &server.url("/f")).await;
    assert_eq!(h.run("rss fetch --name tiny").await.exit_code, 0);
    let good_cache = std::fs::read(h.path("workspace/rss/cache/tiny.json")).unwrap();
    for (mode, code, status, hint) in [
        (1, "HttpError", 500, "retry later"),
        (2, "HttpError", 404, "gone"),
        (3, "ParseError", 200, "well-formed"),
    ] {
        fail.store(mode, Ordering::SeqCst);
        let env = h.run("rss fetch --name tiny").await;
        assert_eq!(env.error_code.as_deref(), Some(code), "{mode}");
        assert_eq!(env.exit_code, 1);
        assert_eq!(env.result["http_status"], status);
        assert!(env.stderr.contains(hint), "{}", env.stderr);
        let state = state_of(&h, "tiny");
        assert_eq!(state["last_status"], status);
        assert_eq!(state["last_error_code"], code);
        assert_eq!(state["etag"], "\"good\"", "validators survive failures");
        assert_eq!(
            std::fs::read(h.path("workspace/rss/cache/tiny.json")).unwrap(),
            good_cache
        );
    }
    // And the next success clears the error.
    fail.store(0, Ordering::SeqCst);
    assert_eq!(h.run("rss fetch --name tiny --force").await.exit_code, 0);
    assert_eq!(state_of(&h, "tiny")["last_error_code"], Value::Null);
}

#[tokio::test]
async fn out_writes_every_item_as_an_artifact() {
    let server = FeedServer::start();
    server.serve_bytes("/f", "application/rss+xml", FEED.as_bytes().to_vec());
    let h = Harness::lan();
    let env = h
        .run(&format!(
            "rss fetch --url {} --max-items 1 --out artifacts/rss/tiny.json",
            server.url("/f")
        ))
        .await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    assert_eq!(env.result["out"], "artifacts/rss/tiny.json");
    assert_eq!(env.artifacts[0].path, "artifacts/rss/tiny.json");
    assert_eq!(env.artifacts[0].mime, "application/json");
    assert_eq!(env.result["count_emitted"], 1);
    let all = read_json(&h, "artifacts/rss/tiny.json");
    assert_eq!(all.as_array().unwrap().len(), 3);
    assert_eq!(all[2]["guid"], "3");
    // The audit record lists the artifact too.
    assert_eq!(
        h.audit(&env)["artifacts"][0]["path"],
        "artifacts/rss/tiny.json"
    );
}

/// HTTPS runs through rustls: a real TLS server (`openssl s_server`) with a self-signed
/// certificate is refused during the handshake, never trusted silently.
#[tokio::test]
async fn https_verifies_certificates() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    let made = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "1", "-subj", "/CN=127.0.0.1", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl is installed by scripts/test.sh");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let server = lurkbot_test_support::tls::TlsServer::status_page(&cert, &key);
    let port = server.port;
    let h = Harness::lan();
    let env = h
        .run(&format!(
            "rss fetch --url https://127.0.0.1:{port}/ --timeout-ms 5000"
        ))
        .await;
    drop(server);
    assert_eq!(
        env.error_code.as_deref(),
        Some("NetworkError"),
        "{}",
        env.stderr
    );
    let message = env.error_message.unwrap_or_default().to_lowercase();
    assert!(message.contains("certificate"), "{message}");
}

#[tokio::test]
async fn the_network_policy_keeps_feeds_off_private_addresses() {
    let server = FeedServer::start();
    server.serve_bytes("/f", "application/rss+xml", FEED.as_bytes().to_vec());
    let port = server
        .url("/")
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    server.route("/hop", move |_| {
        Reply::status(302).header("Location", &format!("http://localhost:{port}/f"))
    });

    // Default policy: loopback is refused before any request is sent.
    let strict = Harness::builtin();
    let env = strict
        .run(&format!("rss fetch --url {}", server.url("/f")))
        .await;
    assert_eq!(
        env.error_code.as_deref(),
        Some("PermissionDenied"),
        "{}",
        env.stderr
    );
    assert_eq!(env.exit_code, 2);
    assert!(env.stderr.contains("allow_private"), "{}", env.stderr);
    assert_eq!(server.all_requests(), 0);

    // One host allowed by name and port: it is fetched; a redirect to another host is checked
    // again and refused.
    let listed = Harness::builtin();
    let host_port = server
        .url("/")
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    listed.write(
        "config.toml",
        format!("[network]\nallow_hosts = [\"{host_port}\"]\n").as_bytes(),
    );
    let env = listed
        .run(&format!("rss fetch --url {}", server.url("/f")))
        .await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    let before = server.all_requests();
    let env = listed
        .run(&format!("rss fetch --url {}", server.url("/hop")))
        .await;
    assert_eq!(
        env.error_code.as_deref(),
        Some("PermissionDenied"),
        "{}",
        env.stderr
    );
    assert_eq!(
        server.all_requests(),
        before + 1,
        "the redirect target was not requested"
    );

    // The older [tools.web_fetch] allow_private is honoured as an alias.
    let alias = Harness::builtin();
    alias.write("config.toml", b"[tools.web_fetch]\nallow_private = true\n");
    let env = alias
        .run(&format!("rss fetch --url {}", server.url("/f")))
        .await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
}
