//! `lurkbot channels login whatsapp [--phone +NUMBER]` links LurkBot as a device of a WhatsApp
//! account: it prints the QR code to scan in WhatsApp's *Linked devices* (a new one every
//! 20 s or so), or with `--phone` a pairing code to type there instead, and returns once the
//! device is linked. When the gateway receives WhatsApp, the gateway is the device: the
//! command shows the gateway's QR code (the web UI's Channels panel shows the same). Otherwise
//! the command connects itself, with the keys kept in the home's state store for the gateway.
//! `lurkbot channels logout whatsapp` unlinks the device and forgets its keys.

use std::path::Path;
use std::time::Duration;

use lurkbot_channels::LinkState;
use lurkbot_channels::whatsapp_linked::WhatsAppLinked;
use lurkbot_channels::whatsapp_linked::keys::StoredKeys;
use lurkbot_core::{Config, Home, RunningGateway, layout};
use lurkbot_gateway::protocol::method;
use lurkbot_state::Store;
use serde_json::json;

use crate::error::{CliError, CliResult};

/// How long the command waits for the phone.
const LINK_WITHIN: Duration = Duration::from_secs(180);

fn refuse(message: impl Into<String>) -> CliError {
    CliError::failed("channels", message)
}

/// The home and the check that `channel` is WhatsApp in linked mode.
fn linked_whatsapp(home_path: &Path, channel: &str) -> Result<(Home, Config), CliError> {
    let home = Home::open(home_path)?;
    let config = Config::load(&home.join(layout::CONFIG))?;
    if channel != "whatsapp" {
        return Err(refuse(format!(
            "only WhatsApp links as a device (`lurkbot channels login whatsapp`); '{channel}' \
             logs in with the credentials in the home's .env"
        )));
    }
    let mode = config
        .channels
        .get("whatsapp")
        .and_then(|c| c.mode.clone())
        .unwrap_or_else(|| "linked".into());
    if mode != "linked" {
        return Err(refuse(
            "[channels.whatsapp] mode = \"cloud\" has no device to link: the Cloud API's tokens \
             go in the home's .env",
        ));
    }
    Ok((home, config))
}

fn open_store(home: &Home, config: &Config) -> Result<Store, CliError> {
    let location =
        lurkbot_agent::setup::state_location(home, config).map_err(|e| refuse(e.to_string()))?;
    Store::open_at(home, &location, None).map_err(|e| refuse(e.to_string()))
}

/// What to print for a link state; `None` when nothing changed for the person at the phone.
fn shown(link: &LinkState) -> Option<String> {
    match link.state.as_str() {
        "qr" => {
            let code = link.qr.as_deref()?;
            let drawn = lurkbot_channels::qr::terminal(code)?;
            Some(format!(
                "{drawn}\nScan it in WhatsApp: Settings → Linked devices → Link a device \
                 (a new code comes every 20 s or so)\n"
            ))
        }
        "pairCode" => Some(format!(
            "Pairing code: {}\nIn WhatsApp: Settings → Linked devices → Link a device → \
             Link with phone number instead, and type it\n",
            link.pair_code.as_deref()?
        )),
        _ => None,
    }
}

