//! A user's browser on a shared gateway (ARCHITECTURE.md §5.3, §6.2): Bob's model aims the
//! browser at Alice's files, the users file and the gateway's `config.toml` by every route —
//! its own `navigate` and `open`, and pages that redirect, assign `location`, open a window,
//! frame the file or click a download link of it — and nothing of them reaches any result, and
//! no download is kept.

use lurkbot_llm::fake::Step;
use lurkbot_test_support::feed_server::{FeedServer, Reply};
use serde_json::{Value, json};

use crate::common::{Client, Gateway, TOKEN};
use crate::gateway_tool::result_of;
use crate::users::{USERS_ON, add, turn};

/// Pages that send the browser to `file` on their own, by path.
fn lures(file: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            "/location.html",
            format!("<title>Location</title><script>location.href = '{file}';</script>"),
        ),
        (
            "/open.html",
            format!("<title>Open</title><script>window.open('{file}');</script>"),
        ),
        (
            "/frame.html",
            format!("<title>Frame</title><iframe src=\"{file}\"></iframe>"),
        ),
        (
            "/download.html",
            format!(
                "<title>Download</title><a id=\"a\" href=\"{file}\" download=\"config.toml\">get</a><script>document.getElementById('a').click();</script>"
            ),
        ),
        (
            "/refresh.html",
            format!(
                "<title>Refresh</title><meta http-equiv=\"refresh\" content=\"0; url={file}\">"
            ),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_browser_reaches_no_file_of_the_gateway_or_another_user() {
    let server = FeedServer::start();
    let host = server.url("").trim_start_matches("http://").to_string();
    // The gateway's home is made by the test harness: its path is known once it runs, so the
    // pages are served from routes that read it then.
    let home_slot: std::sync::Arc<std::sync::Mutex<String>> = std::sync::Arc::default();
    let targets: [&'static str; 3] = [
        "config.toml",
        "users/alice/workspace/MEMORY.md",
        "users/users.json",
    ];
    for (i, &target) in targets.iter().enumerate() {
        for (path, _) in lures("") {
            let slot = std::sync::Arc::clone(&home_slot);
            server.route(&format!("/{i}{path}"), move |_| {
                let file = format!("file://{}/{target}", slot.lock().unwrap());
                let page = lures(&file)
                    .into_iter()
                    .find(|(p, _)| *p == path)
                    .map(|(_, page)| page)
                    .unwrap_or_default();
                Reply::ok("text/html", page.into_bytes())
            });
        }
        let slot = std::sync::Arc::clone(&home_slot);
        server.route(&format!("/{i}/redirect"), move |_| {
            Reply::status(302).header(
                "Location",
                &format!("file://{}/{target}", slot.lock().unwrap()),
            )
        });
    }

    // Bob's model, a step per group of calls (a turn has at most 24 steps): for each target,
    // its own navigate and open; then each page route, followed by a snapshot and the tabs.
    let mut groups: Vec<Vec<(String, Value)>> = Vec::new();
    for (i, target) in targets.iter().enumerate() {
        groups.push(vec![
            (
                format!("n{i}"),
                json!({"action": "navigate", "url": format!("file://HOME/{target}")}),
            ),
            (
                format!("o{i}"),
                json!({"action": "open", "url": format!("file://HOME/{target}")}),
            ),
        ]);
        let mut routes: Vec<String> = lures("")
            .into_iter()
            .map(|(p, _)| format!("/{i}{p}"))
            .collect();
        routes.push(format!("/{i}/redirect"));
        for (k, route) in routes.iter().enumerate() {
            groups.push(vec![
                (
                    format!("p{i}-{k}"),
                    json!({"action": "navigate", "url": server.url(route)}),
                ),
                (format!("s{i}-{k}"), json!({"action": "snapshot"})),
                (format!("t{i}-{k}"), json!({"action": "tabs"})),
            ]);
        }
    }
    let calls: Vec<(String, Value)> = groups.iter().flatten().cloned().collect();
    let mut gw = Gateway::start(
        &format!("{USERS_ON}[network]\nallow_hosts = [\"{host}\"]\n"),
        vec![],
    )
    .await;
    let home = gw.home.root().display().to_string();
    *home_slot.lock().unwrap() = home.clone();
    let steps: Vec<Step> = groups
        .iter()
        .map(|group| {
            let group: Vec<(&str, &str, Value)> = group
                .iter()
                .map(|(id, args)| {
                    let args = args.to_string().replace("HOME", &home);
                    (id.as_str(), "browser", serde_json::from_str(&args).unwrap())
                })
                .collect();
            Step::calls(&group)
        })
        .chain([Step::text("bob is done")])
        .collect();
    gw.fake.push(steps);

    let (mut owner, _) = Client::connect(&gw, TOKEN).await;
    add(&mut owner, "alice").await;
    let bob = add(&mut owner, "bob").await;
    std::fs::write(
        gw.home.join("users/alice/workspace/MEMORY.md"),
        "ALICE-MEMORY",
    )
    .unwrap();
    let mut config = std::fs::read_to_string(gw.home.join("config.toml")).unwrap();
    config.push_str("\n# GATEWAY-CONFIG-MARKER\n");
    std::fs::write(gw.home.join("config.toml"), config).unwrap();
    let users_file = std::fs::read_to_string(gw.home.join("users/users.json")).unwrap();
    gw.fake.record(true);

    let (mut b, _) = Client::connect(&gw, &bob).await;
    assert_eq!(
        turn(&mut b, "look at the gateway's files").await,
        "bob is done"
    );
    let mut all = String::new();
    for (id, _) in &calls {
        let result = result_of(&gw, id);
        if id.starts_with('n') || id.starts_with('o') {
            assert!(
                result.contains("PermissionDenied") && result.contains("not file: URLs"),
                "{id}: {result}"
            );
        }
        all.push_str(&format!("{id}: {result}\n"));
    }
    for secret in [
        "ALICE-MEMORY",
        "GATEWAY-CONFIG-MARKER",
        TOKEN,
        "argon2id",
        &users_file[..users_file.len().min(40)],
    ] {
        assert!(
            !all.contains(secret),
            "{secret} reached bob's model:\n{all}"
        );
    }
    // Every page was loaded (the routes ran), and no file: page is among the tabs.
    assert!(
        all.contains("Location") && all.contains("Download"),
        "{all}"
    );
    for line in all.lines().filter(|l| l.starts_with('t')) {
        assert!(!line.contains("file:"), "{line}");
    }
    // Nothing was kept as a download, in Bob's home or staged.
    for dir in [
        "users/bob/workspace/downloads",
        "users/bob/browser/downloads",
    ] {
        let kept: Vec<_> = std::fs::read_dir(gw.home.join(dir))
            .map(|d| d.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(kept.is_empty(), "{dir}: {kept:?}");
    }
    gw.stop().await;
}
