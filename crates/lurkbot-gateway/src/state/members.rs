//! The users' own gateway states on a shared gateway (ARCHITECTURE.md §6.2), made on first
//! use and kept while the gateway runs.
//!
//! Isolation is by construction: a user's connection is served with **their** [`AppState`] —
//! their home (`users/<name>/`), session host, terminal (confined to that home), event hub,
//! approvals, cron scheduler and usage ledger. No method, route or tool of theirs holds the
//! gateway's own state, so none can reach another user's data. Admins are the gateway's
//! owners: they are served with the gateway's own state, as the gateway token is.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use lurkbot_core::{Config, Home};
use tokio::task::JoinHandle;

use crate::state::AppState;
use crate::users::store::UsersError;
use crate::users::tenants::Signed;

/// Starts the tasks that serve one user's state (their scheduler, memory watch, outbox…):
/// given by the server once it serves.
pub(crate) type Serve = fn(&AppState) -> Vec<JoinHandle<()>>;

/// One user's live state and the tasks that serve it.
type Live = (AppState, Vec<JoinHandle<()>>);

/// The users' live states.
#[derive(Default)]
pub struct Members {
    states: Mutex<HashMap<String, Live>>,
    serve: OnceLock<Serve>,
}

impl Members {
    /// From now on, a user's state made is served by `serve` (the gateway serves).
    pub(crate) fn serve_with(&self, serve: Serve) {
        let _ = self.serve.set(serve);
    }

    /// The state a connection of `signed` is served with: the gateway's own for the owner and
    /// admins, the user's own for everyone else (made on first use).
    ///
    /// # Errors
    /// The user's home cannot be made.
    pub fn state_for(&self, gateway: &AppState, signed: &Signed) -> Result<AppState, UsersError> {
        match signed.user.as_deref() {
            Some(name) if !signed.admin => self.user_state(gateway, name),
            _ => Ok(gateway.clone()),
        }
    }

    /// `name`'s own state (made, and its scheduler started, on first use).
    pub(crate) fn user_state(
        &self,
        gateway: &AppState,
        name: &str,
    ) -> Result<AppState, UsersError> {
        crate::users::store::check_name(name)?;
        let mut states = self
            .states
            .lock()
            .map_err(|_| UsersError::Store("the users' states are unusable".into()))?;
        if let Some((state, _)) = states.get(name) {
            return Ok(state.clone());
        }
        let home = gateway
            .home
            .member(name)
            .map_err(|e| UsersError::Store(e.to_string()))?;
        let skills = lurkbot_term::bundled_skills(&lurkbot_term::default_registry());
        lurkbot_core::init_member_home(&home, &skills)
            .map_err(|e| UsersError::Store(e.to_string()))?;
        let shared = gateway.config();
        crate::users::shared_skills::share(&gateway.home, &home, &shared);
        let config = crate::users::tenants::user_config(&shared, name);
        let state = gateway.for_user(name, home, config);
        let tasks = self
            .serve
            .get()
            .map_or_else(Vec::new, |serve| serve(&state));
        states.insert(name.to_string(), (state.clone(), tasks));
        Ok(state)
    }

    /// Makes every user's state (so their cron jobs run while they are away).
    pub(crate) fn start_all(&self, gateway: &AppState) {
        let Some(users) = &gateway.users else { return };
        for user in users.users().iter().filter(|u| !u.admin) {
            if let Err(e) = self.user_state(gateway, &user.name) {
                tracing::error!(user = user.name, error = %e, "users: a user's state could not be made");
            }
        }
    }

    /// Stops and forgets `name`'s state (a removed user).
    pub(crate) async fn drop_user(&self, name: &str) {
        let taken = self.states.lock().ok().and_then(|mut s| s.remove(name));
        if let Some((state, tasks)) = taken {
            tasks.iter().for_each(tokio::task::JoinHandle::abort);
            state.host.shutdown().await;
            if let Some(store) = state.host.store()
                && let Err(e) = store.release_leases()
            {
                tracing::warn!(user = name, error = %e, "leases not given back");
            }
        }
    }

    /// Puts the gateway's new settings in force for every user.
    pub(crate) fn replace_config(&self, config: &Config) {
        let states: Vec<(String, AppState)> = self
            .states
            .lock()
            .map(|s| s.iter().map(|(k, (v, _))| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        for (name, state) in states {
            if let Some(root) = state.home.shared().and_then(|r| Home::open(r).ok()) {
                crate::users::shared_skills::share(&root, &state.home, config);
            }
            state.replace_config(crate::users::tenants::user_config(config, &name));
        }
    }

    /// Stops every user's state (the gateway stopping).
    pub(crate) async fn shutdown(&self) {
        let all: Vec<String> = self
            .states
            .lock()
            .map(|s| s.keys().cloned().collect())
            .unwrap_or_default();
        for name in all {
            self.drop_user(&name).await;
        }
    }

    /// Turns the users run now.
    pub(crate) fn running_turns(&self) -> usize {
        self.states.lock().map_or(0, |s| {
            s.values()
                .map(|(state, _)| state.host.running_turns())
                .sum()
        })
    }

    /// Users whose state is live.
    pub fn live(&self) -> usize {
        self.states.lock().map(|s| s.len()).unwrap_or(0)
    }
}

/// The users' hosts as the channel loop asks for them: a user's state made on first use.
pub(crate) struct MemberHosts(pub(crate) AppState);

impl crate::channels::context::UserHosts for MemberHosts {
    fn host_of(
        &self,
        user: &str,
    ) -> Result<std::sync::Arc<crate::turns::host::SessionHost>, String> {
        let gateway = &self.0;
        let members = gateway
            .members
            .as_ref()
            .ok_or_else(|| "this gateway has no users".to_string())?;
        members
            .user_state(gateway, user)
            .map(|state| state.host.clone())
            .map_err(|e| e.to_string())
    }
}
