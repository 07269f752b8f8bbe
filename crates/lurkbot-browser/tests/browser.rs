//! The managed browser against Debian's real Chromium, pages served on loopback: driving a form
//! by refs, tabs, stale refs; the policy proxy as a boundary (a recording server on a second
//! loopback address must see nothing); downloads with a cap; a crashed Chromium restarted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lurkbot_browser::{Action, LaunchOptions, Settings, browser_for};
use lurkbot_term::NetworkPolicy;
use lurkbot_test_support::feed_server::{FeedServer, Reply};

#[path = "browser/idle.rs"]
mod idle;
#[path = "browser/schemes.rs"]
mod schemes;

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
        download_max_bytes: 100_000,
        staging: dir.join("staging"),
        timeout: Duration::from_secs(30),
    }
}

fn allowing(server: &FeedServer) -> NetworkPolicy {
    let host = server.url("").trim_start_matches("http://").to_string();
    NetworkPolicy {
        allow_private: false,
        allow_hosts: vec![host],
    }
}

/// The browser of a profile in `dir`, allowed to reach `server` (and no other private host).
async fn browser_allowing(
    dir: &Path,
    server: &FeedServer,
) -> (std::sync::Arc<lurkbot_browser::Browser>, NetworkPolicy) {
    let policy = allowing(server);
    let b = browser_for(&dir.join("profile"));
    b.configure(settings(dir), policy.clone()).await;
    (b, policy)
}

/// The ref on the first snapshot line that contains `needle`.
fn ref_of(snapshot: &str, needle: &str) -> String {
    let line = snapshot
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle} in:\n{snapshot}"));
    let at = line.find("[ref=").expect("a ref") + 5;
    line[at..].split(']').next().unwrap().to_string()
}

/// A TCP listener on 127.0.0.2 that records every connection made to it.
struct Recorder {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.2:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let log = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
                let mut buf = [0u8; 256];
                let n = stream.read(&mut buf).unwrap_or(0);
                log.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&buf[..n]).into_owned());
            }
        });
        Self { port, seen }
    }
}

