//! `lurkbot cron`, `lurkbot heartbeat run` and sub-agents under `lurkbot agent`, as a user runs
//! them, against the scripted provider over real HTTP.

use lurkbot_llm::fake::{FakeProvider, Step};
use serde_json::{Value, json};

use crate::util::Test;

const MAIN: &str = "session=agent:main:main";

fn run(t: &Test, args: &[&str], fake: &FakeProvider) -> crate::util::Output {
    let base = format!("{}/v1", fake.url);
    t.run_env(
        args,
        &[
            ("LURKBOT_MODEL", "openai/fake-model"),
            ("OPENAI_BASE_URL", base.as_str()),
        ],
    )
}

/// The text a `--json` run streamed for the sessions `pick` chooses, joined.
fn text_of(events: &[Value], pick: &dyn Fn(&str) -> bool) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "text" && pick(e["sessionKey"].as_str().unwrap_or("")))
        .filter_map(|e| e["text"].as_str())
        .collect()
}

fn lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_returns_after_its_sub_agents_report_back() {
    let t = Test::init();
    let fake = FakeProvider::start(vec![]).await;
    fake.route(
        MAIN,
        vec![
            Step::call(
                "c1",
                "sessions_spawn",
                json!({"task": "Find the oldest feed"}),
            ),
            Step::text("Looking into it."),
            Step::text("The oldest feed is from 2009."),
        ],
    );
    fake.route("Subagent Context", vec![Step::text("Feed A, 2009.")]);
    let out = run(
        &t,
        &["agent", "--json", "-m", "Which feed is oldest?"],
        &fake,
    );
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(fake.remaining(), 0);
    let events = lines(&out.stdout);
    // Text streams in pieces, each tagged with its session.
    assert_eq!(
        text_of(&events, &|k| k.starts_with("agent:main:subagent:")),
        "Feed A, 2009."
    );
    // The announce turn ran on the main session before the command returned.
    assert_eq!(
        text_of(&events, &|k| k == "agent:main:main"),
        "Looking into it.The oldest feed is from 2009."
    );
    let history = t.run(&["sessions", "history", "agent:main:main"]);
    assert!(
        history.stdout.contains("just completed."),
        "{}",
        history.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cron_jobs_from_add_to_runs() {
    let t = Test::init();
    let fake = FakeProvider::start(vec![]).await;
    let out = t.run(&[
        "cron",
        "add",
        "--name",
        "tea",
        "--at",
        "+20m",
        "--system-event",
        "Tea is ready",
        "--wake",
        "now",
        "--json",
    ]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let job = out.json();
    assert_eq!(job["wakeMode"], "now");
    assert_eq!(job["createdBy"], "owner");
    let id = job["id"].as_str().unwrap().to_string();
    assert_eq!(job["sessionTarget"], "main");
    assert_eq!(
        job["payload"],
        json!({"kind": "systemEvent", "text": "Tea is ready"})
    );
    assert!(job["state"]["nextRunAtMs"].as_u64().unwrap() > lurkbot_core::now_ms());

    // Refusals: exit 2, a message that says what to do, nothing stored.
    for (args, says) in [
        (
            vec![
                "--every",
                "10m",
                "--system-event",
                "x",
                "--session",
                "isolated",
            ],
            "use --session main",
        ),
        (
            vec!["--every", "10m", "--message", "x", "--session", "main"],
            "use --session isolated",
        ),
        (
            vec!["--every", "5 minutes", "--message", "x"],
            "30s, 10m, 1h or 1d",
        ),
        (
            vec!["--at", "2001-01-01T00:00:00Z", "--message", "x"],
            "in the past",
        ),
        (
            vec!["--cron", "61 * * * *", "--message", "x"],
            "not a cron expression",
        ),
        (
            vec!["--cron", "0 9 * * *", "--tz", "Mars/Base", "--message", "x"],
            "Mars/Base",
        ),
    ] {
        let mut full = vec!["cron", "add", "--name", "bad"];
        full.extend(args);
        let out = t.run(&full);
        assert_eq!(out.status, 2, "{full:?}: {}", out.stderr);
        assert!(out.stderr.contains(says), "{full:?}: {}", out.stderr);
    }
    let list = t.run(&["cron", "list", "--json"]).json();
    assert_eq!(list.as_array().unwrap().len(), 1);

    // Not due: refused with the way to force it.
    let out = t.run(&["cron", "run", &id]);
    assert_eq!(out.status, 2);
    assert!(out.stderr.contains("--force"), "{}", out.stderr);
    let out = t.run(&["cron", "disable", &id]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert!(t.run(&["cron", "list"]).stdout.contains("disabled"));
    // Forced: the system event is injected into the main session and a heartbeat turn runs
    // now (its alert is the reply shown).
    fake.route(
        "session=cron:heartbeat",
        vec![Step::text("Your tea is ready.")],
    );
    let out = run(&t, &["cron", "run", &id, "--force"], &fake);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "Your tea is ready.\n");
    let runs = t.run(&["cron", "runs", &id, "--json"]).json();
    assert_eq!(runs.as_array().unwrap().len(), 1);
    assert_eq!(runs[0]["status"], "ok");
    assert_eq!(runs[0]["sessionKey"], "agent:main:main");
    let history = t.run(&["sessions", "history", "agent:main:main"]).stdout;
    assert!(
        history.contains("[System event from cron job \"tea\"] Tea is ready"),
        "{history}"
    );
    let out = t.run(&["cron", "enable", &id]);
    assert_eq!(out.status, 0, "{}", out.stderr);

    // An isolated daily job announcing to webchat.
    let out = t.run(&[
        "cron",
        "add",
        "--name",
        "report",
        "--cron",
        "0 9 * * *",
        "--tz",
        "Europe/Berlin",
        "--message",
        "Write the daily report",
        "--announce",
        "--channel",
        "webchat",
        "--json",
    ]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let report = out.json();
    assert_eq!(report["sessionTarget"], "isolated");
    assert_eq!(
        report["delivery"],
        json!({"mode": "announce", "channel": "webchat"})
    );
    assert_eq!(report["schedule"]["tz"], "Europe/Berlin");
    // A messaging channel with its recipient; an unknown channel is refused by name.
    let out = t.run(&[
        "cron",
        "add",
        "--name",
        "to telegram",
        "--every",
        "1d",
        "--message",
        "Summarise the day",
        "--announce",
        "--channel",
        "telegram",
        "--to",
        "42",
        "--json",
    ]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(
        out.json()["delivery"],
        json!({"mode": "announce", "channel": "telegram", "to": "42"})
    );
    let out = t.run(&[
        "cron",
        "add",
        "--name",
        "x",
        "--every",
        "1d",
        "--message",
        "m",
        "--announce",
        "--channel",
        "fax",
    ]);
    assert_eq!(out.status, 2);
    assert!(out.stderr.contains("telegram"), "{}", out.stderr);
    let out = t.run(&["cron", "rm", &out_id(&t, "to telegram")]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let out = t.run(&["cron", "rm", &id]);
    assert_eq!(out.status, 0);
    let out = t.run(&["cron", "rm", &id]);
    assert_eq!(out.status, 1);
    assert!(out.stderr.contains("cron list"), "{}", out.stderr);
    assert_eq!(
        t.run(&["cron", "list", "--json"])
            .json()
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeat_run_prints_the_event() {
    let t = Test::init();
    let fake = FakeProvider::start(vec![]).await;
    std::fs::remove_file(t.path("workspace/HEARTBEAT.md")).ok();
    let out = run(&t, &["heartbeat", "run", "--json"], &fake);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let event = out.json();
    assert_eq!(event["status"], "skipped");
    assert_eq!(event["reason"], "no-heartbeat-file");

    std::fs::write(
        t.path("workspace/HEARTBEAT.md"),
        "- Is the backup older than a day?\n",
    )
    .unwrap();
    fake.route(
        "session=cron:heartbeat",
        vec![
            Step::text("The backup is 3 days old."),
            Step::Error {
                status: 400,
                message: "no such model".into(),
            },
        ],
    );
    let out = run(&t, &["heartbeat", "run", "--json"], &fake);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let event = out.json();
    assert_eq!(event["status"], "sent");
    assert_eq!(event["preview"], "The backup is 3 days old.");
    let out = run(&t, &["heartbeat", "run"], &fake);
    assert_eq!(out.status, 1, "a failed heartbeat exits 1");
    assert!(
        out.stdout.starts_with("heartbeat: failed"),
        "{}",
        out.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_through_the_gateway_also_waits_for_the_report() {
    let t = Test::init();
    let fake = FakeProvider::start(vec![]).await;
    fake.route(
        MAIN,
        vec![
            Step::call(
                "c1",
                "sessions_spawn",
                json!({"task": "Check the calendar"}),
            ),
            Step::text("On it."),
            Step::text("Your calendar is free today."),
        ],
    );
    fake.route("Subagent Context", vec![Step::text("No events today.")]);
    let base = format!("{}/v1", fake.url);
    let env = [
        ("LURKBOT_MODEL", "openai/fake-model"),
        ("OPENAI_BASE_URL", base.as_str()),
    ];
    let gw = crate::util::start_gateway(&t, &env);
    let out = t.run_env(
        &[
            "agent",
            "--gateway",
            &gw.ws,
            "--json",
            "-m",
            "Am I free today?",
        ],
        &env,
    );
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(fake.remaining(), 0);
    let events = lines(&out.stdout);
    assert_eq!(
        text_of(&events, &|k| k == "agent:main:main"),
        "On it.Your calendar is free today."
    );
    assert_eq!(
        text_of(&events, &|k| k.starts_with("agent:main:subagent:")),
        "No events today."
    );
    let _ = gw.stop();
}

/// The id of the job named `name`.
fn out_id(t: &Test, name: &str) -> String {
    t.run(&["cron", "list", "--json"])
        .json()
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["name"] == name)
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string()
}
