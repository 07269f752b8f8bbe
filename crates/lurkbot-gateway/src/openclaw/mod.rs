//! OpenClaw's dialect of the protocol (versions 3 and 4), spoken on the same socket as
//! LurkBot's own when a client's `connect` asks for it, so OpenClaw's CLI, TUI and Control UI
//! work against LurkBot. Its `hello-ok` carries a snapshot of the gateway ([`hello`]), its
//! events are reshaped per connection ([`Shaper`]), and its methods answer with OpenClaw's
//! payload shapes from one table, [`METHODS`], the way [`crate::methods`] does for LurkBot's.
//! Where the shapes are the same (cron, terminal.exec, logs.tail) the handler is LurkBot's.
//!
//! Errors follow OpenClaw's gateway: an unknown method is `INVALID_REQUEST` "unknown method:
//! NAME" (its clients test for that message to fall back), a scope the connection lacks is
//! `FORBIDDEN` "missing scope: NAME", a wrong token is `INVALID_REQUEST` "unauthorized: …".

mod catalog;
mod events;
mod hello;
mod runs;
mod sessions;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use serde_json::Value;

pub(crate) use events::Shaper;
pub(crate) use hello::{health, hello, presence};

use crate::protocol::{ErrorCode, Grants, MethodError, Scope, method};
use crate::state::AppState;

/// What a method may know of its connection.
#[derive(Clone)]
pub(crate) struct Conn {
    /// Its scopes.
    pub(crate) grants: Grants,
    /// Set by `sessions.subscribe`: the connection receives `sessions.changed` and
    /// `session.message`.
    pub(crate) subscribed: Arc<AtomicBool>,
    /// Sends a response before the final one (`agent`'s `accepted`).
    pub(crate) interim: Arc<dyn Fn(Value) + Send + Sync>,
}

/// A method's future.
type Reply<'a> = Pin<Box<dyn Future<Output = Result<Value, MethodError>> + Send + 'a>>;

/// One OpenClaw method: its wire name, the scope it needs, its handler.
pub(crate) struct Method {
    /// The wire name.
    pub(crate) name: &'static str,
    /// What a connection needs to call it.
    pub(crate) scope: Scope,
    /// Answers the request's `params`.
    pub(crate) handler: for<'a> fn(&'a AppState, &'a Conn, &'a Value) -> Reply<'a>,
}

/// A LurkBot method whose shape OpenClaw's clients accept as it is.
macro_rules! same {
    ($name:expr, $scope:expr) => {
        Method {
            name: $name,
            scope: $scope,
            handler: |s, c, p| Box::pin(crate::methods::call(s, &c.grants, $name, p)),
        }
    };
}

