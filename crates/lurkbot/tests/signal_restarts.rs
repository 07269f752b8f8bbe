//! Signal across a SIGKILL (ARCHITECTURE.md §6.1.1, §6.3): a message read from signal-cli's
//! stream — recorded — whose turn is killed during its model call is answered once after the
//! restart, and Signal delivering the same envelope again to the new process changes nothing.

use std::sync::Arc;
use std::time::Duration;

use lurkbot_llm::fake::{FakeProvider, Gate, Step};
use lurkbot_test_support::signal_server::SignalServer;

use crate::nothing_lost::{append_config, kill, model_env, start_with, until};
use crate::util::Test;

const ACCOUNT: &str = "+15550001111";
const OWNER: &str = "+4915550001";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_message_killed_during_its_model_call_is_answered_once() {
    let server = Arc::new(SignalServer::start(ACCOUNT));
    server.register(OWNER);
    let t = Test::init();
    append_config(
        &t,
        &format!(
            "[channels.signal]\naccount = \"{ACCOUNT}\"\nbase_url = \"{}\"\nallow_from = [\"{OWNER}\"]",
            server.url()
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
    let timestamp = server.user_writes(
        OWNER,
        "6a1f0e3b-0c4d-4e5f-8a9b-112233445566",
        "Ada",
        "still with me?",
    );
    until("the model call", || fake.requests().len() == 1).await;
    kill(gw);

    // The new process reads the stream again; Signal serves the same envelope once more.
    assert!(server.deliver_again(timestamp));
    let gw = start_with(&t, &env);
    let waiting = server.clone();
    let sent =
        tokio::task::spawn_blocking(move || waiting.wait_calls("send", 1, Duration::from_secs(60)))
            .await
            .unwrap();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].params["message"], "Answered once after the kill.");
    assert_eq!(sent[0].params["quoteTimestamp"], timestamp);
    let (status, stderr) = tokio::task::spawn_blocking(move || gw.stop())
        .await
        .unwrap();
    assert_eq!(status, 0, "{stderr}");
    let sends = server
        .calls()
        .into_iter()
        .filter(|c| c.method == "send")
        .count();
    assert_eq!(sends, 1, "one answer");
    assert_eq!(fake.requests().len(), 2, "one call cut, one that answered");
}
