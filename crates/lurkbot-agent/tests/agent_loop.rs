//! The agent loop against the scripted provider over real HTTP, with the real executor:
//! multi-step tool loops, several calls in one reply, policy filtering, confinement, untrusted
//! wrapping, and transcripts that survive a crash mid-turn.

use lurkbot_agent::{AgentEvent, Entry, Sessions};
use lurkbot_core::SessionKey;
use lurkbot_llm::fake::Step;
use lurkbot_llm::{Message, Role, ToolCall};
use serde_json::json;

use crate::common::{agent, setup, tool_names};

async fn multi_step(model: &str) {
    let s = setup(vec![
        Step::call("c1", "terminal_exec", json!({"command": "help"})),
        Step::text("You have commands."),
    ])
    .await;
    let mut a = agent(&s, model, "");
    let mut events = Vec::new();
    let out = a
        .turn(&SessionKey::main(), "what can you do?", &mut |e| {
            events.push(e)
        })
        .await
        .unwrap();
    assert_eq!(out.text, "You have commands.");
    assert_eq!(out.steps, 2);
    assert!(out.usage.input_tokens >= 200);
    assert!(matches!(&events[0], AgentEvent::ToolStart { name, .. } if name == "terminal_exec"));
    assert!(matches!(
        &events[1],
        AgentEvent::ToolEnd {
            is_error: false,
            ..
        }
    ));
    let requests = s.fake.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0].body;
    assert!(tool_names(first).contains(&"terminal_exec".to_string()));
    let system = first["system"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| {
            first["messages"][0]["content"]
                .as_str()
                .unwrap()
                .to_string()
        });
    assert!(
        system.contains("Be brief."),
        "bootstrap file in the prompt: {system}"
    );
    // The tool result went back wrapped as untrusted data.
    let sent = requests[1].body.to_string();
    assert!(
        sent.contains("<untrusted source=\\\"terminal_exec\\\">"),
        "{sent}"
    );
    assert!(sent.contains("zip"), "the help output: {sent}");
    // One audit record for the command.
    assert_eq!(
        std::fs::read_dir(s.home.join("artifacts/terminal_exec/runs"))
            .unwrap()
            .count(),
        1
    );
    // The transcript: user, assistant call, tool result, assistant text.
    let sessions = Sessions::open(&s.home, "main");
    let roles: Vec<Role> = sessions
        .history(&out.session_id)
        .unwrap()
        .into_iter()
        .map(|e| match e {
            Entry::Message { message, .. } => message.role,
            Entry::Compaction { .. } => panic!("no compaction"),
        })
        .collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    let entry = &sessions.list().unwrap()["agent:main:main"];
    assert_eq!(entry.turns, 1);
    assert_eq!(entry.model.as_deref(), Some(model));
}

#[tokio::test]
async fn a_tool_loop_over_openai() {
    multi_step("openai/fake").await;
}

#[tokio::test]
async fn a_tool_loop_over_anthropic() {
    multi_step("anthropic/fake").await;
}

#[tokio::test]
async fn several_calls_in_one_reply_and_confinement() {
    let s = setup(vec![
        Step::calls(&[
            (
                "a",
                "write",
                json!({"path": "workspace/notes.md", "content": "milk, eggs"}),
            ),
            ("b", "read", json!({"path": "workspace/notes.md"})),
            ("c", "read", json!({"path": "../../etc/passwd"})),
            (
                "d",
                "read",
                json!({"path": "skills/calendar-cli/secrets/.env"}),
            ),
            ("e", "write", json!({"path": "config.toml", "content": "x"})),
            (
                "f",
                "edit",
                json!({"path": "workspace/notes.md", "old_text": "eggs", "new_text": "bread"}),
            ),
            ("g", "read", "not an object".into()),
        ]),
        Step::text("ok"),
    ])
    .await;
    std::fs::create_dir_all(s.home.join("skills/calendar-cli/secrets")).unwrap();
    std::fs::write(
        s.home.join("skills/calendar-cli/secrets/.env"),
        "CALDAV_PASSWORD=hunter22\n",
    )
    .unwrap();
    let mut a = agent(&s, "openai/fake", "");
    let mut ends = Vec::new();
    a.turn(&SessionKey::main(), "note it", &mut |e| {
        if let AgentEvent::ToolEnd { id, is_error, .. } = e {
            ends.push((id, is_error));
        }
    })
    .await
    .unwrap();
    let expect = [
        ("a", false),
        ("b", false),
        ("c", true),
        ("d", true),
        ("e", true),
        ("f", false),
        ("g", true),
    ];
    assert_eq!(ends, expect.map(|(i, e)| (i.to_string(), e)));
    assert_eq!(
        std::fs::read_to_string(s.home.join("workspace/notes.md")).unwrap(),
        "milk, bread"
    );
    let sent = s.fake.requests()[1].body.to_string();
    assert!(sent.contains("milk, eggs"), "the read saw the first write");
    assert!(!sent.contains("hunter22"), "a secret reached the model");
    assert!(!std::fs::read_to_string(s.home.join("config.toml")).is_ok_and(|c| c == "x"));
}

