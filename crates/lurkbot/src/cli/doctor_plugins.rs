//! `lurkbot doctor` on the enabled plugins: each installed with a sound manifest, its program
//! found, and the `.env` names it lists set (a plugin started without them fails in its own
//! words, if at all).

use lurkbot_core::{Config, Home};

use super::doctor_check::{Check, Status, bad, ok};

/// One check per enabled plugin.
pub(super) fn plugins(home: &Home, config: &Config) -> Vec<Check> {
    let found = lurkbot_core::find_plugins(home.root());
    let vars = lurkbot_agent::setup::variables(home);
    config
        .plugins
        .iter()
        .filter(|(_, s)| s.enabled)
        .map(|(name, _)| {
            let Some(plugin) = found.iter().find(|p| p.folder == *name) else {
                return bad(
                    "plugin",
                    Status::Fail,
                    format!("{name}: enabled, but plugins/{name}/ does not exist"),
                    format!("install it in plugins/{name}/, or lurkbot plugins disable {name}"),
                );
            };
            let manifest = match &plugin.manifest {
                Ok(m) => m,
                Err(e) => {
                    return bad(
                        "plugin",
                        Status::Fail,
                        format!("{name}: {e}"),
                        "fix its manifest",
                    );
                }
            };
            let program = manifest.command.first().cloned().unwrap_or_default();
            let found_program = if program.contains('/') {
                plugin.dir.join(&program).is_file() || std::path::Path::new(&program).is_file()
            } else {
                std::env::var_os("PATH").is_some_and(|path| {
                    std::env::split_paths(&path).any(|d| d.join(&program).is_file())
                })
            };
            if !found_program {
                return bad(
                    "plugin",
                    Status::Fail,
                    format!("{name}: its program '{program}' is not there"),
                    format!("install what plugins/{name}/ needs (its README says how)"),
                );
            }
            let unset: Vec<&str> = manifest
                .env
                .iter()
                .map(String::as_str)
                .filter(|k| vars(k).is_none())
                .collect();
            if !unset.is_empty() {
                return bad(
                    "plugin",
                    Status::Warn,
                    format!("{name}: {} not set", unset.join(", ")),
                    "set them in the home's .env",
                );
            }
            ok(
                "plugin",
                format!(
                    "{name} {} ({})",
                    manifest.version,
                    manifest.provides.join(", ")
                ),
            )
        })
        .collect()
}
