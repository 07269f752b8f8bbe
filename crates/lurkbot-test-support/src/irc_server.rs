//! A real IRC server for tests: Debian's `ngircd` (installed by `scripts/test.sh`) on free
//! loopback ports — plain, and TLS with a fresh self-signed certificate — stopped on drop and
//! restartable on the same ports; and [`IrcPeer`], a second client on a raw socket that sees what
//! LurkBot sends and says what LurkBot should receive.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server start or an expected line may take before the test fails.
const WAIT: Duration = Duration::from_secs(20);

/// Options of a test server.
#[derive(Debug, Clone, Default)]
pub struct IrcOptions {
    /// Also listen with TLS (self-signed certificate for 127.0.0.1).
    pub tls: bool,
    /// A server password every client must send (`PASS`).
    pub password: Option<String>,
    /// Link Atheme's NickServ (Debian `atheme-services`).
    pub services: bool,
}

/// Atheme's configuration: the ngircd protocol module, NickServ with register, identify and
/// status, linked to the test server. Its `general` block follows the package's example.
const ATHEME_CONF: &str = r#"loadmodule "modules/protocol/ngircd";
loadmodule "modules/backend/opensex";
loadmodule "modules/crypto/pbkdf2v2";
loadmodule "modules/nickserv/main";
loadmodule "modules/nickserv/help";
loadmodule "modules/nickserv/register";
loadmodule "modules/nickserv/identify";
loadmodule "modules/nickserv/info";
loadmodule "modules/nickserv/status";
loadmodule "modules/nickserv/ghost";
serverinfo {
	name = "services.test.local"; desc = "Atheme"; numeric = "00A"; recontime = 1;
	netname = "test"; hidehostsuffix = "users.test"; adminname = "test";
	adminemail = "admin@example.test"; registeremail = "noreply@example.test";
	mta = "/usr/sbin/sendmail"; loglevel = { error; }; maxlogins = 5; maxusers = 5;
	mdlimit = 30; emaillimit = 10; emailtime = 300; auth = none; casemapping = rfc1459;
};
uplink "irc.test.local" { host = "127.0.0.1"; password = "linkpass123"; port = PORT; };
nickserv { nick = "NickServ"; user = "NickServ"; host = "services.test.local"; real = "Nickname Services"; };
general {
	join_chans; leave_chans; uflags = { hidemail; }; cflags = { verbose; guard; };
	flood_msgs = 7; flood_time = 10; ratelimit_uses = 5; ratelimit_period = 60;
	kline_time = 7; clone_time = 0; commit_interval = 5; default_clone_allowed = 5;
	default_clone_warn = 4; uplink_sendq_limit = 1048576; language = "en";
	exempts { }; immune_level = immune;
};
"#;

/// A running ngircd.
pub struct IrcServer {
    dir: tempfile::TempDir,
    /// The plain port.
    pub port: u16,
    /// The TLS port, when asked for.
    pub tls_port: Option<u16>,
    child: Option<Child>,
    services: Option<Child>,
}

