//! `lurkbot memory index [--rebuild] [--json]` and `memory search QUERY [--max-results N]
//! [--min-score S] [--json]`: the long-term memory index (ARCHITECTURE.md §7), keyword only
//! until the embedders land.

use crate::error::{CliError, CliResult};
use std::path::Path;

use clap::Subcommand;
use lurkbot_core::{Home, printable};
use lurkbot_memory::MemoryIndex;

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
        /// Most results.
        #[arg(long, value_name = "N", default_value_t = 6)]
        max_results: usize,
        /// Lowest score (0 to 1).
        #[arg(long, value_name = "S", default_value_t = 0.0)]
        min_score: f64,
        /// `[{path, startLine, endLine, score, snippet}]`.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) fn run(home_path: &Path, args: &MemoryArgs) -> CliResult {
    let home = Home::open(home_path)?;
    let failed = |e: lurkbot_memory::MemoryError| CliError::failed("memory", e.to_string());
    let mut index = MemoryIndex::open(&home).map_err(failed)?;
    match args {
        MemoryArgs::Index { rebuild, json } => {
            let report = index.index(*rebuild).map_err(failed)?;
            let text = if *json {
                serde_json::to_string(&report)?
            } else {
                format!(
                    "{} file(s), {} chunk(s): {} added, {} updated, {} removed (embedder: {})",
                    report.files,
                    report.chunks,
                    report.added,
                    report.updated,
                    report.removed,
                    report.embedder
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
            if !(0.0..=1.0).contains(min_score) {
                return Err(CliError::usage("memory", "--min-score is between 0 and 1"));
            }
            index.index(false).map_err(failed)?;
            let hits = index
                .search(query, (*max_results).max(1), *min_score)
                .map_err(failed)?;
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
