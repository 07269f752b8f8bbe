//! Traces (ARCHITECTURE.md §6.4): spans of a turn, its model calls, tool calls, gate decisions
//! and deliveries, exported over OTLP/HTTP by the gateway (`lurkbot_gateway::otel`) when an
//! endpoint is set, and W3C `traceparent` in and out.
//!
//! The context a span starts under is the task's ([`scope`], a task-local): the gateway sets
//! it from an incoming `traceparent` and for each turn, each model call and tool call set their
//! own for what they call, and an HTTP request to a model provider or an MCP server carries
//! [`current`] as its `traceparent`. A span records only while an exporter is installed
//! ([`install`]) and its trace is sampled; ending it hands it to the exporter's bounded queue
//! without waiting — a full queue drops the span and counts it
//! (`lurkbot_trace_spans_dropped_total`). Prompts, replies and tool arguments are recorded only
//! with `[otel] capture_content` ([`Span::set_content`]).

mod otlp;

pub use otlp::{Resource, encode_request};

use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, RwLock};

use tokio::sync::mpsc;

/// The W3C trace context of a span: what `traceparent` carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceContext {
    /// The trace (never all zeroes).
    pub trace_id: [u8; 16],
    /// The span (never all zeroes).
    pub span_id: [u8; 8],
    /// Whether the trace is recorded (`traceparent`'s flag 01).
    pub sampled: bool,
}

impl TraceContext {
    /// A new trace's context, sampled.
    pub fn root() -> Self {
        Self {
            trace_id: random_id(),
            span_id: random_id(),
            sampled: true,
        }
    }

    /// Parses a `traceparent` header: `00-<32 hex>-<16 hex>-<2 hex>` (a later version's
    /// first four fields are read as version 00's); `None` for anything else.
    pub fn parse(header: &str) -> Option<Self> {
        let mut parts = header.trim().split('-');
        let version = parts.next()?;
        let (trace, span, flags) = (parts.next()?, parts.next()?, parts.next()?);
        if version.len() != 2 || version == "ff" || (version == "00" && parts.next().is_some()) {
            return None;
        }
        hex::<1>(version)?;
        let trace_id = hex::<16>(trace)?;
        let span_id = hex::<8>(span)?;
        let flags = hex::<1>(flags)?[0];
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        Some(Self {
            trace_id,
            span_id,
            sampled: flags & 1 == 1,
        })
    }

    /// The `traceparent` header of this context.
    pub fn header(&self) -> String {
        format!(
            "00-{}-{}-{}",
            to_hex(&self.trace_id),
            to_hex(&self.span_id),
            if self.sampled { "01" } else { "00" }
        )
    }

    /// The trace id in hex (as log lines carry it).
    pub fn trace_hex(&self) -> String {
        to_hex(&self.trace_id)
    }
}

tokio::task_local! {
    static CURRENT: Option<TraceContext>;
}

/// The context the running task works under, if any.
pub fn current() -> Option<TraceContext> {
    CURRENT.try_with(|c| *c).ok().flatten()
}

/// Runs `work` under `context` (under the task's own when `None`). `work` is boxed: the futures
/// wrapped here are a turn's and its calls', and the task-local's wrapper would otherwise carry
/// a copy of each one's code in the binary (one allocation per turn, model call or tool call).
pub fn scope<'a, T: 'a>(
    context: Option<TraceContext>,
    work: impl Future<Output = T> + Send + 'a,
) -> impl Future<Output = T> + Send + 'a {
    let work: Pin<Box<dyn Future<Output = T> + Send + 'a>> = Box::pin(work);
    CURRENT.scope(context.or_else(current), work)
}

/// Runs `work` (no `await` in it) under `context` (under the task's own when `None`).
pub fn within<R>(context: Option<TraceContext>, work: impl FnOnce() -> R) -> R {
    CURRENT.sync_scope(context.or_else(current), work)
}

/// What a span is, for the collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Work inside the process (a turn, a tool call, a gate decision).
    Internal = 1,
    /// A call to another service (a model provider, a channel's platform).
    Client = 3,
}

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Text.
    Str(String),
    /// A whole number.
    Int(i64),
    /// A number.
    Float(f64),
    /// True or false.
    Bool(bool),
}

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Self::Str(v.to_string())
    }
}

impl From<String> for Value {
    fn from(v: String) -> Self {
        Self::Str(v)
    }
}

impl From<u64> for Value {
    fn from(v: u64) -> Self {
        Self::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Self::Float(v)
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Self::Bool(v)
    }
}

/// A finished span, as the exporter sends it.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanData {
    /// Its context (trace and span ids).
    pub context: TraceContext,
    /// The span it is a child of.
    pub parent: Option<[u8; 8]>,
    /// Its name (`chat gpt-4o`, `execute_tool terminal_exec`).
    pub name: String,
    /// What it is.
    pub kind: Kind,
    /// Start and end, nanoseconds since the epoch.
    pub start_ns: u64,
    /// End.
    pub end_ns: u64,
    /// Its attributes.
    pub attributes: Vec<(&'static str, Value)>,
    /// Why it failed, if it did.
    pub error: Option<String>,
}

/// A span being recorded (or, with no exporter or an unsampled trace, a context only); ended
/// when dropped.
pub struct Span {
    data: Option<Box<SpanData>>,
    /// The context children and outgoing requests get.
    context: Option<TraceContext>,
}

