//! `lurkbot-bench rss`: feed parsing and fetching against Python's `feedparser` (the reader
//! most scripts use), measured in the same run on the same generated ~2 MiB RSS 2.0 feed.
//!
//! - parse: in-process median of `lurkbot_term::parse_items` (the code behind
//!   `rss fetch`, JSON items included) vs `feedparser.parse(bytes)` inside a warm interpreter.
//! - fetch + parse: a whole `lurkbot exec "rss fetch --url …"` process (spawn, HTTP from a
//!   loopback server, parse, audit record) vs `feedparser.parse(url)` inside a warm interpreter
//!   (no interpreter start-up counted: this favours the peer), and vs a `python3` process doing
//!   the same (start-up counted, like ours).
//!
//! Ratios are peer time ÷ our time: ≥ 1.0 means LurkBot is at least as fast.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::archive::timed;
use crate::startup::ms;

/// Size of the generated feed.
const FEED_BYTES: usize = 2 * 1024 * 1024;

const PEER_SCRIPT: &str = r#"
import statistics, sys, time
import feedparser
mode, target, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = open(target, "rb").read() if mode == "parse" else target
count = len(feedparser.parse(data).entries)  # warm-up
times = []
for _ in range(runs):
    t = time.perf_counter()
    d = feedparser.parse(data)
    times.append(time.perf_counter() - t)
    assert len(d.entries) == count, (len(d.entries), count)
print(statistics.median(times) * 1000, count)
"#;

/// A deterministic RSS 2.0 feed of about [`FEED_BYTES`]: items with titles, links, guids,
/// authors, RFC 822 dates, HTML descriptions and `content:encoded`.
fn make_feed() -> (Vec<u8>, usize) {
    let mut out = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rss version=\"2.0\" xmlns:content=\"http://purl.org/rss/1.0/modules/content/\" xmlns:dc=\"http://purl.org/dc/elements/1.1/\">\n<channel><title>Bench feed</title><link>https://bench.example.com/</link><description>generated</description>\n",
    );
    let days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    let mut n = 0;
    while out.len() < FEED_BYTES - 2048 {
        let day = n % 28 + 1;
        out.push_str(&format!(
            "<item><title>Story number {n}: markets, weather &amp; sport</title>\
             <link>https://bench.example.com/2026/11/{day:02}/story-{n}</link>\
             <guid isPermaLink=\"false\">bench-{n}</guid><dc:creator>Reporter {}</dc:creator>\
             <pubDate>{}, {day:02} Nov 2026 {:02}:{:02}:00 +0000</pubDate>\
             <description><![CDATA[<p>Summary of story {n}, with <b>bold</b> words and a <a href=\"https://bench.example.com/{n}\">link</a>.</p>]]></description>\
             <content:encoded><![CDATA[<p>{}</p>]]></content:encoded></item>\n",
            n % 17,
            days[n % 7],
            n % 24,
            n % 60,
            "Full text of the story goes on for a while. ".repeat(8),
        ));
        n += 1;
    }
    out.push_str("</channel></rss>\n");
    (out.into_bytes(), n)
}

/// A ~[`FEED_BYTES`] RSS 2.0 feed of many tiny items (title, link, guid): the shape that costs
/// most memory per byte (the security review's 23,000-item feed).
fn make_tiny_items_feed() -> (Vec<u8>, usize) {
    let mut out = String::from(
        "<?xml version=\"1.0\"?>\n<rss version=\"2.0\"><channel><title>Tiny</title><link>https://tiny.example/</link>\n",
    );
    let mut n = 0;
    while out.len() < FEED_BYTES - 128 {
        out.push_str(&format!(
            "<item><title>Item {n}</title><link>https://tiny.example/{n}</link><guid>g{n}</guid></item>\n"
        ));
        n += 1;
    }
    out.push_str("</channel></rss>\n");
    (out.into_bytes(), n)
}

/// Serves `body` to every request on a loopback port until the process exits.
fn serve(body: Vec<u8>) -> Result<String, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let url = format!(
        "http://{}/feed.xml",
        listener.local_addr().map_err(|e| e.to_string())?
    );
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let body = body.clone();
            std::thread::spawn(move || {
                let Ok(clone) = stream.try_clone() else {
                    return;
                };
                let mut reader = BufReader::new(clone);
                let mut line = String::new();
                while reader.read_line(&mut line).unwrap_or(0) > 2 {
                    line.clear();
                }
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/rss+xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(&body);
            });
        }
    });
    Ok(url)
}

