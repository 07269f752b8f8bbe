//! TLS for tests, made by the real `openssl` (installed by `scripts/test.sh`): a test CA and a
//! server certificate for 127.0.0.1 that it signs ([`issue`]; a self-signed certificate is not
//! accepted as a server's own), and [`TlsServer`], `openssl s_server` serving a folder's files
//! over HTTPS on a loopback port it chose, killed on drop.

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

/// `openssl s_server` on a loopback port it chose, killed on drop.
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

    /// Binds port 0 and reads the port s_server chose from its `ACCEPT 127.0.0.1:<port>` line: a
    /// port picked beforehand could be taken by another test's server before s_server binds it.
    fn start(cert: &Path, key: &Path, mode: &str, root: &Path) -> Self {
        use std::io::BufRead;
        let mut child = Command::new("openssl")
            .args(["s_server", mode, "-accept", "127.0.0.1:0"])
            .arg("-cert")
            .arg(cert)
            .arg("-key")
            .arg(key)
            .current_dir(root)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("openssl is installed by scripts/test.sh");
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut lines = std::io::BufReader::new(stdout);
        let mut line = String::new();
        let port = loop {
            line.clear();
            let read = lines.read_line(&mut line).expect("s_server's stdout");
            assert!(read > 0, "s_server exited before it accepted");
            let chosen = line
                .trim()
                .strip_prefix("ACCEPT ")
                .and_then(|address| address.rsplit(':').next())
                .and_then(|port| port.parse::<u16>().ok());
            if let Some(port) = chosen {
                break port;
            }
        };
        // Whatever s_server prints later is read and dropped, so it never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut lines, &mut std::io::sink()));
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
