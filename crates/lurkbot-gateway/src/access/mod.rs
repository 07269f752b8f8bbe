//! Who may come in (ARCHITECTURE.md §6): the token check and the failed-attempt limiter, who
//! a credential is, forwarded headers from a trusted proxy, the HTTP guard and the web UI's
//! sign-in.

pub(crate) mod auth;
pub(crate) mod credentials;
pub(crate) mod forwarded;
pub(crate) mod http;
pub(crate) mod sign_in;
