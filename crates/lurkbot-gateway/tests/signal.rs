//! Signal through signal-cli's HTTP daemon, against a daemon written from signal-cli's
//! documentation and source (`lurkbot_test_support::signal_server`; Signal's service cannot run
//! here): a message answered with its quote, Signal's text styles, typing and a read receipt;
//! the same message delivered again answered once; a stranger given a pairing code and the
//! model never called; a group answered only when the bot is mentioned — by number or by its
//! ACI — or quoted; a picture in through `getAttachment` reaching the model, a picture out as
//! an attachment; and `channels.status` showing the channel.

use std::sync::Arc;
use std::time::Duration;

use lurkbot_llm::fake::Step;
use lurkbot_test_support::signal_server::{Call, OWN_UUID, SignalServer};
use serde_json::json;

use crate::common::{Client, Gateway, TOKEN, last_user_message, text_and_image};

const ACCOUNT: &str = "+15550001111";
const OWNER: &str = "+4915550001";
const OWNER_UUID: &str = "6a1f0e3b-0c4d-4e5f-8a9b-112233445566";
const WAIT: Duration = Duration::from_secs(30);

async fn calls(server: &Arc<SignalServer>, method: &'static str, n: usize) -> Vec<Call> {
    let server = server.clone();
    tokio::task::spawn_blocking(move || server.wait_calls(method, n, WAIT))
        .await
        .unwrap()
}

