//! Auth-profile rotation, cooldown and model failover (OpenClaw semantics).
//!
//! For each model in order (the primary, then `agent.fallbacks`), each of its provider's
//! profiles that is not cooling down is tried. An auth, rate-limit or overload failure puts the
//! profile on cooldown for `min(1 h, 60 s × 5^(n−1))` after its n-th consecutive failure and
//! moves on; a success clears its count. Network failures and 5xx are retried on the same
//! profile with jittered exponential back-off (250 ms × 2^attempt, two retries) as long as
//! nothing was streamed yet. A context overflow or a bad request stops at once: the caller
//! compacts or reports. Cooldowns are persisted (`auth/profiles.json`, profile names only) so
//! they survive restarts.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{ErrorKind, LlmError};
use crate::provider::{Endpoint, ModelRef, ProviderKind};
use crate::types::{ChatRequest, ChatResponse, StreamEvent};

/// Retries of a transient failure on one profile.
const TRANSIENT_RETRIES: u32 = 2;

/// The cooldown after the n-th consecutive failure (n ≥ 1), in ms.
pub fn cooldown_ms(failures: u32) -> u64 {
    let exponent = failures.saturating_sub(1).min(10);
    (60_000u64.saturating_mul(5u64.saturating_pow(exponent))).min(3_600_000)
}

/// Usage state of one profile.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileState {
    /// Consecutive failures.
    pub failures: u32,
    /// Not used before this time (ms since the epoch).
    pub cooldown_until_ms: u64,
    /// Last success (ms since the epoch).
    pub last_good_ms: u64,
}

/// Models, their endpoints and the profiles' state.
pub struct Failover {
    models: Vec<ModelRef>,
    endpoints: BTreeMap<ProviderKind, Endpoint>,
    state: BTreeMap<String, ProfileState>,
    state_path: Option<PathBuf>,
    http: reqwest::Client,
    clock: fn() -> u64,
}

/// A successful answer and the model that gave it.
#[derive(Debug, Clone)]
pub struct Answered {
    /// The reply.
    pub response: ChatResponse,
    /// Which model answered.
    pub model: ModelRef,
}

impl Failover {
    /// Models in order of preference with their endpoints; `state_path` persists cooldowns.
    ///
    /// # Errors
    /// `NotConfigured` when `models` is empty, `Protocol` when the HTTP client cannot be made.
    pub fn new(
        models: Vec<ModelRef>,
        lookup: &dyn Fn(&str) -> Option<String>,
        state_path: Option<PathBuf>,
    ) -> Result<Self, LlmError> {
        if models.is_empty() {
            return Err(LlmError::new(
                ErrorKind::NotConfigured,
                "no model is configured",
            ));
        }
        let endpoints = models
            .iter()
            .map(|m| (m.provider, Endpoint::from_vars(m.provider, lookup)))
            .collect();
        let state = state_path
            .as_ref()
            .and_then(|p| std::fs::read(p).ok())
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        Ok(Self {
            models,
            endpoints,
            state,
            state_path,
            http: crate::http::client()?,
            clock: || lurkbot_core::now_ms(),
        })
    }

    /// Uses `clock` instead of the system clock (tests of the cooldown maths).
    pub fn with_clock(mut self, clock: fn() -> u64) -> Self {
        self.clock = clock;
        self
    }

    /// The primary model.
    pub fn primary(&self) -> &ModelRef {
        &self.models[0]
    }

    /// The state of every profile used so far, by `provider:PROFILE`.
    pub fn state(&self) -> &BTreeMap<String, ProfileState> {
        &self.state
    }

