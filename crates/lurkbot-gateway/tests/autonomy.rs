//! Cron jobs and delivery in the gateway: the `cron.*` methods and `cron` events, an announce
//! seen by a WebSocket client as a `chat` event and by a real IRC client (ngircd), missed runs
//! run once at start, and one scheduler per home.

use std::time::Duration;

use lurkbot_agent::cron::CronStore;
use lurkbot_gateway::protocol::Event;
use lurkbot_llm::fake::Step;
use lurkbot_test_support::irc_server::{IrcOptions, IrcPeer, IrcServer};
use serde_json::{Value, json};
use tokio::sync::broadcast;

use crate::common::{Client, Gateway, TOKEN};

fn report_job(channel: &str, to: Option<&str>) -> Value {
    let mut delivery = json!({"mode": "announce", "channel": channel});
    if let Some(to) = to {
        delivery["to"] = json!(to);
    }
    json!({"job": {"name": "report", "schedule": {"kind": "every", "everyMs": 3_600_000},
        "payload": {"kind": "agentTurn", "message": "Write the report"}, "delivery": delivery}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cron_methods_events_and_an_announce_to_webchat() {
    let gw = Gateway::start("", vec![]).await;
    let (mut c, hello) = Client::connect(&gw, TOKEN).await;
    let methods = hello["features"]["methods"].to_string();
    for name in [
        "cron.list",
        "cron.add",
        "cron.update",
        "cron.remove",
        "cron.run",
        "cron.runs",
    ] {
        assert!(methods.contains(name), "{name} advertised");
    }
    let events = hello["features"]["events"].to_string();
    assert!(events.contains("\"cron\"") && events.contains("\"heartbeat\""));

    let added = c.request("cron.add", report_job("webchat", None)).await;
    assert_eq!(added["ok"], true, "{added}");
    let id = added["payload"]["job"]["id"].as_str().unwrap().to_string();
    assert_eq!(added["payload"]["job"]["sessionTarget"], "isolated");
    let e = c.event(|e| e["event"] == "cron").await;
    assert_eq!(e["payload"], json!({"jobId": id, "action": "added"}));

    // Refused: a system event on an isolated session; nothing stored.
    let bad = c
        .request(
            "cron.add",
            json!({"job": {"name": "x", "schedule": {"kind": "every", "everyMs": 60000},
                "sessionTarget": "isolated", "payload": {"kind": "systemEvent", "text": "x"}}}),
        )
        .await;
    assert_eq!(bad["error"]["code"], "INVALID_REQUEST", "{bad}");
    let list = c.request("cron.list", json!({})).await;
    assert_eq!(list["payload"]["jobs"].as_array().unwrap().len(), 1);

    gw.fake.route(
        &format!("session=cron:{id}"),
        vec![Step::text("The report is done.")],
    );
    let ran = c.request("cron.run", json!({"jobId": id})).await;
    assert_eq!(ran["payload"]["ran"], true, "{ran}");
    assert_eq!(ran["payload"]["run"]["status"], "ok");
    // A cron run is a one-off: its session keeps nothing in the host.
    let status = c.request("status", json!({})).await;
    let live = status["payload"]["liveSessions"].to_string();
    assert!(!live.contains(&format!("cron:{id}")), "{live}");
    let started = c
        .event(|e| e["event"] == "cron" && e["payload"]["action"] == "started")
        .await;
    assert_eq!(started["payload"]["jobId"], id.as_str());
    let finished = c
        .event(|e| e["event"] == "cron" && e["payload"]["action"] == "finished")
        .await;
    assert_eq!(finished["payload"]["status"], "ok");
    assert!(finished["payload"]["nextRunAtMs"].as_u64().is_some());
    // The announce reached the web UI's session as a chat message.
    let chat = c
        .event(|e| {
            e["event"] == "chat"
                && e["payload"]["sessionKey"] == "agent:main:main"
                && e["payload"]["state"] == "final"
        })
        .await;
    assert_eq!(chat["payload"]["text"], "The report is done.", "{chat}");
    let history = c
        .request("chat.history", json!({"sessionKey": "agent:main:main"}))
        .await;
    assert!(history.to_string().contains("The report is done."));

    let runs = c.request("cron.runs", json!({"jobId": id})).await;
    assert_eq!(runs["payload"]["runs"].as_array().unwrap().len(), 1);
    let updated = c
        .request(
            "cron.update",
            json!({"jobId": id, "patch": {"enabled": false}}),
        )
        .await;
    assert_eq!(updated["payload"]["job"]["enabled"], false, "{updated}");
    // Refused without a change: a patch that breaks the rules, an unknown run mode.
    let broken = c
        .request(
            "cron.update",
            json!({"jobId": id, "patch": {"sessionTarget": "main"}}),
        )
        .await;
    assert_eq!(broken["error"]["code"], "INVALID_REQUEST", "{broken}");
    let kept = c.request("cron.list", json!({})).await;
    assert_eq!(kept["payload"]["jobs"][0]["sessionTarget"], "isolated");
    let mode = c
        .request("cron.run", json!({"jobId": id, "mode": "soon"}))
        .await;
    assert_eq!(mode["error"]["code"], "INVALID_REQUEST", "{mode}");
    let unknown = c.request("cron.run", json!({"jobId": "cron_nope"})).await;
    assert_eq!(unknown["error"]["code"], "NOT_FOUND");
    let removed = c.request("cron.remove", json!({"jobId": id})).await;
    assert_eq!(removed["ok"], true);
    let e = c
        .event(|e| e["event"] == "cron" && e["payload"]["action"] == "removed")
        .await;
    assert_eq!(e["payload"]["jobId"], id.as_str());
}

/// Marks job `id` as missed for three periods.
fn miss(gw: &Gateway, id: &str) {
    let now = lurkbot_core::now_ms();
    CronStore::open(&gw.home)
        .update(id, move |job| {
            job.state.next_run_at_ms = Some(now - 3 * 3_600_000)
        })
        .unwrap();
}

fn runs(gw: &Gateway, id: &str) -> usize {
    CronStore::open(&gw.home).runs(id).unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missed_runs_run_once_and_one_gateway_per_home_runs_them() {
    let mut first = Gateway::start("", vec![]).await;
    let (mut c, _) = Client::connect(&first, TOKEN).await;
    let added = c.request("cron.add", report_job("webchat", None)).await;
    let id = added["payload"]["job"]["id"].as_str().unwrap().to_string();
    let route = format!("session=cron:{id}");
    first
        .fake
        .route(&route, vec![Step::text("one"), Step::text("two")]);

    // A second gateway on the same home does not get the scheduler.
    let mut second = first.on_same_home().await;
    let (mut c2, _) = Client::connect(&second, TOKEN).await;
    let status = |c: &Value| c["payload"]["scheduler"].clone();
    assert_eq!(
        status(&c.request("cron.status", json!({})).await),
        "running"
    );
    assert_eq!(
        status(&c2.request("cron.status", json!({})).await),
        "standby"
    );
    miss(&first, &id);
    // Waking the second one's scheduler runs nothing; the first runs the job once.
    let woke = c2
        .request(
            "cron.update",
            json!({"jobId": id, "patch": {"name": "report"}}),
        )
        .await;
    assert_eq!(woke["ok"], true, "{woke}");
    let woke = c
        .request(
            "cron.update",
            json!({"jobId": id, "patch": {"name": "report"}}),
        )
        .await;
    assert_eq!(woke["ok"], true);
    let finished = c
        .event(|e| e["event"] == "cron" && e["payload"]["action"] == "finished")
        .await;
    assert_eq!(finished["payload"]["status"], "ok", "{finished}");
    assert_eq!(runs(&first, &id), 1);
    let next = CronStore::open(&first.home).jobs().unwrap()[0]
        .state
        .next_run_at_ms
        .unwrap();
    assert!(
        next > lurkbot_core::now_ms(),
        "the next run is ahead, not a catch-up"
    );
    drop(c2);
    second.stop().await;

    // Down while the job was due three times: the next gateway runs it once at start.
    first.stop().await;
    miss(&first, &id);
    let mut third = first.on_same_home().await;
    let mut events = third.early_events.take().unwrap();
    let finished = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match events.recv().await.map(std::sync::Arc::unwrap_or_clone) {
                Ok(Event::Cron(c)) if c.action == "finished" => break c,
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(e) => panic!("{e}"),
            }
        }
    })
    .await
    .expect("the missed run ran at start");
    assert_eq!(finished.status.as_deref(), Some("ok"), "{finished:?}");
    let job = CronStore::open(&first.home).jobs().unwrap().remove(0);
    assert!(job.state.next_run_at_ms.unwrap() > lurkbot_core::now_ms());
    assert_eq!(runs(&first, &id), 2, "once, not three times");
    third.stop().await;
}

/// `[cron] catch_up = "none"`: what fell due while the gateway was down is logged as skipped
/// and waits for its next time; no model call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missed_runs_are_skipped_when_catch_up_is_none() {
    let mut first = Gateway::start("[cron]\ncatch_up = \"none\"", vec![]).await;
    let (mut c, _) = Client::connect(&first, TOKEN).await;
    let added = c.request("cron.add", report_job("webchat", None)).await;
    let id = added["payload"]["job"]["id"].as_str().unwrap().to_string();
    drop(c);
    first.stop().await;
    miss(&first, &id);
    let mut second = first.on_same_home().await;
    let mut events = second.early_events.take().unwrap();
    let finished = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match events.recv().await.map(std::sync::Arc::unwrap_or_clone) {
                Ok(Event::Cron(c)) if c.action == "finished" => break c,
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(e) => panic!("{e}"),
            }
        }
    })
    .await
    .expect("the missed run reported");
    assert_eq!(finished.status.as_deref(), Some("skipped"), "{finished:?}");
    let job = CronStore::open(&first.home).jobs().unwrap().remove(0);
    assert!(job.enabled);
    assert!(job.state.next_run_at_ms.unwrap() > lurkbot_core::now_ms());
    let runs = CronStore::open(&first.home).runs(&id).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].error.as_deref(), Some(lurkbot_agent::cron::MISSED));
    assert!(first.fake.requests().is_empty(), "no model call");
    second.stop().await;
}

