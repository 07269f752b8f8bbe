//! Signing in to a shared gateway's web UI in a real headless Chromium (ARCHITECTURE.md §6.2):
//! the sign-in form, a wrong password refused, Alice's chat with none of Bob's data on the page,
//! an `HttpOnly; SameSite=Strict` cookie the page's script cannot read, sign-out, and the
//! admin's Users panel adding a user.

use lurkbot_llm::fake::Step;
use serde_json::json;

use crate::browser::{Ui, click, say, type_into, until};
use crate::common::{Client, Gateway, TOKEN};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alice_signs_in_chats_and_signs_out_and_the_admin_adds_a_user_in_chromium() {
    let gw = Gateway::start(
        "[users]\nenabled = true\n",
        vec![
            Step::text("bob-reply"),
            Step::text("Hello Alice, from your agent."),
        ],
    )
    .await;
    let (mut owner, _) = Client::connect(&gw, TOKEN).await;
    let mut tokens = Vec::new();
    for (name, admin) in [("alice", false), ("bob", false), ("root", true)] {
        let added = owner
            .request("users.add", json!({"name": name, "admin": admin}))
            .await;
        tokens.push(added["payload"]["token"].as_str().unwrap().to_string());
        let set = owner
            .request(
                "users.passwd",
                json!({"name": name, "password": format!("{name}'s password")}),
            )
            .await;
        assert_eq!(set["ok"], true, "{set}");
    }
    // Bob has a conversation of his own first.
    let (mut bob, _) = Client::connect(&gw, &tokens[1]).await;
    bob.request("chat.send", json!({"message": "bob-private-note"}))
        .await;
    bob.event(|e| e["event"] == "chat" && e["payload"]["state"] == "final")
        .await;

    let ui = Ui::at(&gw, "/").await;
    let b = &ui.browser;
    until(b, "the sign-in form", "!document.getElementById('sign-in').hidden && document.getElementById('login').classList.contains('shown')").await;
    assert_eq!(
        b.execute(
            "return document.getElementById('token-box').hidden;",
            vec![]
        )
        .await
        .unwrap(),
        true
    );
    type_into(b, "#sign-in-user", "alice").await;
    type_into(b, "#sign-in-password", "not her password").await;
    click(b, "#sign-in-button").await;
    until(b, "the refusal", "document.getElementById('sign-in-error').textContent.includes('wrong user name or password')").await;
    type_into(b, "#sign-in-password", "alice's password").await;
    click(b, "#sign-in-button").await;
    until(
        b,
        "connected",
        "document.getElementById('status').textContent === 'connected'",
    )
    .await;
    let who = until(
        b,
        "who is signed in",
        "document.getElementById('who').textContent",
    )
    .await;
    assert_eq!(who, json!("signed in as alice"));
    // A user gets no admin panels.
    let hidden = b
        .execute(
            "return ['users-toggle', 'channels-toggle', 'devices-toggle'].map((id) => document.getElementById(id).hidden);",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(hidden, json!([true, true, true]));
    // The cookie: HttpOnly (the page cannot read it), SameSite=Strict.
    assert_eq!(
        b.execute("return document.cookie;", vec![]).await.unwrap(),
        json!("")
    );
    let cookie = b.get_named_cookie("lurkbot_session").await.unwrap();
    assert_eq!(cookie.http_only(), Some(true));
    assert_eq!(
        cookie.same_site().map(|s| format!("{s:?}")).as_deref(),
        Some("Strict")
    );
    assert_eq!(cookie.secure(), Some(false), "plain HTTP on loopback");

    say(b, "hello from alice").await;
    until(
        b,
        "the reply",
        "document.getElementById('messages').textContent.includes('Hello Alice, from your agent.')",
    )
    .await;
    let page = b
        .execute("return document.body.innerText;", vec![])
        .await
        .unwrap();
    let page = page.as_str().unwrap();
    assert!(
        !page.contains("bob-private-note") && !page.contains("bob-reply"),
        "{page}"
    );

    // Sign out: back to the form, and the cookie signs in nobody any more.
    let value = cookie.value().to_string();
    click(b, "#sign-out").await;
    until(b, "the sign-in form again", "document.getElementById('login').classList.contains('shown') && !document.getElementById('sign-in').hidden").await;
    let me = crate::users_sign_in::me(&gw, &format!("lurkbot_session={value}")).await;
    assert_eq!(me["signedIn"], serde_json::Value::Null, "{me}");

    // The admin: the Users panel lists everyone and adds a user.
    b.execute(
        "document.getElementById('sign-in-user').value = '';",
        vec![],
    )
    .await
    .unwrap();
    type_into(b, "#sign-in-user", "root").await;
    type_into(b, "#sign-in-password", "root's password").await;
    click(b, "#sign-in-button").await;
    until(b, "the admin's Users button", "document.getElementById('status').textContent === 'connected' && !document.getElementById('users-toggle').hidden").await;
    click(b, "#users-toggle").await;
    until(
        b,
        "the users",
        "document.querySelectorAll('#user-rows tr[data-user]').length === 3",
    )
    .await;
    type_into(b, "#user-name", "carol").await;
    click(b, "#user-add button").await;
    let note = until(b, "carol's token", "document.getElementById('user-note').textContent.includes('lbu_') && document.getElementById('user-note').textContent").await;
    assert!(note.as_str().unwrap().starts_with("carol added"), "{note}");
    until(
        b,
        "four users",
        "document.querySelectorAll('#user-rows tr[data-user]').length === 4",
    )
    .await;
    assert!(gw.home.join("users/carol/workspace").is_dir());
    // Nothing of Bob's ever reached the admin's page either.
    let page = b
        .execute("return document.body.innerText;", vec![])
        .await
        .unwrap();
    assert!(!page.as_str().unwrap().contains("bob-private-note"));
}

/// What the first screen shows, by what is drawn: `[sign-in form, token box]` visible, and
/// whether whatever is visible sits inside the one panel.
const FIRST_SCREEN: &str = "const shown = (id) => document.getElementById(id).getClientRects().length > 0; \
    const panel = document.querySelector('#login > div').getBoundingClientRect(); \
    const inside = ['sign-in', 'token-box'].filter(shown).every((id) => { \
      const r = document.getElementById(id).getBoundingClientRect(); \
      return r.left >= panel.left && r.right <= panel.right && r.top >= panel.top && r.bottom <= panel.bottom; }); \
    return [shown('sign-in'), shown('token-box'), inside];";

/// The first screen offers one way in: the token box on a gateway of one owner (users off,
/// where `/auth/login` does not exist), the sign-in form on a shared one — never both, and
/// nothing drawn outside the panel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_screen_offers_one_way_in_in_chromium() {
    for (config, expected) in [
        ("", json!([false, true, true])),
        ("[users]\nenabled = true\n", json!([true, false, true])),
    ] {
        let gw = Gateway::start(config, vec![]).await;
        let ui = Ui::at(&gw, "/").await;
        let b = &ui.browser;
        until(
            b,
            "the first screen",
            "document.getElementById('login').classList.contains('shown')",
        )
        .await;
        let seen = b.execute(FIRST_SCREEN, vec![]).await.unwrap();
        assert_eq!(seen, expected, "with config {config:?}");
    }
}
