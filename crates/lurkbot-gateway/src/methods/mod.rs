//! The WebSocket methods (ARCHITECTURE.md §6): one table, [`METHODS`], where each method's name
//! sits beside its handler (axum-style); `hello-ok` advertises the table's names, and an
//! unknown name cannot be dispatched. Each handler takes the request's `params` object and
//! answers a payload or a [`MethodError`].

pub(crate) mod browser;
pub(crate) mod channels;
pub(crate) mod cron;
pub(crate) mod handler;
pub(crate) mod highlight;
pub(crate) mod markdown;
pub(crate) mod nodes;
pub(crate) mod ops;
pub(crate) mod sessions;
pub(crate) mod usage;
pub(crate) mod users;

use futures_util::FutureExt;
use serde_json::{Value, json};

use crate::methods::handler::Method;
use crate::protocol::{ErrorCode, Grants, MethodError, Scope, health, method};
use crate::state::AppState;

/// Every method the gateway answers; `hello-ok` advertises exactly these names.
pub(crate) const METHODS: &[Method] = &[
    Method {
        name: method::HEALTH,
        scope: Scope::Read,
        handler: |_, _| Box::pin(async { Ok(health()) }),
    },
    Method {
        name: method::STATUS,
        scope: Scope::Read,
        handler: |s, _| Box::pin(async { Ok(crate::ops::status::status_with_browser(s).await) }),
    },
    Method {
        name: method::CHAT_SEND,
        scope: Scope::Write,
        handler: |s, p| Box::pin(crate::methods::sessions::send(&s.host, p)),
    },
    Method {
        name: method::CHAT_HISTORY,
        scope: Scope::Read,
        handler: |s, p| Box::pin(async { crate::methods::sessions::history(&s.host, p) }),
    },
    Method {
        name: method::CHAT_RENDER,
        scope: Scope::Read,
        handler: |_, p| Box::pin(async { crate::methods::markdown::method(p) }),
    },
    Method {
        name: method::CANVAS_LIST,
        scope: Scope::Read,
        handler: |s, p| {
            Box::pin(async {
                let key = crate::methods::sessions::session_param(p)?;
                let widgets = lurkbot_agent::canvas::CanvasStore::open(&s.home, &key).list();
                Ok(serde_json::json!({"sessionKey": key.as_str(), "widgets": widgets}))
            })
        },
    },
    Method {
        name: method::CHAT_ABORT,
        scope: Scope::Write,
        handler: |s, p| Box::pin(crate::methods::sessions::abort(&s.host, p)),
    },
    Method {
        name: method::AGENT,
        scope: Scope::Write,
        handler: |s, p| Box::pin(crate::methods::sessions::send(&s.host, p)),
    },
    Method {
        name: method::AGENT_WAIT,
        scope: Scope::Read,
        handler: |s, p| Box::pin(crate::methods::sessions::wait(&s.host, p)),
    },
    Method {
        name: method::SESSIONS_LIST,
        scope: Scope::Read,
        handler: |s, p| Box::pin(async { crate::methods::sessions::list(&s.host, p) }),
    },
    Method {
        name: method::SESSIONS_HISTORY,
        scope: Scope::Read,
        handler: |s, p| Box::pin(async { crate::methods::sessions::history(&s.host, p) }),
    },
    Method {
        name: method::SESSIONS_RESET,
        scope: Scope::Admin,
        handler: |s, p| Box::pin(crate::methods::sessions::reset(&s.host, p)),
    },
    Method {
        name: method::SESSIONS_DELETE,
        scope: Scope::Admin,
        handler: |s, p| Box::pin(crate::methods::sessions::delete(&s.host, p)),
    },
    Method {
        name: method::TERMINAL_EXEC,
        scope: Scope::Write,
        handler: |s, p| Box::pin(crate::methods::sessions::terminal_exec(&s.host, p)),
    },
    Method {
        name: method::EXEC_APPROVAL_RESOLVE,
        scope: Scope::Approvals,
        handler: |s, p| Box::pin(async { crate::methods::sessions::resolve(&s.host, p) }),
    },
    Method {
        name: method::LOGS_TAIL,
        scope: Scope::Read,
        handler: |s, p| Box::pin(async { crate::methods::ops::logs_tail(&s.home, p) }),
    },
    Method {
        name: method::GATEWAY_RELOAD,
        scope: Scope::Admin,
        handler: |s, p| Box::pin(async { crate::ops::reload::gateway_reload(s, p) }),
    },
    Method {
        name: method::SETUP_MODEL,
        scope: Scope::Admin,
        handler: |s, p| Box::pin(async { setup_model(s, p) }),
    },
    Method {
        name: method::SESSIONS_WAIT,
        scope: Scope::Read,
        handler: |s, p| Box::pin(crate::methods::sessions::wait_idle(&s.host, p)),
    },
    Method {
        name: method::CRON_LIST,
        scope: Scope::Read,
        handler: |s, _| Box::pin(async { crate::methods::cron::list(&s.timers()) }),
    },
    Method {
        name: method::CRON_STATUS,
        scope: Scope::Read,
        handler: |s, _| Box::pin(async { crate::methods::cron::status(&s.timers()) }),
    },
    Method {
        name: method::CRON_ADD,
        scope: Scope::Admin,
        handler: |s, p| Box::pin(async { crate::methods::cron::add(&s.timers(), p) }),
    },
    Method {
        name: method::CRON_UPDATE,
        scope: Scope::Admin,
        handler: |s, p| Box::pin(async { crate::methods::cron::update(&s.timers(), p) }),
    },
    Method {
        name: method::CRON_REMOVE,
        scope: Scope::Admin,
        handler: |s, p| Box::pin(async { crate::methods::cron::remove(&s.timers(), p) }),
    },
    Method {
        name: method::CRON_RUN,
        scope: Scope::Admin,
        handler: |s, p| Box::pin(async { crate::methods::cron::run(&s.timers(), p).await }),
    },
    Method {
        name: method::CRON_RUNS,
        scope: Scope::Read,
        handler: |s, p| Box::pin(async { crate::methods::cron::runs(&s.timers(), p) }),
    },
    Method {
        name: method::CHANNELS_STATUS,
        scope: Scope::Read,
        handler: |s, _| Box::pin(async { Ok(crate::methods::channels::status(&s.host)) }),
    },
    Method {
        name: method::PLUGINS_STATUS,
        scope: Scope::Read,
        handler: |s, _| {
            Box::pin(async { Ok(serde_json::json!({"plugins": s.host.plugins().statuses()})) })
        },
    },
    Method {
        name: method::CHANNELS_PAIRING_APPROVE,
        scope: Scope::Admin,
        handler: |s, p| {
            Box::pin(async {
                crate::methods::channels::pairing(&s.host, s.user.as_deref(), p, true)
            })
        },
    },
    Method {
        name: method::CHANNELS_PAIRING_DENY,
        scope: Scope::Admin,
        handler: |s, p| {
            Box::pin(async {
                crate::methods::channels::pairing(&s.host, s.user.as_deref(), p, false)
            })
        },
    },
    Method {
        name: method::OUTBOX_RETRY,
        scope: Scope::Admin,
        handler: |s, p| Box::pin(async { crate::methods::channels::retry(&s.host, p) }),
    },
    Method {
        name: method::BROWSER_STATUS,
        scope: Scope::Read,
        handler: |s, _| Box::pin(async { Ok(crate::ops::status::browser_state(&s.host).await) }),
    },
    Method {
        name: method::BROWSER_START,
        scope: Scope::Admin,
        handler: |s, _| Box::pin(crate::methods::browser::start(&s.host)),
    },
    Method {
        name: method::BROWSER_STOP,
        scope: Scope::Admin,
        handler: |s, _| Box::pin(crate::methods::browser::stop(&s.host)),
    },
    Method {
        name: method::USAGE_SUMMARY,
        scope: Scope::Read,
        handler: |s, p| Box::pin(async { crate::methods::usage::summary(&s.host, p) }),
    },
];

