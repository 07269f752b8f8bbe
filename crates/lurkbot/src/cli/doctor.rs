//! `lurkbot doctor [--json]`: checks the home and prints one line per check, with what to do
//! about each problem. Exit 0 when nothing failed (warnings allowed), 1 otherwise.
//!
//! Checks: the home and its config exist; `config.toml` and every `.env` (the home's and each
//! skill's `secrets/.env`) are not readable by group or others; `config.toml` is valid; a model
//! everything else in the home is private too (a warning names what is not); a model
//! is configured and answers a one-word request (20 s limit); the gateway settings are safe
//! (bind, token, auth, origins); the IRC settings, when there are any.

use crate::error::CliResult;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::doctor_check::{Check, Status, bad, ok};
use clap::Args;
use lurkbot_core::{Config, GatewayAuth, Home, layout};

/// Flags of `lurkbot doctor`.
#[derive(Debug, Args)]
#[command(after_help = "Exit status: 0 no check failed, 1 a check failed.")]
pub(crate) struct DoctorArgs {
    /// One JSON object per check instead of text.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(home_path: &Path, args: &DoctorArgs) -> CliResult {
    let mut checks = Vec::new();
    let config_path = home_path.join(layout::CONFIG);
    if !config_path.exists() {
        checks.push(bad(
            "home",
            Status::Fail,
            format!("{} has no config.toml", home_path.display()),
            "run `lurkbot init`",
        ));
        return report(&checks, args.json);
    }
    checks.push(ok("home", home_path.display().to_string()));
    let home = Home::open(home_path)?;
    for path in secret_files(&home) {
        checks.push(permissions(&home, &path));
    }
    checks.push(private_home(&home));
    let text = std::fs::read_to_string(&config_path).unwrap_or_default();
    let config = match Config::load(&config_path).and_then(|_| Config::check(&config_path, &text)) {
        Ok((c, problems)) if problems.is_empty() => {
            checks.push(ok("config", "config.toml is valid"));
            c
        }
        Ok((c, problems)) => {
            for problem in problems {
                checks.push(bad(
                    "config",
                    Status::Fail,
                    problem.message,
                    format!("fix or remove '{}' in config.toml", problem.key),
                ));
            }
            c
        }
        Err(e) => {
            checks.push(bad(
                "config",
                Status::Fail,
                e.to_string(),
                "fix that line (lurkbot config set KEY VALUE checks values)",
            ));
            return report(&checks, args.json);
        }
    };
    checks.extend(skills(&home, &config));
    checks.push(model(&home, &config));
    checks.extend(prompt_cost(&home, &config));
    checks.extend(gateway(&home, &config));
    checks.extend(irc(&home));
    checks.extend(channels(&home, &config));
    checks.extend(super::doctor_signal::signal(&config));
    checks.extend(super::doctor_plugins::plugins(&home, &config));
    checks.push(speech(&home, &config));
    checks.push(browser(&config));
    checks.extend(users(&home, &config));
    report(&checks, args.json)
}

/// Whether the gateway is shared (`[users]`), and what turning it on or off means.
fn users(home: &Home, config: &Config) -> Option<Check> {
    let store = lurkbot_gateway::users::UserStore::of(home);
    let listed = store.load();
    if !config.users.enabled {
        let n = listed.as_ref().map(Vec::len).unwrap_or(0);
        return (n > 0).then(|| {
            bad(
                "users",
                Status::Warn,
                format!("users/users.json lists {n} user(s), but [users] enabled is false: only the gateway token signs in, and nobody's home under users/ is served"),
                "lurkbot config set users.enabled true, then restart the gateway",
            )
        });
    }
    Some(match listed {
        Err(e) => bad(
            "users",
            Status::Fail,
            e.to_string(),
            "repair or remove users/users.json; until then only the gateway token signs in",
        ),
        Ok(users) => {
            let admins = users.iter().filter(|u| u.admin).count();
            ok(
                "users",
                format!(
                    "shared gateway: {} user(s), {admins} admin(s). This home (its sessions, memory, workspace, channels) stays the owner's and the admins'; each other user has users/<name>/ and sees only it. Nothing moved when users were turned on",
                    users.len()
                ),
            )
        }
    })
}

