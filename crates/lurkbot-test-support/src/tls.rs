//! TLS for tests, made by the real `openssl` (installed by `scripts/test.sh`): a test CA and a
//! server certificate for 127.0.0.1 that it signs ([`issue`]; a self-signed certificate is not
//! accepted as a server's own), and [`TlsServer`], `openssl s_server` serving a folder's files
//! over HTTPS on a free loopback port, killed on drop.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// What [`issue`] wrote: the CA's certificate (for `SSL_CERT_FILE`) and the server's
/// certificate and key.
pub struct TestPki {
    /// `ca.pem`.
    pub ca: PathBuf,
    /// `cert.pem`, for 127.0.0.1 (subjectAltName IP), signed by the CA.
    pub cert: PathBuf,
    /// `key.pem`.
    pub key: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) {
    let made = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("openssl is installed by scripts/test.sh");
    assert!(
        made.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&made.stderr)
    );
}

const EC: [&str; 5] = [
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
];

/// Writes a test CA named `ca_name` (`ca.pem`, `ca-key.pem`) and a server certificate for
/// 127.0.0.1 it signs (`cert.pem`, `key.pem`) into `dir`, valid for two days.
pub fn issue(dir: &Path, ca_name: &str) -> TestPki {
    let subject = format!("/CN={ca_name}");
    let mut ca = vec!["req", "-x509", "-days", "2", "-subj", &subject];
    ca.extend(EC);
    ca.extend(["-keyout", "ca-key.pem", "-out", "ca.pem"]);
    ca.extend(["-addext", "basicConstraints=critical,CA:TRUE"]);
    ca.extend(["-addext", "keyUsage=critical,keyCertSign"]);
    openssl(dir, &ca);
    let mut request = vec!["req", "-subj", "/CN=127.0.0.1"];
    request.extend(EC);
    request.extend(["-keyout", "key.pem", "-out", "server.csr"]);
    openssl(dir, &request);
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca-key.pem",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
            "-out",
            "cert.pem",
        ],
    );
    TestPki {
        ca: dir.join("ca.pem"),
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
    }
}

/// `openssl s_server` on a free loopback port, killed on drop.
pub struct TlsServer {
    child: Child,
    /// Its port.
    pub port: u16,
}

impl TlsServer {
    /// Serves the files of `root` (`-WWW`: `GET /name` answers the file `root/name`) with
    /// `cert` and `key`.
    pub fn serve_dir(cert: &Path, key: &Path, root: &Path) -> Self {
        Self::start(cert, key, "-WWW", root)
    }

    /// Answers every request with s_server's status page (`-www`).
    pub fn status_page(cert: &Path, key: &Path) -> Self {
        Self::start(cert, key, "-www", &std::env::temp_dir())
    }

    fn start(cert: &Path, key: &Path, mode: &str, root: &Path) -> Self {
        let port = crate::ports::free_port();
        let child = Command::new("openssl")
            .args(["s_server", "-quiet", mode, "-accept"])
            .arg(format!("127.0.0.1:{port}"))
            .arg("-cert")
            .arg(cert)
            .arg("-key")
            .arg(key)
            .current_dir(root)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("openssl is installed by scripts/test.sh");
        let server = Self { child, port };
        crate::ports::wait_port(port, "s_server");
        server
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
