//! `/metrics` scraped by a real Prometheus (Debian's 2.42): turns with a tool call run
//! through the OpenAI API, and Prometheus' HTTP API answers with their series; `promtool
//! check metrics` takes the exposition as it is; the token is required on the gateway's port,
//! and `[metrics] listen` serves loopback only.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use lurkbot_llm::fake::{FakeProvider, Step};
use serde_json::{Value, json};

use crate::nothing_lost::{append_config, chat_completion_in, model_env, start_with, until};
use crate::util::{Test, free_port};

/// `GET path` on `addr` with `token` (if any): (status, body).
fn get(addr: &str, path: &str, token: Option<&str>) -> (u16, String) {
    let Ok(mut stream) = TcpStream::connect(addr) else {
        return (0, String::new());
    };
    let auth = token.map_or_else(String::new, |t| format!("Authorization: Bearer {t}\r\n"));
    let sent = write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n"
    );
    let mut response = String::new();
    if sent.is_err() || stream.read_to_string(&mut response).is_err() {
        return (0, String::new());
    }
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    // The exposition comes chunked: its chunks joined.
    let chunked = response
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    (status, if chunked { unchunk(&body) } else { body })
}

fn unchunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

/// A Prometheus on loopback, stopped when dropped.
struct Prometheus {
    child: Child,
    addr: String,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    /// Scraping `/metrics` on `target` every second with `token` as the bearer credential.
    fn scraping(target: &str, token: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: lurkbot\n    \
                 authorization:\n      credentials: {token}\n    static_configs:\n      \
                 - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let addr = format!("127.0.0.1:{}", free_port());
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus (Debian's package; scripts/test.sh installs it)");
        Self {
            child,
            addr,
            _dir: dir,
        }
    }

    /// The result of the instant query `query` (`data.result`).
    fn query(&self, query: &str) -> Vec<Value> {
        let encoded = encode(query);
        let (status, body) = get(&self.addr, &format!("/api/v1/query?query={encoded}"), None);
        if status != 200 {
            return Vec::new();
        }
        let answer: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        answer["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
}

/// `text` percent-encoded for a query string.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"_-.".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The value of the first series of `result`.
fn value(result: &[Value]) -> f64 {
    result
        .first()
        .and_then(|s| s["value"][1].as_str())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_scrapes_the_turns_model_calls_and_tool_calls() {
    let t = Test::init();
    let fake = FakeProvider::start(vec![
        Step::call("c1", "terminal_exec", json!({"command": "help"})),
        Step::text("Done with one tool call."),
        Step::call("c2", "a_tool_the_model_made_up", json!({})),
        Step::text("A second turn."),
    ])
    .await;
    let env = model_env(&fake);
    let token = t.gateway_token();
    let gw = start_with(&t, &env);
    let addr = gw.addr.clone();

    // Without the token: refused, and nothing of the figures shown.
    let (status, body) = get(&addr, "/metrics", None);
    assert_eq!(status, 401, "{body}");
    assert!(!body.contains("lurkbot_"), "{body}");

    for (i, ask) in ["Run help, please.", "And again?"].into_iter().enumerate() {
        let (addr, token) = (addr.clone(), token.clone());
        let (code, body) = tokio::task::spawn_blocking(move || {
            chat_completion_in(
                &addr,
                &token,
                &format!("m{i}"),
                "agent:main:dm:api:ops",
                ask,
            )
        })
        .await
        .unwrap();
        assert_eq!(code, 200, "{body}");
    }

    let (status, exposition) = get(&addr, "/metrics", Some(&token));
    assert_eq!(status, 200, "{exposition}");
    for line in [
        "lurkbot_turns_total{source=\"api\",outcome=\"ok\"} 2",
        "lurkbot_model_calls_total{provider=\"openai\",model=\"fake\",outcome=\"ok\"} 4",
        "lurkbot_tool_calls_total{tool=\"terminal_exec\",outcome=\"ok\"} 1",
        // A name the model made up is not a label value.
        "lurkbot_tool_calls_total{tool=\"unknown\",outcome=\"error\"} 1",
        "lurkbot_turn_duration_seconds_count{source=\"api\"} 2",
        "lurkbot_websocket_connections 0",
        "lurkbot_outbox_messages{state=\"pending\"} 0",
    ] {
        assert!(exposition.contains(line), "{line} not in\n{exposition}");
    }
    assert!(exposition.contains(
        "lurkbot_model_tokens_total{provider=\"openai\",model=\"fake\",direction=\"input\"}"
    ));
    assert!(exposition.contains("lurkbot_process_resident_memory_bytes "));
    assert!(exposition.contains("lurkbot_build_info{version=\""));
    // Bounded labels: no session key, no user text.
    assert!(!exposition.contains("agent:main"), "{exposition}");
    assert!(!exposition.contains("Run help"), "{exposition}");
    assert!(!exposition.contains("made_up"), "{exposition}");

    // `lurkbot status` shows the headline figures of the same counters.
    let status = t.run(&["status"]);
    assert_eq!(status.status, 0, "{}", status.stderr);
    for line in [
        "turns      2 ok, 0 failed, 0 refused by a budget",
        "model      4 calls (0 failed)",
        "tools      2 calls (1 failed), 0 approvals asked",
    ] {
        assert!(
            status.stdout.contains(line),
            "{line} not in\n{}",
            status.stdout
        );
    }
    let json = t.run(&["status", "--json"]).json();
    assert_eq!(json["metrics"]["turns"]["ok"], 2, "{json}");

    // promtool lints the exposition as Prometheus reads it.
    let mut check = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian's prometheus package)");
    check
        .stdin
        .take()
        .unwrap()
        .write_all(exposition.as_bytes())
        .unwrap();
    let checked = check.wait_with_output().unwrap();
    assert!(
        checked.status.success(),
        "promtool: {}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );

    // A real Prometheus scrapes it with the token, and its API answers with the series.
    let prometheus = Prometheus::scraping(&addr, &token);
    let query = "sum(lurkbot_turns_total{source=\"api\",outcome=\"ok\"})";
    until("Prometheus has scraped the turns", || {
        value(&prometheus.query(query)) == 2.0
    })
    .await;
    let tools = prometheus.query("lurkbot_tool_calls_total{tool=\"terminal_exec\"}");
    assert_eq!(value(&tools), 1.0, "{tools:?}");
    let calls = prometheus.query("sum by (provider) (lurkbot_model_calls_total)");
    assert_eq!(calls[0]["metric"]["provider"], "openai", "{calls:?}");
    assert_eq!(value(&calls), 4.0, "{calls:?}");
    let up = prometheus.query("up{job=\"lurkbot\"}");
    assert_eq!(value(&up), 1.0, "{up:?}");

    // The Grafana dashboard in docs/ asks only for what the exposition has, in PromQL this
    // Prometheus accepts.
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/grafana-dashboard.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let exprs: Vec<String> = dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap().clone())
        .map(|t| {
            t["expr"]
                .as_str()
                .unwrap()
                .replace("$__rate_interval", "1m")
        })
        .collect();
    assert!(exprs.len() >= 15);
    for expr in &exprs {
        for name in expr
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| w.starts_with("lurkbot_"))
        {
            let family = name.trim_end_matches("_bucket");
            assert!(
                exposition.contains(&format!("# TYPE {family} ")),
                "{expr}: {family} is not exported"
            );
        }
        let (status, body) = get(
            &prometheus.addr,
            &format!("/api/v1/query?query={}", encode(expr)),
            None,
        );
        assert_eq!(status, 200, "{expr}: {body}");
    }
    drop(gw);
}

/// `[metrics] listen` serves `/metrics` without the token on a loopback port; an address off
/// loopback is refused by `doctor`, `config set` and at start, naming the setting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_listen_is_loopback_only_and_needs_no_token() {
    let t = Test::init();
    let fake = FakeProvider::start(vec![]).await;
    let env = model_env(&fake);

    let open = format!("127.0.0.1:{}", free_port());
    append_config(&t, &format!("[metrics]\nlisten = \"{open}\""));
    let gw = start_with(&t, &env);
    let mut scraped = (0, String::new());
    until("the metrics port answers", || {
        scraped = get(&open, "/metrics", None);
        scraped.0 == 200
    })
    .await;
    assert!(
        scraped.1.contains("# TYPE lurkbot_turns_total counter"),
        "{}",
        scraped.1
    );
    // Only /metrics there: nothing else of the gateway.
    assert_eq!(get(&open, "/v1/models", None).0, 404);
    drop(gw);

    let config = std::fs::read_to_string(t.path("config.toml")).unwrap();
    std::fs::write(t.path("config.toml"), config.replace(&open, "0.0.0.0:9464")).unwrap();
    let none = t.run(&["status"]);
    assert_eq!(none.status, 1);
    assert!(
        none.stderr.contains("no gateway is running for this home"),
        "{}",
        none.stderr
    );
    let doctor = t.run(&["doctor"]);
    assert_ne!(doctor.status, 0);
    assert!(
        doctor
            .stdout
            .contains("metrics.listen 0.0.0.0:9464 is not a loopback address"),
        "{}",
        doctor.stdout
    );
    let set = t.run(&["config", "set", "metrics.listen", "192.0.2.1:9464"]);
    assert_eq!(set.status, 1, "{}", set.stderr);
    assert!(set.stderr.contains("metrics.listen"), "{}", set.stderr);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let started = t.run_env(&["gateway", "--port", "0"], &env);
    assert_ne!(started.status, 0);
    assert!(
        started
            .stderr
            .contains("metrics.listen 0.0.0.0:9464 is not a loopback address"),
        "{}",
        started.stderr
    );
}

/// With several gateways (the state in PostgreSQL) every series names its gateway; a user's
/// token is refused the figures, which are every user's together.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_every_series_names_its_gateway_and_users_see_none() {
    use lurkbot_test_support::postgres::Postgres;
    let pg = Postgres::start();
    let t = crate::gateways_on_postgres::home_on(&pg, "metrics");
    assert_eq!(t.run(&["config", "set", "users.enabled", "true"]).status, 0);
    let added = t.run(&["users", "add", "alice"]);
    assert_eq!(added.status, 0, "{}", added.stderr);
    let alice = added.stdout.trim().to_string();
    let fake = FakeProvider::start(vec![]).await;
    let gw = crate::nothing_lost::start_as(&t, &fake, "gw-a");

    let (status, body) = get(&gw.addr, "/metrics", Some(&alice));
    assert_eq!(status, 403, "{body}");
    assert!(!body.contains("lurkbot_"), "{body}");
    let (status, exposition) = get(&gw.addr, "/metrics", Some(&t.gateway_token()));
    assert_eq!(status, 200, "{exposition}");
    assert!(t.run(&["status", "--json"]).json()["metrics"]["turns"].is_object());
    let samples: Vec<&str> = exposition.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(samples.len() >= 4, "{exposition}");
    for sample in samples {
        assert!(sample.contains("{gateway_id=\"gw-a\""), "{sample}");
    }
    drop(gw);
}
