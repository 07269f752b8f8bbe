//! The users of a shared gateway at run time (ARCHITECTURE.md §6.2): who a credential belongs
//! to, web UI sign-ins, and revocation. Each user's own gateway state is `state/members.rs`'s.
//!
//! Every change (a user removed, a new token, a new password) bumps a generation; each open
//! connection then checks its credential again and closes when it no longer holds.
//!
//! With the state in PostgreSQL the users are the store's document and the sign-ins its rows
//! (ARCHITECTURE.md §6.3): a cookie made on one gateway signs in on every other (looked up on a
//! miss), and the watch drops each second what the store no longer holds — a sign-out, a new
//! token or a removal on any gateway closes the connections on all of them within two.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use lurkbot_core::{Config, Home};
use tokio::sync::{Semaphore, watch};

use crate::access::auth::FailureLimiter;
use crate::users::store::{User, UserStore, token_digest};

/// The web UI's sign-in cookie.
pub const SESSION_COOKIE: &str = "lurkbot_session";

/// Most sign-ins kept at once (the oldest go first).
const MAX_SIGN_INS: usize = 10_000;

/// Who a connection is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    /// The user, or `None` for the gateway token (the owner).
    pub user: Option<Arc<str>>,
    /// Whether they manage the gateway (the owner, or a user marked admin).
    pub admin: bool,
    /// What they signed in with (checked again after every change).
    pub credential: Credential,
}

impl Signed {
    /// The owner (the gateway token, or no users at all).
    pub fn owner() -> Self {
        Self {
            user: None,
            admin: true,
            credential: Credential::Gateway,
        }
    }

    /// `{user, admin}` for `hello-ok` and `/auth/me`.
    pub fn describe(&self) -> serde_json::Value {
        serde_json::json!({"user": self.user.as_deref(), "admin": self.admin})
    }
}

/// A credential, as kept by an open connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// The gateway token (or none needed).
    Gateway,
    /// A user's token (its SHA-256).
    Token(String),
    /// A web UI sign-in (its cookie's SHA-256).
    SignIn(String),
}

#[derive(Debug, Clone)]
struct SignIn {
    user: String,
    expires_ms: u64,
}

/// The users of one gateway.
pub struct Tenants {
    store: UserStore,
    users: RwLock<Vec<User>>,
    /// Why the store could not be read (then only the gateway token signs in).
    problem: RwLock<Option<String>>,
    sign_ins: Mutex<HashMap<String, SignIn>>,
    changed: watch::Sender<u64>,
    /// Failed sign-ins per user name.
    pub(crate) by_name: FailureLimiter<String>,
    /// Password checks run at once (each holds 19 MiB).
    pub(crate) hashing: Semaphore,
}

impl Tenants {
    /// The users of the gateway home `home`, read now.
    pub fn open(home: &Home) -> Self {
        let tenants = Self {
            store: UserStore::of(home),
            users: RwLock::new(Vec::new()),
            problem: RwLock::new(None),
            sign_ins: Mutex::new(HashMap::new()),
            changed: watch::channel(0).0,
            by_name: FailureLimiter::default(),
            hashing: Semaphore::new(2),
        };
        tenants.reread();
        tenants
    }

    /// Reads the store again (after a change) and tells every connection to check its
    /// credential.
    pub(crate) fn reread(&self) {
        let (users, problem) = match self.store.load() {
            Ok(users) => (users, None),
            Err(e) => {
                tracing::error!(error = %e, "users: only the gateway token signs in");
                (Vec::new(), Some(e.to_string()))
            }
        };
        if let Ok(mut slot) = self.users.write() {
            *slot = users;
        }
        if let Ok(mut slot) = self.problem.write() {
            *slot = problem;
        }
        self.changed.send_modify(|g| *g += 1);
    }

