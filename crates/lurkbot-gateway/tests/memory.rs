//! The gateway keeps the memory index fresh: a note written while it runs is indexed (with its
//! vector from the configured embedder) and `memory.indexed` says so.

use lurkbot_memory::MemoryIndex;

use crate::common::{Client, Gateway, TOKEN};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_note_is_indexed_while_the_gateway_runs() {
    let gw = Gateway::start("", vec![]).await;
    let config = std::fs::read_to_string(gw.home.join("config.toml")).unwrap();
    std::fs::write(
        gw.home.join("config.toml"),
        format!(
            "{config}\n[memory]\nembedder = \"openai\"\nbase_url = \"{}/v1\"\n",
            gw.fake.url
        ),
    )
    .unwrap();
    let (mut c, _) = Client::connect(&gw, TOKEN).await;
    let reload = c.request("gateway.reload", serde_json::json!({})).await;
    assert_eq!(reload["ok"], true, "{reload}");
    std::fs::create_dir_all(gw.home.join("workspace/memory")).unwrap();
    std::fs::write(
        gw.home.join("workspace/memory/2026-11-24.md"),
        "The plumber comes on Thursday at nine.\n",
    )
    .unwrap();
    let event = c
        .event(|e| {
            e["event"] == "memory.indexed"
                && e["payload"]["embedder"] == "openai:text-embedding-3-small"
                && e["payload"]["files"].as_u64() >= Some(1)
                && {
                    let index = MemoryIndex::open(&gw.home).unwrap();
                    !index.rank("plumber", None, 1, 0.0).unwrap().is_empty()
                }
        })
        .await;
    let index = MemoryIndex::open(&gw.home).unwrap();
    let chunks = event["payload"]["chunks"].as_u64().unwrap() as usize;
    assert_eq!(index.vectors().unwrap(), chunks, "{event}");
    assert!(
        gw.fake
            .requests()
            .iter()
            .any(|r| r.path.ends_with("/embeddings") && r.body.to_string().contains("plumber"))
    );
}
