//! Values written into config.toml by an import, as TOML.

/// `text` as a TOML string.
pub(super) fn toml_string(text: &str) -> String {
    toml_edit::Value::from(text).to_string().trim().to_string()
}

/// `items` as a TOML array of strings.
pub(super) fn toml_list(items: &[String]) -> String {
    let array: toml_edit::Array = items.iter().map(String::as_str).collect();
    array.to_string().trim().to_string()
}
