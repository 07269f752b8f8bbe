//! Who may sign in to a shared gateway (ARCHITECTURE.md §6.2): `users/users.json` in the
//! gateway's home (0600, written atomically; the protection model keeps every tool away from
//! `users/**`). Each user has a name, an admin flag, the SHA-256 of their current token (the
//! token itself is shown once, by `users add` and `users token`) and, once set, an argon2id
//! hash of their password (PHC string).
//!
//! A file that cannot be read is never written over: the gateway then signs nobody in but the
//! owner's gateway token, and says why.

use std::path::PathBuf;

use argon2::Argon2;
use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use lurkbot_core::{Home, layout};
use serde::{Deserialize, Serialize};

/// The store, relative to the gateway's home.
pub const USERS_FILE: &str = "users/users.json";

/// Longest user name.
pub const MAX_NAME_CHARS: usize = 32;

/// Shortest password accepted.
pub const MIN_PASSWORD_CHARS: usize = 8;

/// Longest password accepted (argon2 takes any length; a megabyte "password" is an attack).
pub const MAX_PASSWORD_CHARS: usize = 1024;

/// Most users one gateway keeps.
pub const MAX_USERS: usize = 1000;

/// One user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct User {
    /// Their name (also their home's folder under `users/`).
    pub name: String,
    /// Whether they manage the gateway (its own home, settings, users and budgets).
    pub admin: bool,
    /// When they were added (ms since the epoch).
    pub created_at_ms: u64,
    /// Hex SHA-256 of their current token.
    pub token_sha256: String,
    /// The argon2id hash of their password (PHC string), once one is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
}

impl User {
    /// What `users list --json` and `users.list` show: `{name, admin, createdAtMs, password}`.
    pub fn summary(&self) -> serde_json::Value {
        serde_json::json!({
            "name": self.name,
            "admin": self.admin,
            "createdAtMs": self.created_at_ms,
            "password": self.password.is_some(),
        })
    }
}

/// Each user's [`User::summary`] with their spending as totals only (`usage`: today's and this
/// month's tokens and dollars; the admins' is the gateway home's): what `users list` shows. The
/// admin never sees what was said.
pub fn rows(home: &Home, users: &[User], config: &lurkbot_core::Config) -> Vec<serde_json::Value> {
    let zone = lurkbot_agent::usage::zone(config);
    let now = lurkbot_core::now_ms();
    users
        .iter()
        .map(|user| {
            let mut row = user.summary();
            let own = if user.admin {
                Some(home.clone())
            } else {
                home.member(&user.name).ok()
            };
            if let Some(own) = own {
                let (today, month) = lurkbot_agent::usage::Ledger::of(&own).totals(&zone, now, None);
                row["usage"] = serde_json::json!({"todayTokens": today.tokens, "todayUsd": today.usd,
                    "monthTokens": month.tokens, "monthUsd": month.usd});
            }
            row
        })
        .collect()
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct UsersFile {
    version: u32,
    users: Vec<User>,
}

/// [`UsersFile`] as written, borrowing the users.
#[derive(Serialize)]
struct UsersFileOut<'a> {
    version: u32,
    users: &'a [User],
}

/// Why a change to the users was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UsersError {
    /// A bad name or password (the message says what is allowed).
    #[error("{0}")]
    Invalid(String),
    /// The name is taken.
    #[error("user '{0}' exists already")]
    Exists(String),
    /// No such user.
    #[error("no user '{0}' (see: lurkbot users list)")]
    NotFound(String),
    /// The store could not be read or written.
    #[error("{0}")]
    Store(String),
}

/// Checks a user name: 1–32 of `a-z 0-9 - _`, starting with a letter or digit.
///
/// # Errors
/// `Invalid` saying what a name may hold.
pub fn check_name(name: &str) -> Result<(), UsersError> {
    let ok = !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(UsersError::Invalid(format!(
            "'{name}' is not a user name: use 1 to {MAX_NAME_CHARS} lowercase letters, digits, '-' or '_', starting with a letter or digit"
        )))
    }
}

/// The hex SHA-256 of a token (what the store keeps).
pub fn token_digest(token: &str) -> String {
    crate::protocol::device::sha256_hex(token.as_bytes())
}

/// A fresh user token: `lbu_` and 48 hex digits (192 random bits).
pub fn new_token() -> String {
    format!("lbu_{}", lurkbot_core::random_hex(24))
}

/// The argon2id hash (PHC string, OWASP's parameters: 19 MiB, 2 passes) of `password`.
///
/// # Errors
/// `Invalid` for a password of the wrong length.
pub fn hash_password(password: &str) -> Result<String, UsersError> {
    let chars = password.chars().count();
    if !(MIN_PASSWORD_CHARS..=MAX_PASSWORD_CHARS).contains(&chars) {
        return Err(UsersError::Invalid(format!(
            "a password needs {MIN_PASSWORD_CHARS} to {MAX_PASSWORD_CHARS} characters"
        )));
    }
    Argon2::default()
        .hash_password(password.as_bytes())
        .map(|hash| hash.to_string())
        .map_err(|e| UsersError::Store(format!("hashing the password failed: {e}")))
}

