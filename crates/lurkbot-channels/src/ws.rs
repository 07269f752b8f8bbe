//! The WebSockets of Discord's gateway and Slack's Socket Mode: `ws://` or `wss://` over the
//! connections of [`crate::net`].

use crate::ChannelError;
use crate::net::{Io, connect, host_port};

/// A WebSocket over a plain or TLS connection.
pub(crate) type Socket = tokio_tungstenite::WebSocketStream<Box<dyn Io>>;

/// Opens the WebSocket at `url` (`wss://` through rustls with the platform's roots); `what`
/// names it in errors.
pub(crate) async fn open(url: &str, what: &str) -> Result<Socket, ChannelError> {
    let default_port = if url.starts_with("wss://") { 443 } else { 80 };
    let (scheme, host, port) = host_port(url, default_port)
        .filter(|(s, _, _)| s == "ws" || s == "wss")
        .ok_or_else(|| ChannelError::Permanent(format!("{what} URL {url} is not ws(s)://")))?;
    let stream = connect(&host, port, scheme == "wss", what).await?;
    let (socket, _) = tokio_tungstenite::client_async(url, stream)
        .await
        .map_err(|e| ChannelError::Transient(format!("{what}: {e}")))?;
    Ok(socket)
}
