//! A real Radicale CalDAV server on loopback for the tests (from the test venv), and a plain
//! WebDAV client playing "another calendar app".

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::cal_local::test_python;

/// How the server checks logins.
pub enum Auth {
    /// Any user name and password is accepted.
    Anyone,
    /// Only this user with this password (htpasswd, plain).
    Only(&'static str, &'static str),
}

/// A running Radicale; killed when dropped.
pub struct Radicale {
    child: Option<Child>,
    pub port: u16,
    dir: tempfile::TempDir,
}

impl Radicale {
    pub fn start(auth: Auth) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = lurkbot_test_support::ports::free_port();
        let auth_section = match auth {
            Auth::Anyone => "type = none\n".to_string(),
            Auth::Only(user, password) => {
                let file = dir.path().join("users");
                std::fs::write(&file, format!("{user}:{password}\n")).unwrap();
                format!(
                    "type = htpasswd\nhtpasswd_filename = {}\nhtpasswd_encryption = plain\ndelay = 0\n",
                    file.display()
                )
            }
        };
        let config = format!(
            "[server]\nhosts = 127.0.0.1:{port}\n[auth]\n{auth_section}[rights]\ntype = owner_only\n[storage]\nfilesystem_folder = {}\n[web]\ntype = none\n[logging]\nlevel = warning\n",
            dir.path().join("collections").display()
        );
        std::fs::write(dir.path().join("config"), config).unwrap();
        let mut server = Self {
            child: None,
            port,
            dir,
        };
        server.spawn();
        server
    }

    fn spawn(&mut self) {
        let log = std::fs::File::create(self.dir.path().join("log")).unwrap();
        let child = Command::new(test_python())
            .args(["-m", "radicale", "--config"])
            .arg(self.dir.path().join("config"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "Radicale did not start: {}",
                std::fs::read_to_string(self.log_path()).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("log")
    }

    /// The server's root URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    /// Stops the server (its data stays).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port and data.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }
}

impl Drop for Radicale {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Another calendar app speaking plain WebDAV.
pub struct OtherClient {
    http: reqwest::Client,
    base: String,
    user: String,
}

/// An answer: status, ETag, body.
pub struct Reply {
    pub status: u16,
    pub etag: Option<String>,
    pub body: String,
}

impl OtherClient {
    pub fn new(server: &Radicale, user: &str) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        Self {
            http: reqwest::Client::new(),
            base: server.url(),
            user: user.to_string(),
        }
    }

    pub async fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Reply {
        let mut request = self
            .http
            .request(
                reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
                format!("{}{}", self.base, path.trim_start_matches('/')),
            )
            .basic_auth(&self.user, Some("any"))
            .body(body.to_string());
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let etag = response
            .headers()
            .get("etag")
            .map(|v| v.to_str().unwrap().to_string());
        Reply {
            status,
            etag,
            body: response.text().await.unwrap(),
        }
    }

    /// Creates a calendar collection with a display name and the components it holds.
    pub async fn make_calendar(&self, path: &str, name: &str, components: &[&str]) {
        let comps: String = components
            .iter()
            .map(|c| format!("<C:comp name=\"{c}\"/>"))
            .collect();
        let body = format!(
            r#"<?xml version="1.0" encoding="utf-8"?><C:mkcalendar xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><D:set><D:prop><D:displayname>{name}</D:displayname><C:supported-calendar-component-set>{comps}</C:supported-calendar-component-set></D:prop></D:set></C:mkcalendar>"#
        );
        let reply = self.send("MKCALENDAR", path, &[], &body).await;
        assert_eq!(reply.status, 201, "MKCALENDAR {path}: {}", reply.body);
    }

    /// PUTs an iCalendar object; returns its ETag.
    pub async fn put(&self, path: &str, ics: &str) -> String {
        let reply = self
            .send("PUT", path, &[("content-type", "text/calendar")], ics)
            .await;
        assert!(
            reply.status == 201 || reply.status == 204,
            "PUT {path}: {} {}",
            reply.status,
            reply.body
        );
        reply.etag.unwrap_or_default()
    }

    /// GETs an object's text.
    pub async fn get(&self, path: &str) -> Reply {
        self.send("GET", path, &[], "").await
    }
}

impl OtherClient {
    /// Paths of the `.ics` objects in a calendar collection.
    pub async fn objects(&self, calendar: &str) -> Vec<String> {
        let reply = self
            .send(
                "PROPFIND",
                calendar,
                &[("depth", "1")],
                r#"<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop><D:getetag/></D:prop></D:propfind>"#,
            )
            .await;
        assert_eq!(reply.status, 207, "{}", reply.body);
        reply
            .body
            .split("<href>")
            .skip(1)
            .filter_map(|s| s.split("</href>").next())
            .filter(|h| h.ends_with(".ics"))
            .map(str::to_string)
            .collect()
    }
}