/// Whether `password` matches the PHC string `hash` (constant time; a malformed hash matches
/// nothing).
pub fn password_matches(hash: &str, password: &str) -> bool {
    if password.chars().count() > MAX_PASSWORD_CHARS {
        return false;
    }
    PasswordHash::new(hash).is_ok_and(|parsed| {
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
}

/// `users/users.json` of one gateway home — or, when the home's state is in PostgreSQL, the
/// store's document of that name (ARCHITECTURE.md §6.3), changed in one transaction each.
#[derive(Debug, Clone)]
pub struct UserStore {
    path: PathBuf,
    home: Home,
}

/// The store the users are in, when the home's state is in PostgreSQL.
fn shared(home: &Home) -> Option<lurkbot_state::Store> {
    lurkbot_agent::shared_state::of(home)
}

fn parse_users(text: &str, path: &std::path::Path) -> Result<Vec<User>, UsersError> {
    serde_json::from_str::<UsersFile>(text)
        .map(|f| f.users)
        .map_err(|e| {
            UsersError::Store(format!(
                "{} is not a users file ({e}); repair or remove it",
                path.display()
            ))
        })
}

fn users_json(users: &[User]) -> Result<Vec<u8>, UsersError> {
    let file = UsersFileOut { version: 1, users };
    serde_json::to_vec_pretty(&file).map_err(|e| UsersError::Store(e.to_string()))
}

fn state_failed(e: lurkbot_state::StateError) -> UsersError {
    UsersError::Store(e.to_string())
}

impl UserStore {
    /// The store of `home` (the gateway's own home).
    pub fn of(home: &Home) -> Self {
        Self {
            path: home.join(USERS_FILE),
            home: home.clone(),
        }
    }

    /// The gateway home the users belong to.
    pub fn home(&self) -> &Home {
        &self.home
    }

    /// What tells one version of the users from the next (the file's inode, length and
    /// modification time, or the document's version; `None` while there is none): another
    /// gateway may change them.
    pub fn stamp(&self) -> Option<String> {
        if let Some(store) = shared(&self.home) {
            return store
                .document_version(USERS_FILE)
                .ok()
                .flatten()
                .map(|v| format!("v{v}"));
        }
        let meta = std::fs::metadata(&self.path).ok()?;
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(&meta);
        #[cfg(not(unix))]
        let inode = 0;
        Some(format!(
            "{inode}:{}:{:?}",
            meta.len(),
            meta.modified().ok()?
        ))
    }

    /// Every user; none when the file does not exist yet.
    ///
    /// # Errors
    /// `Store` when the file exists but cannot be read or parsed.
    pub fn load(&self) -> Result<Vec<User>, UsersError> {
        if let Some(store) = shared(&self.home) {
            return match store.document(USERS_FILE).map_err(state_failed)? {
                Some(text) => parse_users(&text, &self.path),
                None => Ok(Vec::new()),
            };
        }
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(UsersError::Store(format!(
                    "{} cannot be read: {e}",
                    self.path.display()
                )));
            }
        };
        parse_users(&text, &self.path)
    }

    fn save(&self, users: Vec<User>) -> Result<(), UsersError> {
        if let Some(dir) = self.path.parent()
            && !dir.exists()
        {
            lurkbot_core::create_private_dir(dir).map_err(|e| UsersError::Store(e.to_string()))?;
        }
        let text = users_json(&users)?;
        lurkbot_core::write_atomic_with_mode(&self.path, &text, 0o600)
            .map_err(|e| UsersError::Store(e.to_string()))
    }

    /// Changes the users with `change` and writes them, unless it fails (in one transaction
    /// of the shared store, where gateways may change them at once).
    fn update<T: Send + 'static>(
        &self,
        change: impl FnOnce(&mut Vec<User>) -> Result<T, UsersError> + Send + 'static,
    ) -> Result<T, UsersError> {
        if let Some(store) = shared(&self.home) {
            let path = self.path.clone();
            return store
                .edit_value(
                    USERS_FILE,
                    move |text| text.map_or(Ok(Vec::new()), |text| parse_users(&text, &path)),
                    change,
                    |users| Ok(String::from_utf8_lossy(&users_json(users)?).into_owned()),
                )
                .map_err(state_failed)?
                .map(|(value, _)| value);
        }
        let mut users = self.load()?;
        let answer = change(&mut users)?;
        self.save(users)?;
        Ok(answer)
    }

    /// Adds `name` and creates their home (`users/<name>/`, the §2 layout without a
    /// `config.toml`); their first token.
    ///
    /// # Errors
    /// `Invalid` name, `Exists`, too many users, or the store or home failing.
    pub fn add(&self, home: &Home, name: &str, admin: bool) -> Result<String, UsersError> {
        check_name(name)?;
        let token = new_token();
        let (name_owned, digest) = (name.to_string(), token_digest(&token));
        self.update(move |users| {
            let name = name_owned.as_str();
            if users.iter().any(|u| u.name == name) {
                return Err(UsersError::Exists(name.to_string()));
            }
            if users.len() >= MAX_USERS {
                return Err(UsersError::Invalid(format!(
                    "a gateway keeps at most {MAX_USERS} users"
                )));
            }
            users.push(User {
                name: name.to_string(),
                admin,
                created_at_ms: lurkbot_core::now_ms(),
                token_sha256: digest,
                password: None,
            });
            Ok(())
        })?;
        if !admin {
            let member = home
                .member(name)
                .map_err(|e| UsersError::Store(e.to_string()))?;
            let skills = lurkbot_term::bundled_skills(&lurkbot_term::default_registry());
            lurkbot_core::init_member_home(&member, &skills)
                .map_err(|e| UsersError::Store(e.to_string()))?;
        }
        Ok(token)
    }

    /// Removes `name`; with `purge`, their home too (else it stays, for the admin to keep or
    /// delete). The removed user.
    ///
    /// # Errors
    /// `NotFound`, or the store failing.
    pub fn remove(&self, home: &Home, name: &str, purge: bool) -> Result<User, UsersError> {
        let gone = name.to_string();
        let removed = self.update(move |users| {
            let at = users
                .iter()
                .position(|u| u.name == gone)
                .ok_or(UsersError::NotFound(gone))?;
            Ok(users.remove(at))
        })?;
        if purge && check_name(name).is_ok() {
            let dir = home.join(layout::USERS).join(name);
            if dir.is_dir() {
                std::fs::remove_dir_all(&dir).map_err(|e| {
                    UsersError::Store(format!("{} was not removed: {e}", dir.display()))
                })?;
            }
        }
        Ok(removed)
    }

    /// Gives `name` a new token (the old one stops working); the new one.
    ///
    /// # Errors
    /// `NotFound`, or the store failing.
    pub fn new_token(&self, name: &str) -> Result<String, UsersError> {
        let token = new_token();
        let (name, digest) = (name.to_string(), token_digest(&token));
        self.update(move |users| {
            let user = users
                .iter_mut()
                .find(|u| u.name == name)
                .ok_or(UsersError::NotFound(name))?;
            user.token_sha256 = digest;
            Ok(())
        })?;
        Ok(token)
    }

    /// Sets `name`'s password (stored as its argon2id hash).
    ///
    /// # Errors
    /// `NotFound`, a password of the wrong length, or the store failing.
    pub fn set_password(&self, name: &str, password: &str) -> Result<(), UsersError> {
        let hash = hash_password(password)?;
        let name = name.to_string();
        self.update(move |users| {
            let user = users
                .iter_mut()
                .find(|u| u.name == name)
                .ok_or(UsersError::NotFound(name))?;
            user.password = Some(hash);
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_tokens_and_passwords() {
        for bad in [
            "",
            "Alice",
            "-x",
            ".x",
            "a/b",
            "a b",
            "../x",
            &"a".repeat(33),
        ] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
        for good in ["alice", "bob-2", "x_y", "7"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        let token = new_token();
        assert_eq!(token.len(), 52);
        assert_ne!(token_digest(&token), token_digest(&new_token()));
        let hash = hash_password("correct horse").unwrap();
        assert!(hash.starts_with("$argon2id$"), "{hash}");
        assert!(password_matches(&hash, "correct horse"));
        assert!(!password_matches(&hash, "correct horsf"));
        assert!(!password_matches("not a hash", "correct horse"));
        assert!(hash_password("short").is_err());
    }

    #[test]
    fn the_store_adds_renews_and_removes() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::open(dir.path()).unwrap();
        let store = UserStore::of(&home);
        assert!(store.load().unwrap().is_empty());
        let first = store.add(&home, "alice", false).unwrap();
        assert_eq!(
            store.add(&home, "alice", true),
            Err(UsersError::Exists("alice".into()))
        );
        assert!(home.join("users/alice/workspace/AGENTS.md").is_file());
        assert!(!home.join("users/alice/config.toml").exists());
        let users = store.load().unwrap();
        assert_eq!(users[0].token_sha256, token_digest(&first));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(home.join(USERS_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let second = store.new_token("alice").unwrap();
        assert_eq!(store.load().unwrap()[0].token_sha256, token_digest(&second));
        store.set_password("alice", "a long password").unwrap();
        assert!(store.load().unwrap()[0].password.is_some());
        assert_eq!(
            store.new_token("carol"),
            Err(UsersError::NotFound("carol".into()))
        );
        store.remove(&home, "alice", false).unwrap();
        assert!(home.join("users/alice").is_dir(), "kept without --purge");
        store.add(&home, "bob", false).unwrap();
        store.remove(&home, "bob", true).unwrap();
        assert!(!home.join("users/bob").exists());
        // A broken file is never written over.
        std::fs::write(home.join(USERS_FILE), "{broken").unwrap();
        assert!(matches!(
            store.add(&home, "carol", false),
            Err(UsersError::Store(_))
        ));
        assert_eq!(
            std::fs::read_to_string(home.join(USERS_FILE)).unwrap(),
            "{broken"
        );
    }
}
