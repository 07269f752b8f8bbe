//! Connections the socket-based platforms share: plain TCP, or TLS through rustls with the
//! platform's certificate roots (Discord's gateway, Slack's Socket Mode, IMAP).

use crate::ChannelError;

/// A plain or TLS connection.
pub(crate) trait Io:
    tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + std::fmt::Debug
{
}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + std::fmt::Debug> Io for T {}

/// Connects to `host:port`, with TLS when `tls`; `what` names it in errors.
pub(crate) async fn connect(
    host: &str,
    port: u16,
    tls: bool,
    what: &str,
) -> Result<Box<dyn Io>, ChannelError> {
    let transient = |e: String| ChannelError::Transient(format!("{what}: {e}"));
    let tcp = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        tokio::net::TcpStream::connect((host, port)),
    )
    .await
    .map_err(|_| transient(format!("no connection to {host}:{port} within 20 s")))?
    .map_err(|e| transient(e.to_string()))?;
    if !tls {
        return Ok(Box::new(tcp));
    }
    let config = lurkbot_core::tls::client_config();
    let name = rustls::pki_types::ServerName::try_from(host.to_string())
        .map_err(|e| transient(e.to_string()))?;
    let stream = tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .map_err(|e| transient(e.to_string()))?;
    Ok(Box::new(stream))
}

/// `scheme://host[:port][/…]` split into its parts; `default_port` when none is given.
pub(crate) fn host_port(url: &str, default_port: u16) -> Option<(String, String, u16)> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split('/').next().unwrap_or_default();
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (h.to_string(), p.parse().ok()?),
        None => (authority.to_string(), default_port),
    };
    (!host.is_empty()).then(|| (scheme.to_ascii_lowercase(), host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_scheme_host_and_port() {
        assert_eq!(
            host_port("imaps://mail.example.org", 993),
            Some(("imaps".into(), "mail.example.org".into(), 993))
        );
        assert_eq!(
            host_port("smtp://127.0.0.1:2525/x", 25),
            Some(("smtp".into(), "127.0.0.1".into(), 2525))
        );
        assert_eq!(host_port("nope", 1), None);
    }
}
