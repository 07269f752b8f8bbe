//! `[memory] embedder = "local"`: a BERT sentence encoder (e.g. all-MiniLM-L6-v2) read from a
//! folder (`config.json`, `tokenizer.json`, `model.safetensors`) and run in-process on the CPU
//! with candle: texts truncated to 256 tokens, the last hidden states mean-pooled over the real
//! tokens (the attention mask, never the padding) and normalised to length 1.

use std::path::Path;
use std::sync::Arc;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config, DTYPE};
use tokenizers::{PaddingParams, Tokenizer, TruncationParams};

use crate::embed::{EmbedFuture, Embedder};
use crate::error::MemoryError;

/// Tokens of a text the model sees (sentence-transformers' `max_seq_length` for MiniLM).
const MAX_TOKENS: usize = 256;
/// Texts run through the model at once.
const SUB_BATCH: usize = 16;

struct Model {
    bert: BertModel,
    tokenizer: Tokenizer,
}

/// The in-process embedder.
pub(crate) struct LocalEmbedder {
    id: String,
    model: Arc<Model>,
}

fn failed(id: &str, what: impl std::fmt::Display) -> MemoryError {
    MemoryError::Embedder {
        id: id.to_string(),
        message: what.to_string(),
    }
}

impl LocalEmbedder {
    /// Loads the model in `dir`.
    pub(crate) fn load(dir: &Path) -> Result<Self, MemoryError> {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "model".into());
        let id = format!("local:{name}");
        let read = |file: &str| {
            std::fs::read(dir.join(file)).map_err(|e| {
                failed(
                    &id,
                    format!(
                        "cannot read {}: {e}; memory.local_model_dir needs config.json, tokenizer.json and model.safetensors",
                        dir.join(file).display()
                    ),
                )
            })
        };
        let config: Config = serde_json::from_slice(&read("config.json")?)
            .map_err(|e| failed(&id, format!("config.json is not a BERT config: {e}")))?;
        let mut tokenizer = Tokenizer::from_bytes(read("tokenizer.json")?)
            .map_err(|e| failed(&id, format!("tokenizer.json: {e}")))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(|e| failed(&id, format!("tokenizer.json: {e}")))?;
        tokenizer.with_padding(Some(PaddingParams::default()));
        let weights =
            VarBuilder::from_buffered_safetensors(read("model.safetensors")?, DTYPE, &Device::Cpu)
                .map_err(|e| failed(&id, format!("model.safetensors: {e}")))?;
        let bert = BertModel::load(weights, &config)
            .map_err(|e| failed(&id, format!("model.safetensors is not this BERT: {e}")))?;
        Ok(Self {
            id,
            model: Arc::new(Model { bert, tokenizer }),
        })
    }
}

impl Model {
    /// The normalised, mask-pooled vectors of a few texts.
    fn run(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, String> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| e.to_string())?;
        let rows = encodings.len();
        let width = encodings.first().map_or(0, |e| e.get_ids().len());
        let flat = |get: &dyn Fn(&tokenizers::Encoding) -> &[u32]| -> Vec<u32> {
            encodings.iter().flat_map(|e| get(e).to_vec()).collect()
        };
        let device = &Device::Cpu;
        let tensor = |data: Vec<u32>| Tensor::from_vec(data, (rows, width), device);
        let run = || -> candle_core::Result<Vec<Vec<f32>>> {
            let ids = tensor(flat(&|e| e.get_ids()))?;
            let types = tensor(flat(&|e| e.get_type_ids()))?;
            let mask = tensor(flat(&|e| e.get_attention_mask()))?;
            let hidden = self.bert.forward(&ids, &types, Some(&mask))?;
            let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
            let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
            let counts = mask.sum(1)?.clamp(1e-9, f64::MAX)?;
            let mean = summed.broadcast_div(&counts)?;
            let norm = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f64::MAX)?;
            mean.broadcast_div(&norm)?.to_vec2::<f32>()
        };
        run().map_err(|e| e.to_string())
    }
}

impl Embedder for LocalEmbedder {
    fn id(&self) -> &str {
        &self.id
    }

    fn embed<'a>(&'a self, texts: &'a [String]) -> EmbedFuture<'a> {
        let model = self.model.clone();
        let texts = texts.to_vec();
        Box::pin(async move {
            let work = move || -> Result<Vec<Vec<f32>>, String> {
                let mut out = Vec::with_capacity(texts.len());
                for batch in texts.chunks(SUB_BATCH) {
                    out.extend(model.run(batch)?);
                }
                Ok(out)
            };
            tokio::task::spawn_blocking(work)
                .await
                .map_err(|e| failed(&self.id, e))?
                .map_err(|e| failed(&self.id, e))
        })
    }
}
