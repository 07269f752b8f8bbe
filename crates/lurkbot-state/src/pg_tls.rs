//! TLS for the PostgreSQL client: rustls (the `ring` provider every other connection of LurkBot
//! uses) through `tokio-rustls`, with the server's certificate verified by the configuration
//! given (the platform's roots, or `sslrootcert`) and its name checked. No channel binding is
//! offered (SCRAM-SHA-256 without `-PLUS`): binding needs the certificate's signature hash,
//! which would take an X.509 parser into the binary, and the verified TLS session already
//! authenticates the server.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Makes verified TLS connections to the database.
#[derive(Clone)]
pub(crate) struct RustlsTls(pub(crate) Arc<rustls::ClientConfig>);

/// One connection's TLS handshake, for the server `name`.
pub(crate) struct Handshake {
    config: Arc<rustls::ClientConfig>,
    name: ServerName<'static>,
}

/// A TLS session over the database connection.
pub(crate) struct Session<S>(tokio_rustls::client::TlsStream<S>);

impl<S> MakeTlsConnect<S> for RustlsTls
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = Session<S>;
    type TlsConnect = Handshake;
    type Error = rustls::pki_types::InvalidDnsNameError;

    fn make_tls_connect(&mut self, domain: &str) -> Result<Handshake, Self::Error> {
        Ok(Handshake {
            config: self.0.clone(),
            name: ServerName::try_from(domain)?.to_owned(),
        })
    }
}

impl<S> TlsConnect<S> for Handshake
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = Session<S>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Session<S>>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        let connector = tokio_rustls::TlsConnector::from(self.config);
        Box::pin(async move { connector.connect(self.name, stream).await.map(Session) })
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> TlsStream for Session<S> {
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for Session<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Session<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}
