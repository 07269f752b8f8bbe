//! A cron job as `cron/jobs.json` holds it (OpenClaw's camelCase shape), and the rules a job
//! must keep: a `systemEvent` payload only on the main session, an `agentTurn` only on its own
//! isolated `cron:<jobId>` session; a valid schedule; an announce delivery names its channel.

use serde::{Deserialize, Serialize};

use super::schedule::{Schedule, ScheduleError};
use crate::gate::Asker;

/// Where a job's run happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SessionTarget {
    /// The agent's main session (payload `systemEvent`).
    Main,
    /// The job's own session `cron:<jobId>` (payload `agentTurn`).
    Isolated,
}

/// When a main-session job wakes the agent (its event is injected at once either way).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WakeMode {
    /// A heartbeat turn runs at once.
    Now,
    /// The next heartbeat sees it (the seed's default).
    #[default]
    NextHeartbeat,
}

/// What a run does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Payload {
    /// A system message appended to the main session.
    #[serde(rename_all = "camelCase")]
    SystemEvent {
        /// The text.
        text: String,
    },
    /// A turn of the agent on the job's own session.
    #[serde(rename_all = "camelCase")]
    AgentTurn {
        /// The turn's message.
        message: String,
        /// A model for this turn (`provider/model`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// A thinking level for this turn.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        thinking: Option<String>,
        /// Longest the turn may take.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_seconds: Option<u64>,
        /// Most tokens one run may use (a run over it ends with `BudgetExceeded`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        budget_tokens: Option<u64>,
    },
}

/// Where a run's result goes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "camelCase")]
pub enum Delivery {
    /// Nowhere beyond the session.
    #[default]
    None,
    /// To a channel (`webchat`, `irc`, `last`, …).
    #[serde(rename_all = "camelCase")]
    Announce {
        /// The channel.
        channel: String,
        /// A recipient on it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        to: Option<String>,
    },
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// It ran.
    Ok,
    /// It failed (see the error).
    Error,
    /// It did not run (e.g. the session was busy).
    Skipped,
}

/// A job's running state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobState {
    /// The next run (none: an `at` that ran, or a disabled job).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_run_at_ms: Option<u64>,
    /// The last run's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run_at_ms: Option<u64>,
    /// The last run's status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_status: Option<RunStatus>,
    /// The last failure's reason (or why the job was disabled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Failures in a row.
    #[serde(default)]
    pub consecutive_errors: u32,
}

/// One job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronJob {
    /// `cron_<hex>`.
    pub id: String,
    /// A name for people.
    pub name: String,
    /// Whether it runs.
    pub enabled: bool,
    /// When it was made.
    pub created_at_ms: u64,
    /// When it last changed.
    pub updated_at_ms: u64,
    /// When it runs.
    pub schedule: Schedule,
    /// Where it runs.
    pub session_target: SessionTarget,
    /// When it wakes the agent (main session only).
    #[serde(default)]
    pub wake_mode: WakeMode,
    /// What it does.
    pub payload: Payload,
    /// Remove it after its first successful run.
    #[serde(default)]
    pub delete_after_run: bool,
    /// Where the result goes.
    #[serde(default)]
    pub delivery: Delivery,
    /// Who made the job (ARCHITECTURE.md §5.1): its runs act with that authority, so a
    /// model's job keeps the model's rules whoever starts it. A job without it is the model's.
    #[serde(default)]
    pub created_by: Asker,
    /// Its running state.
    #[serde(default)]
    pub state: JobState,
}

/// Why a job is refused (nothing is stored then).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JobError {
    /// The schedule is unusable.
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    /// Payload and session do not go together.
    #[error("{0}")]
    Mismatch(&'static str),
    /// A field is empty or too long.
    #[error("{0}")]
    Invalid(String),
}

impl CronJob {
    /// The session a run uses: the main one, or `cron:<jobId>`.
    pub fn session_key(&self) -> String {
        match self.session_target {
            SessionTarget::Main => "agent:main:main".into(),
            SessionTarget::Isolated => format!("cron:{}", self.id),
        }
    }

