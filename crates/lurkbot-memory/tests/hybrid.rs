//! The vector half against the scripted server's `/v1/embeddings` (the only scripted part; its
//! vectors are hashed words): batching, the cache by chunk hash, a change of embedder, a
//! failing embedder that leaves keyword search working, and hybrid scores.
use lurkbot_core::{Home, MemoryConfig};
use lurkbot_llm::fake::FakeProvider;
use lurkbot_memory::{Embedder, MemoryError, MemoryIndex, embedder};
use std::sync::Arc;

fn home() -> (tempfile::TempDir, Home) {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::open(dir.path()).unwrap();
    std::fs::create_dir_all(home.join("workspace/memory")).unwrap();
    (dir, home)
}

fn openai(home: &Home, base_url: &str, model: &str) -> Arc<dyn Embedder> {
    let config = MemoryConfig {
        embedder: "openai".into(),
        base_url: Some(base_url.into()),
        model: Some(model.into()),
        ..MemoryConfig::default()
    };
    embedder(home, &config, &|name| {
        (name == "MEMORY_EMBEDDINGS_API_KEY").then(|| "sk-memory".to_string())
    })
    .unwrap()
    .unwrap()
}

fn notes(topic: &str, lines: usize) -> String {
    (1..=lines)
        .map(|i| format!("{topic} entry {i}: item number {i} of the {topic} list.\n"))
        .collect()
}

fn embedding_requests(fake: &FakeProvider) -> Vec<usize> {
    fake.requests()
        .iter()
        .filter(|r| r.path.ends_with("/embeddings"))
        .map(|r| r.body["input"].as_array().map_or(0, Vec::len))
        .collect()
}

#[tokio::test]
async fn vectors_are_batched_and_cached_by_chunk_hash() {
    let (_dir, home) = home();
    let fake = FakeProvider::start(Vec::new()).await;
    let embedder = openai(&home, &format!("{}/v1", fake.url), "text-embedding-3-small");
    for day in 1..=9 {
        std::fs::write(
            home.join(&format!("workspace/memory/2026-11-0{day}.md")),
            notes(&format!("day{day}"), 200),
        )
        .unwrap();
    }
    let mut index = MemoryIndex::open(&home).unwrap();
    let first = index.index(false, Some(embedder.as_ref())).await.unwrap();
    assert_eq!(first.embedder, "openai:text-embedding-3-small");
    assert!(first.chunks > 64, "more than one batch: {first:?}");
    assert_eq!(first.embedded, first.chunks);
    assert_eq!(index.vectors().unwrap(), first.chunks);
    let batches = embedding_requests(&fake);
    assert_eq!(batches.len(), first.chunks.div_ceil(64), "{batches:?}");
    assert!(batches.iter().all(|n| *n <= 64));
    assert!(
        fake.requests()
            .iter()
            .all(|r| r.key.as_deref() == Some("sk-memory"))
    );

    // Nothing changed: nothing is embedded.
    let again = index.index(false, Some(embedder.as_ref())).await.unwrap();
    assert_eq!(again.embedded, 0);
    assert_eq!(embedding_requests(&fake).len(), batches.len());

    // One line added at the end of one file: only its last chunk is new.
    let path = home.join("workspace/memory/2026-11-05.md");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("A closing remark about the heron by the pond.\n");
    std::fs::write(&path, text).unwrap();
    let changed = index.index(false, Some(embedder.as_ref())).await.unwrap();
    assert_eq!(changed.updated, 1);
    assert_eq!(changed.embedded, 1, "{changed:?}");

    // A deleted file's vectors go; a rebuild costs no embedding.
    std::fs::remove_file(home.join("workspace/memory/2026-11-01.md")).unwrap();
    let removed = index.index(false, Some(embedder.as_ref())).await.unwrap();
    assert_eq!(index.vectors().unwrap(), removed.chunks);
    let rebuilt = index.index(true, Some(embedder.as_ref())).await.unwrap();
    assert_eq!(rebuilt.embedded, 0);
    assert_eq!(index.vectors().unwrap(), rebuilt.chunks);
}

