//! `[state]`: where the gateway keeps its durable state (ARCHITECTURE.md §6.3).

use serde::{Deserialize, Serialize};

/// `[state]` settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct StateConfig {
    /// A PostgreSQL database several gateways share (`postgres://lurkbot@db.example/lurkbot`);
    /// unset keeps the state in the home (`state/state.sqlite`). No password here: put it in
    /// the home's `.env` as `LURKBOT_STATE_PASSWORD`, or the whole URL as `LURKBOT_STATE_URL`
    /// (which wins over this). `?sslmode=disable|prefer|require|verify-full` and
    /// `sslrootcert=<CA file>`; TLS always verifies the server's certificate, and is the default
    /// for a database off this machine.
    pub url: Option<String>,
}
