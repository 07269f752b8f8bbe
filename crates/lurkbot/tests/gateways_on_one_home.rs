//! Two gateway processes on one home (ARCHITECTURE.md §6.3): a turn belongs to the gateway
//! that admitted it while that gateway lives — the other leaves it alone, at its start and
//! after — and when its gateway is killed (SIGKILL) the other takes it over and answers it
//! once, with no second model call beyond the one the kill cut.

use std::io::{Read, Write};
use std::net::TcpStream;

use lurkbot_llm::fake::{FakeProvider, Gate, Step};

use crate::nothing_lost::{chat_completion, kill, start_as, transcript_messages, until};
use crate::util::{Test, free_port, start_gateway, start_gateway_on};

/// Whether `GET /health` on `addr` answers 200: the gateway serves, so its start — the
/// look for turns to take over — is behind it.
fn serves(addr: &str) -> bool {
    let Ok(mut stream) = TcpStream::connect(addr) else {
        return false;
    };
    let request = format!("GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.1 200")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_gateways_turn_is_taken_over_by_the_other_once() {
    killed_gateways_turn_is_taken_over(&Test::init()).await;
}

/// The same with the state in PostgreSQL (`[state] url`): the leases live in the database and
/// a gateway's liveness is its connection's lock, as for gateways on several machines.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_a_killed_gateways_turn_is_taken_over_by_the_other_once() {
    let pg = lurkbot_test_support::postgres::Postgres::start();
    let t = crate::gateways_on_postgres::home_on(&pg, "takeover");
    killed_gateways_turn_is_taken_over(&t).await;
    assert!(
        !t.path("state/state.sqlite").exists(),
        "nothing in the home"
    );
    assert_eq!(pg.psql("takeover", "SELECT state FROM turns"), "done");
    assert_eq!(pg.psql("takeover", "SELECT count(*) FROM leases"), "0");
    // The session and its transcript are the database's too.
    assert!(!t.path("sessions/main/sessions.json").exists());
    assert_eq!(
        pg.psql(
            "takeover",
            "SELECT count(*) FROM documents WHERE name = 'sessions/main/sessions.json'"
        ),
        "1"
    );
    let lines: u32 = pg
        .psql(
            "takeover",
            "SELECT count(*) FROM log_lines WHERE log LIKE 'sessions/main/ses_%.jsonl'",
        )
        .parse()
        .unwrap();
    assert!(lines >= 2, "the question and its answer: {lines}");
}

async fn killed_gateways_turn_is_taken_over(t: &Test) {
    let fake = FakeProvider::start(vec![
        Step::Held(Gate::new(), Box::new(Step::text("never sent"))),
        Step::text("Taken over and answered."),
    ])
    .await;
    fake.record(true);
    let first = start_as(t, &fake, "gw-first");
    let token = t.gateway_token();
    let asked = {
        let (addr, token) = (first.addr.clone(), token.clone());
        std::thread::spawn(move || chat_completion(&addr, &token, "k-1", "who answers me?"))
    };
    until("the model call", || fake.requests().len() == 1).await;

    // The second gateway starts while the first runs the turn: it leaves it alone.
    let second = start_as(t, &fake, "gw-second");
    until("the second gateway serves", || serves(&second.addr)).await;
    let status = t.run(&["gateway", "status"]);
    assert!(
        status.stdout.contains("gateway gw-first: runs 1 of them"),
        "{}",
        status.stdout
    );
    assert_eq!(fake.requests().len(), 1, "no second model call");
    let state = t.run(&["state", "status", "--json"]).json();
    let turn = state["leases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"].as_str().is_some_and(|n| n.starts_with("turn:")))
        .unwrap_or_else(|| panic!("{state}"))
        .clone();
    assert_eq!(
        (turn["owner"].as_str(), turn["alive"].as_bool()),
        (Some("gw-first"), Some(true))
    );
    assert_eq!(state["turns"]["running"], 1, "{state}");

    // The first dies: the second takes the turn over (it sees the first's lock gone).
    kill(first);
    let answered = tokio::task::spawn_blocking(move || asked.join().unwrap())
        .await
        .unwrap();
    assert_eq!(answered.0, 0, "the client lost its gateway with it");
    until("the turn taken over", || fake.requests().len() == 2).await;
    let (code, body) = {
        let (addr, token) = (second.addr.clone(), token.clone());
        tokio::task::spawn_blocking(move || {
            chat_completion(&addr, &token, "k-1", "who answers me?")
        })
        .await
        .unwrap()
    };
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        body["choices"][0]["message"]["content"],
        "Taken over and answered."
    );
    assert!(
        second.stderr().contains("resuming a turn cut by a restart"),
        "{}",
        second.stderr()
    );
    let (status, stderr) = tokio::task::spawn_blocking(move || second.stop())
        .await
        .unwrap();
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(fake.requests().len(), 2, "one call cut, one that answered");
    let state = t.run(&["state", "status"]);
    assert!(state.stdout.contains("leases: none"), "{}", state.stdout);
    assert!(state.stdout.contains("1 done"), "{}", state.stdout);
    let messages = transcript_messages(t);
    let asked = messages
        .iter()
        .filter(|m| m["role"] == "user" && m["content"] == "who answers me?")
        .count();
    let answers = messages.iter().filter(|m| m["role"] == "assistant").count();
    assert_eq!((asked, answers), (1, 1), "{messages:?}");
}

