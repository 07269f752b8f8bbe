//! What the gateway keeps between turns is bounded (ARCHITECTURE.md §9): beyond the 32 most
//! recently used sessions an idle session gives back its agent, and its next turn is made
//! again from its transcript with nothing lost.

use lurkbot_llm::fake::Step;
use serde_json::json;

use crate::common::{Client, Gateway, TOKEN};

const SESSIONS: usize = 40;

async fn turn(c: &mut Client, session: &str, message: &str) {
    let started = c
        .request(
            "chat.send",
            json!({"sessionKey": session, "message": message}),
        )
        .await;
    assert_eq!(started["ok"], true, "{started}");
    let run = started["payload"]["runId"].as_str().unwrap().to_string();
    let end = c
        .request("agent.wait", json!({"runId": run, "timeoutMs": 20_000}))
        .await;
    assert_eq!(end["payload"]["status"], "ok", "{end}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sessions_give_back_their_agents_and_lose_nothing() {
    let steps = (0..=SESSIONS)
        .map(|i| Step::text(&format!("answer {i}")))
        .collect();
    let gw = Gateway::start("", steps).await;
    let (mut c, _) = Client::connect(&gw, TOKEN).await;
    for i in 0..SESSIONS {
        turn(
            &mut c,
            &format!("agent:main:dm:bench:s{i}"),
            &format!("hello {i}"),
        )
        .await;
    }
    let status = c.request("status", json!({})).await;
    let retained = &status["payload"]["retained"];
    assert_eq!(retained["sessionSlots"], SESSIONS, "{retained}");
    assert_eq!(retained["agentsHeldMax"], 32, "{retained}");
    assert_eq!(retained["agentsHeld"], 32, "{retained}");
    assert_eq!(retained["runRecords"], SESSIONS, "{retained}");
    assert_eq!(retained["hubListeners"], 1, "{retained}");

    // The least recently used session's agent was given back: its next turn still carries its
    // history (read again from the transcript).
    turn(&mut c, "agent:main:dm:bench:s0", "and again").await;
    let requests = gw.fake.requests();
    let last = requests.last().unwrap().body.to_string();
    assert!(
        last.contains("hello 0") && last.contains("answer 0") && last.contains("and again"),
        "{last}"
    );
}
