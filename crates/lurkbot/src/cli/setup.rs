//! `lurkbot setup`: from a fresh home to a first conversation. It asks (on a terminal) or takes
//! from flags a provider, a model and a key, writes the model to config.toml and the base URL
//! and key to the home's `.env` (0600; the key is read from the terminal without echo, or from
//! stdin with `--key-stdin`, never from the command line), checks them with one small call, and
//! says how to chat. A server on this machine (Ollama, llama-server, vLLM) needs no key: one
//! answering at a known address is found and offered first (`local_models.rs`). A gateway
//! running on the home is told at once (it reloads), so its API and web UI answer without a
//! restart.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::time::Duration;

use clap::Args;
use lurkbot_core::{Home, layout};

use crate::error::{CliError, CliResult};

/// Flags of `lurkbot setup`.
#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 set up and checked, 1 the check failed (the settings are kept), 2 a bad flag.\n\nExamples:\n  lurkbot setup                                   # asks\n  printf %s \"$KEY\" | lurkbot setup --provider openai --model gpt-4o-mini --key-stdin\n  lurkbot setup --provider openai --model llama3.2 --base-url http://127.0.0.1:11434/v1"
)]
pub(crate) struct SetupArgs {
    /// `openai` (any OpenAI-compatible server) or `anthropic`.
    #[arg(long, value_parser = ["openai", "anthropic"])]
    provider: Option<String>,
    /// The model's name at the provider (`gpt-4o-mini`, `claude-sonnet-4-5`, `llama3.2`).
    #[arg(long)]
    model: Option<String>,
    /// The API's base URL with its `/v1` (default the provider's public one).
    #[arg(long)]
    base_url: Option<String>,
    /// Read the API key from standard input (the key never goes on a command line).
    #[arg(long)]
    key_stdin: bool,
    /// Write the settings without the check call.
    #[arg(long)]
    no_check: bool,
}

