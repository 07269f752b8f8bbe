//! The one gate every act that leaves the home passes (ARCHITECTURE.md §5.1): it decides from
//! **who asked** ([`Asker`]) and **what the target is** ([`Act`]), never from which code path
//! carries the act. A message the model sends with the `message` tool, a model-made cron job's
//! announce and a heartbeat alert are all [`Act::Message`]; what differs is who asked.
//!
//! Who asked is data that travels with the act: `owner` only where the owner acted (the CLI, the
//! web UI and the operator protocol, `config.toml`), `model` for everything a model produced —
//! its tool calls, and the cron jobs, settings and files it wrote, whenever they later run. A
//! record that does not say (an old `jobs.json`) counts as the model's: least power by default.
//! The structure test `owner_authority_is_made_only_at_owner_entry_points` keeps
//! `Asker::Owner` out of every other file.

mod node;
mod origin;
mod settings;
mod web;

use serde::{Deserialize, Serialize};

pub use node::RUN_COMMANDS;
pub use origin::{dm_peer, group_of, is_owner_account, is_third_party};
pub use settings::{MODEL_SETTINGS, model_may_change};
pub use web::{UrlFrom, web_rules};

use crate::approvals::{ApprovalRequest, Approvals, Approver, Decision};

/// Who asked for an act.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Asker {
    /// The owner: the CLI, the web UI, an operator connection, `config.toml`.
    Owner,
    /// Anything a model produced, including the jobs, settings and files it wrote.
    #[default]
    Model,
}

impl Asker {
    /// Whether the owner asked.
    pub fn is_owner(self) -> bool {
        self == Self::Owner
    }

    /// `owner` or `model`, as records and messages write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Owner => "owner",
            Self::Model => "model",
        }
    }
}

/// Where a message's recipient stands with the owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// The owner's own default place: the web chat, the owner's last route, `IRC_CHANNEL`, an
    /// account of the owner's (`allow_from`).
    OwnersDefault,
    /// The person the session is talking with (a reply into the conversation it came from).
    Conversation,
    /// Someone the owner let talk to the agent (paired, or any sender under `dm_policy = "open"`).
    Allowed,
    /// Anyone else.
    Stranger,
}

/// An act that leaves the home, or changes what later acts may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act<'a> {
    /// A change to `config.toml` (the `gateway` tool's `config.patch`), by dotted key.
    Settings {
        /// The keys the change sets or removes.
        keys: &'a [String],
    },
    /// A message to a person or a place on a channel (`message`, cron and heartbeat delivery,
    /// announce messages).
    Message {
        /// The channel (`webchat`, `irc`, `telegram`, …).
        channel: &'a str,
        /// The recipient as the channel names it.
        to: &'a str,
        /// Where the recipient stands.
        standing: Standing,
        /// Whether the channel knows pairing: a stranger there must pair first, where on a
        /// channel without it (IRC) a human decides each time.
        pairing: bool,
        /// Whether the act comes from a session of someone other than the owner (a group, a
        /// paired third party's direct messages): its text reaching the owner's own chat is
        /// the model acting on a stranger's words.
        from_third_party: bool,
    },
    /// A command sent to a paired node (the `nodes` tool, `lurkbot nodes invoke`).
    NodeCommand {
        /// The node's name.
        node: &'a str,
        /// The command (`system.run`, `system.which`, …).
        command: &'a str,
        /// What `system.run` would run, as a line.
        line: &'a str,
        /// Whether the owner's `[nodes] allow` lists it for that node.
        allowed: bool,
    },
}

/// What the gate decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Go ahead.
    Allow,
    /// Only after a human approves it (an approval request; nobody answering denies it).
    Approve(String),
    /// Only after a human approves this very act: allow-always is neither offered nor
    /// remembered, and an earlier one does not count.
    ApproveEach(String),
    /// Never; the reason says what would allow it.
    Refuse(String),
}

/// Decides `act` asked for by `asker` (counted in the metrics by act and verdict).
pub fn decide(asker: Asker, act: &Act<'_>) -> Verdict {
    let verdict = decide_act(asker, act);
    let kind = match act {
        Act::Settings { .. } => "settings",
        Act::Message { .. } => "message",
        Act::NodeCommand { .. } => "node_command",
    };
    let said = match verdict {
        Verdict::Allow => "allow",
        Verdict::Approve(_) => "approve",
        Verdict::ApproveEach(_) => "approve_each",
        Verdict::Refuse(_) => "refuse",
    };
    lurkbot_core::metrics::GATE_DECISIONS.inc(&[kind, said]);
    let mut span = lurkbot_core::trace::Span::start(
        format!("gate {kind}"),
        lurkbot_core::trace::Kind::Internal,
    );
    span.set("lurkbot.gate.act", kind);
    span.set("lurkbot.gate.verdict", said);
    span.set(
        "lurkbot.gate.asker",
        if asker.is_owner() { "owner" } else { "model" },
    );
    verdict
}

fn decide_act(asker: Asker, act: &Act<'_>) -> Verdict {
    match *act {
        Act::Settings { keys } => settings::settings(asker, keys),
        Act::Message {
            channel,
            to,
            standing,
            pairing,
            from_third_party,
        } => message(asker, channel, to, standing, pairing, from_third_party),
        Act::NodeCommand {
            node,
            command,
            line,
            allowed,
        } => node::node_command(asker, node, command, line, allowed),
    }
}

