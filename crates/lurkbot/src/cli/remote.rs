//! The gateway client behind `exec --gateway` and `agent --gateway`: opens `/ws`, answers the
//! challenge with `connect` and the token, then calls methods and reads events.
//!
//! The URL comes from `--gateway` or `LURKBOT_GATEWAY_URL` (`ws://127.0.0.1:18789/ws`); the token
//! from `LURKBOT_GATEWAY_TOKEN` (environment or the home's `.env`), else `gateway.token` in the
//! home's config. Only `ws://` is spoken (the gateway is loopback by default; put a TLS proxy in
//! front for anything else and tunnel to it).

use std::collections::VecDeque;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use futures_util::{SinkExt, StreamExt};
use lurkbot_core::{Config, Home, layout};
use lurkbot_gateway::protocol::{self, Event, EventFrame, Frame, method};
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The gateway URL from the flag or `LURKBOT_GATEWAY_URL`.
pub(crate) fn gateway_url(flag: Option<&str>) -> Option<String> {
    flag.map(str::to_string).or_else(|| {
        std::env::var("LURKBOT_GATEWAY_URL")
            .ok()
            .filter(|u| !u.trim().is_empty())
    })
}

/// The WebSocket address for what a user gives as the gateway's URL: the `http://` address the
/// gateway prints, or `ws://`, with or without `/ws` (`http://h:p/`, `ws://h:p` and
/// `ws://h:p/ws` all mean `ws://h:p/ws`).
///
/// # Errors
/// A message with an example, for `https`/`wss` (the gateway serves plain HTTP on loopback)
/// or anything that is not such a URL.
pub(crate) fn websocket_url(raw: &str) -> Result<String, String> {
    let raw = raw.trim();
    let example = "e.g. http://127.0.0.1:18789 or ws://127.0.0.1:18789/ws";
    let (scheme, rest) = raw
        .split_once("://")
        .ok_or_else(|| format!("'{raw}' is not a gateway URL ({example})"))?;
    match scheme.to_ascii_lowercase().as_str() {
        "http" | "ws" => {}
        "https" | "wss" => {
            return Err(format!(
                "'{raw}': TLS is not spoken by this client; use the gateway's plain address ({example}), through an SSH tunnel for a remote one"
            ));
        }
        _ => return Err(format!("'{raw}' is not a gateway URL ({example})")),
    }
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    if host.is_empty() {
        return Err(format!("'{raw}' names no host ({example})"));
    }
    let path = match path.trim_end_matches('/') {
        "" | "ws" => "ws",
        other => other,
    };
    Ok(format!("ws://{host}/{path}"))
}

/// The token to present.
pub(crate) fn gateway_token(home: &Home) -> Option<String> {
    lurkbot_agent::setup::variables(home)("LURKBOT_GATEWAY_TOKEN")
        .or_else(|| {
            Config::load(&home.join(layout::CONFIG))
                .ok()
                .and_then(|c| c.gateway.token)
        })
        .filter(|t| !t.trim().is_empty())
}

/// Calls `method` on this home's running gateway (found by `run/gateway.json`, loopback only),
/// for the owner commands that act through it (`devices`, `nodes`).
///
/// # Errors
/// No gateway runs, it cannot be reached, or it refused (`CODE: message`).
pub(crate) fn call_home_gateway(
    home: &Home,
    command: &'static str,
    method: &str,
    params: Value,
) -> Result<Value, crate::error::CliError> {
    use crate::error::CliError;
    // A gateway that died (SIGKILL) leaves its record: its process is gone.
    let Some(addr) = lurkbot_core::RunningGateway::find(home)
        .filter(|g| Path::new(&format!("/proc/{}", g.pid)).exists())
        .and_then(|g| g.loopback_addr())
    else {
        return Err(CliError::failed(
            command,
            format!(
                "no gateway is running for this home; start it with `lurkbot gateway` ({command} asks it)"
            ),
        ));
    };
    let token = gateway_token(home);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut gw = Remote::connect(&format!("ws://{addr}/ws"), token.as_deref())
            .await
            .map_err(|e| CliError::failed(command, format!("{e:#}")))?;
        gw.call(method, params)
            .await
            .map_err(|e| CliError::failed(command, format!("{e:#}")))?
            .map_err(|(code, message)| CliError::failed(command, format!("{code}: {message}")))
    })
}

