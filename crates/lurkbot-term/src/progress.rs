//! Progress of long operations (archive extraction and creation), for a human watching a
//! terminal. Commands report through [`Progress`]; the front end decides whether and how to draw
//! it (`lurkbot exec` draws a bar on an interactive stderr, never in `--json` mode).

use std::sync::Arc;

/// Draws progress somewhere. Implementations must be cheap: `advance` is called per chunk.
pub trait ProgressSink: Send + Sync {
    /// A phase starts, e.g. `"extracting workspace/a.zip"`; `total_bytes` when known.
    fn begin(&self, label: &str, total_bytes: Option<u64>);
    /// `bytes` more bytes are done.
    fn advance(&self, bytes: u64);
    /// The phase goes on under a new label (e.g. once every byte is read, while a compressor
    /// finishes): the count is kept.
    fn relabel(&self, _label: &str) {}
    /// The phase is over (successfully or not); the display should be cleared.
    fn end(&self);
}

/// The progress handle a command reports to; does nothing when no sink is attached.
#[derive(Clone, Default)]
pub struct Progress(Option<Arc<dyn ProgressSink>>);

impl Progress {
    /// A handle reporting to `sink`.
    pub fn new(sink: Arc<dyn ProgressSink>) -> Self {
        Self(Some(sink))
    }

    /// A handle that reports nowhere.
    pub fn none() -> Self {
        Self(None)
    }

    /// Whether a sink is attached.
    pub fn is_attached(&self) -> bool {
        self.0.is_some()
    }

    /// See [`ProgressSink::begin`].
    pub fn begin(&self, label: &str, total_bytes: Option<u64>) {
        if let Some(sink) = &self.0 {
            sink.begin(label, total_bytes);
        }
    }

    /// See [`ProgressSink::advance`].
    pub fn advance(&self, bytes: u64) {
        if let Some(sink) = &self.0 {
            sink.advance(bytes);
        }
    }

    /// See [`ProgressSink::relabel`].
    pub fn relabel(&self, label: &str) {
        if let Some(sink) = &self.0 {
            sink.relabel(label);
        }
    }

    /// See [`ProgressSink::end`].
    pub fn end(&self) {
        if let Some(sink) = &self.0 {
            sink.end();
        }
    }
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Progress(attached)"
        } else {
            "Progress(none)"
        })
    }
}
