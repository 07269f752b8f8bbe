//! Embedders: what turns a chunk or a query into a vector. `[memory] embedder` chooses one:
//! `openai` (any OpenAI-compatible `/v1/embeddings`), `local` (a BERT sentence encoder run
//! in-process, with the `local` feature) or `none` (keyword search only).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use lurkbot_core::{Home, MemoryConfig};
use lurkbot_llm::EmbeddingsClient;

use crate::error::MemoryError;

/// Texts sent to an embeddings server in one request.
pub const BATCH: usize = 64;

/// The vectors of a batch of texts, in order.
pub type EmbedFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Vec<Vec<f32>>, MemoryError>> + Send + 'a>>;

/// Something that turns texts into vectors of one fixed size.
pub trait Embedder: Send + Sync {
    /// Names the model, e.g. `openai:text-embedding-3-small`: vectors of different ids are
    /// never compared, and a change of id re-embeds the index.
    fn id(&self) -> &str;

    /// One vector per text, in order.
    fn embed<'a>(&'a self, texts: &'a [String]) -> EmbedFuture<'a>;
}

/// `[memory] embedder = "openai"`.
struct OpenAiEmbedder {
    id: String,
    client: EmbeddingsClient,
}

impl Embedder for OpenAiEmbedder {
    fn id(&self) -> &str {
        &self.id
    }

    fn embed<'a>(&'a self, texts: &'a [String]) -> EmbedFuture<'a> {
        Box::pin(async move {
            self.client
                .embed(texts)
                .await
                .map_err(|e| MemoryError::Embedder {
                    id: self.id.clone(),
                    message: e.to_string(),
                })
        })
    }
}

/// The embedder `[memory]` chooses, `None` for `none`. `vars` reads provider variables (the
/// environment, then the home's `.env`): `MEMORY_EMBEDDINGS_API_KEY`, else `OPENAI_API_KEY`;
/// `OPENAI_BASE_URL` when `memory.base_url` is unset.
///
/// # Errors
/// An unknown embedder, `local` in a build without it, or a model that cannot be loaded.
pub fn embedder(
    home: &Home,
    config: &MemoryConfig,
    vars: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<Option<Arc<dyn Embedder>>, MemoryError> {
    // One embedder per process and setting: a local model is loaded once, an HTTP client's
    // connections are reused. The key is part of the setting, so a new key takes effect.
    type Cached = Option<(String, Arc<dyn Embedder>)>;
    static CACHE: std::sync::Mutex<Cached> = std::sync::Mutex::new(None);
    if config.embedder == "none" {
        return Ok(None);
    }
    let setting = format!(
        "{}\0{:?}\0{:?}\0{:?}\0{:?}\0{:?}\0{}",
        config.embedder,
        config.model,
        config.base_url.clone().or_else(|| vars("OPENAI_BASE_URL")),
        config.local_model_dir,
        vars("MEMORY_EMBEDDINGS_API_KEY"),
        vars("OPENAI_API_KEY"),
        home.root().display()
    );
    if let Ok(cache) = CACHE.lock()
        && let Some((cached, embedder)) = cache.as_ref()
        && *cached == setting
    {
        return Ok(Some(embedder.clone()));
    }
    let made = make(home, config, vars)?;
    if let (Some(embedder), Ok(mut cache)) = (&made, CACHE.lock()) {
        *cache = Some((setting, embedder.clone()));
    }
    Ok(made)
}

fn make(
    home: &Home,
    config: &MemoryConfig,
    vars: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<Option<Arc<dyn Embedder>>, MemoryError> {
    match config.embedder.as_str() {
        "none" => Ok(None),
        "openai" => {
            let model = config
                .model
                .clone()
                .unwrap_or_else(|| "text-embedding-3-small".into());
            let base = config
                .base_url
                .clone()
                .or_else(|| vars("OPENAI_BASE_URL"))
                .unwrap_or_else(|| "https://api.openai.com/v1".into());
            let key = vars("MEMORY_EMBEDDINGS_API_KEY").or_else(|| vars("OPENAI_API_KEY"));
            let client =
                EmbeddingsClient::new(&base, key, &model).map_err(|e| MemoryError::Embedder {
                    id: format!("openai:{model}"),
                    message: e.to_string(),
                })?;
            Ok(Some(Arc::new(OpenAiEmbedder {
                id: format!("openai:{model}"),
                client,
            })))
        }
        "local" => local(home, config),
        other => Err(MemoryError::Embedder {
            id: other.to_string(),
            message: "not an embedder: set memory.embedder to none, openai or local".into(),
        }),
    }
}

#[cfg(feature = "local")]
fn local(home: &Home, config: &MemoryConfig) -> Result<Option<Arc<dyn Embedder>>, MemoryError> {
    let dir = config
        .local_model_dir
        .as_deref()
        .ok_or_else(|| MemoryError::Embedder {
            id: "local".into(),
            message: "set memory.local_model_dir to the model's folder".into(),
        })?;
    let dir = home.join(dir);
    Ok(Some(Arc::new(crate::local::LocalEmbedder::load(&dir)?)))
}

#[cfg(not(feature = "local"))]
fn local(_: &Home, _: &MemoryConfig) -> Result<Option<Arc<dyn Embedder>>, MemoryError> {
    Err(MemoryError::Embedder {
        id: "local".into(),
        message: "this build has no local embedder: build with `--features local-embeddings`, or set memory.embedder to openai or none".into(),
    })
}
