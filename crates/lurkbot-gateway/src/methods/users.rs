//! Users on a shared gateway (ARCHITECTURE.md §6.2), as methods: what a user's connection may
//! call at all ([`refused_for`]: one list, checked before any method runs), and the admin's
//! `users.list|add|remove|token|passwd` behind `lurkbot users` and the web UI's Users panel.

use serde_json::{Value, json};

use crate::methods::handler::Method;
use crate::protocol::{ErrorCode, MethodError, Scope};
use crate::state::AppState;
use crate::users::store::UsersError;

/// What a (non-admin) user's connection may call: each of these acts on the state it is
/// served with, which is the user's own. Everything else — settings, logs, channels and their
/// pairings, devices and nodes, the browser's start and stop, users — is the admin's. A new
/// method stays the admin's until it is listed here.
pub(crate) const USER_METHODS: &[&str] = &[
    "health",
    "status",
    "chat.send",
    "chat.history",
    "chat.render",
    "chat.abort",
    "canvas.list",
    "agent",
    "agent.wait",
    "sessions.list",
    "sessions.history",
    "sessions.reset",
    "sessions.delete",
    "sessions.wait",
    "terminal.exec",
    "exec.approval.resolve",
    "cron.list",
    "cron.status",
    "cron.add",
    "cron.update",
    "cron.remove",
    "cron.run",
    "cron.runs",
    "usage.summary",
    "browser.status",
    // A sender the user pairs becomes theirs (the code reached them on the platform).
    "channels.pairing.approve",
    // OpenClaw's dialect.
    "system-presence",
    "sessions.describe",
    "sessions.subscribe",
    "sessions.unsubscribe",
    "agents.list",
    "models.list",
    "commands.list",
    "skills.status",
    "exec.approval.list",
    "question.list",
    "plugin.approval.list",
    "taskSuggestions.list",
];

/// The refusal of `method` on a connection served with `state`: `FORBIDDEN` for a user's
/// connection calling what is not theirs; `None` when it may go ahead.
pub(crate) fn refused_for(state: &AppState, method: &str) -> Option<MethodError> {
    let user = state.user.as_deref()?;
    (!USER_METHODS.contains(&method)).then(|| {
        MethodError::new(
            ErrorCode::Forbidden,
            format!("'{method}' is the gateway admin's; user '{user}' may not call it"),
        )
    })
}

/// The admin's methods, in the gateway's table.
pub(crate) const METHODS: &[Method] = &[
    Method {
        name: "users.list",
        scope: Scope::Admin,
        handler: |s, _| Box::pin(async { list(s) }),
    },
    Method {
        name: "users.add",
        scope: Scope::Admin,
        handler: |s, p| Box::pin(add(s, p)),
    },
    Method {
        name: "users.remove",
        scope: Scope::Admin,
        handler: |s, p| Box::pin(remove(s, p)),
    },
    Method {
        name: "users.token",
        scope: Scope::Admin,
        handler: |s, p| Box::pin(async { token(s, p) }),
    },
    Method {
        name: "users.passwd",
        scope: Scope::Admin,
        handler: |s, p| Box::pin(passwd(s, p)),
    },
];

fn tenants(state: &AppState) -> Result<&crate::users::tenants::Tenants, MethodError> {
    match (&state.users, &state.user) {
        (Some(users), None) => Ok(users),
        (Some(_), Some(_)) => Err(MethodError::new(
            ErrorCode::Forbidden,
            "only an admin manages users",
        )),
        (None, _) => Err(MethodError::new(
            ErrorCode::Unavailable,
            "users are off: set [users] enabled = true in config.toml and restart the gateway",
        )),
    }
}

fn name_param(params: &Value) -> Result<&str, MethodError> {
    params
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| MethodError::invalid("give the user's name as 'name'"))
}

fn failed(error: UsersError) -> MethodError {
    let code = match error {
        UsersError::NotFound(_) => ErrorCode::NotFound,
        UsersError::Store(_) => ErrorCode::Unavailable,
        _ => ErrorCode::InvalidRequest,
    };
    MethodError::new(code, error.to_string())
}

fn list(state: &AppState) -> Result<Value, MethodError> {
    let users = tenants(state)?;
    if let Some(problem) = users.problem() {
        return Err(MethodError::new(ErrorCode::Unavailable, problem));
    }
    let rows = crate::users::store::rows(&state.home, &users.users(), &state.config());
    Ok(json!({"users": rows}))
}

async fn add(state: &AppState, params: &Value) -> Result<Value, MethodError> {
    let users = tenants(state)?;
    let name = name_param(params)?;
    let admin = params
        .get("admin")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let token = users
        .store()
        .add(&state.home, name, admin)
        .map_err(failed)?;
    users.reread();
    if !admin && let Some(members) = &state.members {
        members.user_state(state, name).map_err(failed)?;
    }
    tracing::info!(user = name, admin, "users: added");
    Ok(json!({"name": name, "admin": admin, "token": token}))
}

async fn remove(state: &AppState, params: &Value) -> Result<Value, MethodError> {
    let users = tenants(state)?;
    let name = name_param(params)?;
    let purge = params
        .get("purge")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    // Stopped first: nothing of theirs runs on while their home goes.
    if let Some(members) = &state.members {
        members.drop_user(name).await;
    }
    let removed = users
        .store()
        .remove(&state.home, name, purge)
        .map_err(failed)?;
    users.sign_out_all(name);
    users.reread();
    tracing::info!(user = name, purge, "users: removed");
    Ok(json!({"removed": removed.summary(), "purged": purge}))
}

fn token(state: &AppState, params: &Value) -> Result<Value, MethodError> {
    let users = tenants(state)?;
    let name = name_param(params)?;
    let token = users.store().new_token(name).map_err(failed)?;
    users.reread();
    tracing::info!(user = name, "users: new token (the old one is revoked)");
    Ok(json!({"name": name, "token": token}))
}

async fn passwd(state: &AppState, params: &Value) -> Result<Value, MethodError> {
    let users = tenants(state)?;
    let name = name_param(params)?.to_string();
    let password = params
        .get("password")
        .and_then(Value::as_str)
        .ok_or_else(|| MethodError::invalid("give the new password as 'password'"))?
        .to_string();
    let _one = users
        .hashing
        .acquire()
        .await
        .map_err(|_| MethodError::new(ErrorCode::Unavailable, "the gateway is stopping"))?;
    let store = users.store().clone();
    let who = name.clone();
    tokio::task::spawn_blocking(move || store.set_password(&who, &password))
        .await
        .map_err(|e| MethodError::new(ErrorCode::Unavailable, e.to_string()))?
        .map_err(failed)?;
    users.sign_out_all(&name);
    users.reread();
    tracing::info!(user = name, "users: new password (their sign-ins ended)");
    Ok(json!({"name": name, "password": true}))
}
