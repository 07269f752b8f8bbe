//! The idle figure with WhatsApp's linked device enabled (part of `lurkbot-bench gateway`):
//! WhatsApp's servers are not reachable here, so the device dials a local endpoint
//! (`[channels.whatsapp] base_url`) that takes the WebSocket's TCP connection and never
//! answers — the client is built, its store read, its reconnect loop running — and the RSS is
//! read from /proc after the idle wait, beside the same gateway's figure without it.

use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

use lurkbot_test_support::ports::free_port;

use crate::gateway::{rss_kib, spawn_ready};

/// Idle RSS (KiB) of a gateway on `home` with the linked device enabled, after `idle_secs`;
/// how many connections the device opened meanwhile.
pub(crate) fn idle_with_whatsapp(
    bin: &Path,
    home: &Path,
    idle_secs: u64,
) -> Result<(u64, usize), String> {
    let relay = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let port = relay.local_addr().map_err(|e| e.to_string())?.port();
    let (dialled, seen) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in relay.incoming().flatten() {
            let _ = dialled.send(());
            // Held open, read and never answered.
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut buf = [0u8; 4096];
                while matches!(stream.read(&mut buf), Ok(n) if n > 0) {}
            });
        }
    });
    let config = home.join("config.toml");
    let mut text = std::fs::read_to_string(&config).map_err(|e| e.to_string())?;
    text.push_str(&format!(
        "\n[channels.whatsapp]\nbase_url = \"ws://127.0.0.1:{port}/ws/chat\"\n"
    ));
    std::fs::write(&config, text).map_err(|e| e.to_string())?;
    let gw = spawn_ready(bin, home, free_port())?;
    seen.recv_timeout(Duration::from_secs(20))
        .map_err(|_| "the WhatsApp device never dialled its endpoint".to_string())?;
    std::thread::sleep(Duration::from_secs(idle_secs));
    let rss = rss_kib(gw.child.id());
    let connections = 1 + seen.try_iter().count();
    drop(gw);
    Ok((rss, connections))
}
