//! `lurkbot plugins list|enable|disable` on the home's `plugins/` folder: what is installed and
//! what is wrong with a manifest, the owner's switch written into `config.toml` (and refused
//! for a plugin that is not installed or cannot run), and `[channels.<name>]` accepted for a
//! channel an installed plugin provides.

use crate::util::Test;

fn install(t: &Test, name: &str, manifest: &str) {
    let dir = t.path(&format!("plugins/{name}"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("lurkbot-plugin.toml"), manifest).unwrap();
}

#[test]
fn plugins_are_listed_enabled_and_disabled_by_the_owner() {
    let t = Test::init();
    let none = t.run(&["plugins", "list"]);
    assert_eq!(none.status, 0);
    assert!(
        none.stdout.contains("no plugins are installed"),
        "{}",
        none.stdout
    );
    install(
        &t,
        "xmpp",
        "name = \"xmpp\"\nversion = \"0.2.0\"\ncommand = [\"./run.sh\"]\nprovides = [\"channel:xmpp\"]\n",
    );
    std::fs::write(t.path("plugins/xmpp/run.sh"), "#!/bin/sh\n").unwrap();
    install(
        &t,
        "broken",
        "name = \"other\"\nversion = \"1\"\ncommand = [\"x\"]\n",
    );
    let list = t.run(&["plugins", "list", "--json"]).json();
    assert_eq!(list[0]["name"], "broken");
    assert!(
        list[0]["problem"]
            .as_str()
            .unwrap()
            .contains("differs from its folder"),
        "{list}"
    );
    assert_eq!(list[1]["name"], "xmpp");
    assert_eq!(list[1]["provides"], serde_json::json!(["channel:xmpp"]));
    assert_eq!(list[1]["enabled"], false);

    let enabled = t.run(&["plugins", "enable", "xmpp"]);
    assert_eq!(enabled.status, 0, "{}", enabled.stderr);
    let config = std::fs::read_to_string(t.path("config.toml")).unwrap();
    assert!(
        config.contains("[plugins.xmpp]") && config.contains("enabled = true"),
        "{config}"
    );
    assert_eq!(
        t.run(&["plugins", "list", "--json"]).json()[1]["enabled"],
        true
    );
    // Its channel may be configured, and the config is still sound.
    std::fs::write(
        t.path("config.toml"),
        format!("{config}\n[channels.xmpp]\nallow_from = [\"me@example.org\"]\n"),
    )
    .unwrap();
    let doctor = t.run(&["doctor"]);
    let said = format!("{}{}", doctor.stdout, doctor.stderr);
    assert!(!said.contains("channels.xmpp"), "{said}");
    // Doctor looks at the enabled plugin: its program (`./run.sh`, in its folder) is found.
    let checks = t.run(&["doctor", "--json"]).stdout;
    let plugin = checks
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|c| c["check"] == "plugin")
        .unwrap_or_default();
    assert_eq!(plugin["status"], "ok", "{checks}");
    assert!(
        plugin["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("xmpp 0.2.0"),
        "{plugin}"
    );

    for (args, said) in [
        (
            ["plugins", "enable", "ghost"],
            "no plugin 'ghost' is installed",
        ),
        (["plugins", "enable", "broken"], "cannot be enabled"),
    ] {
        let refused = t.run(&args);
        assert_ne!(refused.status, 0);
        assert!(refused.stderr.contains(said), "{}", refused.stderr);
    }
    let disabled = t.run(&["plugins", "disable", "xmpp"]);
    assert_eq!(disabled.status, 0, "{}", disabled.stderr);
    assert_eq!(
        t.run(&["plugins", "list", "--json"]).json()[1]["enabled"],
        false
    );
    // A channel no plugin provides is still refused.
    std::fs::remove_dir_all(t.path("plugins/xmpp")).unwrap();
    let doctor = t.run(&["doctor"]);
    let said = format!("{}{}", doctor.stdout, doctor.stderr);
    assert!(
        said.contains("[channels.xmpp]: not a channel LurkBot has"),
        "{said}"
    );
}
