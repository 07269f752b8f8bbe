//! `lurkbot dashboard [--open]`: the web UI's address for this home's gateway, with the token
//! in the URL fragment (the browser keeps a fragment to itself: it is never sent to the server
//! or written to a log).
//!
//! The token is a secret, so it is printed only to a terminal (piped or redirected output gets
//! the plain address and a hint), and `--open` never puts it in a process's arguments: the
//! browser is pointed at a private (0600) page in the home that forwards to the address. The
//! page (`.lurkbot-dashboard-*.html`, protected like every LurkBot temporary file, and no more
//! exposed than `config.toml` itself) is removed by the sweep of stale temporary files.

use std::io::IsTerminal;
use std::path::Path;

use lurkbot_core::{Config, Home, layout};

use crate::error::{CliError, CliResult};

/// Arguments of `lurkbot dashboard`.
#[derive(Debug, clap::Args)]
pub(crate) struct DashboardArgs {
    /// Also open it in the default browser (xdg-open, or open on macOS; LURKBOT_OPEN names
    /// another program).
    #[arg(long)]
    open: bool,
}

pub(crate) fn run(home_path: &Path, args: &DashboardArgs) -> CliResult {
    let home = Home::open(home_path)?;
    let config = Config::load(&home.join(layout::CONFIG))?;
    let host = match config.gateway.bind.as_str() {
        "0.0.0.0" | "" => "127.0.0.1".to_string(),
        "::" => "[::1]".to_string(),
        bind if bind.contains(':') => format!("[{bind}]"),
        bind => bind.to_string(),
    };
    // A running gateway's own address wins (it may run on `--port`); else the configured one.
    let address = match lurkbot_core::RunningGateway::find(&home)
        .filter(|g| process_alive(g.pid))
        .and_then(|g| g.loopback_addr())
    {
        Some(addr) => format!("http://{addr}/"),
        None => format!("http://{host}:{}/", config.gateway.port),
    };
    let token = super::remote::gateway_token(&home);
    let with_token = match &token {
        Some(t) => format!("{address}#token={}", fragment_encode(t)),
        None => address.clone(),
    };
    if args.open {
        open(&home, &with_token)?;
        crate::run::print_stdout(&format!("opened {address} (token passed privately)\n"))?;
    } else if std::io::stdout().is_terminal() || token.is_none() {
        crate::run::print_stdout(&format!("{with_token}\n"))?;
    } else {
        crate::run::print_stdout(&format!("{address}\n"))?;
        eprintln!(
            "the address with the token is shown only on a terminal; run `lurkbot dashboard` in one, or `lurkbot dashboard --open`"
        );
    }
    Ok(())
}

/// Whether process `pid` exists (a gateway that died leaves its record behind).
fn process_alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Percent-encodes what a fragment cannot hold as it is.
fn fragment_encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Opens `url` in the browser through a private forwarding page.
fn open(home: &Home, url: &str) -> CliResult {
    let name = format!(".lurkbot-dashboard-{}.html", lurkbot_core::random_hex(6));
    let page = home.join(&name);
    let quoted = url.replace('&', "&amp;").replace('"', "&quot;");
    let html = format!(
        "<!doctype html><meta charset=\"utf-8\"><meta name=\"referrer\" content=\"no-referrer\">\
         <meta http-equiv=\"refresh\" content=\"0;url={quoted}\"><title>LurkBot</title>\n"
    );
    lurkbot_core::write_atomic_with_mode(&page, html.as_bytes(), 0o600)?;
    let program = std::env::var("LURKBOT_OPEN")
        .ok()
        .filter(|p| !p.trim().is_empty());
    let program = program.unwrap_or_else(|| {
        if cfg!(target_os = "macos") {
            "open".into()
        } else {
            "xdg-open".into()
        }
    });
    let status = std::process::Command::new(&program).arg(&page).status();
    match status {
        Ok(s) if s.success() => Ok(()),
        outcome => {
            let _ = std::fs::remove_file(&page);
            let why = match outcome {
                Ok(s) => format!("{program} exited with {s}"),
                Err(e) => format!("cannot run {program}: {e}"),
            };
            Err(CliError::failed(
                "dashboard",
                format!(
                    "{why}; run `lurkbot dashboard` in a terminal and open the address it prints"
                ),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn tokens_are_fragment_safe() {
        assert_eq!(super::fragment_encode("aZ09-._~"), "aZ09-._~");
        assert_eq!(super::fragment_encode("a b#&/"), "a%20b%23%26%2F");
    }
}
