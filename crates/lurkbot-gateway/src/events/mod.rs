//! Events: the hub every connection listens to, shared with the other gateways on
//! PostgreSQL, with the approvals asked of the clients and whether a client is there.

pub(crate) mod approvals;
pub(crate) mod hub;
pub(crate) mod presence;
pub(crate) mod sharing;
