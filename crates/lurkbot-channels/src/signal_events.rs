//! signal-cli's event stream read: server-sent events (`event:receive`, `data:` lines, `:`
//! keep-alive comments) and each envelope as the channel's [`Inbound`].

use serde_json::Value;

use crate::{Inbound, Media, MediaSource};

/// What one pass over the stream's bytes found.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    /// The `data` of each complete event, in order.
    pub(crate) events: Vec<String>,
    /// Whether anything arrived at all (an event or a keep-alive comment).
    pub(crate) alive: bool,
}

/// Takes the complete lines out of `buffer` (what is left is a line still arriving, perhaps
/// cut inside a character) and gathers events: `data:` lines until a blank line; comments
/// (`:`) count as alive.
pub(crate) fn parse_stream(buffer: &mut Vec<u8>, data: &mut Vec<String>) -> Parsed {
    let mut parsed = Parsed::default();
    while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
        let bytes: Vec<u8> = buffer.drain(..=end).collect();
        let line = String::from_utf8_lossy(&bytes);
        let line = line.trim_end_matches(['\n', '\r']);
        parsed.alive = true;
        if line.is_empty() {
            if !data.is_empty() {
                parsed.events.push(data.join("\n"));
                data.clear();
            }
        } else if let Some(value) = line.strip_prefix("data:") {
            data.push(value.strip_prefix(' ').unwrap_or(value).to_string());
        }
        // `event:`, `id:` and `:` comments carry nothing the channel needs.
    }
    parsed
}

/// The bot's own identities: its number and its ACI (a mention carries either).
#[derive(Debug, Clone, Default)]
pub(crate) struct Own {
    pub(crate) number: String,
    pub(crate) uuid: Option<String>,
}

impl Own {
    fn is(&self, number: Option<&str>, uuid: Option<&str>) -> bool {
        number.is_some_and(|n| n == self.number)
            || uuid.is_some_and(|u| Some(u) == self.uuid.as_deref() || u == self.number)
    }
}