impl Span {
    /// Starts a span named `name` under the task's context (a new trace without one).
    pub fn start(name: impl Into<String>, kind: Kind) -> Self {
        let parent = current();
        let recording = sink_installed() && parent.is_none_or(|p| p.sampled);
        if !recording {
            return Self {
                data: None,
                context: parent,
            };
        }
        let context = TraceContext {
            trace_id: parent.map_or_else(random_id, |p| p.trace_id),
            span_id: random_id(),
            sampled: true,
        };
        Self {
            data: Some(Box::new(SpanData {
                context,
                parent: parent.map(|p| p.span_id),
                name: name.into(),
                kind,
                start_ns: now_ns(),
                end_ns: 0,
                attributes: Vec::new(),
                error: None,
            })),
            context: Some(context),
        }
    }

    /// The context for what this span's work calls (its own, or the task's when not
    /// recording).
    pub fn context(&self) -> Option<TraceContext> {
        self.context
    }

    /// Whether it is recorded (attributes are worth computing).
    pub fn recording(&self) -> bool {
        self.data.is_some()
    }

    /// Sets attribute `key`.
    pub fn set(&mut self, key: &'static str, value: impl Into<Value>) {
        if let Some(data) = &mut self.data {
            data.attributes.push((key, value.into()));
        }
    }

    /// Sets attribute `key` to content (a prompt, a reply, tool arguments): only with
    /// `[otel] capture_content`.
    pub fn set_content(&mut self, key: &'static str, text: &str) {
        if self.data.is_some() && capture_content() {
            self.set(key, text);
        }
    }

    /// Marks it failed, saying why.
    pub fn fail(&mut self, error: impl Into<String>) {
        if let Some(data) = &mut self.data {
            data.error = Some(error.into());
        }
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        let Some(mut data) = self.data.take() else {
            return;
        };
        data.end_ns = now_ns().max(data.start_ns);
        let sink = SINK
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(sink) = sink.as_ref()
            && let Err(mpsc::error::TrySendError::Full(_)) = sink.spans.try_send(*data)
        {
            crate::metrics::SPANS_DROPPED.inc(&["queue_full"]);
        }
    }
}

/// Where ended spans go.
struct Sink {
    spans: mpsc::Sender<SpanData>,
    capture_content: bool,
}

static SINK: RwLock<Option<Sink>> = RwLock::new(None);

/// Starts recording spans: ended ones are queued (at most `capacity`; more are dropped and
/// counted) for the returned receiver, the exporter. Replaces an exporter installed before.
pub fn install(capacity: usize, capture_content: bool) -> mpsc::Receiver<SpanData> {
    let (spans, receiver) = mpsc::channel(capacity.max(1));
    *SINK
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Sink {
        spans,
        capture_content,
    });
    receiver
}

/// Stops recording spans.
pub fn uninstall() {
    *SINK
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
}

fn sink_installed() -> bool {
    SINK.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .is_some()
}

fn capture_content() -> bool {
    SINK.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .as_ref()
        .is_some_and(|s| s.capture_content)
}

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// A random id, never all zeroes.
fn random_id<const N: usize>() -> [u8; N] {
    static FALLBACK: Mutex<u64> = Mutex::new(0x9e37_79b9_7f4a_7c15);
    let mut id = [0u8; N];
    if getrandom::fill(&mut id).is_err() || id == [0u8; N] {
        let mut state = FALLBACK
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for byte in &mut id {
            *state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            *byte = (*state >> 33) as u8 | 1;
        }
    }
    id
}

fn hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    if text.len() != N * 2
        || !text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    let mut out = [0u8; N];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(i * 2..i * 2 + 2)?, 16).ok()?;
    }
    Some(out)
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_is_read_and_written_as_w3c_says() {
        let header = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let context = TraceContext::parse(header).unwrap();
        assert!(context.sampled);
        assert_eq!(context.header(), header);
        assert_eq!(context.trace_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert!(
            !TraceContext::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
                .unwrap()
                .sampled
        );
        // A later version's extra fields are allowed; version ff, upper case, zero ids,
        // wrong lengths and extra fields on version 00 are not.
        assert!(
            TraceContext::parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x")
                .is_some()
        );
        for bad in [
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "",
            "garbage",
        ] {
            assert_eq!(TraceContext::parse(bad), None, "{bad}");
        }
    }

    #[tokio::test]
    async fn spans_nest_under_the_task_context_and_a_full_queue_drops_and_counts() {
        // Nothing is recorded without an exporter; the incoming context still passes on.
        let incoming =
            TraceContext::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        scope(incoming, async {
            let span = Span::start("off", Kind::Internal);
            assert!(!span.recording());
            assert_eq!(span.context(), incoming);
        })
        .await;

        let mut spans = install(2, false);
        let dropped = crate::metrics::SPANS_DROPPED.get(&["queue_full"]);
        scope(incoming, async {
            let mut turn = Span::start("turn", Kind::Internal);
            turn.set_content("gen_ai.input.messages", "secret words");
            scope(turn.context(), async {
                let call = Span::start("chat m", Kind::Client);
                assert_eq!(call.context().unwrap().trace_id, incoming.unwrap().trace_id);
            })
            .await;
            drop(turn);
            let _ = Span::start("third", Kind::Internal);
        })
        .await;
        uninstall();
        let call = spans.recv().await.unwrap();
        let turn = spans.recv().await.unwrap();
        assert_eq!(call.name, "chat m");
        assert_eq!(call.parent, Some(turn.context.span_id));
        assert_eq!(turn.parent, Some(incoming.unwrap().span_id));
        assert_eq!(turn.context.trace_id, incoming.unwrap().trace_id);
        assert!(
            turn.attributes.is_empty(),
            "content without capture_content"
        );
        assert!(turn.end_ns >= turn.start_ns);
        assert!(spans.recv().await.is_none(), "the third was dropped");
        assert_eq!(
            crate::metrics::SPANS_DROPPED.get(&["queue_full"]),
            dropped + 1.0
        );
    }
}
