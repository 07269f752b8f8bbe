//! Both wire formats against the scripted server over real HTTP: streaming text, tool calls
//! gathered from fragments, request translation, error classes, retries, profile rotation
//! with cooldown, and model failover.

use std::sync::atomic::{AtomicU64, Ordering};

use lurkbot_llm::fake::{FakeProvider, Step};
use lurkbot_llm::{
    ChatRequest, ErrorKind, Failover, Message, ModelRef, StreamEvent, ToolCall, ToolSpec,
};
use serde_json::json;

fn request() -> ChatRequest {
    ChatRequest {
        model: String::new(),
        system: "You are terse.".into(),
        messages: vec![Message::user("hi")],
        tools: vec![std::sync::Arc::new(ToolSpec {
            name: "terminal_exec".into(),
            description: "run a command".into(),
            parameters: json!({"type": "object", "properties": {"command": {"type": "string"}}}),
        })],
        max_tokens: 256,
        reasoning: None,
    }
}

fn vars(fake: &FakeProvider, keys: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let url = fake.url.clone();
    let keys: Vec<(String, String)> = keys
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name: &str| match name {
        "OPENAI_BASE_URL" => Some(format!("{url}/v1")),
        "ANTHROPIC_BASE_URL" => Some(url.clone()),
        _ => keys.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()),
    }
}

fn models(list: &[&str]) -> Vec<ModelRef> {
    list.iter().map(|m| m.parse().unwrap()).collect()
}

async fn stream_both_ways(model: &str) {
    let fake = FakeProvider::start(vec![
        Step::text("Hello there, friend."),
        Step::calls(&[
            ("call_1", "terminal_exec", json!({"command": "rss list"})),
            ("call_2", "read", json!({"path": "workspace/AGENTS.md"})),
        ]),
    ])
    .await;
    let mut failover = Failover::new(models(&[model]), &vars(&fake, &[]), None).unwrap();
    let mut seen = Vec::new();
    let answered = failover
        .chat(&request(), &mut |e| seen.push(e))
        .await
        .unwrap();
    assert_eq!(answered.response.text, "Hello there, friend.");
    let pieces: Vec<_> = seen
        .iter()
        .map(|e| match e {
            StreamEvent::Text(t) => t.clone(),
            StreamEvent::ToolCall(_) => panic!("no calls here"),
        })
        .collect();
    assert_eq!(pieces, ["Hello ", "there, ", "friend."]);
    assert_eq!(answered.response.usage.input_tokens, 100);
    assert!(answered.response.usage.output_tokens > 0);
    assert_eq!(answered.model.to_string(), model);

    let answered = failover.chat(&request(), &mut |_| {}).await.unwrap();
    assert_eq!(
        answered.response.tool_calls,
        vec![
            ToolCall {
                id: "call_1".into(),
                name: "terminal_exec".into(),
                arguments: json!({"command": "rss list"}).to_string()
            },
            ToolCall {
                id: "call_2".into(),
                name: "read".into(),
                arguments: json!({"path": "workspace/AGENTS.md"}).to_string()
            },
        ]
    );
    let sent = fake.requests();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].body["stream"], true);
    assert_eq!(sent[0].body["model"], model.split_once('/').unwrap().1);
}

#[tokio::test]
async fn openai_streams_text_and_tool_calls() {
    stream_both_ways("openai/fake-gpt").await;
}

#[tokio::test]
async fn anthropic_streams_text_and_tool_calls() {
    stream_both_ways("anthropic/fake-claude").await;
}

