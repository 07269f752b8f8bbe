//! `lurkbot setup`: from a fresh home to a first conversation without reading the README —
//! provider, model and key from flags (the key on stdin, never the command line), written to
//! config.toml and a private `.env`, checked with one call, then `lurkbot agent` answers with no
//! variable set; a server on this machine needs no key; a remote one without a key, a key with
//! a line break and an unknown provider are refused with what to do.

use std::os::unix::fs::PermissionsExt;

use lurkbot_llm::fake::{FakeProvider, Step};

use crate::util::{Output, Test};

/// `lurkbot setup --provider openai --model MODEL --base-url BASE EXTRA…` with `stdin`.
fn setup(t: &Test, model: &str, base: &str, extra: &[&str], stdin: Option<&str>) -> Output {
    let mut args = vec![
        "setup",
        "--provider",
        "openai",
        "--model",
        model,
        "--base-url",
        base,
    ];
    args.extend_from_slice(extra);
    t.run_full(&args, stdin, &[])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_writes_checks_and_a_first_turn_answers() {
    let t = Test::init();
    let init = t.run(&["init"]);
    assert!(
        init.stdout.contains("lurkbot setup"),
        "init leads on: {}",
        init.stdout
    );
    let fake = FakeProvider::start(vec![Step::text("OK"), Step::text("Hello, human.")]).await;
    let base = format!("{}/v1", fake.url);
    let out = setup(
        &t,
        "fake-model",
        &base,
        &["--key-stdin"],
        Some("sk-setup-secret-123\n"),
    );
    assert_eq!(out.status, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("check: openai/fake-model answers"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("lurkbot chat"), "{}", out.stdout);
    assert!(
        !out.stdout.contains("sk-setup-secret-123"),
        "the key is never shown"
    );
    assert_eq!(
        fake.requests()[0].key.as_deref(),
        Some("sk-setup-secret-123"),
        "the check used the key"
    );
    let config = std::fs::read_to_string(t.path("config.toml")).unwrap();
    assert!(config.contains("model = \"openai/fake-model\""), "{config}");
    assert!(!config.contains("sk-setup"), "no key in config.toml");
    let env = std::fs::read_to_string(t.path(".env")).unwrap();
    assert!(
        env.contains("OPENAI_API_KEY=\"sk-setup-secret-123\""),
        "{env}"
    );
    let mode = std::fs::metadata(t.path(".env"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    // A first conversation with nothing else set.
    let out = t.run(&["agent", "-m", "hello"]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "Hello, human.\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_server_needs_no_key_and_refusals_say_what_to_do() {
    let t = Test::init();
    let fake = FakeProvider::start(vec![Step::text("OK")]).await;
    let base = format!("{}/v1", fake.url);
    let out = setup(&t, "llama3.2", &base, &[], None);
    assert_eq!(out.status, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        !std::fs::read_to_string(t.path(".env"))
            .unwrap()
            .contains("OPENAI_API_KEY")
    );

    let remote = setup(
        &t,
        "gpt-4o-mini",
        "https://api.example.test/v1",
        &["--no-check"],
        None,
    );
    assert_eq!(remote.status, 2, "{}", remote.stderr);
    assert!(remote.stderr.contains("--key-stdin"), "{}", remote.stderr);
    // Nothing given, no terminal, and no server found here: says so, and the keyless way.
    let dead = format!("http://127.0.0.1:{}/v1", crate::util::free_port());
    let fresh = Test::init();
    let nothing = fresh.run_full(
        &["setup", "--no-check"],
        None,
        &[("LURKBOT_LOCAL_MODEL_URLS", &dead)],
    );
    assert_eq!(nothing.status, 2, "{}", nothing.stderr);
    assert!(
        nothing
            .stderr
            .contains("no model server was found on this machine")
            && nothing.stderr.contains("--key-stdin"),
        "{}",
        nothing.stderr
    );
    let planted = setup(
        &t,
        "m",
        "https://api.example.test/v1",
        &["--key-stdin", "--no-check"],
        Some("sk-a\u{7}LURKBOT_GATEWAY_TOKEN=x\n"),
    );
    assert_eq!(planted.status, 2, "{}", planted.stderr);
    assert!(
        planted.stderr.contains("control character"),
        "{}",
        planted.stderr
    );
    assert!(
        !std::fs::read_to_string(t.path(".env"))
            .unwrap()
            .contains("LURKBOT_GATEWAY_TOKEN")
    );
    let unknown = t.run(&["setup", "--provider", "mistery", "--model", "m"]);
    assert_eq!(unknown.status, 2);
    // A check that fails says so and keeps the settings.
    let dead = setup(&t, "m", "http://127.0.0.1:9/v1", &[], None);
    assert_eq!(dead.status, 1, "{}", dead.stderr);
    assert!(dead.stderr.contains("does not answer"), "{}", dead.stderr);
    assert!(
        std::fs::read_to_string(t.path("config.toml"))
            .unwrap()
            .contains("openai/m")
    );
}

/// The keyless way to a first reply: a model server on this machine (here the scripted one,
/// named by `LURKBOT_LOCAL_MODEL_URLS` as Ollama would be found on 11434) is found and taken
/// without a question or a key, and a gateway already running on the home — which answered
/// "no model" before, pointing at `lurkbot setup` — uses it at once, without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_finds_a_local_server_and_a_running_gateway_takes_it() {
    let t = Test::init();
    let gw = crate::util::start_gateway(&t, &[]);
    let token = t.gateway_token();
    let client = Test::init();
    let env = [("LURKBOT_GATEWAY_TOKEN", token.as_str())];
    let before = client.run_env(&["agent", "--gateway", &gw.ws, "-m", "hello"], &env);
    assert_ne!(before.status, 0, "{}", before.stdout);
    assert!(
        before
            .stderr
            .contains("no model is configured. Run `lurkbot setup`"),
        "{}",
        before.stderr
    );

    let fake = FakeProvider::start(vec![Step::text("OK"), Step::text("Hello from here.")]).await;
    let local = format!("{}/v1", fake.url);
    let out = t.run_full(&["setup"], None, &[("LURKBOT_LOCAL_MODEL_URLS", &local)]);
    assert_eq!(out.status, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains(&format!(
            "found {local} at {local} with 1 model(s): fake-model"
        )),
        "{}",
        out.stderr
    );
    assert!(
        out.stdout.contains("model: openai/fake-model"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("check: openai/fake-model answers"),
        "{}",
        out.stdout
    );
    assert!(
        out.stderr.contains("reloaded config.toml")
            && out
                .stdout
                .contains("the running gateway uses the new model now"),
        "{}{}",
        out.stdout,
        out.stderr
    );
    let after = client.run_env(&["agent", "--gateway", &gw.ws, "-m", "hello"], &env);
    assert_eq!(after.status, 0, "{}", after.stderr);
    assert_eq!(after.stdout, "Hello from here.\n");
    // No key was asked for or written.
    let dotenv = std::fs::read_to_string(t.home.join(".env")).unwrap_or_default();
    assert!(!dotenv.contains("OPENAI_API_KEY"), "{dotenv}");
}

/// A model server on this machine as `lurkbot setup` finds one: `GET /v1/models` lists one
/// model; every request's head is kept. With `redirect_to`, it answers 302 to that URL instead.
fn local_server(
    redirect_to: Option<String>,
) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut head = vec![0u8; 8192];
            let n = stream.read(&mut head).unwrap_or(0);
            kept.lock()
                .unwrap()
                .push(String::from_utf8_lossy(&head[..n]).into_owned());
            let answer = match &redirect_to {
                Some(to) => format!(
                    "HTTP/1.1 302 Found\r\nLocation: {to}/models\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                ),
                None => {
                    let body = r#"{"object":"list","data":[{"id":"local-model"}]}"#;
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    )
                }
            };
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    (base, seen)
}

/// `lurkbot setup` on a terminal (`script` gives it one), answering with `typed`; the exit
/// status and everything the terminal showed.
fn setup_on_a_terminal(t: &Test, local_urls: &str, typed: &str) -> (i32, String) {
    use std::io::Write;
    let inner = format!("'{}' setup --no-check", env!("CARGO_BIN_EXE_lurkbot"));
    let mut child = std::process::Command::new("script")
        .args(["-qefc", &inner, "/dev/null"])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", t.dir.path())
        .env("LURKBOT_HOME", &t.home)
        .env("LURKBOT_LOCAL_MODEL_URLS", local_urls)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("'script' (util-linux) is needed for this test");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(typed.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// A key already in `.env` is never sent to a server found on a local port: pressing Enter
/// through the questions keeps the base URL the key is for; typing the found server's URL asks
/// whether to send the key there, and anything but `yes` writes nothing; a server that answers
/// with a redirect is not followed (nor found).
#[test]
fn an_existing_key_is_not_sent_to_a_server_found_on_a_local_port() {
    let t = Test::init();
    std::fs::write(t.path(".env"), "OPENAI_API_KEY=\"sk-kept-for-openai\"\n").unwrap();
    let (found, seen) = local_server(None);

    let (status, shown) = setup_on_a_terminal(&t, &found, "\n\n\n\n");
    assert_eq!(status, 0, "{shown}");
    assert!(
        shown.contains(&format!("found {found} at {found}")),
        "{shown}"
    );
    let env = std::fs::read_to_string(t.path(".env")).unwrap();
    assert!(
        env.contains("OPENAI_BASE_URL=\"https://api.openai.com/v1\""),
        "Enter keeps the key's own server: {env}"
    );
    assert!(env.contains("sk-kept-for-openai"), "{env}");

    // The found server, typed: asked, and not sent without a yes.
    let typed = format!("\n{found}\n\n\n");
    let (status, shown) = setup_on_a_terminal(&t, &found, &typed);
    assert_eq!(status, 2, "{shown}");
    assert!(shown.contains("Send it there?"), "{shown}");
    assert!(shown.contains("nothing written"), "{shown}");
    let env = std::fs::read_to_string(t.path(".env")).unwrap();
    assert!(!env.contains(&found), "{env}");
    for request in seen.lock().unwrap().iter() {
        assert!(!request.contains("sk-kept-for-openai"), "{request}");
        assert!(
            !request.to_ascii_lowercase().contains("authorization"),
            "{request}"
        );
    }

    // A redirect is not followed: the server it points to is not asked, nor found.
    let before = seen.lock().unwrap().len();
    let (redirecting, _) = local_server(Some(found.clone()));
    let out = t.run_full(
        &["setup", "--no-check"],
        None,
        &[("LURKBOT_LOCAL_MODEL_URLS", &redirecting)],
    );
    assert!(!out.stderr.contains("found "), "{}", out.stderr);
    assert_eq!(
        seen.lock().unwrap().len(),
        before,
        "the redirect was followed"
    );
}

/// A running gateway whose token is not the home's (set in its own environment): `setup`
/// cannot present it, so it sends the gateway SIGHUP — the signal it reloads on — instead of
/// saying to start a gateway that runs; the gateway answers with the new model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_reloads_a_gateway_whose_token_it_cannot_present() {
    let t = Test::init();
    let own = "a-token-of-the-gateways-own-0123456789";
    let gw = crate::util::start_gateway(&t, &[("LURKBOT_GATEWAY_TOKEN", own)]);
    let fake =
        FakeProvider::start(vec![Step::text("OK"), Step::text("Reloaded by a signal.")]).await;
    let local = format!("{}/v1", fake.url);
    let out = t.run_full(&["setup"], None, &[("LURKBOT_LOCAL_MODEL_URLS", &local)]);
    assert_eq!(out.status, 0, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("sent it SIGHUP"), "{}", out.stderr);
    assert!(
        out.stdout
            .contains("the running gateway uses the new model now"),
        "{}",
        out.stdout
    );
    // The reload happens when the gateway takes the signal: its log says so.
    crate::nothing_lost::until("the gateway reloaded", || {
        let log = gw.stderr();
        log.contains("SIGHUP: reloading config.toml") && log.contains("config reloaded")
    })
    .await;
    let client = Test::init();
    let env = [("LURKBOT_GATEWAY_TOKEN", own)];
    let after = client.run_env(&["agent", "--gateway", &gw.ws, "-m", "hello"], &env);
    assert_eq!(after.status, 0, "{}", after.stderr);
    assert_eq!(after.stdout, "Reloaded by a signal.\n");
}