    /// Checks the job's rules.
    ///
    /// # Errors
    /// What is wrong and how to fix it.
    pub fn validate(&self) -> Result<(), JobError> {
        self.schedule.validate()?;
        match (&self.session_target, &self.payload) {
            (SessionTarget::Main, Payload::SystemEvent { .. })
            | (SessionTarget::Isolated, Payload::AgentTurn { .. }) => {}
            (SessionTarget::Main, Payload::AgentTurn { .. }) => {
                return Err(JobError::Mismatch(
                    "an agent turn (--message) runs on its own isolated session: use --session isolated, or --system-event for the main session",
                ));
            }
            (SessionTarget::Isolated, Payload::SystemEvent { .. }) => {
                return Err(JobError::Mismatch(
                    "a system event (--system-event) goes to the main session: use --session main, or --message for an isolated turn",
                ));
            }
        }
        let text = match &self.payload {
            Payload::SystemEvent { text } => text,
            Payload::AgentTurn { message, .. } => message,
        };
        if text.trim().is_empty() {
            return Err(JobError::Invalid("the job's text is empty".into()));
        }
        if self.name.trim().is_empty() || self.name.chars().count() > 200 {
            return Err(JobError::Invalid(
                "--name must be 1 to 200 characters".into(),
            ));
        }
        if let Delivery::Announce { channel, .. } = &self.delivery
            && channel.trim().is_empty()
        {
            return Err(JobError::Invalid(
                "--announce needs --channel (webchat, last, or a channel such as telegram or irc)"
                    .into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn job(target: SessionTarget, payload: Payload) -> CronJob {
        CronJob {
            id: "cron_1".into(),
            name: "daily".into(),
            enabled: true,
            created_at_ms: 0,
            updated_at_ms: 0,
            schedule: Schedule::Every {
                every_ms: 60_000,
                anchor_ms: 0,
            },
            session_target: target,
            wake_mode: WakeMode::Now,
            payload,
            delete_after_run: false,
            delivery: Delivery::None,
            created_by: Asker::Model,
            state: JobState::default(),
        }
    }

    #[test]
    fn payloads_go_only_with_their_session() {
        let event = Payload::SystemEvent { text: "t".into() };
        let turn = Payload::AgentTurn {
            message: "m".into(),
            model: None,
            thinking: None,
            timeout_seconds: None,
            budget_tokens: None,
        };
        assert!(job(SessionTarget::Main, event.clone()).validate().is_ok());
        assert!(
            job(SessionTarget::Isolated, turn.clone())
                .validate()
                .is_ok()
        );
        assert!(matches!(
            job(SessionTarget::Main, turn).validate(),
            Err(JobError::Mismatch(_))
        ));
        assert!(matches!(
            job(SessionTarget::Isolated, event).validate(),
            Err(JobError::Mismatch(_))
        ));
        let mut isolated = job(
            SessionTarget::Isolated,
            Payload::AgentTurn {
                message: "m".into(),
                model: None,
                thinking: None,
                timeout_seconds: Some(60),
                budget_tokens: None,
            },
        );
        assert_eq!(isolated.session_key(), "cron:cron_1");
        isolated.delivery = Delivery::Announce {
            channel: " ".into(),
            to: None,
        };
        assert!(isolated.validate().is_err());
    }

    #[test]
    fn the_json_is_openclaws_shape() {
        let j = job(
            SessionTarget::Main,
            Payload::SystemEvent { text: "hi".into() },
        );
        let v = serde_json::to_value(&j).unwrap();
        assert_eq!(v["sessionTarget"], "main");
        assert_eq!(v["wakeMode"], "now");
        assert_eq!(
            v["payload"],
            serde_json::json!({"kind": "systemEvent", "text": "hi"})
        );
        assert_eq!(v["delivery"], serde_json::json!({"mode": "none"}));
        assert_eq!(v["state"], serde_json::json!({"consecutiveErrors": 0}));
        let back: CronJob = serde_json::from_value(v).unwrap();
        assert_eq!(back, j);
    }
}
