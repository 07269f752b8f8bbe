//! The operator methods: `logs.tail` over the log file, `gateway.reload` re-reading config.toml.

use lurkbot_llm::fake::Step;
use serde_json::json;

use crate::common::{Client, Gateway, TOKEN, connect_params};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_tail_reads_the_log_by_cursor_and_refuses_bad_params() {
    let gw = Gateway::start("", vec![]).await;
    let (mut c, hello) = Client::connect(&gw, TOKEN).await;
    let methods = hello["features"]["methods"].as_array().unwrap();
    assert!(methods.iter().any(|m| m == "logs.tail"));
    assert!(methods.iter().any(|m| m == "gateway.reload"));

    // No log yet: an empty window.
    let empty = c.request("logs.tail", json!({})).await;
    assert_eq!(empty["ok"], true, "{empty}");
    assert_eq!(empty["payload"]["lines"], json!([]));
    assert_eq!(empty["payload"]["size"], 0);

    let log = gw.home.join("logs/gateway.log");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    std::fs::write(&log, "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n").unwrap();
    let last_two = c.request("logs.tail", json!({"limit": 2})).await;
    let payload = &last_two["payload"];
    assert_eq!(payload["lines"], json!(["{\"n\":2}", "{\"n\":3}"]));
    assert_eq!(payload["truncated"], true);
    assert_eq!(payload["cursor"], 24);
    assert!(
        payload["file"]
            .as_str()
            .unwrap()
            .ends_with("logs/gateway.log")
    );
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    f.write_all(b"{\"n\":4}\n").unwrap();
    let next = c.request("logs.tail", json!({"cursor": 24})).await;
    assert_eq!(next["payload"]["lines"], json!(["{\"n\":4}"]));
    assert_eq!(next["payload"]["reset"], false);

    for bad in [
        json!({"limit": 0}),
        json!({"limit": 5001}),
        json!({"maxBytes": 2_000_000}),
        json!({"cursor": -1}),
        json!({"path": "/etc/passwd"}),
    ] {
        let refused = c.request("logs.tail", bad.clone()).await;
        assert_eq!(refused["ok"], false, "{bad}: {refused}");
        assert_eq!(refused["error"]["code"], "INVALID_REQUEST", "{bad}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_reload_puts_a_valid_file_in_force_and_keeps_the_old_one_otherwise() {
    let gw = Gateway::start("", vec![Step::text("ok")]).await;
    let (mut c, _) = Client::connect(&gw, TOKEN).await;
    let path = gw.home.join("config.toml");
    let before = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{before}\n[agents.work]\n")).unwrap();
    let reloaded = c.request("gateway.reload", json!({})).await;
    assert_eq!(reloaded["ok"], true, "{reloaded}");
    assert_eq!(reloaded["payload"]["mode"], "hot");
    assert_eq!(
        reloaded["payload"]["plan"]["changedPaths"],
        json!(["agents.work"])
    );
    assert!(gw.state.config().agents.contains_key("work"));

    std::fs::write(&path, format!("{before}\n[gateway]\nport = 1\n")).unwrap();
    let restart = c.request("gateway.reload", json!({})).await;
    assert_eq!(restart["payload"]["mode"], "restart", "{restart}");
    assert_eq!(restart["payload"]["plan"]["restartGateway"], true);

    std::fs::write(&path, "[agent]\ncontext_window = \"big\"\n").unwrap();
    let refused = c.request("gateway.reload", json!({})).await;
    assert_eq!(refused["ok"], false, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("settings in force are kept"),
        "{refused}"
    );
    assert_eq!(
        gw.state.config().gateway.port,
        1,
        "the last good file stays in force"
    );

    // A read-only connection may not reload.
    let mut reader = Client::open(&gw).await;
    reader.recv().await.unwrap();
    let mut params = connect_params(TOKEN);
    params["scopes"] = json!(["operator.read"]);
    assert_eq!(reader.request("connect", params).await["ok"], true);
    let denied = reader.request("gateway.reload", json!({})).await;
    assert_eq!(denied["error"]["code"], "UNAUTHORIZED", "{denied}");
    let allowed = reader.request("logs.tail", json!({})).await;
    assert_eq!(allowed["ok"], true);
}
