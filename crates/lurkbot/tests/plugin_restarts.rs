//! A plugin's channel across a SIGKILL of the gateway (ARCHITECTURE.md §7d, §6.3): the shipped
//! XMPP plugin against a real Prosody, a slixmpp client as the person. A message recorded (the
//! plugin told `{recorded: true}`) whose turn is killed during its model call is answered once
//! after the restart — the plugin started again by the new gateway, the reply through its
//! outbox — and the same stanza delivered again changes nothing.

use std::path::Path;
use std::sync::Arc;

use lurkbot_llm::fake::{FakeProvider, Gate, Step};
use lurkbot_test_support::prosody::{Prosody, XmppPerson};

use crate::nothing_lost::{append_config, kill, model_env, start_with, until};
use crate::util::Test;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_xmpp_message_killed_during_its_model_call_is_answered_once() {
    let server = Arc::new(
        tokio::task::spawn_blocking(|| {
            let s = Prosody::start();
            s.register("bot", "botpass");
            s.register("ada", "adapass");
            s
        })
        .await
        .unwrap(),
    );
    let t = Test::init();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/plugins/xmpp");
    let plugin = t.path("plugins/xmpp");
    std::fs::create_dir_all(&plugin).unwrap();
    for file in ["lurkbot-plugin.toml", "main.py"] {
        std::fs::copy(example.join(file), plugin.join(file)).unwrap();
    }
    // Its venv, as its README makes one: the test venv, which has slixmpp.
    let venv = lurkbot_test_support::venv::test_python()
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .to_path_buf();
    std::os::unix::fs::symlink(venv, plugin.join(".venv")).unwrap();
    let env_file = std::fs::read_to_string(t.path(".env")).unwrap_or_default();
    std::fs::write(t.path(".env"), format!("{env_file}XMPP_PASSWORD=botpass\n")).unwrap();
    append_config(
        &t,
        &format!(
            "[plugins.xmpp]\nenabled = true\njid = \"bot@localhost\"\nserver = \"127.0.0.1\"\nport = {}\ntls = false\n[channels.xmpp]\nallow_from = [\"ada@localhost\"]",
            server.port
        ),
    );
    let fake = FakeProvider::start(vec![
        Step::Held(Gate::new(), Box::new(Step::text("never sent"))),
        Step::text("Answered once after the kill."),
    ])
    .await;
    fake.record(true);
    let env = model_env(&fake);

    let gw = start_with(&t, &env);
    let mut ada = tokio::task::spawn_blocking({
        let server = server.clone();
        move || XmppPerson::sign_in(&server, "ada", "adapass")
    })
    .await
    .unwrap();
    // Once the plugin says its channel is connected (a message before would reach nobody).
    until("the xmpp channel connected", || {
        let status = t.run(&["channels", "status", "--json"]);
        status.status == 0 && status.json()["channels"][0]["state"] == "connected"
    })
    .await;
    ada.say("bot@localhost", "still with me?", "k1");
    until("the model call", || !fake.requests().is_empty()).await;
    kill(gw);

    let gw = start_with(&t, &env);
    // The same stanza again, to the new process's plugin: recorded before, not answered twice.
    ada.say("bot@localhost", "still with me?", "k1");
    let (ada, got) = tokio::task::spawn_blocking(move || {
        let got = ada.messages(1);
        (ada, got)
    })
    .await
    .unwrap();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["body"], "Answered once after the kill.");
    // The running gateway's plugins, as the owner asks for them.
    let status = t.run(&["plugins", "status", "--json"]);
    assert_eq!(status.status, 0, "{}", status.stderr);
    assert_eq!(status.json()["plugins"][0]["name"], "xmpp");
    assert_eq!(status.json()["plugins"][0]["state"], "running");
    let headline = t.run(&["status"]);
    assert!(
        headline.stdout.contains("plugins    xmpp running"),
        "{}",
        headline.stdout
    );
    let (status, stderr) = tokio::task::spawn_blocking(move || gw.stop())
        .await
        .unwrap();
    assert_eq!(status, 0, "{stderr}");
    // The plugin's stderr is in the gateway's log.
    assert!(
        stderr.contains("xmpp plugin: signing in as bot@localhost"),
        "{stderr}"
    );
    assert_eq!(ada.messages(1).len(), 1, "one answer");
    assert_eq!(fake.requests().len(), 2, "one call cut, one that answered");
}