/// The names of [`METHODS`], in order.
pub(crate) fn names() -> Vec<&'static str> {
    table().map(|m| m.name).collect()
}

/// [`METHODS`], the device and node methods and the users methods.
fn table() -> impl Iterator<Item = &'static Method> {
    METHODS
        .iter()
        .chain(crate::methods::nodes::METHODS)
        .chain(crate::methods::users::METHODS)
}

/// Methods whose answer never waits for anything: answered on the connection's own task, with
/// no task of their own (a burst of 1,000 health probes costs 1,000 fewer spawns).
const IMMEDIATE: &[&str] = &[method::HEALTH];

/// Methods logged at debug rather than info: health probes (monitors, load balancers) would
/// flood the log and cost each probe a write.
const QUIET: &[&str] = &[method::HEALTH];

/// The answer of `method` when it is [`IMMEDIATE`] (and allowed); `None` for every other
/// method, which [`call`] answers.
pub(crate) fn call_now(
    state: &AppState,
    grants: &Grants,
    method: &str,
    params: &Value,
) -> Option<Result<Value, MethodError>> {
    if !IMMEDIATE.contains(&method) {
        return None;
    }
    let m = table().find(|m| m.name == method)?;
    if !grants.allows(m.scope) {
        return None;
    }
    // An immediate method's future is ready on its first poll. Were it not, it would be dropped
    // and the request sent the usual way: an immediate method does nothing before it answers.
    (m.handler)(state, params).now_or_never()
}