/// The message an event's data carries: signal-cli's `{"account", "envelope"}`, or the same
/// inside a JSON-RPC `receive` notification's `params`. `None` for what is not a message
/// (typing, receipts, syncs of the account's own sends, reactions, deletions).
pub(crate) fn inbound_of(data: &str, own: &Own) -> Option<Inbound> {
    let value: Value = serde_json::from_str(data).ok()?;
    let envelope = value
        .get("envelope")
        .or_else(|| value.pointer("/params/envelope"))
        .or_else(|| value.pointer("/params/result/envelope"))?;
    let message = envelope.get("dataMessage")?;
    let sender = envelope["sourceNumber"]
        .as_str()
        .or_else(|| envelope["sourceUuid"].as_str())?
        .to_string();
    if own.is(Some(&sender), envelope["sourceUuid"].as_str()) {
        return None;
    }
    let timestamp = envelope["timestamp"].as_u64()?;
    let mut text = with_mentions(message);
    let attachments = message["attachments"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if text.trim().is_empty() && attachments.is_empty() {
        return None;
    }
    // A group's id is base64, whose `/` a session key cannot hold: the chat is its URL-safe
    // form (`group_id` turns it back).
    let group = message
        .pointer("/groupInfo/groupId")
        .and_then(Value::as_str)
        .map(|id| id.replace('+', "-").replace('/', "_"));
    let mut media = Vec::new();
    for part in &attachments {
        let Some(id) = part["id"].as_str() else {
            continue;
        };
        let kind = part["contentType"].as_str().unwrap_or_default();
        // signal-cli does not say whether audio was recorded as a voice note: audio is one.
        let voice = kind.starts_with("audio/");
        let name = part["filename"]
            .as_str()
            .map_or_else(|| format!("{id}{}", extension(kind)), str::to_string);
        let shown = if voice { "voice note" } else { "attachment" };
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!("[{shown} attached: {name}]"));
        media.push(Media {
            name,
            source: MediaSource::File(id.to_string()),
            voice,
        });
    }
    let mentioned = message["mentions"].as_array().is_some_and(|all| {
        all.iter()
            .any(|m| own.is(m["number"].as_str(), m["uuid"].as_str()))
    }) || message
        .get("quote")
        .is_some_and(|q| own.is(q["authorNumber"].as_str(), q["authorUuid"].as_str()));
    Some(Inbound {
        channel: "signal",
        chat: group.clone().unwrap_or_else(|| sender.clone()),
        sender_name: envelope["sourceName"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        sender: sender.clone(),
        handle: None,
        forwarded_from: None,
        authenticated: true,
        text,
        group: group.is_some(),
        mentioned,
        // Signal names a message by its author and timestamp: replies quote both.
        message_id: format!("{timestamp}:{sender}"),
        thread: None,
        platform_id: None,
        media,
    })
}

/// The group id signal-cli takes for a chat named by its URL-safe form.
pub(crate) fn group_id(chat: &str) -> String {
    chat.replace('-', "+").replace('_', "/")
}

/// The text with each mention's placeholder (U+FFFC) written as `@name` or `@number`.
fn with_mentions(message: &Value) -> String {
    let text = message["message"].as_str().unwrap_or_default();
    let Some(mentions) = message["mentions"].as_array().filter(|m| !m.is_empty()) else {
        return text.to_string();
    };
    let mut names = mentions.iter().map(|m| {
        m["name"]
            .as_str()
            .or_else(|| m["number"].as_str())
            .or_else(|| m["uuid"].as_str())
            .unwrap_or("someone")
    });
    text.chars()
        .map(|c| {
            if c == '\u{FFFC}' {
                format!("@{}", names.next().unwrap_or("someone"))
            } else {
                c.to_string()
            }
        })
        .collect()
}

fn extension(kind: &str) -> &'static str {
    match kind {
        "image/png" => ".png",
        "image/jpeg" => ".jpg",
        "image/gif" => ".gif",
        "image/webp" => ".webp",
        "audio/ogg" => ".ogg",
        "audio/aac" => ".aac",
        "audio/mpeg" => ".mp3",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_yields_whole_events_and_counts_keep_alives() {
        let mut buffer =
            b":\n\nevent:receive\ndata:{\"a\":1}\n\nevent:receive\ndata:{\"b\"".to_vec();
        let mut data = Vec::new();
        let parsed = parse_stream(&mut buffer, &mut data);
        assert!(parsed.alive);
        assert_eq!(parsed.events, ["{\"a\":1}"]);
        assert_eq!(buffer, b"data:{\"b\"", "the line still arriving is kept");
        buffer.extend_from_slice(":2}\n\n".as_bytes());
        assert_eq!(parse_stream(&mut buffer, &mut data).events, ["{\"b\":2}"]);
        let mut nothing = Vec::new();
        assert!(!parse_stream(&mut nothing, &mut data).alive);
    }

    #[test]
    fn a_group_message_mentions_the_bot_by_number_or_uuid_and_names_the_mention() {
        let own = Own {
            number: "+15550001111".into(),
            uuid: Some("own-uuid".into()),
        };
        let data = |mention: &str| {
            format!(
                r#"{{"account":"+15550001111","envelope":{{"sourceNumber":"+4915550001","sourceUuid":"u-ada","sourceName":"Ada","timestamp":17,"dataMessage":{{"timestamp":17,"message":"hi \ufffc!","groupInfo":{{"groupId":"R3/vd+A=","type":"DELIVER"}},"mentions":[{mention}]}}}}}}"#
            )
        };
        let by_uuid = inbound_of(
            &data(r#"{"name":"Bot","uuid":"own-uuid","start":3,"length":1}"#),
            &own,
        );
        let by_uuid = by_uuid.unwrap_or_else(|| panic!("a message"));
        assert!(by_uuid.group && by_uuid.mentioned);
        assert_eq!(by_uuid.chat, "R3_vd-A=", "a session key holds no slash");
        assert_eq!(group_id(&by_uuid.chat), "R3/vd+A=");
        assert_eq!(by_uuid.text, "hi @Bot!");
        assert_eq!(by_uuid.message_id, "17:+4915550001");
        let by_number = inbound_of(
            &data(r#"{"number":"+15550001111","start":3,"length":1}"#),
            &own,
        );
        assert!(by_number.is_some_and(|m| m.mentioned));
        let other = inbound_of(
            &data(r#"{"number":"+4470000","uuid":"x","start":3,"length":1}"#),
            &own,
        );
        assert!(other.is_some_and(|m| !m.mentioned));
    }

    #[test]
    fn what_is_not_a_message_is_skipped() {
        let own = Own {
            number: "+15550001111".into(),
            uuid: None,
        };
        let typing = r#"{"envelope":{"sourceNumber":"+49","timestamp":1,"typingMessage":{"action":"STARTED"}}}"#;
        assert!(inbound_of(typing, &own).is_none());
        let reaction = r#"{"envelope":{"sourceNumber":"+49","timestamp":1,"dataMessage":{"timestamp":1,"reaction":{"emoji":"👍"}}}}"#;
        assert!(inbound_of(reaction, &own).is_none());
        let own_send = r#"{"envelope":{"sourceNumber":"+15550001111","timestamp":1,"dataMessage":{"timestamp":1,"message":"x"}}}"#;
        assert!(inbound_of(own_send, &own).is_none());
        let voice = r#"{"params":{"envelope":{"sourceNumber":"+49","timestamp":2,"dataMessage":{"timestamp":2,"attachments":[{"id":"att1","contentType":"audio/aac","voiceNote":true}]}}}}"#;
        let voice = inbound_of(voice, &own).unwrap_or_else(|| panic!("a voice note"));
        assert_eq!(voice.text, "[voice note attached: att1.aac]");
        assert!(voice.media[0].voice);
    }
}
