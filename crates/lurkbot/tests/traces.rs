//! Traces over OTLP/HTTP, received by a server decoding with the official
//! `opentelemetry-proto` package (`tests/otel/otlp_receiver.py`): a turn with a tool call,
//! joined to the trace of the request's `traceparent`, with its model calls (GenAI attributes)
//! and tool call as children, the trace passed on to the model provider; no content unless
//! `[otel] capture_content`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use lurkbot_llm::fake::{FakeProvider, Step};
use serde_json::{Value, json};

use crate::nothing_lost::{append_config, model_env, start_with, until};
use crate::util::Test;

/// The receiver, stopped when dropped; the spans it printed so far.
struct Receiver {
    child: Child,
    port: u16,
    spans: Arc<Mutex<Vec<Value>>>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Receiver {
    fn start() -> Self {
        Self::requiring(None)
    }

    /// A receiver refusing (401) a request without the header `required` (`Name: value`).
    fn requiring(required: Option<&str>) -> Self {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/otel/otlp_receiver.py");
        let mut child = Command::new(lurkbot_test_support::venv::test_python())
            .arg(script)
            .args(required)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let port = lines.next().unwrap().unwrap().trim().parse().unwrap();
        let spans = Arc::new(Mutex::new(Vec::new()));
        let kept = spans.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if let Ok(span) = serde_json::from_str(&line) {
                    kept.lock().unwrap().push(span);
                }
            }
        });
        Self { child, port, spans }
    }

    fn spans(&self) -> Vec<Value> {
        self.spans.lock().unwrap().clone()
    }
}

