//! Connections: the accept loop, the WebSocket (operators and nodes, each with its writer) and
//! the embedded web UI.

pub(crate) mod accept;
pub(crate) mod node_link;
pub(crate) mod ui;
pub(crate) mod writer;
pub(crate) mod ws;
