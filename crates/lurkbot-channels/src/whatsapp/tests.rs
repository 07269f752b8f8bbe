//! The Cloud API adapter's webhook and notification parsing.

use super::*;

fn webhook() -> (WhatsAppCloud, CloudWebhook) {
    let secrets = CloudSecrets {
        access_token: "t".into(),
        app_secret: "s3cret".into(),
        verify_token: "v".into(),
    };
    let cloud = WhatsAppCloud::new(Some("http://127.0.0.1:9"), "111", secrets).unwrap();
    let webhook = CloudWebhook {
        phone_number_id: "111".into(),
        app_secret: ring::hmac::Key::new(ring::hmac::HMAC_SHA256, b"s3cret"),
        verify_token: "v".into(),
        deliveries: cloud.webhook.deliveries.clone(),
    };
    (cloud, webhook)
}

fn signed(body: &[u8]) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, b"s3cret");
    let hex: String = ring::hmac::sign(&key, body)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256={hex}")
}

#[tokio::test]
async fn a_signed_body_that_is_not_json_or_not_received_is_refused() {
    let (cloud, webhook) = webhook();
    assert!(matches!(
        webhook
            .deliver(Some(&signed(b"not json")), b"not json")
            .await,
        WebhookAnswer::BadRequest(_)
    ));
    assert_eq!(
        webhook.verify(Some("subscribe"), Some("v"), None),
        WebhookAnswer::Forbidden("the verify token does not match"),
        "no challenge, nothing to echo"
    );
    // The channel gone (its receive side dropped): 503, so Meta delivers it again.
    drop(cloud);
    let body = json!({"entry": [{"changes": [{"field": "messages", "value": {
        "metadata": {"phone_number_id": "111"},
        "messages": [{"from": "1", "id": "wamid.Q", "type": "text", "text": {"body": "x"}}]}}]}]})
    .to_string();
    assert!(matches!(
        webhook
            .deliver(Some(&signed(body.as_bytes())), body.as_bytes())
            .await,
        WebhookAnswer::Unavailable(_)
    ));
}

#[test]
fn hex_signatures_decode() {
    assert_eq!(decode_hex("00ff10"), Some(vec![0, 255, 16]));
    assert_eq!(decode_hex("0f0"), None);
    assert_eq!(decode_hex("zz"), None);
}

#[test]
fn a_notification_yields_its_messages_for_this_number_only() {
    let n = json!({"object": "whatsapp_business_account", "entry": [{"id": "1", "changes": [
        {"field": "messages", "value": {"messaging_product": "whatsapp",
            "metadata": {"phone_number_id": "111"},
            "contacts": [{"wa_id": "4915550001", "profile": {"name": "Ada"}}],
            "messages": [
                {"from": "4915550001", "id": "wamid.A", "type": "text", "text": {"body": "hi"}},
                {"from": "4915550001", "id": "wamid.B", "type": "audio",
                 "audio": {"id": "m1", "mime_type": "audio/ogg; codecs=opus", "voice": true}}]}},
        {"field": "messages", "value": {"metadata": {"phone_number_id": "999"},
            "messages": [{"from": "1", "id": "wamid.C", "type": "text", "text": {"body": "x"}}]}},
        {"field": "messages", "value": {"metadata": {"phone_number_id": "111"},
            "statuses": [{"id": "wamid.S", "status": "delivered"}]}}]}]});
    let found = messages_of(&n, "111");
    assert_eq!(found.len(), 2);
    assert_eq!(
        (found[0].text.as_str(), found[0].sender_name.as_str()),
        ("hi", "Ada")
    );
    assert_eq!(
        found[0].source_id().as_deref(),
        Some("whatsapp:4915550001:wamid.A")
    );
    assert_eq!(found[1].text, "[voice note attached: audio.ogg]");
    assert!(found[1].media[0].voice);
    assert_eq!(found[1].media[0].source, MediaSource::File("m1".into()));
    assert!(failures_of(&n, "111").is_empty(), "delivered is no failure");
    let failed = json!({"entry": [{"changes": [{"field": "messages", "value": {
        "metadata": {"phone_number_id": "111"}, "statuses": [{"id": "wamid.O", "status": "failed",
        "errors": [{"code": 131047, "title": "Re-engagement message"}]}]}}]}]});
    assert_eq!(
        failures_of(&failed, "111"),
        vec![Undelivered {
            wamid: "wamid.O".into(),
            error: "WhatsApp did not deliver it: Re-engagement message (code 131047)".into()
        }]
    );
    assert!(failures_of(&failed, "999").is_empty(), "another number's");
}
