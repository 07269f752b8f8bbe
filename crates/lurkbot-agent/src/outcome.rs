//! How a turn ended, as its caller sees it (shared by the runner that makes it and the
//! runtimes that wait for it).

use lurkbot_llm::Usage;

/// The end of a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnOutcome {
    /// The final reply text.
    pub text: String,
    /// Model that answered last.
    pub model: String,
    /// Tokens used by the turn.
    pub usage: Usage,
    /// Model steps taken.
    pub steps: usize,
    /// The session id.
    pub session_id: String,
    /// Voice notes `tts` made in the turn (file names under `workspace/audio/`), in order:
    /// a channel sends them with the answer.
    pub voice_notes: Vec<String>,
}