    /// Rereads the users whenever they changed — another gateway renewed a token or removed a
    /// user — and drops the sign-ins the shared store no longer holds, looking every second: a
    /// credential revoked there closes its sockets here within two. Runs until aborted.
    pub(crate) fn watch(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let users = Arc::clone(self);
        tokio::spawn(async move {
            let mut seen = users.store.stamp();
            loop {
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                let looked = Arc::clone(&users);
                let Ok((now, ended)) = tokio::task::spawn_blocking(move || {
                    (looked.store.stamp(), looked.drop_ended_sign_ins())
                })
                .await
                else {
                    continue;
                };
                if now != seen {
                    seen = now;
                    users.reread();
                } else if ended {
                    users.changed.send_modify(|g| *g += 1);
                }
            }
        })
    }

    /// The store the users and sign-ins are in, when the gateway's state is in PostgreSQL.
    fn shared(&self) -> Option<lurkbot_state::Store> {
        lurkbot_agent::shared_state::of(self.store.home())
    }

    /// Forgets the sign-ins the shared store no longer holds (ended on another gateway);
    /// whether any was.
    fn drop_ended_sign_ins(&self) -> bool {
        let Some(store) = self.shared() else {
            return false;
        };
        let live: std::collections::HashSet<String> = match store.live_sign_ins() {
            Ok(live) => live.into_iter().collect(),
            Err(e) => {
                tracing::warn!(error = %e, "users: sign-ins not checked against the state store");
                return false;
            }
        };
        let Ok(mut sign_ins) = self.sign_ins.lock() else {
            return false;
        };
        let before = sign_ins.len();
        sign_ins.retain(|digest, _| live.contains(digest));
        sign_ins.len() != before
    }

    /// The store (for the admin's changes; call [`Tenants::reread`] after one).
    pub(crate) fn store(&self) -> &UserStore {
        &self.store
    }

    /// Why the users file could not be read, if it could not.
    pub fn problem(&self) -> Option<String> {
        self.problem.read().ok().and_then(|p| p.clone())
    }

    /// Every user.
    pub fn users(&self) -> Vec<User> {
        self.users.read().map(|u| u.clone()).unwrap_or_default()
    }