async fn gateway(server: &SignalServer, extra: &str, steps: Vec<Step>) -> Gateway {
    Gateway::start(
        &format!(
            "[channels.signal]\naccount = \"{ACCOUNT}\"\nbase_url = \"{}\"\nallow_from = [\"{OWNER}\"]\n{extra}",
            server.url()
        ),
        steps,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_message_is_answered_once_quoted_styled_and_marked_read() {
    let server = Arc::new(SignalServer::start(ACCOUNT));
    server.register(OWNER);
    server.register("+4470000000");
    let gw = gateway(
        &server,
        "",
        vec![
            Step::text("**Done**, and ~~nothing~~ *else*"),
            Step::text("Second answer."),
        ],
    )
    .await;
    // Typing is not a message; then the owner writes.
    server.user_types(OWNER, OWNER_UUID);
    let first = server.user_writes(OWNER, OWNER_UUID, "Ada", "status?");
    let sent = calls(&server, "send", 1).await;
    assert_eq!(sent.len(), 1, "{sent:?}");
    let reply = &sent[0].params;
    assert_eq!(reply["recipient"], json!([OWNER]), "{reply}");
    assert_eq!(reply["account"], ACCOUNT);
    assert_eq!(reply["message"], "Done, and nothing else");
    assert_eq!(
        reply["textStyle"],
        json!(["0:4:BOLD", "10:7:STRIKETHROUGH", "18:4:ITALIC"])
    );
    assert_eq!(reply["quoteTimestamp"], first, "{reply}");
    assert_eq!(reply["quoteAuthor"], OWNER);
    let typing = calls(&server, "sendTyping", 1).await;
    assert_eq!(typing[0].params["recipient"], json!([OWNER]));
    let read = calls(&server, "sendReceipt", 1).await;
    assert_eq!(read[0].params["targetTimestamp"], json!([first]));
    assert_eq!(read[0].params["type"], "read");

    // Signal delivers it again (a reconnect): not answered twice. A stranger: a pairing code,
    // the model never called. The next message is answered.
    assert!(server.deliver_again(first));
    server.user_writes(
        "+4470000000",
        "7b2e0000-0000-4000-8000-000000000002",
        "Eve",
        "hi",
    );
    let second = server.user_writes(OWNER, OWNER_UUID, "Ada", "and now?");
    let sent = calls(&server, "send", 3).await;
    assert_eq!(sent.len(), 3, "{sent:?}");
    // The two are answered side by side: found by recipient, not by order.
    let to = |who: &str| {
        sent[1..]
            .iter()
            .find(|c| c.params["recipient"] == json!([who]))
            .map(|c| c.params.clone())
            .unwrap_or_else(|| panic!("nothing sent to {who}: {sent:?}"))
    };
    let to_stranger = to("+4470000000");
    assert!(
        to_stranger["message"]
            .as_str()
            .unwrap()
            .contains("pairing code"),
        "{to_stranger}"
    );
    let to_owner = to(OWNER);
    assert_eq!(to_owner["message"], "Second answer.");
    assert_eq!(to_owner["quoteTimestamp"], second);
    assert_eq!(
        gw.fake.requests().len(),
        2,
        "the redelivery or the stranger reached the model"
    );
    let asked = last_user_message(&gw.fake.requests()[0].body);
    assert!(asked.to_string().contains("status?"), "{asked}");

    let (mut c, _) = Client::connect(&gw, TOKEN).await;
    let status = c.request("channels.status", json!({})).await["payload"].clone();
    let channel = &status["channels"][0];
    assert_eq!(channel["name"], "signal", "{status}");
    assert_eq!(channel["state"], "connected", "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_group_is_answered_only_when_the_bot_is_mentioned_by_number_or_aci() {
    // A group id in standard base64, with the `/` and `+` a session key cannot hold.
    const GROUP: &str = "Zm9v/YmFy+Z3JvdXA=";
    let server = Arc::new(SignalServer::start(ACCOUNT));
    server.register(OWNER);
    server.add_group(GROUP);
    let gw = gateway(
        &server,
        "",
        vec![Step::text("By ACI."), Step::text("By number.")],
    )
    .await;
    let in_group = |text: &str, mentions: serde_json::Value| {
        json!({"message": text, "mentions": mentions,
            "groupInfo": {"groupId": GROUP, "groupName": "Family", "revision": 3, "type": "DELIVER"}})
    };
    server.user_sends(
        OWNER,
        OWNER_UUID,
        "Ada",
        in_group("nobody asked you", json!([])),
    );
    server.user_sends(
        OWNER,
        OWNER_UUID,
        "Ada",
        in_group(
            "\u{FFFC} what time is it?",
            json!([{"uuid": OWN_UUID, "start": 0, "length": 1}]),
        ),
    );
    let sent = calls(&server, "send", 1).await;
    assert_eq!(sent[0].params["groupId"], json!(GROUP), "{:?}", sent[0]);
    assert_eq!(sent[0].params["message"], "By ACI.");
    server.user_sends(
        OWNER,
        OWNER_UUID,
        "Ada",
        in_group(
            "\u{FFFC} and the date?",
            json!([{"number": ACCOUNT, "start": 0, "length": 1}]),
        ),
    );
    let sent = calls(&server, "send", 2).await;
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[1].params["message"], "By number.");
    let requests = gw.fake.requests();
    assert_eq!(
        requests.len(),
        2,
        "the unmentioned message reached the model"
    );
    let asked = last_user_message(&requests[0].body).to_string();
    assert!(asked.contains("what time is it?"), "{asked}");
    assert!(!asked.contains("nobody asked you"), "{asked}");
}

/// A small PNG made by Pillow (the classic tool).
fn png(path: &std::path::Path) {
    let script = "import sys\nfrom PIL import Image\nImage.new('RGB', (40, 30), (20, 180, 40)).save(sys.argv[1], 'PNG')\n";
    lurkbot_test_support::venv::run_python(["-c", script, path.to_str().unwrap()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_picture_comes_in_through_get_attachment_and_one_goes_out_as_an_attachment() {
    let server = Arc::new(SignalServer::start(ACCOUNT));
    server.register(OWNER);
    let gw = gateway(
        &server,
        "fetch_media = true\n",
        vec![Step::text(
            "A green picture; here is mine.\nMEDIA: ./workspace/out.png",
        )],
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    png(&dir.path().join("in.png"));
    server.add_attachment("att-7", std::fs::read(dir.path().join("in.png")).unwrap());
    png(&gw.home.join("workspace/out.png"));
    server.user_sends(
        OWNER,
        OWNER_UUID,
        "Ada",
        json!({"message": "what colour?", "attachments": [{"contentType": "image/png",
            "filename": "in.png", "id": "att-7", "size": 100}]}),
    );
    let sent = calls(&server, "send", 2).await;
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[0].params["message"], "A green picture; here is mine.");
    let attachment = sent[1].params["attachment"].as_str().unwrap();
    assert!(
        attachment.starts_with("data:image/png;filename=out.png;base64,"),
        "{attachment:.60}"
    );
    let user = last_user_message(&gw.fake.requests()[0].body);
    let (text, url) = text_and_image(&user);
    assert!(text.contains("what colour?"), "{user}");
    assert!(url.starts_with("data:image/"), "{user}");
    let fetched = calls(&server, "getAttachment", 1).await;
    assert_eq!(fetched[0].params["id"], "att-7");
}

fn envelope(timestamp: u64, text: &str) -> serde_json::Value {
    json!({"source": OWNER, "sourceNumber": OWNER, "sourceUuid": OWNER_UUID, "sourceName": "Ada",
        "sourceDevice": 1, "timestamp": timestamp,
        "dataMessage": {"timestamp": timestamp, "message": text}})
}

/// `[channels.signal] cli`: LurkBot starts signal-cli with the documented arguments, answers
/// through it, starts it again when it dies (SIGKILL), and stops it with the gateway.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lurkbot_starts_signal_cli_starts_it_again_when_it_dies_and_stops_it() {
    use lurkbot_test_support::signal_cli_fake::FakeSignalCli;
    let dir = tempfile::tempdir().unwrap();
    let cli = Arc::new(FakeSignalCli::install(dir.path(), "0.14.6"));
    let mut gw = Gateway::start(
        &format!(
            "[channels.signal]\naccount = \"{ACCOUNT}\"\ncli = \"{}\"\nallow_from = [\"{OWNER}\"]\n",
            cli.program().display()
        ),
        vec![Step::text("First."), Step::text("After the restart.")],
    )
    .await;
    let blocking =
        |f: Box<dyn FnOnce() -> Vec<serde_json::Value> + Send>| tokio::task::spawn_blocking(f);
    let starts = {
        let cli = cli.clone();
        blocking(Box::new(move || cli.wait_starts(1, WAIT)))
            .await
            .unwrap()
    };
    let args: Vec<&str> = starts[0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    assert_eq!(args[..4], ["-a", ACCOUNT, "daemon", "--http"], "{args:?}");
    assert!(args[4].starts_with("127.0.0.1:"), "{args:?}");
    assert_eq!(
        args[5..],
        ["--receive-mode", "on-connection", "--no-receive-stdout"]
    );

    cli.deliver("m1", &envelope(1_764_300_001_000, "hello"));
    let sent = {
        let cli = cli.clone();
        blocking(Box::new(move || cli.wait_calls("send", 1, WAIT)))
            .await
            .unwrap()
    };
    assert_eq!(sent[0]["params"]["message"], "First.", "{sent:?}");

    // The daemon dies: started again, and the next message is answered through the new one.
    let first = starts[0]["pid"].as_i64().unwrap();
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &first.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let starts = {
        let cli = cli.clone();
        blocking(Box::new(move || cli.wait_starts(2, WAIT)))
            .await
            .unwrap()
    };
    assert_eq!(starts.len(), 2, "not started again");
    cli.deliver("m2", &envelope(1_764_300_002_000, "still there?"));
    let sent = {
        let cli = cli.clone();
        blocking(Box::new(move || cli.wait_calls("send", 2, WAIT)))
            .await
            .unwrap()
    };
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[1]["params"]["message"], "After the restart.");
    let second = starts[1]["pid"].as_i64().unwrap();
    let recorded = std::fs::read_to_string(gw.home.join("channels/signal/daemon.pid")).unwrap();
    assert_eq!(
        recorded.trim(),
        second.to_string(),
        "the pid file names the running daemon"
    );

    // The gateway stops: so does signal-cli.
    gw.stop().await;
    let proc = format!("/proc/{second}");
    let deadline = std::time::Instant::now() + WAIT;
    while std::path::Path::new(&proc).exists() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !std::path::Path::new(&proc).exists(),
        "signal-cli outlived the gateway"
    );
}
