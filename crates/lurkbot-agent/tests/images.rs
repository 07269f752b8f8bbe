//! The `image` tool on pictures made by Pillow (the test venv's): every format, a large photo
//! with EXIF GPS (downscaled, metadata gone), a decompression bomb, a truncated file and HTML
//! named `.png` (refused), and the picture arriving in OpenAI's and Anthropic's own wire formats.

use base64::Engine as _;
use lurkbot_core::SessionKey;
use lurkbot_llm::fake::Step;
use lurkbot_test_support::venv::test_python;
use serde_json::{Value, json};

use crate::common::{Setup, agent, setup};

/// Makes the test pictures in `workspace/pics` with Pillow.
fn make_pictures(s: &Setup) {
    let dir = s.home.join("workspace/pics");
    std::fs::create_dir_all(&dir).unwrap();
    let script = r#"
import sys
from PIL import Image
d = sys.argv[1]
Image.new("RGB", (320, 200), (10, 120, 200)).save(d + "/blue.png")
Image.new("RGB", (64, 48), (200, 10, 10)).save(d + "/red.webp", "WEBP")
frames = [Image.new("P", (40, 30), i) for i in (1, 2, 3)]
frames[0].save(d + "/anim.gif", save_all=True, append_images=frames[1:])
photo = Image.new("RGB", (6000, 4000), (90, 140, 60))
exif = Image.Exif()
exif[0x010F] = "CameraMaker"
gps = {1: "N", 2: (48.0, 51.0, 29.0), 3: "E", 4: (2.0, 17.0, 40.0)}
exif[0x8825] = gps
photo.save(d + "/photo.jpg", "JPEG", quality=80, exif=exif)
Image.new("1", (25000, 25000), 0).save(d + "/bomb.png")
data = open(d + "/blue.png", "rb").read()
open(d + "/cut.png", "wb").write(data[: len(data) // 2])
open(d + "/page.png", "w").write("<!DOCTYPE html><html><body>not a picture</body></html>")
"#;
    lurkbot_test_support::venv::run_python(["-c", script, dir.to_str().unwrap()]);
}

/// One turn on `model` in which the model calls `image` once per argument set; returns the
/// request that carried the results.
async fn look(s: &Setup, model: &str, config: &str, calls: &[Value]) -> Value {
    let before = s.fake.requests().len();
    let steps: Vec<(String, Value)> = calls
        .iter()
        .enumerate()
        .map(|(i, a)| (format!("c{i}"), a.clone()))
        .collect();
    let refs: Vec<(&str, &str, Value)> = steps
        .iter()
        .map(|(id, a)| (id.as_str(), "image", a.clone()))
        .collect();
    s.fake
        .push(vec![Step::calls(&refs), Step::text("I see it.")]);
    let mut a = agent(s, model, config);
    a.turn(&SessionKey::main(), "look", &mut |_| {})
        .await
        .unwrap();
    s.fake.requests()[before + 1].body.clone()
}

fn decode_data_url(url: &str) -> (String, Vec<u8>) {
    let rest = url.strip_prefix("data:").unwrap();
    let (media, data) = rest.split_once(";base64,").unwrap();
    (
        media.to_string(),
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap(),
    )
}

fn dimensions_and_exif(python_input: &[u8]) -> String {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), python_input).unwrap();
    let out = std::process::Command::new(test_python())
        .args([
            "-c",
            "import sys; from PIL import Image; i = Image.open(sys.argv[1]); print(i.format, i.size[0], i.size[1], len(i.getexif()), 'exif' in i.info)",
            file.path().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn images_reach_an_openai_model_downscaled_and_without_metadata() {
    let s = setup(vec![]).await;
    make_pictures(&s);
    let body = look(
        &s,
        "openai/m",
        "",
        &[
            json!({"path": "workspace/pics/photo.jpg", "prompt": "what field is this?"}),
            json!({"path": "workspace/pics/blue.png"}),
            json!({"path": "workspace/pics/red.webp"}),
            json!({"path": "workspace/pics/anim.gif"}),
        ],
    )
    .await;
    let messages = body["messages"].as_array().unwrap();
    let tools: Vec<&Value> = messages.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(tools.len(), 4);
    assert!(
        tools[0]["content"]
            .as_str()
            .unwrap()
            .contains("JPEG 6000×4000, shown at 2048×1365"),
        "{}",
        tools[0]["content"]
    );
    assert!(
        tools[0]["content"]
            .as_str()
            .unwrap()
            .contains("Look for: what field is this?")
    );
    // Chat Completions carries images in a user message right after the tool results.
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user");
    let parts: Vec<&Value> = last["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["type"] == "image_url")
        .collect();
    assert_eq!(parts.len(), 4);
    let (media, photo) = decode_data_url(parts[0]["image_url"]["url"].as_str().unwrap());
    assert_eq!(media, "image/jpeg");
    assert_eq!(
        dimensions_and_exif(&photo),
        "JPEG 2048 1365 0 False",
        "downscaled, EXIF and GPS gone"
    );
    for (part, expected) in parts[1..]
        .iter()
        .zip(["JPEG 320 200", "JPEG 64 48", "JPEG 40 30"])
    {
        let (_, bytes) = decode_data_url(part["image_url"]["url"].as_str().unwrap());
        let seen = dimensions_and_exif(&bytes);
        assert!(seen.starts_with(expected), "{expected}: {seen}");
    }
    // The transcript keeps a reference to the file, not the picture.
    let transcripts = std::fs::read_dir(s.home.join("sessions/main")).unwrap();
    let text: String = transcripts
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert!(
        text.contains("\"path\":\"artifacts/images/"),
        "{}",
        &text[..text.len().min(400)]
    );
    assert!(
        text.len() < 20_000,
        "no base64 in the transcript: {} bytes",
        text.len()
    );
    // The next turn loads the picture again from its file.
    let again = look(
        &s,
        "openai/m",
        "",
        &[json!({"path": "workspace/pics/blue.png"})],
    )
    .await;
    let shown = again["messages"].to_string();
    assert_eq!(
        shown.matches("data:image/").count(),
        5,
        "the earlier four and the new one"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn images_reach_an_anthropic_model_as_image_blocks_and_refusals_are_clear() {
    let s = setup(vec![]).await;
    make_pictures(&s);
    std::fs::write(s.home.join("workspace/pics/.env"), "X=1\n").unwrap();
    let body = look(
        &s,
        "anthropic/m",
        "",
        &[
            json!({"path": "workspace/pics/blue.png"}),
            json!({"path": "workspace/pics/bomb.png"}),
            json!({"path": "workspace/pics/cut.png"}),
            json!({"path": "workspace/pics/page.png"}),
            json!({"path": "config.toml"}),
            json!({"path": "../outside.png"}),
            json!({"url": "http://127.0.0.1:9/x.png"}),
            json!({}),
        ],
    )
    .await;
    let blocks: Vec<Value> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .cloned()
        .collect();
    assert_eq!(blocks.len(), 8);
    let first = blocks[0]["content"].as_array().unwrap();
    assert_eq!(first[1]["type"], "image");
    assert_eq!(first[1]["source"]["type"], "base64");
    assert_eq!(first[1]["source"]["media_type"], "image/jpeg");
    let text = |i: usize| blocks[i]["content"].to_string();
    assert!(
        text(1).contains("ImageTooLarge") && text(1).contains("25000×25000"),
        "{}",
        text(1)
    );
    assert!(text(2).contains("ImageDamaged"), "{}", text(2));
    assert!(
        text(3).contains("NotAnImage") && text(3).contains("an HTML page"),
        "{}",
        text(3)
    );
    assert!(text(4).contains("cannot be read"), "{}", text(4));
    assert!(
        text(5).contains("outside") || text(5).contains("escape"),
        "{}",
        text(5)
    );
    assert!(
        text(6).contains("non-public address") && text(6).contains("allow_private"),
        "{}",
        text(6)
    );
    assert!(text(7).contains("exactly one of path"), "{}", text(7));
    for (i, block) in blocks.iter().enumerate().skip(1) {
        assert_eq!(
            block["content"].as_array().map(Vec::len),
            None,
            "no image with a refusal ({i})"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_without_vision_is_told_so() {
    let s = setup(vec![]).await;
    make_pictures(&s);
    let body = look(
        &s,
        "openai/m",
        "[models.\"openai/m\"]\nvision = false\n",
        &[json!({"path": "workspace/pics/blue.png"})],
    )
    .await;
    let shown = body["messages"].to_string();
    assert!(
        shown.contains("ModelCannotSeeImages") && shown.contains("vision = false"),
        "{shown}"
    );
    assert!(!shown.contains("data:image/"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_without_vision_gets_a_description_from_the_image_model() {
    let s = setup(vec![]).await;
    let out = std::process::Command::new(test_python())
        .args([
            "-c",
            "import sys; from PIL import Image; Image.new('RGB', (320, 200), (10, 120, 200)).save(sys.argv[1])",
            s.home.join("workspace/blue.png").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    // The describer is reached the way any configured model is: its base URL and key from .env.
    std::fs::write(
        s.home.join(".env"),
        format!(
            "ANTHROPIC_BASE_URL={}\nANTHROPIC_API_KEY=test-key\n",
            s.fake.url
        ),
    )
    .unwrap();
    let before = s.fake.requests().len();
    s.fake.push(vec![
        Step::calls(&[(
            "c0",
            "image",
            json!({"path": "workspace/blue.png", "prompt": "what colour?"}),
        )]),
        Step::text("A blue rectangle, wider than tall."),
        Step::text("It is blue."),
    ]);
    let config =
        "[models.\"openai/m\"]\nvision = false\n[tools.media]\nimage_model = \"anthropic/seer\"\n";
    let mut a = agent(&s, "openai/m", config);
    let done = a
        .turn(&SessionKey::main(), "look", &mut |_| {})
        .await
        .unwrap();
    assert_eq!(done.text, "It is blue.");
    let requests = s.fake.requests();
    let described = &requests[before + 1];
    assert_eq!(described.body["model"], "seer");
    let blocks = described.body["messages"][0]["content"].as_array().unwrap();
    assert_eq!(blocks[0]["text"], "what colour?");
    assert_eq!(blocks[1]["type"], "image");
    let answered = requests[before + 2].body["messages"].to_string();
    assert!(
        answered.contains("anthropic/seer described it") && answered.contains("A blue rectangle"),
        "{answered}"
    );
    assert!(
        !answered.contains("data:image/"),
        "the seeing-impaired model gets words only"
    );
    // The description call is counted like any model call.
    let usage: String = std::fs::read_dir(s.home.join("usage"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert!(usage.contains("anthropic/seer"), "{usage}");
}
