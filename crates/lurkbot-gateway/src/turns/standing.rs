//! The facts the gate (ARCHITECTURE.md §5.1, `lurkbot_agent::gate`) needs about a message's
//! target and origin, read from this gateway's settings and pairings: where a recipient stands
//! with the owner, and whether a session is a conversation with someone other than the owner.
//! Only platform identities count (a sender id, never a display name).

use lurkbot_agent::gate::Standing;
use lurkbot_agent::gate::{dm_peer, group_of, is_owner_account};
use lurkbot_channels::pairing::PairingStore;
use lurkbot_core::{Config, Home, SessionKey};

/// Where `chat` on `channel` stands for a message from `from`.
pub(crate) fn standing(
    home: &Home,
    config: &Config,
    channel: &str,
    chat: &str,
    from: &SessionKey,
    last_route: Option<&(String, Option<String>)>,
) -> Standing {
    if is_owner_account(home, config, channel, chat)
        || last_route.is_some_and(|(c, to)| c == channel && to.as_deref() == Some(chat))
    {
        return Standing::OwnersDefault;
    }
    let conversation = dm_peer(from).or_else(|| group_of(from));
    if conversation == Some((channel, chat)) {
        return Standing::Conversation;
    }
    let open = config
        .channels
        .get(channel)
        .is_some_and(|c| c.dm_policy == "open");
    if open
        || PairingStore::open(home)
            .is_approved(channel, chat)
            .unwrap_or(false)
    {
        Standing::Allowed
    } else {
        Standing::Stranger
    }
}
