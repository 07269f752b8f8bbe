//! Brave Search API: `GET /res/v1/web/search` with the key in `X-Subscription-Token`; results in
//! `web.results[]` as `{title, url, description, page_age?, age?}`.

use serde::Deserialize;

use super::wire::{Failure, answer_text, clean, endpoint, unreachable};
use super::{Freshness, SearchHit, SearchRequest};

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    web: Option<Web>,
}

#[derive(Deserialize)]
struct Web {
    #[serde(default)]
    results: Vec<Hit>,
}

#[derive(Deserialize)]
struct Hit {
    #[serde(default)]
    title: String,
    url: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    page_age: Option<String>,
    #[serde(default)]
    age: Option<String>,
}

pub(super) async fn ask(
    client: &reqwest::Client,
    base: &str,
    key: &str,
    request: &SearchRequest,
) -> Result<Vec<SearchHit>, Failure> {
    let mut url = endpoint(base, "/res/v1/web/search")?;
    {
        let mut query = url.query_pairs_mut();
        query.append_pair("q", &request.query);
        query.append_pair("count", &request.count.to_string());
        if let Some(f) = request.freshness {
            query.append_pair(
                "freshness",
                match f {
                    Freshness::Day => "pd",
                    Freshness::Week => "pw",
                    Freshness::Month => "pm",
                    Freshness::Year => "py",
                },
            );
        }
        if let Some(c) = &request.country {
            query.append_pair("country", c);
        }
        if let Some(l) = &request.language {
            query.append_pair("search_lang", l);
        }
    }
    let response = client
        .get(url)
        .header("Accept", "application/json")
        .header("X-Subscription-Token", key)
        .send()
        .await
        .map_err(|e| unreachable(&e))?;
    let body = match answer_text(response, Some("BRAVE_API_KEY")).await {
        // Brave answers a missing or unknown token with 422 SUBSCRIPTION_TOKEN_INVALID.
        Err(Failure::BadQuery(text)) if text.contains("SUBSCRIPTION_TOKEN") => {
            return Err(Failure::KeyRefused {
                status: 422,
                variable: "BRAVE_API_KEY",
            });
        }
        other => other?,
    };
    let answer: Answer = serde_json::from_str(&body)
        .map_err(|e| Failure::Outage(format!("its answer is not Brave's JSON: {e}")))?;
    Ok(answer
        .web
        .map(|w| w.results)
        .unwrap_or_default()
        .into_iter()
        .map(|h| SearchHit {
            title: clean(&h.title),
            url: h.url,
            snippet: clean(&h.description),
            published: h.page_age.or(h.age),
        })
        .collect())
}