impl IrcServer {
    /// Starts a server with `options`.
    pub fn start(options: &IrcOptions) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = crate::ports::free_port();
        let tls_port = options.tls.then(crate::ports::free_port);
        let mut config = format!(
            "[Global]\n  Name = irc.test.local\n  Info = LurkBot test server\n  Listen = 127.0.0.1\n  Ports = {port}\n  MotdPhrase = welcome\n"
        );
        if let Some(p) = &options.password {
            config.push_str(&format!("  Password = {p}\n"));
        }
        config.push_str(
            "[Limits]\n  MaxConnectionsIP = 100\n  MaxNickLength = 9\n[Options]\n  PAM = no\n  DNS = no\n  Ident = no\n",
        );
        if options.services {
            config.push_str(
                "[Server]\n  Name = services.test.local\n  MyPassword = linkpass123\n  PeerPassword = linkpass123\n  ServiceMask = *Serv\n",
            );
        }
        if let Some(tls) = tls_port {
            let crate::tls::TestPki { cert, key, .. } =
                crate::tls::issue(dir.path(), "LurkBot test CA");
            // ngircd drops to an unprivileged user when started as root: the key must stay
            // readable for it.
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                for f in [&cert, &key] {
                    std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o644)).unwrap();
                }
            }
            config.push_str(&format!(
                "[SSL]\n  CertFile = {}\n  KeyFile = {}\n  Ports = {tls}\n",
                cert.display(),
                key.display()
            ));
        }
        std::fs::write(dir.path().join("ngircd.conf"), config).unwrap();
        let mut server = Self {
            dir,
            port,
            tls_port,
            child: None,
            services: None,
        };
        server.run();
        if options.services {
            server.start_services(options.password.as_deref());
        }
        server
    }

    /// Starts Atheme and waits until NickServ answers.
    fn start_services(&mut self, password: Option<&str>) {
        let data = self.dir.path().join("atheme");
        std::fs::create_dir_all(&data).unwrap();
        std::fs::write(data.join("services.db"), "").unwrap();
        let conf = self.dir.path().join("atheme.conf");
        std::fs::write(&conf, ATHEME_CONF.replace("PORT", &self.port.to_string())).unwrap();
        let child = Command::new("atheme-services")
            .arg("-n")
            .arg("-c")
            .arg(&conf)
            .arg("-D")
            .arg(&data)
            .arg("-p")
            .arg(data.join("atheme.pid"))
            .arg("-l")
            .arg(data.join("atheme.log"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("atheme-services is installed by scripts/test.sh");
        self.services = Some(child);
        let mut probe = IrcPeer::connect(self.port, "probe", password);
        let deadline = Instant::now() + WAIT;
        loop {
            assert!(Instant::now() < deadline, "NickServ did not come up");
            probe.say("NickServ", "HELP");
            let line = probe.expect(|l| l.contains(" 401 ") || l.starts_with(":NickServ!"));
            if line.starts_with(":NickServ!") {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn run(&mut self) {
        let child = Command::new("ngircd")
            .args(["-n", "-f"])
            .arg(self.dir.path().join("ngircd.conf"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ngircd is installed by scripts/test.sh");
        self.child = Some(child);
        crate::ports::wait_port(self.port, "ngircd");
        if let Some(tls) = self.tls_port {
            crate::ports::wait_port(tls, "ngircd (TLS)");
        }
    }

    /// The test CA's certificate (for `SSL_CERT_FILE`), when TLS is on.
    pub fn ca_cert(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// Kills the server (every connection drops).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let deadline = Instant::now() + WAIT;
        while TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
            assert!(Instant::now() < deadline, "ngircd did not stop");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Starts it again on the same ports.
    pub fn restart(&mut self) {
        self.stop();
        self.run();
    }
}

impl Drop for IrcServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.services.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A plain IRC client on a raw socket.
pub struct IrcPeer {
    stream: TcpStream,
    reader: BufReader<TcpStream>,
    /// A line begun but not ended when a short wait ran out.
    partial: String,
    /// The peer's nick.
    pub nick: String,
}

impl IrcPeer {
    /// Connects and registers as `nick` (with the server `password`, if any).
    pub fn connect(port: u16, nick: &str, password: Option<&str>) -> Self {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.set_read_timeout(Some(WAIT)).unwrap();
        let reader = BufReader::new(stream.try_clone().unwrap());
        let mut peer = Self {
            stream,
            reader,
            partial: String::new(),
            nick: nick.to_string(),
        };
        if let Some(p) = password {
            peer.raw(&format!("PASS {p}"));
        }
        peer.raw(&format!("NICK {nick}"));
        peer.raw(&format!("USER {nick} 0 * :peer"));
        peer.expect(|l| l.contains(" 376 ") || l.contains(" 422 "));
        peer
    }

    /// Sends one raw line (CR LF added).
    pub fn raw(&mut self, line: &str) {
        self.stream.write_all(line.as_bytes()).unwrap();
        self.stream.write_all(b"\r\n").unwrap();
    }

    /// Sends raw bytes as they are.
    pub fn raw_bytes(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    /// Joins `channel` (with `key`) and waits for the server's confirmation.
    pub fn join(&mut self, channel: &str, key: Option<&str>) {
        match key {
            Some(k) => self.raw(&format!("JOIN {channel} {k}")),
            None => self.raw(&format!("JOIN {channel}")),
        }
        let me = format!(":{}!", self.nick);
        self.expect(|l| l.starts_with(&me) && l.contains(" JOIN "));
    }

    /// `PRIVMSG target :text`.
    pub fn say(&mut self, target: &str, text: &str) {
        self.raw(&format!("PRIVMSG {target} :{text}"));
    }

    /// Reads lines until one matches; returns every line read, the match last.
    pub fn lines_until(&mut self, matches: impl Fn(&str) -> bool) -> Vec<String> {
        let mut seen = Vec::new();
        let last = self.expect(|l| {
            let hit = matches(l);
            if !hit {
                seen.push(l.to_string());
            }
            hit
        });
        seen.push(last);
        seen
    }

    /// The next line within `wait` (answering PINGs), or `None`.
    pub fn try_line(&mut self, wait: Duration) -> Option<String> {
        self.stream.set_read_timeout(Some(wait)).unwrap();
        let read = self.reader.read_line(&mut self.partial);
        self.stream.set_read_timeout(Some(WAIT)).unwrap();
        match read {
            Ok(0) => panic!("the server closed the peer's connection"),
            Ok(_) if self.partial.ends_with('\n') => {
                let line = std::mem::take(&mut self.partial).trim_end().to_string();
                if let Some(token) = line.strip_prefix("PING ") {
                    self.raw(&format!("PONG {token}"));
                    return None;
                }
                Some(line)
            }
            // A part of a line, or none: the rest comes with a later call.
            _ => None,
        }
    }

    /// Reads lines (answering PINGs) until one matches; returns it. Fails the test after 20 s.
    pub fn expect(&mut self, mut matches: impl FnMut(&str) -> bool) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            assert!(
                Instant::now() < deadline,
                "the expected IRC line did not come"
            );
            let n = self
                .reader
                .read_line(&mut self.partial)
                .expect("an IRC line within 20 s");
            assert!(n > 0, "the server closed the peer's connection");
            let line = std::mem::take(&mut self.partial).trim_end().to_string();
            if let Some(token) = line.strip_prefix("PING ") {
                self.raw(&format!("PONG {token}"));
                continue;
            }
            if matches(&line) {
                return line;
            }
        }
    }
}
