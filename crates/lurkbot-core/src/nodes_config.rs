//! `[nodes]`: what the owner lets the model run on paired nodes without asking each time
//! (ARCHITECTURE.md §5.2). A model's `system.run` on a node needs the owner's approval every
//! time unless the command starts with one of the words listed for that node here; a command
//! carrying `--confirm` is asked about every time regardless.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `[nodes]` settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct NodesConfig {
    /// Per node (its name or device id), the `system.run` commands the model may run without
    /// asking, matched word by word from the start: `{ laptop = ["help", "rss list"] }`.
    pub allow: BTreeMap<String, Vec<String>>,
}

impl NodesConfig {
    /// Whether `words` (a `system.run` command, split) is allowed on the node `name`/`id`
    /// without asking.
    pub fn allows(&self, (id, name): (&str, &str), words: &[String]) -> bool {
        if words.iter().any(|w| w == "--confirm") {
            return false;
        }
        self.allow
            .iter()
            .filter(|(node, _)| node.as_str() == id || node.eq_ignore_ascii_case(name))
            .flat_map(|(_, prefixes)| prefixes)
            .any(|prefix| {
                let want: Vec<&str> = prefix.split_whitespace().collect();
                !want.is_empty()
                    && words.len() >= want.len()
                    && want.iter().zip(words).all(|(a, b)| a == b)
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_commands_match_by_words_per_node_and_never_confirmations() {
        let config = NodesConfig {
            allow: BTreeMap::from([("laptop".into(), vec!["help".into(), "rss list".into()])]),
        };
        let words = |s: &str| s.split(' ').map(str::to_string).collect::<Vec<_>>();
        assert!(config.allows(("id1", "Laptop"), &words("help")));
        assert!(config.allows(("id1", "laptop"), &words("rss list --json")));
        assert!(!config.allows(("id1", "laptop"), &words("rss fetch")));
        assert!(!config.allows(("id1", "laptop"), &words("helpme")));
        assert!(!config.allows(("id1", "phone"), &words("help")));
        assert!(!config.allows(("id1", "laptop"), &words("help --confirm")));
    }
}
