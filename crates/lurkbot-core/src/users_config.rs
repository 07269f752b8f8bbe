//! `[users]`: one gateway shared by several people (ARCHITECTURE.md §6.2). Off by default;
//! with `enabled = true` every connection signs in as one user, each user has a home of their
//! own under `users/<name>/`, and the caps here apply to each user's own spending.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::BudgetsConfig;

/// Hours a web UI sign-in lasts unless set.
pub const DEFAULT_SESSION_HOURS: u64 = 24 * 7;

/// `[users]` settings.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct UsersConfig {
    /// Serve several users (each signs in; each has a home under `users/<name>/`). The
    /// gateway's own home stays the admins'.
    pub enabled: bool,
    /// Hours a web UI sign-in lasts (its cookie's expiry).
    pub session_hours: u64,
    /// `[users.budgets]`: every user's own caps (each user's spending counted alone).
    pub budgets: BudgetsConfig,
    /// `[users.budgets_by_user.<name>]`: one user's caps, in place of `[users.budgets]`.
    pub budgets_by_user: BTreeMap<String, BudgetsConfig>,
    /// `[users.total_budgets]`: caps on everyone's spending together (the gateway home's and
    /// every user's), checked before every call besides each one's own caps.
    pub total_budgets: BudgetsConfig,
    /// Skills of the gateway's own home that every user gets, read-only (the owner's approval
    /// stands for them; each user's credentials stay their own): names, or `["*"]` for all.
    pub shared_skills: Vec<String>,
}

impl Default for UsersConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            session_hours: DEFAULT_SESSION_HOURS,
            budgets: BudgetsConfig::default(),
            budgets_by_user: BTreeMap::new(),
            total_budgets: BudgetsConfig::default(),
            shared_skills: Vec::new(),
        }
    }
}

impl UsersConfig {
    /// The caps that apply to `user`'s spending.
    pub fn budgets_for(&self, user: &str) -> &BudgetsConfig {
        self.budgets_by_user.get(user).unwrap_or(&self.budgets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_users_own_caps_replace_the_common_ones() {
        let config: crate::Config = toml::from_str(
            "[users]\nenabled = true\n[users.budgets]\ndaily_tokens = 100\n[users.budgets_by_user.bob]\ndaily_tokens = 5\n",
        )
        .unwrap();
        assert!(config.users.enabled);
        assert_eq!(config.users.session_hours, DEFAULT_SESSION_HOURS);
        assert_eq!(config.users.budgets_for("alice").daily_tokens, Some(100));
        assert_eq!(config.users.budgets_for("bob").daily_tokens, Some(5));
        assert!(!crate::Config::default().users.enabled);
    }
}