/// The speech providers `tts` would ask, in order, or how to set one up.
fn speech(home: &Home, config: &Config) -> Check {
    let setup = lurkbot_agent::speech::tts_setup(home, config);
    let order: Vec<&str> = setup.order.iter().map(|p| p.name()).collect();
    if order.is_empty() {
        return bad(
            "speech",
            Status::Warn,
            "no speech provider: the tts tool is not offered",
            "install espeak-ng (Debian: apt-get install espeak-ng), or set [tts] base_url or OPENAI_API_KEY, or ELEVENLABS_API_KEY in the home's .env",
        );
    }
    let espeak = match &setup.espeak {
        Some(path) => format!("; espeak-ng at {}", path.display()),
        None => String::new(),
    };
    let hearing = if config.stt.base_url.is_some() {
        "voice notes transcribed through [stt]"
    } else {
        "voice notes not transcribed ([stt] base_url unset)"
    };
    ok(
        "speech",
        format!("tts asks {}{espeak}; {hearing}", order.join(", then ")),
    )
}

/// Whether the `browser` tool can start Chromium.
fn browser(config: &Config) -> Check {
    if !config.browser.enabled {
        return ok("browser", "off ([browser] enabled = false)");
    }
    match lurkbot_browser::find_executable(&config.browser.executable) {
        Some(path) => ok("browser", format!("Chromium at {}", path.display())),
        None => bad(
            "browser",
            Status::Warn,
            format!(
                "'{}' is not an executable on PATH: the browser tool fails when used",
                config.browser.executable
            ),
            "install Chromium (Debian: apt-get install chromium), or set [browser] executable, or [browser] enabled = false",
        ),
    }
}

/// The IRC settings, when the home has any (`skills/irc-cli/secrets/.env`).
fn irc(home: &Home) -> Option<Check> {
    if !lurkbot_term::IrcSessions::configured(home) {
        return None;
    }
    Some(match lurkbot_term::IrcConfig::load(home) {
        Ok(c) => ok(
            "irc",
            format!(
                "{} as {} on {}:{}{}",
                c.channel,
                c.nick,
                c.server,
                c.port,
                if c.tls { " (TLS)" } else { "" }
            ),
        ),
        Err(e) => bad(
            "irc",
            Status::Fail,
            format!("{}: {}", e.code, e.message),
            e.hint
                .unwrap_or_else(|| "fix skills/irc-cli/secrets/.env".to_string()),
        ),
    })
}

/// Every enabled channel has its credentials in the home's `.env` (the gateway would refuse
/// to start it otherwise).
fn channels(home: &Home, config: &Config) -> Vec<Check> {
    let vars = lurkbot_agent::setup::variables(home);
    config
        .channels
        .iter()
        .filter(|(_, settings)| settings.enabled)
        .filter_map(|(name, settings)| {
            let mode = settings.mode.as_deref();
            let lacking = lurkbot_channels::credentials::missing_variables(name, mode, |v| {
                vars(v).is_some_and(|value| !value.trim().is_empty())
            })?;
            Some(bad(
                "channels",
                Status::Fail,
                format!("[channels.{name}] is enabled without its credentials: the gateway will not start it"),
                lacking,
            ))
        })
        .collect()
}

/// config.toml and every .env under the home.
fn secret_files(home: &Home) -> Vec<PathBuf> {
    let mut files = vec![home.join(layout::CONFIG)];
    let env = home.join(".env");
    if env.exists() {
        files.push(env);
    }
    if let Ok(skills) = std::fs::read_dir(home.join("skills")) {
        for skill in skills.filter_map(Result::ok) {
            let env = skill.path().join("secrets/.env");
            if env.exists() {
                files.push(env);
            }
        }
    }
    files
}

fn permissions(home: &Home, path: &Path) -> Check {
    let rel = home
        .relative(path)
        .unwrap_or_else(|| path.display().to_string());
    match std::fs::metadata(path) {
        Ok(meta) if meta.permissions().mode() & 0o077 == 0 => ok(
            "permissions",
            format!("{rel} is private ({:o})", meta.permissions().mode() & 0o777),
        ),
        Ok(meta) => bad(
            "permissions",
            Status::Fail,
            format!(
                "{rel} holds secrets (keys, tokens) but is readable by group or others ({:o})",
                meta.permissions().mode() & 0o777
            ),
            format!("chmod 600 {}", path.display()),
        ),
        Err(e) => bad(
            "permissions",
            Status::Fail,
            format!("{rel}: {e}"),
            "check the file",
        ),
    }
}

