//! Model servers on this machine, for `lurkbot setup`: a first reply needs no paid key when
//! Ollama, llama.cpp's `llama-server` or LM Studio runs here. Each is asked for its models at
//! its default address (`GET <base>/models`, the OpenAI-compatible list all three serve);
//! `LURKBOT_LOCAL_MODEL_URLS` (comma-separated base URLs with `/v1`) names others instead.

use std::time::Duration;

use serde_json::Value;

/// Where the known servers listen by default: (name, base URL).
const KNOWN: &[(&str, &str)] = &[
    ("Ollama", "http://127.0.0.1:11434/v1"),
    ("llama.cpp's server", "http://127.0.0.1:8080/v1"),
    ("LM Studio", "http://127.0.0.1:1234/v1"),
];

/// How long one server has to answer: a local server answers at once or is not there.
const ANSWER_WITHIN: Duration = Duration::from_secs(2);

/// A model server found on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LocalServer {
    /// What it is (or its URL, when named by `LURKBOT_LOCAL_MODEL_URLS`).
    pub(crate) name: String,
    /// Its base URL, with `/v1`.
    pub(crate) base: String,
    /// The models it lists, in its order.
    pub(crate) models: Vec<String>,
}

/// The servers that answer, in the order they are looked for; those listing no model are left
/// out (nothing could be chosen).
pub(crate) fn find() -> Vec<LocalServer> {
    let candidates: Vec<(String, String)> = match std::env::var("LURKBOT_LOCAL_MODEL_URLS") {
        Ok(list) if !list.trim().is_empty() => list
            .split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .map(|u| (u.to_string(), u.trim_end_matches('/').to_string()))
            .collect(),
        _ => KNOWN
            .iter()
            .map(|(n, u)| ((*n).to_string(), (*u).to_string()))
            .collect(),
    };
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return Vec::new();
    };
    // A redirect is not followed: a server found here is asked at its own address only.
    let Ok(client) = lurkbot_term::http_client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(ANSWER_WITHIN)
        .connect_timeout(ANSWER_WITHIN)
        .build()
    else {
        return Vec::new();
    };
    runtime.block_on(async {
        let asked = candidates.iter().map(|(name, base)| {
            let client = client.clone();
            async move {
                let answer = client.get(format!("{base}/models")).send().await.ok()?;
                if !answer.status().is_success() {
                    return None;
                }
                let body = answer.bytes().await.ok()?;
                let models = model_ids(&serde_json::from_slice(&body).ok()?);
                (!models.is_empty()).then(|| LocalServer {
                    name: name.clone(),
                    base: base.clone(),
                    models,
                })
            }
        });
        futures_util::future::join_all(asked)
            .await
            .into_iter()
            .flatten()
            .collect()
    })
}

/// The model ids of an OpenAI-style list (`{"data": [{"id": …}]}`).
fn model_ids(list: &Value) -> Vec<String> {
    list["data"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["id"].as_str().map(str::to_string))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_ids_are_read_from_the_openai_list() {
        let list = serde_json::json!({"object": "list", "data": [
            {"id": "qwen2.5:0.5b", "object": "model"},
            {"id": "SmolLM2-135M-Instruct.Q4_1.gguf"},
            {"object": "model"}
        ]});
        assert_eq!(
            model_ids(&list),
            vec!["qwen2.5:0.5b", "SmolLM2-135M-Instruct.Q4_1.gguf"]
        );
        assert!(model_ids(&serde_json::json!({"models": []})).is_empty());
    }
}
