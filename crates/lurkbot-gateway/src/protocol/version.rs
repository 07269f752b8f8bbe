//! Protocol versions. A connection speaks one version, chosen at `connect` from the client's
//! `minProtocol..maxProtocol`; everything whose wire shape depends on the version (the
//! `hello-ok` payload, event frames) goes through [`ProtocolVersion`], so adding a version
//! is a new variant and its shapes, not string edits across the server. Versions 3 and 4 are
//! OpenClaw's (its CLI, TUI and Control UI speak them); their shapes live in
//! the `openclaw` module.

use serde_json::{Value, json};

use super::{EVENTS, EventFrame, MAX_PAYLOAD, TICK_INTERVAL_MS};

/// A protocol version this gateway speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ProtocolVersion {
    /// LurkBot's own protocol.
    V1,
    /// OpenClaw's protocol 3 (its `gateway status` and `probe` accept 3–4).
    OpenClaw3,
    /// OpenClaw's protocol 4 (its current clients).
    OpenClaw4,
}

impl ProtocolVersion {
    /// Every version spoken, oldest first.
    pub const SUPPORTED: &[Self] = &[Self::V1, Self::OpenClaw3, Self::OpenClaw4];

    /// The number on the wire.
    pub fn number(self) -> u64 {
        match self {
            Self::V1 => 1,
            Self::OpenClaw3 => 3,
            Self::OpenClaw4 => 4,
        }
    }

    /// Whether this is one of OpenClaw's versions (its frame shapes, methods and errors).
    pub fn is_openclaw(self) -> bool {
        matches!(self, Self::OpenClaw3 | Self::OpenClaw4)
    }

    /// The newest version within `min..=max`, if any.
    pub fn negotiate(min: u64, max: u64) -> Option<Self> {
        Self::SUPPORTED
            .iter()
            .rev()
            .copied()
            .find(|v| (min..=max).contains(&v.number()))
    }

    /// The supported numbers, for a refusal message (`1` or `1, 3`).
    pub fn supported_list() -> String {
        Self::SUPPORTED
            .iter()
            .map(|v| v.number().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// LurkBot's `hello-ok` payload (OpenClaw's carries a snapshot of the gateway's state and is
    /// built by the `openclaw` module).
    pub fn hello(self, conn_id: &str, methods: &[&str]) -> Value {
        match self {
            Self::V1 | Self::OpenClaw3 | Self::OpenClaw4 => json!({
                "type": "hello-ok",
                "protocol": self.number(),
                "server": {"version": env!("CARGO_PKG_VERSION"), "connId": conn_id},
                "features": {"methods": methods, "events": EVENTS},
                "policy": {"maxPayload": MAX_PAYLOAD, "tickIntervalMs": TICK_INTERVAL_MS},
            }),
        }
    }

    /// An event frame in LurkBot's shape (OpenClaw's are shaped per connection by
    /// the `openclaw` module).
    pub fn event_frame(self, frame: &EventFrame) -> Value {
        frame.to_value()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_version_in_the_clients_range_wins() {
        assert_eq!(ProtocolVersion::negotiate(1, 1), Some(ProtocolVersion::V1));
        assert_eq!(
            ProtocolVersion::negotiate(0, 9),
            Some(ProtocolVersion::OpenClaw4)
        );
        assert_eq!(
            ProtocolVersion::negotiate(2, 3),
            Some(ProtocolVersion::OpenClaw3)
        );
        assert_eq!(ProtocolVersion::negotiate(2, 2), None);
        assert_eq!(ProtocolVersion::negotiate(5, 9), None);
        assert_eq!(ProtocolVersion::negotiate(3, 1), None);
        assert_eq!(ProtocolVersion::supported_list(), "1, 3, 4");
        assert!(ProtocolVersion::OpenClaw3.is_openclaw() && !ProtocolVersion::V1.is_openclaw());
        let hello = ProtocolVersion::V1.hello("conn_1", &["health"]);
        assert_eq!(hello["protocol"], 1);
        assert_eq!(hello["features"]["methods"][0], "health");
    }
}
