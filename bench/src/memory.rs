//! `lurkbot-bench memory`: the memory index at 50,000 chunks (about 64 MiB of notes in 500
//! files of generated words), in this process through `lurkbot-memory`:
//!
//! - index build from nothing, keyword only and then the vectors (384 dimensions, the size of
//!   all-MiniLM-L6-v2's);
//! - `memory_search` as the tool runs it — bring the index up to date (a `stat` per file), then
//!   search — p50/p99 over the queries, keyword only and hybrid.
//!
//! The vectors come from an in-process stand-in (hashed words, no model), so the figures are
//! LurkBot's own cost — SQLite FTS5, sqlite-vec's exact nearest-neighbour scan, the merge — and
//! not a model's. No peer's memory index can be run here (OpenClaw's needs its gateway and a
//! provider), so the figures stand against nothing but themselves.

use std::time::{Duration, Instant};

use lurkbot_core::Home;
use lurkbot_memory::{EmbedFuture, Embedder, MemoryIndex};

use crate::startup::ms;
use crate::ws_burst::percentile;

const FILES: usize = 500;
const CHUNKS: usize = 50_000;
const DIMS: usize = 384;
const VOCABULARY: usize = 20_000;

/// Hashed-word vectors of [`DIMS`] dimensions.
struct HashedWords;

impl Embedder for HashedWords {
    fn id(&self) -> &str {
        "bench:hashed-words"
    }

    fn embed<'a>(&'a self, texts: &'a [String]) -> EmbedFuture<'a> {
        Box::pin(async move {
            Ok(texts
                .iter()
                .map(|text| {
                    let mut v = vec![0f32; DIMS];
                    for word in text.split_whitespace() {
                        let h = word.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
                        });
                        v[(h % DIMS as u64) as usize] += 1.0;
                    }
                    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-9);
                    v.iter_mut().for_each(|x| *x /= norm);
                    v
                })
                .collect())
        })
    }
}

/// A deterministic word stream (xorshift), words of a fixed generated vocabulary.
struct Words(u64);

impl Words {
    fn next(&mut self) -> String {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        // A skewed pick: small ranks are common, as in text.
        let rank = (self.0 % VOCABULARY as u64) * (self.0 >> 40 & 0xff) / 255;
        word(rank as usize)
    }
}

fn word(rank: usize) -> String {
    const SYLLABLES: [&str; 16] = [
        "ka", "lo", "mi", "ne", "ru", "ta", "vo", "shi", "pe", "da", "zu", "fi", "go", "ha", "ji",
        "we",
    ];
    let mut n = rank + 16;
    let mut out = String::new();
    while n > 0 {
        out.push_str(SYLLABLES[n % 16]);
        n /= 16;
    }
    out
}

pub(crate) fn memory(queries: usize) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let home = Home::open(dir.path()).map_err(|e| e.to_string())?;
    let notes = home.join("workspace/memory");
    std::fs::create_dir_all(&notes).map_err(|e| e.to_string())?;
    let mut words = Words(0x9e37_79b9_7f4a_7c15);
    // A chunk holds ~1,280 new characters (1,600 less the 320 of overlap).
    let per_file = CHUNKS / FILES * 1_280;
    let mut bytes = 0;
    for f in 0..FILES {
        let mut text = String::with_capacity(per_file + 200);
        while text.len() < per_file {
            let line: Vec<String> = (0..10).map(|_| words.next()).collect();
            text.push_str(&line.join(" "));
            text.push('\n');
        }
        bytes += text.len();
        std::fs::write(notes.join(format!("note-{f:04}.md")), text).map_err(|e| e.to_string())?;
    }
    let queries: Vec<String> = (0..queries)
        .map(|_| (0..3).map(|_| words.next()).collect::<Vec<_>>().join(" "))
        .collect();
    let embedder = HashedWords;
    runtime.block_on(async {
        let mut index = MemoryIndex::open(&home).map_err(|e| e.to_string())?;
        let start = Instant::now();
        let report = index.index(false, None).await.map_err(|e| e.to_string())?;
        let keyword_build = start.elapsed();
        let start = Instant::now();
        index
            .index(false, Some(&embedder))
            .await
            .map_err(|e| e.to_string())?;
        let vector_build = start.elapsed();
        println!(
            "memory index: {} files, {:.1} MiB, {} chunks",
            report.files,
            bytes as f64 / 1_048_576.0,
            report.chunks
        );
        println!(
            "  build: keyword {:.1} s, vectors ({DIMS} dims, stand-in embedder) {:.1} s more",
            keyword_build.as_secs_f64(),
            vector_build.as_secs_f64()
        );
        for (label, with) in [
            ("keyword", None),
            ("hybrid ", Some(&embedder as &dyn Embedder)),
        ] {
            let mut times: Vec<Duration> = Vec::with_capacity(queries.len());
            let mut found = 0;
            for query in &queries {
                let start = Instant::now();
                index.index(false, with).await.map_err(|e| e.to_string())?;
                let hits = index
                    .search(query, with, 6, 0.0)
                    .await
                    .map_err(|e| e.to_string())?;
                times.push(start.elapsed());
                found += usize::from(!hits.is_empty());
            }
            times.sort();
            println!(
                "  memory_search {label}: p50 {:.2} ms, p99 {:.2} ms ({} queries, {} with hits; up-to-date check included)",
                ms(percentile(&times, 0.5)),
                ms(percentile(&times, 0.99)),
                queries.len(),
                found
            );
        }
        let size = std::fs::metadata(home.join("memory/index.sqlite")).map_or(0, |m| m.len());
        println!("  index.sqlite: {:.1} MiB", size as f64 / 1_048_576.0);
        Ok(())
    })
}