#[test]
fn state_status_on_a_home_no_gateway_ran_in_creates_nothing() {
    let t = Test::init();
    let out = t.run(&["state", "status"]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert!(out.stdout.contains("no state yet"), "{}", out.stdout);
    assert!(!t.path("state/state.sqlite").exists());
}

#[test]
fn two_gateways_with_one_id_on_one_home_are_refused() {
    let t = Test::init();
    let env = [("LURKBOT_GATEWAY_ID", "twin")];
    let first = start_gateway(&t, &env);
    let second = t.run_env(&["gateway", "--port", "0"], &env);
    drop(first);
    assert_ne!(second.status, 0);
    assert!(
        second.stderr.contains("already runs as 'twin'"),
        "{}",
        second.stderr
    );
    let bad = t.run_env(
        &["gateway", "--port", "0"],
        &[("LURKBOT_GATEWAY_ID", "../x")],
    );
    assert_eq!(bad.status, 2, "{}", bad.stderr);
    assert!(bad.stderr.contains("LURKBOT_GATEWAY_ID"), "{}", bad.stderr);
}

/// HAProxy in front of two gateways on one home, as the README's configuration has it (`/ready`
/// checks, WebSockets tunnelled, a failed connection sent to the other server): a client's
/// turn runs on the first; the first is killed; the client reconnects through HAProxy to the
/// second, which took the turn over, and sees it finish — one answer, no model call repeated
/// beyond the one the kill cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_haproxy_a_client_survives_the_death_of_its_gateway() {
    client_survives_through_haproxy(&Test::init(), "first").await;
}

/// The same through nginx, as the README's configuration has it (the second gateway a
/// `backup`; open-source nginx has no active checks: a refused connection moves on).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_nginx_a_client_survives_the_death_of_its_gateway() {
    client_survives_through_haproxy(&Test::init(), "nginx").await;
}

/// The same on PostgreSQL with both gateways active (`balance leastconn`: clients spread over
/// them, each WebSocket staying on its gateway): whichever gateway runs the turn is killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_through_haproxy_a_client_survives_the_death_of_its_gateway() {
    let pg = lurkbot_test_support::postgres::Postgres::start();
    let t = crate::gateways_on_postgres::home_on(&pg, "haproxy");
    client_survives_through_haproxy(&t, "leastconn").await;
    assert_eq!(pg.psql("haproxy", "SELECT state FROM turns"), "done");
}

