//! The WebSocket protocol against a real gateway on loopback: handshake, refusals (bad first
//! frame, wrong token and its rate limit, foreign origin, oversized frame, unknown method),
//! methods, 100 clients at once, a streamed turn with an approval answered by the client, abort,
//! and shutdown.

use futures_util::future::join_all;
use lurkbot_llm::fake::Step;
use serde_json::{Value, json};

use crate::common::{Client, Gateway, TOKEN, connect_params};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handshake_methods_and_refusals_on_an_open_connection() {
    let gw = Gateway::start("", vec![]).await;
    let (mut c, hello) = Client::connect(&gw, TOKEN).await;
    assert_eq!(hello["type"], "hello-ok");
    assert_eq!(hello["protocol"], 1);
    assert!(
        hello["server"]["connId"]
            .as_str()
            .unwrap()
            .starts_with("conn_")
    );
    let methods = hello["features"]["methods"].as_array().unwrap();
    assert!(
        methods.iter().any(|m| m == "terminal.exec") && methods.iter().any(|m| m == "chat.send")
    );
    assert!(hello["policy"]["maxPayload"].as_u64().unwrap() > 1000);
    // Only events the server really sends are advertised.
    let events = hello["features"]["events"].as_array().unwrap();
    assert!(events.iter().any(|e| e == "lagged"), "{events:?}");
    assert!(events.iter().any(|e| e == "irc.status"), "{events:?}");

    let health = c.request("health", json!({})).await;
    assert_eq!(
        (health["ok"].clone(), health["payload"]["ok"].clone()),
        (json!(true), json!(true))
    );
    let unknown = c.request("frobnicate", json!({})).await;
    assert_eq!(unknown["ok"], false);
    assert_eq!(unknown["error"]["code"], "NOT_FOUND");
    // A malformed frame is answered and the connection stays usable.
    c.send(&json!({"type": "req", "id": "x1", "method": "health", "params": [1]}))
        .await;
    let bad = c.recv().await.unwrap();
    assert_eq!(
        (bad["id"].clone(), bad["error"]["code"].clone()),
        (json!("x1"), json!("INVALID_REQUEST"))
    );
    let missing = c.request("chat.send", json!({})).await;
    assert!(
        missing["error"]["message"]
            .as_str()
            .unwrap()
            .contains("message")
    );

    // terminal.exec answers with the envelope; a refused command is still ok at the RPC level.
    let exec = c.request("terminal.exec", json!({"command": "help"})).await;
    assert_eq!(exec["ok"], true);
    assert_eq!(exec["payload"]["exit_code"], 0);
    assert!(exec["payload"]["stdout"].as_str().unwrap().contains("zip"));
    let refused = c
        .request("terminal.exec", json!({"command": "rm -rf /"}))
        .await;
    assert_eq!(refused["ok"], true);
    assert_eq!(refused["payload"]["error_code"], "UnknownCommand");
    let bad_key = c
        .request(
            "terminal.exec",
            json!({"command": "help", "sessionKey": "nope"}),
        )
        .await;
    assert_eq!(bad_key["error"]["code"], "INVALID_REQUEST");
    let status = c.request("status", json!({})).await;
    assert_eq!(status["payload"]["connections"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_first_frame_or_wrong_token_closes_the_connection() {
    let gw = Gateway::start("", vec![]).await;
    for first in [
        json!({"type": "req", "id": "1", "method": "health", "params": {}}),
        json!({"hello": "there"}),
        json!({"type": "req", "id": "2", "method": "connect",
            "params": {"minProtocol": 5, "maxProtocol": 9, "auth": {"token": TOKEN}}}),
        json!({"type": "req", "id": "3", "method": "connect",
            "params": {"minProtocol": 2, "maxProtocol": 2, "auth": {"token": TOKEN}}}),
    ] {
        let mut c = Client::open(&gw).await;
        c.recv().await.unwrap();
        c.send(&first).await;
        let res = c.recv().await.unwrap();
        assert_eq!(res["error"]["code"], "INVALID_REQUEST", "{first} → {res}");
        assert!(c.recv().await.is_none(), "closed after {first}");
    }
    // Wrong tokens: UNAUTHORIZED and closed; after five, the address is refused for a while.
    for _ in 0..lurkbot_gateway::MAX_FAILURES {
        let mut c = Client::open(&gw).await;
        c.recv().await.unwrap();
        let res = c.request("connect", connect_params("wrong")).await;
        assert_eq!(res["error"]["code"], "UNAUTHORIZED");
        assert!(!res["error"]["message"].as_str().unwrap().contains(TOKEN));
        assert!(c.recv().await.is_none());
    }
    assert_eq!(Client::open_with(&gw, &[]).await.err(), Some(429));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn origins_and_oversized_frames_are_refused() {
    let gw = Gateway::start(
        "[gateway]\nallowed_origins = [\"https://app.example\"]\n",
        vec![],
    )
    .await;
    assert_eq!(
        Client::open_with(&gw, &[("Origin", "http://evil.example")])
            .await
            .err(),
        Some(403)
    );
    let own = format!("http://{}", gw.addr);
    assert!(
        Client::open_with(&gw, &[("Origin", own.as_str())])
            .await
            .is_ok()
    );
    assert!(
        Client::open_with(&gw, &[("Origin", "https://app.example")])
            .await
            .is_ok()
    );

    let (mut c, hello) = Client::connect(&gw, TOKEN).await;
    let cap = hello["policy"]["maxPayload"].as_u64().unwrap() as usize;
    let big = json!({"type": "req", "id": "big", "method": "terminal.exec",
        "params": {"command": "help", "stdin": "x".repeat(cap + 10)}});
    c.send(&big).await;
    let res = c.recv().await.unwrap();
    assert_eq!(res["error"]["code"], "INVALID_REQUEST");
    assert!(res["error"]["message"].as_str().unwrap().contains("cap"));
    assert_eq!(c.close_code().await, Some(1009));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_clients_at_once() {
    let gw = Gateway::start("", vec![]).await;
    let clients = join_all((0..100).map(|_| async {
        let (mut c, _) = Client::connect(&gw, TOKEN).await;
        let res = c.request("health", json!({})).await;
        assert_eq!(res["payload"]["ok"], true);
        c
    }))
    .await;
    let mut one = Client::connect(&gw, TOKEN).await.0;
    assert_eq!(
        one.request("status", json!({})).await["payload"]["connections"],
        101
    );
    drop(clients);
}

const CREATE: &str = "cal create-event --calendar-id 1 --title Dentist --start 2026-11-24T09:00:00Z --end 2026-11-24T09:30:00Z --confirm";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_streams_events_and_waits_for_the_clients_approval() {
    let gw = Gateway::start(
        "[permissions]\ncalendar = \"read-write\"\n",
        vec![
            Step::call("c1", "terminal_exec", json!({"command": CREATE})),
            Step::text("Booked it."),
        ],
    )
    .await;
    let (mut c, _) = Client::connect(&gw, TOKEN).await;
    let sent = c
        .request("chat.send", json!({"message": "book the dentist"}))
        .await;
    let run_id = sent["payload"]["runId"].as_str().unwrap().to_string();
    let asked = c.event(|e| e["event"] == "exec.approval.requested").await;
    assert_eq!(asked["payload"]["tool"], "terminal_exec");
    assert_eq!(asked["payload"]["summary"], CREATE);
    assert_eq!(asked["payload"]["sessionKey"], "agent:main:main");
    // Busy: a second turn on the session is refused while this one waits.
    let busy = c.request("chat.send", json!({"message": "again"})).await;
    assert_eq!(busy["error"]["code"], "UNAVAILABLE");
    let approval = asked["payload"]["approvalId"].as_str().unwrap();
    let bogus = c
        .request(
            "exec.approval.resolve",
            json!({"approvalId": "appr_none", "decision": "allow-once"}),
        )
        .await;
    assert_eq!(bogus["error"]["code"], "NOT_FOUND");
    let resolved = c
        .request(
            "exec.approval.resolve",
            json!({"approvalId": approval, "decision": "allow-once"}),
        )
        .await;
    assert_eq!(resolved["ok"], true, "{resolved}");
    let tool_end = c
        .event(|e| e["event"] == "agent" && e["payload"]["data"]["phase"] == "end")
        .await;
    assert_eq!(tool_end["payload"]["data"]["isError"], false);
    let fin = c
        .event(|e| e["event"] == "chat" && e["payload"]["state"] == "final")
        .await;
    assert_eq!(fin["payload"]["text"], "Booked it.");
    assert_eq!(fin["payload"]["runId"], run_id.as_str());
    // Deltas arrived before the final event, and event seq numbers only grow.
    let waited = c
        .request("agent.wait", json!({"runId": run_id, "timeoutMs": 5000}))
        .await;
    assert_eq!(waited["payload"]["status"], "ok");
    assert_eq!(waited["payload"]["text"], "Booked it.");
    let seqs: Vec<u64> = c.events.iter().filter_map(|e| e["seq"].as_u64()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    let history = c.request("chat.history", json!({})).await;
    let messages = history["payload"]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 4, "{history}");
    let listed = c.request("sessions.list", json!({})).await;
    assert_eq!(listed["payload"]["sessions"][0]["turns"], 1);
    let exec = c
        .request("terminal.exec", json!({"command": "cal list-events --from 2026-11-01T00:00:00Z --to 2026-12-01T00:00:00Z"}))
        .await;
    assert_eq!(
        exec["payload"]["result"]["events"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_records_a_cancelled_turn_and_a_stop_leaves_the_running_one_to_resume() {
    let mut gw = Gateway::start(
        "",
        vec![Step::Stall("Thinking".into()), Step::Stall("Still".into())],
    )
    .await;
    let (mut c, _) = Client::connect(&gw, TOKEN).await;
    let sent = c.request("chat.send", json!({"message": "long one"})).await;
    let run_id = sent["payload"]["runId"].as_str().unwrap().to_string();
    c.event(|e| e["event"] == "chat" && e["payload"]["state"] == "delta")
        .await;
    let aborted = c.request("chat.abort", json!({})).await;
    assert_eq!(aborted["payload"]["aborted"], true);
    c.event(|e| e["event"] == "chat" && e["payload"]["state"] == "aborted")
        .await;
    let waited = c.request("agent.wait", json!({"runId": run_id})).await;
    assert_eq!(waited["payload"]["status"], "aborted");
    let history = c.request("chat.history", json!({})).await.to_string();
    assert!(
        history.contains("[the user cancelled this turn]"),
        "{history}"
    );

    // Shutdown with a turn in flight: the client hears it; the turn is not cancelled but left
    // unended in the journal, for the next start to resume (ARCHITECTURE.md §6.3).
    let other = c
        .request(
            "chat.send",
            json!({"message": "another", "sessionKey": "agent:main:dm:web:me"}),
        )
        .await;
    assert_eq!(other["ok"], true);
    c.event(|e| e["event"] == "chat" && e["payload"]["state"] == "delta")
        .await;
    gw.stop().await;
    c.event(|e| e["event"] == "shutdown").await;
    let sessions = lurkbot_agent::Sessions::open(&gw.home, "main");
    let key = lurkbot_core::SessionKey::parse("agent:main:dm:web:me").unwrap();
    let entry = sessions.get_or_create(&key).unwrap();
    let text = serde_json::to_string(&sessions.history(&entry.session_id).unwrap()).unwrap();
    assert!(!text.contains("[the user cancelled this turn]"), "{text}");
    assert!(text.contains("another"), "{text}");
    let store = lurkbot_state::Store::open(&gw.home).unwrap();
    let open = store.unfinished().unwrap();
    assert_eq!(open.len(), 1, "{open:?}");
    assert_eq!(open[0].message, "another");
    assert_eq!(open[0].session, "agent:main:dm:web:me");
    // The turn the user aborted ended, failed, in the journal.
    let aborted = store.turn(&run_id).unwrap().unwrap();
    assert_eq!(aborted.state, lurkbot_state::TurnState::Failed);
    assert_eq!(aborted.error.as_deref(), Some("aborted"));
}

#[tokio::test]
async fn unsafe_binds_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let home = lurkbot_core::Home::open(dir.path()).unwrap();
    let config = lurkbot_core::Config::default();
    let public: std::net::SocketAddr = "0.0.0.0:18789".parse().unwrap();
    let loopback: std::net::SocketAddr = "127.0.0.1:18789".parse().unwrap();
    let no_token = lurkbot_gateway::AppState::new(home.clone(), config.clone(), None, None);
    assert!(
        lurkbot_gateway::check_safe(&no_token, public)
            .unwrap_err()
            .to_string()
            .contains("token")
    );
    assert!(lurkbot_gateway::check_safe(&no_token, loopback).is_ok());
    let mut none = config.clone();
    none.gateway.auth = lurkbot_core::GatewayAuth::None;
    let with_none = lurkbot_gateway::AppState::new(home.clone(), none, Some("t".into()), None);
    assert!(
        lurkbot_gateway::check_safe(&with_none, public)
            .unwrap_err()
            .to_string()
            .contains("loopback")
    );
    // A short token is fine on loopback, refused elsewhere; 24 characters pass.
    let short =
        lurkbot_gateway::AppState::new(home.clone(), config.clone(), Some("x".repeat(23)), None);
    assert!(lurkbot_gateway::check_safe(&short, loopback).is_ok());
    let message = lurkbot_gateway::check_safe(&short, public)
        .unwrap_err()
        .to_string();
    assert!(message.contains("at least 24"), "{message}");
    let long = lurkbot_gateway::AppState::new(home, config, Some("x".repeat(24)), None);
    assert!(lurkbot_gateway::check_safe(&long, public).is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_without_a_model_ends_with_the_fix_and_the_session_stays_usable() {
    let gw = Gateway::start_raw("", vec![], Some(TOKEN), None).await;
    let (mut c, _) = Client::connect(&gw, TOKEN).await;
    for _ in 0..2 {
        let sent = c.request("chat.send", json!({"message": "hello"})).await;
        assert_eq!(sent["ok"], true, "{sent}");
        let run_id = sent["payload"]["runId"].as_str().unwrap().to_string();
        let error = c
            .event(|e| e["event"] == "chat" && e["payload"]["state"] == "error")
            .await;
        assert_eq!(error["payload"]["runId"], run_id.as_str());
        let message = error["payload"]["message"].as_str().unwrap();
        assert!(message.contains("no model is configured"), "{message}");
        assert!(message.contains("Run `lurkbot setup`"), "{message}");
        assert!(
            message.contains("lurkbot config set agent.model"),
            "{message}"
        );
        // The run has ended: the next send is accepted, not refused as busy.
        let waited = c
            .request("agent.wait", json!({"runId": run_id, "timeoutMs": 10000}))
            .await;
        assert_eq!(waited["ok"], true, "{waited}");
    }
    // The OpenAI-compatible API's 503 says the same, `lurkbot setup` first.
    let (status, body) = crate::http::post(
        &gw,
        "/v1/chat/completions",
        Some(TOKEN),
        json!({"model": "lurkbot", "messages": [{"role": "user", "content": "hello"}]}),
    )
    .await;
    assert_eq!(status, 503, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("Run `lurkbot setup`"), "{body}");
}

/// Waits for the end of `run_id` and says whether an approval was asked for on the way.
async fn finish_turn(c: &mut Client, run_id: &str, answer: Option<&str>) -> (bool, Value) {
    let mut asked = false;
    loop {
        let event = c
            .event(|e| {
                e["event"] == "exec.approval.requested"
                    || (e["event"] == "chat" && e["payload"]["state"] == "final")
            })
            .await;
        if event["event"] == "chat" {
            assert_eq!(event["payload"]["runId"], run_id);
            return (asked, event);
        }
        asked = true;
        let Some(decision) = answer else {
            // Deny, so the turn ends and the test can report the question.
            let id = event["payload"]["approvalId"].clone();
            c.request(
                "exec.approval.resolve",
                json!({"approvalId": id, "decision": "deny"}),
            )
            .await;
            continue;
        };
        let id = event["payload"]["approvalId"].clone();
        let resolved = c
            .request(
                "exec.approval.resolve",
                json!({"approvalId": id, "decision": decision}),
            )
            .await;
        assert_eq!(resolved["ok"], true, "{resolved}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_always_in_one_session_holds_in_every_other() {
    const DELETE: &str = "cal delete-event --event-id 999 --confirm";
    let gw = Gateway::start(
        "[permissions]\ncalendar = \"read-write\"\n",
        vec![
            // Session B's first turn: its agent exists before A decides anything.
            Step::text("B is here."),
            // Session A: allow-always for `cal create-event`.
            Step::call("a1", "terminal_exec", json!({"command": CREATE})),
            Step::text("A booked it."),
            // Session B: the same command must run without a question.
            Step::call("b1", "terminal_exec", json!({"command": CREATE})),
            Step::text("B booked it too."),
            // Session B: allow-always for another command keeps A's decision on disk.
            Step::call("b2", "terminal_exec", json!({"command": DELETE})),
            Step::text("B tried a delete."),
        ],
    )
    .await;
    let (mut c, _) = Client::connect(&gw, TOKEN).await;
    let (a, b) = ("agent:main:dm:web:a", "agent:main:dm:web:b");
    let turn = async |c: &mut Client, session: &str, answer: Option<&str>| {
        let sent = c
            .request("chat.send", json!({"message": "go", "sessionKey": session}))
            .await;
        let run_id = sent["payload"]["runId"]
            .as_str()
            .unwrap_or_else(|| panic!("{sent}"))
            .to_string();
        finish_turn(c, &run_id, answer).await
    };
    assert!(!turn(&mut c, b, None).await.0);
    let (asked, fin) = turn(&mut c, a, Some("allow-always")).await;
    assert!(asked, "the first create-event must ask");
    assert_eq!(fin["payload"]["text"], "A booked it.");
    let (asked, fin) = turn(&mut c, b, None).await;
    assert!(
        !asked,
        "session B asked again for a command session A allowed always"
    );
    assert_eq!(fin["payload"]["text"], "B booked it too.");
    let (asked, _) = turn(&mut c, b, Some("allow-always")).await;
    assert!(asked);
    let saved = std::fs::read_to_string(gw.home.join("exec-approvals.json")).unwrap();
    for key in [
        "terminal_exec:cal create-event",
        "terminal_exec:cal delete-event",
    ] {
        assert!(saved.contains(key), "{key} missing from {saved}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_gets_only_the_scopes_it_asked_for() {
    let gw = Gateway::start("", vec![]).await;
    let mut c = Client::open(&gw).await;
    let challenge = c.recv().await.unwrap();
    assert_eq!(challenge["event"], "connect.challenge");
    let mut params = connect_params(TOKEN);
    params["scopes"] = json!(["operator.read"]);
    let hello = c.request("connect", params).await;
    assert_eq!(hello["ok"], true, "{hello}");
    assert_eq!(hello["payload"]["scopes"], json!(["operator.read"]));
    // Reading works; starting a turn, running a command or answering approvals does not.
    let health = c.request("health", json!({})).await;
    assert_eq!(health["ok"], true);
    for (method, params) in [
        ("chat.send", json!({"message": "hi"})),
        ("terminal.exec", json!({"command": "help"})),
        (
            "exec.approval.resolve",
            json!({"approvalId": "x", "decision": "deny"}),
        ),
        ("sessions.delete", json!({"sessionKey": "agent:main:main"})),
        // Devices are operator.pairing's, node commands operator.write's.
        ("device.pair.list", json!({})),
        ("device.pair.approve", json!({"deviceId": "x"})),
        (
            "node.invoke",
            json!({"node": "x", "command": "device.info"}),
        ),
    ] {
        let refused = c.request(method, params).await;
        assert_eq!(
            refused["error"]["code"], "UNAUTHORIZED",
            "{method}: {refused}"
        );
        assert!(
            refused["error"]["message"]
                .as_str()
                .unwrap()
                .contains("scope"),
            "{refused}"
        );
    }
    // No scopes listed: everything, as before.
    let (mut all, hello) = Client::connect(&gw, TOKEN).await;
    assert_eq!(hello["scopes"].as_array().unwrap().len(), 6);
    let exec = all
        .request("terminal.exec", json!({"command": "help"}))
        .await;
    assert_eq!(exec["ok"], true, "{exec}");
}

/// `operator.pairing` lists and decides devices and nothing else; running a command on a node
/// needs `operator.admin`, other node commands `operator.write` (OpenClaw's rules).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn devices_need_the_pairing_scope_and_node_runs_the_admin_scope() {
    let gw = Gateway::start("", vec![]).await;
    let connect = |scopes: Value| {
        let gw = &gw;
        async move {
            let mut c = Client::open(gw).await;
            c.recv().await.unwrap();
            let mut params = connect_params(TOKEN);
            params["scopes"] = scopes;
            assert_eq!(c.request("connect", params).await["ok"], true);
            c
        }
    };
    let mut pairing = connect(json!(["operator.pairing"])).await;
    let list = pairing.request("device.pair.list", json!({})).await;
    assert_eq!(list["payload"]["pending"], json!([]), "{list}");
    let health = pairing.request("status", json!({})).await;
    assert_eq!(health["error"]["code"], "UNAUTHORIZED", "{health}");
    let mut writer = connect(json!(["operator.write"])).await;
    let run = writer
        .request(
            "node.invoke",
            json!({"node": "x", "command": "system.run", "params": {"command": "help"}}),
        )
        .await;
    assert_eq!(run["error"]["code"], "FORBIDDEN", "{run}");
    assert!(
        run["error"]["message"]
            .as_str()
            .unwrap()
            .contains("operator.admin")
    );
    // Past the scope check, the node itself is looked up.
    let other = writer
        .request(
            "node.invoke",
            json!({"node": "x", "command": "device.info"}),
        )
        .await;
    assert_eq!(other["error"]["code"], "NOT_FOUND", "{other}");
}

/// A client that connects while an approval waits (a second device, or the web UI back after
/// a restart) is shown it, and can answer it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_waiting_is_shown_to_a_client_that_connects_later() {
    let gw = Gateway::start(
        "[permissions]\ncalendar = \"read-write\"\n",
        vec![
            Step::call("c1", "terminal_exec", json!({"command": CREATE})),
            Step::text("Booked it."),
        ],
    )
    .await;
    let (mut first, _) = Client::connect(&gw, TOKEN).await;
    first
        .request("chat.send", json!({"message": "book the dentist"}))
        .await;
    let asked = first
        .event(|e| e["event"] == "exec.approval.requested")
        .await;
    let (mut later, _) = Client::connect(&gw, TOKEN).await;
    let shown = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        later.event(|e| e["event"] == "exec.approval.requested"),
    )
    .await
    .expect("the waiting approval shown to the later client");
    assert_eq!(
        shown["payload"]["approvalId"],
        asked["payload"]["approvalId"]
    );
    assert_eq!(shown["payload"]["summary"], CREATE);
    let resolved = later
        .request(
            "exec.approval.resolve",
            json!({"approvalId": shown["payload"]["approvalId"], "decision": "allow-once"}),
        )
        .await;
    assert_eq!(resolved["ok"], true, "{resolved}");
    let fin = first
        .event(|e| e["event"] == "chat" && e["payload"]["state"] == "final")
        .await;
    assert_eq!(fin["payload"]["text"], "Booked it.");
}
