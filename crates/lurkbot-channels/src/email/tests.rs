//! Where the account's passwords may travel.

use super::*;

fn email(imap: &str, smtp: &str) -> Email {
    let dir = std::env::temp_dir().join(format!("lurkbot-email-{}", lurkbot_core::random_hex(4)));
    Email::new(
        EmailSettings {
            imap_url: imap.into(),
            smtp_url: smtp.into(),
            user: "bot".into(),
            password: "pw".into(),
            from: "bot@example.org".into(),
            trusted_authserv_id: None,
        },
        dir,
    )
}

#[tokio::test]
async fn passwords_never_travel_unencrypted_off_this_machine() {
    let remote = email("imap://mail.example.org:143", "smtp://mail.example.org:25");
    let Err(ChannelError::Permanent(e)) = remote.open().await else {
        panic!("plain IMAP to another machine must be refused");
    };
    assert!(e.contains("imaps://"), "{e}");
    let Err(ChannelError::Permanent(e)) = remote.transport() else {
        panic!("plain SMTP to another machine must be refused");
    };
    assert!(e.contains("starttls"), "{e}");
    let local = email("imap://127.0.0.1:1", "smtp://localhost:2525");
    assert!(local.transport().is_ok());
    assert!(is_loopback("[::1]") && !is_loopback("10.0.0.1"));
}