/// A connected, authenticated client.
pub(crate) struct Remote {
    ws: Socket,
    next: u64,
    events: VecDeque<Value>,
}

impl Remote {
    /// Connects and authenticates.
    pub(crate) async fn connect(url: &str, token: Option<&str>) -> anyhow::Result<Self> {
        let url = websocket_url(url).map_err(|e| anyhow::anyhow!(e))?;
        let url = url.as_str();
        let (ws, _) = tokio::time::timeout(
            Duration::from_secs(10),
            tokio_tungstenite::connect_async(url),
        )
        .await
        .context("the gateway did not answer within 10 s")?
        .with_context(|| format!("cannot reach the gateway at {url}"))?;
        let mut remote = Self {
            ws,
            next: 0,
            events: VecDeque::new(),
        };
        let challenge = remote.frame().await?;
        if !matches!(
            EventFrame::parse(&challenge),
            Some(EventFrame {
                event: Event::ConnectChallenge(_),
                ..
            })
        ) {
            bail!("the gateway did not start with connect.challenge");
        }
        let hello = remote
            .call(
                method::CONNECT,
                protocol::connect_params("lurkbot-cli", "cli", token.unwrap_or("")),
            )
            .await?;
        match hello {
            Ok(_) => Ok(remote),
            Err((code, message)) => bail!("the gateway refused the connection ({code}): {message}"),
        }
    }

    async fn frame(&mut self) -> anyhow::Result<Value> {
        loop {
            match self.ws.next().await {
                Some(Ok(Message::Text(text))) => {
                    return serde_json::from_str(text.as_str())
                        .context("the gateway sent a frame that is not JSON");
                }
                Some(Ok(Message::Close(frame))) => bail!(
                    "the gateway closed the connection{}",
                    frame.map(|f| format!(": {}", f.reason)).unwrap_or_default()
                ),
                Some(Ok(_)) => {}
                Some(Err(e)) => bail!("the connection to the gateway failed: {e}"),
                None => bail!("the gateway closed the connection"),
            }
        }
    }

    /// Calls a method: `Ok(payload)` or `Err((code, message))`.
    pub(crate) async fn call(
        &mut self,
        method: &str,
        params: Value,
    ) -> anyhow::Result<Result<Value, (String, String)>> {
        self.next += 1;
        let id = format!("c{}", self.next);
        let frame = protocol::request(&id, method, params);
        self.ws
            .send(Message::Text(frame.to_string().into()))
            .await
            .context("cannot send to the gateway")?;
        loop {
            let raw = self.frame().await?;
            match Frame::parse(&raw) {
                Some(Frame::Response {
                    id: answered,
                    result,
                }) if answered == id => {
                    return Ok(result);
                }
                Some(Frame::Event(_)) => self.events.push_back(raw),
                _ => {}
            }
        }
    }

    /// The next event.
    /// The events that arrived while a call waited for its answer, oldest first.
    pub(crate) fn take_buffered(&mut self) -> Vec<Value> {
        self.events.drain(..).collect()
    }

    pub(crate) async fn event(&mut self) -> anyhow::Result<Value> {
        if let Some(e) = self.events.pop_front() {
            return Ok(e);
        }
        loop {
            let raw = self.frame().await?;
            if matches!(Frame::parse(&raw), Some(Frame::Event(_))) {
                return Ok(raw);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::websocket_url;

    #[test]
    fn every_way_of_writing_the_gateway_address_works() {
        for raw in [
            "http://127.0.0.1:18789",
            "http://127.0.0.1:18789/",
            "ws://127.0.0.1:18789",
            "ws://127.0.0.1:18789/ws",
            " WS://127.0.0.1:18789/ws/ ",
        ] {
            assert_eq!(
                websocket_url(raw).as_deref(),
                Ok("ws://127.0.0.1:18789/ws"),
                "{raw}"
            );
        }
        for bad in ["127.0.0.1:18789", "ftp://h/", "https://h:1/", "ws:///ws"] {
            assert!(websocket_url(bad).is_err(), "{bad}");
        }
    }
}
