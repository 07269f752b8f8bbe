//! OTLP/HTTP export of the gateway's spans (ARCHITECTURE.md §6.4): where `[otel] endpoint` or
//! the standard `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the
//! environment, then the home's `.env`) point, spans ended by turns, model calls, tool calls,
//! gate decisions and deliveries are sent as protobuf `ExportTraceServiceRequest`s (with the
//! headers of `OTEL_EXPORTER_OTLP_HEADERS`, a collector's credentials), in batches
//! of up to [`BATCH`], as they come. A span never waits for the collector: the queue holds
//! [`QUEUE`] spans and drops (and counts) past that; a batch the collector refuses or does not
//! take within [`TIMEOUT`] is dropped and counted too. The endpoint is the owner's setting (a
//! model changes no `otel` key: `gate::settings`), like a provider's base URL.

use std::time::Duration;

use lurkbot_core::metrics::SPANS_DROPPED;
use lurkbot_core::trace::{self, Resource, SpanData, encode_request};
use lurkbot_core::{Config, Home};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Spans waiting for the exporter at most.
pub const QUEUE: usize = 2048;
/// Spans in one request at most.
pub const BATCH: usize = 512;
/// How long one export may take.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// Where traces go and as whom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The OTLP/HTTP traces URL (`…/v1/traces`).
    pub url: String,
    /// `service.name`.
    pub service_name: String,
    /// Sent with every export (a collector's credentials): marked sensitive, so no `Debug`,
    /// log line or error shows a value.
    pub headers: HeaderMap,
}

/// The traces' target for `home` with `config`: the standard variables win over `[otel]`;
/// `OTEL_SDK_DISABLED=true` turns traces off. `None`: no traces.
pub fn target(home: &Home, config: &Config) -> Option<Target> {
    let vars = lurkbot_agent::setup::variables(home);
    let set = |name: &str| vars(name).filter(|v| !v.trim().is_empty());
    if set("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return None;
    }
    let url = match set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
        Some(url) => url.trim().to_string(),
        None => {
            let base = set("OTEL_EXPORTER_OTLP_ENDPOINT").or_else(|| {
                config
                    .otel
                    .endpoint
                    .clone()
                    .filter(|e| !e.trim().is_empty())
            })?;
            format!("{}/v1/traces", base.trim().trim_end_matches('/'))
        }
    };
    let service_name = set("OTEL_SERVICE_NAME")
        .or_else(|| config.otel.service_name.clone())
        .map_or_else(|| "lurkbot".to_string(), |s| s.trim().to_string());
    let headers = set("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
        .or_else(|| set("OTEL_EXPORTER_OTLP_HEADERS"))
        .map(|text| headers(&text))
        .unwrap_or_default();
    Some(Target {
        url,
        service_name,
        headers,
    })
}

/// The headers of `OTEL_EXPORTER_OTLP_HEADERS` as the OTLP exporter specification writes them:
/// `name=value` pairs separated by commas, each value percent-encoded
/// (`Authorization=Bearer%20abc,x-team=house`). A pair that is not one (no `=`, a name or
/// value HTTP refuses) is left out with a warning naming its place in the list, never its text.
fn headers(text: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for (index, pair) in text.split(',').enumerate() {
        if pair.trim().is_empty() {
            continue;
        }
        let parsed = pair.split_once('=').and_then(|(name, value)| {
            let name = HeaderName::from_bytes(name.trim().as_bytes()).ok()?;
            let value = percent_encoding::percent_decode_str(value.trim())
                .decode_utf8()
                .ok()?;
            let mut value = HeaderValue::from_str(&value).ok()?;
            value.set_sensitive(true);
            Some((name, value))
        });
        match parsed {
            Some((name, value)) => {
                headers.append(name, value);
            }
            None => tracing::warn!(
                pair = index + 1,
                "OTEL_EXPORTER_OTLP_HEADERS: a pair is not name=value with a percent-encoded \
                 value; it is left out"
            ),
        }
    }
    headers
}

/// Starts exporting to `target` as gateway `instance` (spans are recorded from now on).
pub fn start(target: Target, capture_content: bool, instance: Option<String>) -> JoinHandle<()> {
    let spans = trace::install(QUEUE, capture_content);
    tracing::info!(
        url = shown_url(&target.url),
        service = target.service_name.as_str(),
        "traces exported"
    );
    let resource = Resource {
        service_name: target.service_name,
        instance,
    };
    tokio::spawn(export(spans, target.url, target.headers, resource))
}

/// Stops recording spans; the exporter sends what is queued, then ends.
pub async fn stop(exporter: JoinHandle<()>) {
    trace::uninstall();
    if tokio::time::timeout(TIMEOUT, exporter).await.is_err() {
        tracing::warn!("traces not all exported before the stop");
    }
}

