//! One session's IRC connection, run by a task of its own: connect (TCP, or TLS verified like
//! every other LurkBot connection), register (PASS, NICK with a fallback when the nick is taken,
//! USER), identify to NickServ with `PRIVMSG NickServ :IDENTIFY …` after the MOTD, JOIN the
//! default channel (with its key), answer PINGs, record PRIVMSGs, and send what the commands
//! ask. When the link drops it reconnects with back-off (1 s doubling to 60 s), at once when a
//! command asks for the connection (at most once a second). QUIT ends it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use irc_proto::{Command, Message, Response};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Notify, mpsc, oneshot, watch};

use super::config::{IrcConfig, MAX_NICK};
use super::session::{IrcEvent, IrcState, Shared};
use super::store::Store;

/// Longest line read from the server; a longer one ends the connection.
const MAX_LINE: usize = 8192;
/// Time allowed for TCP, TLS and registration.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// Longest wait between reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// Shortest time between two attempts, however often commands ask.
const MIN_RETRY: Duration = Duration::from_secs(1);

/// What the commands ask of the connection.
pub(crate) enum Request {
    /// Send these lines to `target` (already split and cleaned); answers once written.
    Say {
        target: String,
        lines: Vec<String>,
        done: oneshot::Sender<Result<(), String>>,
    },
    /// QUIT and stop.
    Quit(oneshot::Sender<()>),
}

/// Everything the task needs.
pub(crate) struct Link {
    pub(crate) session: String,
    pub(crate) config: IrcConfig,
    pub(crate) store: Store,
    pub(crate) shared: Arc<Mutex<Shared>>,
    pub(crate) changed: watch::Sender<u64>,
    pub(crate) wake: Arc<Notify>,
    pub(crate) events: Option<super::session::EventSink>,
}

