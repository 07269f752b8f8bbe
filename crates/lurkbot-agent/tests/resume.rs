//! Resuming a turn (ARCHITECTURE.md §6.3) from the state a kill leaves — the transcript as
//! written and the journal's step and call in flight — against the scripted provider and the
//! real executor: a call that waited for a human's approval is asked again and runs once
//! approved; a call that was running and may have acted is not run again, and the model is told.

use std::sync::Arc;

use lurkbot_agent::journal::Journal;
use lurkbot_agent::{ApprovalRequest, Approver, Decision, DecisionFuture, INTERRUPTED_BY_RESTART};
use lurkbot_core::SessionKey;
use lurkbot_llm::fake::Step;
use lurkbot_state::{NewTurn, Store};
use serde_json::json;
use tokio::sync::mpsc;

use crate::common::{agent, setup};

const CREATE: &str = "cal create-event --calendar-id 1 --title Dentist --start 2026-11-24T09:00:00Z --end 2026-11-24T09:30:00Z --confirm";
const CONFIG: &str = "[permissions]\ncalendar = \"read-write\"\n";

/// A human who sees each request and answers `decision` (`None`: never answers, as when the
/// gateway dies while the request is open).
struct Human(mpsc::UnboundedSender<ApprovalRequest>, Option<Decision>);

impl Approver for Human {
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> DecisionFuture<'a> {
        Box::pin(async move {
            let _ = self.0.send(request.clone());
            match self.1 {
                Some(decision) => decision,
                None => std::future::pending().await,
            }
        })
    }
}

fn events_in_calendar(home: &lurkbot_core::Home) -> usize {
    let exec = lurkbot_term::TerminalExec::new(home.clone(), lurkbot_term::default_registry());
    let runtime = tokio::runtime::Handle::current();
    let envelope = tokio::task::block_in_place(|| {
        runtime.block_on(exec.run(lurkbot_term::ExecRequest::new(
            "cal list-events --from 2026-11-01T00:00:00Z --to 2026-12-01T00:00:00Z",
        )))
    });
    envelope.result["events"]
        .as_array()
        .map(Vec::len)
        .unwrap_or_default()
}

