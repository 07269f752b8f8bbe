//! A user's agent on a shared gateway (ARCHITECTURE.md §6.2): the model's tools kept in its
//! user's home, each user's spending against their own caps, and the skills the admin shares.

use lurkbot_llm::fake::Step;
use serde_json::json;

use crate::common::{Client, Gateway, TOKEN};
use crate::gateway_tool::result_of;
use crate::users::{USERS_ON, add, turn};

/// Records that `home` spent `tokens` today (as a model call would).
fn spend(home: &lurkbot_core::Home, tokens: u64) {
    let zone = lurkbot_agent::usage::zone(&lurkbot_core::Config::default());
    let record = lurkbot_agent::usage::UsageRecord {
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
    lurkbot_agent::usage::append(home, &zone, &record).unwrap();
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
    let bob_home = lurkbot_core::Home::open(&gw.home.join("users/bob")).unwrap();
    spend(&bob_home, 59_990);
    spend(&gw.home, 500_000);
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
    // A link she plants in place of the folder cannot send the copy out of her home.
    let victim = gw.home.join("workspace/victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::remove_dir_all(&hers).unwrap();
    std::os::unix::fs::symlink(&victim, &hers).unwrap();
    let reloaded = owner.request("gateway.reload", json!({})).await;
    assert_eq!(reloaded["ok"], true, "{reloaded}");
    assert_eq!(
        std::fs::read_dir(&victim).unwrap().count(),
        0,
        "written through her link"
    );
    gw.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_combined_cap_counts_everyones_spending_together() {
    let mut gw = Gateway::start(
        "[users]\nenabled = true\n[users.total_budgets]\ndaily_tokens = 100000\n",
        vec![Step::text("never sent")],
    )
    .await;
    let (mut owner, _) = Client::connect(&gw, TOKEN).await;
    add(&mut owner, "alice").await;
    let bob = add(&mut owner, "bob").await;
    // Alice alone has spent nearly all of it; Bob has spent nothing.
    let alice_home = lurkbot_core::Home::open(&gw.home.join("users/alice")).unwrap();
    spend(&alice_home, 99_990);
    gw.fake.record(true);
    for (who, token) in [("bob", bob.as_str()), ("the owner", TOKEN)] {
        let (mut c, _) = Client::connect(&gw, token).await;
        c.request("chat.send", json!({"message": "one more"})).await;
        let refused = c.event(|e| e["event"] == "budget.exceeded").await;
        let message = refused["payload"]["message"].as_str().unwrap();
        assert!(
            message
                .starts_with("BudgetExceeded: users.total_budgets.daily_tokens is 100000 tokens"),
            "{who}: {message}"
        );
    }
    assert!(
        gw.fake.requests().is_empty(),
        "nothing over the combined cap was sent"
    );
    gw.stop().await;
}

/// The metrics' headline figures in `status` are everyone's together: the owner sees them, a
/// user does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_status_carries_no_metrics() {
    let mut gw = Gateway::start("[users]\nenabled = true\n", vec![]).await;
    let (mut owner, _) = Client::connect(&gw, TOKEN).await;
    let alice = add(&mut owner, "alice").await;
    let mine = owner.request("status", json!({})).await;
    assert!(mine["payload"]["metrics"]["turns"].is_object(), "{mine}");
    let (mut hers, _) = Client::connect(&gw, &alice).await;
    let theirs = hers.request("status", json!({})).await;
    assert_eq!(theirs["ok"], true, "{theirs}");
    assert!(theirs["payload"].get("metrics").is_none(), "{theirs}");
    gw.stop().await;
}
