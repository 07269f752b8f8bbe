//! `lurkbot-bench`: measures the figures of ARCHITECTURE.md §9 for a built `lurkbot` binary and prints
//! them next to their budgets and the peers' figures.
//!
//! Usage: `bench/run.sh [startup|archive]` (builds the release binary, then runs this), or
//! `lurkbot-bench startup --bin target/release/lurkbot [--runs 50]`,
//! `lurkbot-bench archive --bin target/release/lurkbot [--runs 3] [--mib 200]`,
//! `lurkbot-bench rss --bin target/release/lurkbot --python VENV/bin/python [--runs 20]`,
//! `lurkbot-bench agent --bin target/release/lurkbot [--runs 200]` (turns),
//! `lurkbot-bench gateway --bin target/release/lurkbot [--runs 20] [--idle-secs 60]`,
//! `lurkbot-bench turn --bin target/release/lurkbot [--runs 200]` (the gateway's own CPU per
//! API turn, on the embedded store and on PostgreSQL),
//! `lurkbot-bench memory [--runs 200]` (queries),
//! `lurkbot-bench media --python VENV/bin/python [--runs 5]` (article extraction on a 2 MiB page,
//! a 24-megapixel JPEG prepared for the model beside Pillow),
//! `lurkbot-bench speech [--runs 5] [--symbols UNSTRIPPED-BINARY]` (tts of a 500-character
//! reply beside espeak-ng piped into ffmpeg's libopus; with `--symbols`, the bytes of the
//! binary that are the Opus encoder),
//! `lurkbot-bench browser [--runs 5]` (launch → first snapshot, a large page's snapshot, beside
//! chromium --dump-dom),
//! `lurkbot-bench soak --bin target/release/lurkbot [--runs 10000] [--cycles 10000]` (API turns
//! and WebSocket cycles),
//! `lurkbot-bench users --bin target/release/lurkbot [--runs 4000] [--cycles 40]` (20 users on
//! one gateway: one heavy user's API turns, the others' WebSocket cycles, a light user's
//! `health` under that load),
//! `lurkbot-bench peers --bin target/release/lurkbot --peers DIR [--readme README.md]` (LurkBot
//! beside OpenClaw, Hermes Agent and nanobot, installed into DIR by `bench/run.sh peers`).
//!
//! Startup peers (ZeptoClaw, ZeroClaw) cannot be fetched on this network, so their figures come
//! from ARCHITECTURE.md §9 and are labelled as such; what is measured in the same run is a
//! process-spawn floor (`true`). The archive benchmark measures its peers (Info-ZIP `zip` and
//! `unzip`, GNU `tar`) in the same run on the same generated corpus and prints ratios.

