//! An approval across a SIGKILL: a call waiting for the owner's approval when the gateway is
//! killed is asked again after the restart (the journal says the call waited), runs once when
//! approved, and the turn ends with one answer and no model call repeated.

use lurkbot_llm::fake::{FakeProvider, Step};
use serde_json::{Value, json};

use crate::nodes::{Ws, client};
use crate::nothing_lost::{kill, model_env, start_with, until};
use crate::util::Test;

const CREATE: &str = "cal create-event --calendar-id 1 --title Dentist --start 2026-11-24T09:00:00Z --end 2026-11-24T09:30:00Z --confirm";

/// The next approval asked of this client (at most 60 s): `(id, what it runs)`.
async fn asked(ws: &mut Ws, seen: &mut Vec<Value>) -> (String, String) {
    let wait = async {
        loop {
            let frame = match seen.pop() {
                Some(f) => f,
                None => ws.frame().await,
            };
            if frame["event"] == "exec.approval.requested" {
                let p = &frame["payload"];
                return (
                    p["approvalId"].as_str().unwrap().to_string(),
                    p["summary"].to_string(),
                );
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(60), wait)
        .await
        .expect("an approval asked")
}

fn events(t: &Test) -> usize {
    t.exec_json("cal list-events --from 2026-11-01T00:00:00Z --to 2026-12-01T00:00:00Z")["result"]
        ["events"]
        .as_array()
        .map_or(0, Vec::len)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_cut_by_a_kill_is_asked_again_and_runs_once() {
    let t = Test::init();
    let set = t.run(&["config", "set", "permissions.calendar", "read-write"]);
    assert_eq!(set.status, 0, "{}", set.stderr);
    let fake = FakeProvider::start(vec![
        Step::call("c1", "terminal_exec", json!({"command": CREATE})),
        Step::text("Booked."),
    ])
    .await;
    fake.record(true);
    let env = model_env(&fake);
    let token = t.gateway_token();
    let gw = start_with(&t, &env);
    let mut ws = client(&gw.ws, &token).await;
    let mut seen = Vec::new();
    let sent = ws
        .call(
            "chat.send",
            json!({"sessionKey": "agent:main:main", "message": "book the dentist"}),
            &mut seen,
        )
        .await;
    assert_eq!(sent["ok"], true, "{sent}");
    let (_, summary) = asked(&mut ws, &mut seen).await;
    assert!(summary.contains("Dentist"), "{summary}");
    drop(ws);
    kill(gw);
    assert_eq!(events(&t), 0, "nothing ran before the approval");

    // The resumed turn asks again; a client back after the restart is shown it.
    let gw = start_with(&t, &env);
    // No client yet: the gateway waits for one to come back instead of denying.
    until("the approval waiting for a client", || {
        gw.stderr().contains("waits for a client to come back")
    })
    .await;
    let mut ws = client(&gw.ws, &token).await;
    let mut seen = Vec::new();
    let (id, summary) = asked(&mut ws, &mut seen).await;
    assert!(summary.contains("Dentist"), "asked again: {summary}");
    let resolved = ws
        .call(
            "exec.approval.resolve",
            json!({"approvalId": id, "decision": "allow-once"}),
            &mut seen,
        )
        .await;
    assert_eq!(resolved["ok"], true, "{resolved}");
    until("the answer", || fake.requests().len() == 2).await;
    drop(ws);
    let (status, stderr) = tokio::task::spawn_blocking(move || gw.stop())
        .await
        .unwrap();
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(events(&t), 1, "run once, after the approval");
    let last = fake.requests()[1].body.to_string();
    assert!(!last.contains("interrupted"), "{last}");
}
