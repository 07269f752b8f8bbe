//! `irc status|connect|disconnect|send|pull|history` (ARCHITECTURE.md §4.5): a session-bound IRC
//! client. Settings come only from `skills/irc-cli/secrets/.env`; the connection lives in the
//! gateway's session host (one per session key, lazy, reconnecting, closed with the session).
//! Inbound text is third-party: cleaned, capped and labelled untrusted.

mod client;
mod config;
mod run;
mod session;
mod store;
mod text;

pub use config::IrcConfig;
pub use session::{EventSink, InboundMessage, IrcEvent, IrcSessions, IrcState};

use crate::{Command, CommandSpec, FlagSpec, SubcommandSpec};

const LIMIT: FlagSpec = FlagSpec::value(
    "--limit",
    "n",
    false,
    "messages to return (default 50, 1-500)",
);

/// The spec of `irc`.
pub(crate) static SPEC: CommandSpec = CommandSpec {
    name: "irc",
    summary: "talk on IRC through this session's connection (settings in skills/irc-cli/secrets/.env; needs the gateway)",
    usage: "irc <status|connect|disconnect|send|pull|history> [flags]",
    subcommands: &[
        SubcommandSpec {
            name: "status",
            summary: "the connection's state (the first call connects)",
            usage: "irc status",
            flags: &[],
            examples: &["irc status"],
            run: |ctx, parsed| Box::pin(run::status(ctx, parsed)),
        },
        SubcommandSpec {
            name: "connect",
            summary: "connect and join the default channel now (send does it by itself)",
            usage: "irc connect",
            flags: &[],
            examples: &["irc connect"],
            run: |ctx, parsed| Box::pin(run::connect(ctx, parsed)),
        },
        SubcommandSpec {
            name: "disconnect",
            summary: "QUIT and close this session's connection",
            usage: "irc disconnect",
            flags: &[],
            examples: &["irc disconnect"],
            run: |ctx, parsed| Box::pin(run::disconnect(ctx, parsed)),
        },
        SubcommandSpec {
            name: "send",
            summary: "send a message (the default channel needs no --confirm; anything else does)",
            usage: "irc send [--to <#channel|nick>] (--text <text> | --text-stdin) [--confirm]",
            flags: &[
                FlagSpec::value(
                    "--to",
                    "target",
                    false,
                    "a channel or nick (default IRC_CHANNEL)",
                ),
                FlagSpec::value("--text", "text", false, "the message"),
                FlagSpec::switch("--text-stdin", "read the message from the tool's stdin"),
                FlagSpec::switch(
                    "--confirm",
                    "required for any target but the default channel",
                ),
            ],
            examples: &[
                "irc send --text \"hello from LurkBot\"",
                "irc send --to alice --text \"the build is green\" --confirm",
            ],
            run: |ctx, parsed| Box::pin(run::send(ctx, parsed)),
        },
        SubcommandSpec {
            name: "pull",
            summary: "new messages of a channel since the last pull (per-channel cursor)",
            usage: "irc pull [--from <#channel|nick>] [--limit <n>] [--format summary|full] [--peek]",
            flags: &[
                FlagSpec::value(
                    "--from",
                    "target",
                    false,
                    "a channel, or a nick for private messages (default IRC_CHANNEL)",
                ),
                LIMIT,
                FlagSpec::value(
                    "--format",
                    "summary|full",
                    false,
                    "summary (512 characters a message, default) or full (2,000)",
                ),
                FlagSpec::switch("--peek", "look without moving the cursor"),
            ],
            examples: &["irc pull", "irc pull --from alice --peek"],
            run: |ctx, parsed| Box::pin(run::pull(ctx, parsed)),
        },
        SubcommandSpec {
            name: "history",
            summary: "the logged messages of a channel (workspace/irc), newest last",
            usage: "irc history [--from <#channel|nick>] [--limit <n>]",
            flags: &[
                FlagSpec::value(
                    "--from",
                    "target",
                    false,
                    "a channel or nick (default IRC_CHANNEL)",
                ),
                LIMIT,
            ],
            examples: &["irc history --limit 20"],
            run: |ctx, parsed| Box::pin(run::history(ctx, parsed)),
        },
    ],
    flags: &[],
    examples: &["irc status", "irc send --text \"hello\"", "irc pull"],
    skill: "irc-cli",
    credentials: &[
        ("IRC_SERVER", "the server's host name, e.g. irc.libera.chat"),
        ("IRC_PORT", "its port (default 6697 with TLS, 6667 without)"),
        ("IRC_TLS", "1 (default) for TLS, 0 for plain text"),
        (
            "IRC_CHANNEL",
            "the default channel, joined on connect: IRC_CHANNEL=#lurkbot (a name without # gets one)",
        ),
        ("IRC_NICK", "the nick, at most 9 characters"),
        (
            "IRC_SERVER_PASSWORD",
            "optional: the server password (PASS)",
        ),
        ("IRC_CHANNEL_KEY", "optional: the default channel's key"),
        (
            "IRC_NICKSERV_PASSWORD",
            "optional: identify to NickServ with this password",
        ),
        (
            "IRC_AUTO_FORWARD_TO_AGENT",
            "1 to hand new messages to the session's agent (labelled untrusted); default 0",
        ),
    ],
    needs_gateway: true,
};

/// The `irc` command.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct IrcCommand;

impl Command for IrcCommand {
    fn spec(&self) -> &'static CommandSpec {
        &SPEC
    }
}