    /// Resolves after each change of the users.
    pub(crate) fn changes(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    fn find(&self, test: impl Fn(&User) -> bool) -> Option<User> {
        self.users.read().ok()?.iter().find(|u| test(u)).cloned()
    }

    fn signed(user: &User, credential: Credential) -> Signed {
        Signed {
            user: Some(Arc::from(user.name.as_str())),
            admin: user.admin,
            credential,
        }
    }

    /// The user whose token `token` is.
    pub fn by_token(&self, token: &str) -> Option<Signed> {
        if !token.starts_with("lbu_") {
            return None;
        }
        let digest = token_digest(token);
        self.find(|u| u.token_sha256 == digest)
            .map(|u| Self::signed(&u, Credential::Token(digest)))
    }

    /// The user a sign-in cookie value belongs to, while it has not expired.
    pub fn by_cookie(&self, cookie: &str) -> Option<Signed> {
        let digest = token_digest(cookie);
        let known = self
            .sign_ins
            .lock()
            .ok()?
            .get(&digest)
            .map(|found| (found.user.clone(), found.expires_ms));
        let (user, expires_ms) = match known {
            Some(found) => found,
            // Made on another gateway, perhaps.
            None => {
                let stored = self.shared()?.sign_in_of(&digest).ok()??;
                self.sign_ins.lock().ok()?.insert(
                    digest.clone(),
                    SignIn {
                        user: stored.user.clone(),
                        expires_ms: stored.expires_ms,
                    },
                );
                (stored.user, stored.expires_ms)
            }
        };
        if expires_ms <= lurkbot_core::now_ms() {
            return None;
        }
        self.find(|u| u.name == user)
            .map(|u| Self::signed(&u, Credential::SignIn(digest)))
    }

    /// Whether `signed` still holds (its token not renewed, its user not removed, its sign-in
    /// neither ended nor expired).
    pub fn still_valid(&self, signed: &Signed) -> bool {
        let Some(name) = signed.user.as_deref() else {
            return true;
        };
        match &signed.credential {
            Credential::Gateway => true,
            Credential::Token(digest) => self
                .find(|u| u.name == name && &u.token_sha256 == digest)
                .is_some(),
            Credential::SignIn(digest) => {
                let live = self.sign_ins.lock().ok().is_some_and(|s| {
                    s.get(digest)
                        .is_some_and(|i| i.user == name && i.expires_ms > lurkbot_core::now_ms())
                });
                live && self.find(|u| u.name == name).is_some()
            }
        }
    }

    /// Starts a sign-in for `user` lasting `hours`; the cookie value.
    pub(crate) fn sign_in(&self, user: &str, hours: u64) -> String {
        let cookie = lurkbot_core::random_hex(24);
        let now = lurkbot_core::now_ms();
        let expires_ms = now.saturating_add(hours.max(1).saturating_mul(3_600_000));
        if let Some(store) = self.shared() {
            let stored = lurkbot_state::StoredSignIn {
                digest: token_digest(&cookie),
                user: user.to_string(),
                expires_ms,
            };
            if let Err(e) = store.record_sign_in(&stored) {
                tracing::warn!(error = %e, "users: a sign-in known to this gateway only");
            }
        }
        if let Ok(mut sign_ins) = self.sign_ins.lock() {
            sign_ins.retain(|_, s| s.expires_ms > now);
            if sign_ins.len() >= MAX_SIGN_INS
                && let Some(oldest) = sign_ins
                    .iter()
                    .min_by_key(|(_, s)| s.expires_ms)
                    .map(|(k, _)| k.clone())
            {
                sign_ins.remove(&oldest);
            }
            sign_ins.insert(
                token_digest(&cookie),
                SignIn {
                    user: user.to_string(),
                    expires_ms,
                },
            );
        }
        cookie
    }

    /// Ends the sign-in of `cookie` (its connections close).
    pub(crate) fn sign_out(&self, cookie: &str) {
        let digest = token_digest(cookie);
        if let Some(store) = self.shared()
            && let Err(e) = store.end_sign_in(&digest)
        {
            tracing::warn!(error = %e, "users: a sign-out not recorded in the state store");
        }
        let ended = self
            .sign_ins
            .lock()
            .is_ok_and(|mut s| s.remove(&digest).is_some());
        if ended {
            self.changed.send_modify(|g| *g += 1);
        }
    }

    /// Ends every sign-in of `user` (a removed user, a new password).
    pub(crate) fn sign_out_all(&self, user: &str) {
        if let Some(store) = self.shared()
            && let Err(e) = store.end_sign_ins_of(user)
        {
            tracing::warn!(error = %e, "users: sign-outs not recorded in the state store");
        }
        if let Ok(mut s) = self.sign_ins.lock() {
            s.retain(|_, i| i.user != user);
        }
    }
}

/// A user's settings: the gateway's, with that user's caps, and without what only the
/// gateway's own home runs (channels and their bindings, MCP servers, node permissions).
pub(crate) fn user_config(shared: &Config, name: &str) -> Config {
    let mut config = shared.clone();
    config.budgets = shared.users.budgets_for(name).clone();
    config.budgets_key = Some(if shared.users.budgets_by_user.contains_key(name) {
        format!("users.budgets_by_user.{name}")
    } else {
        "users.budgets".to_string()
    });
    config.channels.clear();
    config.bindings.clear();
    config.mcp = lurkbot_core::McpConfig::default();
    config.nodes = lurkbot_core::NodesConfig::default();
    config
}

/// Resolves at the next change of the users; never when there are none (`None`), or once
/// the registry is gone.
pub(crate) async fn changed(rx: &mut Option<watch::Receiver<u64>>) {
    if let Some(rx) = rx
        && rx.changed().await.is_ok()
    {
        return;
    }
    std::future::pending().await
}

/// The value of cookie `name` in a `Cookie` header.
pub(crate) fn cookie<'a>(headers: &'a axum::http::HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim())
        .filter(|v| !v.is_empty())
}
