//! `lurkbot-bench observability`: what metrics and traces cost a turn (ARCHITECTURE.md §6.4,
//! §9).
//!
//! Turns with one tool round trip (`session_status`, then an answer) against the scripted
//! model over loopback HTTP, in rounds of three, each kind in turn on one home and one agent:
//! metrics not recorded (`metrics::set_recording(false)`), metrics recorded (as always), and
//! metrics recorded with every span of the turn exported as the gateway does — the turn run
//! under its `invoke_agent` span, the model calls and tool call spans inside it, the exporter
//! (`lurkbot_gateway::otel`) posting OTLP/HTTP protobuf to a sink on loopback that reads each
//! request whole and answers 200. p50 and p99 of each, what recording and exporting add at p50
//! (metrics budget: ≤ 2 % of the turn), and the bytes the sink received per turn. Then one
//! scrape: the exposition rendered with the families as the run left them (µs, bytes).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use lurkbot_agent::Agent;
use lurkbot_core::{Config, Home, SessionKey, metrics};
use lurkbot_llm::fake::FakeProvider;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::agent::{failover_for, scripted};

/// What recording metrics may add to a turn at p50, as a share of it.
const METRICS_BUDGET: f64 = 0.02;

pub(crate) fn observability(turns: usize) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(measure(turns))
}

async fn measure(turns: usize) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let home = Home::open(dir.path()).map_err(|e| e.to_string())?;
    lurkbot_core::init_home(&home, &[]).map_err(|e| e.to_string())?;
    let fake = FakeProvider::start(Vec::new()).await;
    fake.respond(scripted(1));
    fake.record(false);
    let mut agent = Agent::new(home.clone(), Config::default(), failover_for(&fake)?);
    let key = SessionKey::main();
    let (sink, received) = sink().await?;
    let exporter = lurkbot_gateway::otel::start(
        lurkbot_gateway::otel::Target {
            url: format!("http://{sink}/v1/traces"),
            service_name: "lurkbot-bench".into(),
            headers: Default::default(),
        },
        false,
        None,
    );
    // Turns not traced run under an unsampled caller's context (nothing recorded, as for a
    // request whose caller does not sample); the exporter stays installed throughout.
    let unsampled = lurkbot_core::trace::TraceContext {
        sampled: false,
        ..lurkbot_core::trace::TraceContext::root()
    };
    // Warm-up: connections, files.
    for _ in 0..5 {
        lurkbot_core::trace::scope(Some(unsampled), agent.turn(&key, "status?", &mut |_| {}))
            .await
            .map_err(|e| e.to_string())?;
    }
    let (mut off, mut on, mut traced) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..turns {
        for kind in 0..3 {
            metrics::set_recording(kind > 0);
            let start = Instant::now();
            if kind == 2 {
                let span = lurkbot_core::trace::Span::start(
                    "invoke_agent main",
                    lurkbot_core::trace::Kind::Internal,
                );
                lurkbot_core::trace::scope(
                    span.context(),
                    agent.turn(&key, "status?", &mut |_| {}),
                )
                .await
                .map_err(|e| e.to_string())?;
                drop(span);
                traced.push(start.elapsed().as_secs_f64() * 1000.0);
            } else {
                lurkbot_core::trace::scope(
                    Some(unsampled),
                    agent.turn(&key, "status?", &mut |_| {}),
                )
                .await
                .map_err(|e| e.to_string())?;
                let ms = start.elapsed().as_secs_f64() * 1000.0;
                if kind == 0 { off.push(ms) } else { on.push(ms) }
            }
        }
    }
    metrics::set_recording(true);
    lurkbot_gateway::otel::stop(exporter).await;
    let (o50, o99) = (percentile(&off, 50), percentile(&off, 99));
    let (m50, m99) = (percentile(&on, 50), percentile(&on, 99));
    let (t50, t99) = (percentile(&traced, 50), percentile(&traced, 99));
    let share = (m50 - o50) / o50;
    println!("metrics and traces: {turns} turns of each kind, one tool round trip each, in rounds");
    println!("  metrics off      p50 {o50:.3} ms p99 {o99:.3} ms");
    println!(
        "  metrics on       p50 {m50:.3} ms p99 {m99:.3} ms: added p50 {:.3} ms ({:+.2} %, budget ≤ {:.0} %: {})",
        m50 - o50,
        share * 100.0,
        METRICS_BUDGET * 100.0,
        if share <= METRICS_BUDGET {
            "within"
        } else {
            "OVER"
        }
    );
    println!(
        "  + traces export  p50 {t50:.3} ms p99 {t99:.3} ms: added p50 {:.3} ms ({:+.2} %) over metrics on; {:.0} bytes of OTLP per turn received",
        t50 - m50,
        (t50 - m50) / m50 * 100.0,
        received.load(Ordering::Relaxed) as f64 / turns.max(1) as f64
    );
    let start = Instant::now();
    let mut bytes = 0;
    for _ in 0..100 {
        bytes = metrics::exposition(metrics::FAMILIES, &[], &[]).len();
    }
    println!(
        "  one scrape: the exposition rendered in {:.1} µs, {bytes} bytes",
        start.elapsed().as_secs_f64() * 1e6 / 100.0
    );
    Ok(())
}

/// A loopback HTTP sink: reads each request whole, answers 200, counts the body bytes.
async fn sink() -> Result<(std::net::SocketAddr, Arc<AtomicU64>), String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let received = Arc::new(AtomicU64::new(0));
    let counted = received.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let counted = counted.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 16 * 1024];
                loop {
                    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                        match stream.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                        continue;
                    };
                    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                    let length: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    while buf.len() < end + 4 + length {
                        match stream.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    counted.fetch_add(length as u64, Ordering::Relaxed);
                    buf.drain(..end + 4 + length);
                    if stream
                        .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    Ok((addr, received))
}

fn percentile(samples: &[f64], p: usize) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let at = (sorted.len() * p / 100).min(sorted.len().saturating_sub(1));
    sorted.get(at).copied().unwrap_or(0.0)
}
