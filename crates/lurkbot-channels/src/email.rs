//! Email (`[channels.email]`; `EMAIL_IMAP_URL`, `EMAIL_SMTP_URL`, `EMAIL_USER`,
//! `EMAIL_PASSWORD` and `EMAIL_FROM` in the home's `.env`): new mail in INBOX over IMAP —
//! IDLE waits for it, UIDs remember where reading stopped (`channels/email/state.json`; a first
//! start skips what is already there, a new UIDVALIDITY starts over) — and replies by SMTP
//! submission, threaded with `In-Reply-To` and `References` and `Re:` subjects. Plain text
//! only, and a voice note as a mail of its own in the thread with `voice.ogg` attached;
//! attachments are listed, never opened. Automatic mail (`Auto-Submitted`, bulk and list
//! `Precedence`) and the bot's own mail are never answered, so two robots cannot loop.
//! `imaps://` and `smtps://` speak TLS from the start, `smtp://…?tls=starttls` upgrades;
//! plain `imap://`/`smtp://` are for loopback and test servers.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Value, json};

use crate::email_threads::{Thread, Threads};
use crate::net::{Io, connect, host_port};
use crate::{BoxFuture, Channel, ChannelError, Inbound};

/// The longest reply sent in one mail.
pub const MAX_CHARS: usize = 50_000;
/// How long one IDLE waits before looking again.
const IDLE: Duration = Duration::from_secs(25);

/// The account.
#[derive(Clone)]
pub struct EmailSettings {
    /// `imaps://host[:993]` or `imap://host:port`.
    pub imap_url: String,
    /// `smtps://host[:465]`, `smtp://host:587?tls=starttls` or `smtp://host:port`.
    pub smtp_url: String,
    /// The login of both.
    pub user: String,
    /// Its password.
    pub password: String,
    /// The address replies come from.
    pub from: String,
    /// The authserv-id whose topmost `Authentication-Results` vouches for senders
    /// (`[channels.email] trusted_authserv_id`; see `mail_auth.rs`).
    pub trusted_authserv_id: Option<String>,
}

type Session = async_imap::Session<Box<dyn Io>>;

/// An email account read over IMAP and written over SMTP.
pub struct Email {
    settings: EmailSettings,
    state: PathBuf,
    /// (UIDVALIDITY, the last UID handed over).
    seen: Mutex<Option<(u32, u32)>>,
    threads: Threads,
    session: tokio::sync::Mutex<Option<Session>>,
}

fn transient(what: &str, e: impl std::fmt::Display) -> ChannelError {
    ChannelError::Transient(format!("{what}: {e}"))
}

impl Email {
    /// An account, keeping its reading position in `state_dir`.
    pub fn new(settings: EmailSettings, state_dir: PathBuf) -> Self {
        let state = state_dir.join("state.json");
        let seen = std::fs::read(&state)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .and_then(|v| {
                Some((
                    v["uidValidity"].as_u64()? as u32,
                    v["lastUid"].as_u64()? as u32,
                ))
            });
        Self {
            settings,
            state,
            seen: Mutex::new(seen),
            threads: Threads::open(state_dir.join("threads.json")),
            session: tokio::sync::Mutex::new(None),
        }
    }

    fn save(&self, validity: u32, last: u32) {
        self.advance(validity, last);
        self.persist(validity, last);
    }

    /// Moves the reading position in memory only (written by `acknowledge`, once the gateway
    /// recorded what was read).
    fn advance(&self, validity: u32, last: u32) {
        if let Ok(mut seen) = self.seen.lock() {
            *seen = Some((validity, last));
        }
    }

    fn persist(&self, validity: u32, last: u32) {
        if let Some(dir) = self.state.parent()
            && lurkbot_core::create_private_dir(dir).is_ok()
        {
            let bytes = json!({"uidValidity": validity, "lastUid": last}).to_string();
            if let Err(e) =
                lurkbot_core::write_atomic_with_mode(&self.state, bytes.as_bytes(), 0o600)
            {
                tracing::warn!(error = %e, "email reading position not saved");
            }
        }
    }

