//! Approvals against the scripted provider and the real executor: the run pauses while a call
//! waits (no further model request), deny becomes a tool error and nothing runs, allow-once
//! runs once, allow-always is remembered across agents, and `[approvals] tools` gates a tool.

use std::sync::Arc;
use std::time::Duration;

use lurkbot_agent::{APPROVALS_FILE, DecisionFuture};
use lurkbot_agent::{AgentEvent, ApprovalRequest, Approver, Decision};
use lurkbot_core::SessionKey;
use lurkbot_llm::fake::Step;
use serde_json::json;
use tokio::sync::{mpsc, oneshot};

use crate::common::{agent, setup};

type Pending = (ApprovalRequest, oneshot::Sender<Decision>);

/// The human, as the gateway will attach one: requests go out on a channel, decisions come back.
struct ChannelApprover(mpsc::UnboundedSender<Pending>);

impl Approver for ChannelApprover {
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> DecisionFuture<'a> {
        Box::pin(async move {
            let (tx, rx) = oneshot::channel();
            if self.0.send((request.clone(), tx)).is_err() {
                return Decision::Deny;
            }
            rx.await.unwrap_or(Decision::Deny)
        })
    }
}

const CREATE: &str = "cal create-event --calendar-id 1 --title Dentist --start 2026-11-24T09:00:00Z --end 2026-11-24T09:30:00Z --confirm";
const CONFIG: &str = "[permissions]\ncalendar = \"read-write\"\n";

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_pauses_and_deny_becomes_a_tool_error() {
    let s = setup(vec![
        Step::call("c1", "terminal_exec", json!({"command": CREATE})),
        Step::text("Understood, I will not create it."),
    ])
    .await;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut a = agent(&s, "openai/m", CONFIG).with_approver(Arc::new(ChannelApprover(tx)));
    let mut events = Vec::new();
    let key = SessionKey::main();
    let mut on_event = |e| events.push(e);
    let turn = a.turn(&key, "book the dentist", &mut on_event);
    let human = async {
        let (request, answer) = rx.recv().await.unwrap();
        assert_eq!(request.tool, "terminal_exec");
        assert_eq!(request.summary, CREATE);
        assert_eq!(request.key, "terminal_exec:cal create-event");
        assert_eq!(request.session, "agent:main:main");
        // Paused: the model is not asked again while the decision is open.
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert_eq!(s.fake.requests().len(), 1);
        answer.send(Decision::Deny).unwrap();
    };
    let (outcome, ()) = tokio::join!(turn, human);
    let outcome = outcome.unwrap();
    assert_eq!(outcome.text, "Understood, I will not create it.");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::ApprovalPending(r) if r.id == "c1"))
    );
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::ApprovalResolved {
            decision: Decision::Deny,
            ..
        }
    )));
    let requests = s.fake.requests();
    let result = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(result.contains("denied"), "{result}");
    assert_eq!(events_in_calendar(&s.home), 0, "a denied call must not run");
    assert!(!s.home.join(APPROVALS_FILE).exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_once_runs_and_allow_always_is_remembered() {
    let delete = "cal delete-event --id 1 --confirm";
    let s = setup(vec![
        Step::call("c1", "terminal_exec", json!({"command": CREATE})),
        Step::call("c2", "terminal_exec", json!({"command": CREATE})),
        Step::call("c3", "terminal_exec", json!({"command": CREATE})),
        Step::call("c4", "terminal_exec", json!({"command": delete})),
        Step::text("done"),
    ])
    .await;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut a = agent(&s, "openai/m", CONFIG).with_approver(Arc::new(ChannelApprover(tx)));
    let mut asked = Vec::new();
    let key = SessionKey::main();
    let mut ignore = |_| {};
    let turn = a.turn(&key, "book three", &mut ignore);
    let human = async {
        // c1: once; c2: always; c3 is not asked; c4 (another subcommand) is asked → deny.
        for decision in [Decision::AllowOnce, Decision::AllowAlways, Decision::Deny] {
            let (request, answer) = rx.recv().await.unwrap();
            asked.push(request.id.clone());
            answer.send(decision).unwrap();
        }
    };
    let (outcome, ()) = tokio::join!(turn, human);
    assert_eq!(outcome.unwrap().text, "done");
    assert_eq!(asked, ["c1", "c2", "c4"]);
    assert_eq!(events_in_calendar(&s.home), 3);
    let saved: serde_json::Value =
        serde_json::from_slice(&std::fs::read(s.home.join(APPROVALS_FILE)).unwrap()).unwrap();
    assert_eq!(saved["allow"], json!(["terminal_exec:cal create-event"]));

    // A new agent (a new process) reads the remembered decision.
    s.fake.push(vec![
        Step::call("c5", "terminal_exec", json!({"command": CREATE})),
        Step::text("ok"),
    ]);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut b = agent(&s, "openai/m", CONFIG).with_approver(Arc::new(ChannelApprover(tx)));
    b.turn(&SessionKey::main(), "one more", &mut |_| {})
        .await
        .unwrap();
    assert!(rx.try_recv().is_err(), "allow-always must not ask again");
    assert_eq!(events_in_calendar(&s.home), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_tools_wait_and_without_a_human_they_are_denied() {
    let s = setup(vec![
        Step::call(
            "w1",
            "write",
            json!({"path": "workspace/notes.md", "content": "hi"}),
        ),
        Step::text("could not write"),
    ])
    .await;
    // No approver attached: nobody can approve, so the call is denied.
    let config = "[approvals]\ntools = [\"write\"]\n";
    let mut a = agent(&s, "anthropic/m", config);
    let mut events = Vec::new();
    let out = a
        .turn(&SessionKey::main(), "note hi", &mut |e| events.push(e))
        .await
        .unwrap();
    assert_eq!(out.text, "could not write");
    assert!(!s.home.join("workspace/notes.md").exists());
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::ApprovalPending(r) if r.key == "write"))
    );
    // With approvals off for --confirm, the calendar write runs without asking.
    s.fake.push(vec![
        Step::call("c1", "terminal_exec", json!({"command": CREATE})),
        Step::text("booked"),
    ]);
    let mut b = agent(
        &s,
        "anthropic/m",
        &format!("{CONFIG}[approvals]\nconfirm = false\n"),
    );
    b.turn(&SessionKey::main(), "book", &mut |_| {})
        .await
        .unwrap();
    assert_eq!(events_in_calendar(&s.home), 1);
}
