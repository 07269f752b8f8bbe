//! What OpenClaw's clients read about the gateway, in its shapes: `status`, `config.get`
//! (secrets masked), `agents.list`, `models.list`, `commands.list` (the skills a user may
//! invoke), `skills.status` and the approvals waiting.

use lurkbot_agent::skills::discover;
use serde_json::{Value, json};

use crate::protocol::{ErrorCode, MethodError};
use crate::state::AppState;

/// The configured agent ids, `main` first.
fn agent_ids(state: &AppState) -> Vec<String> {
    let config = state.config();
    let mut ids = vec!["main".to_string()];
    ids.extend(config.agents.keys().filter(|id| *id != "main").cloned());
    ids
}

/// `status`: LurkBot's own status with OpenClaw's summary fields beside it.
pub(super) fn status(state: &AppState) -> Value {
    let mut status = crate::ops::status::status(state);
    status["ok"] = json!(true);
    status["defaultAgentId"] = json!("main");
    status["agents"] = json!(agent_ids(state));
    status["uptimeMs"] = json!(lurkbot_core::now_ms().saturating_sub(state.started_ms));
    status
}

/// `config.get` → `{path, exists, valid, config, hash}`: the settings in force, secrets masked.
pub(super) fn config_get(state: &AppState) -> Result<Value, MethodError> {
    let path = state.home.join("config.toml");
    let raw = std::fs::read(&path).unwrap_or_default();
    let config = serde_json::to_value(&*state.config())
        .map_err(|e| MethodError::new(ErrorCode::Unavailable, e.to_string()))?;
    Ok(json!({
        "path": path.display().to_string(),
        "exists": path.exists(),
        "valid": true,
        "config": lurkbot_core::mask_secret_values(config),
        "hash": revision(&raw),
        "issues": [],
    }))
}

/// An opaque revision of the file's bytes (OpenClaw's clients only compare it).
fn revision(bytes: &[u8]) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}

/// `agents.list` (OpenClaw's `AgentsListResult`).
pub(super) fn agents_list(state: &AppState) -> Value {
    let config = state.config();
    // Every agent answers with the configured model (LurkBot has no per-agent model).
    let model = lurkbot_agent::setup::models(None, &config)
        .ok()
        .and_then(|m| m.first().map(ToString::to_string));
    let workspace = state.home.join("workspace").display().to_string();
    let agents: Vec<Value> = agent_ids(state)
        .into_iter()
        .map(|id| {
            let mut agent = json!({"id": id, "name": id, "workspace": workspace});
            if let Some(model) = &model {
                agent["model"] = json!({"primary": model});
            }
            agent
        })
        .collect();
    json!({"defaultId": "main", "mainKey": "main", "scope": "per-sender", "agents": agents})
}

/// `models.list` (OpenClaw's `ModelsListResult`): the configured model and its fallbacks.
pub(super) fn models_list(state: &AppState) -> Value {
    let config = state.config();
    let models: Vec<Value> = lurkbot_agent::setup::models(None, &config)
        .unwrap_or_default()
        .iter()
        .map(|m| {
            let text = m.to_string();
            let (provider, id) = text.split_once('/').unwrap_or(("", text.as_str()));
            json!({"id": id, "name": id, "provider": provider})
        })
        .collect();
    json!({"models": models})
}

/// `commands.list` (OpenClaw's `CommandsListResult`): the skills available to the model.
pub(super) fn commands_list(state: &AppState) -> Value {
    let config = state.config();
    let commands: Vec<Value> = discover(&state.home, &config)
        .into_iter()
        .filter(|s| s.available)
        .map(|s| {
            json!({"name": s.name, "description": s.description, "source": "skill",
                "scope": "text", "acceptsArgs": true})
        })
        .collect();
    json!({"commands": commands})
}

/// `skills.status`: every skill with whether the model is offered it and why not.
pub(super) fn skills_status(state: &AppState) -> Value {
    let config = state.config();
    let skills: Vec<Value> = discover(&state.home, &config)
        .into_iter()
        .map(|s| {
            json!({"name": s.name, "description": s.description, "source": s.source,
                "filePath": s.path, "eligible": s.available, "disabled": false,
                "reason": s.reason})
        })
        .collect();
    json!({"workspaceDir": state.home.join("workspace").display().to_string(),
        "skills": skills})
}

/// `exec.approval.resolve {id, decision}` (OpenClaw names the approval `id`; LurkBot's
/// `approvalId` is taken too) → `{ok, id, decision}`.
pub(super) async fn approval_resolve(
    state: &AppState,
    conn: &super::Conn,
    params: &Value,
) -> Result<Value, MethodError> {
    let id = params
        .get("id")
        .or_else(|| params.get("approvalId"))
        .and_then(Value::as_str)
        .ok_or_else(|| MethodError::invalid("missing string parameter 'id'"))?;
    let decision = params.get("decision").cloned().unwrap_or(Value::Null);
    let lurkbot = json!({"approvalId": id, "decision": decision});
    crate::methods::call(
        state,
        &conn.grants,
        crate::protocol::method::EXEC_APPROVAL_RESOLVE,
        &lurkbot,
    )
    .await?;
    Ok(json!({"ok": true, "id": id, "decision": decision}))
}

/// `exec.approval.list`: the approvals waiting for an answer.
pub(super) fn approvals_list(state: &AppState) -> Value {
    json!({"approvals": state.approver.pending_list()})
}
