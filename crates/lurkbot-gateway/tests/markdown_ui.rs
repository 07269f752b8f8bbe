//! The web UI's chat renders the model's Markdown in a real headless Chromium (the driver of
//! `browser.rs`): a table, a list and highlighted fenced code become elements, live and after a
//! reload; HTML the model wrote (an `<img onerror>`, a `<script>`, a `javascript:` link, a
//! comment) executes nothing and is shown as text; a tool card opens to its arguments and result.

use lurkbot_llm::fake::Step;
use serde_json::json;

use crate::browser::{Ui, click, until};
use crate::common::Gateway;

const REPLY: &str = "## Plan\n\n| step | state |\n|---|---|\n| read | done |\n| write | next |\n\n- first\n- second\n\n```rust\nfn main() { let x = 1; } // go\n```\n\n<img src=x onerror=\"window.__owned = 1\">\n\n<script>window.__owned = 2</script>\n\nSee [this](javascript:window.__owned=3) and <!-- a comment --> **done**.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_render_as_markdown_and_model_html_never_runs_in_chromium() {
    let gw = Gateway::start(
        "",
        vec![
            Step::call("c1", "terminal_exec", json!({"command": "help"})),
            Step::text(REPLY),
        ],
    )
    .await;
    let ui = Ui::signed_in(&gw).await;
    let b = &ui.browser;
    crate::browser::say(b, "make a plan").await;
    until(
        b,
        "the rendered reply",
        "document.querySelector('#messages .msg.assistant table') && document.querySelector('#messages .msg.assistant strong')",
    )
    .await;
    check_rendered(b).await;

    // The tool card opens to the call's arguments and its result.
    click(b, "#messages details.card.tool summary").await;
    let card = until(
        b,
        "an open tool card with its result",
        "((d) => d && d.open && d.querySelector('pre.result') ? [d.querySelector('summary').textContent, d.querySelector('pre.args').textContent, d.querySelector('pre.result').textContent.length] : null)(document.querySelector('#messages details.card.tool'))",
    )
    .await;
    assert_eq!(card[0], json!("✓ terminal_exec"), "{card}");
    assert!(card[1].as_str().unwrap().contains("help"), "{card}");
    assert!(card[2].as_u64().unwrap() > 0, "{card}");

    // After a reload the history renders the same way, with the tool's result in its card.
    b.refresh().await.unwrap();
    until(
        b,
        "the rendered history",
        "document.querySelector('#messages .msg.assistant table') && document.querySelector('#messages .msg.assistant strong')",
    )
    .await;
    check_rendered(b).await;
    until(
        b,
        "the tool card's result from the history",
        "document.querySelector('#messages details.card.tool pre.result')?.textContent.includes('terminal_exec')",
    )
    .await;
    b.clone().close().await.unwrap();
}

/// The reply's elements, and nothing of the model's HTML alive.
async fn check_rendered(b: &fantoccini::Client) {
    let facts = b
        .execute(
            "const m = [...document.querySelectorAll('#messages .msg.assistant')].pop();
             return {
               cells: [...m.querySelectorAll('td')].map((t) => t.textContent),
               items: m.querySelectorAll('li').length,
               heading: m.querySelector('h2')?.textContent,
               keyword: m.querySelector('pre.code span.hl-k')?.textContent,
               comment: m.querySelector('pre.code span.hl-c')?.textContent,
               imgs: document.querySelectorAll('#messages img').length,
               scripts: m.querySelectorAll('script').length,
               jsLinks: [...m.querySelectorAll('a')].filter((a) => !/^https?:|^mailto:/.test(a.getAttribute('href') || 'http:')).length,
               owned: window.__owned ?? null,
               text: m.textContent,
             };",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        facts["cells"],
        json!(["read", "done", "write", "next"]),
        "{facts}"
    );
    assert_eq!(facts["items"], 2, "{facts}");
    assert_eq!(facts["heading"], "Plan", "{facts}");
    assert_eq!(facts["keyword"], "fn", "{facts}");
    assert_eq!(facts["comment"], "// go", "{facts}");
    assert_eq!(facts["imgs"], 0, "{facts}");
    assert_eq!(facts["scripts"], 0, "{facts}");
    assert_eq!(facts["jsLinks"], 0, "{facts}");
    let text = facts["text"].as_str().unwrap();
    for shown in [
        "<img src=x onerror=",
        "<script>window.__owned = 2</script>",
        "<!-- a comment -->",
    ] {
        assert!(text.contains(shown), "{shown} is not shown as text: {text}");
    }
    // Give a late image error or script a chance to run, then check nothing did.
    let owned = b
        .execute_async(
            "const done = arguments[0]; setTimeout(() => done(window.__owned ?? null), 300);",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(owned, json!(null), "the model's HTML ran");
}