/// Why one connection ended.
enum End {
    /// QUIT was asked: stop for good.
    Quit(Option<oneshot::Sender<()>>),
    /// The link failed; the reason for `last_error`.
    Failed { code: &'static str, message: String },
}

impl Link {
    fn set(&self, state: IrcState, error: Option<(&'static str, String)>) {
        if let Ok(mut s) = self.shared.lock() {
            s.state = state;
            if state != IrcState::Joined {
                s.joined = false;
            }
            if let Some((code, message)) = error {
                s.last_error = Some((code.to_string(), message));
            }
        }
        self.changed.send_modify(|n| *n += 1);
        tracing::info!(
            session = self.session.as_str(),
            state = state.as_str(),
            "irc"
        );
        if let Some(events) = &self.events {
            events(IrcEvent::Status {
                session: self.session.clone(),
                state,
            });
        }
    }

    /// Connects, serves, reconnects, until QUIT.
    pub(crate) async fn run(self, mut requests: mpsc::UnboundedReceiver<Request>) {
        let mut backoff = Duration::from_secs(1);
        loop {
            self.set(IrcState::Connecting, None);
            let started = tokio::time::Instant::now();
            let end = self.connect_and_serve(&mut requests).await;
            match end {
                End::Quit(done) => {
                    self.set(IrcState::Disconnected, None);
                    if let Some(done) = done {
                        let _ = done.send(());
                    }
                    return;
                }
                End::Failed { code, message } => {
                    tracing::warn!(
                        session = self.session.as_str(),
                        error = message.as_str(),
                        "irc connection failed"
                    );
                    self.set(IrcState::Error, Some((code, message)));
                }
            }
            // A connection that lasted resets the back-off.
            if started.elapsed() > MAX_BACKOFF {
                backoff = Duration::from_secs(1);
            }
            // Wait out the back-off, or less when a command asks (but at least MIN_RETRY);
            // answer requests meanwhile (QUIT ends, sends fail with the last error).
            let deadline = tokio::time::Instant::now() + backoff;
            let earliest = tokio::time::Instant::now() + MIN_RETRY;
            loop {
                tokio::select! {
                    () = tokio::time::sleep_until(deadline) => break,
                    () = self.wake.notified() => {
                        tokio::time::sleep_until(earliest).await;
                        break;
                    }
                    request = requests.recv() => match request {
                        None => return,
                        Some(Request::Quit(done)) => {
                            self.set(IrcState::Disconnected, None);
                            let _ = done.send(());
                            return;
                        }
                        Some(Request::Say { done, .. }) => {
                            let _ = done.send(Err("not connected".into()));
                        }
                    },
                }
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    async fn connect_and_serve(&self, requests: &mut mpsc::UnboundedReceiver<Request>) -> End {
        let failed = |code: &'static str, message: String| End::Failed { code, message };
        let address = (self.config.server.as_str(), self.config.port);
        let tcp =
            match tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(address))
                .await
            {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    return failed(
                        "NetworkError",
                        format!(
                            "cannot connect to {}:{}: {e}",
                            self.config.server, self.config.port
                        ),
                    );
                }
                Err(_) => {
                    return failed(
                        "Timeout",
                        format!(
                            "{}:{} did not answer within 15 s",
                            self.config.server, self.config.port
                        ),
                    );
                }
            };
        let _ = tcp.set_nodelay(true);
        if !self.config.tls {
            return self.serve(tcp, requests).await;
        }
        match tls_connect(&self.config.server, tcp).await {
            Ok(stream) => self.serve(stream, requests).await,
            Err(e) => failed(
                "NetworkError",
                format!(
                    "cannot connect securely to {}:{}: {e}",
                    self.config.server, self.config.port
                ),
            ),
        }
    }

    async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
        &self,
        stream: S,
        requests: &mut mpsc::UnboundedReceiver<Request>,
    ) -> End {
        let (read, mut write) = tokio::io::split(stream);
        let mut reader = BufReader::with_capacity(4096, read);
        let config = &self.config;
        let mut nick = config.nick.clone();
        let mut attempts = 0u32;
        let mut registered = false;
        let mut hello = Vec::new();
        if let Some(password) = &config.server_password {
            hello.push(Message::from(Command::PASS(password.clone())));
        }
        hello.push(Message::from(Command::NICK(nick.clone())));
        hello.push(Message::from(Command::USER(
            nick.clone(),
            "0".into(),
            "LurkBot".into(),
        )));
        if let Err(e) = send(&mut write, &hello).await {
            return End::Failed {
                code: "NetworkError",
                message: e,
            };
        }
        let registration = tokio::time::Instant::now() + CONNECT_TIMEOUT;
        let mut line = Vec::with_capacity(512);
        let mut pinged = false;
        loop {
            let idle = if registered {
                tokio::time::Instant::now() + self.config.ping_after
            } else {
                registration
            };
            line.clear();
            tokio::select! {
                read = read_line(&mut reader, &mut line) => {
                    match read {
                        Ok(0) => return End::Failed { code: "NetworkError", message: "the server closed the connection".into() },
                        Ok(_) => {}
                        Err(e) => return End::Failed { code: "NetworkError", message: e },
                    }
                    pinged = false;
                    let text = String::from_utf8_lossy(&line);
                    let Ok(message) = text.trim_end_matches(['\r', '\n']).parse::<Message>() else {
                        continue;
                    };
                    let from = message.source_nickname().map(str::to_string);
                    let mut out = Vec::new();
                    match message.command {
                        Command::PING(server, _) => out.push(Message::from(Command::PONG(server, None))),
                        Command::Response(Response::RPL_WELCOME, ref args) => {
                            registered = true;
                            if let Some(me) = args.first() {
                                nick.clone_from(me);
                            }
                            if let Ok(mut s) = self.shared.lock() {
                                s.nick = Some(nick.clone());
                            }
                            self.set(IrcState::Connected, None);
                        }
                        Command::Response(Response::RPL_ENDOFMOTD | Response::ERR_NOMOTD, _) => {
                            if let Some(password) = &config.nickserv_password {
                                out.push(Message::from(Command::PRIVMSG(
                                    "NickServ".into(),
                                    format!("IDENTIFY {password}"),
                                )));
                            }
                            out.push(Message::from(Command::JOIN(
                                config.channel.clone(),
                                config.channel_key.clone(),
                                None,
                            )));
                        }
                        Command::Response(Response::ERR_NICKNAMEINUSE | Response::ERR_NICKCOLLISION, _) if !registered => {
                            attempts += 1;
                            if attempts > 9 {
                                return End::Failed { code: "NetworkError", message: "every nick tried is in use".into() };
                            }
                            nick = fallback_nick(&config.nick, attempts);
                            out.push(Message::from(Command::NICK(nick.clone())));
                        }
                        Command::Response(Response::ERR_PASSWDMISMATCH, _) => {
                            return End::Failed { code: "AuthFailed", message: "the server refused IRC_SERVER_PASSWORD".into() };
                        }
                        Command::Response(
                            code @ (Response::ERR_BADCHANNELKEY
                            | Response::ERR_INVITEONLYCHAN
                            | Response::ERR_BANNEDFROMCHAN
                            | Response::ERR_CHANNELISFULL),
                            _,
                        ) => {
                            let why = match code {
                                Response::ERR_BADCHANNELKEY => "the channel key (IRC_CHANNEL_KEY) was refused",
                                Response::ERR_INVITEONLYCHAN => "the channel is invite-only",
                                Response::ERR_BANNEDFROMCHAN => "this nick is banned from the channel",
                                _ => "the channel is full",
                            };
                            if let Ok(mut s) = self.shared.lock() {
                                s.last_error = Some(("NetworkError".into(), format!("cannot join {}: {why}", config.channel)));
                            }
                            self.changed.send_modify(|n| *n += 1);
                        }
                        Command::JOIN(ref channel, _, _)
                            if from.as_deref() == Some(nick.as_str())
                                && channel.eq_ignore_ascii_case(&config.channel) =>
                        {
                            if let Ok(mut s) = self.shared.lock() {
                                s.joined = true;
                            }
                            self.set(IrcState::Joined, None);
                        }
                        Command::PRIVMSG(ref target, ref body) => {
                            let sender = from.clone().unwrap_or_default();
                            let channel = if target.starts_with(['#', '&', '+', '!']) { target.clone() } else { sender.clone() };
                            self.received(&channel, &sender, body);
                        }
                        Command::ERROR(ref why) => {
                            return End::Failed { code: "NetworkError", message: format!("the server closed the link: {}", super::text::capped(why, 200).0) };
                        }
                        _ => {}
                    }
                    if !out.is_empty()
                        && let Err(e) = send(&mut write, &out).await {
                            return End::Failed { code: "NetworkError", message: e };
                        }
                }
                request = requests.recv() => match request {
                    None => return End::Quit(None),
                    Some(Request::Quit(done)) => {
                        let _ = send(&mut write, &[Message::from(Command::QUIT(Some("LurkBot session ended".into())))]).await;
                        let _ = write.shutdown().await;
                        return End::Quit(Some(done));
                    }
                    Some(Request::Say { target, lines, done }) => {
                        let messages: Vec<Message> = lines
                            .iter()
                            .map(|l| Message::from(Command::PRIVMSG(target.clone(), l.clone())))
                            .collect();
                        match send(&mut write, &messages).await {
                            Ok(()) => { let _ = done.send(Ok(())); }
                            Err(e) => {
                                let _ = done.send(Err(e.clone()));
                                return End::Failed { code: "NetworkError", message: e };
                            }
                        }
                    }
                },
                () = tokio::time::sleep_until(idle) => {
                    if !registered {
                        return End::Failed { code: "Timeout", message: "the server did not complete registration within 15 s".into() };
                    }
                    if pinged {
                        return End::Failed { code: "NetworkError", message: "the server stopped answering".into() };
                    }
                    pinged = true;
                    if let Err(e) = send(&mut write, &[Message::from(Command::PING("lurkbot".into(), None))]).await {
                        return End::Failed { code: "NetworkError", message: e };
                    }
                }
            }
        }
    }

    fn received(&self, channel: &str, sender: &str, body: &str) {
        let message = match self.shared.lock() {
            Ok(mut s) => s.ring.push(lurkbot_core::now_ms(), channel, sender, body),
            Err(_) => return,
        };
        if let Err(e) = self.store.received(&message) {
            tracing::warn!(
                session = self.session.as_str(),
                error = e.message.as_str(),
                "irc log not written"
            );
        }
        self.changed.send_modify(|n| *n += 1);
        // Only a session that asked for delivery to its agent hands messages on.
        if self.config.auto_forward
            && let Some(events) = &self.events
        {
            events(IrcEvent::Inbound {
                session: self.session.clone(),
                message,
            });
        }
    }
}

/// The nick to try after `attempt` refusals: the configured one with `_`, then a digit,
/// cut to fit [`MAX_NICK`].
fn fallback_nick(nick: &str, attempt: u32) -> String {
    let suffix = if attempt == 1 {
        "_".to_string()
    } else {
        format!("_{attempt}")
    };
    let keep = MAX_NICK.saturating_sub(suffix.len());
    let base: String = nick.chars().take(keep).collect();
    format!("{base}{suffix}")
}

async fn send<W: AsyncWrite + Unpin>(write: &mut W, messages: &[Message]) -> Result<(), String> {
    let mut bytes = Vec::new();
    for m in messages {
        // Display ends each message with CR LF.
        let text = m.to_string();
        bytes.extend_from_slice(text.as_bytes());
        if !text.ends_with("\r\n") {
            bytes.extend_from_slice(b"\r\n");
        }
    }
    write
        .write_all(&bytes)
        .await
        .map_err(|e| format!("writing to the server failed: {e}"))?;
    write
        .flush()
        .await
        .map_err(|e| format!("writing to the server failed: {e}"))
}

/// Reads one line (up to LF) into `line`; refuses a line longer than [`MAX_LINE`].
async fn read_line<R: AsyncBufReadExt + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
) -> Result<usize, String> {
    loop {
        let available = reader
            .fill_buf()
            .await
            .map_err(|e| format!("reading from the server failed: {e}"))?;
        if available.is_empty() {
            return Ok(line.len());
        }
        let (take, done) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        line.extend_from_slice(&available[..take]);
        reader.consume(take);
        if line.len() > MAX_LINE {
            return Err(format!(
                "the server sent a line longer than {MAX_LINE} bytes"
            ));
        }
        if done {
            return Ok(line.len());
        }
    }
}

/// TLS over `tcp`, verified by the platform's trust store (as every other connection).
async fn tls_connect(
    server: &str,
    tcp: tokio::net::TcpStream,
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, String> {
    let config = lurkbot_core::tls::client_config();
    let name = rustls::pki_types::ServerName::try_from(server.to_string())
        .map_err(|e| format!("'{server}' is not a server name: {e}"))?;
    let connector = tokio_rustls::TlsConnector::from(config);
    tokio::time::timeout(CONNECT_TIMEOUT, connector.connect(name, tcp))
        .await
        .map_err(|_| "the TLS handshake did not finish within 15 s".to_string())?
        .map_err(|e| crate::root_cause(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn long_lines_are_read_and_capped_and_endless_ones_refused() {
        let wire = format!(
            ":bob!b@h PRIVMSG #c :{}\r\n:bob!b@h PRIVMSG #c :next\r\n",
            "y".repeat(5000)
        );
        let mut reader = BufReader::new(wire.as_bytes());
        let mut line = Vec::new();
        read_line(&mut reader, &mut line).await.unwrap();
        let message: Message = String::from_utf8_lossy(&line).trim_end().parse().unwrap();
        let Command::PRIVMSG(_, text) = message.command else {
            panic!("not a PRIVMSG");
        };
        assert_eq!(text.len(), 5000);
        let mut ring = super::super::store::Ring::default();
        let stored = ring.push(0, "#c", "bob", &text);
        assert!(stored.text.chars().count() <= 4096);
        assert_eq!(
            super::super::text::capped(&stored.text, 512)
                .0
                .chars()
                .count(),
            512
        );
        line.clear();
        read_line(&mut reader, &mut line).await.unwrap();
        assert!(String::from_utf8_lossy(&line).ends_with(":next\r\n"));
        let endless = "z".repeat(MAX_LINE + 10);
        let mut reader = BufReader::new(endless.as_bytes());
        line.clear();
        assert!(read_line(&mut reader, &mut line).await.is_err());
    }

    #[test]
    fn fallback_nicks_stay_within_nine_characters() {
        assert_eq!(fallback_nick("lurkbot", 1), "lurkbot_");
        assert_eq!(fallback_nick("ninechars", 1), "ninechar_");
        assert_eq!(fallback_nick("ninechars", 2), "ninecha_2");
    }
}
