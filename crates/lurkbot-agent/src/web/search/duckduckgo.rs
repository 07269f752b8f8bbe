//! DuckDuckGo's HTML endpoint, which needs no key: `POST /html/` with the form fields `q`, `kl`
//! (region, `us-en`) and `df` (`d|w|m|y`), answered with a results page whose `div.result`
//! blocks hold `a.result__a` (the title, its `href` a `/l/?uddg=<address>` redirect) and
//! `.result__snippet`; ads carry `result--ad`. When it limits the rate it answers 202 (or 403)
//! with a challenge page instead of results.

use dom_query::Document;

use super::wire::{Failure, answer_text, clean, endpoint, unreachable};
use super::{Freshness, SearchHit, SearchRequest};

pub(super) async fn ask(
    client: &reqwest::Client,
    base: &str,
    request: &SearchRequest,
) -> Result<Vec<SearchHit>, Failure> {
    let url = endpoint(base, "/html/")?;
    let form = form(request);
    let response = client
        .post(url)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Accept", "text/html")
        .body(form)
        .send()
        .await
        .map_err(|e| unreachable(&e))?;
    if response.status() == reqwest::StatusCode::ACCEPTED {
        return Err(Failure::RateLimited(None));
    }
    let page = match answer_text(response, None).await {
        Err(Failure::Outage(why)) if why.starts_with("HTTP 403") => {
            return Err(Failure::RateLimited(None));
        }
        other => other?,
    };
    parse(&page, usize::from(request.count))
}

/// The form: `q`, `kl`, `df`.
fn form(request: &SearchRequest) -> String {
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    form.append_pair("q", &request.query);
    if let Some(region) = region(request) {
        form.append_pair("kl", &region);
    }
    if let Some(f) = request.freshness {
        form.append_pair(
            "df",
            match f {
                Freshness::Day => "d",
                Freshness::Week => "w",
                Freshness::Month => "m",
                Freshness::Year => "y",
            },
        );
    }
    form.finish()
}

/// `kl`: DuckDuckGo's region code, `<country>-<language>`.
fn region(request: &SearchRequest) -> Option<String> {
    match (&request.country, &request.language) {
        (Some(c), Some(l)) => Some(format!("{c}-{l}")),
        (Some(c), None) => Some(format!("{c}-{c}")),
        (None, Some(l)) => Some(format!("wt-{l}")),
        (None, None) => None,
    }
}

/// The results of a results page; a challenge page is a rate limit.
fn parse(page: &str, count: usize) -> Result<Vec<SearchHit>, Failure> {
    let document = Document::from(page);
    let blocks = document.select("div.result");
    if blocks.is_empty() {
        if !document.select(".no-results").is_empty() || page.contains("No results.") {
            return Ok(Vec::new());
        }
        if page.contains("anomaly") || page.contains("challenge") {
            return Err(Failure::RateLimited(None));
        }
        return Err(Failure::Outage(
            "its page holds no results block; the page layout may have changed".into(),
        ));
    }
    let mut hits = Vec::new();
    for block in blocks.iter() {
        if block.has_class("result--ad") {
            continue;
        }
        let link = block.select("a.result__a").first();
        let Some(href) = link.attr("href") else {
            continue;
        };
        let Some(url) = target(&href) else {
            continue;
        };
        hits.push(SearchHit {
            title: clean(&link.text()),
            url,
            snippet: clean(&block.select(".result__snippet").first().text()),
            published: None,
        });
        if hits.len() == count {
            break;
        }
    }
    Ok(hits)
}

/// The address behind a result link: the `uddg` parameter of DuckDuckGo's `/l/` redirect, or
/// the link itself when it is direct.
fn target(href: &str) -> Option<String> {
    let absolute = if href.starts_with("//") {
        format!("https:{href}")
    } else {
        href.to_string()
    };
    let parsed = reqwest::Url::parse(&absolute).ok()?;
    if let Some((_, real)) = parsed.query_pairs().find(|(k, _)| k == "uddg") {
        return Some(real.into_owned());
    }
    matches!(parsed.scheme(), "http" | "https").then_some(absolute)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_results_and_skips_ads() {
        let page = r##"<html><body>
          <div class="result results_links result--ad"><a class="result__a" href="https://ads.example/">Ad</a></div>
          <div class="result results_links"><h2><a class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.rust-lang.org%2F&amp;rut=x">The <b>Rust</b> Language</a></h2>
          <a class="result__snippet" href="#">A language empowering &amp; everyone.</a></div>
          <div class="result"><a class="result__a" href="javascript:alert(1)">bad</a></div>
        </body></html>"##;
        let hits = parse(page, 5).unwrap_or_default();
        assert_eq!(hits.len(), 1, "{hits:?}");
        assert_eq!(hits[0].url, "https://www.rust-lang.org/");
        assert_eq!(hits[0].title, "The Rust Language");
        assert_eq!(hits[0].snippet, "A language empowering & everyone.");
        assert_eq!(
            parse("<html><div class='anomaly-modal'>x</div></html>", 5),
            Err(Failure::RateLimited(None))
        );
    }
}
