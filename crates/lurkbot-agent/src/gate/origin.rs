//! Where an act comes from: whether a session is the owner's or a conversation with someone
//! else, from the session key and the owner's accounts in `allow_from` (platform identities,
//! never display names).

use lurkbot_core::{Config, Home, SessionKey};

/// The channel and peer of a direct-message session (`agent:<id>:dm:<channel>:<peer>`).
pub fn dm_peer(session: &SessionKey) -> Option<(&str, &str)> {
    let mut parts = session.as_str().splitn(5, ':');
    let (_, _, kind, channel, peer) = (
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
    );
    (kind == "dm").then_some((channel, peer))
}

/// The channel and group of a group or topic session.
pub fn group_of(session: &SessionKey) -> Option<(&str, &str)> {
    let mut parts = session.as_str().splitn(5, ':');
    let (_, _, kind, channel, rest) = (
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
    );
    match kind {
        "group" => Some((channel, rest)),
        // A topic is `<group>:<thread>`: the group is everything before the last part.
        "topic" => Some((channel, rest.rsplit_once(':').map_or(rest, |(g, _)| g))),
        _ => None,
    }
}

/// Whether `id` on `channel` is one of the owner's own accounts (`allow_from`, by identity;
/// a Telegram `@handle` once resolved to its id).
/// `id` may be a session key's peer, where `:` is written `_` (a Matrix id's server part).
pub fn is_owner_account(home: &Home, config: &Config, channel: &str, id: &str) -> bool {
    config.channels.get(channel).is_some_and(|c| {
        lurkbot_core::owner_ids(home, channel, &c.allow_from)
            .iter()
            .any(|a| a == id || a.contains(':') && a.replace(':', "_") == id)
    })
}

/// Whether `session` is a conversation with someone other than the owner: a group or topic,
/// or direct messages with anyone whose id is not the owner's.
pub fn is_third_party(home: &Home, config: &Config, session: &SessionKey) -> bool {
    if session.is_group() || group_of(session).is_some() {
        return true;
    }
    // Direct messages on a messaging channel; the CLI's own `dm:cli:…` sessions are the owner's.
    // A plugin's channel counts as any: registered by this process's plugin host (every
    // installed plugin's, at start), or installed in the home (a process without the host
    // reads the manifests).
    dm_peer(session).is_some_and(|(channel, peer)| {
        (lurkbot_core::known_channel(channel).is_some()
            || (!lurkbot_core::plugin_channels_registered()
                && lurkbot_core::plugin_channels(home.root())
                    .iter()
                    .any(|c| c == channel)))
            && !is_owner_account(home, config, channel, peer)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &str) -> SessionKey {
        SessionKey::parse(k).unwrap_or_else(|_| SessionKey::main())
    }

    #[test]
    fn sessions_name_their_peer_or_group() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let home = Home::open(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let mut config = Config::default();
        config
            .channels
            .entry("telegram".into())
            .or_default()
            .allow_from = vec!["100".into()];
        assert!(!is_third_party(&home, &config, &key("agent:main:main")));
        assert!(!is_third_party(
            &home,
            &config,
            &key("agent:main:dm:telegram:100")
        ));
        assert!(is_third_party(
            &home,
            &config,
            &key("agent:main:dm:telegram:200")
        ));
        assert!(is_third_party(
            &home,
            &config,
            &key("agent:main:group:telegram:-5")
        ));
        assert!(!is_third_party(
            &home,
            &config,
            &key("agent:main:dm:cli:bob")
        ));
        config
            .channels
            .entry("matrix".into())
            .or_default()
            .allow_from = vec!["@me:example.org".into()];
        assert!(!is_third_party(
            &home,
            &config,
            &key("agent:main:dm:matrix:@me_example.org")
        ));
        assert!(is_third_party(
            &home,
            &config,
            &key("agent:main:dm:matrix:@eve_example.org")
        ));
        // A plugin's channel installed in the home: a stranger there is a third party.
        assert!(!is_third_party(
            &home,
            &config,
            &key("agent:main:dm:xmpp:eve")
        ));
        let plugin = home.join("plugins/xmpp");
        std::fs::create_dir_all(&plugin).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(
            plugin.join("lurkbot-plugin.toml"),
            "name = \"xmpp\"\nversion = \"1\"\ncommand = [\"python3\", \"main.py\"]\nprovides = [\"channel:xmpp\"]\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(is_third_party(
            &home,
            &config,
            &key("agent:main:dm:xmpp:eve")
        ));
        assert_eq!(
            dm_peer(&key("agent:main:dm:matrix:@a_example.org")),
            Some(("matrix", "@a_example.org"))
        );
        assert_eq!(
            group_of(&key("agent:main:topic:slack:C1:171.2")),
            Some(("slack", "C1"))
        );
    }
}
