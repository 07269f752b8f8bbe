//! Which agent answers a channel message (`[[bindings]]`, OpenClaw's: the first rule whose
//! every given field matches; `main` otherwise) and in which session (ARCHITECTURE.md §5):
//! `agent:<id>:dm:<channel>:<peer>` for a direct message (or `agent:<id>:main` for the owner
//! when `session.dm_scope = "main"`), `agent:<id>:group:<channel>:<chat>` for a group, and
//! `agent:<id>:topic:<channel>:<chat>:<thread>` for a thread in one.

use lurkbot_core::{Binding, SessionKey, SessionKeyError};

use crate::Inbound;

/// The agent the first matching binding names, else `main`.
pub fn agent_for(bindings: &[Binding], message: &Inbound) -> String {
    bindings
        .iter()
        .find(|b| {
            b.channel.as_deref().is_none_or(|c| c == message.channel)
                && b.peer
                    .as_deref()
                    .is_none_or(|p| !message.group && p == message.sender)
                && b.group
                    .as_deref()
                    .is_none_or(|g| message.group && g == message.chat)
        })
        .map_or_else(|| "main".to_string(), |b| b.agent.clone())
}

/// The session `message` belongs to.
///
/// # Errors
/// A platform id that cannot be part of a session key (whitespace, `/`, `:`).
pub fn session_for(
    agent: &str,
    message: &Inbound,
    dm_scope_main: bool,
    owner: bool,
) -> Result<SessionKey, SessionKeyError> {
    let part = |id: &str| id.replace(':', "_");
    let raw = if message.group {
        match &message.thread {
            Some(thread) => format!(
                "agent:{agent}:topic:{}:{}:{}",
                message.channel,
                part(&message.chat),
                part(thread)
            ),
            None => format!(
                "agent:{agent}:group:{}:{}",
                message.channel,
                part(&message.chat)
            ),
        }
    } else if dm_scope_main && owner {
        format!("agent:{agent}:main")
    } else {
        format!(
            "agent:{agent}:dm:{}:{}",
            message.channel,
            part(&message.sender)
        )
    };
    SessionKey::parse(&raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(group: bool, thread: Option<&str>) -> Inbound {
        Inbound {
            channel: "telegram",
            chat: "-100200".into(),
            sender: "42".into(),
            sender_name: "ada".into(),
            handle: None,
            forwarded_from: None,
            authenticated: true,
            text: "hi".into(),
            group,
            mentioned: true,
            message_id: "7".into(),
            thread: thread.map(str::to_string),
            platform_id: None,
            media: Vec::new(),
        }
    }

    #[test]
    fn bindings_pick_the_agent_and_keys_follow_the_session_shapes() {
        let bindings = vec![
            Binding {
                agent: "work".into(),
                channel: Some("telegram".into()),
                peer: None,
                group: Some("-100200".into()),
            },
            Binding {
                agent: "pal".into(),
                channel: None,
                peer: Some("42".into()),
                group: None,
            },
        ];
        assert_eq!(agent_for(&bindings, &message(true, None)), "work");
        assert_eq!(agent_for(&bindings, &message(false, None)), "pal");
        assert_eq!(agent_for(&[], &message(false, None)), "main");
        let key =
            |m: &Inbound, main: bool, owner: bool| session_for("main", m, main, owner).unwrap();
        assert_eq!(
            key(&message(false, None), false, true).as_str(),
            "agent:main:dm:telegram:42"
        );
        assert_eq!(
            key(&message(false, None), true, true).as_str(),
            "agent:main:main"
        );
        assert_eq!(
            key(&message(false, None), true, false).as_str(),
            "agent:main:dm:telegram:42"
        );
        assert_eq!(
            key(&message(true, None), false, false).as_str(),
            "agent:main:group:telegram:-100200"
        );
        assert_eq!(
            key(&message(true, Some("5")), false, false).as_str(),
            "agent:main:topic:telegram:-100200:5"
        );
    }
}
