//! Context compaction (OpenClaw semantics; ARCHITECTURE.md §5).
//!
//! Tokens are estimated as chars/4 + 1 per text. When the system prompt, tool specs and
//! messages together exceed `context_window - reserve_tokens` — or the provider answers with a
//! context-overflow error — the older messages are summarised and replaced by one summary that
//! goes into the system prompt; the recent messages stay verbatim.
//!
//! How much stays: `context_window × ratio` tokens, where the ratio is 0.4, lowered (never
//! below 0.15) when the average message, with a 1.2 safety margin, is over a tenth of the
//! window. The cut is always at a user message, so the kept part starts a turn and never
//! separates a tool call from its result; when even the current turn alone is over the share,
//! the cut is at the current turn's message. Summaries are staged: the old part is split in two
//! by token share when it is over a quarter of the window, each part is summarised (messages
//! cut to 1,000 characters each) and the partial summaries are merged. A previous summary is
//! carried into the new one.

use lurkbot_llm::{ChatRequest, Failover, Message, Role, Usage};

use crate::error::AgentError;
use crate::usage::Meter;

/// About what one image costs in a request (a 2,048-pixel image: OpenAI ≈ 1,100 tokens,
/// Anthropic ≤ 1,600).
pub(crate) const IMAGE_TOKENS: u64 = 1_600;

/// Share of the window kept verbatim by default.
pub(crate) const BASE_CHUNK_RATIO: f64 = 0.4;
/// The smallest share kept.
pub(crate) const MIN_CHUNK_RATIO: f64 = 0.15;
/// Estimate buffer.
pub(crate) const SAFETY_MARGIN: f64 = 1.2;
/// Instructions for merging partial summaries.
pub const MERGE_SUMMARIES_INSTRUCTIONS: &str = "Merge these partial summaries into a single cohesive summary. Preserve decisions, TODOs, open questions, and any constraints.";
/// The system prompt of summary requests.
pub const SUMMARIZER_SYSTEM: &str = "You are a conversation summarizer.";
/// Most characters of one message put into a summary request.
const MESSAGE_CHARS: usize = 1000;

/// Estimated tokens of a text.
pub(crate) fn estimate_tokens(text: &str) -> u64 {
    text.chars().count() as u64 / 4 + 1
}

/// Estimated tokens of a message (its text and its tool calls).
pub(crate) fn message_tokens(message: &Message) -> u64 {
    estimate_tokens(&message.content)
        + IMAGE_TOKENS * message.images.len() as u64
        + message
            .tool_calls
            .iter()
            .map(|c| estimate_tokens(&c.name) + estimate_tokens(&c.arguments))
            .sum::<u64>()
}

/// Estimated tokens of messages.
pub(crate) fn messages_tokens(messages: &[Message]) -> u64 {
    messages.iter().map(message_tokens).sum()
}

/// Estimated tokens of a session's context as the next request would carry it (its summary
/// and its messages), characters / 4.
pub fn context_tokens(context: &crate::transcript::Context) -> u64 {
    context.summary.as_deref().map_or(0, estimate_tokens) + messages_tokens(&context.messages)
}

/// The share of the window to keep verbatim.
pub(crate) fn adaptive_chunk_ratio(messages: &[Message], context_window: u64) -> f64 {
    if messages.is_empty() || context_window == 0 {
        return BASE_CHUNK_RATIO;
    }
    let average = messages_tokens(messages) as f64 / messages.len() as f64;
    let ratio = average * SAFETY_MARGIN / context_window as f64;
    if ratio > 0.1 {
        let reduction = (ratio * 2.0).min(BASE_CHUNK_RATIO - MIN_CHUNK_RATIO);
        (BASE_CHUNK_RATIO - reduction).max(MIN_CHUNK_RATIO)
    } else {
        BASE_CHUNK_RATIO
    }
}

/// Where the kept messages start, or `None` when nothing before the current turn could be
/// summarised. After a provider overflow error (`overflowed`) the estimate has proven too
/// low, so only the current turn is kept.
pub(crate) fn cut_point(
    messages: &[Message],
    context_window: u64,
    overflowed: bool,
) -> Option<usize> {
    let target = (context_window as f64 * adaptive_chunk_ratio(messages, context_window)) as u64;
    let starts: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::User)
        .map(|(i, _)| i)
        .collect();
    let last = *starts.last()?;
    let mut cut = last;
    for &start in starts.iter().rev().filter(|_| !overflowed) {
        if messages_tokens(&messages[start..]) > target {
            break;
        }
        cut = start;
    }
    (cut > 0).then_some(cut)
}

/// Splits messages into at most `parts` runs of about equal token share.
pub(crate) fn split_by_token_share(messages: &[Message], parts: usize) -> Vec<&[Message]> {
    if messages.is_empty() {
        return Vec::new();
    }
    let target = messages_tokens(messages) as f64 / parts.max(1) as f64;
    let mut chunks = Vec::new();
    let (mut start, mut tokens) = (0, 0u64);
    for (i, message) in messages.iter().enumerate() {
        let t = message_tokens(message);
        if chunks.len() + 1 < parts && i > start && (tokens + t) as f64 > target {
            chunks.push(&messages[start..i]);
            start = i;
            tokens = 0;
        }
        tokens += t;
    }
    chunks.push(&messages[start..]);
    chunks
}

