//! What is done to one tab over its DevTools session: navigate, snapshot, input by ref, wait,
//! capture. Every action that may change the page waits for it to settle (a navigation it
//! started has loaded, then two animation frames) before answering.

use std::collections::HashMap;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::BrowserError;
use crate::cdp::Cdp;
use crate::snapshot::{AxTree, Writer};

/// How long a navigation may take to start after an input event before the page counts as
/// not navigating.
const NAVIGATION_GRACE: Duration = Duration::from_millis(150);

/// One tab's session.
pub(crate) struct Page<'a> {
    pub(crate) cdp: &'a Cdp,
    pub(crate) session: &'a str,
    pub(crate) timeout: Duration,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Navigated {
    error_text: Option<String>,
    /// The new document's loader (absent for a navigation within the document).
    loader_id: Option<String>,
}

#[derive(Deserialize)]
struct FrameTree {
    #[serde(rename = "frameTree")]
    tree: FrameNode,
}

#[derive(Deserialize)]
struct FrameNode {
    frame: Frame,
    #[serde(default, rename = "childFrames")]
    children: Vec<FrameNode>,
}

#[derive(Deserialize)]
struct Frame {
    id: String,
    #[serde(default, rename = "loaderId")]
    loader: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    name: String,
}

impl Page<'_> {
    pub(crate) async fn call(&self, method: &str, params: Value) -> Result<Value, BrowserError> {
        self.cdp
            .call(method, params, Some(self.session), self.timeout)
            .await
    }

    /// Turns on the events the browser relies on (dialogs, loads).
    pub(crate) async fn enable(&self) -> Result<(), BrowserError> {
        self.call("Page.enable", json!({})).await?;
        self.call("Page.setLifecycleEventsEnabled", json!({"enabled": true}))
            .await?;
        // Frames of other sites run in their own processes: attach to them as they appear,
        // so snapshots can read them.
        self.call(
            "Target.setAutoAttach",
            json!({"autoAttach": true, "waitForDebuggerOnStart": false, "flatten": true}),
        )
        .await?;
        // The same viewport whatever the window: screenshots and layouts are predictable.
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": false}),
        )
        .await?;
        Ok(())
    }

    /// Loads `url` and waits for it.
    pub(crate) async fn navigate(&self, url: &str) -> Result<(), BrowserError> {
        let mut events = self.cdp.subscribe();
        let answer: Navigated = self
            .cdp
            .call_as(
                "Page.navigate",
                json!({"url": url}),
                Some(self.session),
                self.timeout,
            )
            .await?;
        if let Some(error) = answer.error_text.filter(|e| !e.is_empty()) {
            return Err(BrowserError::Protocol {
                method: "navigate".into(),
                message: format!("{url} did not load: {error}"),
            });
        }
        // Wait for this navigation's own load: a late event of the tab's first blank page must
        // not count.
        if let Some(loader) = answer.loader_id {
            let _ = tokio::time::timeout(self.timeout, async {
                loop {
                    match events.recv().await {
                        Ok(e)
                            if e.session.as_deref() == Some(self.session)
                                && e.method == "Page.lifecycleEvent"
                                && e.params["name"] == "load"
                                && e.params["loaderId"].as_str() == Some(loader.as_str()) =>
                        {
                            return;
                        }
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                        _ => {}
                    }
                }
            })
            .await;
        }
        self.settle().await;
        Ok(())
    }

    /// Waits for the main frame's load event (up to `limit`).
    async fn wait_for_load(
        &self,
        events: &mut tokio::sync::broadcast::Receiver<crate::cdp::Event>,
        limit: Duration,
    ) {
        let _ = tokio::time::timeout(limit, async {
            loop {
                match events.recv().await {
                    // Loaded, or stopped loading without a new document (a download).
                    Ok(e)
                        if (e.session.as_deref() == Some(self.session)
                            && matches!(
                                e.method.as_str(),
                                "Page.loadEventFired" | "Page.frameStoppedLoading"
                            ))
                            || e.method == "Browser.downloadWillBegin" =>
                    {
                        return;
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                    _ => {}
                }
            }
        })
        .await;
    }

    /// Runs an input (`act`), then waits for any navigation it started and for the page to
    /// settle.
    pub(crate) async fn after_input<F>(&self, act: F) -> Result<(), BrowserError>
    where
        F: std::future::Future<Output = Result<(), BrowserError>>,
    {
        let mut events = self.cdp.subscribe();
        act.await?;
        let started = tokio::time::timeout(NAVIGATION_GRACE, async {
            loop {
                match events.recv().await {
                    Ok(e)
                        if e.session.as_deref() == Some(self.session)
                            && e.method == "Page.frameStartedLoading" =>
                    {
                        return true;
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return false,
                    _ => {}
                }
            }
        })
        .await
        .unwrap_or(false);
        if started {
            self.wait_for_load(&mut events, self.timeout).await;
        }
        self.settle().await;
        Ok(())
    }

    /// Waits (bounded) until the document has loaded and two frames were drawn.
    pub(crate) async fn settle(&self) {
        let expression = "new Promise(r => { const done = () => requestAnimationFrame(() => requestAnimationFrame(() => r(document.readyState))); if (document.readyState === 'complete') done(); else addEventListener('load', done, {once: true}); })";
        for _ in 0..3 {
            let settled = self
                .cdp
                .call(
                    "Runtime.evaluate",
                    json!({"expression": expression, "awaitPromise": true, "returnByValue": true}),
                    Some(self.session),
                    Duration::from_secs(10).min(self.timeout),
                )
                .await;
            // A navigation destroys the context the promise ran in: try in the new one.
            match settled {
                Err(BrowserError::Protocol { message, .. }) if message.contains("context") => {}
                _ => return,
            }
        }
    }

    /// Which document the main frame shows (its loader): refs belong to one document.
    pub(crate) async fn document(&self) -> Result<String, BrowserError> {
        let frames: FrameTree = self
            .cdp
            .call_as(
                "Page.getFrameTree",
                json!({}),
                Some(self.session),
                self.timeout,
            )
            .await?;
        Ok(frames.tree.frame.loader)
    }

    /// Whether the node is still in its document.
    pub(crate) async fn connected(&self, node: i64, r: &str) -> Result<bool, BrowserError> {
        let v = self
            .call_on(
                node,
                r,
                "function() { return this.isConnected; }",
                Vec::new(),
            )
            .await?;
        Ok(v == json!(true))
    }

    /// The accessibility tree of the page and its frames, with refs, and the document they
    /// belong to.
    /// `other_sites` maps the sessions Chromium attached to frames of other sites
    /// (out-of-process iframes) to (their parent's session, their URL): those held by this
    /// page, and the ones they hold, are read without refs.
    pub(crate) async fn snapshot(
        &self,
        other_sites: &HashMap<String, (String, String)>,
    ) -> Result<(String, HashMap<String, i64>, String), BrowserError> {
        let mut writer = Writer::new();
        let frames: FrameTree = self
            .cdp
            .call_as(
                "Page.getFrameTree",
                json!({}),
                Some(self.session),
                self.timeout,
            )
            .await?;
        let main: AxTree = self
            .cdp
            .call_as(
                "Accessibility.getFullAXTree",
                json!({}),
                Some(self.session),
                self.timeout,
            )
            .await?;
        writer.add_tree(&main, 0);
        let mut stack: Vec<&FrameNode> = frames.tree.children.iter().collect();
        while let Some(frame) = stack.pop() {
            let tree: Result<AxTree, _> = self
                .cdp
                .call_as(
                    "Accessibility.getFullAXTree",
                    json!({"frameId": frame.frame.id}),
                    Some(self.session),
                    self.timeout,
                )
                .await;
            let label = if frame.frame.name.is_empty() {
                String::new()
            } else {
                format!(" \"{}\"", frame.frame.name)
            };
            writer.add_line(0, &format!("- iframe{label} ({}):", frame.frame.url));
            match tree {
                Ok(tree) => writer.add_tree(&tree, 1),
                Err(_) => writer.add_line(1, "- (content not shown)"),
            }
            stack.extend(frame.children.iter());
        }
        // Frames of other sites, read through their own sessions, without refs: their node
        // ids belong to another process.
        writer.refs_on = false;
        let mut pending: Vec<(&str, usize)> = vec![(self.session, 0)];
        while let Some((parent, depth)) = pending.pop() {
            for (session, (holder, url)) in other_sites {
                if holder != parent || depth > 8 {
                    continue;
                }
                writer.add_line(
                    depth,
                    &format!("- iframe ({url}), another site: read only, no refs"),
                );
                let tree: Result<AxTree, _> = self
                    .cdp
                    .call_as(
                        "Accessibility.getFullAXTree",
                        json!({}),
                        Some(session),
                        self.timeout,
                    )
                    .await;
                match tree {
                    Ok(tree) => writer.add_tree(&tree, depth + 1),
                    Err(_) => writer.add_line(depth + 1, "- (content not shown)"),
                }
                pending.push((session, depth + 1));
            }
        }
        let (text, refs) = writer.finish();
        Ok((text, refs, frames.tree.frame.loader))
    }

    /// The object a backend node id stands for (or [`BrowserError::StaleRef`]).
    async fn object(&self, node: i64, r: &str) -> Result<String, BrowserError> {
        let resolved = self
            .call("DOM.resolveNode", json!({"backendNodeId": node}))
            .await
            .map_err(|e| stale(e, r))?;
        resolved["object"]["objectId"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| BrowserError::StaleRef(r.to_string()))
    }

    /// Calls `function` on the node with `args`; returns its value.
    pub(crate) async fn call_on(
        &self,
        node: i64,
        r: &str,
        function: &str,
        args: Vec<Value>,
    ) -> Result<Value, BrowserError> {
        let object = self.object(node, r).await?;
        let args: Vec<Value> = args.into_iter().map(|v| json!({"value": v})).collect();
        let answer = self
            .call(
                "Runtime.callFunctionOn",
                json!({"objectId": object, "functionDeclaration": function,
                       "arguments": args, "returnByValue": true, "awaitPromise": true}),
            )
            .await?;
        if let Some(e) = answer.get("exceptionDetails") {
            return Err(BrowserError::Protocol {
                method: "page".into(),
                message: e["exception"]["description"]
                    .as_str()
                    .or_else(|| e["text"].as_str())
                    .unwrap_or("the page threw an exception")
                    .to_string(),
            });
        }
        Ok(answer["result"]["value"].clone())
    }

    /// Waits until the page's text contains `text`, or (without text) until it settles.
    pub(crate) async fn wait_for(&self, text: Option<&str>) -> Result<(), BrowserError> {
        let Some(text) = text else {
            self.settle().await;
            return Ok(());
        };
        let deadline = tokio::time::Instant::now() + self.timeout;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Err(BrowserError::Timeout(format!("waiting for \"{text}\"")));
            }
            let found = self
                .cdp
                .call(
                    "Runtime.evaluate",
                    json!({"expression": format!("({WAIT_FOR_TEXT})({})", json!(text)),
                           "awaitPromise": true, "returnByValue": true}),
                    Some(self.session),
                    left,
                )
                .await;
            match found {
                Ok(v) if v["result"]["value"] == json!(true) => return Ok(()),
                Err(BrowserError::Timeout(_)) => {
                    return Err(BrowserError::Timeout(format!("waiting for \"{text}\"")));
                }
                Err(e @ BrowserError::Closed(_)) => return Err(e),
                // The page navigated while waiting: look again in the new one.
                _ => {}
            }
        }
    }

    /// A PNG of the viewport, or of the whole page.
    pub(crate) async fn screenshot(&self, full_page: bool) -> Result<Vec<u8>, BrowserError> {
        let mut params = json!({"format": "png"});
        if full_page {
            let metrics = self.call("Page.getLayoutMetrics", json!({})).await?;
            let size = &metrics["cssContentSize"];
            let width = size["width"].as_f64().unwrap_or(1280.0).clamp(1.0, 4096.0);
            let height = size["height"]
                .as_f64()
                .unwrap_or(800.0)
                .clamp(1.0, 16_384.0);
            params["captureBeyondViewport"] = json!(true);
            params["clip"] = json!({"x": 0, "y": 0, "width": width, "height": height, "scale": 1});
        }
        let shot = self.call("Page.captureScreenshot", params).await?;
        decode(&shot["data"], "screenshot")
    }

    /// The page printed as PDF.
    pub(crate) async fn pdf(&self) -> Result<Vec<u8>, BrowserError> {
        let printed = self
            .call("Page.printToPDF", json!({"printBackground": true}))
            .await?;
        decode(&printed["data"], "pdf")
    }

    /// Runs a script the owner allowed (`[browser] evaluate = true`).
    pub(crate) async fn evaluate(&self, expression: &str) -> Result<Value, BrowserError> {
        let answer = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
            )
            .await?;
        if let Some(e) = answer.get("exceptionDetails") {
            return Err(BrowserError::Protocol {
                method: "evaluate".into(),
                message: e["exception"]["description"]
                    .as_str()
                    .unwrap_or("the script threw an exception")
                    .to_string(),
            });
        }
        Ok(answer["result"]["value"].clone())
    }

    /// The page's title and URL.
    pub(crate) async fn location(&self) -> (String, String) {
        let answer = self
            .call(
                "Runtime.evaluate",
                json!({"expression": "[document.title, location.href]", "returnByValue": true}),
            )
            .await
            .unwrap_or_default();
        let v = &answer["result"]["value"];
        (
            v[0].as_str().unwrap_or_default().to_string(),
            v[1].as_str().unwrap_or_default().to_string(),
        )
    }
}

const WAIT_FOR_TEXT: &str = "(text) => new Promise(r => { const ok = () => document.body && document.body.innerText.includes(text); if (ok()) return r(true); const o = new MutationObserver(() => { if (ok()) { o.disconnect(); r(true); } }); o.observe(document, {subtree: true, childList: true, characterData: true}); })";

/// A node error, told as a stale ref when the node is gone.
pub(crate) fn stale(e: BrowserError, r: &str) -> BrowserError {
    match e {
        BrowserError::Protocol { message, .. }
            if message.contains("No node")
                || message.contains("not found")
                || message.contains("Could not find node") =>
        {
            BrowserError::StaleRef(r.to_string())
        }
        other => other,
    }
}

fn decode(data: &Value, what: &str) -> Result<Vec<u8>, BrowserError> {
    use base64::Engine as _;
    let text = data.as_str().ok_or_else(|| BrowserError::Protocol {
        method: what.into(),
        message: "no data".into(),
    })?;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| BrowserError::Protocol {
            method: what.into(),
            message: e.to_string(),
        })
}
