//! Cron system events (the seed's `chat.inject`): injected into the main session with no model
//! call, waking a heartbeat turn with `wakeMode = now`, queued for the next heartbeat otherwise;
//! a failed wake loses nothing.

use lurkbot_agent::cron::{CronStore, Payload, RunMode, RunStatus, Schedule, WakeMode, run_job};
use lurkbot_agent::heartbeat::{HeartbeatStatus, run_heartbeat};
use lurkbot_llm::fake::Step;

use crate::autonomy::{HEARTBEAT, T0, job, local, texts};
use crate::common::setup;

#[tokio::test]
async fn system_events_wake_the_main_session_or_wait_for_the_heartbeat() {
    let s = setup(vec![]).await;
    let (runtime, _) = local(&s, "");
    let store = CronStore::open(&s.home);
    let at = Schedule::At { at_ms: T0 };
    let mut tea = job(
        at.clone(),
        Payload::SystemEvent {
            text: "tea is ready".into(),
        },
    );
    tea.delete_after_run = true;
    tea.wake_mode = WakeMode::Now;
    let tea = store.add(tea, T0 - 1_000).unwrap();
    // The event is injected into the main session; the wake is a heartbeat turn, whose alert
    // reaches the owner's chat (target `last`).
    s.fake
        .route(HEARTBEAT, vec![Step::text("Your tea is ready.")]);
    let clock = || T0;
    let done = run_job(&*runtime, &store, &tea.id, RunMode::Due, &clock)
        .await
        .unwrap();
    assert_eq!(done.record.session_key, "agent:main:main");
    // deleteAfterRun: gone after its successful run; its log stays.
    assert!(done.job.is_none());
    assert!(store.jobs().unwrap().is_empty());
    assert_eq!(store.runs(&tea.id).unwrap().len(), 1);
    let main = texts(&s, "agent:main:main");
    assert_eq!(
        main[0].1,
        "[System event from cron job \"report\"] tea is ready"
    );
    assert_eq!(main[1].1, "Your tea is ready.");

    // next-heartbeat (the default): injected and queued for the next heartbeat's prompt, no
    // model call now.
    let mut later = job(
        at,
        Payload::SystemEvent {
            text: "stand up".into(),
        },
    );
    later.wake_mode = WakeMode::NextHeartbeat;
    assert_eq!(WakeMode::default(), WakeMode::NextHeartbeat);
    let later = store.add(later, T0 - 1_000).unwrap();
    let calls = s.fake.requests().len();
    let done = run_job(&*runtime, &store, &later.id, RunMode::Due, &clock)
        .await
        .unwrap();
    assert_eq!(done.record.status, RunStatus::Ok);
    assert_eq!(s.fake.requests().len(), calls);
    assert_eq!(
        texts(&s, "agent:main:main").last().unwrap().1,
        "[System event from cron job \"report\"] stand up"
    );
    // An `at` job that ran is disabled, with no next run.
    let after = done.job.unwrap();
    assert!(!after.enabled && after.state.next_run_at_ms.is_none());
    // The heartbeat runs for the event although there is no HEARTBEAT.md, and takes it.
    s.fake.route(HEARTBEAT, vec![Step::text("HEARTBEAT_OK")]);
    let (_, config) = local(&s, "");
    let event = run_heartbeat(&*runtime, &s.home, &config, T0).await;
    assert_eq!(event.status, HeartbeatStatus::OkToken);
    let prompt = s.fake.requests().last().unwrap().body.to_string();
    assert!(
        prompt.contains(
            "System events since the last heartbeat:\\n- [System event from cron job \\\"report\\\"] stand up"
        ),
        "{prompt}"
    );
    let event = run_heartbeat(&*runtime, &s.home, &config, T0).await;
    assert_eq!(
        (event.status, event.reason.as_deref()),
        (HeartbeatStatus::Skipped, Some("no-heartbeat-file"))
    );
}

/// A system event is the seed's `chat.inject`: it needs no model. With no model configured a
/// `next-heartbeat` job's run is ok, and a `now` job's failed wake turn loses nothing: the event
/// is in the main session and still waits for the next heartbeat.
#[tokio::test]
async fn a_system_event_needs_no_model_and_a_failed_wake_loses_nothing() {
    let s = setup(vec![]).await;
    let runtime = crate::autonomy::without_a_model(&s);
    let store = CronStore::open(&s.home);
    let clock = || T0;
    let mut quiet = job(
        Schedule::At { at_ms: T0 },
        Payload::SystemEvent {
            text: "water the plants".into(),
        },
    );
    quiet.wake_mode = WakeMode::NextHeartbeat;
    let quiet = store.add(quiet, T0 - 1_000).unwrap();
    let done = run_job(&*runtime, &store, &quiet.id, RunMode::Force, &clock)
        .await
        .unwrap();
    assert_eq!(done.record.status, RunStatus::Ok, "{:?}", done.record.error);
    let mut loud = job(
        Schedule::At { at_ms: T0 },
        Payload::SystemEvent {
            text: "call mum".into(),
        },
    );
    loud.wake_mode = WakeMode::Now;
    let loud = store.add(loud, T0 - 1_000).unwrap();
    let done = run_job(&*runtime, &store, &loud.id, RunMode::Force, &clock)
        .await
        .unwrap();
    assert_eq!(done.record.status, RunStatus::Error);
    let error = done.record.error.unwrap_or_default();
    assert!(error.contains("injected into the main session"), "{error}");
    let main: Vec<String> = texts(&s, "agent:main:main")
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    assert_eq!(
        main,
        [
            "[System event from cron job \"report\"] water the plants",
            "[System event from cron job \"report\"] call mum"
        ]
    );
    let queued = std::fs::read_to_string(s.home.join("cron/heartbeat-events.json")).unwrap();
    assert!(
        queued.contains("water the plants") && queued.contains("call mum"),
        "{queued}"
    );
    assert!(s.fake.requests().is_empty(), "no model was called");
}