/// Summarises `old` (and the `previous` summary) with the model, in stages when large. Each
/// request is checked by `meter` before it is sent and recorded after; `run` is the turn's model
/// and usage so far (the summary's tokens are added to it).
///
/// # Errors
/// `Model` when a summary request fails; `BudgetExceeded` when one would pass a cap.
pub(crate) async fn summarize(
    failover: &mut Failover,
    meter: &Meter<'_>,
    run: (&str, &mut Usage),
    previous: Option<&str>,
    old: &[Message],
    context_window: u64,
) -> Result<String, AgentError> {
    let parts = if messages_tokens(old) > context_window / 4 {
        2
    } else {
        1
    };
    let (model, usage) = run;
    let mut partials = Vec::new();
    for (i, chunk) in split_by_token_share(old, parts).into_iter().enumerate() {
        let carried = if i == 0 { previous } else { None };
        let prompt = chunk_prompt(carried, chunk);
        partials.push(ask(failover, meter, model, usage, prompt).await?);
    }
    if partials.len() == 1 {
        return Ok(partials.remove(0));
    }
    let mut prompt = format!("{MERGE_SUMMARIES_INSTRUCTIONS}\n\nSummaries:\n");
    for (i, summary) in partials.iter().enumerate() {
        prompt.push_str(&format!("\n--- Part {} ---\n{summary}\n", i + 1));
    }
    ask(failover, meter, model, usage, prompt).await
}

fn chunk_prompt(previous: Option<&str>, messages: &[Message]) -> String {
    let mut prompt = String::from(
        "Summarize the following conversation, focusing on:\n1. Key decisions made\n2. Important information shared\n3. Unresolved tasks or questions\n4. Context needed for continuing the conversation\n\nBe concise but preserve essential information.\n",
    );
    if let Some(previous) = previous {
        prompt.push_str(&format!("\nSummary of what came before:\n{previous}\n"));
    }
    prompt.push_str("\nConversation:\n");
    for message in messages {
        let role = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        };
        let text: String = message.content.chars().take(MESSAGE_CHARS).collect();
        let cut = if message.content.chars().count() > MESSAGE_CHARS {
            "…"
        } else {
            ""
        };
        prompt.push_str(&format!("\n{role}: {text}{cut}"));
        for call in &message.tool_calls {
            let args: String = call.arguments.chars().take(200).collect();
            prompt.push_str(&format!("\n{role} called {}({args})", call.name));
        }
    }
    prompt
}

async fn ask(
    failover: &mut Failover,
    meter: &Meter<'_>,
    model: &str,
    usage: &mut Usage,
    prompt: String,
) -> Result<String, AgentError> {
    let estimate = estimate_tokens(SUMMARIZER_SYSTEM) + estimate_tokens(&prompt) + 2048;
    let _held = meter.reserve(model, estimate, usage.input_tokens + usage.output_tokens)?;
    let request = ChatRequest {
        model: String::new(),
        system: SUMMARIZER_SYSTEM.to_string(),
        messages: vec![Message::user(prompt)],
        tools: Vec::new(),
        max_tokens: 2048,
        reasoning: None,
    };
    let answered = failover.chat(&request, &mut |_| {}).await?;
    let reply = answered.response;
    meter.record(&answered.model.to_string(), reply.usage, || {
        (estimate - 2048, estimate_tokens(&reply.text))
    });
    usage.input_tokens += reply.usage.input_tokens;
    usage.output_tokens += reply.usage.output_tokens;
    Ok(reply.text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(chars: usize) -> Message {
        Message::user("u".repeat(chars))
    }

    fn assistant(chars: usize) -> Message {
        Message::assistant("a".repeat(chars), Vec::new())
    }

    #[test]
    fn estimates_and_ratio() {
        assert_eq!(estimate_tokens(""), 1);
        assert_eq!(estimate_tokens("abcdefgh"), 3);
        assert_eq!(estimate_tokens("ééééé"), 2);
        // Small messages keep the base ratio.
        assert_eq!(
            adaptive_chunk_ratio(&[user(400)], 100_000),
            BASE_CHUNK_RATIO
        );
        // avg 10,001 tokens × 1.2 / 100,000 = 0.12 → 0.4 - 0.24 = 0.16.
        let r = adaptive_chunk_ratio(&[user(40_000)], 100_000);
        assert!((r - 0.159_976).abs() < 1e-3, "{r}");
        // Huge messages bottom out at the minimum.
        let r = adaptive_chunk_ratio(&[user(400_000)], 100_000);
        assert!((r - MIN_CHUNK_RATIO).abs() < 1e-9, "{r}");
    }

    #[test]
    fn cuts_at_user_messages_within_the_share() {
        // window 13,000 tokens, small messages → keep ≤ 5,200 tokens.
        let messages = vec![
            user(4000),      // 1,001
            assistant(4000), // 1,001
            user(4000),
            assistant(4000),
            user(4000),
            assistant(4000),
        ];
        assert_eq!(cut_point(&messages, 13_000, false), Some(2));
        // Larger messages relative to the window lower the share: only the last turn stays.
        assert_eq!(cut_point(&messages, 10_000, false), Some(4));
        // Only one turn: nothing to summarise.
        assert_eq!(cut_point(&messages[4..], 10_000, false), None);
        // After an overflow error only the current turn stays.
        assert_eq!(cut_point(&messages, 13_000, true), Some(4));
        assert_eq!(cut_point(&messages[4..], 13_000, true), None);
        // The current turn alone is over the share: cut at it anyway.
        let big = vec![user(100), assistant(100), user(100), assistant(40_000)];
        assert_eq!(cut_point(&big, 10_000, false), Some(2));
    }

    #[test]
    fn splits_by_token_share() {
        let messages = vec![user(400), assistant(400), user(400), assistant(400)];
        let parts = split_by_token_share(&messages, 2);
        assert_eq!(parts.iter().map(|p| p.len()).collect::<Vec<_>>(), [2, 2]);
        assert_eq!(split_by_token_share(&messages, 1).len(), 1);
        assert!(split_by_token_share(&[], 2).is_empty());
    }
}
