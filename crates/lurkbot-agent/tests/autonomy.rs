//! Cron runs, heartbeats, sub-agents, `sessions_send` and `message` through the CLI's
//! runtime, against the scripted provider; every "now" is given (no test waits for a schedule).

use std::sync::Arc;
use std::time::Duration;

use lurkbot_agent::cron::{
    CronJob, CronStore, Delivery, Payload, RunError, RunMode, RunStatus, Schedule, SessionTarget,
    StoreError, WakeMode, run_job, run_job_reporting,
};
use lurkbot_agent::heartbeat::{HeartbeatStatus, run_heartbeat};
use lurkbot_agent::{
    Cleanup, Entry, LocalRuntime, NoHuman, Runtime, Sessions, SpawnArgs, TurnRequest,
    spawn_subagent,
};
use lurkbot_core::{Config, SessionKey};
use lurkbot_llm::Role;
use lurkbot_llm::fake::Step;
use serde_json::json;

use crate::common::{Setup, setup, tool_names};

pub(crate) const MAIN: &str = "session=agent:main:main";
const CHILD: &str = "Subagent Context";
pub(crate) const HEARTBEAT: &str = "session=cron:heartbeat";
/// 2026-03-02T10:00:00Z.
pub(crate) const T0: u64 = 1_772_445_600_000;

/// A runtime over the home, its model the scripted provider; `extra` is appended to
/// config.toml.
pub(crate) fn local(s: &Setup, extra: &str) -> (Arc<LocalRuntime>, Config) {
    let text = format!("[agent]\nmodel = \"openai/m\"\n{extra}");
    std::fs::write(s.home.join("config.toml"), &text).unwrap();
    std::fs::write(
        s.home.join(".env"),
        format!("OPENAI_API_KEY=k\nOPENAI_BASE_URL={}/v1\n", s.fake.url),
    )
    .unwrap();
    let config = Config::parse(std::path::Path::new("config.toml"), &text).unwrap();
    let runtime = LocalRuntime::new(
        s.home.clone(),
        config.clone(),
        Arc::new(NoHuman),
        Arc::new(|_, _| {}),
    );
    (runtime, config)
}

/// A runtime over the home with no model configured (and nobody to approve).
pub(crate) fn without_a_model(s: &Setup) -> Arc<LocalRuntime> {
    std::fs::write(s.home.join("config.toml"), "").unwrap();
    LocalRuntime::new(
        s.home.clone(),
        Config::default(),
        Arc::new(NoHuman),
        Arc::new(|_, _| {}),
    )
}

/// The user and assistant texts of a session, in order.
pub(crate) fn texts(s: &Setup, key: &str) -> Vec<(Role, String)> {
    let key = SessionKey::parse(key).unwrap();
    let sessions = Sessions::open(&s.home, key.agent_id());
    let Some(entry) = sessions.list().unwrap().remove(key.as_str()) else {
        return Vec::new();
    };
    sessions
        .history(&entry.session_id)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e {
            Entry::Message { message, .. } if message.role != Role::Tool => {
                Some((message.role, message.content))
            }
            _ => None,
        })
        .collect()
}

pub(crate) fn job(schedule: Schedule, payload: Payload) -> CronJob {
    let session_target = match payload {
        Payload::SystemEvent { .. } => SessionTarget::Main,
        Payload::AgentTurn { .. } => SessionTarget::Isolated,
    };
    CronJob {
        id: String::new(),
        name: "report".into(),
        enabled: true,
        created_at_ms: 0,
        updated_at_ms: 0,
        schedule,
        session_target,
        wake_mode: WakeMode::Now,
        payload,
        delete_after_run: false,
        created_by: lurkbot_agent::gate::Asker::Owner,
        delivery: Delivery::None,
        state: Default::default(),
    }
}

fn turn(message: &str) -> Payload {
    Payload::AgentTurn {
        message: message.into(),
        model: None,
        thinking: None,
        timeout_seconds: None,
        budget_tokens: None,
    }
}