/// Runs the peer script; returns its median (ms) and item count.
fn peer(python: &Path, mode: &str, target: &str, runs: usize) -> Result<(f64, usize), String> {
    let out = Command::new(python)
        .args(["-c", PEER_SCRIPT, mode, target, &runs.to_string()])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    if !out.status.success() {
        return Err(format!(
            "feedparser failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut parts = text.split_whitespace();
    let median = parts.next().and_then(|p| p.parse().ok());
    let count = parts.next().and_then(|p| p.parse().ok());
    match (median, count) {
        (Some(m), Some(c)) => Ok((m, c)),
        _ => Err(format!("unexpected feedparser output: {text}")),
    }
}

fn median_of(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// The benchmark.
pub(crate) fn rss(bin: &Path, python: &Path, runs: usize) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("lurkbot-rss-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let (feed, items) = make_feed();
    let feed_path = dir.join("feed.xml");
    std::fs::write(&feed_path, &feed).map_err(|e| e.to_string())?;
    let feed_path_text = feed_path.to_string_lossy().into_owned();
    println!(
        "LurkBot rss benchmark — {runs} runs each (median), feed {:.2} MiB with {items} items, peer: Python feedparser",
        feed.len() as f64 / 1048576.0
    );

    // Parse only, in-process on both sides.
    let parse_once = || -> Result<Duration, String> {
        let start = Instant::now();
        let parsed =
            lurkbot_term::parse_items(&feed, None, "https://bench/").map_err(|e| e.message)?;
        let elapsed = start.elapsed();
        if parsed.len() != items {
            return Err(format!("parsed {} items, expected {items}", parsed.len()));
        }
        Ok(elapsed)
    };
    parse_once()?;
    let ours_parse = median_of((0..runs).map(|_| parse_once()).collect::<Result<_, _>>()?);
    let (peer_parse, peer_items) = peer(python, "parse", &feed_path_text, runs)?;
    if peer_items != items {
        return Err(format!(
            "feedparser saw {peer_items} items, expected {items}"
        ));
    }

    // Fetch + parse from a loopback server.
    let url = serve(feed.clone())?;
    let home = dir.join("home");
    // The feed is served on loopback, which the network policy refuses unless allowed.
    for args in [
        &["init"][..],
        &["config", "set", "network.allow_private", "true"][..],
    ] {
        let status = Command::new(bin)
            .arg("--home")
            .arg(&home)
            .args(args)
            .stdout(std::process::Stdio::null())
            .status()
            .map_err(|e| e.to_string())?;
        if !status.success() {
            return Err(format!("lurkbot {args:?} failed: {status}"));
        }
    }
    let command = format!("rss fetch --url {url} --max-items 0 --max-bytes 4194304");
    let ours = || {
        let mut c = Command::new(bin);
        c.arg("--home").arg(&home).arg("exec").arg(&command);
        c
    };
    timed(&mut ours())?;
    let mut fetch_times = Vec::new();
    let mut peak_kib = 0;
    for _ in 0..runs {
        let (t, p) = timed(&mut ours())?;
        fetch_times.push(t);
        peak_kib = peak_kib.max(p);
    }
    let ours_fetch = median_of(fetch_times);
    let (peer_fetch, _) = peer(python, "fetch", &url, runs)?;
    let python_process = || {
        let mut c = Command::new(python);
        c.args(["-c", PEER_SCRIPT, "fetch", &url, "1"]);
        c
    };
    timed(&mut python_process())?;
    let mut peer_process_times = Vec::new();
    let mut peer_peak_kib = 0;
    for _ in 0..runs.min(10) {
        let (t, p) = timed(&mut python_process())?;
        peer_process_times.push(t);
        peer_peak_kib = peer_peak_kib.max(p);
    }
    let peer_process = median_of(peer_process_times);

    println!(
        "{:<44} {:>12} {:>14} {:>8}",
        "operation", "LurkBot", "feedparser", "ratio"
    );
    let row = |name: &str, ours: f64, peer: f64| {
        println!(
            "{name:<44} {:>9.2} ms {:>11.2} ms {:>8.2}",
            ours,
            peer,
            peer / ours
        );
    };
    row("parse 2 MiB (in-process)", ms(ours_parse), peer_parse);
    row(
        "fetch+parse: our process vs warm interpreter",
        ms(ours_fetch),
        peer_fetch,
    );
    row(
        "fetch+parse: process vs process",
        ms(ours_fetch),
        ms(peer_process),
    );
    println!(
        "throughput fetch+parse: LurkBot {:.1} MiB/s, feedparser (warm) {:.1} MiB/s",
        feed.len() as f64 / 1048576.0 / ours_fetch.as_secs_f64(),
        feed.len() as f64 / 1048576.0 / (peer_fetch / 1000.0)
    );
    println!(
        "peak RSS of one fetch: LurkBot {:.1} MiB, python3 + feedparser {:.1} MiB",
        peak_kib as f64 / 1024.0,
        peer_peak_kib as f64 / 1024.0
    );

    // Memory budget (ARCHITECTURE.md §9: parsing a 2 MiB feed peaks below 24 MiB), on the worst shape.
    let (tiny, tiny_items) = make_tiny_items_feed();
    let tiny_url = serve(tiny)?;
    let tiny_command = format!(
        "rss fetch --url {tiny_url} --max-items 0 --max-bytes 4194304 --out artifacts/rss/tiny.json"
    );
    let mut tiny_peak_kib = 0;
    for _ in 0..runs.min(5) {
        let mut c = Command::new(bin);
        c.arg("--home").arg(&home).arg("exec").arg(&tiny_command);
        tiny_peak_kib = tiny_peak_kib.max(timed(&mut c)?.1);
    }
    let mut tiny_peer = Command::new(python);
    tiny_peer.args(["-c", PEER_SCRIPT, "fetch", &tiny_url, "1"]);
    let (_, tiny_peer_kib) = timed(&mut tiny_peer)?;
    println!(
        "peak RSS, 2 MiB feed of {tiny_items} tiny items with --out: LurkBot {:.1} MiB (budget 24), python3 + feedparser {:.1} MiB",
        tiny_peak_kib as f64 / 1024.0,
        tiny_peer_kib as f64 / 1024.0
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
