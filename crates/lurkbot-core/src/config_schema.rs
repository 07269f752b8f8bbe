//! The schema of `config.toml`, derived from the same types that load and validate it:
//! `lurkbot config schema` prints it (JSON Schema), and `docs/CONFIG.md` is generated from it.
//!
//! The derivation (schemars, feature `schema`) runs at development time: its output is
//! `config_schema.json` beside this file, embedded in the binary, and a test (run with
//! `--all-features`, as `scripts/test.sh` does) fails when the types and the file differ —
//! `LURKBOT_UPDATE_SNAPSHOTS=1` rewrites it. The release binary carries 10 KB of compressed schema instead
//! of the generator and an implementation per config type (0.2 MiB).

use serde_json::Value;

/// The embedded schema, gzip-compressed by `build.rs` ([`crate::packed`]).
const EMBEDDED: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/config_schema.json.gz"));

/// The JSON Schema of `config.toml`.
pub fn config_schema() -> Value {
    crate::packed::unpack_text(EMBEDDED)
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null)
}

/// `docs/CONFIG.md`: every key of [`config_schema`] with its type, default and meaning, one
/// table per section.
pub fn config_reference() -> String {
    let schema = config_schema();
    let defs = schema.get("$defs").cloned().unwrap_or(Value::Null);
    let mut out = String::from(
        "# config.toml reference\n\n\
         <!-- Generated from the config types by `lurkbot config schema --markdown`; a test keeps it\n\
         in step. Do not edit by hand. -->\n\n\
         Every setting LurkBot reads from `<home>/config.toml` (mode 0600). All sections and keys are\n\
         optional; a missing key has the default shown. `lurkbot config set KEY VALUE` changes one\n\
         (validated first, comments kept), `lurkbot config list` shows the values in force and where\n\
         each came from, `lurkbot config schema` prints this as JSON Schema. An unknown key is\n\
         reported with the closest known one. A running gateway reloads the file on SIGHUP and after\n\
         `config set`; these take effect at the next start: ",
    );
    let restart: Vec<String> = crate::RESTART_KEYS
        .iter()
        .map(|k| format!("`{k}`"))
        .collect();
    out.push_str(&restart.join(", "));
    out.push_str(
        ". Secrets (provider keys, skill credentials) never go here: they live in `.env` files.\n",
    );
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            section(&mut out, name, prop, &defs);
        }
    }
    out
}

/// Each dotted key of `keys` (`heartbeat.every`) with its description, type, allowed values and
/// default from [`config_schema`] (the `gateway` tool's `config.schema`).
pub fn keys_schema(keys: &[&str]) -> serde_json::Map<String, Value> {
    let schema = config_schema();
    let defs = schema.get("$defs").cloned().unwrap_or(Value::Null);
    let mut out = serde_json::Map::new();
    for key in keys {
        let mut node = &schema;
        for part in key.split('.') {
            node = resolve(node, &defs)
                .get("properties")
                .and_then(|p| p.get(part))
                .unwrap_or(&Value::Null);
        }
        let described = resolve(node, &defs);
        let mut entry = serde_json::Map::new();
        for field in ["description", "type", "enum", "default"] {
            if let Some(v) = node.get(field).or_else(|| described.get(field)) {
                entry.insert(field.into(), v.clone());
            }
        }
        out.insert((*key).to_string(), Value::Object(entry));
    }
    out
}

/// The definition a property points to (`$ref`, or the one non-null choice of an optional
/// one), or the property itself.
fn resolve<'a>(prop: &'a Value, defs: &'a Value) -> &'a Value {
    if let Some(choice) = prop.get("anyOf").and_then(Value::as_array).and_then(|c| {
        c.iter()
            .find(|v| v.get("type") != Some(&Value::from("null")))
    }) {
        return resolve(choice, defs);
    }
    prop.get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
        .and_then(|name| defs.get(name))
        .unwrap_or(prop)
}

