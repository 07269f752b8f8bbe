//! `lurkbot import`: moving a user's state from another agent platform into a LurkBot home in
//! one command. A source is read into an [`ImportPlan`] (files to copy, settings to set,
//! secrets for `.env`, cron jobs to add, and what could not be mapped and why); `--dry-run`
//! prints the plan, [`apply`] carries it out. Nothing that exists is replaced without
//! `overwrite`, and no secret is ever written to config.toml.

pub mod openclaw;
mod openclaw_channels;
mod toml_values;

use std::path::{Path, PathBuf};

use lurkbot_core::{ConfigDoc, Home};
use serde::Serialize;

use crate::cron::{CronJob, CronStore};

/// One thing the import would do.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Action {
    /// Copy a file into the home (`to` is home-relative).
    Copy {
        /// The source file.
        from: PathBuf,
        /// Where it goes, home-relative.
        to: String,
    },
    /// Set a config.toml key to a TOML value.
    Setting {
        /// The dotted key.
        key: String,
        /// The value as TOML.
        value: String,
    },
    /// A variable for the home's `.env` (the value is never printed).
    Secret {
        /// The variable.
        name: String,
        /// Its value.
        #[serde(skip)]
        value: String,
    },
    /// A cron job to add.
    CronJob {
        /// The job (jobs.json's shape).
        job: Box<CronJob>,
    },
}

/// Something the source has that LurkBot cannot take over, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Unmapped {
    /// What it is (`channels.telegram`, a cron job's name…).
    pub what: String,
    /// Why it was left out.
    pub why: String,
}

/// What an import would do.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ImportPlan {
    /// The source folder.
    pub source: PathBuf,
    /// What would be written.
    pub actions: Vec<Action>,
    /// What was left out.
    pub unmapped: Vec<Unmapped>,
}

impl ImportPlan {
    fn unmapped(&mut self, what: impl Into<String>, why: impl Into<String>) {
        self.unmapped.push(Unmapped {
            what: what.into(),
            why: why.into(),
        });
    }
}

/// What [`apply`] did with one action.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// The action, as the plan printed it.
    pub action: String,
    /// `written`, `kept` (it existed and `overwrite` was not given) or `failed`.
    pub result: &'static str,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A short line for an action (never a secret's value).
pub fn describe(action: &Action) -> String {
    match action {
        Action::Copy { from, to } => format!("copy {} -> {to}", from.display()),
        Action::Setting { key, value } => format!("set {key} = {value}"),
        Action::Secret { name, .. } => format!(".env {name}=********"),
        Action::CronJob { job } => format!("cron job '{}'", job.name),
    }
}

