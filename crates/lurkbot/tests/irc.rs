//! `irc` against a real server (ngircd) through `lurkbot exec`, which sends the command to this
//! home's running gateway: refusals without a connection, connect and join, send behind the
//! confirm gate, pull with cursors, peek and limit, hostile inbound text, CR/LF in outbound
//! text, secrets kept out of every output, ids and cursors across a gateway restart, reconnect
//! after the server restarts, a flood, and TLS.

use lurkbot_test_support::irc_server::{IrcOptions, IrcPeer, IrcServer};

use crate::util::{Running, Test, start_gateway};

fn write_env(t: &Test, lines: &str) {
    let dir = t.path("skills/irc-cli/secrets");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(".env"), lines).unwrap();
}

fn plain_env(port: u16) -> String {
    format!(
        "IRC_SERVER=127.0.0.1\nIRC_PORT={port}\nIRC_TLS=0\nIRC_CHANNEL=\"#lurk\"\nIRC_NICK=lurkbot\n"
    )
}

fn exec(t: &Test, command: &str) -> serde_json::Value {
    t.run(&["exec", "--json", command]).json()
}

fn exec_stdin(t: &Test, command: &str, stdin: &str) -> serde_json::Value {
    t.run(&["exec", "--json", "--stdin", stdin, command]).json()
}

#[test]
fn refusals_answer_without_a_gateway() {
    let t = Test::init();
    // init wrote the example, nothing else.
    assert!(t.path("skills/irc-cli/secrets/.env.example").is_file());
    let env = exec(&t, "irc status");
    assert_eq!(env["error_code"], "MissingCredentials", "{env}");
    let message = env["error_message"].as_str().unwrap();
    assert!(
        message.contains("IRC_SERVER, IRC_CHANNEL, IRC_NICK"),
        "{message}"
    );
    assert_eq!(env["exit_code"], 2);

    write_env(
        &t,
        "IRC_SERVER=irc.example\nIRC_CHANNEL=\"#c\"\nIRC_NICK=muchtoolongnick\nIRC_CHANNEL_KEY=hunter2-channel-key\n",
    );
    let env = exec(&t, "irc send --text hi");
    assert_eq!(env["error_code"], "NickTooLong", "{env}");
    assert!(!env.to_string().contains("hunter2"));

    write_env(&t, &plain_env(1));
    let env = exec(&t, "irc send --text hi --password x");
    assert_eq!(env["error_code"], "SensitiveArgv", "{env}");
    let env = exec(&t, "irc send --to alice --text hi");
    assert_eq!(env["error_code"], "ConfirmRequired", "{env}");
    let env = exec(&t, "irc send --to 'bad target' --text hi --confirm");
    assert_eq!(env["error_code"], "InvalidArgs", "{env}");
    for bad in [
        "irc send --text a --text-stdin",
        "irc send",
        "irc send --text ' '",
        "irc pull --format raw",
        "irc pull --limit 0",
    ] {
        let env = exec(&t, bad);
        assert_eq!(env["error_code"], "InvalidArgs", "{bad}: {env}");
    }
    write_env(
        &t,
        "IRC_SERVER=irc.example\nIRC_PORT=99999\nIRC_CHANNEL=\"#c\"\nIRC_NICK=lurkbot\n",
    );
    let env = exec(&t, "irc status");
    assert_eq!(env["error_code"], "ConfigInvalid", "{env}");
    assert!(
        env["error_message"].as_str().unwrap().contains("IRC_PORT"),
        "{env}"
    );
    write_env(&t, &plain_env(1));
    let env = exec(&t, "irc status");
    assert_eq!(env["error_code"], "GatewayRequired", "{env}");
    assert_eq!(env["exit_code"], 2);
    assert!(
        env["stderr"].as_str().unwrap().contains("lurkbot gateway"),
        "{env}"
    );
}

fn messages(env: &serde_json::Value) -> Vec<String> {
    env["result"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap_or("[marker]").to_string())
        .collect()
}

