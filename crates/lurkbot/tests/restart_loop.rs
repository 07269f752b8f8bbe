//! The restart loop (ARCHITECTURE.md §6.3): 200 turns through the OpenAI-compatible API, each
//! with its own `Idempotency-Key` and retried by its client until answered, while the gateway
//! is killed with SIGKILL 20 times at moments spread over the turns (a seeded generator picks
//! them; where a kill lands in a turn varies from run to run, and no assertion depends on it).
//! Every turn is answered once — the client gets its own answer, the transcript holds each
//! message and each answer exactly once, the journal ends every turn done — and the model is
//! asked again only for calls a kill cut.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use lurkbot_llm::fake::{FakeProvider, Step};

use crate::nothing_lost::{chat_completion, transcript_messages};
use crate::util::{Test, free_port, start_gateway_on};

const TURNS: usize = 200;
const KILLS: usize = 20;

/// A small seeded generator (xorshift): the same moments every run.
struct Moments(u64);

impl Moments {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_kills_over_two_hundred_turns_lose_nothing_and_answer_nothing_twice() {
    let t = Test::init();
    let fake = FakeProvider::start(Vec::new()).await;
    // The answer names the message it answers: the last user message of the request.
    fake.respond(|body| {
        let asked = body["messages"]
            .as_array()
            .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_string();
        Step::text(&format!("answer to {asked}"))
    });
    fake.record(true);
    let base = format!("{}/v1", fake.url);
    let env = [
        ("LURKBOT_MODEL", "openai/fake"),
        ("OPENAI_BASE_URL", base.as_str()),
    ];
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let token = t.gateway_token();
    let mut gw = start_gateway_on(&t, &env, port);

    let answered = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicBool::new(false));
    let client = {
        let (answered, failed, addr, token) = (
            answered.clone(),
            failed.clone(),
            addr.clone(),
            token.clone(),
        );
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(300);
            for i in 0..TURNS {
                let (key, message) = (format!("loop-{i}"), format!("turn {i}"));
                loop {
                    let (status, body) = chat_completion(&addr, &token, &key, &message);
                    let text = body["choices"][0]["message"]["content"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    if status == 200 {
                        assert_eq!(text, format!("answer to turn {i}"), "turn {i}");
                        break;
                    }
                    if status == 422 || Instant::now() > deadline {
                        failed.store(true, Ordering::SeqCst);
                        panic!("turn {i}: status {status} {text}");
                    }
                    // The gateway is down, starting or stopping: the same request again.
                    std::thread::sleep(Duration::from_millis(5));
                }
                answered.store(i + 1, Ordering::SeqCst);
            }
        })
    };

    // Kills spread over the turns: after a random turn of each tenth, a few ms into the next;
    // each gateway answers one turn at least before it is killed (so no turn is cut at every
    // start: a turn the gateway died in three times is failed on purpose, §6.3).
    let mut moments = Moments(0x9e37_79b9_7f4a_7c15);
    let mut restarted_at = 0u64;
    for k in 0..KILLS {
        let after = ((k * TURNS / KILLS) as u64 + moments.below((TURNS / KILLS) as u64))
            .max(restarted_at + 1);
        let deadline = Instant::now() + Duration::from_secs(300);
        while (answered.load(Ordering::SeqCst) as u64) < after && !failed.load(Ordering::SeqCst) {
            assert!(Instant::now() < deadline, "no progress past turn {after}");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        tokio::time::sleep(Duration::from_micros(moments.below(8_000))).await;
        gw.child.kill().unwrap();
        gw.child.wait().unwrap();
        drop(gw);
        restarted_at = answered.load(Ordering::SeqCst) as u64;
        gw = start_gateway_on(&t, &env, port);
    }
    tokio::task::spawn_blocking(move || client.join())
        .await
        .unwrap()
        .expect("every turn answered");
    let (status, stderr) = tokio::task::spawn_blocking(move || gw.stop())
        .await
        .unwrap();
    assert_eq!(status, 0, "{stderr}");

    // The transcript: each message once, each answer once, in order.
    let messages = transcript_messages(&t);
    let contents: Vec<(String, String)> = messages
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or_default().to_string(),
                m["content"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let mut expected = Vec::new();
    for i in 0..TURNS {
        expected.push(("user".to_string(), format!("turn {i}")));
        expected.push(("assistant".to_string(), format!("answer to turn {i}")));
    }
    assert_eq!(
        contents, expected,
        "each message and each answer exactly once"
    );

    // The journal: every turn done; the model asked once per turn plus once per cut call.
    let store = lurkbot_state::Store::open(&lurkbot_core::Home::open(&t.home).unwrap()).unwrap();
    assert_eq!(store.turn_counts().unwrap(), [0, 0, TURNS as u64, 0]);
    let calls = fake.requests().len();
    eprintln!("{calls} model calls for {TURNS} turns and {KILLS} kills");
    assert!(
        (TURNS..=TURNS + KILLS).contains(&calls),
        "{calls} model calls for {TURNS} turns and {KILLS} kills"
    );
}
