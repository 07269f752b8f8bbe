//! Input by ref on one tab: the mouse (hover, click), the keyboard (type, fill, press), form
//! controls (select, file inputs) and scrolling — each waiting for what it set off to settle.

use serde_json::{Value, json};

use crate::BrowserError;
use crate::page::{Page, stale};

impl Page<'_> {
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
}

const CLEAR: &str = "function() { if (this.isContentEditable) { this.textContent = ''; } else if ('value' in this) { this.value = ''; } this.dispatchEvent(new Event('input', {bubbles: true})); }";
const CHANGED: &str =
    "function() { this.dispatchEvent(new Event('change', {bubbles: true})); return true; }";
const SELECT: &str = "function(wanted) { if (!(this instanceof HTMLSelectElement)) throw new Error('not a select element'); const hits = [...this.options].filter(o => wanted.includes(o.value) || wanted.includes(o.label) || wanted.includes(o.text.trim())); if (!hits.length) throw new Error('no option matches ' + JSON.stringify(wanted)); const chosen = this.multiple ? hits : hits.slice(0, 1); for (const o of this.options) o.selected = chosen.includes(o); this.dispatchEvent(new Event('input', {bubbles: true})); this.dispatchEvent(new Event('change', {bubbles: true})); return chosen.map(o => o.label || o.value); }";
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
