//! A WhatsApp message as the linked device decrypted it, turned into the channel's
//! [`Inbound`]: who wrote it (their phone number where WhatsApp gives it, else their LID),
//! where to answer, whether a group message mentions the bot — by its phone JID or its LID,
//! or by quoting one of its messages — and its picture or voice note.

use whatsapp_rust::Jid;
use whatsapp_rust::proto_helpers::MessageExt as _;
use whatsapp_rust::types::message::MessageInfo;
use whatsapp_rust::wacore_binary::jid::JidExt as _;
use whatsapp_rust::waproto::whatsapp as wa;

use crate::{Inbound, Media, MediaSource};

/// The bot's own ids on WhatsApp: its phone number and its LID (user parts).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OwnIds {
    /// The phone number's user part (`15550001111`).
    pub phone: Option<String>,
    /// The LID's user part (`100000012345678`).
    pub lid: Option<String>,
}

impl OwnIds {
    /// Whether `jid` (a phone JID or a LID, with or without a device) is the bot.
    pub fn is(&self, jid: &str) -> bool {
        let user = jid.split(['@', ':', '.']).next().unwrap_or_default();
        !user.is_empty()
            && (self.phone.as_deref() == Some(user) || self.lid.as_deref() == Some(user))
    }
}

/// The person behind `jid`: its user part, preferring the phone number `alt` carries when the
/// sender is known by LID (allowlists hold numbers).
fn person(jid: &Jid, alt: Option<&Jid>) -> String {
    match alt {
        Some(alt) if jid.is_lid() && !alt.is_lid() => alt.user.to_string(),
        _ => jid.user.to_string(),
    }
}

/// The message's context (mentions and quote), wherever its kind keeps it.
fn context(message: &wa::Message) -> Option<&wa::ContextInfo> {
    let base = message.get_base_message();
    base.extended_text_message
        .as_option()
        .and_then(|m| m.context_info.as_option())
        .or_else(|| {
            base.image_message
                .as_option()
                .and_then(|m| m.context_info.as_option())
        })
        .or_else(|| {
            base.audio_message
                .as_option()
                .and_then(|m| m.context_info.as_option())
        })
}

/// The [`Inbound`] of one decrypted message; `None` for what is not someone writing to the
/// bot (its own messages, status updates, reactions, protocol messages).
pub fn inbound_of(message: &wa::Message, info: &MessageInfo, own: &OwnIds) -> Option<Inbound> {
    let source = &info.source;
    if source.is_from_me || source.chat.is_status_broadcast() {
        return None;
    }
    let base = message.get_base_message();
    let id = info.id.to_string();
    let mut media = Vec::new();
    let text = message
        .text_content()
        .or_else(|| message.get_caption())
        .unwrap_or_default()
        .to_string();
    if let Some(image) = base.image_message.as_option() {
        let extension = match image.mimetype.as_deref() {
            Some("image/png") => "png",
            Some("image/webp") => "webp",
            _ => "jpg",
        };
        media.push(Media {
            name: format!("whatsapp-{id}.{extension}"),
            source: MediaSource::File(id.clone()),
            voice: false,
        });
    }
    if let Some(audio) = base.audio_message.as_option() {
        media.push(Media {
            name: format!("whatsapp-{id}.ogg"),
            source: MediaSource::File(id.clone()),
            voice: audio.ptt.unwrap_or(false),
        });
    }
    if text.is_empty() && media.is_empty() {
        return None;
    }
    let context = context(message);
    let mentioned = context.is_some_and(|c| {
        c.mentioned_jid.iter().any(|jid| own.is(jid))
            || c.participant.as_deref().is_some_and(|p| own.is(p))
    }) || own
        .phone
        .as_deref()
        .is_some_and(|p| text.contains(&format!("@{p}")))
        || own
            .lid
            .as_deref()
            .is_some_and(|l| text.contains(&format!("@{l}")));
    let forwarded = context.is_some_and(|c| c.is_forwarded.unwrap_or(false));
    let sender = person(&source.sender, source.sender_alt.as_ref());
    let chat = if source.is_group {
        source.chat.to_string()
    } else {
        // Answers go to the person's phone JID where it is known (LID chats answer too).
        match source.sender_alt.as_ref() {
            Some(alt) if source.chat.is_lid() && !alt.is_lid() => alt.to_non_ad().to_string(),
            _ => source.chat.to_non_ad().to_string(),
        }
    };
    Some(Inbound {
        channel: "whatsapp",
        chat,
        sender,
        sender_name: info.push_name.clone(),
        handle: None,
        forwarded_from: forwarded.then(|| "someone else (forwarded)".to_string()),
        authenticated: true,
        text,
        group: source.is_group,
        mentioned: source.is_group && mentioned,
        message_id: id,
        thread: None,
        platform_id: None,
        media,
    })
}