#[tokio::test]
async fn the_policy_decides_what_is_offered_and_what_runs() {
    let s = setup(vec![
        Step::call("c1", "terminal_exec", json!({"command": "help"})),
        Step::text("I cannot run commands here."),
    ])
    .await;
    let mut a = agent(&s, "openai/fake", "[tools]\nprofile = \"minimal\"\n");
    a.turn(&SessionKey::main(), "run help", &mut |_| {})
        .await
        .unwrap();
    let requests = s.fake.requests();
    assert_eq!(tool_names(&requests[0].body), ["session_status"]);
    assert!(
        requests[1]
            .body
            .to_string()
            .contains("is not available in this session")
    );
    assert!(
        !s.home.join("artifacts/terminal_exec/runs").exists(),
        "nothing ran"
    );

    // Deny wins over the profile; group sessions lose terminal_exec and write.
    let s = setup(vec![Step::text("a"), Step::text("b")]).await;
    let mut a = agent(
        &s,
        "openai/fake",
        "[tools]\nprofile = \"coding\"\ndeny = [\"edit\", \"sessions_*\"]\n",
    );
    a.turn(&SessionKey::main(), "hi", &mut |_| {})
        .await
        .unwrap();
    assert_eq!(
        tool_names(&s.fake.requests()[0].body),
        [
            "terminal_exec",
            "read",
            "write",
            "apply_patch",
            "session_status",
            "agents_list",
            "memory_search",
            "memory_get"
        ]
    );
    let group = SessionKey::parse("agent:main:group:irc:#lurk").unwrap();
    a.turn(&group, "hi", &mut |_| {}).await.unwrap();
    assert_eq!(
        tool_names(&s.fake.requests()[1].body),
        ["read", "session_status", "agents_list"]
    );

    let s = setup(vec![]).await;
    let mut a = agent(&s, "openai/fake", "[tools]\nprofile = \"everything\"\n");
    let e = a
        .turn(&SessionKey::main(), "hi", &mut |_| {})
        .await
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("[tools] unknown tool profile 'everything'"),
        "{e}"
    );
}

#[tokio::test]
async fn a_crash_mid_turn_leaves_a_usable_transcript() {
    let s = setup(vec![Step::text("Back again.")]).await;
    let sessions = Sessions::open(&s.home, "main");
    let entry = sessions.get_or_create(&SessionKey::main()).unwrap();
    // What a process killed while a tool ran leaves behind: the call, no result, a torn line.
    sessions
        .append(
            &entry.session_id,
            &[
                Entry::Message {
                    ts: 1,
                    message: Message::user("fetch my feeds"),
                },
                Entry::Message {
                    ts: 2,
                    message: Message::assistant(
                        "",
                        vec![ToolCall {
                            id: "c9".into(),
                            name: "terminal_exec".into(),
                            arguments: "{\"command\":\"rss fetch --all\"}".into(),
                        }],
                    ),
                },
            ],
        )
        .unwrap();
    let path = sessions.transcript_path(&entry.session_id);
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("{\"type\":\"message\",\"ts\":3,\"mess");
    std::fs::write(&path, text).unwrap();

    let mut a = agent(&s, "openai/fake", "");
    let out = a
        .turn(&SessionKey::main(), "are you there?", &mut |_| {})
        .await
        .unwrap();
    assert_eq!(out.text, "Back again.");
    let messages = &s.fake.requests()[0].body["messages"];
    assert_eq!(messages[2]["tool_calls"][0]["id"], "c9");
    assert_eq!(messages[3]["role"], "tool");
    assert_eq!(messages[3]["tool_call_id"], "c9");
    assert!(
        messages[3]["content"]
            .as_str()
            .unwrap()
            .contains("interrupted")
    );
    assert_eq!(messages[4]["content"], "are you there?");
}