/// Waits until `pull --peek` shows `count` messages of `from` (the peer's lines travel through
/// the server): polls the observable state, bounded.
fn wait_for_messages(t: &Test, from: &str, count: usize) {
    for _ in 0..400 {
        let env = exec(t, &format!("irc pull --from {from} --peek --limit 500"));
        if env["result"]["returned"].as_u64().unwrap_or(0) as usize >= count {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("{count} message(s) from {from} did not arrive");
}

#[test]
fn a_session_talks_to_a_real_server() {
    let mut server = IrcServer::start(&IrcOptions {
        tls: false,
        password: Some("server-pass-123".into()),
        services: false,
    });
    let t = Test::init();
    write_env(
        &t,
        &format!(
            "{}IRC_SERVER_PASSWORD=server-pass-123\nIRC_CHANNEL_KEY=chan-key-456\nIRC_NICKSERV_PASSWORD=nickserv-pass-789\n",
            plain_env(server.port)
        ),
    );
    // The peer makes the channel first and locks it with the key.
    let mut peer = IrcPeer::connect(server.port, "alice", Some("server-pass-123"));
    peer.join("#lurk", None);
    peer.raw("MODE #lurk +k chan-key-456");
    peer.expect(|l| l.contains("MODE #lurk +k"));
    let gw = start_gateway(&t, &[]);

    let env = exec(&t, "irc status");
    assert_eq!(env["exit_code"], 0, "{env}");
    assert_eq!(env["result"]["state"], "joined", "{env}");
    assert_eq!(env["result"]["channel"], "#lurk");
    assert_eq!(env["result"]["tls"], false);
    peer.expect(|l| l.starts_with(":lurkbot!") && l.contains("JOIN"));

    // Send to the channel (no confirm), a private message (confirm).
    let env = exec(&t, "irc send --text \"hello channel\"");
    assert_eq!(env["result"]["to"], "#lurk", "{env}");
    assert_eq!(env["result"]["joined_default_channel"], true);
    assert_eq!(env["result"]["session_bound"], true);
    peer.expect(|l| l.starts_with(":lurkbot!") && l.ends_with("PRIVMSG #lurk :hello channel"));
    let env = exec(&t, "irc send --to alice --text psst --confirm");
    assert_eq!(env["exit_code"], 0, "{env}");
    peer.expect(|l| l.ends_with("PRIVMSG alice :psst"));
    // CR/LF in outbound text become separate messages; nothing is injected.
    let env = exec_stdin(&t, "irc send --text-stdin", "one\r\nQUIT :gone\nthree");
    assert_eq!(env["result"]["lines"], 3, "{env}");
    peer.expect(|l| l.ends_with("PRIVMSG #lurk :one"));
    peer.expect(|l| l.ends_with("PRIVMSG #lurk :QUIT :gone"));
    peer.expect(|l| l.ends_with("PRIVMSG #lurk :three"));
    assert_eq!(exec(&t, "irc status")["result"]["state"], "joined");

    // Inbound: hostile text is cleaned; a long line is capped.
    peer.say("#lurk", "first");
    peer.say("#lurk", "\x0304red\x03 \x02bold\x02 \x1b[31mansi\x1b[0m");
    peer.raw_bytes(b"PRIVMSG #lurk :before\r\nPRIVMSG #lurk :after\r\n");
    // A line as long as the server relays (ngircd cuts clients off at 512 bytes); longer
    // lines are covered by the client's own tests.
    peer.say("#lurk", &"x".repeat(480));
    peer.say("lurkbot", "a private word");
    wait_for_messages(&t, "#lurk", 5);
    let env = exec(&t, "irc pull --limit 2");
    assert_eq!(messages(&env), ["first", "red bold ansi"], "{env}");
    assert_eq!(env["result"]["cursor_before"], "0");
    let after = env["result"]["cursor_after"].as_str().unwrap().to_string();
    let env = exec(&t, "irc pull --peek");
    let texts = messages(&env);
    assert_eq!(texts.len(), 3, "{env}");
    assert_eq!(texts[..2], ["before", "after"]);
    assert!(texts[2].chars().count() <= 512, "{}", texts[2].len());
    assert_eq!(env["result"]["cursor_before"], after.as_str());
    assert!(
        env["result"].get("cursor_after").is_none(),
        "peek keeps the cursor"
    );
    let env = exec(&t, "irc pull");
    assert_eq!(messages(&env).len(), 3);
    assert_eq!(
        exec(&t, "irc pull")["result"]["returned"],
        0,
        "nothing twice"
    );
    let env = exec(&t, "irc pull --from alice");
    assert_eq!(messages(&env), ["a private word"], "{env}");
    assert_eq!(env["result"]["untrusted"], true);
    let env = exec(&t, "irc history --limit 3");
    assert_eq!(env["result"]["returned"], 3, "{env}");

    // One connection per session: repeated sends never reconnect or re-JOIN.
    exec(&t, "irc send --text again");
    exec(&t, "irc send --text and-again");
    let between = peer.lines_until(|l| l.ends_with(":and-again"));
    assert!(
        between
            .iter()
            .all(|l| !l.contains(" JOIN ") && !l.contains(" QUIT")),
        "{between:?}"
    );

    // The secrets appear in no output, no audit record, no log.
    let status = exec(&t, "irc status").to_string();
    let audit = t.audit_text();
    let log = std::fs::read_to_string(t.path("logs/gateway.log")).unwrap_or_default();
    for secret in ["server-pass-123", "chan-key-456", "nickserv-pass-789"] {
        assert!(!status.contains(secret), "{secret} in status");
        assert!(!audit.contains(secret), "{secret} in the audit log");
        assert!(!log.contains(secret), "{secret} in the gateway log");
        assert!(!gw.stderr().contains(secret), "{secret} on stderr");
    }

    // A gateway restart keeps ids and cursors.
    let (status, _) = gw.stop();
    assert_eq!(status, 0);
    peer.expect(|l| l.starts_with(":lurkbot!") && l.contains("QUIT"));
    let gw = start_gateway(&t, &[]);
    assert_eq!(exec(&t, "irc connect")["result"]["state"], "joined");
    peer.say("#lurk", "after the restart");
    wait_for_messages(&t, "#lurk", 1);
    let env = exec(&t, "irc pull");
    assert_eq!(messages(&env), ["after the restart"], "{env}");
    let id = env["result"]["messages"][0]["id"].as_u64().unwrap();
    assert_eq!(
        id, 7,
        "ids continue across restarts (six messages came before)"
    );

    // The server dies and comes back: the next send reconnects.
    drop(peer);
    server.restart();
    let mut peer = IrcPeer::connect(server.port, "alice", Some("server-pass-123"));
    peer.join("#lurk", None);
    let env = exec(&t, "irc send --text \"back again\"");
    assert_eq!(env["exit_code"], 0, "{env}");
    peer.expect(|l| l.ends_with("PRIVMSG #lurk :back again"));
    drop(gw);
}

#[test]
fn a_flood_overflows_the_ring_and_says_how_much_was_dropped() {
    let server = IrcServer::start(&IrcOptions::default());
    let t = Test::init();
    write_env(&t, &plain_env(server.port));
    let _gw: Running = start_gateway(&t, &[]);
    assert_eq!(exec(&t, "irc status")["result"]["state"], "joined");
    // ngircd lets one client send about three lines a second: 25 clients send 20 lines each.
    let mut peers: Vec<IrcPeer> = (0..25)
        .map(|i| {
            let mut p = IrcPeer::connect(server.port, &format!("fl{i}"), None);
            p.join("#lurk", None);
            p
        })
        .collect();
    for (i, peer) in peers.iter_mut().enumerate() {
        let mut batch = Vec::new();
        for j in 0..20 {
            batch.extend_from_slice(
                format!("PRIVMSG #lurk :flood {} {}\r\n", i * 20 + j, "-".repeat(40)).as_bytes(),
            );
        }
        peer.raw_bytes(&batch);
    }
    // Every line's arrival is visible in the log (bounded wait on that observable state).
    let log = t.path("workspace/irc/sessions/agent:main:main/inbound.jsonl");
    let mut logged = 0;
    for _ in 0..1200 {
        logged = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .count();
        if logged >= 500 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(logged, 500);
    let env = exec(&t, "irc pull --limit 500");
    assert_eq!(env["result"]["dropped_count"], 244, "{}", env["result"]);
    assert_eq!(env["result"]["returned"], 256);
    assert_eq!(
        env["result"]["truncated"], true,
        "256 lines exceed the 8,000-character pull cap"
    );
    let texts = messages(&env);
    assert!(texts.contains(&"[marker]".to_string()));
    let last_logged: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .last()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(texts.last().unwrap(), last_logged["text"].as_str().unwrap());
    // Reported once.
    let again = exec(&t, "irc pull");
    assert!(again["result"].get("dropped_count").is_none(), "{again}");
}

#[test]
fn tls_is_verified_against_the_trust_store() {
    let server = IrcServer::start(&IrcOptions {
        tls: true,
        password: None,
        services: false,
    });
    let tls_port = server.tls_port.unwrap();
    let t = Test::init();
    write_env(
        &t,
        &format!(
            "IRC_SERVER=127.0.0.1\nIRC_PORT={tls_port}\nIRC_TLS=1\nIRC_CHANNEL=\"#lurk\"\nIRC_NICK=lurkbot\n"
        ),
    );
    // Untrusted certificate: refused, and said so.
    let gw = start_gateway(&t, &[]);
    let env = exec(&t, "irc connect");
    assert_ne!(env["exit_code"], 0, "{env}");
    assert!(
        env["error_message"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("certificate"),
        "{env}"
    );
    drop(gw);
    // Trusted (only for this gateway process): joins over TLS.
    let cert = server.ca_cert().display().to_string();
    let _gw = start_gateway(&t, &[("SSL_CERT_FILE", &cert)]);
    let env = exec(&t, "irc connect");
    assert_eq!(env["result"]["state"], "joined", "{env}");
    assert_eq!(env["result"]["tls"], true);
}

/// The `.env` example of the IRC seed (`000_…`), as written there.
const SEED_EXAMPLE: &str = "# IRC 基本配置\nIRC_SERVER=irc.example.com\nIRC_PORT=6697\nIRC_TLS=1\n\n# 默认频道（v28 只保证 1 个默认频道）\nIRC_CHANNEL=#lemon\n\n# NICK 约束：<= 9 字符（超出将拒绝）\nIRC_NICK=lemonbot\n\n# 可选：服务器 PASS（极少数网络需要）\nIRC_SERVER_PASSWORD=\n\n# 可选：频道 key（有密码的频道才填）\nIRC_CHANNEL_KEY=\n\n# 可选：NickServ 认证（常见）\nIRC_NICKSERV_PASSWORD=\n\n# 可选：从 IRC 收到消息后自动递送给主 agent（默认关闭）\n# 0/空：关闭；1：开启\nIRC_AUTO_FORWARD_TO_AGENT=0\n";

#[test]
fn doctor_checks_the_irc_settings() {
    let t = Test::init();
    let out = t.run(&["doctor", "--json"]);
    assert!(!out.stdout.contains("\"irc\""), "no check without settings");
    // A channel that really is empty: a `#` after a blank starts a comment.
    write_env(
        &t,
        "IRC_SERVER=irc.example\nIRC_CHANNEL= #lurk\nIRC_NICK=lurkbot\n",
    );
    let out = t.run(&["doctor"]);
    let line = out
        .stdout
        .lines()
        .find(|l| l.contains(" irc "))
        .unwrap_or_default()
        .to_string();
    assert!(line.starts_with("FAIL"), "{}", out.stdout);
    assert!(
        line.contains("MissingCredentials") && line.contains("after a blank"),
        "{line}"
    );
    // The IRC seed's own `.env` example, verbatim: `IRC_CHANNEL=#lemon` is the channel #lemon.
    write_env(&t, SEED_EXAMPLE);
    let out = t.run(&["doctor"]);
    assert!(
        out.stdout.lines().any(|l| l.starts_with("ok")
            && l.contains("#lemon as lemonbot on irc.example.com:6697 (TLS)")),
        "{}",
        out.stdout
    );
    write_env(
        &t,
        "IRC_SERVER=irc.example\nIRC_CHANNEL=\"#lurk\"\nIRC_NICK=lurkbot\n",
    );
    let out = t.run(&["doctor"]);
    assert!(
        out.stdout.lines().any(
            |l| l.starts_with("ok") && l.contains("#lurk as lurkbot on irc.example:6697 (TLS)")
        ),
        "{}",
        out.stdout
    );
}
