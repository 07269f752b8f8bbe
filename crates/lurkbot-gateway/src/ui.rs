//! The web UI, embedded in the binary: `GET /` serves one self-contained page (HTML, CSS and
//! JavaScript inline; no build step, no external requests). It needs no token to load; it asks
//! for the token (or reads a `#token=` fragment, never a query) and talks to `/ws`.

use axum::http::header;
use axum::response::IntoResponse;

/// The page.
const INDEX: &str = include_str!("../ui/index.html");

/// `GET /`.
pub(crate) async fn index() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' blob:; media-src blob:; frame-ancestors 'none'",
            ),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::X_FRAME_OPTIONS, "DENY"),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        INDEX,
    )
}