/// Carries out `plan` on `home`: files are copied, settings set in config.toml (comments
/// kept), secrets added to `.env` (mode 0600), cron jobs added. What exists is kept unless
/// `overwrite`.
pub fn apply(home: &Home, plan: &ImportPlan, overwrite: bool, now_ms: u64) -> Vec<Outcome> {
    let config_path = home.join("config.toml");
    let mut doc = ConfigDoc::load(&config_path).ok();
    let mut env = read_env(&home.join(".env"));
    let mut env_changed = false;
    let mut config_changed = false;
    let existing_jobs: Vec<String> = CronStore::open(home)
        .jobs()
        .map(|jobs| jobs.into_iter().map(|j| j.name).collect())
        .unwrap_or_default();
    let mut outcomes = Vec::new();
    for action in &plan.actions {
        let result: Result<bool, String> = match action {
            Action::Copy { from, to } => copy(home, &plan.source, from, to, overwrite),
            Action::Setting { key, value } => match doc.as_mut() {
                None => Err("config.toml could not be read".into()),
                Some(doc) => match doc.get(key) {
                    Ok(Some(current)) if !overwrite && current != *value => Ok(false),
                    _ => doc
                        .set(key, value)
                        .map(|()| {
                            config_changed = true;
                            true
                        })
                        .map_err(|e| e.to_string()),
                },
            },
            Action::Secret { name, value } => match env_line(name, value) {
                Err(e) => Err(e),
                Ok(line) => {
                    let prefix = format!("{name}=");
                    match env.iter_mut().find(|l| l.trim_start().starts_with(&prefix)) {
                        Some(_) if !overwrite => Ok(false),
                        Some(existing) => {
                            *existing = line;
                            env_changed = true;
                            Ok(true)
                        }
                        None => {
                            env.push(line);
                            env_changed = true;
                            Ok(true)
                        }
                    }
                }
            },
            Action::CronJob { job } => {
                if existing_jobs.contains(&job.name) && !overwrite {
                    Ok(false)
                } else {
                    CronStore::open(home)
                        .add((**job).clone(), now_ms)
                        .map(|_| true)
                        .map_err(|e| e.to_string())
                }
            }
        };
        outcomes.push(Outcome {
            action: describe(action),
            result: match &result {
                Ok(true) => "written",
                Ok(false) => "kept",
                Err(_) => "failed",
            },
            error: result.err(),
        });
    }
    let mut fail = |what: &str, error: String| {
        outcomes.push(Outcome {
            action: what.to_string(),
            result: "failed",
            error: Some(error),
        });
    };
    if config_changed
        && let Some(doc) = &doc
        && let Err(e) = doc.save()
    {
        fail("save config.toml", e.to_string());
    }
    if env_changed {
        let text: String = env.iter().map(|l| format!("{l}\n")).collect();
        if let Err(e) =
            lurkbot_core::write_atomic_with_mode(&home.join(".env"), text.as_bytes(), 0o600)
        {
            fail("write .env", e.to_string());
        }
    }
    outcomes
}

/// `NAME="value"` for `.env` (`lurkbot_core::dotenv::assignment`); a value with a control
/// character (a line break would start a variable of its own) is refused, naming it.
fn env_line(name: &str, value: &str) -> Result<String, String> {
    lurkbot_core::dotenv::assignment(name, value).ok_or_else(|| {
        format!(
            "{name}: the value holds a control character (a line break?) and was not written; check it in openclaw.json and set it in .env by hand"
        )
    })
}

/// Whether `path` (written under `root`) stays inside `root` once every link is followed: the
/// home's confinement rules (`lurkbot_core::confined_to`) applied to the source folder.
pub(crate) fn inside(root: &Path, path: &Path) -> bool {
    let Ok(rel) = path.strip_prefix(root) else {
        return false;
    };
    let rel = rel.to_string_lossy().replace('\\', "/");
    lurkbot_core::confined_to(root, &rel).is_some()
}

/// Copies one file; false when it exists and `overwrite` is off. Only a regular file that is
/// inside the source folder once every link is followed is read; the copy is private (0600),
/// so a key copied from the source is no more readable here than it was there.
fn copy(
    home: &Home,
    source: &Path,
    from: &Path,
    to: &str,
    overwrite: bool,
) -> Result<bool, String> {
    if !inside(source, from) {
        return Err(format!(
            "{}: it leads out of {} (a link?); nothing outside the given folder is read",
            from.display(),
            source.display()
        ));
    }
    let target = home.join(to);
    let untouched = || {
        let name = to.strip_prefix("workspace/").unwrap_or(to);
        std::fs::read(&target).is_ok_and(|b| lurkbot_core::is_untouched_bootstrap(name, &b))
    };
    if target.exists() && !overwrite && !untouched() {
        return Ok(false);
    }
    let bytes = std::fs::read(from).map_err(|e| format!("{}: {e}", from.display()))?;
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
    }
    lurkbot_core::write_atomic_with_mode(&target, &bytes, 0o600).map_err(|e| e.to_string())?;
    Ok(true)
}

/// The lines of a `.env` file, comments included (they are written back unchanged).
fn read_env(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}