    /// Signs in and selects INBOX; its UIDVALIDITY and UIDNEXT.
    async fn open(&self) -> Result<(Session, u32, u32), ChannelError> {
        let (scheme, host, port) = host_port(&self.settings.imap_url, 993)
            .filter(|(s, _, _)| s == "imap" || s == "imaps")
            .ok_or_else(|| {
                ChannelError::Permanent(format!(
                    "EMAIL_IMAP_URL {} is not imap(s)://host[:port]",
                    self.settings.imap_url
                ))
            })?;
        if scheme == "imap" && !is_loopback(&host) {
            return Err(ChannelError::Permanent(format!(
                "EMAIL_IMAP_URL {} would send the password unencrypted: use imaps:// (plain imap:// is for a server on this machine)",
                self.settings.imap_url
            )));
        }
        let stream = connect(&host, port, scheme == "imaps", "imap").await?;
        let mut client = async_imap::Client::new(stream);
        client
            .read_response()
            .await
            .map_err(|e| transient("imap greeting", e))?
            .ok_or_else(|| ChannelError::Transient("imap: no greeting".into()))?;
        let mut session = client
            .login(&self.settings.user, &self.settings.password)
            .await
            .map_err(|(e, _)| {
                ChannelError::Permanent(format!("imap login as {}: {e}", self.settings.user))
            })?;
        let inbox = session
            .select("INBOX")
            .await
            .map_err(|e| transient("imap select INBOX", e))?;
        Ok((
            session,
            inbox.uid_validity.unwrap_or(0),
            inbox.uid_next.unwrap_or(1),
        ))
    }

    /// The mail after the last UID handed over, waiting (IDLE) when there is none.
    async fn next_batch(&self, slot: &mut Option<Session>) -> Result<Vec<Inbound>, ChannelError> {
        let mut session = match slot.take() {
            Some(s) => s,
            None => {
                let (mut session, validity, next) = self.open().await?;
                let known = self.seen.lock().ok().and_then(|s| *s);
                match known {
                    Some((v, _)) if v == validity => {}
                    // First start (or a mailbox made anew): only mail from now on.
                    _ => self.save(validity, next.saturating_sub(1)),
                }
                // Signed in: report it at once (the next call reads and waits).
                session.noop().await.map_err(|e| transient("imap", e))?;
                *slot = Some(session);
                return Ok(Vec::new());
            }
        };
        let (validity, last) = self.seen.lock().ok().and_then(|s| *s).unwrap_or((0, 0));
        let mut uids: Vec<u32> = session
            .uid_search(format!("UID {}:*", last + 1))
            .await
            .map_err(|e| transient("imap search", e))?
            .into_iter()
            .filter(|u| *u > last)
            .collect();
        uids.sort_unstable();
        if uids.is_empty() {
            let mut idle = session.idle();
            idle.init().await.map_err(|e| transient("imap idle", e))?;
            let (wait, _stop) = idle.wait_with_timeout(IDLE);
            let _ = wait.await;
            let session = idle.done().await.map_err(|e| transient("imap idle", e))?;
            *slot = Some(session);
            return Ok(Vec::new());
        }
        let set = uids
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let mut mails = Vec::new();
        {
            let mut fetched = session
                .uid_fetch(&set, "(UID BODY.PEEK[])")
                .await
                .map_err(|e| transient("imap fetch", e))?;
            while let Some(item) = fetched.next().await {
                let item = item.map_err(|e| transient("imap fetch", e))?;
                if let (Some(uid), Some(body)) = (item.uid, item.body()) {
                    mails.push((uid, body.to_vec()));
                }
            }
        }
        mails.sort_by_key(|(uid, _)| *uid);
        let mut out = Vec::new();
        for (uid, raw) in mails {
            if let Some(message) = self.parse(&raw) {
                out.push(message);
            }
            self.advance(validity, uid);
        }
        *slot = Some(session);
        Ok(out)
    }

    /// One mail as an [`Inbound`], unless it is automatic or the bot's own.
    fn parse(&self, raw: &[u8]) -> Option<Inbound> {
        let mail = mailparse::parse_mail(raw).ok()?;
        let header = |name: &str| {
            mailparse::MailHeaderMap::get_first_value(mail.headers.as_slice(), name)
                .unwrap_or_default()
        };
        let auto = header("Auto-Submitted");
        let precedence = header("Precedence").to_ascii_lowercase();
        if (!auto.is_empty() && auto != "no")
            || matches!(precedence.as_str(), "bulk" | "list" | "junk")
        {
            tracing::info!("an automatic mail was not answered");
            return None;
        }
        let from = mailparse::addrparse(&header("From")).ok()?;
        let (address, name) = match from.iter().next()? {
            mailparse::MailAddr::Single(s) => (
                s.addr.to_ascii_lowercase(),
                s.display_name.clone().unwrap_or_default(),
            ),
            mailparse::MailAddr::Group(g) => {
                let s = g.addrs.first()?;
                (
                    s.addr.to_ascii_lowercase(),
                    s.display_name.clone().unwrap_or_default(),
                )
            }
        };
        if address == self.settings.from.to_ascii_lowercase() {
            return None;
        }
        let results: Vec<String> = mailparse::MailHeaderMap::get_all_values(
            mail.headers.as_slice(),
            "Authentication-Results",
        );
        let authenticated = crate::mail_auth::authenticated(
            &results,
            &address,
            self.settings.trusted_authserv_id.as_deref(),
        );
        if !authenticated {
            tracing::info!(
                "a mail whose From: no trusted Authentication-Results vouches for was not answered"
            );
        }
        let subject = header("Subject");
        let message_id = header("Message-ID").trim().to_string();
        let mut body = String::new();
        let mut attachments = Vec::new();
        collect(&mail, &mut body, &mut attachments);
        let mut text = format!("Subject: {subject}\n\n{}", body.trim());
        for a in &attachments {
            text.push_str(&format!("\n[attachment: {}] (not opened)", a.name));
        }
        let references = format!("{} {}", header("References"), message_id)
            .trim()
            .to_string();
        if !message_id.is_empty() {
            let thread = Thread {
                subject,
                references,
            };
            self.threads.insert(message_id.clone(), thread);
        }
        Some(Inbound {
            channel: "email",
            chat: address.clone(),
            sender: address,
            sender_name: name,
            handle: None,
            forwarded_from: None,
            authenticated,
            text,
            group: false,
            mentioned: true,
            message_id,
            thread: None,
            platform_id: None,
            media: attachments,
        })
    }

