//! A real Matrix homeserver for the channel tests: Synapse (PyPI `matrix-synapse`, in its own
//! venv made by scripts/test.sh and found through LURKBOT_SYNAPSE_VENV) on a free loopback port
//! with SQLite, rate limits lifted, users registered with the shared secret. Stopped when
//! dropped.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running Synapse.
pub struct Synapse {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    config: PathBuf,
    bin: PathBuf,
    _dir: tempfile::TempDir,
}

const OVERRIDES: &str = "
trusted_key_servers: []
suppress_key_server_warning: true
enable_metrics: false
rc_message: {per_second: 1000, burst_count: 1000}
rc_registration: {per_second: 1000, burst_count: 1000}
rc_login:
  address: {per_second: 1000, burst_count: 1000}
  account: {per_second: 1000, burst_count: 1000}
  failed_attempts: {per_second: 1000, burst_count: 1000}
rc_joins:
  local: {per_second: 1000, burst_count: 1000}
  remote: {per_second: 1000, burst_count: 1000}
rc_invites:
  per_room: {per_second: 1000, burst_count: 1000}
  per_user: {per_second: 1000, burst_count: 1000}
  per_issuer: {per_second: 1000, burst_count: 1000}
";

impl Synapse {
    /// Starts a homeserver named `localhost`; fails with what to run when Synapse is missing.
    pub fn start() -> Self {
        let venv = std::env::var_os("LURKBOT_SYNAPSE_VENV")
            .map(PathBuf::from)
            .or_else(|| std::env::home_dir().map(|h| h.join(".cache/lurkbot-test/synapse")))
            .unwrap();
        let bin = venv.join("bin");
        assert!(
            bin.join("python").exists() && bin.join("register_new_matrix_user").exists(),
            "Synapse is missing from {}: run scripts/test.sh (it makes that venv)",
            venv.display()
        );
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("homeserver.yaml");
        let generated = Command::new(bin.join("python"))
            .args([
                "-m",
                "synapse.app.homeserver",
                "--server-name",
                "localhost",
                "--config-path",
            ])
            .arg(&config)
            .args(["--generate-config", "--report-stats=no", "--data-directory"])
            .arg(dir.path().join("data"))
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            generated.status.success(),
            "{}",
            String::from_utf8_lossy(&generated.stderr)
        );
        let port = crate::ports::free_port();
        let text = std::fs::read_to_string(&config)
            .unwrap()
            .replace("    port: 8008", &format!("    port: {port}"))
            .replace("    - ::1\n", "")
            .lines()
            .filter(|l| {
                !l.starts_with("trusted_key_servers")
                    && !l.starts_with("  - server_name: \"matrix.org\"")
            })
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(&config, format!("{text}\n{OVERRIDES}")).unwrap();
        let child = Command::new(bin.join("python"))
            .args(["-m", "synapse.app.homeserver", "-c"])
            .arg(&config)
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let url = format!("http://127.0.0.1:{port}");
        let mut synapse = Self {
            child,
            url,
            config,
            bin,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(90);
        while !healthy(port) {
            if let Ok(Some(status)) = synapse.child.try_wait() {
                panic!("Synapse exited at start: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "Synapse did not answer /health in 90 s"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        synapse
    }

    /// Registers `user` (a localpart) with `password` through the shared secret.
    pub fn register(&self, user: &str, password: &str) {
        let out = Command::new(self.bin.join("register_new_matrix_user"))
            .args(["-u", user, "-p", password, "--no-admin", "-c"])
            .arg(&self.config)
            .arg(&self.url)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Synapse {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn healthy(port: u16) -> bool {
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream
        .write_all(b"GET /health HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.0 200") || answer.starts_with("HTTP/1.1 200")
}
