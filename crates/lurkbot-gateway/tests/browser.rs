//! The web UI in a real headless Chromium driven through chromedriver (Debian `chromium` and
//! `chromium-driver`, installed by `scripts/test.sh`): sign in with a `#token=` fragment, send a
//! message and see the streamed reply, open a new session and answer an approval card, switch
//! sessions, no IRC light without IRC settings (then red, yellow, green with a real server), use
//! it at phone width, and a wrong token asking for the token. A screenshot is saved under the target directory.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client as Browser, ClientBuilder, Locator};
use lurkbot_llm::fake::Step;
use serde_json::{Value, json};

use crate::common::{Gateway, TOKEN};

/// One Chromium at a time: two started together on a small machine can fail to start.
static ONE_BROWSER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// chromedriver on a free port in a process group of its own, which is killed on drop — the
/// Chromium it started with it (killing chromedriver alone left its browsers running).
struct Driver {
    child: Child,
    port: u16,
}

impl Driver {
    fn start() -> Self {
        let port = lurkbot_test_support::ports::free_port();
        let child = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect(
                "chromedriver is missing: scripts/test.sh installs chromium and chromium-driver",
            );
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        Self { child, port }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The UI signed in with a `#token=` fragment; fields drop in order (the browser session before
/// its driver, then the one-browser lock).
pub(crate) struct Ui {
    pub(crate) browser: Browser,
    _driver: Driver,
    _one: tokio::sync::MutexGuard<'static, ()>,
}

impl Ui {
    /// The UI at `path` with no token (a shared gateway's sign-in form).
    pub(crate) async fn at(gw: &Gateway, path: &str) -> Self {
        let one = ONE_BROWSER.lock().await;
        let driver = Driver::start();
        let browser = browser(&driver).await;
        browser.goto(&gw.url(path)).await.unwrap();
        Self {
            browser,
            _driver: driver,
            _one: one,
        }
    }

    pub(crate) async fn signed_in(gw: &Gateway) -> Self {
        let one = ONE_BROWSER.lock().await;
        let driver = Driver::start();
        let browser = browser(&driver).await;
        browser
            .goto(&gw.url(&format!("/#token={TOKEN}")))
            .await
            .unwrap();
        until(
            &browser,
            "connected",
            "document.getElementById('status').textContent === 'connected'",
        )
        .await;
        Self {
            browser,
            _driver: driver,
            _one: one,
        }
    }
}

async fn browser(driver: &Driver) -> Browser {
    let profile = tempfile::tempdir().unwrap().keep();
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({"binary": "/usr/bin/chromium", "args": [
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-dev-shm-usage", "--window-size=1200,800",
            format!("--user-data-dir={}", profile.display())]}),
    );
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{}", driver.port))
        .await
        .expect("a chromium session")
}

/// Polls a JavaScript expression until it is truthy; returns its value. The deadline is only
/// for a condition that never comes: 60 s, as a turn's reply on a loaded two-core CI machine
/// once took over 20.
pub(crate) async fn until(b: &Browser, what: &str, script: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let v = b
            .execute(&format!("return {script};"), vec![])
            .await
            .unwrap();
        if !(v.is_null() || v == json!(false) || v == json!("") || v == json!(0)) {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what} ({script})"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub(crate) async fn click(b: &Browser, css: &str) {
    b.find(Locator::Css(css))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

/// Types `text` into the chat's box and sends it.
pub(crate) async fn say(b: &Browser, text: &str) {
    type_into(b, "#input", text).await;
    click(b, "#send-button").await;
}

pub(crate) async fn type_into(b: &Browser, css: &str, text: &str) {
    b.find(Locator::Css(css))
        .await
        .unwrap()
        .send_keys(text)
        .await
        .unwrap();
}

const CREATE: &str = "cal create-event --calendar-id 1 --title Dentist --start 2026-11-24T09:00:00Z --end 2026-11-24T09:30:00Z --confirm";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_sessions_approvals_welcome_and_no_irc_light_in_chromium() {
    let gw = Gateway::start(
        "[permissions]\ncalendar = \"read-write\"\n",
        vec![
            Step::text("Answered over the API."),
            Step::text("Hello from the browser test."),
            Step::call("c1", "terminal_exec", json!({"command": CREATE})),
            Step::text("Booked the dentist."),
        ],
    )
    .await;
    // One stateless OpenAI-API request (no x-lurkbot-session): a session of its own.
    let (status, _) = crate::http::post(
        &gw,
        "/v1/chat/completions",
        Some(TOKEN),
        json!({"model": "lurkbot", "messages": [{"role": "user", "content": "via the API"}]}),
    )
    .await;
    assert_eq!(status, 200);
    let ui = Ui::signed_in(&gw).await;
    let b = &ui.browser;
    // The fragment is consumed and removed from the address bar.
    assert_eq!(
        b.execute("return location.hash;", vec![]).await.unwrap(),
        ""
    );

    // No IRC configured: no light at all (it appears with the first irc.status event).
    assert_eq!(
        b.execute(
            "return document.getElementById('irc').offsetParent === null;",
            vec![]
        )
        .await
        .unwrap(),
        true
    );
    // First visit: a welcome naming the model in use and what to set up next.
    until(b, "the welcome", "document.querySelector('.card.welcome')").await;
    let welcome = b
        .find(Locator::Css(".card.welcome"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(welcome.contains("Model in use: openai/fake"), "{welcome}");
    assert!(welcome.contains("IRC"), "{welcome}");
    // A stateless API request's session is kept out of the list, behind a toggle.
    assert_eq!(
        b.execute(
            "return document.querySelectorAll('#sessions .session').length;",
            vec![]
        )
        .await
        .unwrap(),
        1
    );
    until(
        b,
        "the API toggle",
        "document.querySelector('.api-toggle') && document.querySelector('.api-toggle').textContent === 'Show API requests (1)'",
    )
    .await;

    // Send a message and see the streamed reply; the welcome goes.
    say(b, "hello").await;
    until(
        b,
        "the reply",
        "[...document.querySelectorAll('.msg.assistant')].some(e => e.textContent === 'Hello from the browser test.')",
    )
    .await;
    assert!(
        gw.fake.requests()[1].body["messages"]
            .to_string()
            .contains("hello")
    );
    assert_eq!(
        b.execute(
            "return document.querySelectorAll('.card.welcome').length;",
            vec![]
        )
        .await
        .unwrap(),
        0
    );

    // A new session, a message needing approval, answered with the card's button.
    click(b, "#new-session").await;
    until(
        b,
        "two sessions",
        "document.querySelectorAll('#sessions .session').length === 2",
    )
    .await;
    assert_eq!(
        b.execute("return document.querySelectorAll('.msg').length;", vec![])
            .await
            .unwrap(),
        0
    );
    say(b, "book the dentist").await;
    until(
        b,
        "the approval card",
        "document.querySelector('.card.approval button[data-decision=\"allow-once\"]')",
    )
    .await;
    let card = b
        .find(Locator::Css(".card.approval"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        card.contains("terminal_exec") && card.contains("cal create-event"),
        "{card}"
    );
    b.find(Locator::Css(
        ".card.approval button[data-decision=\"allow-once\"]",
    ))
    .await
    .unwrap()
    .click()
    .await
    .unwrap();
    until(
        b,
        "the booked reply",
        "[...document.querySelectorAll('.msg.assistant')].some(e => e.textContent === 'Booked the dentist.')",
    )
    .await;
    until(b, "a finished tool card", "[...document.querySelectorAll('.card.tool')].some(e => e.textContent.startsWith('✓ terminal_exec'))").await;
    let shot = b.screenshot().await.unwrap();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("browser");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("gateway-ui.png"), &shot).unwrap();
    assert!(shot.starts_with(b"\x89PNG"));

    // Back to the main session: its history is shown.
    b.find(Locator::Css(
        "#sessions .session[data-key=\"agent:main:main\"]",
    ))
    .await
    .unwrap()
    .click()
    .await
    .unwrap();
    until(
        b,
        "the main history",
        "[...document.querySelectorAll('.msg.user')].some(e => e.textContent === 'hello') && ![...document.querySelectorAll('.msg')].some(e => e.textContent === 'Booked the dentist.')",
    )
    .await;

    // Phone width: the session list hides behind the menu button.
    b.set_window_size(390, 800).await.unwrap();
    until(
        b,
        "the menu button",
        "getComputedStyle(document.getElementById('menu')).display !== 'none'",
    )
    .await;
    until(
        b,
        "the hidden session list",
        "document.getElementById('nav').getBoundingClientRect().right <= 0",
    )
    .await;
    click(b, "#menu").await;
    until(
        b,
        "the open menu",
        "document.getElementById('nav').getBoundingClientRect().left >= 0",
    )
    .await;
    let wide = b
        .execute(
            "return [document.documentElement.scrollWidth, window.innerWidth];",
            vec![],
        )
        .await
        .unwrap();
    assert!(
        wide[0].as_u64() <= wide[1].as_u64(),
        "no horizontal scrolling at phone width: {wide}"
    );

    // A wrong token: the page asks for the token instead.
    b.execute(
        "localStorage.setItem('lurkbot.token', 'wrong'); location.reload();",
        vec![],
    )
    .await
    .unwrap();
    until(
        b,
        "the token prompt",
        "document.getElementById('login').classList.contains('shown')",
    )
    .await;
    b.clone().close().await.unwrap();
}

/// The IRC light: absent without IRC settings, red once they exist, yellow while connecting (a
/// server that accepts and never answers), green when the channel is joined (real ngircd).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_irc_light_follows_the_connection_in_chromium() {
    use lurkbot_test_support::irc_server::{IrcOptions, IrcServer};
    let server = IrcServer::start(&IrcOptions::default());
    // A server that never answers: the kernel completes the TCP handshake for a listener that
    // never accepts, so the client waits for a welcome that does not come.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_port = silent.local_addr().unwrap().port();
    let gw = Gateway::start("", vec![]).await;
    let ui = Ui::signed_in(&gw).await;
    let b = &ui.browser;
    let hidden = "document.getElementById('irc').offsetParent === null";
    assert_eq!(
        b.execute(&format!("return {hidden};"), vec![])
            .await
            .unwrap(),
        true
    );

    crate::irc::write_irc_env(&gw, silent_port, "");
    b.refresh().await.unwrap();
    until(
        b,
        "the light",
        "document.getElementById('irc').offsetParent !== null",
    )
    .await;
    let state = |s: &str| format!("document.getElementById('irc').dataset.state === '{s}'");
    until(b, "red before any connection", &state("red")).await;

    let (mut c, _) = crate::common::Client::connect(&gw, TOKEN).await;
    let status = c
        .request("terminal.exec", json!({"command": "irc status"}))
        .await;
    assert_eq!(
        status["payload"]["result"]["state"], "connecting",
        "{status}"
    );
    until(b, "yellow while connecting", &state("yellow")).await;

    crate::irc::write_irc_env(&gw, server.port, "");
    let joined = c
        .request("terminal.exec", json!({"command": "irc connect"}))
        .await;
    assert_eq!(joined["payload"]["result"]["state"], "joined", "{joined}");
    until(b, "green when joined", &state("green")).await;
    let title = b
        .execute("return document.getElementById('irc').title;", vec![])
        .await
        .unwrap();
    assert_eq!(
        title, "IRC: joined",
        "the light names no server, channel or nick"
    );
    b.clone().close().await.unwrap();
    drop(silent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cron_panel_lists_runs_and_toggles_jobs_in_chromium() {
    let gw = Gateway::start("", vec![]).await;
    let (mut c, _) = crate::common::Client::connect(&gw, TOKEN).await;
    let added = c
        .request(
            "cron.add",
            json!({"job": {"name": "daily report", "schedule": {"kind": "cron", "expr": "0 9 * * *", "tz": "Europe/Berlin"},
                "payload": {"kind": "agentTurn", "message": "Write the report"},
                "delivery": {"mode": "announce", "channel": "webchat"}}}),
        )
        .await;
    let id = added["payload"]["job"]["id"].as_str().unwrap().to_string();
    gw.fake.route(
        &format!("session=cron:{id}"),
        vec![Step::text("Report: all quiet.")],
    );
    let ui = Ui::signed_in(&gw).await;
    let b = &ui.browser;
    click(b, "#cron-toggle").await;
    let row = format!("document.querySelector('#cron-jobs tr[data-job-id=\"{id}\"]')");
    let text = until(b, "the job's row", &format!("{row} && {row}.textContent")).await;
    let text = text.as_str().unwrap();
    assert!(text.contains("daily report") && text.contains("cron 0 9 * * * (Europe/Berlin)"));
    assert!(text.contains("never ran"), "{text}");

    // Run now: the row shows the run, the announce lands in the main chat.
    click(
        b,
        &format!("#cron-jobs tr[data-job-id=\"{id}\"] button[data-action=\"Run now\"]"),
    )
    .await;
    until(
        b,
        "the last status",
        &format!("{row}.textContent.includes('ok')"),
    )
    .await;
    click(
        b,
        &format!("#cron-jobs tr[data-job-id=\"{id}\"] button[data-action=\"Runs\"]"),
    )
    .await;
    until(
        b,
        "the run log",
        "document.querySelectorAll('#cron-runs .run').length === 1",
    )
    .await;
    click(
        b,
        &format!("#cron-jobs tr[data-job-id=\"{id}\"] button[data-action=\"Disable\"]"),
    )
    .await;
    until(
        b,
        "disabled",
        &format!("{row}.textContent.includes('(disabled)')"),
    )
    .await;
    assert!(
        !lurkbot_agent::cron::CronStore::open(&gw.home)
            .jobs()
            .unwrap()[0]
            .enabled
    );
    click(b, "#cron-toggle").await;
    until(
        b,
        "the announce in the chat",
        "[...document.querySelectorAll('.msg.assistant')].some((m) => m.textContent === 'Report: all quiet.')",
    )
    .await;
    b.clone().close().await.unwrap();
}