    /// Sends one mail to `to` (a reply when `reply_to` names a mail received).
    /// With `key`, the `Message-ID` is `<key@domain of EMAIL_FROM>`: a mail sent again after a
    /// crash has the same id, which mail systems and readers use to show it once.
    async fn submit_as(
        &self,
        to: &str,
        text: &str,
        reply_to: Option<&str>,
        voice: Option<&[u8]>,
        key: Option<&str>,
    ) -> Result<(), ChannelError> {
        use lettre::AsyncTransport;
        use lettre::message::{Attachment, MultiPart, SinglePart, header::ContentType};
        let thread = reply_to
            .and_then(|id| self.threads.get(id))
            .unwrap_or_default();
        let subject = match thread.subject.as_str() {
            "" => "Message from your agent".to_string(),
            s if s.to_ascii_lowercase().starts_with("re:") => s.to_string(),
            s => format!("Re: {s}"),
        };
        let permanent = |e: String| ChannelError::Permanent(e);
        let mut builder = lettre::Message::builder()
            .from(
                self.settings
                    .from
                    .parse()
                    .map_err(|e| permanent(format!("EMAIL_FROM: {e}")))?,
            )
            .to(to
                .parse()
                .map_err(|e| permanent(format!("'{to}' is not an address: {e}")))?)
            .subject(subject);
        if let Some(key) = key {
            let domain = self
                .settings
                .from
                .rsplit_once('@')
                .map_or("lurkbot.invalid", |(_, d)| d.trim_end_matches('>'));
            builder = builder.message_id(Some(format!("<{key}@{domain}>")));
        }
        if let Some(id) = reply_to.filter(|r| !r.is_empty()) {
            builder = builder
                .in_reply_to(id.to_string())
                .references(thread.references.clone());
        }
        let mail = match voice {
            None => builder
                .header(ContentType::TEXT_PLAIN)
                .body(text.to_string()),
            Some(ogg) => {
                let audio = ContentType::parse("audio/ogg")
                    .map_err(|e| permanent(format!("mail not built: {e}")))?;
                builder.multipart(
                    MultiPart::mixed()
                        .singlepart(SinglePart::plain(text.to_string()))
                        .singlepart(Attachment::new("voice.ogg".into()).body(ogg.to_vec(), audio)),
                )
            }
        }
        .map_err(|e| permanent(format!("mail not built: {e}")))?;
        let transport = self.transport()?;
        transport.send(mail).await.map(|_| ()).map_err(|e| {
            if e.is_permanent() {
                ChannelError::Permanent(format!("smtp: {e}"))
            } else {
                ChannelError::Transient(format!("smtp: {e}"))
            }
        })
    }

    fn transport(
        &self,
    ) -> Result<lettre::AsyncSmtpTransport<lettre::Tokio1Executor>, ChannelError> {
        use lettre::transport::smtp::authentication::Credentials;
        type Smtp = lettre::AsyncSmtpTransport<lettre::Tokio1Executor>;
        let url = &self.settings.smtp_url;
        let bad = || {
            ChannelError::Permanent(format!("EMAIL_SMTP_URL {url} is not smtp(s)://host[:port]"))
        };
        let (scheme, host, port) = host_port(url, 465).ok_or_else(bad)?;
        let starttls = url.contains("tls=starttls");
        let builder = match scheme.as_str() {
            "smtps" => Smtp::relay(&host)
                .map_err(|e| ChannelError::Permanent(e.to_string()))?
                .port(port),
            "smtp" if starttls => Smtp::starttls_relay(&host)
                .map_err(|e| ChannelError::Permanent(e.to_string()))?
                .port(port),
            "smtp" if is_loopback(&host) => Smtp::builder_dangerous(&host).port(port),
            "smtp" => {
                return Err(ChannelError::Permanent(format!(
                    "EMAIL_SMTP_URL {url} would send the password unencrypted: use smtps:// or smtp://…?tls=starttls (plain smtp:// is for a server on this machine)"
                )));
            }
            _ => return Err(bad()),
        };
        Ok(builder
            .credentials(Credentials::new(
                self.settings.user.clone(),
                self.settings.password.clone(),
            ))
            .timeout(Some(Duration::from_secs(30)))
            .build())
    }
}