mod agent;
mod archive;
mod browser;
mod cpu_share;
mod delay_proxy;
mod gateway;
mod gateways;
mod journal;
mod media;
mod mem_split;
mod memory;
mod observability;
mod peers;
mod peers_table;
mod proc_group;
mod rss;
mod soak;
mod soak_report;
mod speech;
mod startup;
mod turn_cpu;
mod users_soak;
mod whatsapp_idle;
mod ws_burst;
mod ws_floor;
mod zip_listing;

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut bin = PathBuf::from("target/release/lurkbot");
    let mut runs: Option<usize> = None;
    let mut cycles: Option<usize> = None;
    let mut mib = 200u64;
    let mut idle_secs = 60u64;
    let mut which = "startup".to_string();
    let mut python = PathBuf::from("python3");
    let mut peers_dir: Option<PathBuf> = None;
    let mut readme: Option<PathBuf> = None;
    let mut port = 0u16;
    let mut symbols: Option<PathBuf> = None;
    let mut iter = args.iter();
    while let Some(a) = iter.next() {
        match a.as_str() {
            "startup" | "archive" | "rss" | "agent" | "journal" | "gateway" | "gateways"
            | "memory" | "soak" | "users" | "peers" | "media" | "browser" | "speech"
            | "observability" | "turn" => which = a.clone(),
            "child-speech" => {
                let runs = iter.next().and_then(|r| r.parse().ok()).unwrap_or(5);
                return match speech::child(runs) {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(e) => {
                        eprintln!("lurkbot-bench: {e}");
                        ExitCode::from(1)
                    }
                };
            }
            "child-article" | "child-image" | "child-bomb" => {
                let path = iter.next().map(PathBuf::from).unwrap_or_default();
                let runs = iter.next().and_then(|r| r.parse().ok()).unwrap_or(5);
                return match media::child(a, &path, runs) {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(e) => {
                        eprintln!("lurkbot-bench: {e}");
                        ExitCode::from(1)
                    }
                };
            }
            "--cycles" => cycles = iter.next().and_then(|r| r.parse().ok()),
            "--peers" => peers_dir = iter.next().map(PathBuf::from),
            "--port" => port = iter.next().and_then(|p| p.parse().ok()).unwrap_or(0),
            "ws-floor" => which = a.clone(),
            "--readme" => readme = iter.next().map(PathBuf::from),
            "--symbols" => symbols = iter.next().map(PathBuf::from),
            "--python" => python = iter.next().map(PathBuf::from).unwrap_or(python),
            "--bin" => bin = iter.next().map(PathBuf::from).unwrap_or(bin),
            "--runs" => runs = iter.next().and_then(|r| r.parse().ok()),
            "--idle-secs" => {
                idle_secs = iter
                    .next()
                    .and_then(|r| r.parse().ok())
                    .unwrap_or(idle_secs)
            }
            "--mib" => {
                mib = iter
                    .next()
                    .and_then(|r| r.parse().ok())
                    .unwrap_or(mib)
                    .max(10)
            }
            other => {
                eprintln!(
                    "unknown argument '{other}'; usage: lurkbot-bench [startup|archive|rss|agent|journal|observability|gateway|gateways|memory|soak|users|peers|media|browser|speech] [--bin PATH] [--runs N] [--cycles N] [--mib N] [--python PATH] [--peers DIR] [--readme PATH]"
                );
                return ExitCode::from(2);
            }
        }
    }
    let outcome = match which.as_str() {
        "archive" => archive::archive(&bin, runs.unwrap_or(3).max(1), mib),
        "rss" => rss::rss(&bin, &python, runs.unwrap_or(20).max(3)),
        "agent" => agent::agent(&bin, runs.unwrap_or(200).max(10)),
        "journal" => journal::journal(runs.unwrap_or(500).max(20)),
        "observability" => observability::observability(runs.unwrap_or(500).max(20)),
        "gateway" => gateway::gateway(&bin, runs.unwrap_or(20).max(3), idle_secs, 1000)
            .and_then(|()| whatsapp_idle::report(&bin, idle_secs)),
        "gateways" => gateways::gateways(&bin, runs.unwrap_or(600).max(30)),
        "turn" => turn_cpu::turn(&bin, runs.unwrap_or(200).max(20)),
        "memory" => memory::memory(runs.unwrap_or(200).max(10)),
        "media" => media::media(&python, runs.unwrap_or(5).max(3)),
        "browser" => browser::browser(runs.unwrap_or(5).max(3)),
        "speech" => speech::speech(runs.unwrap_or(5).max(3), symbols.as_deref()),
        "soak" => soak::soak(
            &bin,
            runs.unwrap_or(10_000).max(200),
            cycles.unwrap_or(10_000).max(100),
        ),
        "users" => users_soak::users(
            &bin,
            runs.unwrap_or(4_000).max(200),
            cycles.unwrap_or(40).max(5),
        ),
        "ws-floor" => ws_floor::ws_floor(port),
        "peers" => peers::peers(
            &bin,
            peers_dir.as_deref(),
            runs.unwrap_or(10).max(3),
            idle_secs,
            readme.as_deref(),
        ),
        _ => startup::startup(&bin, runs.unwrap_or(50).max(20)),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lurkbot-bench: {e}");
            ExitCode::from(1)
        }
    }
}
