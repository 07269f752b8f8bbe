//! `lurkbot gateway install|uninstall|status`: the gateway as a systemd user service.
//!
//! `install` writes `~/.config/systemd/user/lurkbot-gateway.service` (`$XDG_CONFIG_HOME` is
//! honoured) running this binary on this home with `Restart=on-failure` and `ExecReload`
//! sending SIGHUP, then enables and starts it with `systemctl --user`. A unit file LurkBot did
//! not write is never replaced without `--force`. `status` combines what systemd says with the
//! gateway's own record (`run/gateway.json`) and its `/health`. `LURKBOT_SYSTEMCTL` names
//! another `systemctl` program.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use clap::Subcommand;
use lurkbot_core::{Home, RunningGateway};

use crate::error::{CliError, CliResult};

/// The unit's name.
pub(crate) const UNIT: &str = "lurkbot-gateway.service";
/// The first line of every unit file LurkBot writes.
const MARKER: &str = "# Written by `lurkbot gateway install`";

/// Subcommands of `lurkbot gateway`.
#[derive(Debug, Subcommand)]
pub(crate) enum ServiceArgs {
    /// Write and start a systemd user unit running this gateway (Restart=on-failure).
    Install {
        /// Write the unit and reload systemd, but do not enable or start it.
        #[arg(long)]
        no_start: bool,
        /// Replace a unit file that LurkBot did not write.
        #[arg(long)]
        force: bool,
    },
    /// Stop and disable the service and remove its unit file.
    Uninstall,
    /// Whether the service is installed, enabled and running, and whether the gateway answers.
    Status,
}

pub(crate) fn run(home_path: &Path, args: &ServiceArgs) -> CliResult {
    match args {
        ServiceArgs::Install { no_start, force } => install(home_path, *no_start, *force),
        ServiceArgs::Uninstall => uninstall(),
        ServiceArgs::Status => status(home_path),
    }
}

/// Where user units live.
fn unit_path() -> Result<PathBuf, CliError> {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .ok_or_else(|| CliError::usage("gateway", "neither XDG_CONFIG_HOME nor HOME is set"))?;
    Ok(config.join("systemd/user").join(UNIT))
}

