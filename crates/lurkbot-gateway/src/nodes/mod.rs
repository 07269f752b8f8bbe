//! Nodes: paired devices (`devices.rs`), the live node connections (`registry.rs`) and the
//! gate every command sent to a node passes (`control.rs`).

pub(crate) mod control;
pub mod devices;
pub(crate) mod registry;
