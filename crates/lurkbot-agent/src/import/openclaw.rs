//! Reading an OpenClaw state folder (`~/.openclaw`, OpenClaw 2026.x) into an
//! [`ImportPlan`]: `openclaw.json` (agents, model and fallbacks, custom OpenAI-compatible
//! providers, tool profile/allow/deny, heartbeat, channels), the workspace's bootstrap and
//! memory files, skills (they load unchanged), and cron jobs — from `cron/jobs.json`, or from
//! `state/openclaw.sqlite`'s `cron_jobs` table where newer releases keep them. Jobs OpenClaw
//! manages itself (a `declarationKey`: its heartbeat, memory dreaming, skill reviews) are left
//! out and said so.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::toml_values::{toml_list, toml_string};
use super::{Action, ImportPlan};
use crate::cron::CronJob;

/// Tools whose OpenClaw name is LurkBot's too (others in allow/deny are reported).
const SAME_TOOLS: &[&str] = &[
    "read",
    "write",
    "edit",
    "web_fetch",
    "web_search",
    "memory_search",
    "memory_get",
    "sessions_list",
    "sessions_history",
    "sessions_send",
    "sessions_spawn",
    "session_status",
    "message",
    "cron",
];
/// OpenClaw tools LurkBot answers with another name.
const RENAMED_TOOLS: &[(&str, &str)] = &[("exec", "terminal_exec"), ("process", "terminal_exec")];
/// Tool profiles both have.
const PROFILES: &[&str] = &["minimal", "coding", "messaging", "full"];

/// The plan for importing `dir`.
///
/// # Errors
/// A message naming the file when `openclaw.json` is missing or not JSON.
pub fn plan(dir: &Path) -> Result<ImportPlan, String> {
    let config_path = dir.join("openclaw.json");
    let text = std::fs::read_to_string(&config_path).map_err(|e| {
        format!(
            "{}: {e} (is {} an OpenClaw state folder?)",
            config_path.display(),
            dir.display()
        )
    })?;
    let config: Value = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{}: not plain JSON ({e}); remove comments and trailing commas, then retry",
            config_path.display()
        )
    })?;
    let mut plan = ImportPlan {
        source: dir.to_path_buf(),
        ..ImportPlan::default()
    };
    let workspace = config
        .pointer("/agents/defaults/workspace")
        .and_then(Value::as_str)
        .map_or_else(|| dir.join("workspace"), PathBuf::from);
    // Nothing outside the given folder is read: a workspace setting or a link that leads out
    // of it (a hostile state folder's `memory -> ~/.ssh`) is left out and said so.
    if workspace.exists() && !super::inside(dir, &workspace) {
        plan.unmapped(
            format!("agents.defaults.workspace ({})", workspace.display()),
            format!(
                "it is outside {}; nothing outside the given folder is read (import that folder, or copy its files by hand)",
                dir.display()
            ),
        );
    } else {
        workspace_files(&mut plan, dir, &workspace);
        skills(
            &mut plan,
            dir,
            &workspace.join("skills"),
            "workspace/skills",
        );
    }
    skills(
        &mut plan,
        dir,
        &dir.join("skills"),
        lurkbot_core::layout::SKILLS,
    );
    models(&mut plan, &config);
    tools(&mut plan, &config);
    heartbeat(&mut plan, &config);
    agents(&mut plan, &config);
    cron(&mut plan, dir);
    super::openclaw_channels::channels(&mut plan, &config);
    if config.pointer("/gateway/auth/token").is_some() {
        plan.unmapped(
            "gateway.auth.token",
            "LurkBot keeps its own gateway token (gateway.token); give it to OpenClaw's clients with --token",
        );
    }
    Ok(plan)
}

/// Every file under `from` (recursively), as paths relative to it; links are not followed, and
/// nothing is listed when `from` itself leads out of `root`.
fn files_under(plan: &mut ImportPlan, root: &Path, from: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if from.exists() && !super::inside(root, from) {
        plan.unmapped(
            from.display().to_string(),
            format!(
                "it leads out of {} (a link); nothing outside the given folder is read",
                root.display()
            ),
        );
        return out;
    }
    let mut stack = vec![from.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if name.to_string_lossy().starts_with('.') {
                continue;
            }
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(path),
                Ok(t) if t.is_file() => {
                    if let Ok(rel) = path.strip_prefix(from) {
                        out.push(rel.to_path_buf());
                    }
                }
                _ => {}
            }
        }
    }
    out.sort();
    out
}