fn section(out: &mut String, key: &str, prop: &Value, defs: &Value) {
    let target = resolve(prop, defs);
    let description = heading_text(prop.get("description").or(target.get("description")));
    if let Some(map) = target.get("additionalProperties").filter(|a| a.is_object()) {
        out.push_str(&format!("\n## `[{key}.<name>]`\n\n{description}\n"));
        let entry = resolve(map, defs);
        rows_of(
            out,
            &format!("{key}.<name>"),
            entry,
            defs,
            &mut vec![ref_name(map)],
        );
        return;
    }
    if let Some(items) = target
        .get("items")
        .filter(|_| target.get("type") == Some(&"array".into()))
    {
        // An array of tables: `[[key]]`, each entry with these keys.
        out.push_str(&format!(
            "\n## `[[{key}]]`\n\n{description} `{key}` is a list of tables, each with:\n"
        ));
        let entry = resolve(items, defs);
        rows_of(
            out,
            &format!("{key}[]"),
            entry,
            defs,
            &mut vec![ref_name(items)],
        );
        return;
    }
    out.push_str(&format!("\n## `[{key}]`\n\n{description}\n"));
    rows_of(out, key, target, defs, &mut vec![ref_name(prop)]);
}

/// The definition name a property refers to, if any.
fn ref_name(prop: &Value) -> Option<String> {
    prop.get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
        .map(str::to_string)
}

/// One table of keys, then its nested tables; `path` holds the definitions being shown, so a
/// table that nests its own kind (`by_provider` layers) is named instead of repeated.
fn rows_of(
    out: &mut String,
    prefix: &str,
    object: &Value,
    defs: &Value,
    path: &mut Vec<Option<String>>,
) {
    let Some(props) = object.get("properties").and_then(Value::as_object) else {
        return;
    };
    out.push_str("\n| key | type | default | meaning |\n|---|---|---|---|\n");
    let mut nested = Vec::new();
    for (name, prop) in props {
        let key = format!("{prefix}.{name}");
        let target = resolve(prop, defs);
        let map_of = target.get("additionalProperties").and_then(ref_name);
        let is_table = target.get("properties").is_some() || map_of.is_some();
        let repeats = map_of.is_some() && path.contains(&map_of);
        if repeats {
            out.push_str(&format!(
                "| `{key}.<name>` | table | — | {} The same keys as `[{prefix}]`. |\n",
                one_line(prop.get("description"))
            ));
            continue;
        }
        if is_table {
            nested.push((key, prop));
            continue;
        }
        out.push_str(&format!(
            "| `{key}` | {} | {} | {} |\n",
            type_name(prop, defs),
            default_of(prop),
            meaning(prop, defs)
        ));
    }
    for (key, prop) in nested {
        let target = resolve(prop, defs);
        let description = heading_text(prop.get("description").or(target.get("description")));
        if let Some(map) = target.get("additionalProperties").filter(|a| a.is_object()) {
            out.push_str(&format!("\n### `[{key}.<name>]`\n\n{description}\n"));
            path.push(ref_name(map));
            rows_of(
                out,
                &format!("{key}.<name>"),
                resolve(map, defs),
                defs,
                path,
            );
        } else {
            out.push_str(&format!("\n### `[{key}]`\n\n{description}\n"));
            path.push(ref_name(prop));
            rows_of(out, &key, target, defs, path);
        }
        path.pop();
    }
}

fn type_name(prop: &Value, defs: &Value) -> String {
    let target = resolve(prop, defs);
    if let Some(choices) = target.get("oneOf").and_then(Value::as_array) {
        let names: Vec<String> = choices
            .iter()
            .filter_map(|c| c.get("const").and_then(Value::as_str))
            .map(|c| format!("`{c}`"))
            .collect();
        return format!("one of {}", names.join(", "));
    }
    let kinds: Vec<&str> = match target.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    let kind = kinds.iter().find(|k| **k != "null").copied().unwrap_or("");
    let optional = if kinds.contains(&"null") {
        " (optional)"
    } else {
        ""
    };
    let shown = match kind {
        "array" => {
            let item = target
                .get("items")
                .map(|i| type_name(i, defs))
                .unwrap_or_default();
            format!("list of {item}")
        }
        "integer" if target.get("maximum").and_then(Value::as_u64) == Some(65535) => {
            "port number 1–65535".to_string()
        }
        "integer" => "integer ≥ 0".to_string(),
        "boolean" => "true or false".to_string(),
        "string" => "string".to_string(),
        "object" => "table".to_string(),
        other => other.to_string(),
    };
    format!("{shown}{optional}")
}

