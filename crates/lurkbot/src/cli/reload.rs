//! After `lurkbot config set|unset`: a gateway running on this home (found by
//! `run/gateway.json`, loopback only) is asked to reload (`gateway.reload`), and what it did is
//! said on stderr — reloaded, reloaded but a key needs a restart, or kept its settings and why.
//! No gateway running is not an error: the next start reads the file.

use std::time::Duration;

use lurkbot_core::{Home, RunningGateway};
use lurkbot_gateway::protocol::method;
use serde_json::{Value, json};

/// How long to wait for a running gateway's answer.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);

/// Asks the home's running gateway (if any) to reload; says what happened on stderr. Whether
/// a running gateway reloaded.
pub(crate) fn tell_running_gateway(home: &Home) -> bool {
    let Some(running) = RunningGateway::find(home) else {
        return false;
    };
    let Some(addr) = running.loopback_addr() else {
        eprintln!(
            "a gateway runs on {} (pid {}): send it SIGHUP (kill -HUP {}) to reload",
            running.addr, running.pid, running.pid
        );
        return false;
    };
    let token = crate::cli::remote::gateway_token(home);
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return false;
    };
    let answer = runtime.block_on(async {
        tokio::time::timeout(ANSWER_WITHIN, async {
            let url = format!("http://{addr}/");
            let mut client = match crate::cli::remote::Remote::connect(&url, token.as_deref()).await
            {
                Ok(client) => client,
                // It answers but refuses the token this home has.
                Err(e) => {
                    let said = format!("{e:#}");
                    return said
                        .contains("(UNAUTHORIZED)")
                        .then(|| Err(("UNAUTHORIZED".to_string(), said)));
                }
            };
            client.call(method::GATEWAY_RELOAD, json!({})).await.ok()
        })
        .await
        .ok()
        .flatten()
    });
    match answer {
        // Not reachable: it has stopped (or died) since it recorded itself.
        None => false,
        Some(Ok(plan)) => {
            let restart: Vec<&str> = plan
                .pointer("/plan/restartReasons")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if restart.is_empty() {
                eprintln!(
                    "the running gateway (pid {}) reloaded config.toml",
                    running.pid
                );
                true
            } else {
                eprintln!(
                    "the running gateway (pid {}) reloaded config.toml, but {}: restart it for that (systemctl --user restart lurkbot-gateway, or stop and start it)",
                    running.pid,
                    restart.join("; ")
                );
                true
            }
        }
        // Its token is not this home's (set in the gateway's environment, say): the signal
        // the gateway reloads on does not need it.
        Some(Err((code, message))) if code == "UNAUTHORIZED" && hang_up(running.pid) => {
            eprintln!(
                "the running gateway (pid {}) refused this home's token ({message}); sent it SIGHUP: it reloads config.toml",
                running.pid
            );
            true
        }
        Some(Err((_, message))) => {
            eprintln!("the running gateway (pid {}): {message}", running.pid);
            false
        }
    }
}

/// Sends SIGHUP to `pid` when it is a `lurkbot … gateway` process (a recorded pid may have
/// been reused by another program since); whether it was sent.
fn hang_up(pid: u32) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    let ours = args.first().is_some_and(|exe| exe.ends_with(b"lurkbot"))
        && args.iter().any(|a| *a == b"gateway");
    let Some(target) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    ours && rustix::process::kill_process(target, rustix::process::Signal::HUP).is_ok()
}
