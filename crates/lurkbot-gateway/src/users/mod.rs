//! The users of a shared gateway (ARCHITECTURE.md §6.2): who may sign in (`store.rs`), who a
//! credential is at run time (`tenants.rs`), the skills the admin shares.

pub(crate) mod shared_skills;
pub mod store;
pub mod tenants;

pub use store::*;
