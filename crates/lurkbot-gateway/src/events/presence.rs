//! Whether a human is there to answer an approval, across gateways on PostgreSQL
//! (ARCHITECTURE.md §6.3): a gateway whose home has a client connected holds the lease
//! `clients:<gateway id>` in that home's store (taken or given back by its lease keeper every
//! `LEASE_RENEW_MS`), and an approval asked where no client is connected waits only while
//! another live gateway holds one — else it is denied at once, as on one gateway.

use lurkbot_state::Store;

/// The lease a gateway with clients holds.
fn lease_of(store: &Store) -> String {
    format!("clients:{}", store.owner())
}

/// Takes this gateway's presence lease while `connected` clients are there, gives it back
/// when none is.
pub(crate) fn advertise(store: &Store, connected: usize) {
    let name = lease_of(store);
    let said = if connected > 0 {
        store.take_lease(&name).map(drop)
    } else {
        store.give_back_lease(&name)
    };
    if let Err(e) = said {
        tracing::warn!(error = %e, "client presence not recorded");
    }
}

/// Whether another live gateway on `store` has a client connected (true when the store
/// cannot say: the approval waits then, rather than being denied for a failure).
pub(crate) async fn elsewhere(store: &Store) -> bool {
    let store = store.clone();
    let mine = lease_of(&store);
    tokio::task::spawn_blocking(move || store.leases())
        .await
        .ok()
        .and_then(Result::ok)
        .is_none_or(|leases| {
            leases
                .iter()
                .any(|l| l.alive && l.name.starts_with("clients:") && l.name != mine)
        })
}
