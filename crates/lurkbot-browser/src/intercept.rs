//! The guard inside Chromium (ARCHITECTURE.md §5.3): every request of every tab, frame, popup
//! and worker is paused by the DevTools `Fetch` domain on the browser target and let go only
//! when the network policy's page rules allow its URL
//! ([`lurkbot_term::NetworkPolicy::check_page_url`]). A refused one fails as `BlockedByClient`
//! and is told with the next answer. The model's own `navigate`/`open` URLs are checked before
//! Chromium sees them; this catches what a page, a link or a redirect asks for, whatever
//! Chromium's own rules would have done. Where an allowed URL may connect is the proxy's check.

use std::sync::Arc;
use std::time::Duration;

use lurkbot_term::PageLoad;
use serde_json::json;

use crate::BrowserError;
use crate::blocked::Blocked;
use crate::cdp::{Cdp, Event};
use crate::proxy::Rules;

/// How long Chromium has to take a decision about one request.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// Starts deciding every request; returns once Chromium pauses them.
pub(crate) async fn intercept(
    cdp: &Arc<Cdp>,
    rules: &Arc<Rules>,
    timeout: Duration,
) -> Result<tokio::task::JoinHandle<()>, BrowserError> {
    let mut paused = cdp.paused_requests();
    let task = {
        let cdp = Arc::clone(cdp);
        let rules = Arc::clone(rules);
        tokio::spawn(async move {
            while let Some(event) = paused.recv().await {
                let cdp = Arc::clone(&cdp);
                let rules = Arc::clone(&rules);
                // One task a request: a slow answer never holds up the next request.
                tokio::spawn(async move { decide(&cdp, &rules, event).await });
            }
        })
    };
    let enabled = cdp
        .call(
            "Fetch.enable",
            json!({"patterns": [{"urlPattern": "*", "requestStage": "Request"}]}),
            None,
            timeout,
        )
        .await;
    if let Err(e) = enabled {
        task.abort();
        return Err(e);
    }
    Ok(task)
}

async fn decide(cdp: &Cdp, rules: &Rules, event: Event) {
    let p = &event.params;
    let Some(id) = p["requestId"].as_str() else {
        return;
    };
    let url = p["request"]["url"].as_str().unwrap_or_default();
    let load = if p["resourceType"] == "Document" {
        PageLoad::Document
    } else {
        PageLoad::Subresource
    };
    let session = event.session.as_deref();
    match rules.policy().check_page_url(url, load) {
        Ok(_) => {
            let _ = cdp
                .call(
                    "Fetch.continueRequest",
                    json!({"requestId": id}),
                    session,
                    ANSWER_TIMEOUT,
                )
                .await;
        }
        Err(refusal) => {
            rules.record(Blocked {
                target: shorten(url),
                reason: refusal.to_string(),
                scheme: true,
            });
            let _ = cdp
                .call(
                    "Fetch.failRequest",
                    json!({"requestId": id, "errorReason": "BlockedByClient"}),
                    session,
                    ANSWER_TIMEOUT,
                )
                .await;
        }
    }
}

/// At most 100 characters of a URL, its password masked: the record reaches the log and the
/// model's answer.
fn shorten(url: &str) -> String {
    let url = lurkbot_term::mask_url_passwords(url);
    match url.char_indices().nth(100) {
        Some((at, _)) => format!("{}…", &url[..at]),
        None => url,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    #[test]
    fn a_recorded_url_never_carries_its_password() {
        let recorded = super::shorten("http://me:hunter2@example.com/private");
        assert!(!recorded.contains("hunter2"), "{recorded}");
        assert!(recorded.contains("example.com/private"), "{recorded}");
        let long = super::shorten(&format!("https://example.com/{}", "a".repeat(300)));
        assert_eq!(long.chars().count(), 101, "{long}");
    }

    use lurkbot_term::NetworkPolicy;
    use serde_json::json;

    use super::intercept;
    use crate::launch::{LaunchOptions, launch};
    use crate::proxy::PolicyProxy;

    /// Chromium itself is told to load a local file — as a path of our own code that skipped
    /// the argument check would — and the guard inside it refuses the request.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_local_file_is_refused_inside_chromium_whoever_asks() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret.txt");
        std::fs::write(&secret, "SECRET-CONTENT").unwrap();
        let file_url = format!("file://{}", secret.display());
        let proxy = PolicyProxy::start(NetworkPolicy::default()).await.unwrap();
        let options = LaunchOptions {
            executable: "chromium".into(),
            headless: true,
            profile: dir.path().join("profile"),
            log: dir.path().join("browser.log"),
        };
        let mut launched = launch(&options, proxy.addr()).unwrap();
        let cdp = launched.cdp;
        let t = Duration::from_secs(30);
        cdp.call("Browser.getVersion", json!({}), None, t)
            .await
            .unwrap();
        let guard = intercept(&cdp, &proxy.rules(), t).await.unwrap();
        let created = cdp
            .call(
                "Target.createTarget",
                json!({"url": "about:blank"}),
                None,
                t,
            )
            .await
            .unwrap();
        let attached = cdp
            .call(
                "Target.attachToTarget",
                json!({"targetId": created["targetId"], "flatten": true}),
                None,
                t,
            )
            .await
            .unwrap();
        let session = attached["sessionId"].as_str().unwrap().to_string();
        let answer = cdp
            .call("Page.navigate", json!({"url": file_url}), Some(&session), t)
            .await
            .unwrap();
        assert_eq!(
            answer["errorText"], "net::ERR_BLOCKED_BY_CLIENT",
            "{answer}"
        );
        let text = cdp
            .call(
                "Runtime.evaluate",
                json!({"expression": "document.documentElement.outerHTML", "returnByValue": true}),
                Some(&session),
                t,
            )
            .await
            .unwrap();
        assert!(!text.to_string().contains("SECRET-CONTENT"), "{text}");
        let blocked = proxy.take_blocked();
        assert!(
            blocked
                .iter()
                .any(|b| b.scheme && b.target == file_url && b.reason.contains("not file: URLs")),
            "{blocked:?}"
        );
        guard.abort();
        let _ = launched.child.kill();
        let _ = launched.child.wait();
    }
}