/// Whether a call of `method` approves something itself: a terminal command carrying
/// `--confirm` (the human's own confirmation, which only an approvals-scoped client gives).
fn confirms(method: &str, params: &Value) -> bool {
    method == "terminal.exec"
        && params
            .get("command")
            .and_then(Value::as_str)
            .and_then(|c| lurkbot_term::parse_command(c).ok())
            .is_some_and(|words| words.iter().any(|w| w == "--confirm"))
}

/// Whether a call of `method` runs a command on a node (`node.invoke` of `system.run`), which
/// needs `operator.admin` as in OpenClaw; other node commands need `operator.write`.
fn runs_on_a_node(method: &str, params: &Value) -> bool {
    method == "node.invoke"
        && params
            .get("command")
            .and_then(Value::as_str)
            .is_some_and(|c| lurkbot_agent::gate::RUN_COMMANDS.contains(&c))
}

/// Whether `method` is logged at debug only.
pub(crate) fn is_quiet(method: &str) -> bool {
    QUIET.contains(&method)
}

/// Runs `method`.
///
/// # Errors
/// `NOT_FOUND` for unknown methods, `UNAUTHORIZED` for a scope the connection lacks; each
/// method's own refusals.
pub(crate) async fn call(
    state: &AppState,
    grants: &Grants,
    method: &str,
    params: &Value,
) -> Result<Value, MethodError> {
    match table().find(|m| m.name == method) {
        Some(m) if !grants.allows(m.scope) => Err(MethodError::new(
            ErrorCode::Unauthorized,
            format!(
                "'{method}' needs the {} scope, which this connection did not ask for in connect",
                m.scope.as_str()
            ),
        )),
        Some(m) if runs_on_a_node(m.name, params) && !grants.allows(Scope::Admin) => {
            Err(MethodError::new(
                ErrorCode::Forbidden,
                format!(
                    "missing scope: {} (running a command on a node is an admin's act)",
                    Scope::Admin.as_str()
                ),
            ))
        }
        Some(m) if confirms(m.name, params) && !grants.allows(Scope::Approvals) => {
            Err(MethodError::new(
                ErrorCode::Forbidden,
                format!(
                    "missing scope: {} (a command carrying --confirm is an approval)",
                    Scope::Approvals.as_str()
                ),
            ))
        }
        Some(m) => (m.handler)(state, params).await,
        None => Err(MethodError::new(
            ErrorCode::NotFound,
            format!("unknown method '{method}'"),
        )),
    }
}

/// `setup.model {provider, model, baseUrl?, key?}`: the owner chooses the model from the web
/// UI, as `lurkbot setup` does; the settings are reloaded at once. The key is written to
/// `.env` and never logged or echoed.
fn setup_model(state: &AppState, params: &Value) -> Result<Value, MethodError> {
    let provider = crate::methods::sessions::str_param(params, "provider")?;
    let vars = lurkbot_agent::setup::provider_vars(provider).ok_or_else(|| {
        MethodError::invalid(format!(
            "unknown provider '{provider}': openai or anthropic"
        ))
    })?;
    let base = params
        .get("baseUrl")
        .and_then(Value::as_str)
        .filter(|b| !b.trim().is_empty())
        .unwrap_or(vars.default_base);
    let key = params.get("key").and_then(Value::as_str);
    let model = lurkbot_agent::setup::write_model_choice(
        &state.home,
        provider,
        crate::methods::sessions::str_param(params, "model")?,
        base,
        key,
    )
    .map_err(MethodError::invalid)?;
    state
        .reload()
        .map_err(|e| MethodError::new(ErrorCode::Unavailable, e.0))?;
    Ok(
        json!({"model": model, "baseUrl": base, "keySet": key.is_some_and(|k| !k.trim().is_empty())}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_appears_once() {
        let names = names();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "{names:?}");
        assert!(names.contains(&method::TERMINAL_EXEC));
        assert!(
            !names.contains(&method::CONNECT),
            "connect is the handshake, not a method"
        );
    }
}
