//! What the channel loop may use of the gateway (ARCHITECTURE.md §6, "The gateway's rooms"):
//! the session host — with the settings in force, the state store and the running channels —
//! its home, and on a shared gateway the hosts of the users who paired a sender. Nothing else
//! of the gateway's state reaches a channel.

use std::sync::Arc;

use lurkbot_channels::pairing::PairingStore;
use lurkbot_core::{Config, Home};

use crate::turns::host::SessionHost;
use crate::users::tenants::Tenants;

/// The hosts of a shared gateway's users, made on first use (the gateway's state gives them).
pub(crate) trait UserHosts: Send + Sync {
    /// The session host of `user`.
    ///
    /// # Errors
    /// Their state could not be made (their home, the store).
    fn host_of(&self, user: &str) -> Result<Arc<SessionHost>, String>;
}

/// One gateway's (or one user's) share of the channel loop.
#[derive(Clone)]
pub(crate) struct ChannelContext {
    /// The session host the turns run on.
    pub(crate) host: Arc<SessionHost>,
    /// Its home.
    pub(crate) home: Home,
    /// The users who may have paired a sender (`None` unless `[users] enabled`).
    users: Option<(Arc<Tenants>, Arc<dyn UserHosts>)>,
}

impl ChannelContext {
    /// The loop's view of `host`, with the users of a shared gateway.
    pub(crate) fn new(
        host: Arc<SessionHost>,
        users: Option<(Arc<Tenants>, Arc<dyn UserHosts>)>,
    ) -> Self {
        let home = host.home.clone();
        Self { host, home, users }
    }

    /// The settings in force now (a reload replaces them).
    pub(crate) fn config(&self) -> Arc<Config> {
        self.host.current().1
    }

    /// The context of the user who paired `sender` on `channel` (a sender a user paired is
    /// that user: their agent answers, in their home, ARCHITECTURE.md §6.2), or `None` for the
    /// gateway's own.
    ///
    /// # Errors
    /// The pairing state cannot be read, or the user is gone or their state cannot be made.
    pub(crate) fn paired_user(
        &self,
        pairings: &PairingStore,
        channel: &str,
        sender: &str,
    ) -> Result<Option<Self>, String> {
        let Some((tenants, hosts)) = &self.users else {
            return Ok(None);
        };
        let Some(user) = pairings
            .user_of(channel, sender)
            .map_err(|e| e.to_string())?
        else {
            return Ok(None);
        };
        if !tenants.users().iter().any(|u| u.name == user && !u.admin) {
            return Err(format!("the user '{user}' who paired this sender is gone"));
        }
        let host = hosts.host_of(&user)?;
        Ok(Some(Self::new(host, None)))
    }
}
