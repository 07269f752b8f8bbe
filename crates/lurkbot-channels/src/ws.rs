//! The WebSocket connections the socket-based platforms share (Discord's gateway, Slack's
//! Socket Mode): plain `ws://` or `wss://` through rustls with the platform's certificate
//! roots.

use std::sync::Arc;

use crate::ChannelError;

/// A plain or TLS connection.
pub(crate) trait Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Io for T {}

/// A WebSocket over a plain or TLS connection.
pub(crate) type Socket = tokio_tungstenite::WebSocketStream<Box<dyn Io>>;

/// Opens the WebSocket at `url` (`wss://` through rustls with the platform's roots); `what`
/// names it in errors.
pub(crate) async fn open(url: &str, what: &str) -> Result<Socket, ChannelError> {
    let url = url.to_string();
    let transient = |e: String| ChannelError::Transient(format!("{what}: {e}"));
    let rest = url
        .strip_prefix("wss://")
        .or_else(|| url.strip_prefix("ws://"))
        .ok_or_else(|| ChannelError::Permanent(format!("{what} URL {url} is not ws(s)://")))?;
    let host_port = rest.split('/').next().unwrap_or_default();
    let tls = url.starts_with("wss://");
    let (host, port) = match host_port.rsplit_once(':') {
        Some((h, p)) => (h.to_string(), p.parse::<u16>().unwrap_or(443)),
        None => (host_port.to_string(), if tls { 443 } else { 80 }),
    };
    let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
        .await
        .map_err(|e| transient(e.to_string()))?;
    let stream: Box<dyn Io> = if tls {
        use rustls_platform_verifier::ConfigVerifierExt;
        let config =
            rustls::ClientConfig::with_platform_verifier().map_err(|e| transient(e.to_string()))?;
        let name = rustls::pki_types::ServerName::try_from(host.clone())
            .map_err(|e| transient(e.to_string()))?;
        let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await
            .map_err(|e| transient(e.to_string()))?;
        Box::new(tls)
    } else {
        Box::new(tcp)
    };
    let (socket, _) = tokio_tungstenite::client_async(url, stream)
        .await
        .map_err(|e| transient(e.to_string()))?;
    Ok(socket)
}
