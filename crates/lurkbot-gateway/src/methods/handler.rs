//! One WebSocket method as the dispatch table holds it: its wire name, scope and handler.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

use crate::protocol::{MethodError, Scope};
use crate::state::AppState;

/// A method's future.
pub(crate) type Reply<'a> = Pin<Box<dyn Future<Output = Result<Value, MethodError>> + Send + 'a>>;

/// One WebSocket method: its wire name beside its handler.
pub(crate) struct Method {
    /// The wire name (from [`method`](crate::protocol::method)).
    pub(crate) name: &'static str,
    /// What a connection needs to call it.
    pub(crate) scope: Scope,
    /// Answers the request's `params`.
    pub(crate) handler: for<'a> fn(&'a AppState, &'a Value) -> Reply<'a>,
}
