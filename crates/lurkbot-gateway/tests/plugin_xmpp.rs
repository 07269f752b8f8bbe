//! The shipped XMPP plugin (`examples/plugins/xmpp`) as a channel, against a real Prosody with
//! a real slixmpp client as the person: the owner answered, a stanza delivered twice answered
//! once, a stranger paired with the model never called, and the plugin killed — started again
//! by the host, the next message answered.

use std::path::Path;
use std::time::{Duration, Instant};

use lurkbot_llm::fake::Step;
use lurkbot_test_support::prosody::{Prosody, XmppPerson};
use serde_json::{Value, json};

use crate::common::{Client, Gateway, TOKEN};

const WAIT: Duration = Duration::from_secs(30);

/// The example's files, and its venv: the test venv (which has slixmpp).
fn example_files() -> Vec<(&'static str, String)> {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/plugins/xmpp");
    ["lurkbot-plugin.toml", "main.py"]
        .into_iter()
        .map(|f| {
            let to: &'static str = if f == "main.py" {
                "plugins/xmpp/main.py"
            } else {
                "plugins/xmpp/lurkbot-plugin.toml"
            };
            (to, std::fs::read_to_string(example.join(f)).unwrap())
        })
        .collect()
}

/// `channels.status`'s or `plugins.status`'s entry for xmpp once `done` holds.
async fn status_when(
    gw: &Gateway,
    method: &str,
    list: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let (mut c, _) = Client::connect(gw, TOKEN).await;
    let deadline = Instant::now() + WAIT;
    loop {
        let answer = c.request(method, json!({})).await["payload"].clone();
        let entry = answer[list]
            .as_array()
            .and_then(|all| all.iter().find(|e| e["name"] == "xmpp"))
            .cloned()
            .unwrap_or_default();
        if done(&entry) {
            return entry;
        }
        assert!(Instant::now() < deadline, "never: {answer}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_xmpp_plugin_answers_pairs_and_survives_being_killed() {
    let server = std::sync::Arc::new(
        blocking(|| {
            let s = Prosody::start();
            for (user, password) in [("bot", "botpass"), ("ada", "adapass"), ("eve", "evepass")] {
                s.register(user, password);
            }
            s
        })
        .await,
    );
    let mut files = example_files();
    files.push((".env", "XMPP_PASSWORD=botpass\n".into()));
    let config = format!(
        "[plugins.xmpp]\nenabled = true\njid = \"bot@localhost\"\nserver = \"127.0.0.1\"\nport = {}\ntls = false\n[channels.xmpp]\nallow_from = [\"ada@localhost\"]\n",
        server.port
    );
    let gw = Gateway::start_with_files(
        &config,
        vec![Step::text("Hi Ada."), Step::text("Back again.")],
        &files,
    )
    .await;
    // The plugin's venv (as its README makes one): the test venv, which has slixmpp. It is
    // there only after the gateway started the plugin once: the host starts it again.
    let venv = lurkbot_test_support::venv::test_python()
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .to_path_buf();
    std::os::unix::fs::symlink(&venv, gw.home.join("plugins/xmpp/.venv")).unwrap();
    let up = status_when(&gw, "channels.status", "channels", |c| {
        c["state"] == "connected"
    })
    .await;
    assert_eq!(up["state"], "connected");

    let (mut ada, mut eve) = blocking({
        let server = server.clone();
        move || {
            (
                XmppPerson::sign_in(&server, "ada", "adapass"),
                XmppPerson::sign_in(&server, "eve", "evepass"),
            )
        }
    })
    .await;
    ada.say("bot@localhost", "hello", "a1");
    let ada = blocking(move || {
        let got = ada.messages(1);
        (ada, got)
    })
    .await;
    let (mut ada, got) = ada;
    assert_eq!(got[0]["from"], "bot@localhost");
    assert_eq!(got[0]["body"], "Hi Ada.");

    // The same stanza again: recorded before, never answered twice.
    ada.say("bot@localhost", "hello", "a1");
    // A stranger: a pairing code, the model never called.
    eve.say("bot@localhost", "who are you?", "e1");
    let eve_got = blocking(move || eve.messages(1)).await;
    assert!(
        eve_got[0]["body"]
            .as_str()
            .unwrap_or_default()
            .contains("pairing code"),
        "{eve_got:?}"
    );
    assert_eq!(
        gw.fake.requests().len(),
        1,
        "a redelivery or a stranger reached the model"
    );

    // The plugin killed: the host starts it again, and the next message is answered.
    let running = status_when(&gw, "plugins.status", "plugins", |p| {
        p["state"] == "running"
    })
    .await;
    let pid = running["pid"].as_u64().unwrap_or_default().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-KILL", &pid])
            .status()
            .unwrap()
            .success()
    );
    status_when(&gw, "plugins.status", "plugins", |p| {
        p["state"] == "running" && p["pid"].as_u64().map(|p| p.to_string()) != Some(pid.clone())
    })
    .await;
    status_when(&gw, "channels.status", "channels", |c| {
        c["state"] == "connected"
    })
    .await;
    ada.say("bot@localhost", "still there?", "a2");
    let got = blocking(move || ada.messages(2)).await;
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[1]["body"], "Back again.");
    assert_eq!(gw.fake.requests().len(), 2);
}
