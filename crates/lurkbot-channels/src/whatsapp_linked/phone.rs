//! What the channel asks of the WhatsApp client once it is connected — send, quote, type,
//! mark read, upload a voice note, download media — as one trait: the client's own `Client`
//! implements it here, and the adapter's tests drive the channel at this boundary (there is no
//! WhatsApp server to run locally).

use std::sync::Arc;

use whatsapp_rust::Client;
use whatsapp_rust::Jid;
use whatsapp_rust::download::MediaType;
use whatsapp_rust::media::{AudioOptions, ImageOptions, audio_message, image_message};
use whatsapp_rust::proto_helpers::MessageBuilderExt as _;
use whatsapp_rust::send::{SendError, SendOptions};
use whatsapp_rust::wacore_binary::jid::JidExt as _;
use whatsapp_rust::waproto::whatsapp as wa;

use crate::{BoxFuture, ChannelError};

/// A message the channel received and may quote or download from (kept for a while).
#[derive(Clone)]
pub struct Received {
    /// The message as decrypted.
    pub message: Arc<wa::Message>,
    /// Its chat.
    pub chat: Jid,
    /// Its sender.
    pub sender: Jid,
}

/// The connected client, as the channel uses it.
pub trait Phone: Send + Sync {
    /// Sends `text` to `chat` (under the message id `id` when given), quoting `quote` (its id and what was
    /// received) when given.
    fn send_text<'a>(
        &'a self,
        chat: &'a str,
        text: &'a str,
        quote: Option<(&'a str, &'a Received)>,
        id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<String, ChannelError>>;

    /// Uploads `ogg` and sends it to `chat` as a voice note of `seconds`.
    fn send_voice<'a>(
        &'a self,
        chat: &'a str,
        ogg: Vec<u8>,
        seconds: u32,
    ) -> BoxFuture<'a, Result<String, ChannelError>>;

    /// Uploads `bytes` (a picture of `mime`) and sends it to `chat`.
    fn send_picture<'a>(
        &'a self,
        chat: &'a str,
        bytes: Vec<u8>,
        mime: &'a str,
    ) -> BoxFuture<'a, Result<String, ChannelError>>;

    /// Shows "typing…" in `chat`.
    fn typing<'a>(&'a self, chat: &'a str) -> BoxFuture<'a, ()>;

    /// Marks message `id` of `chat` (from `sender` in a group) read: the blue ticks.
    fn read<'a>(&'a self, chat: &'a str, sender: &'a str, id: &'a str) -> BoxFuture<'a, ()>;

    /// The decrypted bytes of the picture or voice note in `message`.
    fn download<'a>(
        &'a self,
        message: &'a wa::Message,
    ) -> BoxFuture<'a, Result<Vec<u8>, ChannelError>>;
}

/// A chat as the channel names it (a JID), or a phone number (`+4915550001`) as the owner
/// may give it to the `message` tool.
fn jid(text: &str) -> Result<Jid, ChannelError> {
    let number = text.trim().trim_start_matches('+');
    let text = if !number.is_empty() && number.chars().all(|c| c.is_ascii_digit()) {
        format!("{number}@s.whatsapp.net")
    } else {
        text.to_string()
    };
    text.parse()
        .map_err(|_| ChannelError::Permanent(format!("{text} is not a WhatsApp chat")))
}

/// A failed send, classified: not logged in or a bad recipient is for good, the rest is
/// worth retrying.
fn refused(error: SendError) -> ChannelError {
    match error {
        SendError::NotLoggedIn => ChannelError::Permanent(
            "WhatsApp is not linked: run `lurkbot channels login whatsapp`".into(),
        ),
        SendError::InvalidRequest(why) => ChannelError::Permanent(why),
        other => ChannelError::Transient(other.to_string()),
    }
}

impl Phone for Arc<Client> {
    fn send_text<'a>(
        &'a self,
        chat: &'a str,
        text: &'a str,
        quote: Option<(&'a str, &'a Received)>,
        id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<String, ChannelError>> {
        Box::pin(async move {
            let to = jid(chat)?;
            let message = match quote {
                Some((quoted_id, received)) => {
                    let context = whatsapp_rust::proto_helpers::build_quote_context_with_info(
                        quoted_id,
                        &received.sender,
                        &received.chat,
                        &to,
                        &received.message,
                    );
                    wa::Message::text_with_context(text, context)
                }
                None => wa::Message::text(text),
            };
            let mut options = SendOptions::default();
            if let Some(id) = id {
                options = options.with_message_id(id);
            }
            let sent = self
                .send_message_with_options(to, message, options)
                .await
                .map_err(refused)?;
            Ok(sent.message_id)
        })
    }

    fn send_voice<'a>(
        &'a self,
        chat: &'a str,
        ogg: Vec<u8>,
        seconds: u32,
    ) -> BoxFuture<'a, Result<String, ChannelError>> {
        Box::pin(async move {
            let to = jid(chat)?;
            let upload = self
                .upload(ogg, MediaType::Audio, Default::default())
                .await
                .map_err(|e| ChannelError::Transient(format!("voice note upload: {e}")))?;
            let options = AudioOptions {
                ptt: Some(true),
                duration_seconds: Some(seconds),
                ..Default::default()
            };
            let sent = self
                .send_message(to, audio_message(upload, options))
                .await
                .map_err(refused)?;
            Ok(sent.message_id)
        })
    }

    fn send_picture<'a>(
        &'a self,
        chat: &'a str,
        bytes: Vec<u8>,
        mime: &'a str,
    ) -> BoxFuture<'a, Result<String, ChannelError>> {
        Box::pin(async move {
            let to = jid(chat)?;
            let upload = self
                .upload(bytes, MediaType::Image, Default::default())
                .await
                .map_err(|e| ChannelError::Transient(format!("picture upload: {e}")))?;
            let options = ImageOptions {
                mimetype: Some(mime.to_string()),
                ..Default::default()
            };
            let sent = self
                .send_message(to, image_message(upload, options))
                .await
                .map_err(refused)?;
            Ok(sent.message_id)
        })
    }

    fn typing<'a>(&'a self, chat: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Ok(to) = jid(chat) {
                let _ = self.chatstate().send_composing(&to).await;
            }
        })
    }

    fn read<'a>(&'a self, chat: &'a str, sender: &'a str, id: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let (Ok(chat), Ok(sender)) = (jid(chat), jid(sender)) else {
                return;
            };
            let from = chat.is_group().then_some(&sender);
            if let Err(e) = self.mark_as_read(&chat, from, &[id]).await {
                tracing::debug!(error = %e, "WhatsApp read receipt not sent");
            }
        })
    }

    fn download<'a>(
        &'a self,
        message: &'a wa::Message,
    ) -> BoxFuture<'a, Result<Vec<u8>, ChannelError>> {
        Box::pin(async move {
            use whatsapp_rust::proto_helpers::MessageExt as _;
            let base = message.get_base_message();
            let result = if let Some(image) = base.image_message.as_option() {
                Client::download(self, image).await
            } else if let Some(audio) = base.audio_message.as_option() {
                Client::download(self, audio).await
            } else {
                return Err(ChannelError::Permanent(
                    "the message carries no media".into(),
                ));
            };
            result.map_err(|e| ChannelError::Transient(format!("WhatsApp media: {e}")))
        })
    }
}
