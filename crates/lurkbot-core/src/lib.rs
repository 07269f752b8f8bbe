//! LurkBot core: what every other crate builds on.
//!
//! Owns the home layout ([`Home`]) and path confinement ([`HomePath`]), the configuration file
//! ([`Config`], [`ConfigDoc`]), atomic writes, ids, session keys and the skill secrets read from
//! `.env` files ([`Secrets`]), and the TLS client set-up every connection shares ([`tls`]). It
//! knows nothing about commands or models.

mod atomic;
mod autonomy_config;
mod budget_config;
mod channel_names;
mod channels_config;
mod clock;
mod config;
mod config_check;
mod config_doc;
mod config_patch;
mod config_schema;
pub mod dotenv;
mod error;
mod home;
mod host_port;
mod html_entities;
mod html_text;
mod ids;
mod init;
pub mod instance;
mod log_file;
pub mod metrics;
pub mod multipart;
mod nodes_config;
mod observability_config;
mod owner_accounts;
pub mod packed;
mod paths;
mod plugin_config;
mod plugins_config;
mod printable;
mod private_files;
mod protection;
mod running;
mod secrets;
mod session_key;
mod speech_config;
mod stale_temp;
mod state_config;
mod templates;
pub mod tls;
pub mod trace;
mod untrusted_frame;
mod users_config;
mod web_config;
mod zone;

pub use atomic::{
    write_atomic, write_atomic_may_revert, write_atomic_streamed, write_atomic_volatile,
    write_atomic_with_mode, write_new_atomic,
};
pub use autonomy_config::{
    ActiveHours, CatchUp, CronConfig, HeartbeatConfig, SubagentsConfig, parse_period_ms,
    within_window,
};
pub use budget_config::{BudgetsConfig, ModelPrice};
pub use channel_names::{
    known_channel, mark_plugin_channels_registered, plugin_channel_names,
    plugin_channels_registered, register_plugin_channel,
};
pub use channels_config::{
    Binding, CHANNEL_NAMES, ChannelConfig, DM_POLICIES, SIGNAL_DEFAULT_URL, SessionConfig,
    WHATSAPP_MODES, channel_problems,
};
pub use clock::now_ms;
pub use config::{
    AgentOverride, ApprovalsConfig, CalendarPermission, Config, ConfigError, GatewayAuth,
    LOG_LEVELS, LogConfig, NetworkConfig, PromptMode, RESTART_KEYS, SandboxMode, ToolLayerConfig,
};
pub use config_check::ConfigProblem;
pub use config_doc::{ConfigDoc, ConfigDocError, is_secret_key, mask_secret_values};
pub use config_patch::{MAX_PATCH_KEYS, patch_keys};
pub use config_schema::{config_reference, config_schema, keys_schema};
pub use error::CoreError;
pub use home::{Home, layout};
pub use host_port::split_host_port;
pub use html_entities::decode_html_entities;
pub use html_text::html_to_text;
pub use ids::{new_run_id, new_session_id, random_hex, valid_gateway_id};
pub use init::{InitReport, init_home, init_member_home, is_untouched_bootstrap};
pub use log_file::{
    DEFAULT_TAIL_BYTES, DEFAULT_TAIL_LINES, GATEWAY_LOG, RotatingLog, TailWindow, tail,
};
pub use nodes_config::NodesConfig;
pub use observability_config::{MetricsConfig, OtelConfig};
pub use owner_accounts::{OWNER_HANDLES_FILE, is_owner as is_owner_account, owner_ids};
pub use paths::{HomePath, PathError, confined_to};
pub use plugin_config::{EMBEDDERS, McpConfig, McpServerConfig, MemoryConfig};
pub use plugins_config::{
    FoundPlugin, HOOK_EVENTS, MANIFEST_FILE, ON_FAILURE, PLUGINS_DIR, PluginManifest,
    PluginSettings, find_plugins, is_plugin_name, plugin_channels,
};
pub use printable::{REPLACEMENT, is_unprintable, printable};
pub use private_files::{
    append_private_line, create_private_dir, make_created_files_private, open_private_append,
};
pub use protection::{
    APPROVALS_FILE, AccessError, Protection, SKILL_APPROVALS_FILE, classify_relative,
    is_private_memory,
};
pub use running::{RUNNING_GATEWAY, RunningGateway};
pub use secrets::{Secrets, secret_matches};
pub use session_key::{SessionKey, SessionKeyError};
pub use speech_config::{SttConfig, TtsAuto, TtsConfig};
pub use stale_temp::{
    STALE_AFTER, Sweep, sweep_stale_temp, sweep_stale_temp_at, sweep_stale_temp_in,
};
pub use state_config::StateConfig;
pub use untrusted_frame::frame_untrusted;
pub use users_config::{DEFAULT_SESSION_HOURS, UsersConfig};
pub use web_config::{BrowserConfig, MediaToolsConfig, WebConfig, WebFetchConfig, WebSearchConfig};
pub use zone::{UnknownZone, Zone};