#[test]
fn conversations_translate_to_both_wire_formats() {
    let mut req = request();
    req.messages = vec![
        Message::user("list my feeds"),
        Message::assistant(
            "Looking.",
            vec![
                ToolCall {
                    id: "c1".into(),
                    name: "terminal_exec".into(),
                    arguments: r#"{"command":"rss list"}"#.into(),
                },
                ToolCall {
                    id: "c2".into(),
                    name: "read".into(),
                    arguments: "not json".into(),
                },
            ],
        ),
        Message::tool("c1", "2 feeds", false),
        Message::tool("c2", "no such file", true),
    ];
    let openai = lurkbot_llm::wire::openai_body(&req);
    assert_eq!(
        openai["messages"][0],
        json!({"role": "system", "content": "You are terse."})
    );
    assert_eq!(
        openai["messages"][2]["tool_calls"][1]["function"]["arguments"],
        "not json"
    );
    assert_eq!(
        openai["messages"][3],
        json!({"role": "tool", "tool_call_id": "c1", "content": "2 feeds"})
    );
    assert_eq!(openai["tools"][0]["function"]["name"], "terminal_exec");
    let anthropic = lurkbot_llm::wire::anthropic_body(&req);
    assert_eq!(anthropic["system"], "You are terse.");
    let messages = anthropic["messages"].as_array().unwrap();
    assert_eq!(
        messages.len(),
        3,
        "both tool results share one user message"
    );
    assert_eq!(
        messages[1]["content"][1]["input"],
        json!({"command": "rss list"})
    );
    assert_eq!(messages[1]["content"][2]["input"], json!({}));
    assert_eq!(messages[2]["role"], "user");
    assert_eq!(messages[2]["content"][1]["is_error"], true);
    assert_eq!(anthropic["tools"][0]["input_schema"]["type"], "object");
}

static NOW: AtomicU64 = AtomicU64::new(1_800_000_000_000);

fn clock() -> u64 {
    NOW.load(Ordering::SeqCst)
}

#[tokio::test]
async fn profiles_rotate_cool_down_and_fail_over() {
    let fake = FakeProvider::start(vec![
        Step::Error {
            status: 429,
            message: "slow down".into(),
        },
        Step::text("from key two"),
    ])
    .await;
    let dir = tempfile_dir();
    let state = dir.join("auth/profiles.json");
    let lookup = vars(
        &fake,
        &[
            ("OPENAI_API_KEY", "sk-one"),
            ("OPENAI_API_KEY_2", "sk-two"),
            ("ANTHROPIC_API_KEY", "ant-1"),
        ],
    );
    let mut failover = Failover::new(
        models(&["openai/m", "anthropic/c"]),
        &lookup,
        Some(state.clone()),
    )
    .unwrap()
    .with_clock(clock);
    let answered = failover.chat(&request(), &mut |_| {}).await.unwrap();
    assert_eq!(answered.response.text, "from key two");
    let keys: Vec<_> = fake
        .requests()
        .iter()
        .map(|r| r.key.clone().unwrap())
        .collect();
    assert_eq!(keys, ["sk-one", "sk-two"]);
    let one = &failover.state()["openai:OPENAI_API_KEY"];
    assert_eq!((one.failures, one.cooldown_until_ms), (1, clock() + 60_000));
    let saved = std::fs::read_to_string(&state).unwrap();
    assert!(
        saved.contains("OPENAI_API_KEY") && !saved.contains("sk-one"),
        "{saved}"
    );

    // Key one is cooling down: key two answers directly.
    fake.push(vec![Step::text("again two")]);
    failover.chat(&request(), &mut |_| {}).await.unwrap();
    assert_eq!(
        fake.requests().last().unwrap().key.as_deref(),
        Some("sk-two")
    );

    // Key two is refused: the fallback model (another provider) answers.
    fake.push(vec![
        Step::Error {
            status: 401,
            message: "Incorrect API key provided: sk-two".into(),
        },
        Step::text("claude here"),
    ]);
    let answered = failover.chat(&request(), &mut |_| {}).await.unwrap();
    assert_eq!(answered.model.to_string(), "anthropic/c");
    assert_eq!(fake.requests().last().unwrap().path, "/v1/messages");

    // After 61 s both keys are usable again; key one fails a second time: 5 minutes now.
    NOW.fetch_add(61_000, Ordering::SeqCst);
    fake.push(vec![
        Step::Error {
            status: 529,
            message: "overloaded".into(),
        },
        Step::text("two again"),
    ]);
    let answered = failover.chat(&request(), &mut |_| {}).await.unwrap();
    assert_eq!(answered.model.to_string(), "openai/m");
    assert_eq!(
        fake.requests().last().unwrap().key.as_deref(),
        Some("sk-two")
    );
    let one = &failover.state()["openai:OPENAI_API_KEY"];
    assert_eq!(
        (one.failures, one.cooldown_until_ms),
        (2, clock() + 300_000)
    );
    assert_eq!(failover.state()["openai:OPENAI_API_KEY_2"].failures, 0);

    // A new process reads the cooldowns back: key one is skipped.
    let before = fake.requests().len();
    fake.push(vec![
        Step::Error {
            status: 429,
            message: "no".into(),
        },
        Step::Error {
            status: 429,
            message: "no".into(),
        },
    ]);
    let mut fresh = Failover::new(models(&["openai/m", "anthropic/c"]), &lookup, Some(state))
        .unwrap()
        .with_clock(clock);
    let e = fresh.chat(&request(), &mut |_| {}).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::RateLimited, "{e}");
    let keys: Vec<_> = fake.requests()[before..]
        .iter()
        .map(|r| r.key.clone().unwrap())
        .collect();
    assert_eq!(keys, ["sk-two", "ant-1"]);
    // Every profile cools now: nothing is sent, and the wait is named.
    let e = fresh.chat(&request(), &mut |_| {}).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::RateLimited);
    assert!(e.message.contains("cooling down"), "{e}");
    assert_eq!(e.retry_after_ms, Some(60_000));
    assert_eq!(fake.requests().len(), before + 2);
}

