//! One small call that tells whether a model answers (`doctor`'s model check and `setup`'s):
//! a one-word request, at most a timeout long.

use std::time::Duration;

use lurkbot_llm::{ChatRequest, Failover, Message};

/// Why the model did not answer.
pub(crate) enum NoAnswer {
    /// The call failed (its error, in words).
    Failed(String),
    /// Nothing came within the timeout.
    TimedOut,
}

/// Asks `failover`'s model for one word; the model that answered.
pub(crate) fn one_word(failover: &mut Failover, timeout: Duration) -> Result<String, NoAnswer> {
    let request = ChatRequest {
        model: String::new(),
        system: "Answer with one word.".into(),
        messages: vec![Message::user("Say OK.")],
        tools: Vec::new(),
        max_tokens: 8,
        reasoning: None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| NoAnswer::Failed(e.to_string()))?;
    match runtime.block_on(async {
        tokio::time::timeout(timeout, failover.chat(&request, &mut |_| {})).await
    }) {
        Ok(Ok(answered)) => Ok(answered.model.to_string()),
        Ok(Err(e)) => Err(NoAnswer::Failed(e.to_string())),
        Err(_) => Err(NoAnswer::TimedOut),
    }
}
