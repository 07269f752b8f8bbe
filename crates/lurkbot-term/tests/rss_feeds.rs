//! `rss fetch` over a corpus of real-world feed shapes served by a loopback HTTP server: every
//! format normalizes to the same item model, encodings are honoured, and hostile XML is never
//! expanded.

use serde_json::{Value, json};

use crate::feed_server::{FeedServer, Reply};
use crate::fixtures::Harness;

fn corpus(file: &str) -> Vec<u8> {
    std::fs::read(format!("{}/tests/feeds/{file}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// Serves `file` and fetches it with `--out`, returning the result and every item.
async fn fetch_file(file: &str, content_type: &'static str) -> (Value, Vec<Value>) {
    let server = FeedServer::start();
    server.serve_bytes("/feed", content_type, corpus(file));
    let h = Harness::lan();
    let env = h
        .run(&format!(
            "rss fetch --url {} --out artifacts/rss/items.json",
            server.url("/feed")
        ))
        .await;
    assert_eq!(env.exit_code, 0, "{file}: {}", env.stderr);
    let items: Vec<Value> =
        serde_json::from_slice(&std::fs::read(h.path("artifacts/rss/items.json")).unwrap())
            .unwrap();
    (serde_json::to_value(&env.result).unwrap(), items)
}

#[tokio::test]
async fn rss2_with_content_encoded() {
    let (result, items) = fetch_file("rss2_content_encoded.xml", "application/rss+xml").await;
    assert_eq!(result["format"], "rss2.0");
    assert_eq!(result["feed_title"], "The Example Post & Politics");
    assert_eq!(result["feed_link"], "https://news.example.com/politics/");
    assert_eq!(result["count_total"], 2);
    assert_eq!(result["untrusted"], true);
    assert_eq!(
        items[0],
        json!({
            "title": "Senate passes the budget",
            "link": "https://news.example.com/politics/2026/11/21/senate-budget/",
            "guid": "post-10021",
            "author": "Jane Reporter",
            "published_at": "2026-11-21T07:45:00Z",
            "summary": "<p>The vote was <b>51-49</b>.</p>",
            "content": "<p>The vote was <b>51-49</b> after a long night.</p><p>Full story follows.</p>",
        })
    );
    // RFC 822 with a named zone; `author` in "mail (Name)" form gives the name.
    assert_eq!(items[1]["published_at"], "2026-11-20T23:30:00Z");
    assert_eq!(items[1]["author"], "Politics Desk");
    assert_eq!(
        items[1]["summary"],
        "Governors from 20 states met <em>today</em>."
    );
    assert!(items[1].get("content").is_none());
    // The brief form in `result.items` is title, time and link only.
    assert_eq!(
        result["items"][0],
        json!({
            "title": "Senate passes the budget",
            "published_at": "2026-11-21T07:45:00Z",
            "link": "https://news.example.com/politics/2026/11/21/senate-budget/",
        })
    );
}

#[tokio::test]
async fn atom_with_xhtml_content_and_relative_links() {
    let (result, items) = fetch_file("atom_xhtml.xml", "application/atom+xml").await;
    assert_eq!(result["format"], "atom");
    assert_eq!(result["feed_title"], "Example Engineering Blog");
    assert_eq!(result["feed_link"], "https://eng.example.org/");
    let first = &items[0];
    assert_eq!(first["title"], "Shipping <code>v2</code>");
    assert_eq!(first["link"], "https://eng.example.org/2026/11/shipping-v2");
    assert_eq!(first["guid"], "tag:eng.example.org,2026:post-7");
    assert_eq!(first["author"], "Ana Lima");
    assert_eq!(first["published_at"], "2026-11-19T08:15:00Z");
    assert_eq!(first["summary"], "What changed in v2.");
    let content = first["content"].as_str().unwrap();
    assert!(content.contains("<strong>v2</strong>"), "{content}");
    // Only <updated> (a bare date), an e-mail-only author, a relative link.
    let second = &items[1];
    assert_eq!(second["published_at"], "2026-11-18T00:00:00Z");
    assert_eq!(second["author"], "ops@example.org");
    assert_eq!(second["summary"], Value::Null);
    let link = second["link"].as_str().unwrap();
    assert!(link.ends_with("/2026/11/updated-only"), "{link}");
}

#[tokio::test]
async fn rss1_rdf() {
    let (result, items) = fetch_file("rss1_rdf.xml", "application/rdf+xml").await;
    assert_eq!(result["format"], "rss1.0");
    assert_eq!(result["feed_title"], "Science Digest");
    assert_eq!(
        items,
        [json!({
            "title": "Comet spotted",
            "link": "https://science.example.net/a/1",
            // RSS 1.0 has no guid element; rdf:about is not passed off as one.
            "guid": null,
            "author": "Observatory Staff",
            "published_at": "2026-11-18T02:05:00Z",
            "summary": "A new comet was seen.",
        })]
    );
}

#[tokio::test]
async fn rss091_in_latin1() {
    let (result, items) = fetch_file("rss091.xml", "text/xml").await;
    assert_eq!(result["format"], "rss0.9x");
    assert_eq!(items[0]["title"], "Still here");
    assert_eq!(items[0]["guid"], Value::Null);
    assert_eq!(items[0]["published_at"], Value::Null);
}

#[tokio::test]
async fn json_feed() {
    let (result, items) = fetch_file("feed.json", "application/feed+json").await;
    assert_eq!(result["format"], "json");
    assert_eq!(result["feed_title"], "JSON Example");
    assert_eq!(items[0]["title"], "Second post");
    assert_eq!(items[0]["link"], "https://json.example.com/2");
    assert_eq!(items[0]["guid"], "https://json.example.com/2");
    assert_eq!(items[0]["author"], "Kim");
    assert_eq!(items[0]["summary"], "A summary.");
    assert_eq!(items[0]["content"], "<p>Body of the second post.</p>");
    assert_eq!(items[1]["title"], Value::Null);
    assert_eq!(items[1]["link"], Value::Null);
    assert_eq!(items[1]["guid"], "note-1");
    assert_eq!(items[1]["published_at"], "2026-11-14T23:00:00Z");
    assert_eq!(items[1]["content"], "A note without a title or a link.");
}

#[tokio::test]
async fn items_without_titles_links_or_parseable_dates() {
    let (result, items) = fetch_file("untitled_items.xml", "application/rss+xml").await;
    assert_eq!(result["count_total"], 2);
    assert_eq!(items[0]["title"], Value::Null);
    assert_eq!(items[0]["link"], Value::Null);
    assert_eq!(items[0]["summary"], "Just a thought, no title, no link.");
    assert_eq!(items[0]["published_at"], "2026-11-19T06:00:00Z");
    assert_eq!(items[1]["title"], "A title only");
    // Not a date anyone can parse: reported verbatim, not dropped or guessed.
    assert_eq!(items[1]["published_at"], "the day before yesterday");
}

#[tokio::test]
async fn gb2312_and_latin1_declared_in_the_prolog() {
    let (result, items) = fetch_file("gb2312.xml", "application/rss+xml").await;
    assert_eq!(result["feed_title"], "新闻中心");
    assert_eq!(items[0]["title"], "北京今日降雪");
    assert_eq!(items[0]["summary"], "气象台发布寒潮预警。");
    assert_eq!(items[0]["author"], "编辑部");
    assert_eq!(items[0]["published_at"], "2026-11-21T01:00:00Z");
    let (result, items) = fetch_file("latin1.xml", "text/xml").await;
    assert_eq!(result["feed_title"], "Café Société");
    assert_eq!(items[0]["title"], "Crème brûlée à Noël");
    assert_eq!(items[0]["summary"], "Recette façon grand-mère.");
}

#[tokio::test]
async fn charset_from_the_header_when_the_prolog_has_none() {
    let server = FeedServer::start();
    let body = b"<rss version=\"2.0\"><channel><title>Caf\xe9</title><item><title>na\xefve</title></item></channel></rss>".to_vec();
    server.serve_bytes("/f", "text/xml; charset=ISO-8859-1", body);
    let h = Harness::lan();
    let env = h
        .run(&format!("rss fetch --url {}", server.url("/f")))
        .await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    assert_eq!(env.result["feed_title"], "Café");
    assert_eq!(env.result["items"][0]["title"], "naïve");
}

#[tokio::test]
async fn billion_laughs_is_never_expanded() {
    let server = FeedServer::start();
    server.serve_bytes("/lol", "application/rss+xml", corpus("billion_laughs.xml"));
    let h = Harness::lan();
    let env = h
        .run(&format!(
            "rss fetch --url {} --out artifacts/rss/lol.json",
            server.url("/lol")
        ))
        .await;
    // Either refused as malformed or parsed with the references left as they are — never
    // expanded (10^9 "lol"s would be 3 GB).
    match env.error_code.as_deref() {
        None => {
            let out = std::fs::read_to_string(h.path("artifacts/rss/lol.json")).unwrap();
            assert!(out.len() < 10_000, "{} bytes written", out.len());
            assert!(!out.contains("lollollol"), "{out}");
        }
        Some(code) => assert_eq!(code, "ParseError", "{}", env.stderr),
    }
    assert!(env.stdout.len() < 10_000);
}

#[tokio::test]
async fn external_entities_are_never_fetched_or_read() {
    let server = FeedServer::start();
    server.serve_bytes("/xxe", "application/rss+xml", corpus("xxe.xml"));
    let h = Harness::lan();
    let env = h
        .run(&format!(
            "rss fetch --url {} --out artifacts/rss/xxe.json",
            server.url("/xxe")
        ))
        .await;
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let first_line = passwd.lines().next().unwrap_or("root:x:0:0");
    let everything = format!(
        "{}{}{}",
        env.stdout,
        env.stderr,
        std::fs::read_to_string(h.path("artifacts/rss/xxe.json")).unwrap_or_default()
    );
    assert!(!everything.contains(first_line), "{everything}");
    assert!(env.error_code.is_none() || env.error_code.as_deref() == Some("ParseError"));
    // Only the feed itself was requested.
    assert_eq!(server.all_requests(), 1);
}

#[tokio::test]
async fn truncated_and_non_feed_bodies_are_parse_errors() {
    let server = FeedServer::start();
    server.serve_bytes("/cut", "application/rss+xml", corpus("truncated.xml"));
    server.serve_bytes(
        "/page",
        "text/html",
        b"<!DOCTYPE html><html><head><title>Home</title></head><body>hi</body></html>".to_vec(),
    );
    server.serve_bytes("/empty", "application/rss+xml", Vec::new());
    server.serve_bytes(
        "/deep",
        "application/rss+xml",
        format!(
            "<rss version=\"2.0\"><channel><item><title>{}",
            "<a>".repeat(300_000)
        )
        .into_bytes(),
    );
    let h = Harness::lan();
    for (path, hint) in [
        ("/cut", "well-formed"),
        ("/page", "web page"),
        ("/empty", "empty"),
        ("/deep", "not a normal feed"),
    ] {
        let env = h
            .run(&format!("rss fetch --url {}", server.url(path)))
            .await;
        assert_eq!(
            env.error_code.as_deref(),
            Some("ParseError"),
            "{path}: {}",
            env.stdout
        );
        assert_eq!(env.exit_code, 1);
        assert_eq!(env.result["http_status"], 200, "{path}");
        assert!(env.stderr.contains(hint), "{path}: {}", env.stderr);
    }
}

#[tokio::test]
async fn gzip_and_deflate_answers_are_decoded() {
    use std::io::Write;
    let server = FeedServer::start();
    let feed = corpus("rss2_content_encoded.xml");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&feed).unwrap();
    let gz = gz.finish().unwrap();
    server.route("/gz", move |req| {
        assert!(req.header("accept-encoding").unwrap_or("").contains("gzip"));
        Reply::ok("application/rss+xml", gz.clone()).header("Content-Encoding", "gzip")
    });
    let mut zl = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    zl.write_all(&feed).unwrap();
    let zl = zl.finish().unwrap();
    server.route("/deflate", move |_| {
        Reply::ok("application/rss+xml", zl.clone()).header("Content-Encoding", "deflate")
    });
    let h = Harness::lan();
    for path in ["/gz", "/deflate"] {
        let env = h
            .run(&format!("rss fetch --url {}", server.url(path)))
            .await;
        assert_eq!(env.exit_code, 0, "{path}: {}", env.stderr);
        assert_eq!(env.result["count_total"], 2);
    }
}

#[tokio::test]
async fn a_second_xml_declaration_is_a_parse_error_not_a_crash() {
    // Found by the feed_parser fuzz target: an encoding switch midway made the XML reader panic.
    let server = FeedServer::start();
    server.serve_bytes(
        "/twice",
        "application/rss+xml",
        corpus("second_xml_declaration.xml"),
    );
    let h = Harness::lan();
    let env = h
        .run(&format!("rss fetch --url {}", server.url("/twice")))
        .await;
    assert_eq!(
        env.error_code.as_deref(),
        Some("ParseError"),
        "{}",
        env.stderr
    );
    assert_eq!(env.exit_code, 1);
    assert!(env.error_message.unwrap().contains("XML declaration"));
}