#[tokio::test]
async fn transient_errors_retry_overflow_and_cut_streams_do_not() {
    let fake = FakeProvider::start(vec![
        Step::Error {
            status: 502,
            message: "bad gateway".into(),
        },
        Step::text("after a retry"),
        Step::Error {
            status: 400,
            message: "This model's maximum context length is 8192 tokens".into(),
        },
        Step::CutOff("half a rep".into()),
    ])
    .await;
    let mut failover = Failover::new(models(&["openai/m"]), &vars(&fake, &[]), None).unwrap();
    let answered = failover.chat(&request(), &mut |_| {}).await.unwrap();
    assert_eq!(answered.response.text, "after a retry");
    assert_eq!(fake.requests().len(), 2);
    let e = failover.chat(&request(), &mut |_| {}).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::ContextOverflow);
    assert_eq!(fake.requests().len(), 3);
    let mut streamed = String::new();
    let e = failover
        .chat(&request(), &mut |e| {
            if let StreamEvent::Text(t) = e {
                streamed.push_str(&t);
            }
        })
        .await;
    // The stream ended without its end marker: an error (the text so far was shown), and no
    // second request, which would repeat what was already streamed.
    assert_eq!(streamed, "half a rep");
    assert_eq!(e.unwrap_err().kind, ErrorKind::Transient);
    assert_eq!(fake.requests().len(), 4);
}

#[tokio::test]
async fn an_unreachable_provider_is_transient() {
    let lookup =
        |name: &str| (name == "OPENAI_BASE_URL").then(|| "http://127.0.0.1:9/v1".to_string());
    let mut failover = Failover::new(models(&["openai/m"]), &lookup, None).unwrap();
    let e = failover.chat(&request(), &mut |_| {}).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Transient);
    assert!(e.message.contains("127.0.0.1:9"), "{e}");
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir =
        std::env::temp_dir().join(format!("lurkbot-llm-test-{}", lurkbot_core::random_hex(6)));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test]
async fn a_key_echoed_in_an_error_never_reaches_the_message() {
    let fake = FakeProvider::start(vec![Step::Error {
        status: 401,
        message: "Incorrect API key provided: sk-live-abcdef123".into(),
    }])
    .await;
    let lookup = vars(&fake, &[("OPENAI_API_KEY", "sk-live-abcdef123")]);
    let mut failover = Failover::new(models(&["openai/m"]), &lookup, None).unwrap();
    let e = failover.chat(&request(), &mut |_| {}).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Auth);
    assert!(!e.message.contains("sk-live-abcdef123"), "{e}");
    assert!(e.message.contains("Incorrect API key provided: ***"), "{e}");
    assert!(e.message.contains("profile OPENAI_API_KEY"), "{e}");
}

#[test]
fn reasoning_effort_is_sent_to_openai_only_when_on() {
    let mut r = request();
    assert!(
        lurkbot_llm::wire::openai_body(&r)
            .get("reasoning_effort")
            .is_none()
    );
    r.reasoning = Some("off".into());
    assert!(
        lurkbot_llm::wire::openai_body(&r)
            .get("reasoning_effort")
            .is_none()
    );
    r.reasoning = Some("high".into());
    assert_eq!(
        lurkbot_llm::wire::openai_body(&r)["reasoning_effort"],
        "high"
    );
    assert!(
        lurkbot_llm::wire::anthropic_body(&r)
            .get("thinking")
            .is_none()
    );
}
