//! Editing `config.toml` by dotted key while keeping its comments and layout
//! (`lurkbot config get|set`).

use std::path::{Path, PathBuf};

use toml_edit::{DocumentMut, Item, Table, Value};

use crate::{Config, ConfigError, CoreError};

/// Why a `config get|set` could not be done.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigDocError {
    /// The file (or the file as it would become) is not valid.
    #[error(transparent)]
    Invalid(#[from] ConfigError),
    /// The key is malformed, or a part of it is not a table.
    #[error("bad key '{key}': {reason}")]
    BadKey {
        /// The key as given.
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// The key names a secret, which never goes through the command line.
    #[error("'{key}' holds a secret: secrets never pass through the command line; edit {} by hand (it is mode 0600) or use the skill's secrets/.env file", file.display())]
    Secret {
        /// The key as given.
        key: String,
        /// The config file.
        file: PathBuf,
    },
    /// The change would add an unknown key or a contradiction (nothing was written).
    #[error("{message}")]
    Rejected {
        /// The key as given.
        key: String,
        /// What is wrong and what to do (with a "did you mean" for a typo).
        message: String,
    },
    /// Reading or writing failed.
    #[error(transparent)]
    Io(#[from] CoreError),
}

/// What a secret value is printed as.
const MASKED: &str = "********";

/// Replaces every value under a secret key (at any depth) with [`MASKED`].
fn mask_secrets(item: &mut Item) {
    match item {
        Item::Table(t) => {
            for (k, v) in t.iter_mut() {
                if is_secret_key(k.get()) && !v.is_table() && !v.is_array_of_tables() {
                    *v = toml_edit::value(MASKED);
                } else {
                    mask_secrets(v);
                }
            }
        }
        Item::ArrayOfTables(a) => a.iter_mut().for_each(|t| {
            let mut item = Item::Table(t.clone());
            mask_secrets(&mut item);
            if let Item::Table(masked) = item {
                *t = masked;
            }
        }),
        Item::Value(Value::InlineTable(t)) => {
            for (k, v) in t.iter_mut() {
                if is_secret_key(k.get()) {
                    *v = Value::from(MASKED);
                } else {
                    let mut inner = Item::Value(v.clone());
                    mask_secrets(&mut inner);
                    if let Item::Value(masked) = inner {
                        *v = masked;
                    }
                }
            }
        }
        _ => {}
    }
}

/// `value` with the value of every secret key inside it ([`is_secret_key`]), at any depth,
/// replaced by `********` (`config list` and OpenClaw's `config.get` show settings this way).
pub fn mask_secret_values(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Array(items) => Value::Array(items.into_iter().map(mask_secret_values).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let v = if is_secret_key(&k) && !v.is_null() {
                        Value::String("********".into())
                    } else {
                        mask_secret_values(v)
                    };
                    (k, v)
                })
                .collect(),
        ),
        other => other,
    }
}

/// Last key segments that hold secrets: refused by `set`, masked by `get`.
pub fn is_secret_key(key: &str) -> bool {
    let last = key
        .rsplit('.')
        .next()
        .unwrap_or(key)
        .to_ascii_lowercase()
        .replace('-', "_");
    matches!(
        last.as_str(),
        "token" | "password" | "pass" | "secret" | "key" | "api_key" | "apikey"
    ) || ["_token", "_password", "_secret", "_key"]
        .iter()
        .any(|s| last.ends_with(s))
}

/// `config.toml` as an editable document.
#[derive(Debug)]
pub struct ConfigDoc {
    path: PathBuf,
    doc: DocumentMut,
}

