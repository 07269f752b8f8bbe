//! A change to `config.toml` given as JSON (the `gateway` tool's `config.patch`, ARCHITECTURE.md
//! §5.2): `{<section>: {<key>: value}}`, merged key by key into the document (comments and
//! the other keys kept), `null` removing a key so its default applies again. Either every key
//! applies and the file still validates, or nothing is written.

use serde_json::Value as Json;
use toml_edit::Value;

use crate::{ConfigDoc, ConfigDocError};

/// Most keys one patch may set.
pub const MAX_PATCH_KEYS: usize = 64;

/// The dotted keys a patch sets, with their values, in order: nested objects are tables down to
/// their leaves (`{"heartbeat": {"every": "10m"}}` sets `heartbeat.every`); arrays and scalars are
/// values.
///
/// # Errors
/// A patch that is not an object of objects, is empty, or sets too many keys, in words.
pub fn patch_keys(patch: &Json) -> Result<Vec<(String, &Json)>, String> {
    let Json::Object(sections) = patch else {
        return Err(
            "the patch must be an object such as {\"heartbeat\": {\"every\": \"10m\"}}".into(),
        );
    };
    let mut keys = Vec::new();
    for (section, value) in sections {
        if !value.is_object() {
            return Err(format!(
                "'{section}' must be an object of keys, such as {{\"{section}\": {{\"key\": value}}}}"
            ));
        }
        flatten(section.clone(), value, &mut keys);
    }
    if keys.is_empty() {
        return Err("the patch sets no key".into());
    }
    if keys.len() > MAX_PATCH_KEYS {
        return Err(format!(
            "the patch sets {} keys; at most {MAX_PATCH_KEYS} at once",
            keys.len()
        ));
    }
    Ok(keys)
}

fn flatten<'a>(prefix: String, value: &'a Json, keys: &mut Vec<(String, &'a Json)>) {
    match value {
        Json::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                flatten(format!("{prefix}.{k}"), v, keys);
            }
        }
        _ => keys.push((prefix, value)),
    }
}

impl ConfigDoc {
    /// Applies `keys` (from [`patch_keys`]) to the document; nothing is written here (see
    /// [`ConfigDoc::save`]). On an error the document may hold part of the patch: drop it.
    ///
    /// # Errors
    /// The first key refused (secret, malformed, of the wrong type, unknown, contradicting).
    pub fn apply_patch(&mut self, keys: &[(String, &Json)]) -> Result<(), ConfigDocError> {
        for (key, value) in keys {
            match value {
                Json::Null => {
                    self.unset(key)?;
                }
                v => {
                    let value = toml_value(v).ok_or_else(|| ConfigDocError::BadKey {
                        key: key.clone(),
                        reason: "TOML has no null inside a list or table; remove the key with null instead".into(),
                    })?;
                    self.set_value(key, value)?;
                }
            }
        }
        Ok(())
    }
}

/// A JSON value as TOML (`None` for a `null` inside an array or object, which TOML cannot say).
fn toml_value(v: &Json) -> Option<Value> {
    Some(match v {
        Json::Null => return None,
        Json::Bool(b) => Value::from(*b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Value::from(i),
            None => Value::from(n.as_f64()?),
        },
        Json::String(s) => Value::from(s.as_str()),
        Json::Array(items) => {
            let mut array = toml_edit::Array::new();
            for item in items {
                array.push(toml_value(item)?);
            }
            Value::Array(array)
        }
        Json::Object(map) => {
            let mut table = toml_edit::InlineTable::new();
            for (k, item) in map {
                table.insert(k, toml_value(item)?);
            }
            Value::InlineTable(table)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(text: &str) -> (tempfile::TempDir, std::path::PathBuf, ConfigDoc) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, text).unwrap();
        let doc = ConfigDoc::load(&path).unwrap();
        (dir, path, doc)
    }

    #[test]
    fn a_patch_is_flattened_to_its_leaves() {
        let patch = json!({"heartbeat": {"every": "10m", "active_hours": {"start": "08:00"}}, "log": {"level": null}});
        let keys = patch_keys(&patch).unwrap();
        let names: Vec<&str> = keys.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "heartbeat.every",
                "heartbeat.active_hours.start",
                "log.level"
            ]
        );
        for bad in [json!([]), json!({"log": 1}), json!({}), json!("x")] {
            assert!(patch_keys(&bad).is_err(), "{bad}");
        }
        let many: serde_json::Map<String, serde_json::Value> = (0..=MAX_PATCH_KEYS)
            .map(|i| (format!("k{i}"), json!(1)))
            .collect();
        let too_many = patch_keys(&json!({"agents": many})).unwrap_err();
        assert!(too_many.contains("at most 64"), "{too_many}");
    }

    #[test]
    fn a_patch_merges_keeps_comments_and_removes_with_null() {
        let (_d, path, mut doc) =
            doc("# mine\n[heartbeat]\nevery = \"5m\" # often\n\n[log]\nlevel = \"debug\"\n");
        let patch =
            json!({"heartbeat": {"every": "10m", "enabled": false}, "log": {"level": null}});
        doc.apply_patch(&patch_keys(&patch).unwrap()).unwrap();
        doc.save().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# mine\n"), "{text}");
        assert!(text.contains("every = \"10m\" # often"), "{text}");
        assert!(text.contains("enabled = false"), "{text}");
        assert!(!text.contains("level"), "{text}");
    }

    #[test]
    fn a_wrong_value_an_unknown_key_or_a_secret_is_refused() {
        for patch in [
            json!({"heartbeat": {"every": 5}}),
            json!({"heartbeat": {"evry": "5m"}}),
            json!({"gateway": {"token": "x"}}),
            json!({"agent": {"fallbacks": [null]}}),
        ] {
            let (_d, _p, mut doc) = doc("");
            assert!(
                doc.apply_patch(&patch_keys(&patch).unwrap()).is_err(),
                "{patch}"
            );
        }
    }
}