/// `text` as one word of a systemd command line: quoted, with `\`, `"`, `%` and `$` escaped.
fn systemd_word(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '%' => out.push_str("%%"),
            '$' => out.push_str("$$"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The unit file for `binary` serving `home`.
pub(crate) fn unit_text(binary: &Path, home: &Path) -> String {
    let description = home.display().to_string().replace(['%', '\n'], "");
    format!(
        "{MARKER}; `lurkbot gateway uninstall` removes it.\n\
         [Unit]\n\
         Description=LurkBot gateway ({description})\n\
         After=network-online.target\n\
         Wants=network-online.target\n\
         \n\
         [Service]\n\
         Type=simple\n\
         ExecStart={} --home {} gateway\n\
         ExecReload=/bin/kill -HUP $MAINPID\n\
         Restart=on-failure\n\
         RestartSec=5\n\
         NoNewPrivileges=yes\n\
         UMask=0077\n\
         \n\
         [Install]\n\
         WantedBy=default.target\n",
        systemd_word(&binary.display().to_string()),
        systemd_word(&home.display().to_string()),
    )
}

fn systemctl(args: &[&str]) -> Result<String, String> {
    let program = std::env::var("LURKBOT_SYSTEMCTL").unwrap_or_else(|_| "systemctl".into());
    let out = Command::new(&program)
        .arg("--user")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if out.status.success() {
        Ok(text)
    } else {
        let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
        Err(if err.is_empty() { text } else { err })
    }
}

fn install(home_path: &Path, no_start: bool, force: bool) -> CliResult {
    let home = Home::open(home_path)?;
    let binary = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map_err(|e| {
            CliError::failed("gateway", format!("cannot find this program's path: {e}"))
        })?;
    let home_dir = home
        .root()
        .canonicalize()
        .unwrap_or_else(|_| home.root().to_path_buf());
    // A line break in a path would start a line of its own in the unit (a directive of the
    // path's choosing): such paths are refused, whatever the quoting.
    for (what, p) in [("the home", &home_dir), ("this program's path", &binary)] {
        if p.to_string_lossy().chars().any(char::is_control) {
            return Err(CliError::usage(
                "gateway",
                format!(
                    "{what} ({}) holds a control character (a line break?), which cannot go into a systemd unit; move it to a plain path",
                    p.display().to_string().escape_debug()
                ),
            ));
        }
    }
    let path = unit_path()?;
    if let Ok(existing) = std::fs::read_to_string(&path)
        && !existing.starts_with(MARKER)
        && !force
    {
        return Err(CliError::usage(
            "gateway",
            format!(
                "{} exists and was not written by LurkBot; move it away or pass --force to replace it",
                path.display()
            ),
        ));
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::failed("gateway", format!("{}: {e}", dir.display())))?;
    }
    lurkbot_core::write_atomic(&path, unit_text(&binary, &home_dir).as_bytes())?;
    println!("wrote {}", path.display());
    let mut steps: Vec<Vec<&str>> = vec![vec!["daemon-reload"]];
    if !no_start {
        steps.push(vec!["enable", "--now", UNIT]);
    }
    for step in &steps {
        if let Err(e) = systemctl(step) {
            return Err(CliError::failed(
                "gateway",
                format!(
                    "systemctl --user {} failed: {e}\nthe unit is written; once a user systemd runs (log in on a console or ssh), run: systemctl --user daemon-reload && systemctl --user enable --now {UNIT}",
                    step.join(" ")
                ),
            ));
        }
    }
    if no_start {
        println!("start it with: systemctl --user enable --now {UNIT}");
    } else {
        println!("enabled and started {UNIT}");
    }
    println!(
        "to keep it running while you are logged out: loginctl enable-linger {}",
        std::env::var("USER").unwrap_or_else(|_| "$USER".into())
    );
    println!(
        "logs: lurkbot logs -f (or journalctl --user -u {UNIT}); reload config: systemctl --user reload {UNIT}"
    );
    Ok(())
}

fn uninstall() -> CliResult {
    let path = unit_path()?;
    let Ok(existing) = std::fs::read_to_string(&path) else {
        return Err(CliError::failed(
            "gateway",
            format!("no unit at {}: nothing to uninstall", path.display()),
        ));
    };
    if !existing.starts_with(MARKER) {
        return Err(CliError::usage(
            "gateway",
            format!(
                "{} was not written by LurkBot; remove it by hand",
                path.display()
            ),
        ));
    }
    // Stopping may fail when systemd never loaded it; the file goes either way.
    if let Err(e) = systemctl(&["disable", "--now", UNIT]) {
        eprintln!("systemctl --user disable --now {UNIT}: {e}");
    }
    std::fs::remove_file(&path)
        .map_err(|e| CliError::failed("gateway", format!("{}: {e}", path.display())))?;
    let _ = systemctl(&["daemon-reload"]);
    println!("removed {}", path.display());
    Ok(())
}

fn status(home_path: &Path) -> CliResult {
    let path = unit_path()?;
    let installed = path.exists();
    let mut lines = Vec::new();
    if installed {
        lines.push(format!("unit: {}", path.display()));
        let enabled = systemctl(&["is-enabled", UNIT]).unwrap_or_else(|e| e);
        let active = systemctl(&["is-active", UNIT]).unwrap_or_else(|e| e);
        lines.push(format!("systemd: {enabled}, {active}"));
    } else {
        lines.push(format!(
            "unit: not installed ({}; `lurkbot gateway install` writes it)",
            path.display()
        ));
    }
    let running = Home::open(home_path)
        .ok()
        .and_then(|h| RunningGateway::find(&h));
    let answering = running
        .as_ref()
        .and_then(RunningGateway::loopback_addr)
        .is_some_and(health);
    match &running {
        Some(r) if answering => lines.push(format!(
            "gateway: running (pid {}) on http://{}/, /health answers",
            r.pid, r.addr
        )),
        Some(r) => lines.push(format!(
            "gateway: not answering (recorded pid {} on {}; it may have stopped uncleanly)",
            r.pid, r.addr
        )),
        None => lines.push("gateway: not running for this home".to_string()),
    }
    lines.extend(durable_state(home_path));
    crate::run::print_stdout(&format!("{}\n", lines.join("\n")))?;
    if answering {
        Ok(())
    } else {
        // systemctl's convention: 3 means "not running".
        crate::error::status(3)
    }
}

/// What the state store holds unfinished: turns to resume and messages not sent (nothing when
/// no gateway ever ran here; the store is not created by looking).
fn durable_state(home_path: &Path) -> Vec<String> {
    let Ok(home) = Home::open(home_path) else {
        return Vec::new();
    };
    let store = match super::state::open_existing(&home) {
        Ok(Some(store)) => store,
        Ok(None) => return Vec::new(),
        Err(e) => return vec![format!("state: {e}")],
    };
    let [queued, running, _, _] = store.turn_counts().unwrap_or_default();
    let (pending, failed) = store.outbox_counts().unwrap_or_default();
    let mut lines = vec![format!(
        "turns: {} unfinished (resumed at the gateway's start)",
        queued + running
    )];
    let mut holders = std::collections::BTreeMap::<String, usize>::new();
    let mut scheduler = None;
    for lease in store.leases().unwrap_or_default() {
        if lease.name.starts_with("turn:") {
            *holders.entry(lease.owner).or_default() += 1;
        } else if lease.name == "scheduler" {
            scheduler = Some(lease.owner);
        }
    }
    for (owner, turns) in holders {
        lines.push(format!("gateway {owner}: runs {turns} of them"));
    }
    if let Some(owner) = scheduler {
        lines.push(format!("cron jobs and heartbeat: run by gateway {owner}"));
    }
    lines.push(if failed > 0 {
        format!("outbox: {pending} pending, {failed} failed (lurkbot outbox shows them)")
    } else {
        format!("outbox: {pending} pending, none failed")
    });
    lines
}

/// Whether `GET /health` answers 200 within a second.
fn health(addr: std::net::SocketAddr) -> bool {
    let Ok(mut stream) = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.1 200")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_and_escaped_for_systemd() {
        assert_eq!(systemd_word("/a b/c"), "\"/a b/c\"");
        assert_eq!(systemd_word("x\"%$\\"), "\"x\\\"%%$$\\\\\"");
    }
}
