//! Shared set-up of the agent tests: a home with a workspace and the scripted provider.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use lurkbot_agent::Agent;
use lurkbot_core::{Config, Home, SessionKey};
use lurkbot_llm::Failover;
use lurkbot_llm::fake::{FakeProvider, Step};
use serde_json::Value;

pub(crate) struct Setup {
    pub(crate) _dir: tempfile::TempDir,
    pub(crate) home: Home,
    pub(crate) fake: FakeProvider,
}

pub(crate) async fn setup(steps: Vec<Step>) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::open(&dir.path().join("home")).unwrap();
    std::fs::create_dir_all(home.join("workspace")).unwrap();
    std::fs::write(home.join("workspace/AGENTS.md"), "Be brief.\n").unwrap();
    let fake = FakeProvider::start(steps).await;
    Setup {
        _dir: dir,
        home,
        fake,
    }
}

pub(crate) fn agent(s: &Setup, model: &str, config: &str) -> Agent {
    let url = s.fake.url.clone();
    let lookup = move |name: &str| match name {
        "OPENAI_BASE_URL" => Some(format!("{url}/v1")),
        "ANTHROPIC_BASE_URL" => Some(url.clone()),
        _ => None,
    };
    let failover = Failover::new(vec![model.parse().unwrap()], &lookup, None).unwrap();
    // The executor reads config.toml from the home, as in production.
    std::fs::write(s.home.join("config.toml"), config).unwrap();
    let config = Config::parse(std::path::Path::new("config.toml"), config).unwrap();
    Agent::new(s.home.clone(), config, failover)
}

pub(crate) fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|t| {
                    t["function"]["name"]
                        .as_str()
                        .or(t["name"].as_str())
                        .unwrap()
                        .to_string()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Runs one turn on `session` in which the model calls `tool` once per argument set, then answers; returns
/// each call's result text and whether it failed.
pub(crate) async fn call_each_in(
    s: &Setup,
    session: &SessionKey,
    config: &str,
    tool: &str,
    calls: &[Value],
) -> Vec<(String, bool)> {
    let before = s.fake.requests().len();
    let steps: Vec<(String, &str, Value)> = calls
        .iter()
        .enumerate()
        .map(|(i, args)| (format!("c{i}"), tool, args.clone()))
        .collect();
    let refs: Vec<(&str, &str, Value)> = steps
        .iter()
        .map(|(id, t, a)| (id.as_str(), *t, a.clone()))
        .collect();
    s.fake.push(vec![Step::calls(&refs), Step::text("done")]);
    let mut a = agent(s, "openai/m", config);
    a.turn(session, "go", &mut |_| {}).await.unwrap();
    let requests = s.fake.requests();
    let last = &requests[before + 1].body;
    last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .rev()
        .take(calls.len())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .map(|m| {
            let text = m["content"].as_str().unwrap().to_string();
            let failed = text.contains("is_error=\"true\"") || text.contains("[error]");
            (text, failed)
        })
        .collect()
}