/// Waits for the end of a main-session turn (a cron run's own turn ends on its session).
async fn main_turn_ended(c: &mut Client) {
    c.event(|e| {
        e["event"] == "chat"
            && e["payload"]["state"] == "final"
            && e["payload"]["sessionKey"] == "agent:main:main"
    })
    .await;
}

/// Sends `cron.run` for `id` without waiting for its answer (it waits for an approval).
async fn start_run(c: &mut Client, id: &str) {
    let frame = lurkbot_gateway::protocol::request("run-held", "cron.run", json!({"jobId": id}));
    c.send(&frame).await;
}

/// The `cron.run` answer sent by [`start_run`].
async fn run_answer(c: &mut Client) -> Value {
    loop {
        if let Some(pos) = c.events.iter().position(|f| f["id"] == "run-held") {
            return c.events.remove(pos);
        }
        let frame = c.recv().await.expect("the run's answer");
        c.events.push(frame);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_announce_to_irc_reaches_a_real_irc_client() {
    let server = IrcServer::start(&IrcOptions::default());
    let gw = Gateway::start("", vec![]).await;
    crate::irc::write_irc_env(&gw, server.port, "");
    let mut peer = IrcPeer::connect(server.port, "alice", None);
    let (mut c, _) = Client::connect(&gw, TOKEN).await;
    let added = c
        .request("cron.add", report_job("irc", Some("alice")))
        .await;
    assert_eq!(added["payload"]["job"]["createdBy"], "owner", "{added}");
    let id = added["payload"]["job"]["id"].as_str().unwrap().to_string();
    gw.fake.route(
        &format!("session=cron:{id}"),
        vec![
            Step::text("Backup finished."),
            Step::text("Backup finished."),
        ],
    );
    let ran = c.request("cron.run", json!({"jobId": id})).await;
    assert_eq!(ran["payload"]["run"]["status"], "ok", "{ran}");
    peer.expect(|l| l.contains("PRIVMSG alice :Backup finished."));

    // The model's own message to a nick that is not IRC_CHANNEL waits for a human: denied,
    // nothing is sent and the model is told why.
    gw.fake.route(
        "session=agent:main:main",
        vec![
            Step::call(
                "c1",
                "message",
                json!({"channel": "irc", "to": "alice", "text": "psst from the model"}),
            ),
            Step::text("ok"),
        ],
    );
    let sent = c
        .request("chat.send", json!({"message": "say hi to alice"}))
        .await;
    assert_eq!(sent["ok"], true);
    let asked = c.event(|e| e["event"] == "exec.approval.requested").await;
    assert_eq!(asked["payload"]["tool"], "message", "{asked}");
    assert_eq!(asked["payload"]["key"], "message:irc:alice", "{asked}");
    let approval = asked["payload"]["approvalId"].as_str().unwrap().to_string();
    let denied = c
        .request(
            "exec.approval.resolve",
            json!({"approvalId": approval, "decision": "deny"}),
        )
        .await;
    assert_eq!(denied["ok"], true, "{denied}");
    main_turn_ended(&mut c).await;
    let last = gw.fake.requests().last().unwrap().body.to_string();
    assert!(
        last.contains("held for approval and not approved"),
        "{last}"
    );

    // A job the model made keeps the model's rules when it runs, whoever starts it: its
    // announce to alice is held for approval, and denied it never reaches her.
    gw.fake.route(
        "session=agent:main:main",
        vec![
            Step::call(
                "c2",
                "cron",
                json!({"action": "add", "job": {"name": "leak", "createdBy": "owner",
                    "schedule": {"kind": "every", "everyMs": 3_600_000},
                    "payload": {"kind": "agentTurn", "message": "Read MEMORY.md"},
                    "delivery": {"mode": "announce", "channel": "irc", "to": "alice"}}}),
            ),
            Step::text("scheduled"),
        ],
    );
    c.request("chat.send", json!({"message": "schedule it"}))
        .await;
    main_turn_ended(&mut c).await;
    let jobs = c.request("cron.list", json!({})).await;
    let job = jobs["payload"]["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["name"] == "leak")
        .cloned()
        .unwrap();
    assert_eq!(
        job["createdBy"], "model",
        "the model cannot claim the owner's authority"
    );
    let model_job = job["id"].as_str().unwrap().to_string();
    gw.fake.route(
        &format!("session=cron:{model_job}"),
        vec![Step::text("SECRET MEMORY")],
    );
    start_run(&mut c, &model_job).await;
    let asked = c.event(|e| e["event"] == "exec.approval.requested").await;
    assert_eq!(asked["payload"]["sessionKey"], format!("cron:{model_job}"));
    assert!(
        asked["payload"]["summary"]
            .as_str()
            .unwrap()
            .contains("model asked")
    );
    let approval = asked["payload"]["approvalId"].as_str().unwrap().to_string();
    c.request(
        "exec.approval.resolve",
        json!({"approvalId": approval, "decision": "deny"}),
    )
    .await;
    let ran = run_answer(&mut c).await;
    assert_eq!(ran["payload"]["run"]["status"], "error", "{ran}");
    assert!(
        ran["payload"]["run"]["error"]
            .as_str()
            .unwrap()
            .contains("not approved")
    );
    // The owner's job runs again: the next line alice receives is its announce, not the
    // model's (which was never sent).
    let again = c.request("cron.run", json!({"jobId": id})).await;
    assert_eq!(again["payload"]["run"]["status"], "ok", "{again}");
    let lines = peer.lines_until(|l| l.contains("Backup finished."));
    assert!(
        !lines.iter().any(|l| l.contains("SECRET")),
        "the held announce reached the peer: {lines:?}"
    );

    // An owner's cron.update of the model's job does not make it the owner's; the model's
    // update of the owner's job makes it the model's.
    let kept = c
        .request(
            "cron.update",
            json!({"jobId": model_job, "patch": {"name": "renamed"}}),
        )
        .await;
    assert_eq!(kept["payload"]["job"]["createdBy"], "model", "{kept}");
    gw.fake.route(
        "session=agent:main:main",
        vec![
            Step::call(
                "c3",
                "cron",
                json!({"action": "update", "jobId": id, "patch": {"name": "mine now"}}),
            ),
            Step::text("updated"),
        ],
    );
    c.request("chat.send", json!({"message": "rename the report"}))
        .await;
    main_turn_ended(&mut c).await;
    let jobs = c.request("cron.list", json!({})).await;
    let owners = jobs["payload"]["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["id"] == id.as_str())
        .cloned()
        .unwrap();
    assert_eq!(owners["createdBy"], "model", "{owners}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_runs_the_heartbeat_and_reports_it() {
    let gw = Gateway::start(
        "[heartbeat]\nevery = \"1s\"\ntarget = \"webchat\"\n",
        vec![],
    )
    .await;
    std::fs::write(
        gw.home.join("workspace/HEARTBEAT.md"),
        "- Tell me if the disk is full.\n",
    )
    .unwrap();
    gw.fake.route(
        "session=cron:heartbeat",
        vec![
            Step::text("HEARTBEAT_OK"),
            Step::text("The disk is full."),
            // The third never ends, so the last heartbeat stays the second.
            Step::Stall(String::new()),
        ],
    );
    let (mut c, _) = Client::connect(&gw, TOKEN).await;
    let first = c.event(|e| e["event"] == "heartbeat").await;
    assert_eq!(first["payload"]["status"], "ok-token", "{first}");
    let second = c.event(|e| e["event"] == "heartbeat").await;
    assert_eq!(second["payload"]["status"], "sent", "{second}");
    assert_eq!(second["payload"]["preview"], "The disk is full.");
    // The alert reached the web UI's session; the OK did not.
    let chat = c
        .event(|e| e["event"] == "chat" && e["payload"]["sessionKey"] == "agent:main:main")
        .await;
    assert_eq!(chat["payload"]["text"], "The disk is full.");
    let status = c.request("cron.status", json!({})).await;
    assert_eq!(status["payload"]["heartbeat"]["status"], "sent", "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sub_agents_abort_with_their_parent() {
    let gw = Gateway::start("", vec![]).await;
    gw.fake.route(
        "session=agent:main:main",
        vec![
            Step::call(
                "c1",
                "sessions_spawn",
                json!({"task": "Watch the feeds for a day"}),
            ),
            Step::text("Started a watcher."),
        ],
    );
    gw.fake
        .route("Subagent Context", vec![Step::Stall("watching".into())]);
    let (mut c, _) = Client::connect(&gw, TOKEN).await;
    let sent = c
        .request("chat.send", json!({"message": "watch the feeds"}))
        .await;
    assert_eq!(sent["ok"], true);
    let child_started = c
        .event(|e| {
            e["event"] == "chat"
                && e["payload"]["state"] == "delta"
                && e["payload"]["sessionKey"]
                    .as_str()
                    .unwrap_or("")
                    .starts_with("agent:main:subagent:")
        })
        .await;
    let child = child_started["payload"]["sessionKey"]
        .as_str()
        .unwrap()
        .to_string();
    c.event(|e| {
        e["event"] == "chat"
            && e["payload"]["sessionKey"] == "agent:main:main"
            && e["payload"]["state"] == "final"
    })
    .await;
    let busy = c
        .request(
            "sessions.wait",
            json!({"sessionKey": "agent:main:main", "timeoutMs": 0}),
        )
        .await;
    assert_eq!(busy["payload"]["idle"], false, "the child still works");

    // Aborting the parent's session stops the child and its report.
    c.request("chat.abort", json!({"sessionKey": "agent:main:main"}))
        .await;
    let aborted = c
        .event(|e| e["event"] == "chat" && e["payload"]["state"] == "aborted")
        .await;
    assert_eq!(aborted["payload"]["sessionKey"], child.as_str());
    let idle = c
        .request(
            "sessions.wait",
            json!({"sessionKey": "agent:main:main", "timeoutMs": 5000}),
        )
        .await;
    assert_eq!(idle["payload"]["idle"], true, "{idle}");
    let history = c
        .request("chat.history", json!({"sessionKey": child}))
        .await;
    assert!(history.to_string().contains("cancelled"), "{history}");
    let main = c
        .request("chat.history", json!({"sessionKey": "agent:main:main"}))
        .await;
    assert!(!main.to_string().contains("A background task"), "no report");
    let status = c.request("status", json!({})).await;
    assert!(
        !status["payload"]["liveSessions"]
            .to_string()
            .contains(&child)
    );
}
