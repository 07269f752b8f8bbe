//! Plugins (ARCHITECTURE.md §7d): programs the owner installs under `plugins/<name>/`, each
//! described by its `lurkbot-plugin.toml` (what it is, how it starts, what it provides, which
//! `.env` names it may read), and enabled with `[plugins.<name>] enabled = true` beside its own
//! settings, which are handed to it as they are.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The folder of the home plugins are installed in.
pub const PLUGINS_DIR: &str = "plugins";
/// The file that describes a plugin, in its folder.
pub const MANIFEST_FILE: &str = "lurkbot-plugin.toml";
/// The hook events a plugin may provide.
pub const HOOK_EVENTS: &[&str] = &["message_received", "before_tool"];
/// What a plugin's hook failing (crashed, timed out, a bad answer) counts as.
pub const ON_FAILURE: &[&str] = &["deny", "allow"];

/// `[plugins.<name>]`: one plugin's switch and settings.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct PluginSettings {
    /// Whether the gateway starts the plugin (default false: an installed plugin runs only
    /// once the owner enables it, with `lurkbot plugins enable NAME` or by hand).
    pub enabled: bool,
    /// What a failed hook counts as: `deny` (the default for `before_tool`: a tool is refused
    /// while its policy plugin cannot answer) or `allow`.
    pub on_failure: Option<String>,
    /// The plugin's own settings: every other key of the table, handed to it in `initialize`
    /// as `config`.
    #[serde(flatten)]
    pub settings: BTreeMap<String, serde_json::Value>,
}

/// A plugin's `lurkbot-plugin.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PluginManifest {
    /// Its name: the folder's, and `[plugins.<name>]`'s.
    pub name: String,
    /// Its version, as its author numbers it.
    pub version: String,
    /// The program and its arguments, run in the plugin's folder (`["python3", "main.py"]`).
    pub command: Vec<String>,
    /// What it provides: `channel:<name>` and `hook:<event>`.
    #[serde(default)]
    pub provides: Vec<String>,
    /// The `.env` names it may read (nothing else of the environment reaches it but `PATH`,
    /// `HOME`, `LANG`, `LC_ALL`, `TMPDIR` and `TZ`).
    #[serde(default)]
    pub env: Vec<String>,
    /// What it does, in a line (shown by `lurkbot plugins list`).
    #[serde(default)]
    pub description: String,
}

/// A plugin found under `plugins/`: its folder and its manifest, or why it cannot be used.
#[derive(Debug, Clone)]
pub struct FoundPlugin {
    /// The folder's name.
    pub folder: String,
    /// The folder.
    pub dir: PathBuf,
    /// The manifest, or what is wrong with it.
    pub manifest: Result<PluginManifest, String>,
}

impl PluginManifest {
    /// Reads and checks the manifest in `dir`, whose folder name is `folder`.
    ///
    /// # Errors
    /// What is wrong, with the file named: unreadable, not TOML of this shape, or a value a
    /// plugin cannot have.
    pub fn load(dir: &Path, folder: &str) -> Result<Self, String> {
        let path = dir.join(MANIFEST_FILE);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("{PLUGINS_DIR}/{folder}/{MANIFEST_FILE}: {e}"))?;
        let manifest: Self = toml::from_str(&text)
            .map_err(|e| format!("{PLUGINS_DIR}/{folder}/{MANIFEST_FILE}: {}", e.message()))?;
        manifest
            .check(folder)
            .map_err(|e| format!("{PLUGINS_DIR}/{folder}/{MANIFEST_FILE}: {e}"))?;
        Ok(manifest)
    }

    fn check(&self, folder: &str) -> Result<(), String> {
        if self.name != folder {
            return Err(format!(
                "name = \"{}\" differs from its folder's name \"{folder}\": make them equal",
                self.name
            ));
        }
        if !is_plugin_name(&self.name) {
            return Err(format!(
                "name = \"{}\": use lowercase letters, digits, - and _ (at most 32)",
                self.name
            ));
        }
        if self.command.first().is_none_or(|c| c.trim().is_empty()) {
            return Err("command is empty: write the program and its arguments, such as [\"python3\", \"main.py\"]".into());
        }
        for what in &self.provides {
            match what.split_once(':') {
                Some(("channel", name)) if is_plugin_name(name) => {
                    if crate::CHANNEL_NAMES.contains(&name) {
                        return Err(format!(
                            "provides \"{what}\": {name} is one of LurkBot's own channels"
                        ));
                    }
                }
                Some(("hook", event)) if HOOK_EVENTS.contains(&event) => {}
                _ => {
                    return Err(format!(
                        "provides \"{what}\": write channel:<name> or hook:<event> (events: {})",
                        HOOK_EVENTS.join(", ")
                    ));
                }
            }
        }
        if let Some(bad) = self.env.iter().find(|n| !is_env_name(n)) {
            return Err(format!("env \"{bad}\" is not a variable name"));
        }
        Ok(())
    }

    /// The channels it provides.
    pub fn channels(&self) -> impl Iterator<Item = &str> {
        self.provides
            .iter()
            .filter_map(|p| p.strip_prefix("channel:"))
    }

    /// Whether it provides hook `event`.
    pub fn hooks(&self, event: &str) -> bool {
        self.provides
            .iter()
            .any(|p| p.strip_prefix("hook:") == Some(event))
    }
}

