//! OpenAI's `/v1/embeddings` (and every compatible server: Ollama, llama-server, vLLM…): one POST
//! per batch of texts, vectors returned in input order.

use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde::Deserialize;

use crate::error::{ErrorKind, LlmError};

/// Most bytes of an answer read (a batch of 64 vectors of 3,072 floats is about 4 MiB).
const ANSWER_MAX: usize = 64 * 1024 * 1024;

/// A client of one embeddings endpoint and model.
#[derive(Clone)]
pub struct EmbeddingsClient {
    http: reqwest::Client,
    url: String,
    key: Option<String>,
    model: String,
}

impl std::fmt::Debug for EmbeddingsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddingsClient")
            .field("url", &self.url)
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct Answer {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    index: usize,
    embedding: Vec<f32>,
}

impl EmbeddingsClient {
    /// A client of `base_url` (e.g. `https://api.openai.com/v1`; `/embeddings` is appended) for
    /// `model`, sending `key` as a bearer token when there is one.
    ///
    /// # Errors
    /// `Protocol` when the HTTP client cannot be built.
    pub fn new(base_url: &str, key: Option<String>, model: &str) -> Result<Self, LlmError> {
        Ok(Self {
            http: crate::http::client()?,
            url: format!("{}/embeddings", base_url.trim_end_matches('/')),
            key,
            model: model.to_string(),
        })
    }

    /// The model's name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// One vector per text, in order.
    ///
    /// # Errors
    /// Classified HTTP failures, `Transient` for network failures, `Protocol` for an answer
    /// that is not one vector per text.
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LlmError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let body = serde_json::json!({"model": self.model, "input": texts});
        let mut request = self
            .http
            .post(&self.url)
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_string());
        if let Some(key) = &self.key
            && let Ok(mut value) = HeaderValue::from_str(&format!("Bearer {key}"))
        {
            value.set_sensitive(true);
            request = request.header(AUTHORIZATION, value);
        }
        let mut response = request
            .send()
            .await
            .map_err(|e| crate::http::network(&self.url, &e))?;
        let status = response.status();
        let mut bytes = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| crate::http::network(&self.url, &e))?
        {
            bytes.extend_from_slice(&chunk);
            if bytes.len() > ANSWER_MAX {
                return Err(protocol("the embeddings answer is larger than 64 MiB"));
            }
        }
        if !status.is_success() {
            return Err(LlmError::from_status(
                status.as_u16(),
                &String::from_utf8_lossy(&bytes),
                None,
            ));
        }
        let answer: Answer = serde_json::from_slice(&bytes)
            .map_err(|e| protocol(&format!("the embeddings answer is not OpenAI's shape: {e}")))?;
        let mut items = answer.data;
        items.sort_by_key(|i| i.index);
        if items.len() != texts.len() || items.iter().enumerate().any(|(n, i)| i.index != n) {
            return Err(protocol(&format!(
                "the embeddings server answered {} vectors for {} texts",
                items.len(),
                texts.len()
            )));
        }
        Ok(items.into_iter().map(|i| i.embedding).collect())
    }
}

fn protocol(message: &str) -> LlmError {
    LlmError::new(ErrorKind::Protocol, message.to_string())
}
