//! The idle figure with WhatsApp's linked device enabled (the end of `lurkbot-bench gateway`):
//! the same gateway idle without channels and with `[channels.whatsapp]`, in the same run.
//! WhatsApp's servers are not reachable here, so the device dials a local endpoint
//! (`[channels.whatsapp] base_url`) that takes the WebSocket's TCP connection and never
//! answers — the client is built, its store read, its reconnect loop running — and the RSS is
//! read from /proc after the idle wait.

use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

use lurkbot_test_support::ports::free_port;

use crate::gateway::{rss_kib, spawn_ready};

/// Prints the idle RSS of a plain gateway and of one with the linked device enabled.
pub(crate) fn report(bin: &Path, idle_secs: u64) -> Result<(), String> {
    let home = std::env::temp_dir().join(format!("lurkbot-bench-wa-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    crate::soak::init_home(bin, &home)?;
    let plain = idle(bin, &home, idle_secs)?;
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
    let with = idle(bin, &home, idle_secs)?;
    seen.recv_timeout(Duration::from_millis(1))
        .map_err(|_| "the WhatsApp device never dialled its endpoint".to_string())?;
    println!(
        "idle RSS after {idle_secs} s, same run: {:.1} MB without channels, {:.1} MB with WhatsApp's linked device enabled (its endpoint local and silent): {:+.1} MB",
        plain as f64 * 1024.0 / 1e6,
        with as f64 * 1024.0 / 1e6,
        (with as f64 - plain as f64) * 1024.0 / 1e6
    );
    let _ = std::fs::remove_dir_all(&home);
    Ok(())
}

/// A gateway on `home` idle for `idle_secs`: its RSS in KiB.
fn idle(bin: &Path, home: &Path, idle_secs: u64) -> Result<u64, String> {
    let gw = spawn_ready(bin, home, free_port())?;
    std::thread::sleep(Duration::from_secs(idle_secs));
    Ok(rss_kib(gw.child.id()))
}