/// The plugins installed in the home at `root`, by folder name.
pub fn find_plugins(root: &Path) -> Vec<FoundPlugin> {
    let Ok(entries) = std::fs::read_dir(root.join(PLUGINS_DIR)) else {
        return Vec::new();
    };
    let mut found: Vec<FoundPlugin> = entries
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| {
            let folder = e.file_name().to_str()?.to_string();
            let dir = e.path();
            let manifest = PluginManifest::load(&dir, &folder);
            Some(FoundPlugin {
                folder,
                dir,
                manifest,
            })
        })
        .collect();
    found.sort_by(|a, b| a.folder.cmp(&b.folder));
    found
}

/// The channels the plugins installed in the home at `root` provide.
pub fn plugin_channels(root: &Path) -> Vec<String> {
    find_plugins(root)
        .into_iter()
        .filter_map(|p| p.manifest.ok())
        .flat_map(|m| m.channels().map(str::to_string).collect::<Vec<_>>())
        .collect()
}

/// A plugin's or a plugin channel's name: lowercase letters, digits, `-` and `_`, 1–32.
pub fn is_plugin_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && name.as_bytes()[0].is_ascii_lowercase()
}

fn is_env_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        && !name.as_bytes()[0].is_ascii_digit()
}

impl crate::Config {
    /// What is wrong with `[plugins.<name>]` tables, given the plugins installed (`found`).
    pub(crate) fn plugins_problems(&self, found: &[FoundPlugin]) -> Vec<crate::ConfigProblem> {
        let mut problems = Vec::new();
        for (name, settings) in &self.plugins {
            if let Some(value) = &settings.on_failure
                && !ON_FAILURE.contains(&value.as_str())
            {
                problems.push(crate::ConfigProblem {
                    key: format!("plugins.{name}.on_failure"),
                    message: format!(
                        "plugins.{name}.on_failure = \"{value}\": write deny or allow"
                    ),
                });
            }
            if settings.enabled && !found.iter().any(|p| p.folder == *name) {
                problems.push(crate::ConfigProblem {
                    key: format!("plugins.{name}"),
                    message: format!(
                        "[plugins.{name}] is enabled but {PLUGINS_DIR}/{name}/{MANIFEST_FILE} does not exist: install the plugin there, or disable it"
                    ),
                });
            }
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(text: &str) -> Result<PluginManifest, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        std::fs::write(dir.path().join(MANIFEST_FILE), text).map_err(|e| e.to_string())?;
        PluginManifest::load(dir.path(), "xmpp")
    }

    #[test]
    fn a_manifest_is_checked_with_what_to_fix() {
        let good = manifest(
            "name = \"xmpp\"\nversion = \"1.0.0\"\ncommand = [\"python3\", \"main.py\"]\nprovides = [\"channel:xmpp\", \"hook:before_tool\"]\nenv = [\"XMPP_PASSWORD\"]\n",
        );
        let good = good.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(good.channels().collect::<Vec<_>>(), ["xmpp"]);
        assert!(good.hooks("before_tool") && !good.hooks("message_received"));
        for (text, said) in [
            (
                "name = \"other\"\nversion = \"1\"\ncommand = [\"x\"]\n",
                "differs from its folder",
            ),
            (
                "name = \"xmpp\"\nversion = \"1\"\ncommand = []\n",
                "command is empty",
            ),
            (
                "name = \"xmpp\"\nversion = \"1\"\ncommand = [\"x\"]\nprovides = [\"channel:telegram\"]\n",
                "LurkBot's own channels",
            ),
            (
                "name = \"xmpp\"\nversion = \"1\"\ncommand = [\"x\"]\nprovides = [\"hook:after_everything\"]\n",
                "write channel:<name> or hook:<event>",
            ),
            (
                "name = \"xmpp\"\nversion = \"1\"\ncommand = [\"x\"]\nenv = [\"not a name\"]\n",
                "not a variable name",
            ),
            (
                "name = \"xmpp\"\nversion = \"1\"\ncommand = [\"x\"]\nshell = true\n",
                "unknown field",
            ),
        ] {
            let e = manifest(text).err().unwrap_or_default();
            assert!(e.contains(said), "{text}: {e}");
            assert!(e.starts_with("plugins/xmpp/lurkbot-plugin.toml"), "{e}");
        }
    }
}