/// A client's turn through a balancer in front of two gateways, its gateway killed: `balance`
/// is HAProxy's (`first`, `leastconn`), or `nginx` for nginx in front instead.
async fn client_survives_through_haproxy(t: &Test, balance: &str) {
    let fake = FakeProvider::start(vec![
        Step::Held(Gate::new(), Box::new(Step::text("never sent"))),
        Step::text("Answered by the other gateway."),
    ])
    .await;
    fake.record(true);
    let (front, a, b) = (free_port(), free_port(), free_port());
    // Clients name HAProxy's address; the gateways take it as theirs.
    let config = std::fs::read_to_string(t.path("config.toml")).unwrap();
    let allowed =
        format!("allowed_hosts = [\"127.0.0.1:{front}\"]\ntrusted_proxies = [\"127.0.0.1\"]\n");
    let config = match config.find("[gateway]\n") {
        Some(at) => format!(
            "{}[gateway]\n{allowed}{}",
            &config[..at],
            &config[at + 10..]
        ),
        None => format!("{config}\n[gateway]\n{allowed}"),
    };
    std::fs::write(t.path("config.toml"), config).unwrap();
    let base = format!("{}/v1", fake.url);
    let env = |id: &'static str| {
        [
            ("LURKBOT_MODEL", "openai/fake"),
            ("OPENAI_BASE_URL", base.clone().leak() as &str),
            ("LURKBOT_GATEWAY_ID", id),
        ]
    };
    let one = start_gateway_on(t, &env("gw-a"), a);
    let other = start_gateway_on(t, &env("gw-b"), b);
    let haproxy = if balance == "nginx" {
        Balancer::nginx(t, front, a, b)
    } else {
        Balancer::haproxy(t, front, a, b, balance)
    };
    until("the balancer finds a gateway ready", || {
        serves(&format!("127.0.0.1:{front}"))
    })
    .await;

    let (client, token) = (Test::init(), t.gateway_token());
    let url = format!("ws://127.0.0.1:{front}/ws");
    let asking = std::thread::spawn(move || {
        client.run_env(
            &["agent", "--gateway", &url, "-m", "who answers me?"],
            &[("LURKBOT_GATEWAY_TOKEN", token.as_str())],
        )
    });
    until("the model call", || fake.requests().len() == 1).await;
    // The gateway HAProxy sent the client to runs the turn; it dies.
    let (first, second) = if one.stderr().contains("chat.send") {
        (one, other)
    } else {
        (other, one)
    };
    assert!(
        first.stderr().contains("chat.send"),
        "no gateway ran the turn"
    );
    if balance != "leastconn" {
        assert!(
            first.addr.ends_with(&format!(":{a}")),
            "balance first sends to a"
        );
    }
    kill(first);
    let answered = tokio::task::spawn_blocking(move || asking.join().unwrap())
        .await
        .unwrap();
    assert_eq!(answered.status, 0, "{}", answered.stderr);
    assert_eq!(answered.stdout, "Answered by the other gateway.\n");
    assert!(
        answered.stderr.contains("waiting for it to come back"),
        "{}",
        answered.stderr
    );
    assert!(
        second.stderr().contains("resuming a turn cut by a restart"),
        "{}",
        second.stderr()
    );
    drop(haproxy);
    let (status, stderr) = tokio::task::spawn_blocking(move || second.stop())
        .await
        .unwrap();
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(fake.requests().len(), 2, "one call cut, one that answered");
    let messages = transcript_messages(t);
    let answers = messages.iter().filter(|m| m["role"] == "assistant").count();
    assert_eq!(answers, 1, "{messages:?}");
}

/// HAProxy or nginx (Debian's) in the foreground on `front`, balancing `a` and `b`; stopped
/// when dropped.
struct Balancer(std::process::Child);

impl Balancer {
    fn haproxy(t: &Test, front: u16, a: u16, b: u16, balance: &str) -> Self {
        // `balance first`: every client goes to `a` while it is up (one active gateway, the
        // other standing by); `leastconn`: both active; `/ready` checks every 200 ms; a
        // refused connection is retried on the other server.
        let config = format!(
            "defaults\n  mode http\n  timeout connect 1s\n  timeout client 30s\n  timeout server 30s\n  timeout tunnel 1h\n  retries 3\n  option redispatch\n  option forwardfor\n\
             frontend fe\n  bind 127.0.0.1:{front}\n  default_backend gws\n\
             backend gws\n  balance {balance}\n  option httpchk GET /ready\n  http-check expect status 200\n\
             \x20 server a 127.0.0.1:{a} check inter 200ms fall 1 rise 1\n\
             \x20 server b 127.0.0.1:{b} check inter 200ms fall 1 rise 1\n"
        );
        let path = t.path("haproxy.cfg");
        std::fs::write(&path, config).unwrap();
        let child = std::process::Command::new("haproxy")
            .args(["-db", "-f"])
            .arg(&path)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("haproxy (apt-get install haproxy; scripts/test.sh installs it)");
        Self(child)
    }

