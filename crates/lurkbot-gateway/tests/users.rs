//! Users on one gateway (ARCHITECTURE.md §6.2): two users through every surface — the
//! WebSocket methods, events, the terminal, the OpenAI-compatible API, usage and cron — each
//! seeing only their own; the admin's methods refused to users; a renewed token closing an open
//! socket; passwords, the sign-in cookie and its limits.

use lurkbot_llm::fake::Step;
use serde_json::{Value, json};

use crate::common::{Client, Gateway, TOKEN};

const USERS_ON: &str = "[users]\nenabled = true\n";

fn tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Adds `name` through the owner's connection; their token.
async fn add(owner: &mut Client, name: &str) -> String {
    let added = owner.request("users.add", json!({"name": name})).await;
    assert_eq!(added["ok"], true, "{added}");
    added["payload"]["token"].as_str().unwrap().to_string()
}

/// Runs one chat turn on `c` and waits for its final text.
async fn turn(c: &mut Client, message: &str) -> String {
    let sent = c.request("chat.send", json!({"message": message})).await;
    assert_eq!(sent["ok"], true, "{sent}");
    let fin = c
        .event(|e| e["event"] == "chat" && e["payload"]["state"] == "final")
        .await;
    fin["payload"]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn two_users_each_see_only_their_own() {
    let mut gw = Gateway::start(
        USERS_ON,
        vec![Step::text("alice-reply-one"), Step::text("bob-reply-one")],
    )
    .await;
    let (mut owner, hello) = Client::connect(&gw, TOKEN).await;
    assert_eq!(hello["signedIn"], json!({"user": null, "admin": true}));
    let alice_token = add(&mut owner, "alice").await;
    let bob_token = add(&mut owner, "bob").await;
    assert!(alice_token.starts_with("lbu_") && alice_token != bob_token);
    // Each has a home of their own with the layout, and no config of their own.
    assert!(gw.home.join("users/alice/workspace/AGENTS.md").is_file());
    assert!(!gw.home.join("users/alice/config.toml").exists());

    let (mut alice, hello) = Client::connect(&gw, &alice_token).await;
    assert_eq!(hello["signedIn"], json!({"user": "alice", "admin": false}));
    let (mut bob, _) = Client::connect(&gw, &bob_token).await;

    // Alice talks; her turn is in her home, and no event of it reaches Bob's socket.
    assert_eq!(
        turn(&mut alice, "alice-secret-question").await,
        "alice-reply-one"
    );
    let alice_sessions = alice.request("sessions.list", json!({})).await;
    assert!(
        alice_sessions.to_string().contains("agent:main:main"),
        "{alice_sessions}"
    );
    let alice_history = alice.request("chat.history", json!({})).await.to_string();
    assert!(alice_history.contains("alice-secret-question"));
    let bob_health = bob.request("health", json!({})).await;
    assert_eq!(bob_health["ok"], true);
    assert!(
        !bob.events.iter().any(|e| e.to_string().contains("alice")),
        "an event of Alice's turn reached Bob: {:?}",
        bob.events
    );
    // Bob's own view: none of Alice's sessions or history, even with her session key.
    let bob_sessions = bob.request("sessions.list", json!({})).await.to_string();
    assert!(!bob_sessions.contains("alice"), "{bob_sessions}");
    let bob_history = bob
        .request("chat.history", json!({"sessionKey": "agent:main:main"}))
        .await
        .to_string();
    assert!(
        !bob_history.contains("alice-secret-question"),
        "{bob_history}"
    );
    let deleted = bob
        .request("sessions.delete", json!({"sessionKey": "agent:main:main"}))
        .await;
    assert_ne!(deleted["payload"]["deleted"], true, "{deleted}");
    let still = alice.request("chat.history", json!({})).await.to_string();
    assert!(
        still.contains("alice-secret-question"),
        "Bob's delete reached Alice: {still}"
    );
    // Bob's turn: the model is sent Bob's history only.
    gw.fake.record(true);
    assert_eq!(turn(&mut bob, "bob-question").await, "bob-reply-one");
    let sent = gw.fake.requests();
    let body = sent.last().unwrap().body.to_string();
    assert!(body.contains("bob-question") && !body.contains("alice-secret-question"));

    // The terminal is confined to each user's home: a path into Alice's, or a link to it.
    std::fs::write(
        gw.home.join("users/alice/workspace/diary.md"),
        "alice's diary",
    )
    .unwrap();
    for src in [
        "../alice/workspace",
        "../../users/alice/workspace/diary.md",
        "workspace/peek",
    ] {
        if src == "workspace/peek" {
            std::os::unix::fs::symlink(
                gw.home.join("users/alice/workspace"),
                gw.home.join("users/bob/workspace/peek"),
            )
            .unwrap();
        }
        let exec = bob
            .request(
                "terminal.exec",
                json!({"command": format!("zip create --src {src} --out stolen-{}.zip --confirm", src.len())}),
            )
            .await;
        assert_eq!(exec["ok"], true, "{exec}");
        assert_eq!(
            exec["payload"]["error_code"], "PathEscapesAgentsRoot",
            "{src}: {exec}"
        );
        assert!(!exec.to_string().contains("alice's diary"));
    }
    let listing = std::fs::read_dir(gw.home.join("users/bob/artifacts"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect::<Vec<_>>())
        .unwrap_or_default();
    assert!(
        !listing
            .iter()
            .any(|n| n.to_string_lossy().contains("stolen")),
        "{listing:?}"
    );
    // Bob's terminal works in Bob's home, audited there; Alice's files behind the link are
    // not in his archive (entry names are stored as written).
    let own = bob
        .request(
            "terminal.exec",
            json!({"command": "zip create --src workspace --out mine.zip --confirm"}),
        )
        .await;
    assert_eq!(own["payload"]["exit_code"], 0, "{own}");
    assert_eq!(
        own["payload"]["result"]["skipped"]["unsafe_link"], 1,
        "{own}"
    );
    let bytes = std::fs::read(gw.home.join("users/bob/mine.zip")).unwrap();
    let holds = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    assert!(holds(b"AGENTS.md") && !holds(b"diary.md"));
    let audits = |who: &str| {
        std::fs::read_dir(
            gw.home
                .join(&format!("users/{who}/artifacts/terminal_exec/runs")),
        )
        .map(|d| d.count())
        .unwrap_or(0)
    };
    assert!(audits("bob") >= 4 && audits("alice") == 0);
    // The admin's own tools cannot read a user's home either: users/ is off limits.
    let peek = owner
        .request(
            "terminal.exec",
            json!({"command": "zip create --src users/alice/sessions --out peek.zip --confirm"}),
        )
        .await;
    assert_eq!(peek["payload"]["error_code"], "PermissionDenied", "{peek}");

    // Usage and cron are per user.
    let alice_usage = alice.request("usage.summary", json!({})).await;
    let bob_usage = bob.request("usage.summary", json!({})).await;
    assert_eq!(alice_usage["ok"], true, "{alice_usage}");
    assert_eq!(alice_usage["payload"]["total"]["calls"], 1, "{alice_usage}");
    assert_eq!(bob_usage["payload"]["total"]["calls"], 1, "{bob_usage}");
    let job = alice
        .request(
            "cron.add",
            json!({"name": "alice-job", "schedule": {"kind": "every", "everyMs": 3_600_000},
                "payload": {"kind": "agentTurn", "message": "hi"}}),
        )
        .await;
    assert_eq!(job["ok"], true, "{job}");
    let bobs_jobs = bob.request("cron.list", json!({})).await.to_string();
    assert!(!bobs_jobs.contains("alice-job"), "{bobs_jobs}");
    let alices_jobs = alice.request("cron.list", json!({})).await.to_string();
    assert!(alices_jobs.contains("alice-job"));

    // What is the admin's stays the admin's.
    for method in [
        "users.list",
        "logs.tail",
        "gateway.reload",
        "device.pair.list",
        "setup.model",
        "channels.pairing.deny",
    ] {
        let refused = bob.request(method, json!({})).await;
        assert_eq!(refused["error"]["code"], "FORBIDDEN", "{method}: {refused}");
    }
    let listed = owner.request("users.list", json!({})).await;
    let names: Vec<&str> = listed["payload"]["users"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|u| u["name"].as_str())
        .collect();
    assert_eq!(names, ["alice", "bob"]);
    assert!(!listed.to_string().contains("tokenSha256"), "{listed}");

    // A new token for Bob closes his open socket at once and stops the old token.
    let renewed = owner.request("users.token", json!({"name": "bob"})).await;
    let new_token = renewed["payload"]["token"].as_str().unwrap().to_string();
    assert_eq!(bob.close_code().await, Some(4001));
    let mut stale = Client::open(&gw).await;
    let _challenge = stale.recv().await;
    let refused = stale
        .request("connect", crate::common::connect_params(&bob_token))
        .await;
    assert_eq!(refused["error"]["code"], "UNAUTHORIZED", "{refused}");
    let (mut bob, _) = Client::connect(&gw, &new_token).await;
    assert!(
        bob.request("sessions.list", json!({}))
            .await
            .to_string()
            .contains("agent:main:main")
    );
    // Alice is untouched by Bob's renewal.
    assert_eq!(alice.request("health", json!({})).await["ok"], true);
    // Removing Alice closes her socket; her home is kept.
    let removed = owner
        .request("users.remove", json!({"name": "alice"}))
        .await;
    assert_eq!(removed["ok"], true, "{removed}");
    assert_eq!(alice.close_code().await, Some(4001));
    assert!(gw.home.join("users/alice/workspace/diary.md").is_file());
    gw.stop().await;
}

#[tokio::test]
async fn the_openai_api_serves_each_user_their_own_sessions() {
    tls_provider();
    let mut gw = Gateway::start(
        USERS_ON,
        vec![Step::text("first answer"), Step::text("second answer")],
    )
    .await;
    let (mut owner, _) = Client::connect(&gw, TOKEN).await;
    let alice = add(&mut owner, "alice").await;
    let bob = add(&mut owner, "bob").await;
    let http = reqwest::Client::new();
    let ask = |token: String, text: &'static str| {
        let http = http.clone();
        let url = gw.url("/v1/chat/completions");
        async move {
            http.post(url)
                .bearer_auth(token)
                .header("x-lurkbot-session", "agent:main:dm:api:shared-name")
                .header("content-type", "application/json")
                .body(
                    json!({"model": "lurkbot", "messages": [{"role": "user", "content": text}]})
                        .to_string(),
                )
                .send()
                .await
                .unwrap()
        }
    };
    gw.fake.record(true);
    let first = ask(alice.clone(), "alice-api-secret").await;
    assert_eq!(first.status(), 200);
    let second = ask(bob.clone(), "bob-api-question").await;
    assert_eq!(second.status(), 200);
    let sent = gw.fake.requests();
    let bobs = sent.last().unwrap().body.to_string();
    assert!(
        bobs.contains("bob-api-question") && !bobs.contains("alice-api-secret"),
        "{bobs}"
    );
    assert!(gw.home.join("users/alice/sessions").is_dir());
    let alice_files = std::fs::read_dir(gw.home.join("users/alice/sessions/main"))
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect::<String>();
    assert!(alice_files.contains("alice-api-secret") && !alice_files.contains("bob-api-question"));
    // A wrong key is refused; a missing one too, without counting.
    let wrong = ask("lbu_0000".into(), "x").await;
    assert_eq!(wrong.status(), 401);
    let models = http
        .get(gw.url("/v1/models"))
        .bearer_auth(&bob)
        .send()
        .await
        .unwrap();
    assert_eq!(models.status(), 200);
    gw.stop().await;
}

/// Signs in over HTTP from `local` (a loopback address of its own, for the per-address limit).
async fn sign_in(gw: &Gateway, local: [u8; 4], user: &str, password: &str) -> reqwest::Response {
    let http = reqwest::Client::builder()
        .local_address(std::net::IpAddr::from(local))
        .build()
        .unwrap();
    http.post(gw.url("/auth/login"))
        .header("content-type", "application/json")
        .body(json!({"user": user, "password": password}).to_string())
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn passwords_sign_in_with_a_cookie_and_wrong_ones_are_limited() {
    tls_provider();
    let mut gw = Gateway::start(USERS_ON, vec![]).await;
    let (mut owner, _) = Client::connect(&gw, TOKEN).await;
    add(&mut owner, "alice").await;
    add(&mut owner, "bob").await;
    for (name, password) in [
        ("alice", "alice's long password"),
        ("bob", "bob's long password"),
    ] {
        let set = owner
            .request("users.passwd", json!({"name": name, "password": password}))
            .await;
        assert_eq!(set["ok"], true, "{set}");
    }
    let short = owner
        .request("users.passwd", json!({"name": "bob", "password": "short"}))
        .await;
    assert_eq!(short["error"]["code"], "INVALID_REQUEST");
    let stored = std::fs::read_to_string(gw.home.join("users/users.json")).unwrap();
    assert!(stored.contains("$argon2id$") && !stored.contains("long password"));

    // A wrong password and an unknown user read the same.
    let wrong = sign_in(&gw, [127, 0, 0, 1], "alice", "not her password").await;
    assert_eq!(wrong.status(), 401);
    assert!(wrong.headers().get("set-cookie").is_none());
    let wrong_text = wrong.text().await.unwrap();
    let nobody = sign_in(&gw, [127, 0, 0, 1], "mallory", "whatever it is").await;
    assert_eq!(nobody.status(), 401);
    assert_eq!(nobody.text().await.unwrap(), wrong_text);

    // The right one: an HttpOnly, SameSite=Strict cookie with an expiry, not Secure over HTTP.
    let ok = sign_in(&gw, [127, 0, 0, 3], "alice", "alice's long password").await;
    assert_eq!(ok.status(), 200);
    let set = ok.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(set.starts_with("lurkbot_session="), "{set}");
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=604800"] {
        assert!(set.contains(flag), "{flag} missing: {set}");
    }
    assert!(!set.contains("Secure"), "{set}");
    let cookie = set.split(';').next().unwrap().to_string();
    // The cookie signs a WebSocket in as Alice.
    let mut c = Client::open_with(&gw, &[("cookie", &cookie)])
        .await
        .unwrap();
    let _challenge = c.recv().await;
    let hello = c
        .request("connect", crate::common::connect_params(""))
        .await;
    assert_eq!(hello["payload"]["signedIn"]["user"], "alice", "{hello}");
    let me = reqwest::Client::new()
        .get(gw.url("/auth/me"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let me: Value = serde_json::from_str(&me).unwrap();
    assert_eq!(me["signedIn"]["user"], "alice");
    // Behind a TLS proxy the cookie is Secure.
    let http = reqwest::Client::new();
    let tls = http
        .post(gw.url("/auth/login"))
        .header("x-forwarded-proto", "https")
        .header("content-type", "application/json")
        .body(json!({"user": "bob", "password": "bob's long password"}).to_string())
        .send()
        .await
        .unwrap();
    assert!(
        tls.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .contains("; Secure")
    );
    // Signing out ends the sign-in: the open socket closes, the cookie signs in nobody.
    let out = http
        .post(gw.url("/auth/logout"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert!(
        out.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .contains("Max-Age=0")
    );
    assert_eq!(c.close_code().await, Some(4001));
    let mut again = Client::open_with(&gw, &[("cookie", &cookie)])
        .await
        .unwrap();
    let _challenge = again.recv().await;
    let refused = again
        .request("connect", crate::common::connect_params(""))
        .await;
    assert_eq!(refused["error"]["code"], "UNAUTHORIZED", "{refused}");

    // Five wrong passwords for Alice from one address: that address waits, and so does the
    // name Alice from any other address, while Bob still signs in from there.
    // (127.0.0.1 has two failures already, Alice one.)
    for _ in 0..3 {
        let r = sign_in(&gw, [127, 0, 0, 1], "alice", "guess guess guess").await;
        assert_eq!(r.status(), 401);
    }
    let fifth = sign_in(&gw, [127, 0, 0, 2], "alice", "guess guess guess").await;
    assert_eq!(fifth.status(), 401);
    let blocked = sign_in(&gw, [127, 0, 0, 1], "bob", "bob's long password").await;
    assert_eq!(blocked.status(), 429, "the address is blocked");
    let by_name = sign_in(&gw, [127, 0, 0, 2], "alice", "alice's long password").await;
    assert_eq!(by_name.status(), 429, "the name is blocked");
    let other = sign_in(&gw, [127, 0, 0, 2], "bob", "bob's long password").await;
    assert_eq!(other.status(), 200);
    // A new password ends the user's sign-ins.
    let bob_cookie = other.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    owner
        .request(
            "users.passwd",
            json!({"name": "bob", "password": "bob's newer password"}),
        )
        .await;
    let me = http
        .get(gw.url("/auth/me"))
        .header("cookie", &bob_cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let me: Value = serde_json::from_str(&me).unwrap();
    assert_eq!(me["signedIn"], Value::Null, "{me}");
    gw.stop().await;
}

#[tokio::test]
async fn without_users_the_gateway_is_as_before() {
    tls_provider();
    let mut gw = Gateway::start("", vec![]).await;
    let (mut owner, hello) = Client::connect(&gw, TOKEN).await;
    assert!(hello.get("signedIn").is_none(), "{hello}");
    let listed = owner.request("users.list", json!({})).await;
    assert_eq!(listed["error"]["code"], "UNAVAILABLE");
    let login = reqwest::Client::new()
        .post(gw.url("/auth/login"))
        .header("content-type", "application/json")
        .body(json!({"user": "a", "password": "bbbbbbbb"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 404);
    // A user token means nothing here.
    let mut c = Client::open(&gw).await;
    let _challenge = c.recv().await;
    let refused = c
        .request(
            "connect",
            crate::common::connect_params("lbu_0123456789abcdef"),
        )
        .await;
    assert_eq!(refused["error"]["code"], "UNAUTHORIZED");
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_user_spends_against_their_own_caps() {
    let mut gw = Gateway::start(
        "[users]\nenabled = true\n[users.budgets]\ndaily_tokens = 60000\n[users.budgets_by_user.carol]\ndaily_tokens = 5\n",
        vec![Step::text("alice is within her cap")],
    )
    .await;
    let (mut owner, _) = Client::connect(&gw, TOKEN).await;
    let alice = add(&mut owner, "alice").await;
    let bob = add(&mut owner, "bob").await;
    let carol = add(&mut owner, "carol").await;
    // Bob and the owner have spent heavily today; neither counts against Alice.
    let config = lurkbot_core::Config::default();
    let zone = lurkbot_agent::usage::zone(&config);
    let spent = |tokens: u64| lurkbot_agent::usage::UsageRecord {
        ts: lurkbot_core::now_ms(),
        agent: "main".into(),
        session_key: "agent:main:main".into(),
        model: "openai/fake".into(),
        input_tokens: tokens,
        output_tokens: 0,
        cached_input_tokens: None,
        cost_usd: None,
        estimated: false,
    };
    let bob_home = lurkbot_core::Home::open(&gw.home.join("users/bob")).unwrap();
    lurkbot_agent::usage::append(&bob_home, &zone, &spent(59_990)).unwrap();
    lurkbot_agent::usage::append(&gw.home, &zone, &spent(500_000)).unwrap();
    gw.fake.record(true);

    let (mut b, _) = Client::connect(&gw, &bob).await;
    b.request("chat.send", json!({"message": "bob over his cap"}))
        .await;
    let refused = b.event(|e| e["event"] == "budget.exceeded").await;
    let message = refused["payload"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("BudgetExceeded: users.budgets.daily_tokens is 60000 tokens"),
        "{message}"
    );
    let (mut c, _) = Client::connect(&gw, &carol).await;
    c.request("chat.send", json!({"message": "carol has her own cap"}))
        .await;
    let refused = c.event(|e| e["event"] == "budget.exceeded").await;
    assert!(
        refused["payload"]["message"]
            .as_str()
            .unwrap()
            .starts_with("BudgetExceeded: users.budgets_by_user.carol.daily_tokens is 5 tokens"),
        "{refused}"
    );
    assert!(gw.fake.requests().is_empty(), "nothing over a cap was sent");
    let (mut a, _) = Client::connect(&gw, &alice).await;
    assert_eq!(
        turn(&mut a, "alice within her cap").await,
        "alice is within her cap"
    );
    assert_eq!(gw.fake.requests().len(), 1);
    // Alice's usage shows her call only.
    let usage = a.request("usage.summary", json!({})).await;
    assert_eq!(usage["payload"]["total"]["calls"], 1, "{usage}");
    assert_eq!(
        usage["payload"]["budgets"][0]["cap"],
        "users.budgets.daily_tokens"
    );
    gw.stop().await;
}

/// The result the model received for tool call `id`.
fn result_of(gw: &Gateway, id: &str) -> String {
    gw.fake
        .requests()
        .iter()
        .flat_map(|r| r.body["messages"].as_array().cloned().unwrap_or_default())
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .and_then(|m| m["content"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no result for {id}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_models_tools_stay_in_their_users_home() {
    let mut gw = Gateway::start(
        USERS_ON,
        vec![
            // Bob's model reaches for Alice's files every way it can.
            Step::calls(&[
                ("r1", "read", json!({"path": "../alice/workspace/diary.md"})),
                ("r2", "read", json!({"path": "workspace/peek/diary.md"})),
                (
                    "m1",
                    "memory_get",
                    json!({"path": "../alice/workspace/MEMORY.md"}),
                ),
                (
                    "w1",
                    "write",
                    json!({"path": "../alice/workspace/planted.md", "content": "from bob"}),
                ),
                ("r3", "read", json!({"path": "workspace/AGENTS.md"})),
            ]),
            Step::text("bob is done"),
            // The admin's own model reaches into a user's home.
            Step::calls(&[
                (
                    "a1",
                    "read",
                    json!({"path": "users/alice/workspace/diary.md"}),
                ),
                ("a2", "read", json!({"path": "users/users.json"})),
            ]),
            Step::text("admin is done"),
        ],
    )
    .await;
    let (mut owner, _) = Client::connect(&gw, TOKEN).await;
    add(&mut owner, "alice").await;
    let bob = add(&mut owner, "bob").await;
    std::fs::write(
        gw.home.join("users/alice/workspace/diary.md"),
        "ALICE-DIARY",
    )
    .unwrap();
    std::fs::write(
        gw.home.join("users/alice/workspace/MEMORY.md"),
        "ALICE-MEMORY",
    )
    .unwrap();
    std::os::unix::fs::symlink(
        gw.home.join("users/alice/workspace"),
        gw.home.join("users/bob/workspace/peek"),
    )
    .unwrap();
    gw.fake.record(true);
    let (mut b, _) = Client::connect(&gw, &bob).await;
    assert_eq!(turn(&mut b, "look around").await, "bob is done");
    for id in ["r1", "r2", "m1", "w1"] {
        let result = result_of(&gw, id);
        assert!(
            !result.contains("ALICE-DIARY") && !result.contains("ALICE-MEMORY"),
            "{id}: {result}"
        );
        assert!(
            result.to_lowercase().contains("outside")
                || result.contains("escapes")
                || result.contains(".."),
            "{id} was not refused for leaving the home: {result}"
        );
    }
    assert!(!gw.home.join("users/alice/workspace/planted.md").exists());
    // Bob's own files are his to read.
    assert!(
        result_of(&gw, "r3").contains("AGENTS"),
        "{}",
        result_of(&gw, "r3")
    );
    assert_eq!(turn(&mut owner, "and you?").await, "admin is done");
    for id in ["a1", "a2"] {
        let result = result_of(&gw, id);
        assert!(
            !result.contains("ALICE-DIARY") && !result.contains("tokenSha256"),
            "{id}: {result}"
        );
        assert!(
            result.contains("users/"),
            "{id} was not refused as off limits: {result}"
        );
    }
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_skills_reach_every_user_and_stay_the_admins() {
    let mut gw = Gateway::start(
        "[users]\nenabled = true\nshared_skills = [\"team-notes\"]\n",
        vec![Step::text("noted")],
    )
    .await;
    // Two skills the owner installed and approved; only one is shared.
    for (name, extra) in [("team-notes", true), ("admin-only", false)] {
        let dir = gw.home.join(&format!("skills/{name}"));
        std::fs::create_dir_all(dir.join("secrets")).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            format!(
                "---\nname: {name}\ndescription: The {name} skill.\n---\nDo the {name} thing.\n"
            ),
        )
        .unwrap();
        if extra {
            std::fs::write(dir.join("notes.txt"), "shared notes").unwrap();
            std::fs::write(dir.join("secrets/.env"), "TEAM_TOKEN=admins-secret-value\n").unwrap();
        }
    }
    let config = lurkbot_core::Config::default();
    for skill in lurkbot_agent::skills::discover(&gw.home, &config) {
        if skill.name == "team-notes" || skill.name == "admin-only" {
            lurkbot_agent::skills::approval::approve(&gw.home, &skill.path, &skill.digest).unwrap();
        }
    }
    let (mut owner, _) = Client::connect(&gw, TOKEN).await;
    let alice = add(&mut owner, "alice").await;
    let hers = gw.home.join("users/alice/skills/team-notes");
    assert!(hers.join("SKILL.md").is_file() && hers.join("notes.txt").is_file());
    assert!(
        !hers.join("secrets/.env").exists(),
        "the admin's credentials stay the admin's"
    );
    assert!(!gw.home.join("users/alice/skills/admin-only").exists());
    gw.fake.record(true);
    let (mut a, _) = Client::connect(&gw, &alice).await;
    assert_eq!(turn(&mut a, "what can you do?").await, "noted");
    let asked = gw.fake.requests()[0].body.to_string();
    assert!(
        asked.contains("team-notes") && !asked.contains("admin-only"),
        "{asked}"
    );
    // Her change to the admin's copy is not offered; a reload puts the admin's back.
    std::fs::write(
        hers.join("SKILL.md"),
        "---\nname: team-notes\ndescription: Mine now.\n---\nx\n",
    )
    .unwrap();
    let alice_home = lurkbot_core::Home::open(&gw.home.join("users/alice")).unwrap();
    let changed = lurkbot_agent::skills::discover(&alice_home, &config);
    let team = changed.iter().find(|s| s.name == "team-notes").unwrap();
    assert!(team.pending && !team.available, "{team:?}");
    let reloaded = owner.request("gateway.reload", json!({})).await;
    assert_eq!(reloaded["ok"], true, "{reloaded}");
    let text = std::fs::read_to_string(hers.join("SKILL.md")).unwrap();
    assert!(text.contains("Do the team-notes thing."), "{text}");
    let restored = lurkbot_agent::skills::discover(&alice_home, &config);
    let team = restored.iter().find(|s| s.name == "team-notes").unwrap();
    assert!(team.available, "{team:?}");
    gw.stop().await;
}