impl ConfigDoc {
    /// Loads the file (empty if missing), validating it against [`Config`].
    ///
    /// # Errors
    /// [`ConfigDocError::Invalid`] with file, line and key when it is malformed.
    pub fn load(path: &Path) -> Result<Self, ConfigDocError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(CoreError::io("read", path, e).into()),
        };
        Config::parse(path, &text)?;
        let doc = text.parse::<DocumentMut>().map_err(|e| {
            ConfigDocError::Invalid(ConfigError {
                file: path.to_path_buf(),
                line: 0,
                column: 0,
                key: None,
                message: e.message().to_string(),
            })
        })?;
        Ok(Self {
            path: path.to_path_buf(),
            doc,
        })
    }

    /// The value at a dotted key, rendered for people: strings bare, everything else as TOML.
    /// Secret keys come back as `********`. `None` if unset.
    ///
    /// # Errors
    /// [`ConfigDocError::BadKey`] for an empty key segment.
    pub fn get(&self, key: &str) -> Result<Option<String>, ConfigDocError> {
        let parts = split_key(key)?;
        let mut item: &Item = self.doc.as_item();
        for part in &parts {
            match item.get(part.as_str()) {
                Some(next) => item = next,
                None => return Ok(None),
            }
        }
        if is_secret_key(key) && !item.is_none() {
            return Ok(Some(MASKED.into()));
        }
        // A table (or the values inside an inline table) may hold secrets too: mask them.
        let mut item = item.clone();
        mask_secrets(&mut item);
        Ok(match &item {
            Item::None => None,
            Item::Value(Value::String(s)) => Some(s.value().clone()),
            Item::Value(v) => Some(v.clone().decorated("", "").to_string()),
            Item::Table(t) => Some(t.to_string().trim_end().to_string()),
            Item::ArrayOfTables(a) => Some(a.to_string().trim_end().to_string()),
        })
    }

    /// Sets a dotted key. `raw` is read as a TOML value when it is one (`8080`, `true`,
    /// `["a","b"]`, `"quoted"`), else taken as a plain string (`read-write`). The resulting
    /// file must still be valid; nothing is written here (see [`ConfigDoc::save`]).
    ///
    /// # Errors
    /// Secret keys, malformed keys, and values the typed config rejects.
    pub fn set(&mut self, key: &str, raw: &str) -> Result<(), ConfigDocError> {
        let value = raw
            .trim()
            .parse::<Value>()
            .unwrap_or_else(|_| Value::from(raw));
        self.set_value(key, value)
    }

    /// Sets a dotted key to a TOML value; the same checks as [`ConfigDoc::set`].
    ///
    /// # Errors
    /// Secret keys, malformed keys, and values the typed config rejects.
    pub fn set_value(&mut self, key: &str, value: Value) -> Result<(), ConfigDocError> {
        let before = Config::check(&self.path, &self.doc.to_string())
            .map(|(_, p)| p)
            .unwrap_or_default();
        if is_secret_key(key) {
            return Err(ConfigDocError::Secret {
                key: key.into(),
                file: self.path.clone(),
            });
        }
        let parts = split_key(key)?;
        let (last, tables) = parts.split_last().ok_or_else(|| bad(key, "empty key"))?;
        let mut table: &mut Table = self.doc.as_table_mut();
        for part in tables {
            let entry = table.entry(part).or_insert_with(|| {
                let mut t = Table::new();
                t.set_implicit(true);
                Item::Table(t)
            });
            table = entry
                .as_table_mut()
                .ok_or_else(|| bad(key, &format!("'{part}' is a value, not a table")))?;
        }
        match table.get_mut(last) {
            Some(Item::Value(existing)) => {
                let decor = existing.decor().clone();
                *existing = value;
                *existing.decor_mut() = decor;
            }
            Some(Item::Table(_) | Item::ArrayOfTables(_)) => {
                return Err(bad(key, "it is a table; set one of its keys instead"));
            }
            _ => {
                table.insert(last, Item::Value(value));
            }
        }
        let (_, after) = Config::check(&self.path, &self.doc.to_string())?;
        if let Some(new) = after.into_iter().find(|p| !before.contains(p)) {
            return Err(ConfigDocError::Rejected {
                key: key.into(),
                message: new.message,
            });
        }
        Ok(())
    }

    /// Removes a dotted key, so its default applies again; false when it was not set. The
    /// resulting file must still be valid; nothing is written here (see [`ConfigDoc::save`]).
    ///
    /// # Errors
    /// Malformed keys, and a removal the typed config rejects.
    pub fn unset(&mut self, key: &str) -> Result<bool, ConfigDocError> {
        let before = Config::check(&self.path, &self.doc.to_string())
            .map(|(_, p)| p)
            .unwrap_or_default();
        let parts = split_key(key)?;
        let (last, tables) = parts.split_last().ok_or_else(|| bad(key, "empty key"))?;
        let mut table: &mut Table = self.doc.as_table_mut();
        for part in tables {
            match table.get_mut(part).and_then(Item::as_table_mut) {
                Some(next) => table = next,
                None => return Ok(false),
            }
        }
        if table.remove(last).is_none() {
            return Ok(false);
        }
        let (_, after) = Config::check(&self.path, &self.doc.to_string())?;
        if let Some(new) = after.into_iter().find(|p| !before.contains(p)) {
            return Err(ConfigDocError::Rejected {
                key: key.into(),
                message: new.message,
            });
        }
        Ok(true)
    }

    /// Writes the document atomically with mode 0600.
    ///
    /// # Errors
    /// I/O failures.
    pub fn save(&self) -> Result<(), ConfigDocError> {
        // Copies of config.toml a killed `config set` left behind hold the token: sweep them.
        if let Some(dir) = self.path.parent() {
            crate::sweep_stale_temp_in(dir);
        }
        crate::write_atomic_with_mode(&self.path, self.doc.to_string().as_bytes(), 0o600)?;
        Ok(())
    }
}

