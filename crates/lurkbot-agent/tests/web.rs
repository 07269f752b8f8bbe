//! `web_search` against loopback servers written from each provider's API documentation, and
//! `web_fetch`'s article extraction on saved pages served by a real HTTP server, both called by
//! the scripted model through the agent loop.

use lurkbot_core::SessionKey;
use lurkbot_test_support::feed_server::{FeedServer, Reply};
use lurkbot_test_support::search_servers::{Kind, SearchServer};
use serde_json::{Value, json};

use crate::common::{Setup, setup};

const BRAVE_KEY: &str = "brave-test-key-0123";
const TAVILY_KEY: &str = "tvly-test-key-4567";

struct Providers {
    brave: SearchServer,
    tavily: SearchServer,
    searxng: SearchServer,
    ddg: SearchServer,
}

fn providers() -> Providers {
    Providers {
        brave: SearchServer::start(Kind::Brave, BRAVE_KEY),
        tavily: SearchServer::start(Kind::Tavily, TAVILY_KEY),
        searxng: SearchServer::start(Kind::Searxng, ""),
        ddg: SearchServer::start(Kind::DuckDuckGo, ""),
    }
}

fn config(p: &Providers, order: &str) -> String {
    format!(
        "[tools.web.search]\nproviders = [{order}]\nbrave_url = \"{}\"\ntavily_url = \"{}\"\nsearxng_url = \"{}\"\nduckduckgo_url = \"{}\"\n",
        p.brave.base_url(),
        p.tavily.base_url(),
        p.searxng.base_url(),
        p.ddg.base_url()
    )
}

async fn search(s: &Setup, config: &str, calls: &[Value]) -> Vec<(String, bool)> {
    crate::common::call_each_in(s, &SessionKey::main(), config, "web_search", calls).await
}