    /// nginx with the README's `upstream` and `location` (temporary files in the home).
    fn nginx(t: &Test, front: u16, a: u16, b: u16) -> Self {
        let dir = t.path("nginx");
        std::fs::create_dir_all(&dir).unwrap();
        let d = dir.display();
        let config = format!(
            "daemon off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\nevents {{ worker_connections 64; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n\
             \x20 fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
             \x20 upstream lurkbot {{\n    server 127.0.0.1:{a};\n    server 127.0.0.1:{b} backup;\n  }}\n\
             \x20 server {{\n    listen 127.0.0.1:{front};\n    location / {{\n      proxy_pass http://lurkbot;\n\
             \x20     proxy_http_version 1.1;\n      proxy_set_header Upgrade $http_upgrade;\n\
             \x20     proxy_set_header Connection \"upgrade\";\n      proxy_set_header Host $host:$server_port;\n\
             \x20     proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n      proxy_read_timeout 1h;\n\
             \x20     proxy_next_upstream error timeout http_503;\n    }}\n  }}\n}}\n"
        );
        let path = dir.join("nginx.conf");
        std::fs::write(&path, config).unwrap();
        let child = std::process::Command::new("nginx")
            .args(["-e", "stderr", "-p"])
            .arg(&dir)
            .arg("-c")
            .arg(&path)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("nginx (apt-get install nginx-light; scripts/test.sh installs it)");
        Self(child)
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// On PostgreSQL with three gateways: the turn's gateway is killed while a tool call that acts
/// (`rss fetch`) is in flight; another takes the turn over — the cut call is not run again,
/// the model is told — and is killed in turn during a call that only reads (`web_fetch`); the
/// third reads the page again and answers, and the retried request attaches to that answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_a_tool_call_cut_by_a_kill_is_finished_by_another_gateway() {
    use std::sync::atomic::Ordering;
    let pg = lurkbot_test_support::postgres::Postgres::start();
    let t = crate::gateways_on_postgres::home_on(&pg, "tools");
    let (pages, asked) = crate::nothing_lost::page_server(2);
    crate::nothing_lost::append_config(&t, &format!("[network]\nallow_hosts = [\"{pages}\"]"));
    let fake = FakeProvider::start(vec![
        Step::call(
            "c1",
            "terminal_exec",
            serde_json::json!({"command": format!("rss fetch --url http://{pages}/feed.xml --timeout-ms 120000")}),
        ),
        Step::call("c2", "web_fetch", serde_json::json!({"url": format!("http://{pages}/page")})),
        Step::text("Both calls handled."),
    ])
    .await;
    fake.record(true);
    let token = t.gateway_token();
    let a = start_as(&t, &fake, "gw-a");
    let b = start_as(&t, &fake, "gw-b");
    let first = {
        let (addr, token) = (a.addr.clone(), token.clone());
        std::thread::spawn(move || chat_completion(&addr, &token, "key-t", "subscribe and read"))
    };
    until("the feed request", || asked.load(Ordering::SeqCst) == 1).await;
    kill(a);
    let (status, _) = tokio::task::spawn_blocking(move || first.join().unwrap())
        .await
        .unwrap();
    assert_ne!(status, 200, "the first request died with its gateway");

    // B takes the turn over: the cut feed call is not run again, the page is asked for.
    until("the page request", || asked.load(Ordering::SeqCst) == 2).await;
    let told = fake.requests()[1].body.to_string();
    assert!(told.contains("interrupted by a restart"), "{told}");
    kill(b);

    // C reads the page again and answers; the retried request attaches.
    let c = start_as(&t, &fake, "gw-c");
    let (addr, token) = (c.addr.clone(), token.clone());
    let (status, body) = tokio::task::spawn_blocking(move || {
        chat_completion(&addr, &token, "key-t", "subscribe and read")
    })
    .await
    .unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["choices"][0]["message"]["content"],
        "Both calls handled."
    );
    assert_eq!(
        asked.load(Ordering::SeqCst),
        3,
        "the feed once, the page twice"
    );
    assert_eq!(fake.requests().len(), 3, "no model call for the retry");
    assert_eq!(pg.psql("tools", "SELECT state FROM turns"), "done");
    drop(c);
}
