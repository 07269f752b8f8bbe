//! The official `openai` Python package (installed in the test venv by `scripts/test.sh`) talks
//! to a gateway backed by the scripted provider: models, a completion, a streamed completion
//! (also with `stream_options.include_usage`), and a wrong key raising its authentication error.

use lurkbot_llm::fake::Step;
use serde_json::Value;

use crate::common::{Gateway, TOKEN};

const SCRIPT: &str = r#"
import json, sys, openai
base, key = sys.argv[1], sys.argv[2]
client = openai.OpenAI(base_url=base, api_key=key)
out = {"models": [m.id for m in client.models.list()]}
r = client.chat.completions.create(model="lurkbot", messages=[{"role": "user", "content": "hello"}])
out["text"] = r.choices[0].message.content
out["finish"] = r.choices[0].finish_reason
pieces = []
for chunk in client.chat.completions.create(model="lurkbot/main", stream=True,
        messages=[{"role": "user", "content": "stream"}]):
    if chunk.choices and chunk.choices[0].delta.content:
        pieces.append(chunk.choices[0].delta.content)
out["pieces"] = pieces
usage = []
for chunk in client.chat.completions.create(model="lurkbot", stream=True,
        stream_options={"include_usage": True},
        messages=[{"role": "user", "content": "count"}]):
    usage.append({"choices": len(chunk.choices),
        "usage": chunk.usage.model_dump() if chunk.usage else None})
out["usage"] = usage
try:
    openai.OpenAI(base_url=base, api_key="wrong", max_retries=0).models.list()
    out["wrong"] = "accepted"
except openai.AuthenticationError as e:
    out["wrong"] = e.status_code
print(json.dumps(out))
"#;

use lurkbot_test_support::venv as test_venv;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_python_sdk_talks_to_the_gateway() {
    let gw = Gateway::start(
        "",
        vec![
            Step::text("Hello from LurkBot."),
            Step::text("Streamed in pieces."),
            Step::text("Counted."),
        ],
    )
    .await;
    let base = gw.url("/v1");
    let python = test_venv::test_python();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(python)
            .args(["-c", SCRIPT, &base, TOKEN])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["models"][0], "lurkbot");
    assert_eq!(result["text"], "Hello from LurkBot.");
    assert_eq!(result["finish"], "stop");
    let pieces: Vec<&str> = result["pieces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(pieces.len() >= 2, "{pieces:?}");
    assert_eq!(pieces.concat(), "Streamed in pieces.");
    assert_eq!(result["wrong"], 401);
    // stream_options.include_usage: one more chunk before [DONE], with no choices and the
    // turn's usage; every other chunk says usage null.
    let usage = result["usage"].as_array().unwrap();
    let last = usage.last().unwrap();
    assert_eq!(last["choices"], 0, "{usage:?}");
    assert!(
        last["usage"]["prompt_tokens"].as_u64().unwrap() > 0,
        "{last}"
    );
    assert_eq!(
        last["usage"]["total_tokens"].as_u64(),
        Some(
            last["usage"]["prompt_tokens"].as_u64().unwrap()
                + last["usage"]["completion_tokens"].as_u64().unwrap()
        )
    );
    assert!(
        usage[..usage.len() - 1]
            .iter()
            .all(|c| c["usage"].is_null()),
        "{usage:?}"
    );
}
