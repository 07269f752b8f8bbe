//! `terminal_exec`: LurkBot's whitelisted pseudo-terminal.
//!
//! A command string is parsed without a shell ([`parse_command`]), refused if it breaks a rule,
//! dispatched to a built-in [`Command`] of the [`Registry`], and answered with an [`Envelope`];
//! every run, refused ones included, leaves an audit record under
//! `artifacts/terminal_exec/runs/`. Secrets never reach argv, output or the audit log.
//!
//! ```no_run
//! # async fn demo(home: lurkbot_core::Home) {
//! use lurkbot_term::{ExecRequest, TerminalExec, default_registry};
//! let exec = TerminalExec::new(home, default_registry());
//! let envelope = exec.run(ExecRequest::new("help")).await;
//! assert_eq!(envelope.exit_code, 0);
//! # }
//! ```

mod archive;
mod args;
mod audit;
mod blocking;
mod command;
mod commands;
mod envelope;
mod error_code;
mod exec;
mod help;
mod listing_flags;
mod net;
pub use net::{http_client_builder, root_cause};
mod net_policy;
mod outbound;
mod page_urls;
pub use net_policy::{NetRefusal, NetworkPolicy, is_public};
pub use outbound::{Answer, BadRedirect, OutboundError, PolicedGet, RedirectProblem};
pub use page_urls::PageLoad;
pub mod output;
mod parser;
mod progress;
mod redact;
mod registry;
mod skill_doc;
mod spec;

pub use args::ParsedArgs;
pub use audit::{AuditRecord, write_audit};
pub use command::{
    CancelFlag, Command, CommandCtx, CommandError, CommandFuture, Outcome, Registry,
};
pub use commands::cal::fuzz_read_ical;
pub use commands::irc::{EventSink, InboundMessage, IrcConfig, IrcEvent, IrcSessions, IrcState};
pub use commands::rss::{fuzz_parse_feed, parse_items};
pub use envelope::{Artifact, Envelope, STDERR_CAP, STDOUT_CAP, cap_text};
pub use error_code::ErrorCode;
pub use exec::{ExecRequest, TerminalExec};
pub use parser::{
    BANNED_TOKENS, MAX_COMMAND_CHARS, MAX_TOKENS, ParseError, SENSITIVE_NAMES, SENSITIVE_WORDS,
    is_sensitive_name, parse_command, sensitive_flag, split_sensitive,
};
pub use progress::{Progress, ProgressSink};
pub use redact::{MASK, Redactor, mask_argv, mask_command_text, mask_url_passwords};
pub use registry::default_registry;
pub use skill_doc::bundled_skills;
pub use spec::{CommandSpec, FlagSpec, SubcommandSpec};