/// Whether `host` is this machine (where an unencrypted connection stays).
fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The text of the first text/plain part (else any text part), and attachment names.
/// A mail's text and its attachments: the first `text/plain` part wherever it stands (a
/// `multipart/alternative` may put the HTML first), else the visible text of the first
/// `text/html` part (no markup, comments or hidden elements reach the model), else any text.
fn collect(
    part: &mailparse::ParsedMail<'_>,
    body: &mut String,
    attachments: &mut Vec<crate::Media>,
) {
    let mut leaves = Vec::new();
    leaves_of(part, &mut leaves, attachments);
    let pick = |wanted: &str| {
        leaves
            .iter()
            .find(|p| p.ctype.mimetype.eq_ignore_ascii_case(wanted))
            .and_then(|p| p.get_body().ok())
    };
    let text = pick("text/plain")
        .or_else(|| pick("text/html").map(|html| lurkbot_core::html_to_text(&html)))
        .or_else(|| {
            leaves
                .iter()
                .find(|p| p.ctype.mimetype.starts_with("text/"))
                .and_then(|p| p.get_body().ok())
        });
    if let Some(text) = text {
        body.push_str(&text);
    }
}

/// The body parts of `part` that are not attachments (attachments are collected).
fn leaves_of<'a>(
    part: &'a mailparse::ParsedMail<'a>,
    leaves: &mut Vec<&'a mailparse::ParsedMail<'a>>,
    attachments: &mut Vec<crate::Media>,
) {
    let disposition = part.get_content_disposition();
    if disposition.disposition == mailparse::DispositionType::Attachment {
        let name = disposition
            .params
            .get("filename")
            .cloned()
            .unwrap_or_else(|| "unnamed".into());
        let bytes = part.get_body_raw().unwrap_or_default();
        attachments.push(crate::Media {
            name,
            source: crate::MediaSource::Bytes(bytes),
            voice: false,
        });
        return;
    }
    if part.subparts.is_empty() {
        leaves.push(part);
        return;
    }
    for sub in &part.subparts {
        leaves_of(sub, leaves, attachments);
    }
}

impl Channel for Email {
    fn name(&self) -> &'static str {
        "email"
    }

    fn max_chars(&self) -> usize {
        MAX_CHARS
    }

    fn format(&self, markdown: &str) -> String {
        markdown.to_string()
    }

    fn receive(&self) -> BoxFuture<'_, Result<Vec<Inbound>, ChannelError>> {
        Box::pin(async move {
            let mut slot = self.session.lock().await;
            // A failed session is dropped; the next receive signs in again.
            self.next_batch(&mut slot).await
        })
    }

    fn send<'a>(
        &'a self,
        chat: &'a str,
        text: &'a str,
        reply_to: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(self.submit_as(chat, text, reply_to, None, None))
    }

    fn send_once<'a>(
        &'a self,
        chat: &'a str,
        text: &'a str,
        reply_to: Option<&'a str>,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, ChannelError>> {
        Box::pin(async move {
            self.submit_as(chat, text, reply_to, None, Some(key))
                .await
                .map(|()| None)
        })
    }

    fn acknowledge(&self) {
        // The threads first: a reading position never gets ahead of them.
        self.threads.persist();
        if let Some((validity, last)) = self.seen.lock().ok().and_then(|s| *s) {
            self.persist(validity, last);
        }
    }

    fn send_voice<'a>(
        &'a self,
        chat: &'a str,
        note: crate::VoiceNote<'a>,
        reply_to: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        let text = format!(
            "A voice message is attached ({:.0} s, OGG/Opus).",
            note.seconds.max(1.0)
        );
        Box::pin(async move {
            self.submit_as(chat, &text, reply_to, Some(note.ogg), None)
                .await
        })
    }

    fn typing<'a>(&'a self, _chat: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn email(imap: &str, smtp: &str) -> Email {
        let dir =
            std::env::temp_dir().join(format!("lurkbot-email-{}", lurkbot_core::random_hex(4)));
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
}
