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
    async fn call(&self, method: &str, params: Value) -> Result<Value, BrowserError> {
        self.cdp
            .call(method, params, Some(self.session), self.timeout)
            .await
    }

    /// Turns on the events the browser relies on (dialogs, loads).
    pub(crate) async fn enable(&self) -> Result<(), BrowserError> {
        self.call("Page.enable", json!({})).await?;
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
        self.wait_for_load(&mut events, self.timeout).await;
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
    async fn settle(&self) {
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
    pub(crate) async fn snapshot(
        &self,
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
                // A frame from another site runs in its own process and is not readable here.
                Err(_) => writer.add_line(1, "- (content of another site's frame not shown)"),
            }
            stack.extend(frame.children.iter());
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

    /// The centre of the node, scrolled into view.
    async fn centre(&self, node: i64, r: &str) -> Result<(f64, f64), BrowserError> {
        let _ = self
            .call("DOM.scrollIntoViewIfNeeded", json!({"backendNodeId": node}))
            .await
            .map_err(|e| stale(e, r))?;
        let quads = self
            .call("DOM.getContentQuads", json!({"backendNodeId": node}))
            .await
            .map_err(|e| stale(e, r))?;
        let quad: Vec<f64> = quads["quads"]
            .get(0)
            .and_then(Value::as_array)
            .map(|q| q.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        if quad.len() != 8 {
            return Err(BrowserError::InvalidArgs(format!(
                "{r} is not visible on the page (it has no box to click); scroll, or snapshot again"
            )));
        }
        let x = (quad[0] + quad[2] + quad[4] + quad[6]) / 4.0;
        let y = (quad[1] + quad[3] + quad[5] + quad[7]) / 4.0;
        Ok((x, y))
    }

    /// Moves the mouse over the node.
    pub(crate) async fn hover(&self, node: i64, r: &str) -> Result<(), BrowserError> {
        let (x, y) = self.centre(node, r).await?;
        self.mouse("mouseMoved", x, y).await
    }

    /// Clicks the node.
    pub(crate) async fn click(&self, node: i64, r: &str) -> Result<(), BrowserError> {
        let (x, y) = self.centre(node, r).await?;
        self.after_input(async {
            self.mouse("mouseMoved", x, y).await?;
            self.mouse("mousePressed", x, y).await?;
            self.mouse("mouseReleased", x, y).await
        })
        .await
    }

    async fn mouse(&self, kind: &str, x: f64, y: f64) -> Result<(), BrowserError> {
        let mut params = json!({"type": kind, "x": x, "y": y});
        if kind != "mouseMoved" {
            params["button"] = json!("left");
            params["clickCount"] = json!(1);
        }
        self.call("Input.dispatchMouseEvent", params).await?;
        Ok(())
    }

    /// Types `text` into the node (after what it holds); `replace` empties it first.
    pub(crate) async fn type_text(
        &self,
        node: i64,
        r: &str,
        text: &str,
        replace: bool,
    ) -> Result<(), BrowserError> {
        self.call("DOM.focus", json!({"backendNodeId": node}))
            .await
            .map_err(|e| stale(e, r))?;
        if replace {
            self.call_on(node, r, CLEAR, Vec::new()).await?;
        }
        self.after_input(async {
            self.call("Input.insertText", json!({"text": text}))
                .await
                .map(drop)
        })
        .await?;
        self.call_on(node, r, CHANGED, Vec::new()).await?;
        Ok(())
    }

    /// Presses a key (on the node when given, else wherever the focus is).
    pub(crate) async fn press(
        &self,
        key: &str,
        node: Option<(i64, &str)>,
    ) -> Result<(), BrowserError> {
        if let Some((node, r)) = node {
            self.call("DOM.focus", json!({"backendNodeId": node}))
                .await
                .map_err(|e| stale(e, r))?;
        }
        let (code, vk, text) = key_of(key).ok_or_else(|| {
            BrowserError::InvalidArgs(format!(
                "unknown key '{key}'; use a single character or one of Enter, Tab, Escape, Backspace, Delete, Space, ArrowUp, ArrowDown, ArrowLeft, ArrowRight, PageUp, PageDown, Home, End"
            ))
        })?;
        self.after_input(async {
            let mut down = json!({"type": "keyDown", "key": key, "code": code,
                "windowsVirtualKeyCode": vk});
            if let Some(t) = &text {
                down["text"] = json!(t);
            }
            self.call("Input.dispatchKeyEvent", down).await?;
            self.call(
                "Input.dispatchKeyEvent",
                json!({"type": "keyUp", "key": key, "code": code, "windowsVirtualKeyCode": vk}),
            )
            .await
            .map(drop)
        })
        .await
    }

    /// Picks options of a `<select>` by value or label.
    pub(crate) async fn select(
        &self,
        node: i64,
        r: &str,
        values: &[String],
    ) -> Result<Value, BrowserError> {
        self.call_on(node, r, SELECT, vec![json!(values)]).await
    }

    /// Scrolls the node into view, or the page by a screen (`up`, `down`, `top`, `bottom`).
    pub(crate) async fn scroll(
        &self,
        node: Option<(i64, &str)>,
        way: &str,
    ) -> Result<(), BrowserError> {
        if let Some((node, r)) = node {
            self.call("DOM.scrollIntoViewIfNeeded", json!({"backendNodeId": node}))
                .await
                .map_err(|e| stale(e, r))?;
            return Ok(());
        }
        let script = match way {
            "up" => "scrollBy(0, -innerHeight * 0.9)",
            "top" => "scrollTo(0, 0)",
            "bottom" => "scrollTo(0, document.documentElement.scrollHeight)",
            _ => "scrollBy(0, innerHeight * 0.9)",
        };
        self.call("Runtime.evaluate", json!({"expression": script}))
            .await?;
        self.settle().await;
        Ok(())
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

    /// Gives a file input these files (absolute paths already checked by the caller).
    pub(crate) async fn upload(
        &self,
        node: i64,
        r: &str,
        files: &[String],
    ) -> Result<(), BrowserError> {
        self.call(
            "DOM.setFileInputFiles",
            json!({"files": files, "backendNodeId": node}),
        )
        .await
        .map_err(|e| stale(e, r))?;
        Ok(())
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

const CLEAR: &str = "function() { if (this.isContentEditable) { this.textContent = ''; } else if ('value' in this) { this.value = ''; } this.dispatchEvent(new Event('input', {bubbles: true})); }";
const CHANGED: &str =
    "function() { this.dispatchEvent(new Event('change', {bubbles: true})); return true; }";
const SELECT: &str = "function(wanted) { if (!(this instanceof HTMLSelectElement)) throw new Error('not a select element'); const hits = [...this.options].filter(o => wanted.includes(o.value) || wanted.includes(o.label) || wanted.includes(o.text.trim())); if (!hits.length) throw new Error('no option matches ' + JSON.stringify(wanted)); const chosen = this.multiple ? hits : hits.slice(0, 1); for (const o of this.options) o.selected = chosen.includes(o); this.dispatchEvent(new Event('input', {bubbles: true})); this.dispatchEvent(new Event('change', {bubbles: true})); return chosen.map(o => o.label || o.value); }";
const WAIT_FOR_TEXT: &str = "(text) => new Promise(r => { const ok = () => document.body && document.body.innerText.includes(text); if (ok()) return r(true); const o = new MutationObserver(() => { if (ok()) { o.disconnect(); r(true); } }); o.observe(document, {subtree: true, childList: true, characterData: true}); })";

/// A node error, told as a stale ref when the node is gone.
fn stale(e: BrowserError, r: &str) -> BrowserError {
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

/// (code, virtual key code, text) of a key name.
fn key_of(key: &str) -> Option<(String, u32, Option<String>)> {
    let named = match key {
        "Enter" => ("Enter", 13, Some("\r")),
        "Tab" => ("Tab", 9, None),
        "Escape" => ("Escape", 27, None),
        "Backspace" => ("Backspace", 8, None),
        "Delete" => ("Delete", 46, None),
        "Space" | " " => ("Space", 32, Some(" ")),
        "ArrowUp" => ("ArrowUp", 38, None),
        "ArrowDown" => ("ArrowDown", 40, None),
        "ArrowLeft" => ("ArrowLeft", 37, None),
        "ArrowRight" => ("ArrowRight", 39, None),
        "PageUp" => ("PageUp", 33, None),
        "PageDown" => ("PageDown", 34, None),
        "Home" => ("Home", 36, None),
        "End" => ("End", 35, None),
        _ => {
            let mut chars = key.chars();
            let c = chars.next()?;
            if chars.next().is_some() {
                return None;
            }
            let upper = c.to_ascii_uppercase();
            let code = if c.is_ascii_alphabetic() {
                format!("Key{upper}")
            } else if c.is_ascii_digit() {
                format!("Digit{c}")
            } else {
                String::new()
            };
            return Some((code, u32::from(upper), Some(c.to_string())));
        }
    };
    Some((named.0.to_string(), named.1, named.2.map(str::to_string)))
}
