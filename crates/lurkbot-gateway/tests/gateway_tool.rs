//! The agent's `gateway` tool against a real gateway with the scripted model (ARCHITECTURE.md
//! §5.2): it reads the status and the settings with secrets masked; a change of a key that
//! widens its powers is refused without asking anyone; an invalid change is refused and
//! nothing is written; an allowed change waits for the owner's approval — offered without
//! allow-always, and an allow-always answer is not remembered — then is written and reloaded;
//! a denied one leaves the file as it was.

use lurkbot_llm::fake::Step;
use serde_json::{Value, json};

use crate::common::{Client, Gateway, TOKEN};

const SECRET: &str = "gw-secret-token-0123456789";

fn patch(id: &str, patch: Value) -> Step {
    Step::call(
        id,
        "gateway",
        json!({"action": "config.patch", "patch": patch}),
    )
}

/// The result the model received for tool call `id`.
pub(crate) fn result_of(gw: &Gateway, id: &str) -> String {
    gw.fake
        .requests()
        .iter()
        .flat_map(|r| r.body["messages"].as_array().cloned().unwrap_or_default())
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .and_then(|m| m["content"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no result for {id}"))
}

/// A turn that must end without anyone being asked for an approval.
async fn turn(c: &mut Client, message: &str) {
    let sent = c.request("chat.send", json!({"message": message})).await;
    assert_eq!(sent["ok"], true, "{sent}");
    let end = c
        .event(|e| {
            e["event"] == "chat" && e["payload"]["state"] == "final"
                || e["event"] == "exec.approval.requested"
        })
        .await;
    assert_eq!(end["event"], "chat", "an approval was asked: {end}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_tool_reads_masked_settings_and_changes_only_allowed_keys_when_approved() {
    let gw = Gateway::start(
        &format!("[gateway]\ntoken = \"{SECRET}\"\n\n[heartbeat]\nevery = \"5m\" # mine\n"),
        vec![
            Step::call("get", "gateway", json!({"action": "config.get"})),
            Step::call("status", "gateway", json!({"action": "status"})),
            Step::call("schema", "gateway", json!({"action": "config.schema"})),
            Step::text("read"),
            patch("widen", json!({"network": {"allow_hosts": ["*"]}})),
            patch(
                "dm",
                json!({"channels": {"telegram": {"dm_policy": "open"}}}),
            ),
            // A plugin is the owner's program: never enabled by the model.
            patch("plugin", json!({"plugins": {"echo": {"enabled": true}}})),
            patch("invalid", json!({"heartbeat": {"every": 5}})),
            Step::text("refused"),
            patch("ok", json!({"heartbeat": {"every": "10m"}})),
            Step::text("changed"),
            patch("denied", json!({"heartbeat": {"every": "15m"}})),
            Step::text("denied"),
        ],
    )
    .await;
    let config = gw.home.join("config.toml");
    let (mut c, _) = Client::connect(&gw, TOKEN).await;

    turn(&mut c, "read your settings").await;
    let offered: Vec<String> = gw.fake.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect();
    assert!(offered.iter().any(|t| t == "gateway"), "{offered:?}");
    let got = result_of(&gw, "get");
    assert!(!got.contains(SECRET), "a secret reached the model: {got}");
    assert!(got.contains("********"), "{got}");
    assert!(got.contains("\"every\":\"5m\""), "{got}");
    let status = result_of(&gw, "status");
    assert!(
        status.contains("\"version\"") && status.contains("\"browser\""),
        "{status}"
    );
    let schema = result_of(&gw, "schema");
    assert!(
        schema.contains("heartbeat.every") && !schema.contains("network"),
        "{schema}"
    );

    // Refused outright, nothing asked, nothing written.
    let before = std::fs::read(&config).unwrap();
    turn(&mut c, "widen yourself").await;
    for (id, key) in [
        ("widen", "network.allow_hosts"),
        ("dm", "channels.telegram.dm_policy"),
        ("plugin", "plugins.echo.enabled"),
    ] {
        let r = result_of(&gw, id);
        assert!(r.contains(key) && r.contains("owner's to change"), "{r}");
    }
    let invalid = result_of(&gw, "invalid");
    assert!(invalid.contains("nothing was changed"), "{invalid}");
    assert_eq!(std::fs::read(&config).unwrap(), before, "the file changed");

    // Allowed: waits for the owner, who answers allow-always; applied once, not remembered.
    c.request("chat.send", json!({"message": "check less often"}))
        .await;
    let asked = c.event(|e| e["event"] == "exec.approval.requested").await;
    assert_eq!(asked["payload"]["tool"], "gateway");
    assert_eq!(asked["payload"]["allowAlways"], false, "{asked}");
    assert!(
        asked["payload"]["summary"]
            .as_str()
            .unwrap()
            .contains("heartbeat"),
        "{asked}"
    );
    c.request(
        "exec.approval.resolve",
        json!({"approvalId": asked["payload"]["approvalId"], "decision": "allow-always"}),
    )
    .await;
    c.event(|e| e["event"] == "chat" && e["payload"]["state"] == "final")
        .await;
    let ok = result_of(&gw, "ok");
    assert!(ok.contains("\"changed\":[\"heartbeat.every\"]"), "{ok}");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.contains("every = \"10m\" # mine"), "{text}");
    assert_eq!(gw.state.config().heartbeat.every, "10m", "not reloaded");
    let remembered =
        std::fs::read_to_string(gw.home.join(lurkbot_agent::APPROVALS_FILE)).unwrap_or_default();
    assert!(!remembered.contains("gateway"), "{remembered}");

    // Asked again (allow-always did not stick); denied: the file stays as it was.
    c.request("chat.send", json!({"message": "even less"}))
        .await;
    let asked = c.event(|e| e["event"] == "exec.approval.requested").await;
    c.request(
        "exec.approval.resolve",
        json!({"approvalId": asked["payload"]["approvalId"], "decision": "deny"}),
    )
    .await;
    c.event(|e| e["event"] == "chat" && e["payload"]["state"] == "final")
        .await;
    assert!(result_of(&gw, "denied").contains("not approved"));
    assert_eq!(std::fs::read_to_string(&config).unwrap(), text);
}
