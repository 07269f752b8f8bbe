//! Messages written to a session's transcript outside a turn: a cancellation marker, a cron
//! job's system event, a message delivered to the web UI's main session.

use lurkbot_core::{Home, SessionKey};
use lurkbot_llm::Message;

use crate::error::AgentError;
use crate::transcript::{Entry, Sessions};

/// Records in `session`'s transcript that its running turn was cancelled (see
/// `Agent::cancelled`).
///
/// # Errors
/// Store failures.
pub fn record_cancelled(home: &Home, session: &SessionKey) -> Result<(), AgentError> {
    append_assistant(home, session, "[the user cancelled this turn]")
}

/// Appends an assistant message to `session`'s transcript outside a turn (a cancellation
/// marker, a message delivered to the web UI's session).
///
/// # Errors
/// Store failures.
pub(crate) fn append_assistant(
    home: &Home,
    session: &SessionKey,
    text: &str,
) -> Result<(), AgentError> {
    let sessions = Sessions::open(home, session.agent_id());
    let entry = sessions.get_or_create(session)?;
    sessions.append(
        &entry.session_id,
        &[Entry::message(Message::assistant(text, Vec::new()))],
    )
}

/// Appends a user-role message to `session`'s transcript outside a turn (a cron job's system
/// event, injected without a model call).
///
/// # Errors
/// Store failures.
pub(crate) fn append_user_message(
    home: &Home,
    session: &SessionKey,
    text: &str,
) -> Result<(), AgentError> {
    let sessions = Sessions::open(home, session.agent_id());
    let entry = sessions.get_or_create(session)?;
    sessions.append(&entry.session_id, &[Entry::message(Message::user(text))])
}

/// Appends `text` to `session` as a user-role message outside a turn (the caller waits until
/// no turn runs there: [`crate::Runtime::inject`]).
///
/// # Errors
/// The store failing.
pub fn append_user(home: &Home, session: &SessionKey, text: &str) -> Result<(), String> {
    append_user_message(home, session, text).map_err(|e| e.to_string())
}

/// Appends `text` to the main session as an assistant message (what the web UI shows).
///
/// # Errors
/// The store failing.
pub fn append_to_main(home: &Home, text: &str) -> Result<(), String> {
    append_assistant(home, &SessionKey::main(), text).map_err(|e| e.to_string())
}
