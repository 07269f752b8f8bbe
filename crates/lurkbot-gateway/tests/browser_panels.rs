//! The web UI's Usage and Channels panels in a real headless Chromium (see `browser.rs` for the
//! driver): two days of usage bars with the budget's fill, and the channels' states with a
//! pairing approved from the page.

use serde_json::{Value, json};

use crate::browser::{Ui, click, until};
use crate::common::Gateway;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_usage_panel_draws_two_days_of_bars_and_the_budget_fill_in_chromium() {
    let gw = Gateway::start("[budgets]\ndaily_tokens = 10000\n", vec![]).await;
    let config = lurkbot_core::Config::default();
    let zone = lurkbot_agent::usage::zone(&config);
    let now = lurkbot_core::now_ms();
    let record = |ts: u64, model: &str, tokens: u64| lurkbot_agent::usage::UsageRecord {
        ts,
        agent: "main".into(),
        session_key: "agent:main:main".into(),
        model: model.into(),
        input_tokens: tokens,
        output_tokens: 0,
        cached_input_tokens: None,
        cost_usd: None,
        estimated: false,
    };
    for r in [
        record(now - 86_400_000, "openai/a", 3000),
        record(now, "openai/a", 1500),
        lurkbot_agent::usage::UsageRecord {
            cost_usd: Some(0.125),
            ..record(now, "anthropic/b", 2500)
        },
    ] {
        lurkbot_agent::usage::append(&gw.home, &zone, &r).unwrap();
    }
    let ui = Ui::signed_in(&gw).await;
    let b = &ui.browser;
    click(b, "#usage-toggle").await;
    until(
        b,
        "two days of bars",
        "document.querySelectorAll('#usage-chart g.day').length === 2",
    )
    .await;
    let stacked = b
        .execute(
            "return [...document.querySelectorAll('#usage-chart g.day')].map((g) => g.querySelectorAll('rect').length);",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(stacked, json!([1, 2]), "yesterday one model, today two");
    let costs = b
        .execute(
            "return [...document.querySelectorAll('#usage-chart g.day text.cost')].map((t) => t.textContent);",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(costs, json!(["$0.13"]), "today's cost only");
    let legend = b
        .execute(
            "return document.getElementById('usage-legend').textContent;",
            vec![],
        )
        .await
        .unwrap();
    let legend = legend.as_str().unwrap();
    assert!(
        legend.contains("openai/a") && legend.contains("anthropic/b"),
        "{legend}"
    );
    let budget = until(
        b,
        "the daily budget's fill",
        "document.querySelector('#usage-budgets [data-cap=\"budgets.daily_tokens\"]')?.textContent",
    )
    .await;
    assert_eq!(budget, json!("budgets.daily_tokens: 4000 of 10000"));
    // The gateway's own figures since it started, and where Prometheus reads them.
    let live = until(
        b,
        "the gateway's figures",
        "document.getElementById('usage-live').textContent || null",
    )
    .await;
    let live = live.as_str().unwrap();
    assert!(
        live.starts_with("Since the gateway started: ") && live.contains("scrape /metrics"),
        "{live}"
    );
    b.clone().close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_channels_panel_shows_states_and_approves_a_pairing_in_chromium() {
    let server = lurkbot_test_support::telegram_server::TelegramServer::start("123:t");
    let gw = Gateway::start_with_env(
        &format!("[channels.telegram]\nbase_url = \"{}\"\n", server.url()),
        vec![],
        "TELEGRAM_BOT_TOKEN=123:t\n",
    )
    .await;
    let store = lurkbot_channels::pairing::PairingStore::open(&gw.home);
    let now = lurkbot_core::now_ms();
    let lurkbot_channels::pairing::Requested::New(code) =
        store.request("telegram", "555", "ada", now).unwrap()
    else {
        panic!("a new code");
    };
    let ui = Ui::signed_in(&gw).await;
    let b = &ui.browser;
    click(b, "#channels-toggle").await;
    let state = until(
        b,
        "the telegram row",
        "document.querySelector('#channel-rows tr[data-channel=\"telegram\"] td:nth-child(2)')?.textContent",
    )
    .await;
    assert!(
        state == json!("connected") || state == json!("starting"),
        "{state}"
    );
    until(
        b,
        "the pairing card",
        &format!("document.querySelector('#pairings .pairing[data-code=\"{code}\"]')"),
    )
    .await;
    click(
        b,
        &format!("#pairings .pairing[data-code=\"{code}\"] button[data-action=\"Approve\"]"),
    )
    .await;
    until(
        b,
        "nobody waiting",
        "document.getElementById('pairings').textContent === 'Nobody is waiting.'",
    )
    .await;
    assert!(store.is_approved("telegram", "555").unwrap());
    // A reply the platform refused for good is shown with why, and Retry sends it.
    let outbox = lurkbot_state::Store::open(&gw.home).unwrap();
    let refused = outbox
        .enqueue(
            None,
            &lurkbot_state::NewOutgoing {
                channel: "telegram".into(),
                chat: "42".into(),
                reply_to: None,
                kind: "text".into(),
                body: "The answer you missed.".into(),
            },
        )
        .unwrap();
    outbox
        .mark_failed(&refused.id, "Forbidden: bot was blocked by the user", true)
        .unwrap();
    server.user_started(42);
    click(b, "#usage-toggle").await;
    click(b, "#channels-toggle").await;
    let card = format!("#undelivered .undelivered[data-outbox=\"{}\"]", refused.id);
    let shown = until(
        b,
        "the undelivered card",
        &format!("document.querySelector('{card}')?.textContent"),
    )
    .await;
    let shown = shown.as_str().unwrap_or_default();
    assert!(
        shown.contains("The answer you missed.") && shown.contains("blocked by the user"),
        "{shown}"
    );
    click(b, &format!("{card} button[data-action=\"Retry\"]")).await;
    until(
        b,
        "every message delivered",
        "document.getElementById('undelivered').textContent.includes('Every message was delivered.')",
    )
    .await;
    let sent = server.wait_sent(1, std::time::Duration::from_secs(30));
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].text, "The answer you missed\\.");
    // The other panels still switch.
    click(b, "#usage-toggle").await;
    until(
        b,
        "the usage panel",
        "!document.getElementById('usage').hidden && document.getElementById('channels').hidden",
    )
    .await;
    b.clone().close().await.unwrap();
}

/// With no model configured, the welcome card offers the owner `lurkbot setup`'s three choices
/// instead of a command to copy: saved through `setup.model`, the model answers the next
/// message with the key given, and the key is in `.env` (0600), not in config.toml.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_welcome_card_chooses_the_model_in_chromium() {
    use std::os::unix::fs::PermissionsExt;
    let gw = Gateway::start_raw(
        "",
        vec![lurkbot_llm::fake::Step::text(
            "Hi from the model you chose.",
        )],
        Some(crate::common::TOKEN),
        None,
    )
    .await;
    let ui = Ui::signed_in(&gw).await;
    let b = &ui.browser;
    until(
        b,
        "the model form",
        "document.querySelector('.card.welcome form.model-setup')",
    )
    .await;
    // The form as a newcomer sees it in a 1200 px window: each field one line high and dark
    // like the page, the button's label on one line.
    let geometry = until(
        b,
        "the form's geometry",
        "(() => { const f = document.querySelector('form.model-setup');            const i = f.querySelector('input[name=model]'); const s = f.querySelector('button[type=submit]');            const px = (e) => parseFloat(getComputedStyle(e).fontSize);            return JSON.stringify({ inputLines: i.getBoundingClientRect().height / px(i),              buttonLines: s.getBoundingClientRect().height / px(s),              buttonClipped: s.scrollWidth > s.clientWidth,              inputBackground: getComputedStyle(i).backgroundColor }); })()",
    )
    .await;
    let geometry: Value = serde_json::from_str(geometry.as_str().unwrap_or("{}")).unwrap();
    assert!(
        geometry["inputLines"].as_f64().unwrap() < 2.6,
        "an input more than one line high: {geometry}"
    );
    assert!(
        geometry["buttonLines"].as_f64().unwrap() < 2.6 && geometry["buttonClipped"] == false,
        "the Save label is not on one line: {geometry}"
    );
    assert_ne!(
        geometry["inputBackground"], "rgb(255, 255, 255)",
        "a white input on the dark page: {geometry}"
    );
    let base = format!("{}/v1", gw.fake.url);
    crate::browser::type_into(b, "form.model-setup input[name=model]", "ui-model").await;
    crate::browser::type_into(b, "form.model-setup input[name=baseUrl]", &base).await;
    crate::browser::type_into(
        b,
        "form.model-setup input[name=key]",
        "sk-ui-key-0123456789",
    )
    .await;
    click(b, "form.model-setup button[type=submit]").await;
    let said = until(
        b,
        "the saved model",
        "((t) => t.includes('Model in use') ? t : null)(document.querySelector('.model-setup-result').textContent)",
    )
    .await;
    assert!(said.to_string().contains("openai/ui-model"), "{said}");
    let config = std::fs::read_to_string(gw.home.join("config.toml")).unwrap();
    assert!(config.contains("model = \"openai/ui-model\""), "{config}");
    assert!(!config.contains("sk-ui-key"));
    let env = std::fs::read_to_string(gw.home.join(".env")).unwrap();
    assert!(
        env.contains("OPENAI_API_KEY=\"sk-ui-key-0123456789\""),
        "{env}"
    );
    let mode = std::fs::metadata(gw.home.join(".env"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    // The next message is answered by the chosen model, with the key given.
    let (mut c, _) = crate::common::Client::connect(&gw, crate::common::TOKEN).await;
    c.request("chat.send", json!({"message": "hello"})).await;
    let done = c
        .event(|e| e["event"] == "chat" && e["payload"]["state"] == "final")
        .await;
    assert_eq!(
        done["payload"]["text"], "Hi from the model you chose.",
        "{done}"
    );
    let sent = &gw.fake.requests()[0];
    assert_eq!(sent.key.as_deref(), Some("sk-ui-key-0123456789"));
    assert_eq!(sent.body["model"], "ui-model");
    // Refused: an unknown provider, with nothing written.
    let refused = c
        .request("setup.model", json!({"provider": "mistery", "model": "m"}))
        .await;
    assert_eq!(refused["error"]["code"], "INVALID_REQUEST", "{refused}");
}

/// The chat's attach path in Chromium: a picture handed to the page (as the file picker or a
/// drop hands it) is scaled in the browser, sent with the message, reaches the model as an
/// image part, and shows again in the history, fetched with the token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attached_picture_is_sent_and_shown_in_the_history_in_chromium() {
    let gw = Gateway::start("", vec![lurkbot_llm::fake::Step::text("A red square.")]).await;
    let ui = Ui::signed_in(&gw).await;
    let b = &ui.browser;
    // The attach button draws its own icon: no emoji font is needed (one drawn with an emoji
    // is an empty box where none is installed, as in headless Chromium here).
    let icon = b
        .execute(
            "const a = document.getElementById('attach'); const r = a.querySelector('svg path') \
             && a.querySelector('svg').getBoundingClientRect(); \
             return [a.textContent.trim(), r ? r.width : 0, r ? r.height : 0];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(icon, json!(["", 18, 18]), "the attach button's icon");
    b.execute(
        "const c = document.createElement('canvas'); c.width = 2400; c.height = 1200; \
         const g = c.getContext('2d'); g.fillStyle = '#d02020'; g.fillRect(0, 0, 2400, 1200); \
         c.toBlob((blob) => addImage(new File([blob], 'red.png', {type: 'image/png'})), 'image/png');",
        vec![],
    )
    .await
    .unwrap();
    until(
        b,
        "a preview",
        "document.querySelectorAll('#attachments img').length === 1",
    )
    .await;
    crate::browser::say(b, "what is this?").await;
    until(
        b,
        "the answer",
        "document.body.textContent.includes('A red square.')",
    )
    .await;
    let user = gw.fake.requests()[0].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(user["content"][0]["text"], "what is this?");
    assert!(
        user["content"][1]["image_url"]["url"]
            .as_str()
            .unwrap_or_default()
            .starts_with("data:image/jpeg;base64,"),
        "{user}"
    );
    assert_eq!(
        b.execute(
            "return document.querySelectorAll('#attachments img').length;",
            vec![]
        )
        .await
        .unwrap(),
        json!(0),
        "the preview is cleared once sent"
    );
    // Loaded again from the history: the picture comes from /v1/images with the token.
    b.refresh().await.unwrap();
    until(
        b,
        "the kept picture",
        "[...document.querySelectorAll('.msg.user img')].some((i) => i.src.startsWith('blob:') && i.naturalWidth === 1600)",
    )
    .await;
}

/// The header shows the browser tool's Chromium while it runs (tabs, memory), from `status`;
/// `browser.start`/`browser.stop` need the admin scope and say what they did.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_header_shows_the_managed_browser_while_it_runs_in_chromium() {
    let gw = Gateway::start("", vec![]).await;
    let (mut c, _) = crate::common::Client::connect(&gw, crate::common::TOKEN).await;
    let status = c.request("status", json!({})).await;
    assert_eq!(status["payload"]["browser"]["running"], false, "{status}");
    let started = c.request("browser.start", json!({})).await;
    assert_eq!(started["payload"]["running"], true, "{started}");
    assert!(started["payload"]["pid"].as_u64().is_some(), "{started}");
    let ui = Ui::signed_in(&gw).await;
    let b = &ui.browser;
    until(
        b,
        "the browser's state in the header",
        "document.getElementById('browser').textContent.startsWith('Browser: 1 tab, ')",
    )
    .await;
    let stopped = c.request("browser.stop", json!({})).await;
    assert_eq!(stopped["payload"]["stopped"], true, "{stopped}");
    b.refresh().await.unwrap();
    until(
        b,
        "hidden once stopped",
        "document.getElementById('browser').offsetParent === null && document.getElementById('status').textContent !== 'offline'",
    )
    .await;
    b.clone().close().await.unwrap();
}

/// The Devices panel: a node waiting for the owner is approved from the page, shown connected
/// with its commands, then rejected (its connection closed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_devices_panel_approves_and_rejects_a_node_in_chromium() {
    use lurkbot_gateway::protocol::device::Identity;
    use lurkbot_gateway::protocol::node::connect_params;
    let gw = Gateway::start("", vec![]).await;
    let me = Identity::generate().unwrap();
    let mut node = crate::common::Client::open(&gw).await;
    let challenge = node.recv().await.unwrap();
    let (nonce, ts) = (
        challenge["payload"]["nonce"].as_str().unwrap().to_string(),
        challenge["payload"]["ts"].as_u64().unwrap(),
    );
    let params = connect_params(
        &me,
        (&nonce, ts),
        "tablet",
        crate::common::TOKEN,
        &["device.info"],
    );
    assert_eq!(node.request("connect", params).await["ok"], true);
    let ui = Ui::signed_in(&gw).await;
    let b = &ui.browser;
    click(b, "#devices-toggle").await;
    let row = format!("#device-rows tr[data-device=\"{}\"]", me.id());
    let state = until(
        b,
        "the pending row",
        &format!("document.querySelector('{row} td:nth-child(3)')?.textContent"),
    )
    .await;
    assert_eq!(state, json!("pending"));
    click(b, &format!("{row} button[data-action=\"Approve\"]")).await;
    until(
        b,
        "the approved row",
        &format!("document.querySelector('{row} td:nth-child(4)')?.textContent === 'connected: device.info'"),
    )
    .await;
    assert_eq!(gw.state.nodes.devices().unwrap()[0]["state"], "approved");
    click(b, &format!("{row} button[data-action=\"Reject\"]")).await;
    until(
        b,
        "the rejected row",
        &format!("document.querySelector('{row} td:nth-child(3)')?.textContent === 'rejected'"),
    )
    .await;
    assert_eq!(gw.state.nodes.devices().unwrap()[0]["state"], "rejected");
    assert_eq!(
        node.close_code().await,
        Some(4001),
        "its connection is closed"
    );
    b.clone().close().await.unwrap();
}