/// A chat completion with `traceparent` on `addr`: the status.
fn ask_traced(addr: &str, token: &str, traceparent: &str, message: &str) -> u16 {
    use std::io::{Read, Write};
    let body =
        json!({"model": "lurkbot", "messages": [{"role": "user", "content": message}]}).to_string();
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         traceparent: {traceparent}\r\nx-lurkbot-session: agent:main:dm:api:ops\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";
const SECRET: &str = "the words only the caller may see";

/// Runs one traced turn (`terminal_exec help`, then a reply) through a gateway exporting to a
/// fresh receiver; the spans of the turn's trace, and the provider's requests.
async fn traced_turn(
    t: &Test,
    env: &mut Vec<(String, String)>,
) -> (Vec<Value>, Vec<lurkbot_llm::fake::Recorded>, String) {
    traced_turn_to(Receiver::start(), t, env).await
}

/// [`traced_turn`] exporting to `receiver`.
async fn traced_turn_to(
    receiver: Receiver,
    t: &Test,
    env: &mut Vec<(String, String)>,
) -> (Vec<Value>, Vec<lurkbot_llm::fake::Recorded>, String) {
    let fake = FakeProvider::start(vec![
        Step::call(
            "c1",
            "terminal_exec",
            json!({"command": "help", "note": SECRET}),
        ),
        Step::text(&format!("Done: {SECRET}")),
    ])
    .await;
    fake.record(true);
    env.retain(|(k, _)| !k.starts_with("OPENAI_") && k != "LURKBOT_MODEL");
    env.extend(model_env(&fake));
    env.push((
        "OTEL_EXPORTER_OTLP_ENDPOINT".into(),
        format!("http://127.0.0.1:{}", receiver.port),
    ));
    let gw = start_with(t, env);
    let (addr, token) = (gw.addr.clone(), t.gateway_token());
    let traceparent = format!("00-{TRACE}-{CALLER_SPAN}-01");
    let status = tokio::task::spawn_blocking(move || {
        ask_traced(&addr, &token, &traceparent, &format!("Please: {SECRET}"))
    })
    .await
    .unwrap();
    assert_eq!(status, 200);
    until("the turn's spans reached the receiver", || {
        receiver
            .spans()
            .iter()
            .any(|s| s["name"] == "invoke_agent main")
    })
    .await;
    let logs = gw.stderr();
    drop(gw);
    let spans = receiver
        .spans()
        .into_iter()
        .filter(|s| s["trace_id"] == TRACE)
        .collect();
    (spans, fake.requests(), logs)
}

fn named<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|s| s["name"] == name).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_is_one_trace_with_its_model_and_tool_spans_and_no_content() {
    let t = Test::init();
    let mut env = vec![("OTEL_SERVICE_NAME".to_string(), "lurkbot-test".to_string())];
    let (spans, requests, logs) = traced_turn(&t, &mut env).await;

    // The turn joins the caller's trace, under the caller's span.
    let turn = named(&spans, "invoke_agent main");
    assert_eq!(turn.len(), 1, "{spans:#?}");
    let turn = turn[0];
    assert_eq!(turn["parent_span_id"], CALLER_SPAN);
    assert_eq!(turn["resource"]["service.name"], "lurkbot-test");
    assert_eq!(turn["scope"], "lurkbot");
    assert_eq!(turn["attributes"]["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(turn["attributes"]["lurkbot.turn.source"], "api");
    assert_eq!(turn["status_code"], 1, "ok");

    // Two model calls, children of the turn, with the GenAI attributes.
    let calls = named(&spans, "chat fake");
    assert_eq!(calls.len(), 2, "{spans:#?}");
    for call in &calls {
        assert_eq!(call["parent_span_id"], turn["span_id"]);
        assert_eq!(call["kind"], 3, "client");
        let a = &call["attributes"];
        assert_eq!(a["gen_ai.operation.name"], "chat");
        assert_eq!(a["gen_ai.request.model"], "fake");
        assert_eq!(a["gen_ai.provider.name"], "openai");
        assert!(a["gen_ai.usage.input_tokens"].as_i64().unwrap() > 0, "{a}");
        assert!(a["gen_ai.usage.output_tokens"].as_i64().is_some(), "{a}");
    }
    // The tool call, a child of the turn.
    let tool = named(&spans, "execute_tool terminal_exec");
    assert_eq!(tool.len(), 1, "{spans:#?}");
    assert_eq!(tool[0]["parent_span_id"], turn["span_id"]);
    assert_eq!(tool[0]["attributes"]["gen_ai.tool.call.id"], "c1");

    // The provider was asked under each model call's span.
    let sent: Vec<String> = requests
        .iter()
        .filter_map(|r| r.traceparent.clone())
        .collect();
    assert_eq!(sent.len(), 2, "{sent:?}");
    for (header, call) in sent.iter().zip(&calls) {
        assert!(header.starts_with(&format!("00-{TRACE}-")), "{header}");
        assert!(
            calls
                .iter()
                .any(|c| header.contains(c["span_id"].as_str().unwrap())),
            "{header} names no model call span ({call})"
        );
    }

    // No prompt, reply or tool argument left.
    let everything = serde_json::to_string(&spans).unwrap();
    assert!(!everything.contains("only the caller"), "{everything}");

    // The log lines of the turn and its tool call name its trace.
    for what in [" turn ", " tool call "] {
        assert!(
            logs.lines()
                .any(|l| l.contains(what) && l.contains(&format!("trace_id=\"{TRACE}\""))),
            "{what}: {logs}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capture_content_exports_the_prompt_reply_and_arguments() {
    let t = Test::init();
    append_config(&t, "[otel]\ncapture_content = true");
    let mut env = Vec::new();
    let (spans, _, _) = traced_turn(&t, &mut env).await;
    let turn = named(&spans, "invoke_agent main")[0].clone();
    assert_eq!(turn["resource"]["service.name"], "lurkbot");
    assert_eq!(
        turn["attributes"]["gen_ai.input.messages"],
        format!("Please: {SECRET}")
    );
    assert_eq!(
        turn["attributes"]["gen_ai.output.messages"],
        format!("Done: {SECRET}")
    );
    let tool = named(&spans, "execute_tool terminal_exec")[0].clone();
    let arguments = tool["attributes"]["gen_ai.tool.call.arguments"]
        .as_str()
        .unwrap();
    assert!(arguments.contains(SECRET), "{arguments}");
}

/// `lurkbot agent` (no gateway: the turn runs in the command) exports its turn like the
/// gateway does — one trace, the model and tool calls children of the turn — before it exits;
/// so does each turn of `lurkbot chat`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_turns_are_traced_before_the_command_ends() {
    let t = Test::init();
    let receiver = Receiver::start();
    let fake = FakeProvider::start(vec![
        Step::call("c1", "terminal_exec", json!({"command": "help"})),
        Step::text("Done."),
        Step::text("Again."),
    ])
    .await;
    let mut env = model_env(&fake);
    env.push((
        "OTEL_EXPORTER_OTLP_ENDPOINT".into(),
        format!("http://127.0.0.1:{}", receiver.port),
    ));
    let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let out = tokio::task::block_in_place(|| t.run_env(&["agent", "-m", "help me"], &pairs));
    assert_eq!(out.status, 0, "{}", out.stderr);
    // The command has ended: whatever arrives was sent before it did.
    until("the CLI turn's spans reached the receiver", || {
        receiver.spans().len() >= 4
    })
    .await;
    let spans = receiver.spans();
    let turn = named(&spans, "invoke_agent main");
    assert_eq!(turn.len(), 1, "{spans:#?}");
    assert_eq!(
        turn[0]["attributes"]["gen_ai.operation.name"],
        "invoke_agent"
    );
    let trace = turn[0]["trace_id"].clone();
    let calls = named(&spans, "chat fake");
    assert_eq!(calls.len(), 2, "{spans:#?}");
    let tool = named(&spans, "execute_tool terminal_exec");
    assert_eq!(tool.len(), 1, "{spans:#?}");
    for child in calls.iter().chain(&tool) {
        assert_eq!(child["trace_id"], trace);
        assert_eq!(child["parent_span_id"], turn[0]["span_id"]);
    }

    // `lurkbot chat`'s turns too: a trace of their own each.
    let out = tokio::task::block_in_place(|| t.run_full(&["chat"], Some("and again\n"), &pairs));
    assert_eq!(out.status, 0, "{}", out.stderr);
    until("the chat turn's spans reached the receiver", || {
        named(&receiver.spans(), "invoke_agent main").len() == 2
    })
    .await;
    let spans = receiver.spans();
    let chat_turn = named(&spans, "invoke_agent main")[1].clone();
    assert_ne!(chat_turn["trace_id"], trace);
    let chat_call: Vec<_> = named(&spans, "chat fake")
        .into_iter()
        .filter(|c| c["trace_id"] == chat_turn["trace_id"])
        .collect();
    assert_eq!(chat_call.len(), 1, "{spans:#?}");
    assert_eq!(chat_call[0]["parent_span_id"], chat_turn["span_id"]);
}

/// A collector asking for credentials gets them from `OTEL_EXPORTER_OTLP_HEADERS` in the
/// home's `.env` (percent-encoded as the specification writes it), and no log line shows them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_collectors_credentials_come_from_env_and_are_never_logged() {
    let t = Test::init();
    std::fs::write(
        t.home.join(".env"),
        "OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20otel-s3cret\n",
    )
    .unwrap();
    let receiver = Receiver::requiring(Some("Authorization: Bearer otel-s3cret"));
    let (spans, _, logs) = traced_turn_to(receiver, &t, &mut Vec::new()).await;
    assert_eq!(named(&spans, "invoke_agent main").len(), 1, "{spans:#?}");
    assert!(!logs.contains("otel-s3cret"), "{logs}");
}

/// A Telegram message's turn: a root trace whose MCP tool call hands its context to the server
/// (`params._meta.traceparent`, read by the official SDK), whose `message` call holds the
/// gate's decision, and whose reply's delivery is a child of the turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_turn_traces_its_mcp_call_gate_decision_and_delivery() {
    use lurkbot_test_support::telegram_server::TelegramServer;
    const TOKEN: &str = "123456:traced";
    let t = Test::init();
    let telegram = TelegramServer::start(TOKEN);
    crate::nothing_lost::with_telegram(&t, &telegram, TOKEN);
    append_config(
        &t,
        &format!(
            "[mcp.servers.traced]\ncommand = [\"{}\", \"{}\"]",
            lurkbot_test_support::venv::test_python().display(),
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/traced_server.py")
        ),
    );
    let receiver = Receiver::start();
    let fake = FakeProvider::start(Vec::new()).await;
    fake.record(true);
    // A probe answers whether the MCP server's tool is offered yet; the message's turn calls
    // it, then `message`, then answers.
    fake.respond(|body| {
        let text = body.to_string();
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let last = messages.last().cloned().unwrap_or(Value::Null);
        if text.contains("probe") {
            let ready = body["tools"].to_string().contains("traced__whoami");
            return Step::text(if ready { "ready" } else { "not yet" });
        }
        match last["tool_call_id"].as_str() {
            None => Step::call("c1", "traced__whoami", json!({})),
            Some("c1") => Step::call(
                "c2",
                "message",
                json!({"channel": "webchat", "text": "a note"}),
            ),
            Some(_) => Step::text("Answered."),
        }
    });
    let mut env = model_env(&fake);
    env.push((
        "OTEL_EXPORTER_OTLP_ENDPOINT".into(),
        format!("http://127.0.0.1:{}", receiver.port),
    ));
    let gw = start_with(&t, &env);
    let (addr, token) = (gw.addr.clone(), t.gateway_token());
    let mut probes = 0;
    until("the MCP server's tool is offered", || {
        probes += 1;
        let (_, answer) = crate::nothing_lost::chat_completion_in(
            &addr,
            &token,
            &format!("probe{probes}"),
            &format!("agent:main:dm:api:probe{probes}"),
            "probe",
        );
        answer["choices"][0]["message"]["content"] == "ready"
    })
    .await;
    let before = fake.requests().len();
    telegram.user_writes(42, 42, "ada", "private", "hello");
    let sent = telegram.wait_sent(1, std::time::Duration::from_secs(60));
    assert_eq!(sent.len(), 1);
    until("the delivery's span reached the receiver", || {
        receiver
            .spans()
            .iter()
            .any(|s| s["name"] == "deliver telegram")
    })
    .await;
    drop(gw);
    // The probes' turns are traces of their own.
    let spans = receiver.spans();
    let turn: Vec<&Value> = named(&spans, "invoke_agent main")
        .into_iter()
        .filter(|s| s["attributes"]["lurkbot.turn.source"] == "telegram")
        .collect();
    assert_eq!(turn.len(), 1, "{spans:#?}");
    let turn = turn[0];
    let spans: Vec<Value> = spans
        .iter()
        .filter(|s| s["trace_id"] == turn["trace_id"])
        .cloned()
        .collect();
    assert_eq!(
        turn["parent_span_id"], "",
        "a channel's turn starts its trace"
    );

    let whoami = named(&spans, "execute_tool traced__whoami");
    assert_eq!(whoami.len(), 1, "{spans:#?}");
    assert_eq!(whoami[0]["parent_span_id"], turn["span_id"]);
    let expected = format!(
        "traceparent=00-{}-{}-01",
        turn["trace_id"].as_str().unwrap(),
        whoami[0]["span_id"].as_str().unwrap()
    );
    let told = fake.requests()[before + 1].body.to_string();
    assert!(told.contains(&expected), "{expected} not in {told}");

    let gate = named(&spans, "gate message");
    assert_eq!(gate.len(), 1, "{spans:#?}");
    let message = named(&spans, "execute_tool message");
    assert_eq!(gate[0]["parent_span_id"], message[0]["span_id"]);
    assert_eq!(gate[0]["attributes"]["lurkbot.gate.asker"], "model");
    assert!(gate[0]["attributes"]["lurkbot.gate.verdict"].is_string());

    let delivery = named(&spans, "deliver telegram");
    assert_eq!(delivery.len(), 1);
    assert_eq!(delivery[0]["parent_span_id"], turn["span_id"]);
    assert_eq!(delivery[0]["kind"], 3);
    assert_eq!(delivery[0]["attributes"]["lurkbot.channel"], "telegram");
    // The turn, three model calls, two tool calls, the gate, the delivery.
    assert_eq!(spans.len(), 8, "{spans:#?}");
}

/// A collector that is down costs the turn nothing: it is answered, and the spans the exporter
/// could not send are dropped and counted (`/metrics`), with one warning in the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_a_dead_collector_cannot_take_are_dropped_and_counted() {
    let t = Test::init();
    let fake = FakeProvider::start(vec![Step::text("Answered anyway.")]).await;
    let mut env = model_env(&fake);
    let nobody = crate::util::free_port();
    env.push((
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT".into(),
        format!("http://127.0.0.1:{nobody}/v1/traces"),
    ));
    let gw = start_with(&t, &env);
    let (addr, token) = (gw.addr.clone(), t.gateway_token());
    let traceparent = format!("00-{TRACE}-{CALLER_SPAN}-01");
    let status = tokio::task::spawn_blocking(move || {
        ask_traced(&addr, &token, &traceparent, "Are you there?")
    })
    .await
    .unwrap();
    assert_eq!(status, 200);
    let (addr, token) = (gw.addr.clone(), t.gateway_token());
    until("the dropped spans are counted", || {
        metrics_text(&addr, &token)
            .lines()
            .any(|l| l.starts_with("lurkbot_trace_spans_dropped_total{reason=\"export_failed\"}"))
    })
    .await;
    // The counter moves before the warning is written: wait for the line itself.
    until("the warning reached the log", || {
        gw.stderr().contains("traces not exported")
    })
    .await;
    let warned = gw.stderr();
    assert_eq!(warned.matches("traces not exported").count(), 1, "{warned}");
    assert!(
        warned.contains(&format!("127.0.0.1:{nobody}/v1/traces")),
        "{warned}"
    );
}

/// `/metrics` on `addr` with `token`.
fn metrics_text(addr: &str, token: &str) -> String {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(addr) else {
        return String::new();
    };
    let _ = write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    );
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
}