fn workspace_files(plan: &mut ImportPlan, root: &Path, workspace: &Path) {
    let Ok(entries) = std::fs::read_dir(workspace) else {
        plan.unmapped(
            workspace.display().to_string(),
            "the workspace folder is missing",
        );
        return;
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .collect();
    names.sort();
    for name in names {
        plan.actions.push(Action::Copy {
            from: workspace.join(&name),
            to: format!("{}/{name}", lurkbot_core::layout::WORKSPACE),
        });
    }
    let memory = workspace.join("memory");
    for rel in files_under(plan, root, &memory) {
        plan.actions.push(Action::Copy {
            from: memory.join(&rel),
            to: format!(
                "{}/{}",
                lurkbot_core::layout::WORKSPACE_MEMORY,
                rel.display()
            ),
        });
    }
}

fn skills(plan: &mut ImportPlan, root: &Path, from: &Path, to: &str) {
    for rel in files_under(plan, root, from) {
        plan.actions.push(Action::Copy {
            from: from.join(&rel),
            to: format!("{to}/{}", rel.display()),
        });
    }
}

/// `provider/model` in LurkBot's terms, with the secrets and base URL it needs.
fn model_ref(plan: &mut ImportPlan, config: &Value, name: &str, primary: bool) -> Option<String> {
    let (provider, model) = name.split_once('/')?;
    match provider {
        "openai" | "anthropic" => {
            if let Some(key) = config
                .pointer(&format!("/models/providers/{provider}/apiKey"))
                .and_then(Value::as_str)
            {
                let var = if provider == "openai" {
                    "OPENAI_API_KEY"
                } else {
                    "ANTHROPIC_API_KEY"
                };
                plan.actions.push(Action::Secret {
                    name: var.into(),
                    value: key.into(),
                });
            }
            Some(format!("{provider}/{model}"))
        }
        custom => {
            let entry = config.pointer(&format!("/models/providers/{custom}"));
            let api = entry.and_then(|e| e.get("api")).and_then(Value::as_str);
            let base = entry.and_then(|e| e.get("baseUrl")).and_then(Value::as_str);
            match (api, base) {
                (Some(api), Some(base)) if api.starts_with("openai") && primary => {
                    plan.actions.push(Action::Secret {
                        name: "OPENAI_BASE_URL".into(),
                        value: base.into(),
                    });
                    if let Some(key) = entry.and_then(|e| e.get("apiKey")).and_then(Value::as_str) {
                        plan.actions.push(Action::Secret {
                            name: "OPENAI_API_KEY".into(),
                            value: key.into(),
                        });
                    }
                    Some(format!("openai/{model}"))
                }
                (Some(api), Some(_)) if api.starts_with("openai") => {
                    // A fallback on the primary's own custom provider shares its base URL.
                    let primary_provider = config
                        .pointer("/agents/defaults/model/primary")
                        .and_then(Value::as_str)
                        .and_then(|p| p.split_once('/'))
                        .map(|(p, _)| p);
                    if primary_provider == Some(custom) {
                        Some(format!("openai/{model}"))
                    } else {
                        plan.unmapped(name, "a fallback on a second OpenAI-compatible server (LurkBot has one base URL per provider)");
                        None
                    }
                }
                _ => {
                    plan.unmapped(name, format!("provider '{custom}' is not OpenAI-compatible or has no baseUrl; LurkBot speaks OpenAI and Anthropic"));
                    None
                }
            }
        }
    }
}

fn models(plan: &mut ImportPlan, config: &Value) {
    let primary = config
        .pointer("/agents/defaults/model/primary")
        .or_else(|| config.pointer("/agents/defaults/model"))
        .and_then(Value::as_str);
    let Some(primary) = primary else {
        plan.unmapped("agents.defaults.model", "no primary model is configured");
        return;
    };
    if let Some(model) = model_ref(plan, config, primary, true) {
        plan.actions.push(Action::Setting {
            key: "agent.model".into(),
            value: toml_string(&model),
        });
    }
    let fallbacks: Vec<String> = config
        .pointer("/agents/defaults/model/fallbacks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    let mapped: Vec<String> = fallbacks
        .iter()
        .filter_map(|f| model_ref(plan, config, f, false))
        .collect();
    if !mapped.is_empty() {
        plan.actions.push(Action::Setting {
            key: "agent.fallbacks".into(),
            value: toml_list(&mapped),
        });
    }
}

/// Tool names in LurkBot's terms; the others are reported.
fn tool_names(plan: &mut ImportPlan, key: &str, names: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for name in names
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if SAME_TOOLS.contains(&name) || name.starts_with("group:") || name.contains('*') {
            out.push(name.to_string());
        } else if let Some((_, ours)) = RENAMED_TOOLS.iter().find(|(theirs, _)| *theirs == name) {
            if !out.iter().any(|o| o == ours) {
                out.push((*ours).to_string());
            }
        } else {
            plan.unmapped(format!("{key}: {name}"), "LurkBot has no tool of that name");
        }
    }
    out
}

fn tools(plan: &mut ImportPlan, config: &Value) {
    if let Some(profile) = config.pointer("/tools/profile").and_then(Value::as_str) {
        if PROFILES.contains(&profile) {
            plan.actions.push(Action::Setting {
                key: "tools.profile".into(),
                value: toml_string(profile),
            });
        } else {
            plan.unmapped(
                format!("tools.profile: {profile}"),
                "LurkBot's profiles are minimal, coding, messaging and full",
            );
        }
    }
    for list in ["allow", "deny"] {
        if let Some(names) = config.pointer(&format!("/tools/{list}")) {
            let ours = tool_names(plan, &format!("tools.{list}"), names);
            if !ours.is_empty() {
                plan.actions.push(Action::Setting {
                    key: format!("tools.{list}"),
                    value: toml_list(&ours),
                });
            }
        }
    }
}

fn heartbeat(plan: &mut ImportPlan, config: &Value) {
    let Some(heartbeat) = config.pointer("/agents/defaults/heartbeat") else {
        return;
    };
    if let Some(every) = heartbeat.get("every").and_then(Value::as_str) {
        if lurkbot_core::parse_period_ms(every).is_some() {
            plan.actions.push(Action::Setting {
                key: "heartbeat.every".into(),
                value: toml_string(every),
            });
        } else {
            plan.unmapped(
                format!("heartbeat.every: {every}"),
                "not a period LurkBot reads (30s, 5m, 1h)",
            );
        }
    }
    if let Some(prompt) = heartbeat.get("prompt").and_then(Value::as_str) {
        plan.actions.push(Action::Setting {
            key: "heartbeat.prompt".into(),
            value: toml_string(prompt),
        });
    }
}

fn agents(plan: &mut ImportPlan, config: &Value) {
    for (id, entry) in config
        .pointer("/agents/entries")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        if id == "main" {
            continue;
        }
        if let Some(names) = entry.pointer("/tools/deny") {
            let ours = tool_names(plan, &format!("agents.{id}.tools.deny"), names);
            plan.actions.push(Action::Setting {
                key: format!("agents.{id}.tools.deny"),
                value: toml_list(&ours),
            });
        } else {
            plan.actions.push(Action::Setting {
                key: format!("agents.{id}.tools.deny"),
                value: "[]".into(),
            });
        }
        if entry.get("model").is_some() {
            plan.unmapped(
                format!("agents.{id}.model"),
                "LurkBot's agents share the configured model",
            );
        }
    }
}

