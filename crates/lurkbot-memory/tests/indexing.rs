//! The memory index on real files in a temporary home: incremental runs, deletions, a rebuild
//! equal to the incremental result, and keyword search with line ranges.
use lurkbot_core::Home;
use lurkbot_memory::MemoryIndex;

fn home() -> (tempfile::TempDir, Home) {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::open(dir.path()).unwrap();
    std::fs::create_dir_all(home.join("workspace/memory")).unwrap();
    (dir, home)
}

fn long_note(topic: &str, lines: usize) -> String {
    (1..=lines)
        .map(|i| format!("{topic} note {i}: the weekly review covers budgets and plans.\n"))
        .collect()
}

#[tokio::test]
async fn incremental_runs_touch_only_what_changed() {
    let (_dir, home) = home();
    std::fs::write(
        home.join("workspace/MEMORY.md"),
        "# Memory\nThe deploy key is ZX-4471.\nAlice prefers tea.\n",
    )
    .unwrap();
    std::fs::write(
        home.join("workspace/memory/2026-11-20.md"),
        long_note("Garden", 120),
    )
    .unwrap();
    std::fs::write(home.join("workspace/memory/notes.txt"), "not memory").unwrap();
    let mut index = MemoryIndex::open(&home).unwrap();
    let first = index.index(false, None).await.unwrap();
    assert_eq!(
        (first.files, first.added, first.updated, first.removed),
        (2, 2, 0, 0)
    );
    assert!(first.chunks > 2, "{first:?}");
    assert_eq!(first.embedder, "none");

    // Nothing changed: nothing is redone.
    let again = index.index(false, None).await.unwrap();
    assert_eq!((again.added, again.updated, again.removed), (0, 0, 0));
    assert_eq!(again.chunks, first.chunks);

    // A changed file is redone, a deleted one leaves.
    std::fs::write(
        home.join("workspace/MEMORY.md"),
        "# Memory\nThe deploy key is ZX-9000.\n",
    )
    .unwrap();
    std::fs::remove_file(home.join("workspace/memory/2026-11-20.md")).unwrap();
    let changed = index.index(false, None).await.unwrap();
    assert_eq!((changed.files, changed.updated, changed.removed), (1, 1, 1));
    assert_eq!(changed.chunks, 1);
    let hits = index.search("ZX-9000", None, 5, 0.0).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert!(
        index
            .search("ZX-4471", None, 5, 0.0)
            .await
            .unwrap()
            .is_empty(),
        "old text is gone"
    );
    assert!(
        index
            .search("garden", None, 5, 0.0)
            .await
            .unwrap()
            .is_empty(),
        "deleted file is gone"
    );
}

#[tokio::test]
async fn a_rebuild_gives_the_same_chunks() {
    let (_dir, home) = home();
    std::fs::write(home.join("workspace/MEMORY.md"), long_note("House", 80)).unwrap();
    std::fs::write(home.join("workspace/memory/a.md"), long_note("Car", 30)).unwrap();
    let mut index = MemoryIndex::open(&home).unwrap();
    index.index(false, None).await.unwrap();
    std::fs::write(home.join("workspace/memory/a.md"), long_note("Bike", 60)).unwrap();
    index.index(false, None).await.unwrap();
    let incremental = index.all_chunks().unwrap();
    let report = index.index(true, None).await.unwrap();
    assert_eq!(report.added, 2);
    assert_eq!(index.all_chunks().unwrap(), incremental);
}

#[tokio::test]
async fn search_ranks_by_bm25_with_line_ranges() {
    let (_dir, home) = home();
    let mut text = long_note("Filler", 60);
    text.push_str("The router admin password hint is in the blue folder.\n");
    text.push_str(&long_note("More", 60));
    std::fs::write(home.join("workspace/memory/2026-11-21.md"), &text).unwrap();
    std::fs::write(
        home.join("workspace/MEMORY.md"),
        "Router model: RT-AX58U.\n",
    )
    .unwrap();
    let mut index = MemoryIndex::open(&home).unwrap();
    index.index(false, None).await.unwrap();

    let hits = index.search("blue folder", None, 3, 0.0).await.unwrap();
    let top = &hits[0];
    assert_eq!(top.path, "memory/2026-11-21.md");
    assert!(top.start_line <= 61 && 61 <= top.end_line, "{top:?}");
    assert!(top.snippet.contains("blue folder"), "{top:?}");
    assert!(top.score > 0.0 && top.score < 1.0);
    let exact = index.search("RT-AX58U", None, 3, 0.0).await.unwrap();
    assert_eq!(exact[0].path, "MEMORY.md");
    assert_eq!((exact[0].start_line, exact[0].end_line), (1, 1));
    // A minimum score above every hit leaves none; a query with no words finds nothing.
    assert!(
        index
            .search("blue folder", None, 3, 0.999)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        index
            .search("()*\"", None, 3, 0.0)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn a_settled_file_is_skipped_by_its_stat_and_a_fresh_one_is_always_read() {
    let (_dir, home) = home();
    let path = home.join("workspace/MEMORY.md");
    let set_time = |time: std::time::SystemTime| {
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(time)
            .unwrap();
    };
    let mut index = MemoryIndex::open(&home).unwrap();

    // Fresh (modified just now): a same-size rewrite in the same clock tick is still seen.
    let now = std::time::SystemTime::now();
    std::fs::write(&path, "code AAAA\n").unwrap();
    set_time(now);
    index.index(false, None).await.unwrap();
    std::fs::write(&path, "code BBBB\n").unwrap();
    set_time(now);
    let report = index.index(false, None).await.unwrap();
    assert_eq!(report.updated, 1, "a fresh file is read whatever its stat");

    // Settled (an hour old): the same size and time stand for the text; nothing is read.
    let old = now - std::time::Duration::from_secs(3600);
    set_time(old);
    index.index(false, None).await.unwrap();
    std::fs::write(&path, "code CCCC\n").unwrap();
    set_time(old);
    let report = index.index(false, None).await.unwrap();
    assert_eq!(report.updated, 0, "skipped by its stat");
    assert!(index.search("CCCC", None, 1, 0.0).await.unwrap().is_empty());
    // A rebuild reads everything.
    index.index(true, None).await.unwrap();
    assert_eq!(index.search("CCCC", None, 1, 0.0).await.unwrap().len(), 1);
}