/// Skills loaded with a note (a name that is not its folder's, or not an agentskills.io name)
/// and skills waiting for the owner's approval, when there are any.
fn skills(home: &Home, config: &Config) -> Vec<Check> {
    let all = lurkbot_agent::skills::discover(home, config);
    let mut checks = Vec::new();
    let noted: Vec<String> = all
        .iter()
        .filter_map(|s| s.note.as_ref().map(|n| format!("{} ({n})", s.path)))
        .collect();
    if !noted.is_empty() {
        checks.push(bad(
            "skills",
            Status::Warn,
            format!(
                "loaded as written, not as agentskills.io names them: {}",
                noted.join("; ")
            ),
            "rename the folder or the `name` to match, if you like (they load either way)",
        ));
    }
    let pending: Vec<&str> = all
        .iter()
        .filter(|s| s.pending)
        .map(|s| s.name.as_str())
        .collect();
    if !pending.is_empty() {
        checks.push(bad(
            "skills",
            Status::Warn,
            format!("not offered until you approve them: {}", pending.join(", ")),
            "read each SKILL.md, then `lurkbot skills approve NAME`",
        ));
    }
    checks
}

/// Most entries `private_home` looks at (a huge home is not walked whole).
const PRIVATE_SCAN_LIMIT: usize = 100_000;

/// Whether everything in the home is private to its user (files 0600, folders 0700, as
/// LurkBot creates them): anything readable by group or others is named (links not followed).
fn private_home(home: &Home) -> Check {
    let mut wide: Vec<String> = Vec::new();
    let mut count = 0usize;
    let mut stack = vec![home.root().to_path_buf()];
    let mut seen = 0usize;
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > PRIVATE_SCAN_LIMIT {
                stack.clear();
                break;
            }
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if meta.file_type().is_symlink() {
                continue;
            }
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                count += 1;
                if wide.len() < 5 {
                    let rel = home.relative(&entry.path()).unwrap_or_default();
                    wide.push(format!("{rel} ({mode:o})"));
                }
            }
            if meta.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    if count == 0 {
        return ok("private", "everything in the home is private to its user");
    }
    let more = if count > wide.len() {
        format!(" and {} more", count - wide.len())
    } else {
        String::new()
    };
    bad(
        "private",
        Status::Warn,
        format!("readable by group or others: {}{more}", wide.join(", ")),
        format!("chmod -R go-rwx {}", home.root().display()),
    )
}

fn model(home: &Home, config: &Config) -> Check {
    let mut failover = match lurkbot_agent::setup::failover(home, config, None) {
        Ok(f) => f,
        Err(e) => {
            let message = e.to_string();
            // The no-model message is several lines long: its first sentence is the finding
            // and the fix is given here; any other message is shown whole (its first line).
            let (detail, fix) = if message.starts_with("no model is configured") {
                (
                    "no model is configured".to_string(),
                    "run `lurkbot setup` (it finds a local model server, or asks for a provider and key)",
                )
            } else {
                (
                    message.lines().next().unwrap_or_default().to_string(),
                    "run `lurkbot setup`, or set agent.model to <provider>/<model>, e.g. openai/gpt-4o-mini",
                )
            };
            return bad("model", Status::Fail, detail, fix);
        }
    };
    let name = failover.primary().to_string();
    let answered = super::probe::one_word(&mut failover, Duration::from_secs(20));
    match answered {
        Ok(model) => ok("model", format!("{model} answers")),
        Err(super::probe::NoAnswer::Failed(e)) => bad(
            "model",
            Status::Fail,
            format!("{name} does not answer: {e}"),
            "check the API key and base URL (OPENAI_API_KEY/OPENAI_BASE_URL or ANTHROPIC_…)",
        ),
        Err(super::probe::NoAnswer::TimedOut) => bad(
            "model",
            Status::Fail,
            format!("{name} did not answer within 20 s"),
            "check the base URL and the network",
        ),
    }
}

/// ARCHITECTURE.md §9's prompt cost, when a model is configured (the tools offered depend on
/// its provider): the first request of a "hello" turn, estimated without sending it.
fn prompt_cost(home: &Home, config: &Config) -> Option<Check> {
    let failover = lurkbot_agent::setup::failover(home, config, None).ok()?;
    let agent = lurkbot_agent::Agent::new(home.clone(), config.clone(), failover);
    let budget = lurkbot_agent::PROMPT_BUDGET_TOKENS;
    Some(match agent.hello_request_tokens() {
        Ok(tokens) if tokens <= budget => ok(
            "prompt",
            format!("a hello turn's first request is about {tokens} tokens (budget {budget})"),
        ),
        Ok(tokens) => bad(
            "prompt",
            Status::Warn,
            format!(
                "a hello turn's first request is about {tokens} tokens, over the {budget} budget"
            ),
            "offer fewer tools (tools.profile, tools.deny) or shorten the workspace's bootstrap files",
        ),
        Err(e) => bad(
            "prompt",
            Status::Fail,
            e.to_string(),
            "fix the tool policy in config.toml",
        ),
    })
}