/// The jobs' JSON: `cron/jobs.json` (`{jobs: […]}` or a list), else the SQLite state.
fn cron_jobs(dir: &Path) -> Result<Vec<Value>, String> {
    let file = dir.join("cron/jobs.json");
    if let Ok(text) = std::fs::read_to_string(&file) {
        let value: Value =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        let list = value.get("jobs").cloned().unwrap_or(value);
        return Ok(list.as_array().cloned().unwrap_or_default());
    }
    let db = dir.join("state/openclaw.sqlite");
    if !db.exists() {
        return Ok(Vec::new());
    }
    let conn =
        rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(|e| format!("{}: {e}", db.display()))?;
    let mut statement = conn
        .prepare("SELECT job_json FROM cron_jobs ORDER BY sort_order")
        .map_err(|e| format!("{}: {e}", db.display()))?;
    let rows = statement
        .query_map([], |row| row.get::<_, String>(0))
        .map_err(|e| format!("{}: {e}", db.display()))?;
    Ok(rows
        .filter_map(Result::ok)
        .filter_map(|text| serde_json::from_str(&text).ok())
        .collect())
}

fn cron(plan: &mut ImportPlan, dir: &Path) {
    let jobs = match cron_jobs(dir) {
        Ok(jobs) => jobs,
        Err(e) => {
            plan.unmapped("cron jobs", e);
            return;
        }
    };
    for mut job in jobs {
        let name = job
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("(unnamed)")
            .to_string();
        if job.get("declarationKey").and_then(Value::as_str).is_some() {
            plan.unmapped(
                format!("cron job '{name}'"),
                "managed by OpenClaw itself (its heartbeat, memory or skill upkeep)",
            );
            continue;
        }
        // jobs.json's shape is shared; OpenClaw's extra fields are ignored.
        if let Some(map) = job.as_object_mut() {
            let created = map.get("createdAtMs").cloned().unwrap_or(Value::from(0));
            map.entry("updatedAtMs").or_insert(created);
            map.insert("state".into(), serde_json::json!({}));
            // OpenClaw's own cron tool writes jobs.json: a job read from it may be a model's,
            // so it runs with the model's rules (ARCHITECTURE.md §5.1), never the owner's.
            map.insert("createdBy".into(), serde_json::json!("model"));
            if let Some(payload) = map.get_mut("payload").and_then(Value::as_object_mut) {
                payload.remove("toolsAllow");
                payload.remove("lightContext");
            }
        }
        match serde_json::from_value::<CronJob>(job) {
            Ok(job) => match job.validate() {
                Ok(()) => plan.actions.push(Action::CronJob { job: Box::new(job) }),
                Err(e) => plan.unmapped(format!("cron job '{name}'"), e.to_string()),
            },
            Err(e) => plan.unmapped(
                format!("cron job '{name}'"),
                format!("not a job LurkBot runs: {e}"),
            ),
        }
    }
}