pub(crate) fn run(home_path: &Path, args: &SetupArgs) -> CliResult {
    let home = Home::open(home_path)?;
    if !home.join(layout::CONFIG).exists() {
        let skills = lurkbot_term::bundled_skills(&lurkbot_term::default_registry());
        lurkbot_core::init_home(&home, &skills)?;
    }
    let asking = std::io::stdin().is_terminal() && !args.key_stdin;
    let ask = |question: &str, default: &str| -> Result<String, CliError> {
        if !asking {
            return Ok(default.to_string());
        }
        eprint!("{question} [{default}]: ");
        let _ = std::io::stderr().flush();
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
        let line = line.trim();
        Ok(if line.is_empty() { default } else { line }.to_string())
    };
    // A model server on this machine is the way to a first reply without a paid key: offered
    // first when asking, and taken when nothing else was given (no base URL, no key).
    // A key on stdin means a keyed provider was chosen: nothing is looked for then.
    let looking =
        args.base_url.is_none() && !args.key_stdin && args.provider.as_deref() != Some("anthropic");
    let found = if looking {
        super::local_models::find()
    } else {
        Vec::new()
    };
    for server in &found {
        eprintln!(
            "found {} at {} with {} model(s): {}",
            server.name,
            server.base,
            server.models.len(),
            server
                .models
                .iter()
                .take(8)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let vars = lurkbot_agent::setup::variables(&home);
    let has_key = vars("OPENAI_API_KEY").is_some();
    // A found server is the default only while no key is set: with one, the default stays the
    // base URL the key is for, and a found server is taken only when its URL is typed (the key
    // is never sent to a port any local user could have opened).
    let local = found.first().filter(|_| !has_key);
    let name = match &args.provider {
        Some(p) => p.clone(),
        None => ask(
            "Provider (openai: any OpenAI-compatible server; anthropic)",
            "openai",
        )?,
    };
    let Some(p) = lurkbot_agent::setup::provider_vars(&name) else {
        return Err(CliError::usage(
            "setup",
            format!("unknown provider '{name}': openai or anthropic"),
        ));
    };
    let local = local.filter(|_| name == "openai");
    let base = match &args.base_url {
        Some(b) => b.clone(),
        None => match (local, found.first().filter(|_| name == "openai")) {
            (Some(server), _) => ask(
                &format!(
                    "Base URL ({} found here; another server's, or {})",
                    server.name, p.default_base
                ),
                &server.base,
            )?,
            (None, Some(server)) => ask(
                &format!(
                    "Base URL ({} found at {}: type that URL to use it; {} stays in .env)",
                    server.name, server.base, p.key
                ),
                &vars(p.base).unwrap_or_else(|| p.default_base.to_string()),
            )?,
            (None, None) => ask(
                "Base URL (a local server such as Ollama: http://127.0.0.1:11434/v1)",
                &vars(p.base).unwrap_or_else(|| p.default_base.to_string()),
            )?,
        },
    };
    // A server found here, chosen by typing its URL while a key is set: the key would go to it
    // with every request. Only a plain yes sends it; anything else changes nothing.
    let chosen = base.trim().trim_end_matches('/');
    let typed_found = found.iter().any(|s| s.base == chosen)
        && vars(p.base).as_deref().map(|b| b.trim_end_matches('/')) != Some(chosen);
    if typed_found && args.base_url.is_none() && vars(p.key).is_some() {
        let answer = ask(
            &format!(
                "{} is set in .env and would be sent to {base} with every request. Send it there? (yes/no)",
                p.key
            ),
            "no",
        )?;
        if answer != "yes" {
            return Err(CliError::usage(
                "setup",
                format!(
                    "nothing written: {} is not sent to {base}. Remove {} from .env first to use that server without it, or answer yes",
                    p.key, p.key
                ),
            ));
        }
    }
    let listed = found.iter().find(|s| s.base == base.trim_end_matches('/'));
    let model = match &args.model {
        Some(m) => m.clone(),
        None => match listed.and_then(|s| s.models.first()) {
            Some(first) => ask("Model (one the server lists)", first)?,
            None => ask("Model", p.default_model)?,
        },
    };
    let local = url_is_local(&base);
    let key = if args.key_stdin {
        let mut key = String::new();
        std::io::stdin().lock().read_line(&mut key)?;
        key.trim().to_string()
    } else if asking && !local {
        read_hidden(&format!("{} (not shown)", p.key))?
    } else {
        String::new()
    };
    if key.is_empty() && !local && lurkbot_agent::setup::variables(&home)(p.key).is_none() {
        // Looked for a local server and found none: say so, and the keyless way.
        let none_found = if looking && found.is_empty() {
            "no model server was found on this machine (Ollama on 11434, llama.cpp's server on 8080, LM Studio on 1234; LURKBOT_LOCAL_MODEL_URLS names others): start one and run `lurkbot setup` again for a reply without a key, or — "
        } else {
            ""
        };
        return Err(CliError::usage(
            "setup",
            format!(
                "{none_found}{base} needs an API key: pass it on stdin with --key-stdin (never on the command line)"
            ),
        ));
    }
    let model_ref =
        lurkbot_agent::setup::write_model_choice(&home, &name, &model, &base, Some(key.as_str()))
            .map_err(|e| CliError::usage("setup", e))?;
    let mut out = format!(
        "model: {model_ref} (agent.model in config.toml)\n{}: {base} (.env)\n",
        p.base
    );
    if !key.is_empty() {
        out.push_str(&format!("{}: set (.env, 0600)\n", p.key));
    }
    crate::run::print_stdout(&out)?;
    if !args.no_check {
        check(&home, &model_ref)?;
    }
    // A gateway already running on this home takes the new model now.
    let next = if super::reload::tell_running_gateway(&home) {
        "Next: `lurkbot chat` to talk here; the running gateway uses the new model now (`lurkbot dashboard --open` for its web UI).\n"
    } else {
        "Next: `lurkbot chat` to talk here, or `lurkbot gateway` and `lurkbot dashboard --open` for the web UI.\n"
    };
    crate::run::print_stdout(next)?;
    Ok(())
}

/// Whether `url` names this machine (a local server needs no key).
fn url_is_local(url: &str) -> bool {
    let host = url
        .split("://")
        .nth(1)
        .and_then(|rest| rest.split(['/', '?']).next())
        .map(|authority| lurkbot_core::split_host_port(authority).0)
        .unwrap_or_default();
    host == "localhost"
        || host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// One small call with the new settings: the model answers, or the error says what is wrong.
fn check(home: &Home, model_ref: &str) -> CliResult {
    let config = lurkbot_core::Config::load(&home.join(layout::CONFIG))?;
    let mut failover = lurkbot_agent::setup::failover(home, &config, Some(model_ref))
        .map_err(|e| CliError::failed("setup", e.to_string()))?;
    let answered = super::probe::one_word(&mut failover, Duration::from_secs(30));
    match answered {
        Ok(model) => {
            crate::run::print_stdout(&format!("check: {model} answers\n"))?;
            Ok(())
        }
        Err(super::probe::NoAnswer::Failed(e)) => Err(CliError::failed(
            "setup",
            format!(
                "{model_ref} does not answer: {e}. The settings are written; fix the key or base URL and run `lurkbot setup` again"
            ),
        )),
        Err(_) => Err(CliError::failed(
            "setup",
            format!(
                "{model_ref} did not answer within 30 s. The settings are written; run `lurkbot doctor` to check again"
            ),
        )),
    }
}

/// A line read from the terminal with echo off (the key is not shown).
pub(crate) fn read_hidden(prompt: &str) -> Result<String, CliError> {
    eprint!("{prompt}: ");
    let _ = std::io::stderr().flush();
    let stdin = std::io::stdin();
    let saved = rustix::termios::tcgetattr(&stdin).ok();
    if let Some(saved) = &saved {
        let mut quiet = saved.clone();
        quiet.local_modes.remove(rustix::termios::LocalModes::ECHO);
        let _ = rustix::termios::tcsetattr(&stdin, rustix::termios::OptionalActions::Now, &quiet);
    }
    let mut line = String::new();
    let read = stdin.lock().read_line(&mut line);
    if let Some(saved) = &saved {
        let _ = rustix::termios::tcsetattr(&stdin, rustix::termios::OptionalActions::Now, saved);
    }
    eprintln!();
    read?;
    Ok(line.trim().to_string())
}