async fn export(
    mut spans: mpsc::Receiver<SpanData>,
    url: String,
    headers: HeaderMap,
    resource: Resource,
) {
    let client = match lurkbot_term::http_client_builder()
        .user_agent(concat!("LurkBot/", env!("CARGO_PKG_VERSION")))
        .default_headers(headers)
        .timeout(TIMEOUT)
        .build()
    {
        Ok(client) => client,
        Err(e) => {
            tracing::error!(error = %e, "traces not exported: no HTTP client");
            return;
        }
    };
    let mut last_warning: Option<std::time::Instant> = None;
    while let Some(first) = spans.recv().await {
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match spans.try_recv() {
                Ok(span) => batch.push(span),
                Err(_) => break,
            }
        }
        let body = encode_request(&resource, &batch);
        let sent = client
            .post(&url)
            .header(reqwest::header::CONTENT_TYPE, "application/x-protobuf")
            .body(body)
            .send()
            .await;
        let failure = match sent {
            Ok(response) if response.status().is_success() => None,
            Ok(response) => Some(format!("the collector answered {}", response.status())),
            Err(e) => Some(lurkbot_term::root_cause(&e)),
        };
        if let Some(failure) = failure {
            SPANS_DROPPED.add(&["export_failed"], batch.len() as f64);
            // One warning a minute at most: a collector that is down must not flood the log.
            if last_warning.is_none_or(|at| at.elapsed() > Duration::from_secs(60)) {
                last_warning = Some(std::time::Instant::now());
                tracing::warn!(
                    url = shown_url(&url),
                    spans = batch.len(),
                    error = failure.as_str(),
                    "traces not exported (dropped and counted)"
                );
            }
        }
    }
}

/// The URL without what may carry a credential (userinfo, query).
fn shown_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.set_query(None);
            parsed.to_string()
        }
        Err(_) => "(not a URL)".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The standard variables (here from the home's `.env`) win over `[otel]`, the traces
    /// endpoint is used as it is, the base one gets `/v1/traces`, and `OTEL_SDK_DISABLED`
    /// turns traces off.
    #[test]
    fn the_standard_variables_choose_the_target() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::open(dir.path()).unwrap();
        let mut config = Config::default();
        let with_env = |text: &str| std::fs::write(dir.path().join(".env"), text).unwrap();
        with_env("");
        assert_eq!(target(&home, &config), None, "nothing set: no traces");
        config.otel.endpoint = Some("http://collector:4318/".into());
        config.otel.service_name = Some("house".into());
        assert_eq!(
            target(&home, &config),
            Some(Target {
                url: "http://collector:4318/v1/traces".into(),
                service_name: "house".into(),
                headers: HeaderMap::new(),
            })
        );
        with_env("OTEL_EXPORTER_OTLP_ENDPOINT=http://other:4318\nOTEL_SERVICE_NAME=svc\n");
        assert_eq!(
            target(&home, &config),
            Some(Target {
                url: "http://other:4318/v1/traces".into(),
                service_name: "svc".into(),
                headers: HeaderMap::new(),
            })
        );
        with_env(
            "OTEL_EXPORTER_OTLP_ENDPOINT=http://other:4318\nOTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://t:1/custom\n",
        );
        assert_eq!(target(&home, &config).unwrap().url, "http://t:1/custom");
        with_env("OTEL_SDK_DISABLED=true\n");
        assert_eq!(target(&home, &config), None);
    }

    /// `OTEL_EXPORTER_OTLP_HEADERS` as the specification writes it: values percent-decoded,
    /// the traces-only variable first, a malformed pair left out, and no value in `Debug`.
    #[test]
    fn the_standard_headers_variables_are_read_and_kept_secret() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::open(dir.path()).unwrap();
        let mut config = Config::default();
        config.otel.endpoint = Some("http://collector:4318".into());
        std::fs::write(
            dir.path().join(".env"),
            "OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20s3cret%2C1, x-team = house ,\
             no-equals-sign,bad name=1,x-empty=\n",
        )
        .unwrap();
        let target = target(&home, &config).unwrap();
        assert_eq!(target.headers["authorization"], "Bearer s3cret,1");
        assert_eq!(target.headers["x-team"], "house");
        assert_eq!(target.headers["x-empty"], "");
        assert_eq!(target.headers.len(), 3, "{:?}", target.headers.keys());
        assert!(target.headers["authorization"].is_sensitive());
        assert!(!format!("{target:?}").contains("s3cret"));

        std::fs::write(
            dir.path().join(".env"),
            "OTEL_EXPORTER_OTLP_HEADERS=x-team=house\nOTEL_EXPORTER_OTLP_TRACES_HEADERS=x-traces=1\n",
        )
        .unwrap();
        let target = super::target(&home, &config).unwrap();
        assert_eq!(target.headers.len(), 1);
        assert_eq!(target.headers["x-traces"], "1");
    }

    #[test]
    fn a_shown_url_carries_no_credential() {
        assert_eq!(
            shown_url("https://user:secret@collector:4318/v1/traces?token=x"),
            "https://collector:4318/v1/traces"
        );
    }
}
