//! A `SKILL.md`'s YAML front matter, read leniently and as the field writes it: `name` and
//! `description` are required, and a name that differs from its folder or breaks the
//! agentskills.io character rule (Hermes Agent's corpus has both) is accepted as OpenClaw and
//! Hermes accept it, with a note for `doctor`; gating is read from OpenClaw's
//! `metadata.openclaw` (`requires.bins|anyBins|env|config`, `os`; a JSON-style flow mapping,
//! trailing commas included) and from Hermes Agent's `platforms`, `prerequisites`
//! (`commands`, `env_vars`, also under `metadata.hermes`) and `required_environment_variables`.
//! Every other key is ignored.

use serde_json::Value;

/// Longest `description` (agentskills.io).
const MAX_DESCRIPTION: usize = 1024;

/// What a skill needs before it is offered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Requirements {
    /// Programs that must all be on `PATH`.
    pub bins: Vec<String>,
    /// Programs of which one must be on `PATH`.
    pub any_bins: Vec<String>,
    /// Variables that must be set.
    pub env: Vec<String>,
    /// Settings that must be set (dotted keys).
    pub config: Vec<String>,
    /// Operating systems it runs on (`linux`, `darwin`/`macos`, `win32`/`windows`); empty: any.
    pub os: Vec<String>,
}

/// A valid manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The name, as the front matter writes it.
    pub name: String,
    /// What departs from agentskills.io's rules without keeping the skill from loading (a name
    /// that is not its folder's), for `doctor`.
    pub note: Option<String>,
    /// What it is for.
    pub description: String,
    /// What it needs.
    pub requires: Requirements,
}

/// Reads `text` (a whole SKILL.md) found in folder `folder`.
///
/// # Errors
/// Why the skill is invalid, in words.
pub(super) fn parse(text: &str, folder: &str) -> Result<Manifest, String> {
    let yaml = front_matter(text)?;
    let fields: Value = super::yaml::to_value(yaml)
        .map_err(|e| format!("the front matter is not valid YAML: {}", first_line(&e)))?;
    let Value::Object(_) = fields else {
        return Err("the front matter is not a mapping of keys".into());
    };
    let text_of = |key: &str| fields.get(key).and_then(Value::as_str).map(str::trim);
    let name = text_of("name").ok_or("the front matter has no `name`")?;
    check_name(name)?;
    let note = if name != folder {
        Some(format!("`name: {name}` differs from its folder '{folder}'"))
    } else if !follows_agentskills(name) {
        Some(format!(
            "`name: {name}` is not an agentskills.io name (lower-case letters, digits, single hyphens)"
        ))
    } else {
        None
    };
    let description = text_of("description")
        .filter(|d| !d.is_empty())
        .ok_or("the front matter has no `description`")?;
    if description.chars().count() > MAX_DESCRIPTION {
        return Err(format!(
            "the description is longer than {MAX_DESCRIPTION} characters"
        ));
    }
    Ok(Manifest {
        name: name.to_string(),
        note,
        description: description.to_string(),
        requires: requirements(&fields),
    })
}

/// The text between the opening `---` line and the next `---` line.
fn front_matter(text: &str) -> Result<&str, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or("SKILL.md does not start with a `---` front matter block")?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Ok(&rest[..offset]);
        }
        offset += line.len();
    }
    Err("the front matter block is not closed by a `---` line".into())
}

/// agentskills.io: 1–64 of `a-z`, `0-9` and `-`, no hyphen first, last or doubled.
/// The names refused: empty, over 128 characters, or with a `/`, white space or control
/// character (it could not name one skill in a list or a prompt line).
fn check_name(name: &str) -> Result<(), String> {
    let ok = (1..=128).contains(&name.chars().count())
        && !name
            .chars()
            .any(|c| c == '/' || c.is_whitespace() || c.is_control());
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`name: {}` is not a skill name (1-128 characters, no '/', spaces or control characters)",
            name.escape_debug()
        ))
    }
}

/// agentskills.io's rule: 1-64 lower-case letters, digits and single inner hyphens.
fn follows_agentskills(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text)
}

fn strings(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        Some(Value::String(one)) => vec![one.clone()],
        _ => Vec::new(),
    }
}

