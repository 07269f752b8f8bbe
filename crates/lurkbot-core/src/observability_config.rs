//! `[metrics]` and `[otel]`: what the gateway shows of its work to Prometheus and to an
//! OpenTelemetry collector (ARCHITECTURE.md §6.4).

use serde::{Deserialize, Serialize};

/// `[metrics]` settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct MetricsConfig {
    /// A loopback address (`127.0.0.1:9464`) serving `/metrics` without the token, for a
    /// Prometheus on this machine. Unset: `/metrics` is served on the gateway's port, to the
    /// gateway token only.
    pub listen: Option<String>,
}

/// `[otel]` settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct OtelConfig {
    /// Where traces go: an OTLP/HTTP endpoint (`http://127.0.0.1:4318`; `/v1/traces` is added).
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, used as it is)
    /// in the environment or the home's `.env` wins. Unset everywhere: no traces.
    pub endpoint: Option<String>,
    /// The service's name in the traces (`OTEL_SERVICE_NAME` wins); `lurkbot` when unset.
    pub service_name: Option<String>,
    /// Export prompts, replies and tool arguments in the spans too. Off: they never leave.
    pub capture_content: bool,
}
