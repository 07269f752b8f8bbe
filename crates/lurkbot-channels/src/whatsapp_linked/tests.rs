//! The linked-device channel driven at the WhatsApp client's boundary: the batches its
//! durability hook hands over, the events it follows, and the calls it makes on a connected
//! client ([`Phone`], recorded here). There is no WhatsApp server to run locally; the keys'
//! storage is tested on both state backends in the `lurkbot` crate's tests.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use whatsapp_rust::Jid;
use whatsapp_rust::proto_helpers::MessageBuilderExt as _;
use whatsapp_rust::types::events::{ConnectFailureReason, Event, InboundMessage, LoggedOut};
use whatsapp_rust::types::message::{MessageInfo, MessageSource};
use whatsapp_rust::waproto::whatsapp as wa;

use super::inbound::OwnIds;
use super::phone::{Phone, Received};
use super::*;

/// What the channel asked of the client.
#[derive(Default)]
struct Recorder {
    calls: Mutex<Vec<String>>,
}

impl Recorder {
    fn calls(&self) -> Vec<String> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }

    fn note(&self, call: String) {
        if let Ok(mut calls) = self.calls.lock() {
            calls.push(call);
        }
    }
}

impl Phone for Recorder {
    fn send_text<'a>(
        &'a self,
        chat: &'a str,
        text: &'a str,
        quote: Option<(&'a str, &'a Received)>,
        id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<String, ChannelError>> {
        let quoted = quote.map(|(id, r)| format!("{id} from {}", r.sender));
        self.note(format!("send {chat} {text:?} quote={quoted:?} id={id:?}"));
        Box::pin(async move { Ok(id.unwrap_or("3EB0RANDOM").to_string()) })
    }

    fn send_voice<'a>(
        &'a self,
        chat: &'a str,
        ogg: Vec<u8>,
        seconds: u32,
    ) -> BoxFuture<'a, Result<String, ChannelError>> {
        self.note(format!("voice {chat} {} bytes {seconds} s", ogg.len()));
        Box::pin(async { Ok("3EB0VOICE".into()) })
    }

    fn send_picture<'a>(
        &'a self,
        chat: &'a str,
        bytes: Vec<u8>,
        mime: &'a str,
    ) -> BoxFuture<'a, Result<String, ChannelError>> {
        self.note(format!("picture {chat} {} bytes {mime}", bytes.len()));
        Box::pin(async { Ok("3EB0PICTURE".into()) })
    }

    fn typing<'a>(&'a self, chat: &'a str) -> BoxFuture<'a, ()> {
        self.note(format!("typing {chat}"));
        Box::pin(async {})
    }

    fn read<'a>(&'a self, chat: &'a str, sender: &'a str, id: &'a str) -> BoxFuture<'a, ()> {
        self.note(format!("read {chat} {sender} {id}"));
        Box::pin(async {})
    }

    fn download<'a>(
        &'a self,
        message: &'a wa::Message,
    ) -> BoxFuture<'a, Result<Vec<u8>, ChannelError>> {
        let has_image = message.image_message.as_option().is_some();
        Box::pin(async move {
            if has_image {
                Ok(vec![0x89, b'P', b'N', b'G'])
            } else {
                Err(ChannelError::Permanent("no media".into()))
            }
        })
    }
}

const BOT_PHONE: &str = "15550009999";
const BOT_LID: &str = "100000099999999";

fn own() -> OwnIds {
    OwnIds {
        phone: Some(BOT_PHONE.into()),
        lid: Some(BOT_LID.into()),
    }
}

fn jid(text: &str) -> Jid {
    text.parse().unwrap_or_default()
}

fn incoming(
    id: &str,
    chat: &str,
    sender: &str,
    sender_alt: Option<&str>,
    message: wa::Message,
) -> InboundMessage {
    let chat = jid(chat);
    let info = MessageInfo {
        source: MessageSource {
            is_group: chat.to_string().ends_with("@g.us"),
            chat,
            sender: jid(sender),
            sender_alt: sender_alt.map(jid),
            ..MessageSource::default()
        },
        id: id.into(),
        push_name: "Ada".into(),
        ..MessageInfo::default()
    };
    InboundMessage::builder()
        .message(Arc::new(message))
        .info(Arc::new(info))
        .build()
}