/// Runs a journalled turn whose call waits for an approval nobody gives, and stops it there
/// (what a kill leaves); the store.
async fn cut_during_the_approval(s: &crate::common::Setup) -> Store {
    let store = Store::open(&s.home).unwrap();
    store
        .admit(&NewTurn {
            id: "run_1".into(),
            source: None,
            session: "agent:main:main".into(),
            origin: json!({}),
            message: "book the dentist".into(),
            options: json!({}),
        })
        .unwrap();
    store.begin("run_1").unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut first = agent(s, "openai/m", CONFIG).with_approver(Arc::new(Human(tx, None)));
    first.set_journal(Some(Journal::new(store.clone(), "run_1")));
    let turn = tokio::spawn(async move {
        let key = SessionKey::main();
        let _ = first.turn(&key, "book the dentist", &mut |_| {}).await;
    });
    let asked = rx.recv().await.unwrap();
    assert_eq!(asked.summary, CREATE);
    turn.abort();
    let _ = turn.await;
    store
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_waiting_for_an_approval_is_asked_again_and_runs_once() {
    let s = setup(vec![
        Step::call("c1", "terminal_exec", json!({"command": CREATE})),
        Step::text("Booked."),
    ])
    .await;
    let store = cut_during_the_approval(&s).await;
    let cut = store.turn("run_1").unwrap().unwrap();
    assert_eq!(cut.tool.as_deref(), Some("approval c1 terminal_exec"));
    assert!(cut.base.is_some());
    assert_eq!(events_in_calendar(&s.home), 0);

    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut second =
        agent(&s, "openai/m", CONFIG).with_approver(Arc::new(Human(tx, Some(Decision::AllowOnce))));
    second.set_journal(Some(Journal::new(store.clone(), "run_1")));
    let outcome = second
        .resume(
            &SessionKey::main(),
            "book the dentist",
            cut.base,
            cut.tool.as_deref(),
            &mut |_| {},
        )
        .await
        .unwrap();
    assert_eq!(rx.recv().await.unwrap().summary, CREATE, "asked again");
    assert_eq!(outcome.text, "Booked.");
    assert_eq!(
        events_in_calendar(&s.home),
        1,
        "run once, after the approval"
    );
    assert_eq!(
        s.fake.requests().len(),
        2,
        "the cut call was not asked for again"
    );
    let last = s.fake.requests()[1].body.to_string();
    assert!(!last.contains("interrupted"), "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_was_running_is_not_run_again_and_the_model_is_told() {
    let s = setup(vec![
        Step::call("c1", "terminal_exec", json!({"command": CREATE})),
        Step::text("I could not tell whether it was booked; let me check."),
    ])
    .await;
    let store = cut_during_the_approval(&s).await;
    // Approved, and running, when the gateway died: the journal says so.
    store
        .set_step("run_1", 1, Some("run c1 terminal_exec"))
        .unwrap();
    let cut = store.turn("run_1").unwrap().unwrap();

    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut second =
        agent(&s, "openai/m", CONFIG).with_approver(Arc::new(Human(tx, Some(Decision::AllowOnce))));
    second.set_journal(Some(Journal::new(store.clone(), "run_1")));
    let outcome = second
        .resume(
            &SessionKey::main(),
            "book the dentist",
            cut.base,
            cut.tool.as_deref(),
            &mut |_| {},
        )
        .await
        .unwrap();
    assert!(rx.try_recv().is_err(), "nothing asked: nothing run");
    assert_eq!(events_in_calendar(&s.home), 0, "not run again");
    assert!(outcome.text.starts_with("I could not tell"));
    let told = s.fake.requests()[1].body.to_string();
    assert!(told.contains(&INTERRUPTED_BY_RESTART[..40]), "{told}");
    // The transcript holds the message once, the call, its interrupted result and the answer.
    let sessions = lurkbot_agent::Sessions::open(&s.home, "main");
    let entry = sessions.get_or_create(&SessionKey::main()).unwrap();
    let history = serde_json::to_string(&sessions.history(&entry.session_id).unwrap()).unwrap();
    assert_eq!(history.matches("book the dentist").count(), 1, "{history}");
}

/// A turn whose end was never recorded (the store was down when it ended) is resumed after
/// later turns of its session ran: it is answered with its own answer, without a model call —
/// never with a later turn's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_resumed_after_later_turns_gets_its_own_answer() {
    let s = setup(vec![
        Step::text("First answer."),
        Step::text("Second answer."),
    ])
    .await;
    let store = Store::open(&s.home).unwrap();
    store
        .admit(&NewTurn {
            id: "run_1".into(),
            source: Some("api:key-1".into()),
            session: "agent:main:main".into(),
            origin: json!({}),
            message: "first question".into(),
            options: json!({}),
        })
        .unwrap();
    store.begin("run_1").unwrap();
    let key = SessionKey::main();
    let mut first = agent(&s, "openai/m", "");
    first.set_journal(Some(Journal::new(store.clone(), "run_1")));
    let answered = first
        .turn(&key, "first question", &mut |_| {})
        .await
        .unwrap();
    assert_eq!(answered.text, "First answer.");
    // Its end is not recorded; the session goes on.
    let mut later = agent(&s, "openai/m", "");
    let second = later
        .turn(&key, "second question", &mut |_| {})
        .await
        .unwrap();
    assert_eq!(second.text, "Second answer.");

    let cut = store.turn("run_1").unwrap().unwrap();
    let mut resumed = agent(&s, "openai/m", "");
    let outcome = resumed
        .resume(
            &key,
            "first question",
            cut.base,
            cut.tool.as_deref(),
            &mut |_| {},
        )
        .await
        .unwrap();
    assert_eq!(outcome.text, "First answer.", "its own answer");
    assert_eq!(s.fake.requests().len(), 2, "no model call to resume it");
}
