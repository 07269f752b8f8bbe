//! `lurkbot channels login signal`: Signal is reached through signal-cli, whose account must be
//! linked to a phone (LurkBot as a device of the owner's or a dedicated number, as Signal
//! Desktop is) or registered. With `[channels.signal] cli` set, the command runs `signal-cli
//! link -n LurkBot` itself and draws the `sgnl://linkdevice` code to scan in Signal's *Linked
//! devices*, returning once signal-cli says which account it joined; without it, it says what
//! to run beside the daemon you start yourself.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use lurkbot_core::{Config, Home, RunningGateway, layout};

use crate::error::{CliError, CliResult};

fn refuse(message: impl Into<String>) -> CliError {
    CliError::failed("channels", message)
}

/// The steps to take by hand when LurkBot does not run signal-cli.
fn by_hand(account: &str, url: &str) -> String {
    let listen = url.trim_start_matches("http://");
    format!(
        "LurkBot reaches Signal through signal-cli, a separate program (its GitHub releases; \
         version 0.14.5 or newer).\n\
         Link it to your phone, as Signal Desktop is (on your phone: Settings → Linked devices):\n\
         \x20 signal-cli link -n LurkBot        # scan the sgnl:// code it prints\n\
         or register a number of its own (a dedicated number is best):\n\
         \x20 signal-cli -a {account} register   # add --captcha if Signal asks for one\n\
         \x20 signal-cli -a {account} verify CODE\n\
         Then run the daemon LurkBot talks to, and start the gateway:\n\
         \x20 signal-cli -a {account} daemon --http {listen}\n\
         Or set [channels.signal] cli = \"signal-cli\" and LurkBot runs the daemon itself (and \
         this command links the device).\n"
    )
}

pub(crate) fn login(home_path: &Path) -> CliResult {
    let home = Home::open(home_path)?;
    let config = Config::load(&home.join(layout::CONFIG))?;
    let Some(settings) = config.channels.get("signal") else {
        return Err(refuse(
            "no [channels.signal] in config.toml: add one with account = \"+15550001111\" \
             (the guide's Signal page)",
        ));
    };
    let account = settings.account.clone().unwrap_or_default();
    let Some(cli) = settings.cli.as_deref() else {
        let url = settings
            .base_url
            .as_deref()
            .unwrap_or(lurkbot_core::SIGNAL_DEFAULT_URL);
        crate::run::print_stdout(&by_hand(&account, url))?;
        return Ok(());
    };
    if RunningGateway::find(&home).is_some() {
        return Err(refuse(
            "the gateway runs signal-cli now, which holds its account: stop the gateway, link, \
             then start it again",
        ));
    }
    let mut child = Command::new(cli)
        .args(["link", "-n", "LurkBot"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| {
            refuse(format!(
                "'{cli}' cannot be run ({e}): install signal-cli or fix [channels.signal] cli"
            ))
        })?;
    let Some(stdout) = child.stdout.take() else {
        return Err(refuse("signal-cli's output is not readable"));
    };
    let mut joined = None;
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        if line.starts_with("sgnl://") {
            let drawn = lurkbot_channels::qr::terminal(&line).unwrap_or_default();
            crate::run::print_stdout(&format!(
                "{drawn}\nScan it in Signal on your phone: Settings → Linked devices → + \
                 (or paste {line} into `signal-cli addDevice --uri` on a primary device)\n"
            ))?;
        } else if let Some(number) = line.strip_prefix("Associated with: ") {
            joined = Some(number.trim().to_string());
        }
    }
    let status = child.wait()?;
    match joined {
        Some(number) if status.success() => {
            let note = if account.is_empty() || number == account {
                String::new()
            } else {
                format!(
                    " — [channels.signal] account is {account}: set it to {number} (`lurkbot config set channels.signal.account {number}`)"
                )
            };
            crate::run::print_stdout(&format!("Signal linked as {number}{note}\n"))?;
            Ok(())
        }
        _ => Err(refuse(format!(
            "signal-cli did not link ({status}); its message is above. Try again: the code is \
             valid for a short while"
        ))),
    }
}
