//! A YAML document as a JSON value, for a skill's front matter: `granit-parser` (a YAML 1.2
//! parser) reads the text, and its events are built into a [`Value`] here. Plain scalars are
//! resolved by YAML 1.2's core schema (`null`/`~`, `true`/`false`, integers, floats, else
//! strings); quoted and block scalars are strings; mapping keys are their scalars' text; aliases
//! are resolved, with the whole document capped at [`MAX_NODES`] (no alias bomb).

use std::collections::HashMap;

use granit_parser::{Event, Parser, ScalarStyle};
use serde_json::{Map, Number, Value};

/// Most nodes a document may expand to (aliases included).
pub(super) const MAX_NODES: usize = 10_000;

/// A collection being built: its value and, for a mapping, the key waiting for its value.
enum Open {
    Sequence(Vec<Value>, usize),
    Mapping(Map<String, Value>, Option<String>, usize),
}

/// The first document of `text`; `Null` when it is empty.
///
/// # Errors
/// The parser's message (its first line), or a document past [`MAX_NODES`].
pub(super) fn to_value(text: &str) -> Result<Value, String> {
    let mut stack: Vec<Open> = Vec::new();
    let mut anchors: HashMap<usize, Value> = HashMap::new();
    let mut nodes = 0usize;
    let mut root: Option<Value> = None;
    for event in Parser::new_from_str(text) {
        let (event, _) = event.map_err(|e| e.to_string())?;
        let finished = match event {
            Event::Scalar(text, style, anchor, _) => {
                let value = if style == ScalarStyle::Plain {
                    plain(&text)
                } else {
                    Value::String(text.into_owned())
                };
                Some((value, anchor))
            }
            Event::Alias(id) => {
                let value = anchors
                    .get(&id)
                    .cloned()
                    .ok_or("an alias names no anchor before it")?;
                nodes += count(&value);
                Some((value, 0))
            }
            Event::SequenceStart(_, anchor, _) => {
                stack.push(Open::Sequence(Vec::new(), anchor));
                None
            }
            Event::MappingStart(_, anchor, _) => {
                stack.push(Open::Mapping(Map::new(), None, anchor));
                None
            }
            Event::SequenceEnd | Event::MappingEnd => match stack.pop() {
                Some(Open::Sequence(items, anchor)) => Some((Value::Array(items), anchor)),
                Some(Open::Mapping(map, _, anchor)) => Some((Value::Object(map), anchor)),
                None => return Err("a collection ends that never began".into()),
            },
            Event::DocumentEnd if stack.is_empty() && root.is_some() => break,
            _ => None,
        };
        let Some((value, anchor)) = finished else {
            continue;
        };
        nodes += 1;
        if nodes > MAX_NODES {
            return Err(format!("the document holds more than {MAX_NODES} nodes"));
        }
        if anchor != 0 {
            anchors.insert(anchor, value.clone());
        }
        match stack.last_mut() {
            Some(Open::Sequence(items, _)) => items.push(value),
            Some(Open::Mapping(map, key, _)) => match key.take() {
                Some(k) => {
                    map.insert(k, value);
                }
                None => *key = Some(key_text(value)?),
            },
            None => root = Some(value),
        }
    }
    Ok(root.unwrap_or(Value::Null))
}

/// A mapping key's text (a scalar; a collection cannot key a JSON object).
fn key_text(value: Value) -> Result<String, String> {
    match value {
        Value::String(s) => Ok(s),
        Value::Null => Ok("null".into()),
        Value::Bool(b) => Ok(b.to_string()),
        Value::Number(n) => Ok(n.to_string()),
        _ => Err("a mapping key is a collection".into()),
    }
}

/// Nodes in `value` (an alias costs what it expands to).
fn count(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(count).sum::<usize>(),
        Value::Object(map) => 1 + map.values().map(count).sum::<usize>(),
        _ => 1,
    }
}

/// A plain scalar by YAML 1.2's core schema.
fn plain(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        _ => {}
    }
    let integer = text
        .strip_prefix("0x")
        .and_then(|h| i64::from_str_radix(h, 16).ok())
        .or_else(|| {
            text.strip_prefix("0o")
                .and_then(|o| i64::from_str_radix(o, 8).ok())
        })
        .or_else(|| {
            let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
            (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
                .then(|| text.parse::<i64>().ok())
                .flatten()
        });
    if let Some(n) = integer {
        return Value::Number(n.into());
    }
    let looks_numeric = text
        .strip_prefix(['-', '+'])
        .unwrap_or(text)
        .starts_with(|c: char| c.is_ascii_digit() || c == '.');
    if looks_numeric
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || b".+-eE".contains(&b))
        && let Some(n) = text.parse::<f64>().ok().and_then(Number::from_f64)
    {
        return Value::Number(n);
    }
    Value::String(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn block_and_flow_collections_scalars_and_aliases() {
        let doc = "name: x\ndescription: >\n  folded\n  text\nversion: 1.0.0\nn: 12\nf: 1.5\nok: true\nnone: ~\nq: '012'\nlist:\n  - a\n  - b\nflow: {\"openclaw\": {\"requires\": {\"bins\": [\"gh\",],},},}\nbase: &b [1, 2]\ncopy: *b\n";
        let v = to_value(doc).unwrap();
        assert_eq!(v["name"], "x");
        assert_eq!(v["description"], "folded text\n");
        assert_eq!(v["version"], "1.0.0");
        assert_eq!(v["n"], 12);
        assert_eq!(v["f"], 1.5);
        assert_eq!(v["ok"], true);
        assert_eq!(v["none"], Value::Null);
        assert_eq!(v["q"], "012");
        assert_eq!(v["list"], json!(["a", "b"]));
        assert_eq!(v["flow"]["openclaw"]["requires"]["bins"], json!(["gh"]));
        assert_eq!(v["copy"], json!([1, 2]));
        assert_eq!(to_value("").unwrap(), Value::Null);
        assert!(to_value("a: [1, 2").is_err());
    }

    #[test]
    fn an_alias_bomb_is_refused() {
        let mut doc = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..8 {
            let prev = format!("*a{}", i - 1);
            doc.push_str(&format!(
                "a{i}: &a{i} [{}]\n",
                std::iter::repeat_n(prev.as_str(), 10)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let e = to_value(&doc).unwrap_err();
        assert!(e.contains("more than"), "{e}");
    }
}
