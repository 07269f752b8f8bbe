//! A real mail system on loopback for the email channel's tests: Dovecot (Debian
//! `dovecot-imapd`, its own instance, configuration and maildirs in a temporary folder, users in
//! a passwd file) for IMAP, and an SMTP submission server on aiosmtpd (in the test venv) that
//! requires AUTH and delivers each accepted mail into the recipient's Dovecot INBOX over IMAP,
//! stamped on top with `Authentication-Results: mail.test; auth=pass smtp.auth=<login>` as a
//! real submission server records who authenticated ([`AUTHSERV_ID`]).
//! Stopped when dropped.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// The authserv-id the SMTP side stamps its `Authentication-Results` with.
pub const AUTHSERV_ID: &str = "mail.test";

/// The SMTP side: accepts mail for the known users (AUTH with their passwords) and APPENDs it
/// to the recipient's INBOX.
const SMTP_SINK: &str = r#"
import imaplib, json, sys, threading
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword
port, imap_port, users = int(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3])
class Deliver:
    async def handle_RCPT(self, server, session, envelope, address, options):
        if address.lower() not in users:
            return "550 5.1.1 no such user"
        envelope.rcpt_tos.append(address)
        return "250 OK"
    async def handle_DATA(self, server, session, envelope):
        login = session.auth_data.login.decode() if session.auth_data else ""
        stamp = ("Authentication-Results: mail.test; auth=pass smtp.auth=" + login + "\r\n").encode()
        for rcpt in envelope.rcpt_tos:
            box = imaplib.IMAP4("127.0.0.1", imap_port)
            box.login(rcpt, users[rcpt.lower()])
            box.append("INBOX", None, None, stamp + envelope.original_content)
            box.logout()
        return "250 OK delivered"
def check(server, session, envelope, mechanism, auth_data):
    if isinstance(auth_data, LoginPassword) and users.get(auth_data.login.decode().lower()) == auth_data.password.decode():
        return AuthResult(success=True, auth_data=auth_data)
    return AuthResult(success=False, handled=False)
controller = Controller(Deliver(), hostname="127.0.0.1", port=port, authenticator=check,
                        auth_require_tls=False, auth_required=True)
controller.start()
print("ready", flush=True)
threading.Event().wait()
"#;

/// A running mail system.
pub struct MailServer {
    dovecot: Child,
    smtp: Child,
    /// IMAP's port.
    pub imap_port: u16,
    /// SMTP submission's port.
    pub smtp_port: u16,
    _dir: tempfile::TempDir,
}

impl MailServer {
    /// Starts Dovecot and the SMTP server for `users` (`(address, password)`).
    pub fn start(users: &[(&str, &str)]) -> Self {
        assert!(
            std::path::Path::new("/usr/sbin/dovecot").exists(),
            "Dovecot is missing: scripts/test.sh installs dovecot-imapd"
        );
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for sub in ["mail", "run", "state"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        use std::os::unix::fs::PermissionsExt;
        for d in [root.to_path_buf(), root.join("run")] {
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        // Dovecot refuses to run mail as root: a root test runs it as nobody.
        let (uid, gid) = mail_ids(&root.join("mail"));
        let passwd: String = users
            .iter()
            .map(|(u, p)| format!("{u}:{{PLAIN}}{p}\n"))
            .collect();
        std::fs::write(root.join("passwd"), passwd).unwrap();
        let imap_port = crate::ports::free_port();
        let r = root.display();
        let config = format!(
            "base_dir = {r}/run\nstate_dir = {r}/state\nlog_path = {r}/dovecot.log\nlisten = 127.0.0.1\n\
             protocols = imap\nmailbox_idle_check_interval = 1 secs\nssl = no\ndisable_plaintext_auth = no\nauth_mechanisms = plain login\n\
             mail_location = maildir:{r}/mail/%n\n\
             passdb {{\n  driver = passwd-file\n  args = scheme=PLAIN username_format=%u {r}/passwd\n}}\n\
             userdb {{\n  driver = static\n  args = uid={uid} gid={gid} home={r}/mail/%n\n}}\n\
             service imap-login {{\n  inet_listener imap {{\n    address = 127.0.0.1\n    port = {imap_port}\n  }}\n  inet_listener imaps {{\n    port = 0\n  }}\n}}\n"
        );
        std::fs::write(root.join("dovecot.conf"), config).unwrap();
        let dovecot = Command::new("/usr/sbin/dovecot")
            .args(["-F", "-c"])
            .arg(root.join("dovecot.conf"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        crate::ports::wait_port(imap_port, "Dovecot");
        let smtp_port = crate::ports::free_port();
        std::fs::write(root.join("sink.py"), SMTP_SINK).unwrap();
        let users_json = format!(
            "{{{}}}",
            users
                .iter()
                .map(|(u, p)| format!("\"{}\": \"{p}\"", u.to_lowercase()))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let smtp = Command::new(crate::venv::test_python())
            .arg(root.join("sink.py"))
            .args([smtp_port.to_string(), imap_port.to_string(), users_json])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        crate::ports::wait_port(smtp_port, "the SMTP server");
        Self {
            dovecot,
            smtp,
            imap_port,
            smtp_port,
            _dir: dir,
        }
    }

    /// Where the maildirs are (for a failure message).
    pub fn log(&self) -> PathBuf {
        self._dir.path().join("dovecot.log")
    }

    /// Submits a mail from `from` (signed in with `password`) to `bot@localhost` over SMTP:
    /// `subject`, `body`, its `Message-ID` and `extra` arguments of `mail.py send` (a reply's
    /// `In-Reply-To`, an HTML part, an attachment). Blocking.
    #[allow(clippy::too_many_arguments)]
    pub fn send(
        &self,
        from: &str,
        password: &str,
        subject: &str,
        body: &str,
        id: &str,
        extra: &[&str],
    ) {
        let mut args = vec![
            "send".to_string(),
            self.smtp_port.to_string(),
            from.into(),
            password.into(),
            "bot@localhost".into(),
            subject.into(),
            body.into(),
            id.into(),
        ];
        args.extend(extra.iter().map(|s| (*s).to_string()));
        mail_client(&args);
    }

    /// `user`'s INBOX over IMAP once it holds `n` mails (at most 30 s), as JSON objects.
    /// Blocking.
    pub fn inbox(&self, user: &str, password: &str, n: usize) -> Vec<serde_json::Value> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let args = ["read", &self.imap_port.to_string(), user, password].map(str::to_string);
            let list: Vec<serde_json::Value> = serde_json::from_str(&mail_client(&args)).unwrap();
            if list.len() >= n || std::time::Instant::now() > deadline {
                return list;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }
}

/// `mail.py` (a mail client on Python's smtplib and imaplib, in the test venv) with `args`;
/// its stdout.
fn mail_client(args: &[String]) -> String {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("mail.py");
    crate::venv::run_python(
        std::iter::once(script.into_os_string()).chain(args.iter().map(Into::into)),
    )
}

/// The uid and gid mail runs as: the caller's own, or nobody's when that is root (the mail
/// folder is then given to nobody).
fn mail_ids(mail: &std::path::Path) -> (u32, u32) {
    use std::os::unix::fs::MetadataExt;
    let me = std::fs::metadata(mail).unwrap();
    if me.uid() != 0 {
        return (me.uid(), me.gid());
    }
    std::os::unix::fs::chown(mail, Some(65534), Some(65534)).unwrap();
    (65534, 65534)
}

impl Drop for MailServer {
    fn drop(&mut self) {
        for child in [&mut self.dovecot, &mut self.smtp] {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
