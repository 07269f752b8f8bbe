//! `lurkbot search` for the owner, on the `web_search` tool's code path, against loopback
//! providers written from their API documentation.

use lurkbot_test_support::search_servers::{Kind, SearchServer};
use serde_json::Value;

use crate::util::Test;

fn with_search(t: &Test, settings: &str) {
    let config = std::fs::read_to_string(t.path("config.toml")).unwrap();
    std::fs::write(
        t.path("config.toml"),
        format!("{config}\n[tools.web.search]\n{settings}"),
    )
    .unwrap();
}

#[test]
fn the_owner_searches_with_the_providers_in_order() {
    let brave = SearchServer::start(Kind::Brave, "owner-brave-key");
    let ddg = SearchServer::start(Kind::DuckDuckGo, "");
    let t = Test::init();
    with_search(
        &t,
        &format!(
            "providers = [\"brave\", \"duckduckgo\"]\nbrave_url = \"{}\"\nduckduckgo_url = \"{}\"\n",
            brave.base_url(),
            ddg.base_url()
        ),
    );
    std::fs::write(t.path(".env"), "BRAVE_API_KEY=owner-brave-key\n").unwrap();
    let out = t.run(&[
        "search",
        "tide",
        "tables",
        "-n",
        "2",
        "--freshness",
        "day",
        "--json",
    ]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let found: Value = out.json();
    assert_eq!(found["provider"], "brave");
    assert_eq!(found["results"].as_array().unwrap().len(), 2);
    assert_eq!(
        found["results"][0]["title"],
        "brave result 1 for tide tables"
    );
    assert_eq!(
        found["results"][0]["snippet"], "What brave found about tide tables (1).",
        "tags Brave puts in descriptions are removed"
    );
    assert_eq!(found["results"][0]["published"], "2026-11-20T08:00:00");
    assert!(brave.asked()[0].path.contains("freshness=pd"));
    // A rate limit moves on; the text output names the provider that answered.
    brave.fail_next(1, 429, Some(5));
    let out = t.run(&["search", "moon", "phase"]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let text = out.stdout.clone();
    assert!(
        text.starts_with(
            "1. duckduckgo result 1 for moon phase\n   https://duckduckgo.example/1\n"
        ),
        "{text}"
    );
    assert!(text.trim_end().ends_with("(duckduckgo)"), "{text}");
    assert!(!text.contains("owner-brave-key"));
    let log = std::fs::read_to_string(t.path("logs/web.jsonl")).unwrap();
    assert!(
        log.contains("\"session\":\"cli\"") && !log.contains("owner-brave-key"),
        "{log}"
    );
    // Refusals: a wrong flag value exits 2, no provider answering exits 1 with what was tried.
    let bad = t.run(&["search", "x", "--freshness", "hour"]);
    assert_eq!(bad.status, 2, "{}", bad.stderr);
    assert!(
        bad.stderr
            .contains("--freshness is day, week, month or year")
    );
    let bad = t.run(&["search", "x", "-n", "11"]);
    assert_eq!(bad.status, 2);
    assert!(
        bad.stderr.contains("count must be 1 to 10"),
        "{}",
        bad.stderr
    );
    brave.fail_next(1, 503, None);
    ddg.fail_next(1, 503, None);
    let down = t.run(&["search", "nobody", "home"]);
    assert_eq!(down.status, 1, "{}", down.stderr);
    assert!(
        down.stderr.contains("SearchUnavailable")
            && down.stderr.contains("brave: HTTP 503")
            && down.stderr.contains("duckduckgo: HTTP 503"),
        "{}",
        down.stderr
    );
}