const FORM: &str = r#"<!doctype html><title>Order form</title>
<h1>Order</h1>
<form id="f"><label>Name <input name="name" id="name"></label>
<label>Colour <select id="colour"><option value="red">Red</option><option value="green">Green</option></select></label>
<button type="submit">Send order</button></form>
<p id="out"></p><a href="/second.html">Next page</a>
<button onclick="alert('Hi there')">Greet</button>
<iframe src="/inner.html" name="inner"></iframe>
<script>
document.getElementById('f').addEventListener('submit', e => {
  e.preventDefault();
  const text = 'Thanks, ' + document.getElementById('name').value + ' (' + document.getElementById('colour').value + ')';
  setTimeout(() => { document.getElementById('out').textContent = text; }, 300);
});
</script>"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_is_driven_by_refs_across_tabs() {
    let dir = tempfile::tempdir().unwrap();
    let server = FeedServer::start();
    server.serve_bytes("/form.html", "text/html", FORM.into());
    server.serve_bytes(
        "/inner.html",
        "text/html",
        b"<!doctype html><title>Inner</title><button>Inner button</button>".to_vec(),
    );
    server.serve_bytes(
        "/second.html",
        "text/html",
        b"<!doctype html><title>Second</title><p>The second page.</p>".to_vec(),
    );
    let (b, policy) = browser_allowing(dir.path(), &server).await;

    let loaded = b
        .act(
            Action::Navigate {
                url: server.url("/form.html"),
            },
            policy.clone(),
        )
        .await
        .unwrap();
    assert!(loaded.text.contains("Order form"), "{}", loaded.text);
    assert!(
        loaded.notes.iter().any(|n| n.contains("started")),
        "{:?}",
        loaded.notes
    );
    let snap = b.act(Action::Snapshot, policy.clone()).await.unwrap().text;
    assert!(snap.contains("heading \"Order\""), "{snap}");
    // Frames are part of the snapshot, and their refs work.
    assert!(snap.contains("- iframe \"inner\""), "{snap}");
    let inner = ref_of(&snap, "button \"Inner button\"");
    b.act(Action::Hover { r: inner.clone() }, policy.clone())
        .await
        .unwrap();
    b.act(Action::Click { r: inner }, policy.clone())
        .await
        .unwrap();
    // A dialog is answered (dismissed by default) and told.
    let greeted = b
        .act(
            Action::Click {
                r: ref_of(&snap, "button \"Greet\""),
            },
            policy.clone(),
        )
        .await
        .unwrap();
    assert!(
        greeted
            .notes
            .iter()
            .any(|n| n.contains("\"Hi there\"") && n.contains("dismissed")),
        "{:?}",
        greeted.notes
    );
    b.act(
        Action::Scroll {
            r: None,
            way: "bottom".into(),
        },
        policy.clone(),
    )
    .await
    .unwrap();
    let name = ref_of(&snap, "textbox \"Name\"");
    let colour = ref_of(&snap, "combobox \"Colour\"");

    // A click before any snapshot of a new page is a stale ref.
    b.act(
        Action::Fill {
            r: name.clone(),
            text: "Ada".into(),
        },
        policy.clone(),
    )
    .await
    .unwrap();
    b.act(
        Action::Type {
            r: name.clone(),
            text: " L.".into(),
        },
        policy.clone(),
    )
    .await
    .unwrap();
    let picked = b
        .act(
            Action::Select {
                r: colour,
                values: vec!["Green".into()],
            },
            policy.clone(),
        )
        .await
        .unwrap();
    assert!(picked.text.contains("Green"), "{}", picked.text);
    b.act(
        Action::Press {
            key: "Enter".into(),
            r: Some(name.clone()),
        },
        policy.clone(),
    )
    .await
    .unwrap();
    b.act(
        Action::Wait {
            text: Some("Thanks, Ada L. (green)".into()),
        },
        policy.clone(),
    )
    .await
    .unwrap();
    let after = b.act(Action::Snapshot, policy.clone()).await.unwrap().text;
    assert!(after.contains("Thanks, Ada L. (green)"), "{after}");

    // Clicking a link navigates; the old refs are stale on the new page.
    let link = ref_of(&after, "link \"Next page\"");
    let clicked = b
        .act(Action::Click { r: link }, policy.clone())
        .await
        .unwrap();
    assert!(clicked.text.contains("Second"), "{}", clicked.text);
    let stale = b
        .act(Action::Click { r: name }, policy.clone())
        .await
        .unwrap_err();
    assert_eq!(stale.code(), "StaleRef", "{stale}");
    assert!(stale.to_string().contains("snapshot"), "{stale}");

    // A second tab, then back to the first.
    let opened = b
        .act(
            Action::Open {
                url: server.url("/form.html"),
            },
            policy.clone(),
        )
        .await
        .unwrap();
    assert!(opened.text.contains("Opened tab"), "{}", opened.text);
    let tabs = b.act(Action::Tabs, policy.clone()).await.unwrap().text;
    assert_eq!(tabs.lines().count(), 2, "{tabs}");
    let first = tabs
        .lines()
        .find(|l| l.contains("Second"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_string();
    assert!(
        tabs.lines()
            .any(|l| l.starts_with('*') && l.contains("Order form")),
        "{tabs}"
    );
    let focused = b
        .act(Action::Focus { tab: first }, policy.clone())
        .await
        .unwrap();
    assert!(focused.text.contains("Second"), "{}", focused.text);
    let missing = b
        .act(Action::Focus { tab: "nope".into() }, policy.clone())
        .await
        .unwrap_err();
    assert_eq!(missing.code(), "NoSuchTab");
    assert!(b.stop().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_request_of_any_kind_reaches_a_private_host_that_is_not_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let server = FeedServer::start();
    let recorder = Recorder::start();
    let private = format!("127.0.0.2:{}", recorder.port);
    let page = format!(
        r#"<!doctype html><title>Boundary</title>
<img src="http://{private}/img.png">
<button id="pop" onclick="window.open('http://{private}/popup')">Open popup</button>
<p id="state">working</p>
<script>
const results = [];
const note = r => {{ results.push(r); if (results.length === 4) document.getElementById('state').textContent = 'done ' + results.join(' '); }};
fetch('http://{private}/fetch').then(() => note('fetch-reached'), () => note('fetch-failed'));
fetch('/ok').then(r => r.text()).then(t => note('allowed-' + t), () => note('allowed-failed'));
try {{ const ws = new WebSocket('ws://{private}/ws'); ws.onopen = () => note('ws-open'); ws.onerror = () => note('ws-failed'); }} catch (e) {{ note('ws-threw'); }}
navigator.serviceWorker.register('/sw.js').then(reg => {{
  const w = reg.installing || reg.waiting || reg.active;
  if (w && w.state !== 'activated') w.addEventListener('statechange', () => {{ if (w.state === 'activated' || w.state === 'redundant') note('sw-' + w.state); }});
  else note('sw-active');
}}, e => note('sw-failed'));
</script>"#
    );
    server.serve_bytes("/boundary.html", "text/html", page.into_bytes());
    server.serve_bytes("/ok", "text/plain", b"ok".to_vec());
    server.serve_bytes(
        "/sw.js",
        "text/javascript",
        format!(
            "self.addEventListener('install', e => e.waitUntil(fetch('http://{private}/sw').catch(() => null)));"
        )
        .into_bytes(),
    );
    let hop = format!("http://{private}/redirected");
    server.route("/redirect", move |_| {
        Reply::status(302).header("Location", &hop)
    });
    let (b, policy) = browser_allowing(dir.path(), &server).await;

    let loaded = b
        .act(
            Action::Navigate {
                url: server.url("/boundary.html"),
            },
            policy.clone(),
        )
        .await
        .unwrap();
    assert!(loaded.text.contains("Boundary"), "{}", loaded.text);
    let waited = b
        .act(
            Action::Wait {
                text: Some("done".into()),
            },
            policy.clone(),
        )
        .await
        .unwrap();
    let snap = b.act(Action::Snapshot, policy.clone()).await.unwrap();
    assert!(
        snap.text.contains("allowed-ok"),
        "an allowed host works: {}",
        snap.text
    );
    assert!(snap.text.contains("fetch-failed"), "{}", snap.text);
    assert!(snap.text.contains("ws-failed"), "{}", snap.text);
    let popup = ref_of(&snap.text, "button \"Open popup\"");
    b.act(Action::Click { r: popup }, policy.clone())
        .await
        .unwrap();
    // A redirect from an allowed host to the private one stops at the hop.
    let redirected = b
        .act(
            Action::Navigate {
                url: server.url("/redirect"),
            },
            policy.clone(),
        )
        .await;
    // Ask the recorder only once the popup's tab has tried to load.
    let tabs = b.act(Action::Tabs, policy.clone()).await.unwrap();
    assert!(b.stop().await);
    let seen = recorder.seen.lock().unwrap().clone();
    assert!(seen.is_empty(), "the private host was reached: {seen:?}");
    let blocked: Vec<String> = [&loaded, &waited, &snap]
        .iter()
        .flat_map(|o| o.footer())
        .collect();
    assert!(
        blocked
            .iter()
            .any(|l| l.starts_with("blocked: ") && l.contains(&private)),
        "{blocked:?}"
    );
    assert!(!server.requests("/redirect").is_empty());
    assert!(
        tabs.text.lines().count() >= 2,
        "the popup opened a tab: {}",
        tabs.text
    );
    // The proxy refused the redirect's hop: the tab shows its 403 or an error.
    if let Ok(r) = &redirected {
        assert!(
            r.footer().iter().any(|l| l.contains(&private)),
            "{:?}",
            r.footer()
        );
    }
    assert!(
        !server.requests("/sw.js").is_empty(),
        "the service worker was fetched"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn downloads_are_capped_and_a_dead_chromium_comes_back() {
    let dir = tempfile::tempdir().unwrap();
    let server = FeedServer::start();
    server.serve_bytes(
        "/files.html",
        "text/html",
        br#"<!doctype html><title>Files</title><a href="/small.txt">small</a> <a href="/big.bin">big</a>"#.to_vec(),
    );
    server.route("/small.txt", |_| {
        Reply::ok("application/octet-stream", b"hello file".to_vec())
            .header("Content-Disposition", "attachment; filename=\"notes.txt\"")
    });
    server.route("/big.bin", |_| {
        Reply::ok("application/octet-stream", vec![7u8; 300_000])
            .header("Content-Disposition", "attachment; filename=\"big.bin\"")
    });
    let (b, policy) = browser_allowing(dir.path(), &server).await;
    b.act(
        Action::Navigate {
            url: server.url("/files.html"),
        },
        policy.clone(),
    )
    .await
    .unwrap();
    let snap = b.act(Action::Snapshot, policy.clone()).await.unwrap().text;
    let small = b
        .act(
            Action::Download {
                r: ref_of(&snap, "link \"small\""),
            },
            policy.clone(),
        )
        .await
        .unwrap();
    assert_eq!(small.downloads.len(), 1, "{small:?}");
    assert_eq!(small.downloads[0].name, "notes.txt");
    assert_eq!(
        std::fs::read(&small.downloads[0].staged).unwrap(),
        b"hello file"
    );
    let big = b
        .act(
            Action::Download {
                r: ref_of(&snap, "link \"big\""),
            },
            policy.clone(),
        )
        .await
        .unwrap();
    assert!(big.downloads.is_empty(), "{big:?}");
    assert_eq!(
        big.notes
            .iter()
            .filter(|n| n.starts_with("DownloadTooLarge: big.bin"))
            .count(),
        1,
        "{:?}",
        big.notes
    );
    // Only the finished small file is left in the staging folder; the partial one is gone.
    // Chromium may still write the partial after the cancel is sent: the watcher removes it
    // again when Chromium reports the download cancelled, so this waits for that (20 s at most).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let staged = loop {
        let staged: Vec<_> = std::fs::read_dir(dir.path().join("staging"))
            .unwrap()
            .collect();
        if staged.len() == 1 || std::time::Instant::now() > deadline {
            break staged;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(staged.len(), 1, "{staged:?}");

    // Chromium dies: the next action starts it again and says so.
    let status = b.status().await;
    assert!(status.running && status.memory_bytes > 0, "{status:?}");
    let pid = status.pid.unwrap();
    let _ = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status();
    let mut exited = false;
    for _ in 0..200 {
        if !b.status().await.running {
            exited = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(exited, "Chromium was killed");
    let again = b
        .act(
            Action::Navigate {
                url: server.url("/files.html"),
            },
            policy.clone(),
        )
        .await
        .unwrap();
    assert!(
        again.notes.iter().any(|n| n.contains("had stopped")),
        "{:?}",
        again.notes
    );
    assert!(b.stop().await);
    assert!(!b.status().await.running);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_of_another_site_is_read_without_refs() {
    let dir = tempfile::tempdir().unwrap();
    let server = FeedServer::start();
    let port = server
        .url("")
        .trim_start_matches("http://127.0.0.1:")
        .to_string();
    server.serve_bytes(
        "/outer.html",
        "text/html",
        format!(
            "<!doctype html><title>Outer</title><button>Here</button><iframe name=\"away\" src=\"http://localhost:{port}/other.html\"></iframe>"
        )
        .into_bytes(),
    );
    server.serve_bytes(
        "/other.html",
        "text/html",
        b"<!doctype html><title>Other</title><button>Elsewhere</button>".to_vec(),
    );
    let mut policy = allowing(&server);
    policy.allow_hosts.push(format!("localhost:{port}"));
    let b = browser_for(&dir.path().join("profile"));
    b.configure(settings(dir.path()), policy.clone()).await;
    b.act(
        Action::Navigate {
            url: server.url("/outer.html"),
        },
        policy.clone(),
    )
    .await
    .unwrap();
    let snap = b.act(Action::Snapshot, policy.clone()).await.unwrap().text;
    assert!(snap.contains("button \"Here\" [ref="), "{snap}");
    assert!(snap.contains("read only, no refs"), "{snap}");
    let elsewhere = snap
        .lines()
        .find(|l| l.contains("button \"Elsewhere\""))
        .unwrap_or_else(|| panic!("the other site's frame is read: {snap}"));
    assert!(!elsewhere.contains("[ref="), "{elsewhere}");
    assert!(!server.requests("/other.html").is_empty());

    // While an action holds the browser, status answers at once (busy) instead of waiting.
    let mut short = settings(dir.path());
    short.timeout = Duration::from_secs(3);
    b.configure(short, policy.clone()).await;
    let before = b.status().await;
    assert!(before.running && !before.busy, "{before:?}");
    let waiting = {
        let (b, policy) = (b.clone(), policy.clone());
        tokio::spawn(async move {
            b.act(
                Action::Wait {
                    text: Some("never on the page".into()),
                },
                policy,
            )
            .await
        })
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let status = b.status().await;
        if status.busy {
            assert!(status.running && status.pid == before.pid, "{status:?}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never busy");
        tokio::task::yield_now().await;
    }
    let timed_out = waiting.await.unwrap().unwrap_err();
    assert_eq!(timed_out.code(), "Timeout", "{timed_out}");
    assert!(!b.status().await.busy);
    assert!(b.stop().await);
}
