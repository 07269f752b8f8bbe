//! A Matrix user of a test, talking to a [`crate::synapse::Synapse`] directly over the
//! client-server API: log in, make and join rooms, write, read what someone wrote.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long the waits below wait.
const WAIT: Duration = Duration::from_secs(30);

/// A logged-in user.
pub struct MatrixUser {
    /// The HTTP client (for calls the helpers below do not make: uploads).
    pub http: reqwest::Client,
    /// Synapse's base URL.
    pub url: String,
    /// Their access token.
    pub token: String,
    /// Their user id (`@owner:localhost`).
    pub id: String,
}

/// A room id or alias as a path segment.
pub fn enc(s: &str) -> String {
    s.replace('!', "%21")
        .replace(':', "%3A")
        .replace('#', "%23")
}

impl MatrixUser {
    /// Logs `name` in with `password` on `synapse`.
    ///
    /// # Panics
    /// When Synapse refuses (tests only).
    pub async fn login(synapse: &crate::synapse::Synapse, name: &str, password: &str) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::new();
        let body = json!({"type": "m.login.password",
            "identifier": {"type": "m.id.user", "user": name}, "password": password});
        #[allow(clippy::unwrap_used)]
        let answer: Value = serde_json::from_slice(
            &http
                .post(format!("{}/_matrix/client/v3/login", synapse.url))
                .body(body.to_string())
                .send()
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap(),
        )
        .unwrap_or(Value::Null);
        let text = |k: &str| {
            answer[k]
                .as_str()
                .unwrap_or_else(|| panic!("login refused: {answer}"))
                .to_string()
        };
        Self {
            http,
            url: synapse.url.clone(),
            token: text("access_token"),
            id: text("user_id"),
        }
    }

    /// One API call; its JSON answer (`Null` when there is none).
    ///
    /// # Panics
    /// When Synapse cannot be reached (tests only).
    pub async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.url))
            .bearer_auth(&self.token);
        if let Some(body) = body {
            request = request.body(body.to_string());
        }
        #[allow(clippy::unwrap_used)]
        let bytes = request.send().await.unwrap().bytes().await.unwrap();
        serde_json::from_slice(&bytes).unwrap_or(Value::Null)
    }

    /// Makes a private room inviting `invite` (a direct one when `direct`); its id.
    ///
    /// # Panics
    /// When Synapse refuses (tests only).
    pub async fn create_room(&self, invite: &[&str], direct: bool) -> String {
        let room = self
            .call(
                reqwest::Method::POST,
                "/_matrix/client/v3/createRoom",
                Some(json!({"invite": invite, "is_direct": direct, "preset": "private_chat"})),
            )
            .await;
        room["room_id"]
            .as_str()
            .unwrap_or_else(|| panic!("{room}"))
            .to_string()
    }

    /// Joins `room`.
    pub async fn join(&self, room: &str) {
        self.call(
            reqwest::Method::POST,
            &format!("/_matrix/client/v3/join/{}", enc(room)),
            Some(json!({})),
        )
        .await;
    }

    /// Writes `text` in `room`.
    pub async fn say(&self, room: &str, text: &str) {
        let txn = format!("t{}-{}", std::process::id(), nanos());
        self.call(
            reqwest::Method::PUT,
            &format!(
                "/_matrix/client/v3/rooms/{}/send/m.room.message/{txn}",
                enc(room)
            ),
            Some(json!({"msgtype": "m.text", "body": text})),
        )
        .await;
    }

    /// The bodies `from` sent in `room`, oldest first.
    pub async fn bodies(&self, room: &str, from: &str) -> Vec<String> {
        let page = self
            .call(
                reqwest::Method::GET,
                &format!(
                    "/_matrix/client/v3/rooms/{}/messages?dir=b&limit=100",
                    enc(room)
                ),
                None,
            )
            .await;
        let mut out: Vec<String> = page["chunk"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["type"] == "m.room.message" && e["sender"] == from)
            .filter_map(|e| e["content"]["body"].as_str().map(str::to_string))
            .collect();
        out.reverse();
        out
    }

    /// Waits (at most 30 s) until `from` sent `n` messages in `room`; what they sent.
    pub async fn wait_bodies(&self, room: &str, from: &str, n: usize) -> Vec<String> {
        let deadline = Instant::now() + WAIT;
        loop {
            let bodies = self.bodies(room, from).await;
            if bodies.len() >= n || Instant::now() > deadline {
                return bodies;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits (at most 30 s) until `who` joined `room`.
    ///
    /// # Panics
    /// When they did not (tests only).
    pub async fn wait_joined(&self, room: &str, who: &str) {
        let deadline = Instant::now() + WAIT;
        loop {
            let members = self
                .call(
                    reqwest::Method::GET,
                    &format!("/_matrix/client/v3/rooms/{}/joined_members", enc(room)),
                    None,
                )
                .await;
            if members["joined"].get(who).is_some() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{who} did not join {room}: {members}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Nanoseconds since the epoch: with the process id, a transaction id of its own.
fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default()
}
