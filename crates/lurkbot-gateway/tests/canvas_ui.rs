//! The `canvas` tool end to end in a real headless Chromium (the driver of `browser.rs`): not
//! offered while no client that can show widgets is attached; shown and pinned by the scripted
//! model, the widget's script runs inside a frame that cannot reach the page (`parent.document`),
//! its storage (the gateway token) or its cookies, and cannot reach the network — a `fetch()`,
//! an image and a navigation of its own frame aimed at a recording server on 127.0.0.2 never
//! arrive; the pinned widget is on the dashboard again after a reload; `hide` removes it.

use std::io::Read;
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use fantoccini::Locator;
use lurkbot_llm::fake::Step;
use serde_json::{Value, json};

use crate::browser::{Ui, until};
use crate::common::{Client, Gateway, TOKEN};

/// Counts the requests made to it: connections that sent bytes (it answers nothing). A
/// connection that sends nothing is not a request: Chromium opens one speculatively when a
/// frame starts a navigation, before the page's policy refuses it (ARCHITECTURE.md §6).
fn recorder() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.2:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let counted = counted.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 512];
                if stream.read(&mut buf).is_ok_and(|n| n > 0) {
                    counted.fetch_add(1, Ordering::SeqCst);
                }
            });
        }
    });
    (format!("http://{addr}"), hits)
}

/// A widget that tries everything it must not be able to do and writes what happened.
fn probe(target: &str, gateway: &str) -> String {
    format!(
        r#"<p id="r">waiting</p><script>
const r = {{ran: true}};
try {{ r.parent = typeof parent.document.title; }} catch (e) {{ r.parent = "blocked"; }}
try {{ r.token = localStorage.getItem("lurkbot.token"); }} catch (e) {{ r.token = "blocked"; }}
try {{ r.cookie = document.cookie; }} catch (e) {{ r.cookie = "blocked"; }}
new Image().src = "{target}/img";
const tried = (url, name) => fetch(url, {{mode: "no-cors"}}).then(() => {{ r[name] = "reached"; }}, () => {{ r[name] = "blocked"; }});
Promise.all([tried("{target}/fetch", "fetch"), tried("{gateway}/health", "gateway")])
  .finally(() => {{ document.getElementById("r").textContent = JSON.stringify(r); }});
</script>"#
    )
}

fn tools_of(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pinned_widget_runs_sandboxed_without_network_and_survives_a_reload_in_chromium() {
    let (target, hits) = recorder();
    let gw = Gateway::start("", vec![Step::text("no canvas here")]).await;
    // The probe aims at the gateway itself too (its /health needs no token).
    let gw_url = gw.url("").trim_end_matches('/').to_string();
    gw.fake.push(vec![
        Step::call(
            "c1",
            "canvas",
            json!({"action": "show", "id": "probe", "title": "Probe", "html": probe(&target, &gw_url), "pin": true}),
        ),
        Step::call(
            "c2",
            "canvas",
            json!({"action": "show", "id": "nav", "title": "Away", "html": format!("<script>location.href = '{target}/navigate';</script>")}),
        ),
        Step::text("shown"),
        Step::call("c3", "canvas", json!({"action": "hide", "id": "probe"})),
        Step::text("hidden"),
    ]);
    // A protocol client without the capability: the model is not offered the tool.
    let (mut plain, _) = Client::connect(&gw, TOKEN).await;
    plain
        .request("chat.send", json!({"message": "hello"}))
        .await;
    plain
        .event(|e| e["event"] == "chat" && e["payload"]["state"] == "final")
        .await;
    assert!(!tools_of(&gw.fake.requests()[0].body).contains(&"canvas".to_string()));

    let ui = Ui::signed_in(&gw).await;
    let b = &ui.browser;
    crate::browser::say(b, "draw it").await;
    until(
        b,
        "the pinned widget on the dashboard",
        "!document.getElementById('dashboard').hidden && document.querySelector('#dashboard [data-widget=\"probe\"] iframe')",
    )
    .await;
    assert!(tools_of(&gw.fake.requests()[1].body).contains(&"canvas".to_string()));
    until(
        b,
        "the unpinned widget in the chat",
        "document.querySelector('#messages [data-widget=\"nav\"] iframe')",
    )
    .await;
    let frame = b
        .find(Locator::Css("#dashboard [data-widget=\"probe\"] iframe"))
        .await
        .unwrap();
    assert_eq!(
        frame.attr("sandbox").await.unwrap().as_deref(),
        Some("allow-scripts")
    );
    frame.clone().enter_frame().await.unwrap();
    let found = until(
        b,
        "the probe's report",
        "((t) => t && t !== 'waiting' ? t : null)(document.getElementById('r')?.textContent)",
    )
    .await;
    b.enter_parent_frame().await.unwrap();
    let report: Value = serde_json::from_str(found.as_str().unwrap()).unwrap();
    assert_eq!(report["ran"], true, "{report}");
    assert_eq!(report["parent"], "blocked", "{report}");
    assert_eq!(report["token"], "blocked", "{report}");
    assert_eq!(report["cookie"], "blocked", "{report}");
    assert_eq!(report["fetch"], "blocked", "{report}");
    assert_eq!(
        report["gateway"], "blocked",
        "the widget reached the gateway: {report}"
    );

    // Pinned survives a reload (from canvas.list), the navigating one stayed in its frame.
    b.refresh().await.unwrap();
    until(
        b,
        "the pinned widget after a reload",
        "document.querySelector('#dashboard [data-widget=\"probe\"] iframe')",
    )
    .await;
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "a widget's request reached the network"
    );

    // hide removes it live.
    crate::browser::say(b, "remove it").await;
    until(
        b,
        "the dashboard emptied",
        "document.getElementById('dashboard').hidden && !document.querySelector('[data-widget=\"probe\"]')",
    )
    .await;
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "a widget's request reached the network"
    );
    b.clone().close().await.unwrap();
}
