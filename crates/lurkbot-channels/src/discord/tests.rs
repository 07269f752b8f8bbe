//! Discord's messages read from its gateway events.

use super::*;

#[test]
fn message_events_become_inbound_messages() {
    let guild = json!({"id": "m1", "channel_id": "c1", "guild_id": "g1", "content": "<@999> hi",
        "author": {"id": "42", "username": "ada"}, "mentions": [{"id": "999"}],
        "attachments": [{"filename": "a.png"}]});
    let m = inbound(&guild, "999").unwrap();
    assert!(m.group && m.mentioned);
    assert_eq!(m.text, "hi\n[attachment: a.png] (not opened)");
    // A voice message's attachment carries its length (and waveform).
    let voice = json!({"id": "m9", "channel_id": "c1", "author": {"id": "7", "username": "ann"},
        "content": "", "attachments": [{"filename": "voice-message.ogg",
        "url": "https://cdn.discordapp.com/v.ogg", "duration_secs": 2.5, "waveform": "AAAA"}]});
    let heard = inbound(&voice, "99").unwrap();
    assert!(heard.media[0].voice, "{heard:?}");
    let dm = json!({"id": "m2", "channel_id": "d1", "content": "yo", "author": {"id": "42", "username": "ada"}});
    let m = inbound(&dm, "999").unwrap();
    assert!(!m.group && !m.mentioned);
    let own = json!({"id": "m3", "channel_id": "d1", "content": "x", "author": {"id": "999"}});
    assert!(inbound(&own, "999").is_none());
}
