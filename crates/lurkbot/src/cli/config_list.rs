//! `lurkbot config list [--json]`: every setting's effective value and where it came from —
//! `default`, `file` (config.toml) or `env` (a variable that overrides the file, from the
//! environment or the home's `.env`). Secrets are masked.

use std::path::Path;

use lurkbot_core::{Config, ConfigDoc, Home, is_secret_key, layout};
use serde_json::{Value, json};

use crate::error::CliResult;

/// Variables that override a key of config.toml, in the order they are looked at.
fn overrides(key: &str) -> &'static [&'static str] {
    match key {
        "agent.model" => &["LURKBOT_MODEL"],
        "gateway.token" => &["LURKBOT_GATEWAY_TOKEN"],
        "log.level" => crate::logging::LEVEL_VARIABLES,
        _ => &[],
    }
}

/// One row of the listing.
struct Row {
    key: String,
    value: Value,
    source: String,
}

pub(crate) fn run(home_path: &Path, json_mode: bool) -> CliResult {
    let path = home_path.join(layout::CONFIG);
    let config = Config::load(&path)?;
    let doc = ConfigDoc::load(&path)?;
    let vars = Home::open(home_path)
        .ok()
        .map(|home| lurkbot_agent::setup::variables(&home));
    let mut leaves = Vec::new();
    flatten("", &serde_json::to_value(&config)?, &mut leaves);
    let mut rows = Vec::new();
    for (key, value) in leaves {
        let overridden = overrides(&key).iter().find_map(|var| {
            let found = vars.as_ref().and_then(|v| v(var))?;
            (!found.trim().is_empty()).then_some((*var, found))
        });
        let (value, source) = match overridden {
            Some((var, v)) => (Value::String(v), format!("env {var}")),
            None if doc.get(&key)?.is_some() => (value, "file".to_string()),
            None => (value, "default".to_string()),
        };
        let value = if is_secret_key(&key) && !value.is_null() {
            Value::String("********".into())
        } else {
            lurkbot_core::mask_secret_values(value)
        };
        rows.push(Row { key, value, source });
    }
    let text = if json_mode {
        let list: Vec<Value> = rows
            .iter()
            .map(|r| json!({"key": r.key, "value": r.value, "source": r.source}))
            .collect();
        format!("{}\n", serde_json::to_string_pretty(&list)?)
    } else {
        rows.iter()
            .map(|r| {
                let shown = match &r.value {
                    Value::Null => "(not set)".to_string(),
                    Value::String(s) if s.is_empty() => "(not set)".to_string(),
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                format!("{} = {shown}  ({})\n", r.key, r.source)
            })
            .collect()
    };
    crate::run::print_stdout(&text)?;
    Ok(())
}

/// Leaf values of `value` by dotted key (objects are descended; arrays are values).
fn flatten(prefix: &str, value: &Value, out: &mut Vec<(String, Value)>) {
    match value {
        Value::Object(map) if !map.is_empty() || prefix.is_empty() => {
            for (k, v) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        other => out.push((prefix.to_string(), other.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_nested_in_values_are_masked() {
        let v = lurkbot_core::mask_secret_values(
            json!([{"name": "a", "api_key": "sk-1", "env": {"TOKEN": "t"}}, 3]),
        );
        assert_eq!(
            v,
            json!([{"name": "a", "api_key": "********", "env": {"TOKEN": "********"}}, 3])
        );
    }
}
