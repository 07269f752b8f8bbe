//! How a run's end shows on the hub ([`SessionHost::report_end`]); its events as they come are
//! made in `frames.rs`.

use lurkbot_agent::TurnOutcome;

use crate::protocol::{
    self, AgentStream, ChatState, Event, Lifecycle, LifecyclePhase, MethodError,
};
use crate::turns::frames::{agent_event, chat};
use crate::turns::host::SessionHost;

impl SessionHost {
    /// The end of a run on the hub: lifecycle `end` and `chat` `final`, or lifecycle `error`
    /// (when it had started) and `chat` `error`.
    pub(crate) fn report_end(
        &self,
        run_id: &str,
        session: &str,
        started: bool,
        result: &Result<TurnOutcome, MethodError>,
    ) {
        let lifecycle =
            |phase| agent_event(run_id, session, AgentStream::Lifecycle(Lifecycle { phase }));
        match result {
            Ok(done) => {
                self.hub.emit(lifecycle(LifecyclePhase::End));
                self.hub.emit(chat(
                    run_id,
                    session,
                    ChatState::Final {
                        text: done.text.clone(),
                        model: done.model.clone(),
                        usage: done.usage,
                    },
                ));
            }
            Err(e) => {
                if started {
                    self.hub.emit(lifecycle(LifecyclePhase::Error));
                }
                self.hub.emit(chat(
                    run_id,
                    session,
                    ChatState::Error {
                        message: e.message.clone(),
                    },
                ));
                if e.message.starts_with(lurkbot_agent::usage::BUDGET_EXCEEDED) {
                    self.hub
                        .emit(Event::BudgetExceeded(protocol::BudgetExceeded {
                            run_id: run_id.to_string(),
                            session_key: session.to_string(),
                            message: e.message.clone(),
                        }));
                }
            }
        }
    }
}
