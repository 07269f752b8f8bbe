//! A gateway served in-process on a free loopback port over a temp home whose model is the
//! scripted provider, and a WebSocket client speaking the protocol.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use lurkbot_core::{Config, Home};
use lurkbot_gateway::AppState;
use lurkbot_llm::fake::{FakeProvider, Step};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

pub const TOKEN: &str = "test-token-0123456789";
pub const HOOKS_TOKEN: &str = "hooks-token-abcdef";

pub struct Gateway {
    pub _dir: Option<tempfile::TempDir>,
    pub home: Home,
    pub fake: FakeProvider,
    pub addr: std::net::SocketAddr,
    pub state: AppState,
    /// The hub's events from before the first connection (only for [`Gateway::on_same_home`]:
    /// a listener counts as a client for approvals).
    pub early_events:
        Option<tokio::sync::broadcast::Receiver<std::sync::Arc<lurkbot_gateway::protocol::Event>>>,
    stop: Option<oneshot::Sender<()>>,
    pub task: Option<tokio::task::JoinHandle<()>>,
}

impl Gateway {
    /// Starts with `config` (TOML appended to a model section) and scripted model replies.
    pub async fn start(config: &str, steps: Vec<Step>) -> Self {
        Self::start_with(config, steps, Some(TOKEN), Some(HOOKS_TOKEN)).await
    }

    pub async fn start_with(
        config: &str,
        steps: Vec<Step>,
        token: Option<&str>,
        hooks: Option<&str>,
    ) -> Self {
        let text = format!("[agent]\nmodel = \"openai/fake\"\n{config}");
        Self::start_raw(&text, steps, token, hooks).await
    }

    /// Starts with `config` after the model section and `env` (lines) added to the `.env`.
    pub async fn start_with_env(config: &str, steps: Vec<Step>, env: &str) -> Self {
        let text = format!("[agent]\nmodel = \"openai/fake\"\n{config}");
        Self::start_full(&text, steps, Some(TOKEN), Some(HOOKS_TOKEN), env).await
    }

