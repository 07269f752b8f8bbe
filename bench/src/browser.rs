//! `lurkbot-bench browser [--runs 5]`: the `browser` tool's managed Chromium (the library the
//! binary links, driven as the tool drives it) beside Chromium's own `--dump-dom` in the same
//! run: launch → first snapshot of a simple page, and the snapshot of a large page (time and
//! size), each from a fresh profile. Pages are served on loopback; the browser's proxy is told
//! to allow that one host.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use lurkbot_browser::{Action, LaunchOptions, Settings, browser_for};
use lurkbot_term::NetworkPolicy;
use lurkbot_test_support::feed_server::FeedServer;

const SIMPLE: &str = "<!doctype html><title>Hello</title><h1>Hello</h1><p>A simple page with <a href=\"/x\">a link</a> and a <button>button</button>.</p>";

/// A large page: 3,000 rows of headings, links and inputs (about 700 KB of HTML).
fn large() -> String {
    let mut html = String::from("<!doctype html><title>Large</title><main>");
    for i in 0..3000 {
        html.push_str(&format!(
            "<section><h3>Item {i}</h3><p>Row {i} of the catalogue, with <a href=\"/item/{i}\">its page</a> and a note field.</p><label>Note {i} <input name=\"n{i}\" value=\"v{i}\"></label></section>"
        ));
    }
    html.push_str("</main>");
    html
}

fn settings(dir: &Path) -> Settings {
    Settings {
        launch: LaunchOptions {
            executable: "chromium".into(),
            headless: true,
            profile: dir.join("profile"),
            log: dir.join("browser.log"),
        },
        idle: Duration::from_secs(600),
        accept_dialogs: false,
        download_max_bytes: 1_000_000,
        staging: dir.join("staging"),
        timeout: Duration::from_secs(60),
    }
}

/// (ms to the first snapshot of `url` from launch, ms of a second snapshot, snapshot chars, RSS).
async fn ours(url: &str, policy: &NetworkPolicy) -> Result<(f64, f64, usize, u64), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let b = browser_for(&dir.path().join("profile"));
    b.configure(settings(dir.path()), policy.clone()).await;
    let started = Instant::now();
    b.act(Action::Navigate { url: url.into() }, policy.clone())
        .await
        .map_err(|e| e.to_string())?;
    let first = b
        .act(Action::Snapshot, policy.clone())
        .await
        .map_err(|e| e.to_string())?;
    let to_first = started.elapsed().as_secs_f64() * 1000.0;
    if std::env::var_os("LURKBOT_BENCH_SHOW").is_some() {
        eprintln!("{}", first.text);
    }
    let again = Instant::now();
    let second = b
        .act(Action::Snapshot, policy.clone())
        .await
        .map_err(|e| e.to_string())?;
    let snapshot_ms = again.elapsed().as_secs_f64() * 1000.0;
    let rss = b.status().await.memory_bytes;
    b.stop().await;
    if first.text.len() != second.text.len() {
        return Err("two snapshots of the same page differ".into());
    }
    Ok((to_first, snapshot_ms, first.text.chars().count(), rss))
}

/// (ms, bytes) of `chromium --headless --dump-dom url` from a fresh profile.
fn dump_dom(url: &str) -> Result<(f64, usize), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut args = vec![
        "--headless".to_string(),
        "--disable-gpu".into(),
        "--no-first-run".into(),
        "--disable-background-networking".into(),
        "--disable-component-update".into(),
        format!("--user-data-dir={}", dir.path().display()),
        "--dump-dom".into(),
        url.into(),
    ];
    // As root Chromium needs --no-sandbox, as the managed browser passes it then.
    let root = std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
    });
    if root {
        args.insert(0, "--no-sandbox".into());
    }
    let t = Instant::now();
    let out = Command::new("chromium")
        .args(&args)
        .output()
        .map_err(|e| format!("cannot run chromium: {e}"))?;
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    if !out.status.success() || out.stdout.is_empty() {
        return Err(format!(
            "chromium --dump-dom failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok((ms, out.stdout.len()))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// The benchmark.
pub(crate) fn browser(runs: usize) -> Result<(), String> {
    let server = FeedServer::start();
    server.serve_bytes("/simple.html", "text/html", SIMPLE.into());
    let big = large();
    let big_len = big.len();
    server.serve_bytes("/large.html", "text/html", big.into_bytes());
    let policy = NetworkPolicy {
        allow_private: false,
        allow_hosts: vec![server.url("").trim_start_matches("http://").to_string()],
    };
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    println!("browser: {runs} runs each, fresh profiles, medians");
    for (name, path, size) in [
        ("simple page", "/simple.html", SIMPLE.len()),
        ("large page", "/large.html", big_len),
    ] {
        let url = server.url(path);
        let mut first = Vec::new();
        let mut snap = Vec::new();
        let mut dump = Vec::new();
        let (mut chars, mut dump_bytes, mut rss) = (0, 0, 0);
        for _ in 0..runs {
            let (f, s, c, r) = runtime.block_on(ours(&url, &policy))?;
            first.push(f);
            snap.push(s);
            (chars, rss) = (c, r);
            let (d, bytes) = dump_dom(&url)?;
            dump.push(d);
            dump_bytes = bytes;
        }
        let (first, snap, dump) = (median(first), median(snap), median(dump));
        println!(
            "  {name} ({size} bytes of HTML): launch → first snapshot {first:.0} ms ({:.2}× chromium --dump-dom's {dump:.0} ms); a snapshot alone {snap:.1} ms; snapshot {chars} chars (cap {}) vs the DOM dump's {dump_bytes} bytes; Chromium and its helpers {:.0} MiB PSS",
            first / dump,
            lurkbot_browser::SNAPSHOT_MAX_CHARS,
            rss as f64 / 1_048_576.0
        );
    }
    Ok(())
}