    /// Runs `request` (its `model` is set per attempt) through the models and profiles.
    ///
    /// # Errors
    /// The last failure when every model and profile failed or was cooling down; a context
    /// overflow or bad request at once.
    pub async fn chat(
        &mut self,
        request: &ChatRequest,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<Answered, LlmError> {
        let mut last: Option<LlmError> = None;
        for model in self.models.clone() {
            let Some(endpoint) = self.endpoints.get(&model.provider).cloned() else {
                continue;
            };
            let mut request = request.clone();
            request.model.clone_from(&model.model);
            for profile in &endpoint.profiles {
                let id = format!("{}:{}", model.provider.name(), profile.name);
                let now = (self.clock)();
                if self
                    .state
                    .get(&id)
                    .is_some_and(|s| s.cooldown_until_ms > now)
                {
                    continue;
                }
                let mut attempt = 0;
                loop {
                    let mut streamed = false;
                    let mut forward = |event: StreamEvent| {
                        streamed = true;
                        on_event(event);
                    };
                    let started = std::time::Instant::now();
                    let mut span = call_span(&model);
                    let answer = lurkbot_core::trace::scope(
                        span.context(),
                        endpoint.chat(&self.http, profile, &request, &mut forward),
                    )
                    .await;
                    count_call(&model, started, &answer);
                    end_call_span(&mut span, &answer);
                    match answer {
                        Ok(response) => {
                            self.record(&id, true);
                            return Ok(Answered { response, model });
                        }
                        Err(e)
                            if e.is_retryable()
                                && !e.rotates_profile()
                                && !streamed
                                && attempt < TRANSIENT_RETRIES =>
                        {
                            attempt += 1;
                            tokio::time::sleep(backoff(attempt)).await;
                        }
                        Err(e) if e.rotates_profile() && !streamed => {
                            tracing::warn!(profile = id.as_str(), model = model.model.as_str(), error = %e, "model failed; trying the next profile or model");
                            self.record(&id, false);
                            last = Some(e);
                            break;
                        }
                        Err(e) if matches!(e.kind, ErrorKind::Transient) && !streamed => {
                            tracing::warn!(profile = id.as_str(), model = model.model.as_str(), error = %e, "model failed; trying the next profile or model");
                            last = Some(e);
                            break;
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        Err(last.unwrap_or_else(|| {
            let now = (self.clock)();
            let next = self
                .state
                .values()
                .map(|s| s.cooldown_until_ms)
                .filter(|&t| t > now)
                .min()
                .map(|t| t.saturating_sub(now).div_ceil(1000))
                .unwrap_or_default();
            let mut e = LlmError::new(
                ErrorKind::RateLimited,
                format!(
                    "every auth profile is cooling down; the first is usable again in {next} s"
                ),
            );
            e.retry_after_ms = Some(next * 1000);
            e
        }))
    }

    fn record(&mut self, id: &str, good: bool) {
        let now = (self.clock)();
        let state = self.state.entry(id.to_string()).or_default();
        let before = (state.failures, state.cooldown_until_ms);
        if good {
            state.failures = 0;
            state.cooldown_until_ms = 0;
            state.last_good_ms = now;
        } else {
            state.failures = state.failures.saturating_add(1);
            state.cooldown_until_ms = now.saturating_add(cooldown_ms(state.failures));
        }
        // Persist only when the cooldown state changed: a success after a success costs no
        // disk write on the agent loop's path.
        if before == (state.failures, state.cooldown_until_ms) {
            return;
        }
        if let Some(path) = &self.state_path
            && let Ok(bytes) = serde_json::to_vec_pretty(&self.state)
        {
            if let Some(dir) = path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            // Losing a cooldown record only costs one extra failed request later.
            let _ = lurkbot_core::write_atomic(path, &bytes);
        }
    }
}

/// Jittered exponential back-off: 250 ms × 2^(attempt−1), ±25 %.
fn backoff(attempt: u32) -> Duration {
    let base = 250u64.saturating_mul(1 << attempt.saturating_sub(1).min(6));
    // Within ±25 % of the base, both ends rounded inwards (250 ms: 188..=312).
    let (low, high) = (base - base / 4, base + base / 4);
    let jitter =
        u64::from_str_radix(&lurkbot_core::random_hex(2), 16).unwrap_or(128) % (high - low + 1);
    Duration::from_millis(low + jitter)
}

/// A model call's span, with the OpenTelemetry GenAI attributes (ARCHITECTURE.md §6.4).
fn call_span(model: &ModelRef) -> lurkbot_core::trace::Span {
    use lurkbot_core::trace::{Kind, Span};
    let mut span = Span::start(format!("chat {}", model.model), Kind::Client);
    if span.recording() {
        span.set("gen_ai.operation.name", "chat");
        span.set("gen_ai.provider.name", model.provider.name());
        span.set("gen_ai.request.model", model.model.as_str());
    }
    span
}

/// What a model call's span records of its answer: the tokens (and, with `capture_content`,
/// the reply), or the failure.
fn end_call_span(span: &mut lurkbot_core::trace::Span, answer: &Result<ChatResponse, LlmError>) {
    match answer {
        Ok(response) => {
            span.set("gen_ai.usage.input_tokens", response.usage.input_tokens);
            span.set("gen_ai.usage.output_tokens", response.usage.output_tokens);
            span.set_content("gen_ai.output.messages", &response.text);
        }
        Err(e) => {
            span.set("error.type", e.kind.name());
            span.fail(e.message.clone());
        }
    }
}

/// Counts one model call in the metrics (ARCHITECTURE.md §6.4): by provider, model and
/// outcome, and its duration.
fn count_call(
    model: &ModelRef,
    started: std::time::Instant,
    answer: &Result<ChatResponse, LlmError>,
) {
    use lurkbot_core::metrics::{MODEL_CALL_SECONDS, MODEL_CALLS};
    let (provider, name) = (model.provider.name(), model.model.as_str());
    let outcome = match answer {
        Ok(_) => "ok",
        Err(e) => e.kind.name(),
    };
    MODEL_CALLS.inc(&[provider, name, outcome]);
    MODEL_CALL_SECONDS.observe(&[provider, name], started.elapsed().as_secs_f64());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cooldown_maths() {
        assert_eq!(cooldown_ms(1), 60_000);
        assert_eq!(cooldown_ms(2), 300_000);
        assert_eq!(cooldown_ms(3), 1_500_000);
        assert_eq!(cooldown_ms(4), 3_600_000);
        assert_eq!(cooldown_ms(40), 3_600_000);
    }

    #[test]
    fn backoff_stays_near_its_base() {
        // The jitter is random: enough draws that a bound off by one (as it once was, 313 ms
        // for a 250 ms base, one draw in 126) fails here every run, not one run in forty.
        for attempt in 1..=3 {
            let base = 250u128 << (attempt - 1);
            for _ in 0..2_000 {
                let d = backoff(attempt).as_millis();
                assert!(d >= base * 3 / 4 && d <= base * 5 / 4, "{attempt}: {d}");
            }
        }
    }
}