    /// Like [`Gateway::start`], with `files` (home-relative path, content) written before the
    /// gateway starts, so what it reads at start (a channel's settings) is there from the first
    /// look.
    pub async fn start_with_files(
        config: &str,
        steps: Vec<Step>,
        files: &[(&str, String)],
    ) -> Self {
        let text = format!("[agent]\nmodel = \"openai/fake\"\n{config}");
        let dir = tempfile::tempdir().unwrap();
        let home = Home::open(&dir.path().join("home")).unwrap();
        lurkbot_core::init_home(&home, &[]).unwrap();
        for (path, content) in files {
            let path = home.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
        let fake = FakeProvider::start(steps).await;
        std::fs::write(home.join("config.toml"), &text).unwrap();
        // A `.env` among the files keeps its lines.
        let given = std::fs::read_to_string(home.join(".env")).unwrap_or_default();
        std::fs::write(
            home.join(".env"),
            format!("OPENAI_BASE_URL={}/v1\n{given}", fake.url),
        )
        .unwrap();
        Self::serve(
            Some(dir),
            home,
            fake,
            &text,
            Some(TOKEN),
            Some(HOOKS_TOKEN),
            false,
        )
        .await
    }

    /// Starts with exactly `text` as config.toml (no model section added).
    pub async fn start_raw(
        text: &str,
        steps: Vec<Step>,
        token: Option<&str>,
        hooks: Option<&str>,
    ) -> Self {
        Self::start_full(text, steps, token, hooks, "").await
    }

    async fn start_full(
        text: &str,
        steps: Vec<Step>,
        token: Option<&str>,
        hooks: Option<&str>,
        env: &str,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::open(&dir.path().join("home")).unwrap();
        lurkbot_core::init_home(&home, &[]).unwrap();
        let fake = FakeProvider::start(steps).await;
        let text = text.to_string();
        std::fs::write(home.join("config.toml"), &text).unwrap();
        std::fs::write(
            home.join(".env"),
            format!("OPENAI_BASE_URL={}/v1\n{env}", fake.url),
        )
        .unwrap();
        Self::serve(Some(dir), home, fake, &text, token, hooks, false).await
    }

    /// A second gateway on this one's home (its own port and state; the same files), its
    /// events watched from the start ([`Gateway::early_events`]).
    pub async fn on_same_home(&self) -> Self {
        let text = std::fs::read_to_string(self.home.join("config.toml")).unwrap();
        let fake = FakeProvider::start(vec![]).await;
        Self::serve(
            None,
            self.home.clone(),
            fake,
            &text,
            Some(TOKEN),
            Some(HOOKS_TOKEN),
            true,
        )
        .await
    }

    async fn serve(
        dir: Option<tempfile::TempDir>,
        home: Home,
        fake: FakeProvider,
        text: &str,
        token: Option<&str>,
        hooks: Option<&str>,
        watch: bool,
    ) -> Self {
        let config = Config::parse(std::path::Path::new("config.toml"), text).unwrap();
        let state = AppState::new(
            home.clone(),
            config,
            token.map(str::to_string),
            hooks.map(str::to_string),
        );
        // Tests stop at once unless they ask for the grace in their config.
        if !text.contains("shutdown_grace_secs") {
            state.set_shutdown_grace(Duration::ZERO);
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let early_events = watch.then(|| state.hub.subscribe());
        let serving = state.clone();
        let task = tokio::spawn(async move {
            lurkbot_gateway::serve(listener, serving, async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
        Self {
            _dir: dir,
            home,
            fake,
            addr,
            state,
            early_events,
            stop: Some(stop),
            task: Some(task),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn ws_url(&self) -> String {
        format!("ws://{}/ws", self.addr)
    }

    /// Stops the gateway and waits for it to finish.
    /// Tells the gateway to stop (as SIGTERM does) without waiting for it.
    pub fn signal_stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    /// Waits (at most `limit`) until the gateway has stopped.
    pub async fn stopped_within(&mut self, limit: Duration) {
        if let Some(task) = self.task.take() {
            tokio::time::timeout(limit, task)
                .await
                .expect("the gateway stops in time")
                .unwrap();
        }
    }

    pub async fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            tokio::time::timeout(Duration::from_secs(10), task)
                .await
                .expect("the gateway stops within 10 s")
                .unwrap();
        }
    }
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

pub struct Client {
    pub ws: Ws,
    pub events: Vec<Value>,
    pub next: u64,
}

impl Client {
    /// Opens the socket (no handshake yet).
    pub async fn open(gw: &Gateway) -> Self {
        let (ws, _) = tokio_tungstenite::connect_async(gw.ws_url()).await.unwrap();
        Self {
            ws,
            events: Vec::new(),
            next: 0,
        }
    }

    /// Opens with extra request headers; the HTTP status when the upgrade is refused.
    pub async fn open_with(gw: &Gateway, headers: &[(&str, &str)]) -> Result<Self, u16> {
        let mut request = gw.ws_url().into_client_request().unwrap();
        for (k, v) in headers {
            let name: tokio_tungstenite::tungstenite::http::HeaderName = k.parse().unwrap();
            request.headers_mut().insert(name, v.parse().unwrap());
        }
        match tokio_tungstenite::connect_async(request).await {
            Ok((ws, _)) => Ok(Self {
                ws,
                events: Vec::new(),
                next: 0,
            }),
            Err(tokio_tungstenite::tungstenite::Error::Http(r)) => Err(r.status().as_u16()),
            Err(e) => panic!("{e}"),
        }
    }

    /// Opens and completes the handshake with `token`; returns the hello payload.
    pub async fn connect(gw: &Gateway, token: &str) -> (Self, Value) {
        let mut c = Self::open(gw).await;
        let challenge = c.recv().await.expect("challenge");
        assert_eq!(challenge["event"], "connect.challenge");
        let res = c.request("connect", connect_params(token)).await;
        assert_eq!(res["ok"], true, "{res}");
        let hello = res["payload"].clone();
        (c, hello)
    }

    pub async fn send(&mut self, frame: &Value) {
        self.ws
            .send(Message::Text(frame.to_string().into()))
            .await
            .unwrap();
    }

    /// The next text frame as JSON; `None` when the server closed.
    pub async fn recv(&mut self) -> Option<Value> {
        loop {
            let msg = tokio::time::timeout(Duration::from_secs(20), self.ws.next())
                .await
                .expect("a frame within 20 s")?;
            match msg {
                Ok(Message::Text(t)) => return Some(serde_json::from_str(t.as_str()).unwrap()),
                Ok(Message::Close(_)) | Err(_) => return None,
                Ok(_) => {}
            }
        }
    }

    /// The close code the server sent (reads until the close frame).
    pub async fn close_code(&mut self) -> Option<u16> {
        loop {
            match tokio::time::timeout(Duration::from_secs(10), self.ws.next())
                .await
                .ok()??
            {
                Ok(Message::Close(frame)) => return frame.map(|f| u16::from(f.code)),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }

    /// Sends a request and waits for its response; events meanwhile are kept in `events`.
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = format!("r{}", self.next);
        self.send(&lurkbot_gateway::protocol::request(&id, method, params))
            .await;
        loop {
            let frame = self.recv().await.expect("a response before close");
            if frame["type"] == "res" && frame["id"] == id {
                return frame;
            }
            self.events.push(frame);
        }
    }

    /// Waits for an event matching `pred` (looking at already received ones first).
    pub async fn event(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(pos) = self.events.iter().position(&pred) {
            return self.events.remove(pos);
        }
        loop {
            let frame = self.recv().await.expect("an event before close");
            if frame["type"] == "event" && pred(&frame) {
                return frame;
            }
            self.events.push(frame);
        }
    }
}

pub fn connect_params(token: &str) -> Value {
    lurkbot_gateway::protocol::connect_params("test", "test", token)
}

/// A real voice note: espeak-ng's speech encoded as LurkBot encodes it.
pub async fn recorded_note(text: &str) -> Vec<u8> {
    let setup =
        lurkbot_media::speech::TtsSetup::espeak_only(lurkbot_browser::find_executable("espeak-ng"));
    let client = lurkbot_term::http_client_builder().build().unwrap();
    lurkbot_media::speech::speak(&client, &setup, text, None)
        .await
        .unwrap()
        .ogg
}

/// Checks `frames` (`{"method", "frame", "sent"?}` each) against OpenClaw's published
/// protocol.schema.json with `tests/openclaw/validate.py`; fails the test naming each frame
/// that does not validate, else the validator's report (`{"checked": {definition: count}}`)
/// and its text.
pub fn validate_openclaw_frames(
    cli: &lurkbot_test_support::openclaw::OpenClaw,
    frames: &[Value],
) -> (Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("frames.jsonl");
    let lines: Vec<String> = frames.iter().map(Value::to_string).collect();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/openclaw/validate.py");
    let output = std::process::Command::new(lurkbot_test_support::venv::test_python())
        .arg(script)
        .arg(cli.schema())
        .arg(&file)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{report}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    (serde_json::from_str(report.trim()).unwrap(), report)
}

/// An HTTP client for the tests (the process's TLS provider installed first).
pub fn http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// The last user message of a model request's body (OpenAI's wire format).
pub fn last_user_message(body: &Value) -> Value {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .cloned()
        .unwrap_or_else(|| panic!("no user message in {body}"))
}

/// A user message made of parts: its first part's text and its second part's image URL.
pub fn text_and_image(user: &Value) -> (String, String) {
    let parts = user["content"]
        .as_array()
        .unwrap_or_else(|| panic!("no parts: {user}"));
    let text = parts[0]["text"].as_str().unwrap_or_default().to_string();
    let url = parts
        .get(1)
        .and_then(|p| p["image_url"]["url"].as_str())
        .unwrap_or_else(|| panic!("no image part: {user}"))
        .to_string();
    (text, url)
}