fn requirements(fields: &Value) -> Requirements {
    let mut r = Requirements::default();
    let metadata = fields.get("metadata");
    // OpenClaw (and its earlier name, clawdbot).
    if let Some(oc) = metadata.and_then(|m| m.get("openclaw").or_else(|| m.get("clawdbot"))) {
        let requires = oc.get("requires");
        r.bins = strings(requires.and_then(|q| q.get("bins")));
        r.any_bins = strings(requires.and_then(|q| q.get("anyBins")));
        r.env = strings(requires.and_then(|q| q.get("env")));
        r.config = strings(requires.and_then(|q| q.get("config")));
        r.os = strings(oc.get("os"));
    }
    // Hermes Agent.
    r.os.extend(strings(fields.get("platforms")));
    let hermes = metadata.and_then(|m| m.get("hermes"));
    for prerequisites in [
        fields.get("prerequisites"),
        hermes.and_then(|h| h.get("prerequisites")),
    ]
    .into_iter()
    .flatten()
    {
        r.bins.extend(strings(prerequisites.get("commands")));
        r.env.extend(strings(prerequisites.get("env_vars")));
    }
    if let Some(Value::Array(vars)) = fields.get("required_environment_variables") {
        // Entries marked as needed only in some cases (`required_for`, `optional`) do not gate.
        r.env.extend(
            vars.iter()
                .filter(|v| {
                    v.get("required_for").is_none() && v.get("optional") != Some(&Value::Bool(true))
                })
                .filter_map(|v| v.get("name").and_then(Value::as_str).map(str::to_string)),
        );
    }
    for list in [
        &mut r.bins,
        &mut r.any_bins,
        &mut r.env,
        &mut r.config,
        &mut r.os,
    ] {
        let mut seen = std::collections::HashSet::new();
        list.retain(|item| seen.insert(item.clone()));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openclaw_flow_mappings_with_trailing_commas() {
        let text = "---\nname: trello\ndescription: \"Trello boards.\"\nhomepage: https://x\nmetadata:\n  {\n    \"openclaw\":\n      {\n        \"emoji\": \"📋\",\n        \"requires\": { \"bins\": [\"curl\", \"jq\"], \"env\": [\"TRELLO_API_KEY\"], },\n        \"os\": [\"darwin\", \"linux\"],\n        \"install\": [{ \"id\": \"brew\", \"kind\": \"brew\", },],\n      },\n  }\n---\n# Trello\n";
        let m = parse(text, "trello").expect("valid");
        assert_eq!(m.requires.bins, ["curl", "jq"]);
        assert_eq!(m.requires.env, ["TRELLO_API_KEY"]);
        assert_eq!(m.requires.os, ["darwin", "linux"]);
    }

    #[test]
    fn hermes_platforms_and_prerequisites() {
        let text = "---\nname: shop\ndescription: Shopify.\nplatforms: [linux, macos]\nprerequisites:\n  env_vars: [SHOP_TOKEN]\n  commands: [curl]\nrequired_environment_variables:\n  - name: SHOP_TOKEN\n  - name: SHOP_URL\n    required_for: remote shops\n---\n";
        let m = parse(text, "shop").expect("valid");
        assert_eq!(m.requires.os, ["linux", "macos"]);
        assert_eq!(m.requires.bins, ["curl"]);
        assert_eq!(m.requires.env, ["SHOP_TOKEN"], "SHOP_URL is conditional");
    }

    #[test]
    fn names_load_as_the_field_writes_them() {
        let m = parse("---\nname: a\ndescription: d\n---\n", "b").expect("loads");
        assert_eq!(m.name, "a");
        assert!(
            m.note
                .unwrap_or_default()
                .contains("differs from its folder 'b'")
        );
        let m = parse("---\nname: here.now\ndescription: d\n---\n", "here.now").expect("loads");
        assert!(
            m.note
                .unwrap_or_default()
                .contains("not an agentskills.io name")
        );
        assert_eq!(
            parse("---\nname: ok\ndescription: d\n---\n", "ok").map(|m| m.note),
            Ok(None)
        );
    }

    #[test]
    fn invalid_manifests_say_why() {
        let cases = [
            ("# no front matter", "x", "does not start"),
            ("---\nname: x\n", "x", "not closed"),
            ("---\nname: [x\n---\n", "x", "not valid YAML"),
            ("---\ndescription: d\n---\n", "x", "no `name`"),
            (
                "---\nname: bad name\ndescription: d\n---\n",
                "bad name",
                "not a skill name",
            ),
            ("---\nname: a\n---\n", "a", "no `description`"),
        ];
        for (text, folder, says) in cases {
            let e = parse(text, folder).unwrap_err();
            assert!(e.contains(says), "{text:?}: {e}");
        }
    }
}
