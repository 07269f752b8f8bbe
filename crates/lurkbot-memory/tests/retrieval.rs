//! Retrieval quality with the local embedder (all-MiniLM-L6-v2 run in-process; fetched by
//! scripts/test.sh into LURKBOT_EMBEDDING_MODEL) on a small written corpus: a query keyword
//! search misses and hybrid finds (a synonym), and one that vectors rank poorly and BM25
//! rescues (an exact code).
use lurkbot_core::{Home, MemoryConfig};
use lurkbot_memory::{Hit, MemoryIndex, embedder};

const NOTES: &[(&str, &str)] = &[
    (
        "memory/car.md",
        "My automobile is a 2019 Subaru Outback. It goes to the garage on Rue Garibaldi every spring for servicing and new tyres.\n",
    ),
    (
        "memory/garden.md",
        "The tomatoes in the back garden need watering every evening in July; the hose is in the shed.\n",
    ),
    (
        "memory/recipes.md",
        "Grandma's lemon cake: three eggs, a cup of sugar, the zest of two lemons, bake forty minutes.\n",
    ),
    (
        "memory/work.md",
        "Quarterly planning with the platform team happens on the first Tuesday of each quarter.\n",
    ),
    (
        "memory/ticket-a.md",
        "Ticket INC-20391: the office printer on the third floor jams on double-sided jobs.\n",
    ),
    (
        "memory/ticket-b.md",
        "Ticket INC-20931: the office printer on the second floor prints blank pages.\n",
    ),
    (
        "memory/ticket-c.md",
        "Ticket INC-29031: the office printer in the lobby jams when the tray is full.\n",
    ),
    (
        "memory/ticket-d.md",
        "Ticket INC-20913: the office printer on the fourth floor is out of toner again.\n",
    ),
];

fn paths(hits: &[Hit]) -> Vec<&str> {
    hits.iter().map(|h| h.path.as_str()).collect()
}

#[tokio::test]
async fn hybrid_finds_synonyms_and_bm25_rescues_exact_codes() {
    let model = std::env::var("LURKBOT_EMBEDDING_MODEL").expect(
        "LURKBOT_EMBEDDING_MODEL is not set: scripts/test.sh fetches all-MiniLM-L6-v2 and sets it",
    );
    let dir = tempfile::tempdir().unwrap();
    let home = Home::open(dir.path()).unwrap();
    std::fs::create_dir_all(home.join("workspace/memory")).unwrap();
    for (path, text) in NOTES {
        std::fs::write(home.join(&format!("workspace/{path}")), text).unwrap();
    }
    let config = MemoryConfig {
        embedder: "local".into(),
        local_model_dir: Some(model),
        ..MemoryConfig::default()
    };
    let local = embedder(&home, &config, &|_| None).unwrap().unwrap();
    assert_eq!(local.id(), "local:all-MiniLM-L6-v2");
    let mut index = MemoryIndex::open(&home).unwrap();
    let report = index.index(false, Some(local.as_ref())).await.unwrap();
    assert_eq!((report.chunks, report.embedded), (8, 8));

    let min = MemoryConfig::default().min_score;

    // A synonym: no word in common, so keyword search finds nothing; the vectors find the car.
    let keyword = index
        .search("vehicle maintenance", None, 8, 0.0)
        .await
        .unwrap();
    assert!(keyword.is_empty(), "{keyword:?}");
    let hybrid = index
        .search("vehicle maintenance", Some(local.as_ref()), 8, min)
        .await
        .unwrap();
    assert_eq!(paths(&hybrid).first(), Some(&"memory/car.md"), "{hybrid:?}");

    // An exact code among near-identical ones: the vectors put another ticket first, BM25's
    // exact match puts the right one first in the hybrid ranking.
    let code = "INC-20931";
    let q = local
        .embed(&[code.to_string()])
        .await
        .unwrap()
        .pop()
        .unwrap();
    let by_vector = index.rank("", Some((local.id(), &q)), 8, 0.0).unwrap();
    let rank = paths(&by_vector)
        .iter()
        .position(|p| *p == "memory/ticket-b.md")
        .unwrap();
    assert!(rank > 0, "the vectors alone rank it first: {by_vector:?}");
    let hybrid = index
        .search(code, Some(local.as_ref()), 8, min)
        .await
        .unwrap();
    assert_eq!(
        paths(&hybrid).first(),
        Some(&"memory/ticket-b.md"),
        "{hybrid:?}"
    );
    assert_eq!(hybrid[0].start_line, 1);

    // Pooling over the real tokens only: unrelated sentences are far apart (naive mean pooling
    // over the padding makes them look alike).
    let pair = local
        .embed(&[
            "The cat sleeps on the sofa all afternoon.".to_string(),
            "The quarterly tax filing deadline is in April, so gather the receipts early."
                .to_string(),
        ])
        .await
        .unwrap();
    let cosine: f32 = pair[0].iter().zip(&pair[1]).map(|(a, b)| a * b).sum();
    assert!(cosine < 0.2, "unrelated texts at cosine {cosine}");

    // Unchanged files cost no model run the second time.
    let again = index.index(false, Some(local.as_ref())).await.unwrap();
    assert_eq!(again.embedded, 0);
}
