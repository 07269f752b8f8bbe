//! The installed skills offered in the system prompt: `skills/<name>/SKILL.md` in the home,
//! named and described by their YAML front matter (`name:`, `description:`). A skill without
//! a description is still listed, by its directory name. Full skill gating and precedence come
//! with the skills feature; this is what the prompt needs.

use lurkbot_core::Home;

use crate::prompt::SkillEntry;

/// The skills under the home's `skills/`, sorted by name.
pub(crate) fn installed(home: &Home) -> Vec<SkillEntry> {
    let Ok(dirs) = std::fs::read_dir(home.join("skills")) else {
        return Vec::new();
    };
    let mut skills: Vec<SkillEntry> = dirs
        .filter_map(Result::ok)
        .filter_map(|dir| {
            let dir_name = dir.file_name().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(dir.path().join("SKILL.md")).ok()?;
            let (name, description) = front_matter(&text);
            Some(SkillEntry {
                name: name.unwrap_or_else(|| dir_name.clone()),
                description: description.unwrap_or_default(),
                location: format!("skills/{dir_name}/SKILL.md"),
            })
        })
        .collect();
    skills.sort_by(|a, b| a.name.cmp(&b.name));
    skills
}

/// `name` and `description` from a `---` front matter block.
fn front_matter(text: &str) -> (Option<String>, Option<String>) {
    let mut lines = text.lines();
    if lines.next().map(str::trim) != Some("---") {
        return (None, None);
    }
    let (mut name, mut description) = (None, None);
    for line in lines.take_while(|l| l.trim() != "---") {
        if let Some((key, value)) = line.split_once(':') {
            let value = unquote(value.trim());
            match key.trim() {
                "name" => name = Some(value),
                "description" => description = Some(value),
                _ => {}
            }
        }
    }
    (name, description)
}

fn unquote(value: &str) -> String {
    match value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
        Some(inner) => inner.replace("\\\"", "\"").replace("\\\\", "\\"),
        None => value
            .strip_prefix('\'')
            .and_then(|v| v.strip_suffix('\''))
            .map_or_else(|| value.to_string(), |v| v.replace("''", "'")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_front_matter() {
        let (n, d) =
            front_matter("---\nname: rss-cli\ndescription: \"Feeds: \\\"rss\\\"\"\n---\n# x\n");
        assert_eq!(n.as_deref(), Some("rss-cli"));
        assert_eq!(d.as_deref(), Some("Feeds: \"rss\""));
        assert_eq!(front_matter("# no front matter"), (None, None));
        assert_eq!(unquote("'it''s'"), "it's");
    }
}
