//! `image_url` parts through the OpenAI-compatible API: a data URL of a Pillow-made picture
//! reaches the model scaled and re-encoded; a URL to fetch, a picture that is an HTML page and
//! bad base64 are refused with 400 and a message saying what to send.

use lurkbot_llm::fake::Step;
use serde_json::{Value, json};

use crate::common::{Gateway, TOKEN};

fn png_data_url(width: u32, height: u32) -> String {
    let out = lurkbot_test_support::venv::run_python([
        "-c",
        "import sys, io, base64; from PIL import Image; b = io.BytesIO(); Image.new('RGB', (int(sys.argv[1]), int(sys.argv[2])), (0, 160, 60)).save(b, 'PNG'); print('data:image/png;base64,' + base64.b64encode(b.getvalue()).decode())",
        &width.to_string(),
        &height.to_string(),
    ]);
    out.trim().to_string()
}

async fn ask(gw: &Gateway, content: Value) -> (u16, Value) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let res = reqwest::Client::new()
        .post(gw.url("/v1/chat/completions"))
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(
            json!({"model": "lurkbot", "messages": [{"role": "user", "content": content}]})
                .to_string(),
        )
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    (
        status,
        serde_json::from_slice(&res.bytes().await.unwrap()).unwrap_or(Value::Null),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_url_parts_reach_the_model_and_bad_ones_are_refused() {
    let gw = Gateway::start("", vec![Step::text("A green picture.")]).await;
    let (status, answer) = ask(
        &gw,
        json!([{"type": "text", "text": "what is this?"},
               {"type": "image_url", "image_url": {"url": png_data_url(4000, 1000)}}]),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["choices"][0]["message"]["content"],
        "A green picture."
    );
    let sent = &gw.fake.requests()[0].body;
    let user = sent["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(user["content"][0]["text"], "what is this?");
    let url = user["content"][1]["image_url"]["url"].as_str().unwrap();
    assert!(
        url.starts_with("data:image/jpeg;base64,"),
        "re-encoded: {}",
        &url[..40]
    );
    assert!(url.len() < 200_000);

    let refusals = [
        (
            json!([{"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}]),
            "data: URL",
        ),
        (
            json!([{"type": "image_url", "image_url": {"url": "data:image/png;base64,PGh0bWw+PGJvZHk+aGk8L2JvZHk+PC9odG1sPg=="}}]),
            "NotAnImage",
        ),
        (
            json!([{"type": "image_url", "image_url": {"url": "data:image/png;base64,%%%"}}]),
            "base64",
        ),
    ];
    for (content, expected) in refusals {
        let (status, answer) = ask(&gw, content).await;
        assert_eq!(status, 400, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(expected), "{expected}: {message}");
    }
    assert_eq!(
        gw.fake.requests().len(),
        1,
        "no refused request reached the model"
    );
}

/// The web UI's attach button: `chat.send` with `images` shows them with the message; the
/// history names the kept file, which `GET /v1/images/<name>` serves back with the token only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_send_images_are_shown_kept_and_served_back_with_the_token() {
    let gw = Gateway::start("", vec![Step::text("Green.")]).await;
    let (mut c, _) = crate::common::Client::connect(&gw, TOKEN).await;
    let sent = c
        .request(
            "chat.send",
            json!({"message": "colour?", "images": [png_data_url(300, 200)]}),
        )
        .await;
    let run_id = sent["payload"]["runId"]
        .as_str()
        .unwrap_or_else(|| panic!("{sent}"))
        .to_string();
    let waited = c
        .request("agent.wait", json!({"runId": run_id, "timeoutMs": 10000}))
        .await;
    assert_eq!(waited["payload"]["text"], "Green.");
    let user = gw.fake.requests()[0].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(
        user["content"][1]["image_url"]["url"]
            .as_str()
            .unwrap()
            .starts_with("data:image/jpeg;base64,")
    );
    let history = c.request("chat.history", json!({})).await;
    let path = history["payload"]["messages"][0]["message"]["images"][0]["path"]
        .as_str()
        .unwrap_or_else(|| panic!("{history}"))
        .to_string();
    let name = path.rsplit('/').next().unwrap();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let with_token = http
        .get(gw.url(&format!("/v1/images/{name}")))
        .header("authorization", format!("Bearer {TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(with_token.status(), 200);
    assert_eq!(with_token.headers()["content-type"], "image/jpeg");
    assert_eq!(
        with_token.bytes().await.unwrap(),
        std::fs::read(gw.home.join(&path)).unwrap()
    );
    let without = http
        .get(gw.url(&format!("/v1/images/{name}")))
        .send()
        .await
        .unwrap();
    assert_eq!(without.status(), 401);
    for bad in [
        "config.toml",
        "..%2Fconfig.toml",
        &format!("{}.jpg", "0".repeat(32)),
        "x.gif",
    ] {
        let res = http
            .get(gw.url(&format!("/v1/images/{bad}")))
            .header("authorization", format!("Bearer {TOKEN}"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 404, "{bad}");
    }
    // A picture that is not one, or a URL to fetch, is refused before any turn.
    let refused = c
        .request(
            "chat.send",
            json!({"message": "x", "images": ["https://example.com/a.png"]}),
        )
        .await;
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("data: URL"),
        "{refused}"
    );
    let refused = c
        .request(
            "chat.send",
            json!({"message": "x", "images": ["data:image/png;base64,aGVsbG8="]}),
        )
        .await;
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("NotAnImage"),
        "{refused}"
    );
    assert_eq!(gw.fake.requests().len(), 1);
}
