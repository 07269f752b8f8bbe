//! A real XMPP server for the plugin tests: Debian's Prosody (installed by `scripts/test.sh`)
//! on a free loopback port, plain c2s (a server on this machine), accounts registered with
//! `prosodyctl`; stopped on drop. And [`XmppPerson`], a real slixmpp client (in the test venv)
//! as the person who writes to the bot: what it is told to say goes out with the stanza id
//! given, what it receives is collected.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);

/// A running Prosody.
pub struct Prosody {
    child: Child,
    dir: tempfile::TempDir,
    /// Its c2s port.
    pub port: u16,
}

impl Prosody {
    /// Starts a server for the domain `localhost`; fails with what to run when Prosody is
    /// missing.
    pub fn start() -> Self {
        assert!(
            Path::new("/usr/bin/prosody").exists(),
            "Prosody is missing: scripts/test.sh installs it (Debian prosody)"
        );
        let dir = tempfile::tempdir().unwrap();
        let port = crate::ports::free_port();
        let d = dir.path().display();
        std::fs::create_dir_all(dir.path().join("data")).unwrap();
        std::fs::write(
            dir.path().join("prosody.cfg.lua"),
            format!(
                r#"pidfile = "{d}/prosody.pid"; data_path = "{d}/data"; daemonize = false
interfaces = {{ "127.0.0.1" }}; c2s_ports = {{ {port} }}; s2s_ports = {{ }}
http_ports = {{ }}; https_ports = {{ }}; admin_interfaces = {{ }}
authentication = "internal_plain"; allow_unencrypted_plain_auth = true; c2s_require_encryption = false
log = {{ info = "{d}/prosody.log" }}; run_as_root = true
modules_enabled = {{ "roster"; "saslauth"; "disco"; "ping"; "posix" }}
VirtualHost "localhost"
"#
            ),
        )
        .unwrap();
        // Prosody drops to its own user when started as root.
        let _ = Command::new("chmod")
            .args(["-R", "a+rwX"])
            .arg(dir.path())
            .status();
        let child = Command::new("prosody")
            .arg("--config")
            .arg(dir.path().join("prosody.cfg.lua"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut server = Self { child, dir, port };
        let deadline = Instant::now() + WAIT;
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("prosody exited ({status}): {}", server.log());
            }
            assert!(
                Instant::now() < deadline,
                "prosody did not listen: {}",
                server.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    /// Registers `user@localhost` with `password`.
    pub fn register(&self, user: &str, password: &str) {
        let status = Command::new("prosodyctl")
            .arg("--config")
            .arg(self.dir.path().join("prosody.cfg.lua"))
            .args(["register", user, "localhost", password])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "prosodyctl register {user} failed");
    }

    /// The server's log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("prosody.log")).unwrap_or_default()
    }
}

impl Drop for Prosody {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A person on XMPP: a slixmpp client (`xmpp_person.py` in the test venv).
pub struct XmppPerson {
    child: Child,
    stdin: ChildStdin,
    received: Arc<(Mutex<Vec<Value>>, Condvar)>,
}

impl XmppPerson {
    /// Signs in as `user@localhost` on `server` and waits until the session started.
    pub fn sign_in(server: &Prosody, user: &str, password: &str) -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("xmpp_person.py");
        let mut child = Command::new(crate::venv::test_python())
            .arg(script)
            .args([
                &server.port.to_string(),
                &format!("{user}@localhost"),
                password,
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let received: Arc<(Mutex<Vec<Value>>, Condvar)> = Arc::default();
        let kept = received.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(event) = serde_json::from_str::<Value>(&line) {
                    let (lock, wake) = &*kept;
                    lock.lock().unwrap().push(event);
                    wake.notify_all();
                }
            }
        });
        let person = Self {
            child,
            stdin,
            received,
        };
        assert!(
            person.wait(|events| events.iter().any(|e| e["event"] == "ready")),
            "{user} never signed in to Prosody"
        );
        person
    }

    /// Sends `body` to `to` as a chat message with stanza id `id`.
    pub fn say(&mut self, to: &str, body: &str, id: &str) {
        let line = json!({"to": to, "body": body, "id": id}).to_string();
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The chat messages received once there are `n` (at most 30 s): `{from, body, id}`.
    pub fn messages(&self, n: usize) -> Vec<Value> {
        self.wait(|events| events.iter().filter(|e| e["event"] == "message").count() >= n);
        let (lock, _) = &*self.received;
        lock.lock()
            .unwrap()
            .iter()
            .filter(|e| e["event"] == "message")
            .cloned()
            .collect()
    }

    fn wait(&self, done: impl Fn(&[Value]) -> bool) -> bool {
        let (lock, wake) = &*self.received;
        let deadline = Instant::now() + WAIT;
        let mut events = lock.lock().unwrap();
        while !done(&events) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            events = wake.wait_timeout(events, left).unwrap().0;
        }
        true
    }
}

impl Drop for XmppPerson {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