fn bad(key: &str, reason: &str) -> ConfigDocError {
    ConfigDocError::BadKey {
        key: key.into(),
        reason: reason.into(),
    }
}

fn split_key(key: &str) -> Result<Vec<String>, ConfigDocError> {
    let parts: Vec<String> = key.split('.').map(|p| p.trim().to_string()).collect();
    if parts.iter().any(String::is_empty) {
        return Err(bad(key, "use dotted names such as permissions.calendar"));
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "# LurkBot settings\n\n[permissions]\n# who may read calendars\ncalendar = \"none\" # default\n\n[gateway]\nport = 18789\ntoken = \"abc\"\n";

    fn doc(text: &str) -> (tempfile::TempDir, ConfigDoc) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.toml");
        std::fs::write(&p, text).unwrap();
        let d = ConfigDoc::load(&p).unwrap();
        (dir, d)
    }

    #[test]
    fn set_keeps_comments_and_types_values() {
        let (dir, mut d) = doc(SAMPLE);
        d.set("permissions.calendar", "read-write").unwrap();
        d.set("gateway.port", "9000").unwrap();
        d.set("agent.model", "openai/gpt-4o-mini").unwrap();
        d.save().unwrap();
        let text = std::fs::read_to_string(dir.path().join("config.toml")).unwrap();
        assert!(
            text.contains("# who may read calendars\ncalendar = \"read-write\" # default"),
            "{text}"
        );
        assert!(text.contains("port = 9000\n"), "{text}");
        assert!(
            text.contains("[agent]\nmodel = \"openai/gpt-4o-mini\""),
            "{text}"
        );
        let d = ConfigDoc::load(&dir.path().join("config.toml")).unwrap();
        assert_eq!(d.get("gateway.port").unwrap().as_deref(), Some("9000"));
        assert_eq!(
            d.get("permissions.calendar").unwrap().as_deref(),
            Some("read-write")
        );
        assert_eq!(d.get("nope.nothing").unwrap(), None);
    }

    #[test]
    fn refuses_invalid_values_secrets_and_bad_keys() {
        let (_dir, mut d) = doc(SAMPLE);
        assert!(
            matches!(d.set("permissions.calendar", "write"), Err(ConfigDocError::Invalid(e)) if e.key.as_deref() == Some("permissions.calendar"))
        );
        assert!(matches!(
            d.set("gateway.token", "x"),
            Err(ConfigDocError::Secret { .. })
        ));
        assert!(matches!(
            d.set("providers.openai.api_key", "x"),
            Err(ConfigDocError::Secret { .. })
        ));
        assert!(matches!(
            d.set("gateway..port", "1"),
            Err(ConfigDocError::BadKey { .. })
        ));
        assert!(matches!(
            d.set("gateway.port.x", "1"),
            Err(ConfigDocError::BadKey { .. })
        ));
        assert!(matches!(
            d.set("gateway", "1"),
            Err(ConfigDocError::BadKey { .. })
        ));
        assert_eq!(d.get("gateway.token").unwrap().as_deref(), Some("********"));
    }

    #[test]
    fn secrets_are_masked_in_tables_and_the_whole_file() {
        let (_d, d) = doc(
            "[gateway]\nport = 1\ntoken = \"tok-secret-123\"\n[mcp.servers.x]\nenv = { API_KEY = \"k-secret-9\", MODE = \"a\" }\n",
        );
        for key in ["gateway", "mcp", "mcp.servers.x"] {
            let shown = d.get(key).unwrap().unwrap();
            assert!(
                !shown.contains("tok-secret") && !shown.contains("k-secret"),
                "{key}: {shown}"
            );
        }
        let gateway = d.get("gateway").unwrap().unwrap();
        assert!(
            gateway.contains("port = 1") && gateway.contains("********"),
            "{gateway}"
        );
        assert_eq!(d.get("gateway.token").unwrap().as_deref(), Some("********"));
    }

    #[test]
    fn malformed_file_is_reported_not_panicked() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.toml");
        std::fs::write(&p, "[gateway]\nport = 1\nport = 2\n").unwrap();
        match ConfigDoc::load(&p) {
            Err(ConfigDocError::Invalid(e)) => assert_eq!(e.line, 3, "{e}"),
            other => panic!("{other:?}"),
        }
    }
}
