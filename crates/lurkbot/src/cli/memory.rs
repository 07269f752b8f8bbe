//! `lurkbot memory index [--rebuild] [--json]` and `memory search QUERY [--max-results N]
//! [--min-score S] [--json]`: the long-term memory index (ARCHITECTURE.md §7), with the
//! embedder `[memory]` configures.

use crate::error::{CliError, CliResult};
use std::path::Path;

use clap::Subcommand;
use lurkbot_core::{Home, printable};

/// The `memory` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum MemoryArgs {
    /// Bring memory/index.sqlite up to date with workspace/MEMORY.md and workspace/memory/*.md.
    Index {
        /// Start from nothing (gives the same chunks).
        #[arg(long)]
        rebuild: bool,
        /// `{files, chunks, added, updated, removed, embedder}`.
        #[arg(long)]
        json: bool,
    },
    /// The memory chunks that best match QUERY (the index is brought up to date first).
    Search {
        /// Words to look for.
        query: String,
        /// Most results (default memory.max_results, 6).
        #[arg(long, value_name = "N")]
        max_results: Option<usize>,
        /// Lowest score, 0 to 1 (default memory.min_score, 0.25).
        #[arg(long, value_name = "S")]
        min_score: Option<f64>,
        /// `[{path, startLine, endLine, score, snippet}]`.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) fn run(home_path: &Path, args: &MemoryArgs) -> CliResult {
    let home = Home::open(home_path)?;
    let config = lurkbot_core::Config::load(&home.join(lurkbot_core::layout::CONFIG))?;
    let memory = &config.memory;
    let vars = lurkbot_agent::setup::variables(&home);
    let failed = |e: lurkbot_memory::MemoryError| CliError::failed("memory", e.to_string());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    match args {
        MemoryArgs::Index { rebuild, json } => {
            let report = runtime
                .block_on(lurkbot_memory::reindex(&home, memory, &vars, *rebuild))
                .map_err(failed)?;
            let text = if *json {
                serde_json::to_string(&report)?
            } else {
                format!(
                    "{} file(s), {} chunk(s): {} added, {} updated, {} removed (embedder: {}, {} embedded)",
                    report.files,
                    report.chunks,
                    report.added,
                    report.updated,
                    report.removed,
                    report.embedder,
                    report.embedded
                )
            };
            crate::run::print_stdout(&format!("{text}\n"))?;
        }
        MemoryArgs::Search {
            query,
            max_results,
            min_score,
            json,
        } => {
            let min_score = min_score.unwrap_or(memory.min_score);
            if !(0.0..=1.0).contains(&min_score) {
                return Err(CliError::usage("memory", "--min-score is between 0 and 1"));
            }
            let max = max_results.unwrap_or(memory.max_results).max(1);
            let recall = runtime
                .block_on(lurkbot_memory::recall(
                    &home, memory, &vars, query, max, min_score,
                ))
                .map_err(failed)?;
            if let Some(why) = &recall.degraded {
                eprintln!("lurkbot: warning: keyword search only: {why}");
            }
            let hits = recall.hits;
            if *json {
                crate::run::print_stdout(&format!("{}\n", serde_json::to_string(&hits)?))?;
            } else {
                let mut out = format!("{} result(s)\n", hits.len());
                for h in &hits {
                    out.push_str(&format!(
                        "{}:{}-{}  {:.3}  {}\n",
                        h.path,
                        h.start_line,
                        h.end_line,
                        h.score,
                        printable(&h.snippet.replace('\n', " "))
                    ));
                }
                crate::run::print_stdout(&out)?;
            }
        }
    }
    Ok(())
}
