//! Every metric family LurkBot records (ARCHITECTURE.md §6.4; each described in the README's
//! "Metrics"). Label values come from fixed sets or from names in the settings.

use super::{DURATION_BUCKETS, Family};

/// Turns run, by where they came from (`api`, `webchat`, a channel, `cron`, `hook`,
/// `subagent`) and how they ended (`ok`, `error`, `budget`).
pub static TURNS: Family = Family::counter(
    "lurkbot_turns_total",
    "Turns run, by source and outcome.",
    &["source", "outcome"],
);

/// How long turns took, by source.
pub static TURN_SECONDS: Family = Family::histogram(
    "lurkbot_turn_duration_seconds",
    "How long a turn took, from its message to its reply.",
    &["source"],
    DURATION_BUCKETS,
);

/// Model calls (each attempt of the failover), by provider, model and outcome (`ok` or the
/// error's kind).
pub static MODEL_CALLS: Family = Family::counter(
    "lurkbot_model_calls_total",
    "Model calls, by provider, model and outcome.",
    &["provider", "model", "outcome"],
);

/// How long model calls took.
pub static MODEL_CALL_SECONDS: Family = Family::histogram(
    "lurkbot_model_call_duration_seconds",
    "How long a model call took, to its last streamed token.",
    &["provider", "model"],
    DURATION_BUCKETS,
);

/// Tokens of answered model calls, by direction (`input`, `output`).
pub static MODEL_TOKENS: Family = Family::counter(
    "lurkbot_model_tokens_total",
    "Tokens of answered model calls, by provider, model and direction.",
    &["provider", "model", "direction"],
);

/// What answered model calls cost (models with prices in `[models]`).
pub static MODEL_COST: Family = Family::counter(
    "lurkbot_model_cost_usd_total",
    "US dollars of answered model calls (models priced in [models]).",
    &["provider", "model"],
);

/// Tool calls, by tool and outcome (`ok`, `error`, `denied`).
pub static TOOL_CALLS: Family = Family::counter(
    "lurkbot_tool_calls_total",
    "Tool calls, by tool and outcome.",
    &["tool", "outcome"],
);

/// How long tool calls took.
pub static TOOL_CALL_SECONDS: Family = Family::histogram(
    "lurkbot_tool_call_duration_seconds",
    "How long a tool call took.",
    &["tool"],
    DURATION_BUCKETS,
);

/// The gate's decisions on acts that leave the home, by act and verdict.
pub static GATE_DECISIONS: Family = Family::counter(
    "lurkbot_gate_decisions_total",
    "The gate's decisions, by act and verdict (allow, approve, approve_each, refuse).",
    &["act", "verdict"],
);

/// Approvals asked of a human, by outcome (`allow-once`, `allow-always`, `deny`: nobody
/// answering in time denies).
pub static APPROVALS: Family = Family::counter(
    "lurkbot_approvals_total",
    "Approvals asked of a human, by outcome.",
    &["outcome"],
);

/// How long approvals waited for their answer.
pub static APPROVAL_WAIT_SECONDS: Family = Family::histogram(
    "lurkbot_approval_wait_duration_seconds",
    "How long an approval waited for its answer.",
    &[],
    DURATION_BUCKETS,
);

/// Channel messages, by channel and direction (`in`, `out`, `retried`, `failed`).
pub static CHANNEL_MESSAGES: Family = Family::counter(
    "lurkbot_channel_messages_total",
    "Channel messages, by channel and direction (in, out, retried, failed).",
    &["channel", "direction"],
);

/// A channel's receives that failed and were tried again (its connection made anew), by
/// channel and reason: `stale` (its liveness check found the connection dead), `error`,
/// `rate_limited`, `failed` (refused for good; tried again slowly).
pub static CHANNEL_RECONNECTS: Family = Family::counter(
    "lurkbot_channel_reconnects_total",
    "Channel receives that failed and were tried again, by channel and reason (stale, error, rate_limited, failed).",
    &["channel", "reason"],
);

/// Model calls refused by a budget, by the cap (`daily_tokens`, `monthly_usd`, …).
pub static BUDGET_REFUSALS: Family = Family::counter(
    "lurkbot_budget_refusals_total",
    "Model calls refused by a budget, by cap.",
    &["cap"],
);

/// Trace spans the exporter could not send (its queue full, or the collector failing).
pub static SPANS_DROPPED: Family = Family::counter(
    "lurkbot_trace_spans_dropped_total",
    "Trace spans dropped: the export queue was full or the collector failed.",
    &["reason"],
);

/// Every family, in the order `/metrics` writes them.
pub static FAMILIES: &[&Family] = &[
    &TURNS,
    &TURN_SECONDS,
    &MODEL_CALLS,
    &MODEL_CALL_SECONDS,
    &MODEL_TOKENS,
    &MODEL_COST,
    &TOOL_CALLS,
    &TOOL_CALL_SECONDS,
    &GATE_DECISIONS,
    &APPROVALS,
    &APPROVAL_WAIT_SECONDS,
    &CHANNEL_MESSAGES,
    &CHANNEL_RECONNECTS,
    &BUDGET_REFUSALS,
    &SPANS_DROPPED,
];
