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
/// How long one IDLE waits before it is ended and the server asked again (its liveness check).
const IDLE: Duration = Duration::from_secs(25);
/// How long the server has to answer a command (the end of an IDLE included) before its
/// connection is taken for dead.
const ANSWER: Duration = Duration::from_secs(15);

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
    /// An IDLE's wait and the time the server has to answer (§6.1.2).
    timing: (Duration, Duration),
    stale: crate::stale::Stale,
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
            timing: (IDLE, ANSWER),
            stale: crate::stale::Stale::default(),
        }
    }

    /// IDLEs of `idle`, and `answer` for the server to answer each command (tests shorten
    /// them).
    #[must_use]
    pub fn with_idle(mut self, idle: Duration, answer: Duration) -> Self {
        self.timing = (idle, answer);
        self
    }

    /// One IMAP exchange, bounded: a server that says nothing within the answer window is a
    /// dead connection (a half-open one never says so) — the channel is stale and signs in
    /// again; chat silence never is, since every IDLE ends with a command the server answers.
    async fn bounded<T, E: std::fmt::Display>(
        &self,
        what: &str,
        exchange: impl std::future::Future<Output = Result<T, E>>,
    ) -> Result<T, ChannelError> {
        match tokio::time::timeout(self.timing.1, exchange).await {
            Ok(answer) => answer.map_err(|e| transient(what, e)),
            Err(_) => {
                let why = format!(
                    "the IMAP server did not answer {what} within {} s: signing in again",
                    self.timing.1.as_secs()
                );
                self.stale.set(Some(why.clone()));
                Err(ChannelError::Transient(why))
            }
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
        self.bounded("its greeting", client.read_response())
            .await?
            .ok_or_else(|| ChannelError::Transient("imap: no greeting".into()))?;
        let login = client.login(&self.settings.user, &self.settings.password);
        let mut session = self
            .bounded("the login", async { Ok::<_, String>(login.await) })
            .await?
            .map_err(|(e, _)| {
                ChannelError::Permanent(format!("imap login as {}: {e}", self.settings.user))
            })?;
        let inbox = self
            .bounded("select INBOX", session.select("INBOX"))
            .await?;
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
                self.bounded("NOOP", session.noop()).await?;
                *slot = Some(session);
                return Ok(Vec::new());
            }
        };
        let (validity, last) = self.seen.lock().ok().and_then(|s| *s).unwrap_or((0, 0));
        let mut uids: Vec<u32> = self
            .bounded(
                "a search",
                session.uid_search(format!("UID {}:*", last + 1)),
            )
            .await?
            .into_iter()
            .filter(|u| *u > last)
            .collect();
        uids.sort_unstable();
        if uids.is_empty() {
            let mut idle = session.idle();
            self.bounded("IDLE", idle.init()).await?;
            let (wait, _stop) = idle.wait_with_timeout(self.timing.0);
            let _ = wait.await;
            // The end of the IDLE is the probe: a live server answers it.
            let session = self.bounded("the end of an IDLE", idle.done()).await?;
            self.stale.set(None);
            *slot = Some(session);
            return Ok(Vec::new());
        }
        let set = uids
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(",");
        // Each mail may take longer than a command's answer (a large one on a slow link), but
        // not forever: four answer windows a mail.
        let mut mails = Vec::new();
        {
            let mut fetched = self
                .bounded("a fetch", session.uid_fetch(&set, "(UID BODY.PEEK[])"))
                .await?;
            let per_mail = self.timing.1 * 4;
            loop {
                let item = match tokio::time::timeout(per_mail, fetched.next()).await {
                    Ok(Some(item)) => item.map_err(|e| transient("imap fetch", e))?,
                    Ok(None) => break,
                    Err(_) => {
                        let why = format!(
                            "the IMAP server sent no mail of a fetch within {} s: signing in again",
                            per_mail.as_secs()
                        );
                        self.stale.set(Some(why.clone()));
                        return Err(ChannelError::Transient(why));
                    }
                };
                if let (Some(uid), Some(body)) = (item.uid, item.body()) {
                    mails.push((uid, body.to_vec()));
                }
            }
        }
        self.stale.set(None);
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
        crate::email_body::collect(&mail, &mut body, &mut attachments);
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

    fn stale(&self) -> Option<String> {
        self.stale.get()
    }

    fn typing<'a>(&'a self, _chat: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }
}

#[cfg(test)]
mod liveness_tests;

#[cfg(test)]
mod tests;
