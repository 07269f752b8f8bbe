//! The TLS client set-up every outbound connection shares: rustls with the `ring` provider and
//! the platform's trust roots (`SSL_CERT_FILE` / `SSL_CERT_DIR` or the system bundle).
//!
//! Reading and parsing the roots costs several milliseconds (Debian's bundle and its folder hold
//! ~150 certificates each), which used to be paid by every HTTP client built — by a CLI turn
//! against a model on `http://localhost`, and again for every fetch and redirect hop. Now there
//! is one configuration per process, and its verifier reads the roots on the first server
//! certificate it checks: a process that never speaks TLS never reads them. They are read again
//! when older than [`ROOTS_MAX_AGE`], so a gateway that runs for weeks picks up an update of the
//! system's certificates without a restart. A failure (no roots at all) is never kept: the
//! handshake fails with [`NO_ROOTS`] in its message and the next one tries again.

use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// How long the loaded trust roots are reused before they are read again.
pub const ROOTS_MAX_AGE: Duration = Duration::from_secs(10 * 60);

/// Part of the error a handshake fails with when the platform's trust store cannot be
/// loaded (the verifier's own reason follows), so callers can say what to install.
pub const NO_ROOTS: &str = "no CA certificate to verify the server with";

/// What to do about a [`NO_ROOTS`] failure, for messages that carry a hint.
pub const NO_ROOTS_HINT: &str = "no CA certificates could be loaded to verify HTTPS; install the \
     system's CA certificates (Debian: ca-certificates) or point SSL_CERT_FILE at a PEM bundle";

/// The shared client configuration: server certificates verified against the platform's roots,
/// no client certificate, no ALPN (HTTP/1.1 clients, IRC and IMAP all use it as is). Costs a
/// reference count; the roots are read when a certificate is first checked.
pub fn client_config() -> Arc<rustls::ClientConfig> {
    static SHARED: LazyLock<Arc<rustls::ClientConfig>> = LazyLock::new(|| {
        install_crypto_provider();
        let provider = CryptoProvider::get_default()
            .cloned()
            .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()));
        let verifier = Arc::new(PlatformRoots {
            provider,
            loaded: Mutex::new(None),
        });
        Arc::new(
            rustls::ClientConfig::builder()
                .dangerous()
                .with_custom_certificate_verifier(verifier)
                .with_no_client_auth(),
        )
    });
    Arc::clone(&SHARED)
}

/// Installs rustls' `ring` crypto provider as the process default (once; a provider installed
/// earlier by someone else is kept). `ring` is used rather than aws-lc-rs because it is a
/// fraction of the size, which keeps the binary within its budget.
fn install_crypto_provider() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The platform's verifier, made on first use and again when older than [`ROOTS_MAX_AGE`].
#[derive(Debug)]
struct PlatformRoots {
    provider: Arc<CryptoProvider>,
    loaded: Mutex<Option<(Instant, Arc<rustls_platform_verifier::Verifier>)>>,
}

impl PlatformRoots {
    fn verifier(&self) -> Result<Arc<rustls_platform_verifier::Verifier>, rustls::Error> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((at, verifier)) = loaded.as_ref()
            && at.elapsed() < ROOTS_MAX_AGE
        {
            return Ok(Arc::clone(verifier));
        }
        let verifier = rustls_platform_verifier::Verifier::new(Arc::clone(&self.provider))
            .map_err(|e| rustls::Error::General(format!("{NO_ROOTS} ({e})")))?;
        let verifier = Arc::new(verifier);
        *loaded = Some((Instant::now(), Arc::clone(&verifier)));
        Ok(verifier)
    }
}

impl ServerCertVerifier for PlatformRoots {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.verifier()?.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_configuration_is_shared_and_the_roots_are_read_only_when_needed() {
        let first = client_config();
        let second = client_config();
        assert!(
            Arc::ptr_eq(&first, &second),
            "two configurations were built"
        );
        assert!(first.alpn_protocols.is_empty());
        // scripts/test.sh installs ca-certificates; the error path is covered by the rss
        // suite's empty-store case (a separate process with its own environment).
        let roots = PlatformRoots {
            provider: Arc::new(rustls::crypto::ring::default_provider()),
            loaded: Mutex::new(None),
        };
        assert!(roots.loaded.lock().unwrap().is_none());
        let a = roots.verifier().expect("the machine has CA certificates");
        let b = roots.verifier().unwrap();
        assert!(Arc::ptr_eq(&a, &b), "the roots were read twice");
    }
}
