//! SearXNG, the owner's own instance: `GET /search?q=…&format=json` (the instance must list
//! `json` in `search.formats`, or it answers 403); results in `results[]` as `{title, url,
//! content, publishedDate?}`.

use serde::Deserialize;

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
    #[serde(default, rename = "publishedDate")]
    published_date: Option<String>,
}

pub(super) async fn ask(
    client: &reqwest::Client,
    base: &str,
    request: &SearchRequest,
) -> Result<Vec<SearchHit>, Failure> {
    let mut url = endpoint(base, "/search")?;
    {
        let mut query = url.query_pairs_mut();
        query.append_pair("q", &request.query);
        query.append_pair("format", "json");
        if let Some(f) = request.freshness {
            query.append_pair("time_range", f.as_str());
        }
        match (&request.language, &request.country) {
            (Some(l), Some(c)) => {
                query.append_pair("language", &format!("{l}-{}", c.to_uppercase()))
            }
            (Some(l), None) => query.append_pair("language", l),
            _ => &mut query,
        };
    }
    let response = client
        .get(url)
        .header("Accept", "application/json")
        .send()
        .await
        .map_err(|e| unreachable(&e))?;
    let text = match answer_text(response, None).await {
        Err(Failure::Outage(why)) if why.starts_with("HTTP 403") => {
            return Err(Failure::NotSetUp(
                "the instance refuses JSON (403): add json to search.formats in its settings.yml"
                    .into(),
            ));
        }
        other => other?,
    };
    let answer: Answer = serde_json::from_str(&text)
        .map_err(|e| Failure::Outage(format!("its answer is not SearXNG's JSON: {e}")))?;
    Ok(answer
        .results
        .into_iter()
        .map(|h| SearchHit {
            title: clean(&h.title),
            url: h.url,
            snippet: clean(&h.content),
            published: h.published_date.filter(|d| !d.is_empty()),
        })
        .collect())
}
