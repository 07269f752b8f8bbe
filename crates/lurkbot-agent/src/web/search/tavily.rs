//! Tavily: `POST /search` with `Authorization: Bearer <key>` and a JSON body `{query,
//! max_results, time_range?, country?}`; results in `results[]` as `{title, url, content,
//! published_date?}`.

use serde::Deserialize;
use serde_json::json;

use super::wire::{Failure, answer_text, clean, endpoint, unreachable};
use super::{SearchHit, SearchRequest};

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    results: Vec<Hit>,
}

#[derive(Deserialize)]
struct Hit {
    #[serde(default)]
    title: String,
    url: String,
    #[serde(default)]
    content: String,
    #[serde(default)]
    published_date: Option<String>,
}

pub(super) async fn ask(
    client: &reqwest::Client,
    base: &str,
    key: &str,
    request: &SearchRequest,
) -> Result<Vec<SearchHit>, Failure> {
    let url = endpoint(base, "/search")?;
    let mut body = json!({
        "query": request.query,
        "max_results": request.count,
        "search_depth": "basic",
    });
    if let Some(f) = request.freshness {
        body["time_range"] = json!(f.as_str());
    }
    if let Some(name) = request.country.as_deref().and_then(country_name) {
        // Tavily takes the country's English name, for general searches only.
        body["country"] = json!(name);
        body["topic"] = json!("general");
    }
    let response = client
        .post(url)
        .bearer_auth(key)
        .header("Content-Type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| unreachable(&e))?;
    let text = answer_text(response, Some("TAVILY_API_KEY")).await?;
    let answer: Answer = serde_json::from_str(&text)
        .map_err(|e| Failure::Outage(format!("its answer is not Tavily's JSON: {e}")))?;
    Ok(answer
        .results
        .into_iter()
        .map(|h| SearchHit {
            title: clean(&h.title),
            url: h.url,
            snippet: clean(&h.content),
            published: h.published_date,
        })
        .collect())
}

/// The English names Tavily takes for the commonest two-letter codes; others are not sent.
fn country_name(code: &str) -> Option<&'static str> {
    Some(match code {
        "us" => "united states",
        "gb" | "uk" => "united kingdom",
        "de" => "germany",
        "fr" => "france",
        "es" => "spain",
        "it" => "italy",
        "nl" => "netherlands",
        "ca" => "canada",
        "au" => "australia",
        "jp" => "japan",
        "cn" => "china",
        "in" => "india",
        "br" => "brazil",
        "mx" => "mexico",
        "se" => "sweden",
        "ch" => "switzerland",
        "at" => "austria",
        "pl" => "poland",
        "kr" => "south korea",
        _ => return None,
    })
}