pub(crate) fn login(home_path: &Path, channel: &str, phone: Option<&str>) -> CliResult {
    let (home, config) = linked_whatsapp(home_path, channel)?;
    let digits = phone.map(|p| p.chars().filter(char::is_ascii_digit).collect::<String>());
    if digits.as_deref().is_some_and(|d| d.len() < 8) {
        return Err(refuse(
            "--phone takes the account's number with its country code: --phone +15550001111",
        ));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    if let Some(addr) = RunningGateway::find(&home).and_then(|g| g.loopback_addr()) {
        if digits.is_some() {
            return Err(refuse(
                "the gateway is WhatsApp's device: scan its QR code (this command without \
                 --phone, or the web UI's Channels panel), or stop the gateway to link by \
                 pairing code",
            ));
        }
        return runtime.block_on(follow_gateway(&home, &addr.to_string()));
    }
    let store = open_store(&home, &config)?;
    runtime.block_on(async {
        let device = WhatsAppLinked::new(StoredKeys::new(store), digits);
        let mut link = device.watch_link();
        device.connect().await.map_err(|e| refuse(e.to_string()))?;
        let outcome = tokio::time::timeout(LINK_WITHIN, async {
            loop {
                let now = link.borrow_and_update().clone();
                if let Some(text) = shown(&now) {
                    crate::run::print_stdout(&text)?;
                }
                match now.state.as_str() {
                    "linked" => return Ok(now),
                    "loggedOut" => return Err(refuse("WhatsApp refused the link: try again")),
                    _ => {}
                }
                if link.changed().await.is_err() {
                    return Err(refuse("the WhatsApp client stopped"));
                }
            }
        })
        .await;
        device.disconnect().await;
        let linked =
            outcome.map_err(|_| refuse("no phone linked the device within 3 minutes"))??;
        crate::run::print_stdout(&format!(
            "WhatsApp linked{}: start the gateway (lurkbot gateway) to answer on it\n",
            linked
                .account
                .map(|a| format!(" as {a}"))
                .unwrap_or_default()
        ))?;
        Ok(())
    })
}

/// Shows the running gateway's QR codes until its device is linked.
async fn follow_gateway(home: &Home, addr: &str) -> CliResult {
    let token = super::remote::gateway_token(home);
    let mut gw = super::remote::Remote::connect(&format!("ws://{addr}/ws"), token.as_deref())
        .await
        .map_err(|e| refuse(format!("{e:#}")))?;
    let started = tokio::time::Instant::now();
    let mut last = String::new();
    while started.elapsed() < LINK_WITHIN {
        let status = gw
            .call(method::CHANNELS_STATUS, json!({}))
            .await
            .map_err(|e| refuse(format!("{e:#}")))?
            .map_err(|(code, message)| refuse(format!("{code}: {message}")))?;
        let whatsapp = status["channels"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["name"] == "whatsapp"))
            .cloned()
            .unwrap_or_default();
        let Ok(link) = serde_json::from_value::<LinkState>(whatsapp["link"].clone()) else {
            return Err(refuse(
                "the running gateway does not run WhatsApp: enable [channels.whatsapp] and \
                 reload it, or stop it and run this command again",
            ));
        };
        if link.state == "linked" {
            crate::run::print_stdout(&format!(
                "WhatsApp linked{}\n",
                link.account.map(|a| format!(" as {a}")).unwrap_or_default()
            ))?;
            return Ok(());
        }
        if let Some(text) = shown(&link)
            && text != last
        {
            crate::run::print_stdout(&text)?;
            last = text;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    Err(refuse("no phone linked the device within 3 minutes"))
}

pub(crate) fn logout(home_path: &Path, channel: &str) -> CliResult {
    let (home, config) = linked_whatsapp(home_path, channel)?;
    if RunningGateway::find(&home).is_some() {
        return Err(refuse(
            "the gateway is connected as the device: stop it first (lurkbot gateway stop), \
             then log out",
        ));
    }
    let store = open_store(&home, &config)?;
    let keys = StoredKeys::new(store);
    if !keys.linked().map_err(|e| refuse(e.to_string()))? {
        crate::run::print_stdout("WhatsApp: no device is linked\n")?;
        return Ok(());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let forgotten = runtime.block_on(async {
        let device = WhatsAppLinked::new(keys, None);
        // Connected, the device is unlinked on the account too; offline, only forgotten here
        // (the phone then shows it until it notices).
        if device.connect().await.is_ok() {
            let mut link = device.watch_link();
            let _ = tokio::time::timeout(Duration::from_secs(15), async {
                while link.borrow_and_update().state != "linked" {
                    if link.changed().await.is_err() {
                        break;
                    }
                }
            })
            .await;
        }
        device.logout().await
    });
    let count = forgotten.map_err(|e| refuse(e.to_string()))?;
    crate::run::print_stdout(&format!(
        "WhatsApp: the device is logged out and its {count} stored key(s) forgotten\n"
    ))?;
    Ok(())
}
