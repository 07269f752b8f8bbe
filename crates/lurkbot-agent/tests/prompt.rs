//! The system prompt: snapshots pin it for representative contexts (update them with
//! `LURKBOT_UPDATE_SNAPSHOTS=1 cargo test -p lurkbot-agent --test main prompt` and review the diff),
//! and real turns check the per-session bootstrap rules.

use lurkbot_agent::ToolBox;
use lurkbot_agent::{
    PromptInput, SessionKind, SkillEntry, bootstrap, build_system_prompt as build,
};
use lurkbot_core::{PromptMode, SessionKey};
use lurkbot_llm::fake::Step;

use crate::common::{agent, setup};

fn snapshot(name: &str, actual: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(format!("{name}.txt"));
    if std::env::var_os("LURKBOT_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "{} is missing; run with LURKBOT_UPDATE_SNAPSHOTS=1",
            path.display()
        )
    });
    assert_eq!(actual, expected, "prompt snapshot {name} changed");
}

fn input<'a>(
    mode: PromptMode,
    kind: SessionKind,
    session: &'a str,
    tools: &'a [std::sync::Arc<lurkbot_llm::ToolSpec>],
    skills: &'a [SkillEntry],
) -> PromptInput<'a> {
    PromptInput {
        mode,
        tools,
        skills,
        agent_id: "main",
        session,
        kind,
        model: "openai/gpt-4o-mini",
        date: "2026-11-21",
        host: "box",
        os: "linux (x86_64)",
        thinking: "off",
        sandbox: false,
        summary: None,
    }
}

#[test]
fn snapshots_of_representative_prompts() {
    let tools: Vec<_> = ["terminal_exec", "read", "session_status"]
        .iter()
        .map(|n| std::sync::Arc::new(ToolBox::builtin().get(n).unwrap().spec()))
        .collect();
    let skills = vec![
        SkillEntry {
            name: "rss-cli".into(),
            description: "terminal_exec rss: subscribe to feeds".into(),
            location: "skills/rss-cli/SKILL.md".into(),
        },
        SkillEntry {
            // Found elsewhere than `skills/<name>/`: its location is named.
            name: "notes".into(),
            description: "Keep notes.".into(),
            location: "workspace/skills/notes/SKILL.md".into(),
        },
    ];
    let files = vec![
        ("AGENTS.md".to_string(), "Be brief.".to_string()),
        ("SOUL.md".to_string(), "Warm and dry.".to_string()),
    ];
    let main = input(
        PromptMode::Full,
        SessionKind::Direct,
        "agent:main:main",
        &tools,
        &skills,
    );
    snapshot("full_main", &build(&main, &files));
    // Deterministic: equal inputs, equal prompts.
    assert_eq!(build(&main, &files), build(&main, &files));

    let mut group = input(
        PromptMode::Full,
        SessionKind::Group,
        "agent:main:group:irc:#lurk",
        &tools[1..],
        &skills,
    );
    group.sandbox = true;
    group.summary = Some("We planned a trip.");
    snapshot("full_group_sandbox_summary", &build(&group, &files[..1]));

    let sub = input(
        PromptMode::Minimal,
        SessionKind::Subagent,
        "agent:main:subagent:fix",
        &tools[..2],
        &skills,
    );
    snapshot("minimal_subagent", &build(&sub, &files[..1]));

    let none = input(
        PromptMode::None,
        SessionKind::Direct,
        "agent:main:main",
        &tools,
        &skills,
    );
    snapshot("none", &build(&none, &files));
}