fn gateway(home: &Home, config: &Config) -> Vec<Check> {
    let g = &config.gateway;
    let mut checks = Vec::new();
    let loopback = g
        .bind
        .parse::<std::net::IpAddr>()
        .map(|ip| ip.is_loopback())
        .unwrap_or(false);
    let token = lurkbot_agent::setup::variables(home)("LURKBOT_GATEWAY_TOKEN")
        .or_else(|| g.token.clone())
        .filter(|t| !t.trim().is_empty());
    checks.push(if loopback {
        ok("gateway.bind", format!("{} is loopback", g.bind))
    } else if token.is_some() && g.auth == GatewayAuth::Token {
        bad(
            "gateway.bind",
            Status::Warn,
            format!("{} is reachable from the network", g.bind),
            "keep the token secret; prefer 127.0.0.1 behind a TLS proxy",
        )
    } else {
        bad(
            "gateway.bind",
            Status::Fail,
            format!("{} is public without a token", g.bind),
            "set gateway.bind = \"127.0.0.1\" or a token (lurkbot init)",
        )
    });
    checks.push(match (&g.auth, &token) {
        (GatewayAuth::None, _) if loopback => bad(
            "gateway.auth",
            Status::Warn,
            "auth = \"none\": any local process may use the gateway",
            "set gateway.auth = \"token\"",
        ),
        (GatewayAuth::None, _) => bad(
            "gateway.auth",
            Status::Fail,
            "auth = \"none\" on a non-loopback bind (the gateway refuses to start)",
            "set gateway.auth = \"token\"",
        ),
        (GatewayAuth::Token, None) => bad(
            "gateway.token",
            Status::Fail,
            "no token",
            "run `lurkbot init` or set LURKBOT_GATEWAY_TOKEN",
        ),
        (GatewayAuth::Token, Some(t)) if t.len() < 24 => bad(
            "gateway.token",
            Status::Warn,
            format!("the token has only {} characters", t.len()),
            "use at least 24 random characters",
        ),
        (GatewayAuth::Token, Some(_)) => ok("gateway.token", "set"),
    });
    for origin in &g.allowed_origins {
        let sane = (origin.starts_with("http://") || origin.starts_with("https://"))
            && origin.matches('/').count() == 2
            && !origin.contains('*');
        checks.push(if sane {
            ok("gateway.allowed_origins", origin.clone())
        } else {
            bad(
                "gateway.allowed_origins",
                Status::Fail,
                format!("'{origin}' is not an origin"),
                "use scheme://host[:port] without a path or wildcard",
            )
        });
    }
    checks
}

/// The status word, coloured (green, yellow, red) when `colour`.
fn mark(status: Status, colour: bool) -> String {
    let (word, code) = match status {
        Status::Ok => ("ok  ", "32"),
        Status::Warn => ("warn", "33"),
        Status::Fail => ("FAIL", "1;31"),
    };
    if colour {
        format!("\x1b[{code}m{word}\x1b[0m")
    } else {
        word.to_string()
    }
}

fn report(checks: &[Check], json: bool) -> CliResult {
    use std::io::IsTerminal;
    let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let mut out = String::new();
    for c in checks {
        if json {
            out.push_str(&serde_json::to_string(c)?);
        } else {
            let mark = mark(c.status, colour);
            out.push_str(&format!("{mark} {:<24} {}", c.check, c.detail));
            if let Some(fix) = &c.fix {
                out.push_str(&format!(" — {fix}"));
            }
        }
        out.push('\n');
    }
    crate::run::print_stdout(&out)?;
    // The failed checks were printed above: the status says the rest.
    crate::error::status(u8::from(checks.iter().any(|c| c.status == Status::Fail)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_are_coloured_only_when_asked() {
        assert_eq!(mark(Status::Fail, false), "FAIL");
        assert_eq!(mark(Status::Fail, true), "\x1b[1;31mFAIL\x1b[0m");
        assert_eq!(mark(Status::Ok, true), "\x1b[32mok  \x1b[0m");
        assert_eq!(mark(Status::Warn, true), "\x1b[33mwarn\x1b[0m");
    }
}
