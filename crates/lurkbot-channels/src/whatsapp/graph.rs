//! The Graph API as the Cloud adapter reaches it: the base URL, the business number, the access
//! token (never logged), and how an answer is read.

use serde_json::Value;

use crate::ChannelError;
use crate::http::{classify, network};

/// Meta's Graph API for one business number.
pub(super) struct Graph {
    pub(super) http: reqwest::Client,
    pub(super) base: String,
    pub(super) phone_number_id: String,
    /// Never logged.
    pub(super) token: String,
}

impl Graph {
    /// `GET`s or `POST`s a Graph API path with the access token; the answer's JSON.
    pub(super) async fn call(
        &self,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, ChannelError> {
        let url = format!("{}/{path}", self.base);
        let request = match &body {
            Some(body) => self
                .http
                .post(&url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.to_string()),
            None => self.http.get(&url),
        };
        answered(request.bearer_auth(&self.token).send().await).await
    }
}

/// The Graph API's answer: its JSON on success, else its error classified for the retry
/// policy (429 and 5xx retried).
pub(super) async fn answered(
    sent: Result<reqwest::Response, reqwest::Error>,
) -> Result<Value, ChannelError> {
    let response = sent.map_err(|e| network("whatsapp", e))?;
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    let answer: Value = response
        .bytes()
        .await
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    if (200..300).contains(&status) {
        return Ok(answer);
    }
    let error = &answer["error"];
    let said = format!(
        "{} (code {})",
        error["message"].as_str().unwrap_or("refused"),
        error["code"]
    );
    Err(classify(status, &said, retry_after))
}