/// The JSON inside the untrusted frame of a tool result.
fn found(text: &str) -> Value {
    let start = text
        .find("{\"provider\"")
        .unwrap_or_else(|| panic!("no answer in {text}"));
    let end = text.rfind('}').unwrap();
    serde_json::from_str(&text[start..=end]).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limit_or_an_outage_moves_to_the_next_provider() {
    let p = providers();
    let s = setup(vec![]).await;
    std::fs::write(
        s.home.join(".env"),
        format!("BRAVE_API_KEY={BRAVE_KEY}\nTAVILY_API_KEY={TAVILY_KEY}\n"),
    )
    .unwrap();
    p.brave.fail_next(1, 429, Some(30));
    p.tavily.fail_next(1, 503, None);
    let cfg = config(&p, "\"brave\", \"tavily\", \"searxng\", \"duckduckgo\"");
    let results = search(
        &s,
        &cfg,
        &[json!({"query": "harbour ferry winter", "count": 3, "freshness": "week", "country": "DE", "language": "de"})],
    )
    .await;
    let text = &results[0].0;
    assert!(!text.contains("SearchUnavailable"), "{text}");
    assert!(text.contains("<untrusted"), "results are framed: {text}");
    let answer = found(text);
    assert_eq!(answer["provider"], "searxng");
    let hits = answer["results"].as_array().unwrap();
    assert_eq!(hits.len(), 3, "the count asked for");
    assert_eq!(
        hits[0]["title"],
        "searxng result 1 for harbour ferry winter"
    );
    assert_eq!(hits[0]["url"], "https://searxng.example/1");
    let passed = answer["passed_over"].to_string();
    assert!(
        passed.contains("brave: rate limited (retry after 30 s)"),
        "{passed}"
    );
    assert!(passed.contains("tavily: HTTP 503"), "{passed}");
    // Each provider was asked in its own wire format.
    let brave = &p.brave.asked()[0];
    assert!(
        brave
            .path
            .starts_with("/res/v1/web/search?q=harbour+ferry+winter"),
        "{}",
        brave.path
    );
    for part in ["count=3", "freshness=pw", "country=de", "search_lang=de"] {
        assert!(brave.path.contains(part), "{part} in {}", brave.path);
    }
    assert!(
        brave
            .headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("x-subscription-token") && v == BRAVE_KEY)
    );
    let tavily = &p.tavily.asked()[0];
    let body: Value = serde_json::from_str(&tavily.body).unwrap();
    assert_eq!(body["query"], "harbour ferry winter");
    assert_eq!(body["max_results"], 3);
    assert_eq!(body["time_range"], "week");
    assert_eq!(body["country"], "germany");
    assert!(
        tavily
            .headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("authorization")
                && v == &format!("Bearer {TAVILY_KEY}"))
    );
    let searx = &p.searxng.asked()[0].path;
    assert!(
        searx.contains("format=json")
            && searx.contains("time_range=week")
            && searx.contains("language=de-DE"),
        "{searx}"
    );
    assert!(p.ddg.asked().is_empty(), "the last provider was not needed");
    // No key reaches the model.
    assert!(!text.contains(BRAVE_KEY) && !text.contains(TAVILY_KEY));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_every_provider_fails_one_error_names_each_and_what_to_set() {
    let p = providers();
    let s = setup(vec![]).await;
    std::fs::write(s.home.join(".env"), "BRAVE_API_KEY=wrong-key\n").unwrap();
    p.searxng.refuse_json();
    p.ddg.fail_next(1, 202, None);
    let cfg = config(&p, "\"brave\", \"tavily\", \"searxng\", \"duckduckgo\"");
    let results = search(&s, &cfg, &[json!({"query": "nothing answers"})]).await;
    let text = &results[0].0;
    assert!(text.contains("SearchUnavailable"), "{text}");
    assert!(
        text.contains("brave: refused the key (HTTP 422); check BRAVE_API_KEY"),
        "{text}"
    );
    assert!(
        text.contains("tavily: not set up (TAVILY_API_KEY is not set"),
        "{text}"
    );
    assert!(
        text.contains(
            "searxng: not set up (the instance refuses JSON (403): add json to search.formats"
        ),
        "{text}"
    );
    assert!(text.contains("duckduckgo: rate limited"), "{text}");
    assert!(p.tavily.asked().is_empty(), "no request without a key");
    assert!(!text.contains("wrong-key"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_home_searches_duckduckgo_and_answers_again_from_the_cache() {
    let p = providers();
    let s = setup(vec![]).await;
    // No providers named and no keys: DuckDuckGo, which needs none.
    let cfg = format!(
        "[tools.web.search]\nduckduckgo_url = \"{}\"\n",
        p.ddg.base_url()
    );
    let query = json!({"query": "rust ownership & borrowing", "count": 4, "country": "us", "language": "en"});
    let results = search(&s, &cfg, &[query.clone(), query]).await;
    let first = found(&results[0].0);
    assert_eq!(first["provider"], "duckduckgo");
    let hits = first["results"].as_array().unwrap();
    assert_eq!(hits.len(), 4);
    assert_eq!(
        hits[0]["url"], "https://duckduckgo.example/1",
        "the /l/?uddg= redirect is unwrapped"
    );
    assert_eq!(
        hits[0]["title"],
        "duckduckgo result 1 for rust ownership & borrowing"
    );
    assert!(!results[0].0.contains("Buy now"), "ads are skipped");
    assert_eq!(first["cached"], false);
    let second = found(&results[1].0);
    assert_eq!(second["cached"], true);
    assert_eq!(second["results"], first["results"]);
    let asked = p.ddg.asked();
    assert_eq!(
        asked.len(),
        1,
        "the second search was answered from the cache"
    );
    assert_eq!(asked[0].method, "POST");
    assert!(
        asked[0].body.contains("q=rust+ownership+%26+borrowing")
            && asked[0].body.contains("kl=us-en"),
        "{}",
        asked[0].body
    );
    // Both searches are in the web log, the second marked cached.
    let log = std::fs::read_to_string(s.home.join("logs/web.jsonl")).unwrap();
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{log}");
    assert_eq!(lines[0]["tool"], "web_search");
    assert_eq!(lines[0]["provider"], "duckduckgo");
    assert_eq!(lines[0]["count"], 4);
    assert_eq!(
        (lines[0]["cached"].clone(), lines[1]["cached"].clone()),
        (json!(false), json!(true))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_search_arguments_are_refused_before_any_request() {
    let p = providers();
    let s = setup(vec![]).await;
    let cfg = config(&p, "\"duckduckgo\"");
    let results = search(
        &s,
        &cfg,
        &[
            json!({"query": "x", "count": 11}),
            json!({"query": "x", "freshness": "hour"}),
            json!({"query": "x", "country": "usa"}),
            json!({"query": "   "}),
            json!({"count": 2}),
        ],
    )
    .await;
    assert!(
        results[0].0.contains("count must be 1 to 10"),
        "{}",
        results[0].0
    );
    assert!(
        results[1]
            .0
            .contains("freshness is day, week, month or year"),
        "{}",
        results[1].0
    );
    assert!(
        results[2].0.contains("country takes a two-letter code"),
        "{}",
        results[2].0
    );
    assert!(
        results[3].0.contains("the query is empty"),
        "{}",
        results[3].0
    );
    assert!(
        results[4].0.contains("missing string argument 'query'"),
        "{}",
        results[4].0
    );
    assert!(p.ddg.asked().is_empty());
    let unknown = search(
        &s,
        "[tools.web.search]\nproviders = [\"bing\"]\n",
        &[json!({"query": "x"})],
    )
    .await;
    assert!(
        unknown[0].0.contains("InvalidConfig") && unknown[0].0.contains("'bing'"),
        "{}",
        unknown[0].0
    );
}

fn page(name: &str) -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/pages")
            .join(name),
    )
    .unwrap()
}

async fn fetch(s: &Setup, calls: &[Value]) -> Vec<(String, bool)> {
    let config = "[network]\nallow_private = true\n";
    crate::common::call_each_in(s, &SessionKey::main(), config, "web_fetch", calls).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_fetch_reads_saved_pages_as_a_reader_would() {
    let server = FeedServer::start();
    let (book, toc, news) = (
        page("rust-book-ownership.html"),
        page("rust-book-toc.html"),
        page("news-article.html"),
    );
    server.route("/book/ch04-01-what-is-ownership.html", move |_| {
        Reply::ok("text/html; charset=utf-8", book.clone())
    });
    server.route("/book/toc.html", move |_| {
        Reply::ok("text/html", toc.clone())
    });
    server.route("/news/ferry", move |_| Reply::ok("text/html", news.clone()));
    server.route("/notes.txt", |_| {
        Reply::ok("text/plain", "plain *text* stays as it is\n")
    });
    let s = setup(vec![]).await;
    let results = fetch(
        &s,
        &[
            json!({"url": server.url("/book/ch04-01-what-is-ownership.html")}),
            json!({"url": server.url("/news/ferry")}),
            json!({"url": server.url("/news/ferry"), "extractMode": "text", "maxChars": 300}),
            json!({"url": server.url("/book/toc.html")}),
            json!({"url": server.url("/notes.txt")}),
            json!({"url": server.url("/news/ferry"), "extractMode": "html"}),
        ],
    )
    .await;
    // The documentation page: its text, Markdown headings and absolute links; no scripts.
    let doc = &results[0].0;
    assert!(doc.contains("Title: What is Ownership?"), "{doc}");
    assert!(
        doc.contains("is a set of rules that govern how a Rust program manages memory"),
        "{doc}"
    );
    assert!(
        doc.lines()
            .any(|l| l.starts_with("### ") && l.contains("The Stack and the Heap")),
        "headings stay Markdown headings: {doc}"
    );
    assert!(
        doc.contains(&format!("]({}", server.url("/book/"))),
        "links kept as absolute Markdown links: {doc}"
    );
    for gone in ["path_to_root", "localStorage", "mdbook-sidebar"] {
        assert!(!doc.contains(gone), "{gone} kept");
    }
    // The news article: the story, its byline and date; none of the chrome around it.
    let story = &results[1].0;
    assert!(
        story.contains("Title: Harbour town votes to keep its ferry running through winter"),
        "{story}"
    );
    assert!(story.contains("Mara Lindqvist"), "{story}");
    assert!(story.contains("2026-11-24"), "{story}");
    assert!(
        story.contains("The council of Eskhaven voted nine to two"),
        "{story}"
    );
    assert!(
        story.contains("first winter crossing is planned for 2 December"),
        "{story}"
    );
    assert!(story.contains("[harbour fees review]("), "{story}");
    for gone in [
        "We use cookies",
        "Sign in",
        "Most read",
        "Privacy policy",
        "gtag",
        "Advertisement",
        "First! Great news",
        "Get the morning briefing",
    ] {
        assert!(!story.contains(gone), "{gone} kept: {story}");
    }
    // Text mode, cut at maxChars with a note.
    let short = &results[2].0;
    assert!(
        short.contains("The council of Eskhaven") && !short.contains("]("),
        "{short}"
    );
    assert!(
        short.contains("more characters past maxChars = 300"),
        "{short}"
    );
    // A page that is all navigation keeps its links for the reader.
    let nav = &results[3].0;
    assert!(nav.contains("What is Ownership?"), "{nav}");
    assert!(nav.contains("Getting Started"), "{nav}");
    // Other text types come back as they are.
    assert!(
        results[4].0.contains("plain *text* stays as it is"),
        "{}",
        results[4].0
    );
    assert!(
        results[5].0.contains("extractMode is markdown or text"),
        "{}",
        results[5].0
    );
    // Fetches are in the web log.
    let log = std::fs::read_to_string(s.home.join("logs/web.jsonl")).unwrap();
    assert!(
        log.lines().count() >= 5 && log.contains("\"tool\":\"web_fetch\""),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_page_is_bounded() {
    let server = FeedServer::start();
    let nested = format!(
        "<html><body>{}deep text{}</body></html>",
        "<div>".repeat(200_000),
        "</div>".repeat(200_000)
    );
    server.route("/nested", move |_| Reply::ok("text/html", nested.clone()));
    let wide = format!(
        "<html><body>{}</body></html>",
        "<p>filler paragraph with words</p>".repeat(100_000)
    );
    server.route("/wide", move |_| Reply::ok("text/html", wide.clone()));
    let target = server.url("/again");
    server.route("/again", move |_| {
        Reply::status(302).header("Location", &target)
    });
    let s = setup(vec![]).await;
    let results = fetch(
        &s,
        &[
            json!({"url": server.url("/nested")}),
            json!({"url": server.url("/wide")}),
            json!({"url": server.url("/again")}),
        ],
    )
    .await;
    assert!(
        results[0].0.contains("deep text"),
        "{}",
        &results[0].0[..results[0].0.len().min(500)]
    );
    assert!(
        results[1].0.contains("filler paragraph"),
        "bounded by max_bytes and maxChars"
    );
    assert!(
        results[1]
            .0
            .contains("only the first 2000000 bytes were read"),
        "{}",
        &results[1].0[..300]
    );
    assert!(results[1].0.chars().count() < 21_000);
    assert!(
        results[2].0.contains("more than 5 redirects"),
        "{}",
        results[2].0
    );
    assert_eq!(server.requests("/again").len(), 6);
}

/// A real news page saved by trafilatura's authors (FiveThirtyEight, 2021; `scripts/test.sh`
/// fetches it from PyPI into `LURKBOT_TEST_PAGES`): the story and its headline, none of the
/// analytics scripts, navigation or newsletter box around it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_fetch_reads_a_real_saved_news_page() {
    let dir = std::env::var("LURKBOT_TEST_PAGES").expect(
        "LURKBOT_TEST_PAGES: run the tests through scripts/test.sh, which fetches the page",
    );
    let html =
        std::fs::read_to_string(std::path::Path::new(&dir).join("news-fivethirtyeight.html"))
            .expect("the saved news page (scripts/test.sh fetches it)");
    let server = FeedServer::start();
    server.route("/features/manchin/", move |_| {
        Reply::ok("text/html; charset=utf-8", html.clone())
    });
    let s = setup(vec![]).await;
    let results = fetch(&s, &[json!({"url": server.url("/features/manchin/")})]).await;
    let story = &results[0].0;
    assert!(
        story.contains("Title: Could Manchin Actually Leave The Democratic Party?"),
        "{story}"
    );
    assert!(
        story.contains("Sen. Joe Manchin told reporters Wednesday"),
        "{story}"
    );
    assert!(story.contains("ran as an independent"), "{story}");
    assert!(!story.contains("Note: no article found"), "{story}");
    for gone in ["NREUM", "DisneyOneID", "ABCAnalytics", "Newsletter"] {
        assert!(!story.contains(gone), "{gone} kept: {story}");
    }
}