fn mentioning(text: &str, mentioned: &[&str]) -> wa::Message {
    let context = wa::ContextInfo {
        mentioned_jid: mentioned.iter().map(|m| (*m).to_string()).collect(),
        ..wa::ContextInfo::default()
    };
    wa::Message::text_with_context(text, context)
}

fn channel() -> (Arc<WhatsAppLinked>, Arc<Recorder>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let home = lurkbot_core::Home::open(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    let store = lurkbot_state::Store::open(&home).unwrap_or_else(|e| panic!("{e}"));
    let linked = Arc::new(WhatsAppLinked::new(StoredKeys::new(store), None));
    let phone = Arc::new(Recorder::default());
    linked.attach(phone.clone(), own());
    (linked, phone, dir)
}

#[tokio::test]
async fn a_batch_is_acknowledged_to_whatsapp_only_once_recorded() {
    let (linked, phone, _home) = channel();
    let message = incoming(
        "ABC1",
        "4915550001@s.whatsapp.net",
        "4915550001@s.whatsapp.net",
        None,
        wa::Message::text("hello"),
    );
    let hook = {
        let linked = linked.clone();
        tokio::spawn(async move { linked.deliver(&[message]).await })
    };
    let batch = linked.receive().await.unwrap_or_default();
    assert_eq!(batch.len(), 1);
    assert_eq!(batch[0].text, "hello");
    assert_eq!(batch[0].sender, "4915550001");
    assert_eq!(batch[0].chat, "4915550001@s.whatsapp.net");
    assert_eq!(
        batch[0].source_id().as_deref(),
        Some("whatsapp:4915550001@s.whatsapp.net:ABC1")
    );
    // The hook (and so WhatsApp's acknowledgement) waits for the record.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!hook.is_finished(), "answered before it was recorded");
    linked.acknowledge();
    let answered = hook
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r.map_err(|e| e.to_string()));
    assert_eq!(answered, Ok(()));
    // Read receipts follow the record.
    for _ in 0..100 {
        if !phone.calls().is_empty() {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(
        phone.calls(),
        ["read 4915550001@s.whatsapp.net 4915550001@s.whatsapp.net ABC1"]
    );
}

#[tokio::test]
async fn nothing_for_the_bot_is_answered_at_once_and_never_handed_over() {
    let (linked, _, _home) = channel();
    let mut own_message = incoming(
        "ME1",
        "4915550001@s.whatsapp.net",
        &format!("{BOT_PHONE}@s.whatsapp.net"),
        None,
        wa::Message::text("sent from the phone"),
    );
    if let Some(info) = Arc::get_mut(&mut own_message.info) {
        info.source.is_from_me = true;
    }
    let status = incoming(
        "ST1",
        "status@broadcast",
        "4915550001@s.whatsapp.net",
        None,
        wa::Message::text("my status"),
    );
    let reaction = incoming(
        "RE1",
        "4915550001@s.whatsapp.net",
        "4915550001@s.whatsapp.net",
        None,
        wa::Message::default(),
    );
    let answered = linked.deliver(&[own_message, status, reaction]).await;
    assert!(answered.is_ok(), "{answered:?}");
}

#[tokio::test]
async fn a_group_mention_matches_the_phone_jid_and_the_lid() {
    let (linked, _, _home) = channel();
    let group = "120363000000000001@g.us";
    let by_lid = incoming(
        "G1",
        group,
        "100000011111111@lid",
        Some("4915550001@s.whatsapp.net"),
        mentioning(
            &format!("@{BOT_LID} what time is it"),
            &[&format!("{BOT_LID}@lid")],
        ),
    );
    let by_phone = incoming(
        "G2",
        group,
        "4915550002@s.whatsapp.net",
        None,
        mentioning("@bot hi", &[&format!("{BOT_PHONE}@s.whatsapp.net")]),
    );
    let someone_else = incoming(
        "G3",
        group,
        "4915550003@s.whatsapp.net",
        None,
        mentioning("@carol hi", &["4915550004@s.whatsapp.net"]),
    );
    let hook = {
        let linked = linked.clone();
        tokio::spawn(async move { linked.deliver(&[by_lid, by_phone, someone_else]).await })
    };
    let batch = linked.receive().await.unwrap_or_default();
    linked.acknowledge();
    let _ = hook.await;
    let seen: Vec<(&str, bool, bool, &str)> = batch
        .iter()
        .map(|m| {
            (
                m.message_id.as_str(),
                m.group,
                m.mentioned,
                m.sender.as_str(),
            )
        })
        .collect();
    // A sender known by LID is named by the phone number WhatsApp gave beside it.
    assert_eq!(
        seen,
        [
            ("G1", true, true, "4915550001"),
            ("G2", true, true, "4915550002"),
            ("G3", true, false, "4915550003"),
        ]
    );
    assert!(batch.iter().all(|m| m.chat == group));
}

#[tokio::test]
async fn replies_quote_their_message_and_a_retried_piece_is_the_same_message() {
    let (linked, phone, _home) = channel();
    let question = incoming(
        "Q1",
        "4915550001@s.whatsapp.net",
        "4915550001@s.whatsapp.net",
        None,
        wa::Message::text("question"),
    );
    let hook = {
        let linked = linked.clone();
        tokio::spawn(async move { linked.deliver(&[question]).await })
    };
    let _ = linked.receive().await;
    linked.acknowledge();
    let _ = hook.await;
    let chat = "4915550001@s.whatsapp.net";
    let first = linked
        .send_once(chat, "*answer*", Some("Q1"), "outbox-7:0")
        .await;
    let again = linked
        .send_once(chat, "*answer*", Some("Q1"), "outbox-7:0")
        .await;
    let other = linked.send_once(chat, "more", None, "outbox-7:1").await;
    let (Ok(Some(first)), Ok(Some(again)), Ok(Some(other))) = (first, again, other) else {
        panic!("sends failed");
    };
    assert_eq!(first, again, "a retried piece keeps its message id");
    assert_ne!(first, other);
    assert!(first.starts_with("3EB0") && first.len() == 22, "{first}");
    let sends: Vec<String> = phone
        .calls()
        .into_iter()
        .filter(|c| c.starts_with("send"))
        .collect();
    assert_eq!(
        sends[0],
        format!(
            "send {chat} \"*answer*\" quote=Some(\"Q1 from 4915550001@s.whatsapp.net\") id=Some({first:?})"
        )
    );
    assert!(sends[2].contains("quote=None"), "{sends:?}");
    linked.typing(chat).await;
    let note = VoiceNote {
        ogg: b"OggS....",
        seconds: 2.2,
    };
    assert!(linked.send_voice(chat, note, None).await.is_ok());
    let picture = crate::Picture {
        bytes: b"\x89PNG\r\n\x1a\n....",
        mime: "image/png",
        name: "chart.png",
    };
    assert!(linked.send_picture(chat, picture, None).await.is_ok());
    let calls = phone.calls();
    assert!(
        calls.contains(&format!("picture {chat} 12 bytes image/png")),
        "{calls:?}"
    );
    assert!(calls.contains(&format!("typing {chat}")), "{calls:?}");
    assert!(
        calls.contains(&format!("voice {chat} 8 bytes 3 s")),
        "{calls:?}"
    );
}

#[tokio::test]
async fn a_picture_is_read_through_the_client_within_the_limit() {
    let (linked, _, _home) = channel();
    let picture = wa::Message {
        image_message: whatsapp_rust::buffa::MessageField::some(wa::message::ImageMessage {
            mimetype: Some("image/png".into()),
            caption: Some("look".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let message = incoming(
        "P1",
        "4915550001@s.whatsapp.net",
        "4915550001@s.whatsapp.net",
        None,
        picture,
    );
    let hook = {
        let linked = linked.clone();
        tokio::spawn(async move { linked.deliver(&[message]).await })
    };
    let batch = linked.receive().await.unwrap_or_default();
    linked.acknowledge();
    let _ = hook.await;
    assert_eq!(batch[0].text, "look");
    assert_eq!(batch[0].media.len(), 1);
    assert_eq!(batch[0].media[0].name, "whatsapp-P1.png");
    let bytes = linked.media_bytes("P1", 1000).await;
    assert!(
        matches!(bytes, Some(Ok(ref b)) if b.len() == 4),
        "{bytes:?}"
    );
    let over = linked.media_bytes("P1", 3).await;
    assert!(
        matches!(over, Some(Err(ChannelError::Permanent(_)))),
        "{over:?}"
    );
    let gone = linked.media_bytes("NOPE", 1000).await;
    assert!(
        matches!(gone, Some(Err(ChannelError::Permanent(_)))),
        "{gone:?}"
    );
}

#[tokio::test]
async fn a_log_out_ends_receiving_with_what_to_do_and_the_qr_is_shown_while_linking() {
    let (linked, _, _home) = channel();
    assert_eq!(linked.link().map(|l| l.state), Some("unlinked".into()));
    linked.follow(&Event::PairingQrCode(
        PairingQrCodeEvent::builder()
            .code("2@abc,def,ghi".into())
            .timeout(Duration::from_secs(20))
            .build(),
    ));
    let link = linked.link().unwrap_or_default();
    assert_eq!(link.state, "qr");
    assert_eq!(link.qr.as_deref(), Some("2@abc,def,ghi"));
    assert!(link.qr_svg.is_some_and(|s| s.starts_with("<svg")));
    let waiting = {
        let linked = linked.clone();
        tokio::spawn(async move { linked.receive().await })
    };
    tokio::task::yield_now().await;
    linked.follow(&Event::LoggedOut(
        LoggedOut::builder()
            .on_connect(false)
            .reason(ConnectFailureReason::LoggedOut)
            .build(),
    ));
    // The waiting receive wakes with nothing; the next one says what to do.
    let woke = waiting.await.map_err(|e| e.to_string());
    assert!(matches!(woke, Ok(Ok(ref b)) if b.is_empty()), "{woke:?}");
    let next = linked.receive().await;
    assert!(
        matches!(next, Err(ChannelError::Permanent(ref why)) if why.contains("lurkbot channels login whatsapp")),
        "{next:?}"
    );
    assert_eq!(linked.link().map(|l| l.state), Some("loggedOut".into()));
    // Sends fail as retryable: the device is not connected.
    let sent = linked
        .send_once("4915550001@s.whatsapp.net", "x", None, "k")
        .await;
    assert!(matches!(sent, Err(ChannelError::Transient(_))), "{sent:?}");
}

use whatsapp_rust::types::events::PairingQrCode as PairingQrCodeEvent;

/// §6.1.2's silent death: the client's keep-alive drops a socket that stops answering and
/// reconnects; meanwhile the channel says it is stale (the gateway's status and the owner's
/// notice read it), and a new connection makes it alive again. Never from chat silence.
#[tokio::test]
async fn a_dropped_connection_is_stale_until_the_client_connects_again() {
    use whatsapp_rust::types::events::{Connected, Disconnected};
    let (linked, _, _home) = channel();
    assert_eq!(linked.stale(), None, "a quiet, connected channel is alive");
    linked.follow(&Event::Disconnected(
        Disconnected::builder()
            .reason(whatsapp_rust::wacore::net::DisconnectReason::ReadError(
                "keep-alive unanswered".into(),
            ))
            .build(),
    ));
    let why = linked.stale().unwrap_or_default();
    assert!(
        why.contains("dropped") && why.contains("keep-alive unanswered"),
        "{why}"
    );
    linked.follow(&Event::Connected(Connected::builder().build()));
    assert_eq!(linked.stale(), None);

    // A device never connected is not stale: it is not linked yet (its link says so).
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let home = lurkbot_core::Home::open(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    let store = lurkbot_state::Store::open(&home).unwrap_or_else(|e| panic!("{e}"));
    let fresh = WhatsAppLinked::new(StoredKeys::new(store), None);
    fresh.follow(&Event::Disconnected(
        Disconnected::builder()
            .reason(whatsapp_rust::wacore::net::DisconnectReason::StreamEnded)
            .build(),
    ));
    assert_eq!(fresh.stale(), None);
}
