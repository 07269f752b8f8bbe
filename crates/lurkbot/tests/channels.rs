//! `lurkbot pairing list|approve|deny` on the home's pairing state and `lurkbot channels list`
//! (credentials shown as set or missing, never their values); refusals for unknown codes and a
//! bad `dm_policy`.

use lurkbot_channels::pairing::{PairingStore, Requested};
use lurkbot_core::Home;

use crate::util::Test;

#[test]
fn pairing_requests_are_listed_approved_and_denied_from_the_cli() {
    let t = Test::init();
    let home = Home::open(&t.path("")).unwrap();
    let store = PairingStore::open(&home);
    let now = lurkbot_core::now_ms();
    let Requested::New(code) = store.request("telegram", "555", "ada", now).unwrap() else {
        panic!("a new code");
    };
    let Requested::New(other) = store.request("telegram", "666", "eve", now).unwrap() else {
        panic!("a new code");
    };
    let list = t.run(&["pairing", "list", "--json"]);
    assert_eq!(list.status, 0, "{}", list.stderr);
    let pending = list.json();
    assert_eq!(pending.as_array().unwrap().len(), 2);
    assert_eq!(pending[0]["channel"], "telegram");
    assert!(pending[0]["requestedAtMs"].as_u64().is_some());
    let text = t.run(&["pairing", "list"]);
    assert!(
        text.stdout.contains("2 pending") && text.stdout.contains(&code),
        "{}",
        text.stdout
    );

    let approved = t.run(&["pairing", "approve", "telegram", &code.to_lowercase()]);
    assert_eq!(approved.status, 0, "{}", approved.stderr);
    assert!(
        approved.stdout.contains("approved ada (555)"),
        "{}",
        approved.stdout
    );
    assert!(store.is_approved("telegram", "555").unwrap());
    let again = t.run(&["pairing", "approve", "telegram", &code]);
    assert_eq!(again.status, 2, "a used code is gone");
    assert!(
        again.stderr.contains("no pending pairing"),
        "{}",
        again.stderr
    );
    let wrong_channel = t.run(&["pairing", "deny", "matrix", &other]);
    assert_eq!(wrong_channel.status, 2);
    let denied = t.run(&["pairing", "deny", "telegram", &other]);
    assert_eq!(denied.status, 0, "{}", denied.stderr);
    assert!(!store.is_approved("telegram", "666").unwrap());
    assert!(
        t.run(&["pairing", "list", "--json"])
            .json()
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn channels_list_shows_settings_and_whether_credentials_are_set() {
    let t = Test::init();
    let config = std::fs::read_to_string(t.path("config.toml")).unwrap();
    std::fs::write(
        t.path("config.toml"),
        format!(
            "{config}\n[channels.telegram]\ndm_policy = \"allowlist\"\nallow_from = [\"42\"]\n"
        ),
    )
    .unwrap();
    let missing = t.run(&["channels", "list", "--json"]);
    assert_eq!(missing.status, 0, "{}", missing.stderr);
    assert_eq!(
        missing.json()[0]["credentials"],
        "missing TELEGRAM_BOT_TOKEN"
    );
    std::fs::write(
        t.path(".env"),
        "TELEGRAM_BOT_TOKEN=123:secret-token-value\n",
    )
    .unwrap();
    let set = t.run(&["channels", "list"]);
    assert!(
        set.stdout.contains("telegram") && set.stdout.contains("credentials set"),
        "{}",
        set.stdout
    );
    assert!(!set.stdout.contains("secret-token-value"));
    // Matrix: the homeserver may be base_url, the login a user and password.
    let with_matrix = std::fs::read_to_string(t.path("config.toml")).unwrap()
        + "\n[channels.matrix]\nbase_url = \"https://matrix.example.org\"\n";
    std::fs::write(t.path("config.toml"), &with_matrix).unwrap();
    let list = t.run(&["channels", "list", "--json"]).json();
    let matrix = list
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "matrix")
        .unwrap()
        .clone();
    assert_eq!(
        matrix["credentials"],
        "missing MATRIX_ACCESS_TOKEN (or MATRIX_USER and MATRIX_PASSWORD)"
    );
    std::fs::write(
        t.path(".env"),
        "TELEGRAM_BOT_TOKEN=123:secret-token-value\nMATRIX_USER=bot\nMATRIX_PASSWORD=pw-123\n",
    )
    .unwrap();
    let list = t.run(&["channels", "list", "--json"]).json();
    let matrix = list
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "matrix")
        .unwrap()
        .clone();
    assert_eq!(matrix["credentials"], "set");
    // WhatsApp's Cloud API needs its three secrets; the linked device keeps its keys itself.
    let with_whatsapp = format!("{with_matrix}\n[channels.whatsapp]\nmode = \"cloud\"\n");
    std::fs::write(t.path("config.toml"), &with_whatsapp).unwrap();
    let list = t.run(&["channels", "list", "--json"]).json();
    let whatsapp = list
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "whatsapp")
        .unwrap()
        .clone();
    assert_eq!(
        whatsapp["credentials"],
        "missing WHATSAPP_ACCESS_TOKEN, WHATSAPP_APP_SECRET, WHATSAPP_VERIFY_TOKEN"
    );
    // No gateway runs: status says so.
    let status = t.run(&["channels", "status"]);
    assert_eq!(status.status, 1);
    assert!(
        status.stderr.contains("no gateway is running"),
        "{}",
        status.stderr
    );

    // A bad policy is refused with the values that work; the file keeps the good one.
    let bad = t.run(&["config", "set", "channels.telegram.dm_policy", "everyone"]);
    assert_ne!(bad.status, 0);
    assert!(
        bad.stderr.contains("pairing, allowlist, open, disabled"),
        "{}",
        bad.stderr
    );
    let good = t.run(&["config", "set", "channels.telegram.dm_policy", "open"]);
    assert_eq!(good.status, 0, "{}", good.stderr);
    let list = t.run(&["channels", "list", "--json"]).json();
    let telegram = list
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "telegram")
        .unwrap()
        .clone();
    assert_eq!(telegram["dmPolicy"], "open");
}