/// Every method answered on protocol 3–4; `hello-ok` advertises exactly these names.
pub(crate) const METHODS: &[Method] = &[
    Method {
        name: method::HEALTH,
        scope: Scope::Read,
        handler: |s, _, _| Box::pin(async { Ok(health(s)) }),
    },
    Method {
        name: method::STATUS,
        scope: Scope::Read,
        handler: |s, _, _| Box::pin(async { Ok(catalog::status(s)) }),
    },
    Method {
        name: "system-presence",
        scope: Scope::Read,
        handler: |s, _, _| Box::pin(async { Ok(presence(s).into()) }),
    },
    Method {
        name: "config.get",
        scope: Scope::Read,
        handler: |s, _, _| Box::pin(async { catalog::config_get(s) }),
    },
    same!(method::LOGS_TAIL, Scope::Read),
    same!("device.pair.list", Scope::Pairing),
    same!("device.pair.approve", Scope::Pairing),
    same!("device.pair.reject", Scope::Pairing),
    same!("node.list", Scope::Read),
    same!("node.describe", Scope::Read),
    same!("node.invoke", Scope::Write),
    Method {
        name: method::AGENT,
        scope: Scope::Write,
        handler: |s, c, p| Box::pin(runs::agent(&s.host, c, p)),
    },
    Method {
        name: method::AGENT_WAIT,
        scope: Scope::Read,
        handler: |s, _, p| Box::pin(runs::wait(&s.host, p)),
    },
    Method {
        name: method::CHAT_SEND,
        scope: Scope::Write,
        handler: |s, _, p| Box::pin(async { runs::chat_send(&s.host, p) }),
    },
    Method {
        name: method::CHAT_HISTORY,
        scope: Scope::Read,
        handler: |s, _, p| Box::pin(async { runs::chat_history(&s.host, p) }),
    },
    Method {
        name: method::CHAT_ABORT,
        scope: Scope::Write,
        handler: |s, _, p| Box::pin(runs::chat_abort(&s.host, p)),
    },
    Method {
        name: method::SESSIONS_LIST,
        scope: Scope::Read,
        handler: |s, _, p| Box::pin(async { sessions::list(&s.host, p) }),
    },
    Method {
        name: "sessions.describe",
        scope: Scope::Read,
        handler: |s, _, p| Box::pin(async { sessions::describe(&s.host, p) }),
    },
    Method {
        name: "sessions.subscribe",
        scope: Scope::Read,
        handler: |s, c, p| Box::pin(async { sessions::subscribe(&s.host, c, p) }),
    },
    Method {
        name: "sessions.unsubscribe",
        scope: Scope::Read,
        handler: |_, c, _| Box::pin(async { Ok(sessions::unsubscribe(c)) }),
    },
    Method {
        name: method::SESSIONS_HISTORY,
        scope: Scope::Read,
        handler: |s, _, p| Box::pin(async { runs::chat_history(&s.host, p) }),
    },
    Method {
        name: method::SESSIONS_RESET,
        scope: Scope::Admin,
        handler: |s, _, p| Box::pin(sessions::reset(&s.host, p)),
    },
    Method {
        name: method::SESSIONS_DELETE,
        scope: Scope::Admin,
        handler: |s, _, p| Box::pin(sessions::delete(&s.host, p)),
    },
    Method {
        name: "agents.list",
        scope: Scope::Read,
        handler: |s, _, _| Box::pin(async { Ok(catalog::agents_list(s)) }),
    },
    Method {
        name: "models.list",
        scope: Scope::Read,
        handler: |s, _, _| Box::pin(async { Ok(catalog::models_list(s)) }),
    },
    Method {
        name: "commands.list",
        scope: Scope::Read,
        handler: |s, _, _| Box::pin(async { Ok(catalog::commands_list(s)) }),
    },
    Method {
        name: "skills.status",
        scope: Scope::Read,
        handler: |s, _, _| Box::pin(async { Ok(catalog::skills_status(s)) }),
    },
    Method {
        name: "exec.approval.list",
        scope: Scope::Approvals,
        handler: |s, _, _| Box::pin(async { Ok(catalog::approvals_list(s)) }),
    },
    Method {
        name: method::EXEC_APPROVAL_RESOLVE,
        scope: Scope::Approvals,
        handler: |s, c, p| Box::pin(catalog::approval_resolve(s, c, p)),
    },
    Method {
        name: "question.list",
        scope: Scope::Questions,
        handler: |_, _, _| Box::pin(async { Ok(serde_json::json!({"questions": []})) }),
    },
    Method {
        name: "plugin.approval.list",
        scope: Scope::Approvals,
        handler: |_, _, _| Box::pin(async { Ok(serde_json::json!([])) }),
    },
    Method {
        name: "taskSuggestions.list",
        scope: Scope::Read,
        handler: |_, _, _| Box::pin(async { Ok(serde_json::json!({"suggestions": []})) }),
    },
    same!(method::TERMINAL_EXEC, Scope::Write),
    same!(method::CRON_LIST, Scope::Read),
    same!(method::CRON_STATUS, Scope::Read),
    same!(method::CRON_ADD, Scope::Admin),
    same!(method::CRON_UPDATE, Scope::Admin),
    same!(method::CRON_REMOVE, Scope::Admin),
    same!(method::CRON_RUN, Scope::Admin),
    same!(method::CRON_RUNS, Scope::Read),
    same!(method::USAGE_SUMMARY, Scope::Read),
];

/// The names of [`METHODS`], in order.
pub(crate) fn names() -> Vec<&'static str> {
    METHODS.iter().map(|m| m.name).collect()
}

/// The events sent on protocol 3–4.
pub(crate) const EVENTS: &[&str] = &[
    "connect.challenge",
    "agent",
    "chat",
    "health",
    "presence",
    "tick",
    "shutdown",
    "sessions.changed",
    "session.message",
    "exec.approval.requested",
    "cron",
    "heartbeat",
];

/// Runs `method` in OpenClaw's dialect.
///
/// # Errors
/// OpenClaw's: `INVALID_REQUEST` "unknown method: NAME", `FORBIDDEN` "missing scope: NAME";
/// each method's own refusals.
pub(crate) async fn call(
    state: &AppState,
    conn: &Conn,
    method: &str,
    params: &Value,
) -> Result<Value, MethodError> {
    match METHODS.iter().find(|m| m.name == method) {
        Some(m) if !conn.grants.allows(m.scope) => Err(MethodError::new(
            ErrorCode::Forbidden,
            format!("missing scope: {}", m.scope.as_str()),
        )),
        Some(m) => (m.handler)(state, conn, params).await,
        None => Err(MethodError::invalid(format!("unknown method: {method}"))),
    }
}

/// The agent a session key belongs to (`main` for a key that does not parse).
pub(crate) fn agent_of(key: &str) -> String {
    lurkbot_core::SessionKey::parse(key)
        .map(|k| k.agent_id().to_string())
        .unwrap_or_else(|_| "main".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_appears_once_and_connect_is_not_one() {
        let names = names();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "{names:?}");
        assert!(!names.contains(&method::CONNECT));
        for needed in [
            "health",
            "status",
            "agent",
            "sessions.subscribe",
            "logs.tail",
        ] {
            assert!(names.contains(&needed), "{needed}");
        }
    }
}
