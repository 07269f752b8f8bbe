//! `run/gateway.json`: where the running gateway listens, written by the gateway when it starts
//! and removed when it stops, so `lurkbot config set` and `lurkbot gateway status` can find it
//! whatever port it was given. The agent cannot write it (it is state), and readers only use a
//! loopback address from it.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

use crate::{CoreError, Home};

/// The file inside the home.
pub const RUNNING_GATEWAY: &str = "run/gateway.json";

/// A running gateway as it recorded itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunningGateway {
    /// Its process id.
    pub pid: u32,
    /// The address it listens on.
    pub addr: SocketAddr,
}

impl RunningGateway {
    /// Records this process as the home's running gateway.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn record(home: &Home, addr: SocketAddr) -> Result<Self, CoreError> {
        let me = Self {
            pid: std::process::id(),
            addr,
        };
        let path = home.join(RUNNING_GATEWAY);
        if let Some(dir) = path.parent() {
            crate::create_private_dir(dir)?;
        }
        let text = serde_json::to_string(&me).unwrap_or_default();
        crate::write_atomic_volatile(&path, text.as_bytes())?;
        Ok(me)
    }

    /// The home's running gateway, if one recorded itself (it may have died since).
    pub fn find(home: &Home) -> Option<Self> {
        let text = std::fs::read_to_string(home.join(RUNNING_GATEWAY)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// The loopback address to reach it on (a wildcard bind is reached on loopback).
    pub fn loopback_addr(&self) -> Option<SocketAddr> {
        let ip = self.addr.ip();
        if ip.is_unspecified() {
            let loopback: std::net::IpAddr = if ip.is_ipv4() {
                std::net::Ipv4Addr::LOCALHOST.into()
            } else {
                std::net::Ipv6Addr::LOCALHOST.into()
            };
            return Some(SocketAddr::new(loopback, self.addr.port()));
        }
        ip.is_loopback().then_some(self.addr)
    }

    /// Removes the record if it is this process's.
    pub fn clear(home: &Home) {
        if Self::find(home).is_some_and(|r| r.pid == std::process::id()) {
            let _ = std::fs::remove_file(home.join(RUNNING_GATEWAY));
        }
    }
}