#[test]
fn bootstrap_files_per_session_kind() {
    let dir = tempfile::tempdir().unwrap();
    let home = lurkbot_core::Home::open(dir.path()).unwrap();
    let ws = home.join("workspace");
    std::fs::create_dir_all(&ws).unwrap();
    for name in lurkbot_agent::BOOTSTRAP_FILES {
        std::fs::write(ws.join(name), format!("content of {name}")).unwrap();
    }
    std::fs::write(ws.join("USER.md"), "  \n").unwrap();
    let names = |kind, first| -> Vec<String> {
        bootstrap(&home, kind, first)
            .into_iter()
            .map(|(n, _)| n)
            .collect()
    };
    assert_eq!(
        names(SessionKind::Direct, true),
        [
            "AGENTS.md",
            "SOUL.md",
            "TOOLS.md",
            "IDENTITY.md",
            "HEARTBEAT.md",
            "MEMORY.md",
            "BOOTSTRAP.md"
        ]
    );
    assert_eq!(
        names(SessionKind::Direct, false),
        [
            "AGENTS.md",
            "SOUL.md",
            "TOOLS.md",
            "IDENTITY.md",
            "HEARTBEAT.md",
            "MEMORY.md"
        ]
    );
    assert_eq!(
        names(SessionKind::Group, false),
        [
            "AGENTS.md",
            "SOUL.md",
            "TOOLS.md",
            "IDENTITY.md",
            "HEARTBEAT.md"
        ]
    );
    assert_eq!(
        names(SessionKind::Subagent, true),
        ["AGENTS.md", "TOOLS.md"]
    );
    // A HEARTBEAT.md of comments only (the template) has no task: it is not injected.
    std::fs::write(
        ws.join("HEARTBEAT.md"),
        "# HEARTBEAT.md\n# - a task goes here\n\n",
    )
    .unwrap();
    assert!(!names(SessionKind::Direct, false).contains(&"HEARTBEAT.md".to_string()));
    std::fs::write(ws.join("HEARTBEAT.md"), "content of HEARTBEAT.md").unwrap();
    // Over-long files are trimmed to about 18,000 characters each, so all eight fit the total.
    for name in lurkbot_agent::BOOTSTRAP_FILES {
        std::fs::write(ws.join(name), "x".repeat(25_000)).unwrap();
    }
    let files = bootstrap(&home, SessionKind::Direct, true);
    let total: usize = files.iter().map(|(_, t)| t.chars().count()).sum();
    assert!(total <= lurkbot_agent::TOTAL_MAX_CHARS, "{total}");
    assert_eq!(files.len(), 8);
    assert!(
        files
            .iter()
            .all(|(n, t)| t.contains(&format!("{n} was cut")))
    );
}

#[tokio::test]
async fn real_turns_apply_the_rules() {
    let s = setup(vec![
        Step::text("hello"),
        Step::text("again"),
        Step::text("sub"),
    ])
    .await;
    let ws = s.home.join("workspace");
    std::fs::write(ws.join("BOOTSTRAP.md"), "FIRST RUN RITUAL").unwrap();
    std::fs::write(ws.join("MEMORY.md"), "PRIVATE MEMORY").unwrap();
    let mut a = agent(&s, "openai/m", "");
    a.turn(&SessionKey::main(), "hi", &mut |_| {})
        .await
        .unwrap();
    a.turn(&SessionKey::main(), "hi", &mut |_| {})
        .await
        .unwrap();
    let sub = SessionKey::parse("agent:main:subagent:task1").unwrap();
    a.turn(&sub, "do it", &mut |_| {}).await.unwrap();
    let systems: Vec<String> = s
        .fake
        .requests()
        .iter()
        .map(|r| {
            r.body["messages"][0]["content"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert!(systems[0].contains("FIRST RUN RITUAL") && systems[0].contains("PRIVATE MEMORY"));
    assert!(!systems[1].contains("FIRST RUN RITUAL") && systems[1].contains("PRIVATE MEMORY"));
    assert!(systems[1].contains("## Silent Replies"));
    // Sub-agents: minimal mode, AGENTS.md and TOOLS.md only.
    assert!(systems[2].contains("Be brief.") && !systems[2].contains("PRIVATE MEMORY"));
    assert!(
        systems[2].contains("## Subagent Context") && !systems[2].contains("## Silent Replies")
    );
    assert!(systems[2].contains("Runtime: agent=main | session=agent:main:subagent:task1"));
}