#[tokio::test]
async fn another_model_embeds_everything_anew() {
    let (_dir, home) = home();
    let fake = FakeProvider::start(Vec::new()).await;
    std::fs::write(home.join("workspace/MEMORY.md"), notes("pantry", 30)).unwrap();
    let mut index = MemoryIndex::open(&home).unwrap();
    let small = openai(&home, &format!("{}/v1", fake.url), "small");
    let first = index.index(false, Some(small.as_ref())).await.unwrap();
    let large = openai(&home, &format!("{}/v1", fake.url), "large");
    let second = index.index(false, Some(large.as_ref())).await.unwrap();
    assert_eq!(second.embedded, first.chunks);
    assert_eq!(second.embedder, "openai:large");
    // The query is embedded by the same model, so vectors are compared like with like.
    let hits = index
        .search("pantry entry 7", Some(large.as_ref()), 3, 0.0)
        .await
        .unwrap();
    assert!(!hits.is_empty());
    let last = fake.requests().pop().unwrap();
    assert_eq!(last.body["model"], "large");
}

#[tokio::test]
async fn a_failing_embedder_leaves_keyword_search_working() {
    let (_dir, home) = home();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let down = openai(&home, &format!("http://127.0.0.1:{port}/v1"), "m");
    std::fs::write(
        home.join("workspace/MEMORY.md"),
        "The spare key is under the blue flowerpot.\n",
    )
    .unwrap();
    let mut index = MemoryIndex::open(&home).unwrap();
    let error = index.index(false, Some(down.as_ref())).await.unwrap_err();
    assert!(matches!(error, MemoryError::Embedder { .. }), "{error}");
    assert!(
        error.to_string().contains(&format!("127.0.0.1:{port}")),
        "{error}"
    );
    let hits = index.search("flowerpot", None, 3, 0.0).await.unwrap();
    assert_eq!(
        hits.len(),
        1,
        "the keyword index was written before the embedder failed"
    );
}

#[tokio::test]
async fn hybrid_scores_weigh_vectors_and_keywords() {
    let (_dir, home) = home();
    let fake = FakeProvider::start(Vec::new()).await;
    let embedder = openai(&home, &format!("{}/v1", fake.url), "m");
    std::fs::write(
        home.join("workspace/memory/a.md"),
        "Heron sightings by the pond in spring.\n",
    )
    .unwrap();
    std::fs::write(
        home.join("workspace/memory/b.md"),
        "Invoices are due on the first Monday.\n",
    )
    .unwrap();
    let mut index = MemoryIndex::open(&home).unwrap();
    index.index(false, Some(embedder.as_ref())).await.unwrap();
    let keyword = index.search("heron pond", None, 5, 0.0).await.unwrap();
    let hybrid = index
        .search("heron pond", Some(embedder.as_ref()), 5, 0.0)
        .await
        .unwrap();
    assert_eq!(hybrid[0].path, "memory/a.md");
    // Cosine of the hashed-word vectors, recomputed here, weighs 0.7; the keyword score 0.3.
    let a = lurkbot_llm::fake::fake_embedding("Heron sightings by the pond in spring.");
    let q = lurkbot_llm::fake::fake_embedding("heron pond");
    let cosine: f32 = a.iter().zip(&q).map(|(x, y)| x * y).sum();
    let expected = 0.7 * f64::from(cosine) + 0.3 * keyword[0].score;
    assert!(
        (hybrid[0].score - expected).abs() < 1e-3,
        "{} vs {expected}",
        hybrid[0].score
    );
    // A minimum score between the two hits keeps only the better one.
    let only = index
        .search(
            "heron pond",
            Some(embedder.as_ref()),
            5,
            hybrid[0].score - 1e-6,
        )
        .await
        .unwrap();
    assert_eq!(only.len(), 1);
}