/// A message: the owner may name anyone; the model reaches the owner's default place and the
/// conversation it is in freely, other people the owner allowed only with a human's approval,
/// and a stranger on a channel with pairing never (they pair first).
fn message(
    asker: Asker,
    channel: &str,
    to: &str,
    standing: Standing,
    pairing: bool,
    from_third_party: bool,
) -> Verdict {
    if asker.is_owner() {
        return Verdict::Allow;
    }
    match standing {
        Standing::OwnersDefault if from_third_party => Verdict::Approve(format!(
            "a message into your own {channel} chat, written in a conversation with someone else"
        )),
        Standing::OwnersDefault | Standing::Conversation => Verdict::Allow,
        Standing::Allowed => Verdict::Approve(format!(
            "the model asks to message {to} on {channel}, who is not your default target"
        )),
        Standing::Stranger if pairing => Verdict::Refuse(format!(
            "{channel} chat {to} has not talked to the agent (not in allow_from, not paired); the model may message only those"
        )),
        Standing::Stranger => Verdict::Approve(format!(
            "the model asks to message {to} on {channel}, which is not the default {channel} target"
        )),
    }
}

/// What a held act shows the human who decides it.
pub struct Hold<'a> {
    /// Who answers.
    pub approver: &'a dyn Approver,
    /// Where allow-always decisions are kept.
    pub approvals: &'a Approvals,
    /// The session the act comes from.
    pub session: &'a str,
    /// The act's kind as a tool name (`message`).
    pub tool: &'a str,
    /// What will be done, in words.
    pub summary: String,
    /// What an allow-always decision remembers (`message:irc:alice`).
    pub key: String,
}

/// Carries out `verdict`: `Allow` passes, `Refuse` fails with its reason, `Approve` asks the
/// human of `hold` (an earlier allow-always counts; nobody answering denies).
///
/// # Errors
/// Why the act may not happen, for the one who asked.
pub async fn clear(verdict: Verdict, hold: Hold<'_>) -> Result<(), String> {
    let (reason, once) = match verdict {
        Verdict::Allow => return Ok(()),
        Verdict::Refuse(reason) => return Err(reason),
        Verdict::Approve(reason) => (reason, false),
        Verdict::ApproveEach(reason) => (reason, true),
    };
    if !once && hold.approvals.is_remembered(&hold.key) {
        return Ok(());
    }
    let request = ApprovalRequest {
        id: format!("gate_{}", lurkbot_core::random_hex(6)),
        session: hold.session.to_string(),
        tool: hold.tool.to_string(),
        summary: hold.summary,
        reason: reason.clone(),
        key: hold.key,
        once,
    };
    match crate::approvals::ask(hold.approver, &request).await {
        Decision::AllowOnce => Ok(()),
        Decision::AllowAlways if once => Ok(()),
        Decision::AllowAlways => {
            if let Err(e) = hold.approvals.remember(&request.key) {
                tracing::warn!(error = %e, "an allow-always decision was not saved");
            }
            Ok(())
        }
        Decision::Deny => Err(format!(
            "held for approval and not approved ({reason}); the owner can send it, or allow it when asked"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(standing: Standing, pairing: bool, from_third_party: bool) -> Act<'static> {
        Act::Message {
            channel: "telegram",
            to: "42",
            standing,
            pairing,
            from_third_party,
        }
    }

    #[test]
    fn the_owner_may_message_anyone() {
        for standing in [
            Standing::OwnersDefault,
            Standing::Conversation,
            Standing::Allowed,
            Standing::Stranger,
        ] {
            for pairing in [true, false] {
                assert_eq!(
                    decide(Asker::Owner, &msg(standing, pairing, true)),
                    Verdict::Allow
                );
            }
        }
    }

    #[test]
    fn the_owner_runs_anything_on_a_node_without_asking() {
        let act = Act::NodeCommand {
            node: "laptop",
            command: "system.run",
            line: "zip create --confirm",
            allowed: false,
        };
        assert_eq!(decide(Asker::Owner, &act), Verdict::Allow);
    }

    #[test]
    fn the_owner_changes_any_setting() {
        let keys = ["network.allow_hosts".to_string()];
        assert_eq!(
            decide(Asker::Owner, &Act::Settings { keys: &keys }),
            Verdict::Allow
        );
    }

    #[test]
    fn the_models_messages_keep_their_rules() {
        let model = |s, p, t| decide(Asker::Model, &msg(s, p, t));
        assert_eq!(model(Standing::OwnersDefault, true, false), Verdict::Allow);
        assert_eq!(model(Standing::Conversation, true, true), Verdict::Allow);
        assert!(matches!(
            model(Standing::OwnersDefault, true, true),
            Verdict::Approve(_)
        ));
        assert!(matches!(
            model(Standing::Allowed, true, false),
            Verdict::Approve(_)
        ));
        assert!(matches!(
            model(Standing::Stranger, true, false),
            Verdict::Refuse(r) if r.contains("not paired")
        ));
        assert!(matches!(
            model(Standing::Stranger, false, false),
            Verdict::Approve(_)
        ));
    }

    #[test]
    fn an_unmarked_record_is_the_models() {
        #[derive(Deserialize)]
        struct Record {
            #[serde(default)]
            by: Asker,
        }
        let r: Record = serde_json::from_str("{}").unwrap_or(Record { by: Asker::Owner });
        assert_eq!(r.by, Asker::Model);
        assert_eq!(
            serde_json::to_string(&Asker::Owner).ok().as_deref(),
            Some("\"owner\"")
        );
    }
}
