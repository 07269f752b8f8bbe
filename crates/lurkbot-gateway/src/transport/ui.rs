//! The web UI, embedded in the binary: `GET /` serves one self-contained page (HTML, CSS and
//! JavaScript inline; no build step, no external requests). It needs no token to load; it asks
//! for the token (or reads a `#token=` fragment, never a query) and talks to `/ws`.
//!
//! The page is embedded gzip-compressed (the crate's `build.rs`) and sent so to a client that accepts gzip
//! (every browser); any other client gets it unpacked.

use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};

/// The page, packed by the crate's `build.rs`.
const INDEX_GZ: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/index.html.gz"));

/// `GET /`.
pub(crate) fn index(request: &HeaderMap) -> Response {
    let gzip = request
        .get(header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(lurkbot_core::packed::accepts_gzip);
    let mut response = if gzip {
        let mut packed = INDEX_GZ.into_response();
        packed
            .headers_mut()
            .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        packed
    } else {
        lurkbot_core::packed::unpack_text(INDEX_GZ)
            .unwrap_or_default()
            .into_response()
    };
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (header::CACHE_CONTROL, "no-cache"),
        (header::VARY, "accept-encoding"),
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' blob:; media-src blob:; frame-ancestors 'none'",
        ),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body(response: Response) -> Vec<u8> {
        axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap()
            .to_vec()
    }

    /// A browser gets the packed page, marked as such; a client that does not accept gzip gets
    /// the page as written in `ui/index.html`.
    #[tokio::test]
    async fn the_page_is_sent_packed_only_to_who_accepts_gzip() {
        let written = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("ui/index.html"),
        )
        .unwrap();
        let mut browser = HeaderMap::new();
        browser.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_static("gzip, deflate, br"),
        );
        let packed = index(&browser);
        assert_eq!(packed.headers()[header::CONTENT_ENCODING], "gzip");
        assert_eq!(packed.headers()[header::VARY], "accept-encoding");
        let bytes = body(packed).await;
        assert!(bytes.len() < written.len() / 2, "{} bytes", bytes.len());
        assert_eq!(lurkbot_core::packed::unpack_text(&bytes).unwrap(), written);

        let plain = index(&HeaderMap::new());
        assert!(plain.headers().get(header::CONTENT_ENCODING).is_none());
        assert_eq!(
            plain.headers()[header::CONTENT_TYPE],
            "text/html; charset=utf-8"
        );
        assert_eq!(body(plain).await, written.as_bytes());
    }
}