fn default_of(prop: &Value) -> String {
    match prop.get("default") {
        None | Some(Value::Null) => "—".to_string(),
        Some(Value::Array(a)) if a.is_empty() => "`[]`".to_string(),
        Some(v) => format!("`{v}`").replace('|', "\\|"),
    }
}

fn meaning(prop: &Value, defs: &Value) -> String {
    let mut text = one_line(prop.get("description"));
    let target = resolve(prop, defs);
    if let Some(choices) = target.get("oneOf").and_then(Value::as_array) {
        let explained: Vec<String> = choices
            .iter()
            .filter_map(|c| {
                let name = c.get("const").and_then(Value::as_str)?;
                Some(format!("`{name}`: {}", one_line(c.get("description"))))
            })
            .collect();
        text.push_str(&format!(" ({})", explained.join("; ")));
    }
    text
}

/// A section's description without the "`[name]`: " it starts with (the heading says it).
fn heading_text(description: Option<&Value>) -> String {
    let text = one_line(description);
    let rest = match text.strip_prefix("`[").and_then(|t| t.split_once("]`")) {
        Some((_, rest)) => rest.trim_start_matches(':').trim_start_matches('.').trim(),
        None => text.as_str(),
    };
    let mut chars = rest.chars();
    match chars.next() {
        Some(first) => format!("{}{}", first.to_uppercase(), chars.as_str()),
        None => String::new(),
    }
}

fn one_line(description: Option<&Value>) -> String {
    description
        .and_then(Value::as_str)
        .unwrap_or("")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;

    #[test]
    fn every_known_key_is_in_the_reference() {
        let reference = config_reference();
        let mut leaves = Vec::new();
        collect(
            &serde_json::to_value(Config::default()).unwrap(),
            "",
            &mut leaves,
        );
        for key in leaves {
            assert!(
                reference.contains(&format!("`{key}`")),
                "{key} missing:\n{reference}"
            );
        }
        assert!(
            reference.contains("| `gateway.port` | port number 1–65535 | `18789` |"),
            "{reference}"
        );
        assert!(reference.contains("`[agents.<name>]`"));
        assert!(reference.contains("`read-write`: Read and change events."));
        assert!(
            reference.contains("| `agents.<name>.sandbox` | one of `off`"),
            "{reference}"
        );
    }

    #[test]
    fn docs_config_md_is_the_generated_reference() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/CONFIG.md");
        let written = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            written == config_reference(),
            "docs/CONFIG.md is out of date: run `cargo run -p lurkbot -- config schema --markdown > docs/CONFIG.md`"
        );
    }

    /// Leaf keys of the defaults (empty tables are free-form maps and have no leaves).
    fn collect(value: &Value, prefix: &str, out: &mut Vec<String>) {
        if let Value::Object(map) = value {
            for (k, v) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                match v {
                    Value::Object(_) => collect(v, &key, out),
                    _ => out.push(key),
                }
            }
        }
    }
}

#[cfg(all(test, feature = "schema"))]
mod embedded_tests {
    use super::*;

    /// The schema derived from the config types now (what `config_schema.json` must hold).
    fn derived_config_schema() -> Value {
        serde_json::to_value(schemars::schema_for!(crate::Config)).unwrap_or(Value::Null)
    }

    #[test]
    fn the_embedded_schema_is_the_one_the_types_derive() {
        let derived = derived_config_schema();
        assert!(derived.get("properties").is_some());
        if std::env::var_os("LURKBOT_UPDATE_SNAPSHOTS").is_some() {
            let path =
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/config_schema.json");
            std::fs::write(path, derived.to_string() + "\n").unwrap();
            return;
        }
        assert!(
            config_schema() == derived,
            "src/config_schema.json is out of step with the config types: run LURKBOT_UPDATE_SNAPSHOTS=1 cargo test -p lurkbot-core --features schema config_schema"
        );
    }
}
