//! Approvals waiting on any gateway, on PostgreSQL (ARCHITECTURE.md §6.3): the gateway whose
//! turn asks keeps the request as the document `approvals/pending/<id>` and holds the lease
//! `approval:<id>` while it waits, so a client connecting to another gateway — or asking
//! `exec.approval.list` there — is shown it too, and answers it through that gateway (the
//! answer is forwarded, `ClientApprover::announce`). A request whose gateway died (its lease
//! with it) is not shown, and is removed by the next reader.

use lurkbot_state::Store;

use crate::protocol::ApprovalRequested;

const PREFIX: &str = "approvals/pending/";

/// Records `requested` as waiting on this gateway.
pub(crate) fn record(store: &Store, requested: &ApprovalRequested) {
    let id = &requested.approval_id;
    let recorded = store.take_lease(&format!("approval:{id}")).and_then(|_| {
        let body = serde_json::to_string(requested).unwrap_or_default();
        store.put_document(&format!("{PREFIX}{id}"), &body)
    });
    if let Err(e) = recorded {
        tracing::warn!(approval = id.as_str(), error = %e, "approval not shown to the other gateways");
    }
}

/// Forgets approval `id` (answered, denied or timed out).
pub(crate) fn forget(store: &Store, id: &str) {
    let _ = store.delete_document(&format!("{PREFIX}{id}"));
    let _ = store.give_back_lease(&format!("approval:{id}"));
}

/// The approvals waiting on other live gateways, oldest first by id (`local` are this one's).
pub(crate) fn elsewhere(store: &Store, local: &[String]) -> Vec<ApprovalRequested> {
    let (Ok(documents), Ok(leases)) = (store.documents_under(PREFIX), store.leases()) else {
        return Vec::new();
    };
    let mut waiting = Vec::new();
    for (name, body) in documents {
        let id = name.trim_start_matches(PREFIX);
        if local.iter().any(|l| l == id) {
            continue;
        }
        let alive = leases
            .iter()
            .any(|l| l.alive && l.name == format!("approval:{id}"));
        if !alive {
            // Its gateway died: the turn is resumed elsewhere and asks again.
            let _ = store.delete_document(&name);
            continue;
        }
        if let Ok(requested) = serde_json::from_str::<ApprovalRequested>(&body) {
            waiting.push(requested);
        }
    }
    waiting
}