#[tokio::test]
async fn due_and_forced_runs_missed_runs_once_and_announce_to_webchat() {
    let s = setup(vec![]).await;
    let (runtime, _) = local(&s, "");
    let store = CronStore::open(&s.home);
    let every = Schedule::Every {
        every_ms: 3_600_000,
        anchor_ms: T0,
    };
    let mut report = job(every, turn("Summarise my feeds"));
    report.delivery = Delivery::Announce {
        channel: "webchat".into(),
        to: None,
    };
    let added = store.add(report, T0 - 60_000).unwrap();
    assert_eq!(added.state.next_run_at_ms, Some(T0));
    let id = added.id.clone();

    // Not due a minute before: nothing runs, the refusal says how to force it.
    let early = || T0 - 60_000;
    let refused = run_job(&*runtime, &store, &id, RunMode::Due, &early).await;
    match refused {
        Err(e @ RunError::NotDue { .. }) => assert!(e.to_string().contains("--force"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert!(store.runs(&id).unwrap().is_empty());

    // The gateway was down for three periods: the job is due once, runs once, and its next
    // run is the next whole period after now — not three catch-up runs.
    let late = T0 + 3 * 3_600_000 + 5_000;
    assert_eq!(store.due(late).unwrap().len(), 1);
    s.fake
        .route("session=cron:", vec![Step::text("Three new posts.")]);
    let clock = move || late;
    let done = run_job(&*runtime, &store, &id, RunMode::Due, &clock)
        .await
        .unwrap();
    assert_eq!(done.record.status, RunStatus::Ok, "{:?}", done.record);
    assert_eq!(done.record.session_key, format!("cron:{id}"));
    let after = done.job.unwrap();
    assert_eq!(after.state.next_run_at_ms, Some(T0 + 4 * 3_600_000));
    assert!(store.due(late).unwrap().is_empty());
    assert_eq!(store.runs(&id).unwrap().len(), 1);
    // The isolated session holds the turn; the announce reached the main session.
    assert_eq!(
        texts(&s, &format!("cron:{id}")),
        [
            (Role::User, "Summarise my feeds".to_string()),
            (Role::Assistant, "Three new posts.".to_string())
        ]
    );
    assert_eq!(
        texts(&s, "agent:main:main"),
        [(Role::Assistant, "Three new posts.".to_string())]
    );

    // Forced: runs although not due.
    s.fake
        .route("session=cron:", vec![Step::text("Nothing new.")]);
    let forced = run_job(&*runtime, &store, &id, RunMode::Force, &clock)
        .await
        .unwrap();
    assert_eq!(forced.reply.as_deref(), Some("Nothing new."));
    assert_eq!(store.runs(&id).unwrap().len(), 2);
}

#[tokio::test]
async fn failures_back_off_are_logged_and_a_running_job_is_not_run_twice() {
    let s = setup(vec![]).await;
    // No model: every run fails before any model call.
    let runtime = without_a_model(&s);
    let store = CronStore::open(&s.home);
    let every = Schedule::Every {
        every_ms: 60_000,
        anchor_ms: T0,
    };
    let id = store.add(job(every, turn("x")), T0 - 1).unwrap().id;
    let clock = || T0;
    let failed = run_job(&*runtime, &store, &id, RunMode::Due, &clock)
        .await
        .unwrap();
    assert_eq!(failed.record.status, RunStatus::Error);
    assert!(
        failed
            .record
            .error
            .as_deref()
            .unwrap()
            .contains("no model is configured")
    );
    let state = failed.job.unwrap().state;
    assert_eq!(state.consecutive_errors, 1);
    assert_eq!(
        state.next_run_at_ms,
        Some(T0 + 30_000),
        "first retry in 30 s"
    );

    // While one run holds the job's lock, another is refused and nothing is logged.
    let held = store.lock_job(&id).unwrap();
    let reported = std::sync::atomic::AtomicBool::new(false);
    let hook = || reported.store(true, std::sync::atomic::Ordering::SeqCst);
    let busy = run_job_reporting(&*runtime, &store, &id, RunMode::Force, &clock, &hook).await;
    assert!(matches!(busy, Err(RunError::Store(StoreError::Busy(_)))));
    assert!(
        !reported.load(std::sync::atomic::Ordering::SeqCst),
        "no `started` for a run that did not start"
    );
    drop(held);
    assert_eq!(store.runs(&id).unwrap().len(), 1);
}

#[tokio::test]
async fn heartbeat_statuses_in_the_seed_order() {
    let s = setup(vec![]).await;
    let file = s.home.join("workspace/HEARTBEAT.md");
    let status = |e: &lurkbot_agent::heartbeat::HeartbeatEvent| {
        (e.status, e.reason.clone().unwrap_or_default())
    };

    let (runtime, config) = local(&s, "[heartbeat]\nenabled = false\n");
    let event = run_heartbeat(&*runtime, &s.home, &config, T0).await;
    assert_eq!(
        status(&event),
        (HeartbeatStatus::Skipped, "disabled".into())
    );

    // 10:00 UTC is outside 22:00–08:00 UTC (a window across midnight).
    let night = "[heartbeat.active_hours]\nstart = \"22:00\"\nend = \"08:00\"\ntz = \"UTC\"\n";
    let (runtime, config) = local(&s, night);
    let event = run_heartbeat(&*runtime, &s.home, &config, T0).await;
    assert_eq!(
        status(&event),
        (HeartbeatStatus::Skipped, "quiet-hours".into())
    );
    let event = run_heartbeat(&*runtime, &s.home, &config, T0 + 13 * 3_600_000).await;
    assert_eq!(
        status(&event),
        (HeartbeatStatus::Skipped, "no-heartbeat-file".into())
    );

    let (runtime, config) = local(&s, "[heartbeat]\ntarget = \"webchat\"\n");
    std::fs::write(&file, "# Heartbeat\n\n# nothing yet\n").unwrap();
    let event = run_heartbeat(&*runtime, &s.home, &config, T0).await;
    assert_eq!(
        status(&event),
        (HeartbeatStatus::OkEmpty, "empty-heartbeat-file".into())
    );
    assert!(s.fake.requests().is_empty(), "no model call so far");

    std::fs::write(&file, "# Heartbeat\n- Check the disk.\n").unwrap();
    s.fake.route(
        HEARTBEAT,
        vec![
            Step::text("HEARTBEAT_OK all fine"),
            Step::text("The disk is 95% full."),
            Step::text("The disk is 95% full."),
            Step::Error {
                status: 400,
                message: "bad request".into(),
            },
        ],
    );
    let event = run_heartbeat(&*runtime, &s.home, &config, T0).await;
    assert_eq!(event.status, HeartbeatStatus::OkToken);
    assert!(
        s.fake.requests()[0]
            .body
            .to_string()
            .contains("Check the disk.")
    );
    assert!(
        texts(&s, "agent:main:main").is_empty(),
        "an OK is not shown"
    );
    let event = run_heartbeat(&*runtime, &s.home, &config, T0 + 1).await;
    assert_eq!(event.status, HeartbeatStatus::Sent);
    assert_eq!(event.preview.as_deref(), Some("The disk is 95% full."));
    assert_eq!(event.channel.as_deref(), Some("webchat (agent:main:main)"));
    assert_eq!(
        texts(&s, "agent:main:main"),
        [(Role::Assistant, "The disk is 95% full.".to_string())]
    );
    // A new runtime (a restart) still knows the alert: the repeat is not delivered.
    let (runtime, config) = local(&s, "[heartbeat]\ntarget = \"webchat\"\n");
    let event = run_heartbeat(&*runtime, &s.home, &config, T0 + 2).await;
    assert_eq!(
        status(&event),
        (HeartbeatStatus::Skipped, "duplicate".into())
    );
    let event = run_heartbeat(&*runtime, &s.home, &config, T0 + 3).await;
    assert_eq!(event.status, HeartbeatStatus::Failed);
    assert!(event.reason.unwrap().contains("bad request"));

    // A turn running on the main session: skipped, no model call.
    s.fake.route(MAIN, vec![Step::Stall("thinking…".into())]);
    let busy = runtime
        .start(TurnRequest::new(SessionKey::main(), "long task"))
        .await
        .unwrap();
    let calls = s.fake.requests().len();
    let event = run_heartbeat(&*runtime, &s.home, &config, T0 + 4).await;
    assert_eq!(
        status(&event),
        (HeartbeatStatus::Skipped, "requests-in-flight".into())
    );
    assert_eq!(s.fake.requests().len(), calls);
    runtime.abort(&SessionKey::main()).await;
    assert!(busy.done.await.is_err());
}

#[tokio::test]
async fn a_sub_agent_reports_back_and_the_requester_answers() {
    let s = setup(vec![]).await;
    let (runtime, _) = local(&s, "");
    s.fake.route(
        MAIN,
        vec![
            Step::call(
                "c1",
                "sessions_spawn",
                json!({"task": "Count the feeds", "label": "feeds"}),
            ),
            Step::text("I started a helper."),
            Step::text("You have 3 feeds."),
        ],
    );
    s.fake.route(CHILD, vec![Step::text("There are 3 feeds.")]);
    let handle = runtime
        .start(TurnRequest::new(SessionKey::main(), "How many feeds?"))
        .await
        .unwrap();
    assert_eq!(handle.done.await.unwrap().text, "I started a helper.");
    runtime.idle().await;

    let requests = s.fake.requests();
    let child = requests
        .iter()
        .find(|r| r.body.to_string().contains(CHILD))
        .unwrap();
    let offered = tool_names(&child.body);
    for denied in ["sessions_spawn", "sessions_send", "cron", "session_status"] {
        assert!(!offered.contains(&denied.to_string()), "{offered:?}");
    }
    // The spawn answered at once with the child's key and run.
    let spawn_result = requests
        .iter()
        .map(|r| r.body.to_string())
        .find(|b| b.contains(MAIN) && b.contains("accepted"))
        .unwrap();
    assert!(
        spawn_result.contains(r#"\"status\":\"accepted\""#),
        "{spawn_result}"
    );
    assert!(spawn_result.contains("agent:main:subagent:"));
    let main = texts(&s, "agent:main:main");
    let announce = &main[main.len() - 2].1;
    assert!(
        announce.starts_with("A background task \"Count the feeds\" just completed."),
        "{announce}"
    );
    assert!(announce.contains("There are 3 feeds.") && announce.contains("[Stats: duration="));
    assert_eq!(main.last().unwrap().1, "You have 3 feeds.");
}

#[tokio::test]
async fn sub_agent_limits_timeouts_and_cleanup() {
    let s = setup(vec![]).await;
    let (runtime, config) = local(&s, "[agent.subagents]\nmax_children = 1\n");
    let main = SessionKey::main();
    s.fake.route(CHILD, vec![Step::Stall("working".into())]);
    let args = |timeout| SpawnArgs {
        task: "slow task".into(),
        label: None,
        model: None,
        thinking: None,
        run_timeout: Duration::from_secs(timeout),
        budget_tokens: None,
        cleanup: Cleanup::Delete,
    };
    let limits = &config.agent.subagents;
    let first = spawn_subagent(runtime.clone(), &s.home, limits, &main, args(1))
        .await
        .unwrap();
    // The child runs: a second one is over max_children, and the child (depth 1) may not
    // spawn at the default max_depth.
    let second = spawn_subagent(runtime.clone(), &s.home, limits, &main, args(1)).await;
    assert!(second.unwrap_err().contains("max_children = 1"));
    let child = SessionKey::parse(&first.child_session_key).unwrap();
    let deeper = spawn_subagent(runtime.clone(), &s.home, limits, &child, args(1)).await;
    assert!(deeper.unwrap_err().contains("max_depth = 1"));

    // The stalled child times out after 1 s; the requester hears it and answers.
    s.fake.route(MAIN, vec![Step::text("The helper gave up.")]);
    runtime.idle().await;
    let texts_main = texts(&s, "agent:main:main");
    assert!(
        texts_main[0].1.contains("just timed out."),
        "{texts_main:?}"
    );
    assert_eq!(texts_main[1].1, "The helper gave up.");
    // cleanup = delete: the child's session is gone.
    assert!(texts(&s, child.as_str()).is_empty());
}

#[tokio::test]
async fn sessions_send_and_message() {
    let s = setup(vec![]).await;
    let (runtime, _) = local(&s, "");
    let bob = "agent:main:dm:cli:bob";
    s.fake.route(
        MAIN,
        vec![
            Step::calls(&[
                (
                    "c1",
                    "sessions_send",
                    json!({"sessionKey": bob, "message": "ping"}),
                ),
                (
                    "c2",
                    "sessions_send",
                    json!({"sessionKey": "agent:work:main", "message": "x"}),
                ),
                (
                    "c3",
                    "message",
                    json!({"channel": "webchat", "text": "Note for the web UI"}),
                ),
                ("c4", "message", json!({"channel": "fax", "text": "x"})),
            ]),
            Step::text("done"),
        ],
    );
    s.fake
        .route(&format!("session={bob}"), vec![Step::text("pong")]);
    let handle = runtime
        .start(TurnRequest::new(SessionKey::main(), "go"))
        .await
        .unwrap();
    handle.done.await.unwrap();
    // The webchat message waits for the main session's turn to end.
    runtime.idle().await;
    let results = s.fake.requests().last().unwrap().body.to_string();
    assert!(results.contains(r#"\"reply\":\"pong\""#), "{results}");
    assert!(results.contains("reaches only this agent"), "{results}");
    assert!(results.contains("delivered to webchat"), "{results}");
    assert!(results.contains("unknown channel 'fax'"), "{results}");
    assert_eq!(
        texts(&s, bob),
        [
            (Role::User, "ping".to_string()),
            (Role::Assistant, "pong".to_string())
        ]
    );
    assert!(
        texts(&s, "agent:main:main")
            .iter()
            .any(|(_, t)| t == "Note for the web UI")
    );

    // A group session reaches no other session, and IRC needs the gateway's connection.
    let group = "agent:main:group:irc:#lurk";
    s.fake.route(
        &format!("session={group}"),
        vec![
            Step::calls(&[
                (
                    "g1",
                    "sessions_send",
                    json!({"sessionKey": bob, "message": "leak?"}),
                ),
                ("g2", "message", json!({"channel": "irc", "text": "hi"})),
                (
                    "g3",
                    "message",
                    json!({"channel": "webchat", "text": "injected into the owner's chat"}),
                ),
            ]),
            Step::text("ok"),
        ],
    );
    let handle = runtime
        .start(TurnRequest::new(SessionKey::parse(group).unwrap(), "go"))
        .await
        .unwrap();
    handle.done.await.unwrap();
    let results = s.fake.requests().last().unwrap().body.to_string();
    assert!(
        results.contains("cannot send to other sessions"),
        "{results}"
    );
    assert!(results.contains("start `lurkbot gateway`"), "{results}");
    // A message from a group into the owner's own chat is a model act on a stranger's words:
    // held for a human, and with nobody to approve it, never written.
    assert!(results.contains("held for approval"), "{results}");
    assert!(
        !texts(&s, "agent:main:main")
            .iter()
            .any(|(_, t)| t.contains("injected")),
        "the group's message reached the owner's chat"
    );
    assert_eq!(texts(&s, bob).len(), 2, "nothing reached bob");
}
