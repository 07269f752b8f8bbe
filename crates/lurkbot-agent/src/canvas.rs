//! Canvas widgets (ARCHITECTURE.md §5.2 `canvas`): self-contained HTML/SVG the model shows in
//! the web UI's chat, kept per session so they come back with it. One file per session key,
//! `sessions/<agentId>/canvas/<sha256 of the key>.json`, written atomically; at most
//! [`MAX_WIDGETS`] widgets of at most [`MAX_HTML_BYTES`] each. The HTML is the model's and is
//! never trusted: the web UI runs it in a sandboxed frame without the gateway's origin, under a
//! policy that allows no network (§6).

use std::path::PathBuf;

use lurkbot_core::{Home, SessionKey, write_atomic};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Largest widget, in bytes of HTML.
pub const MAX_HTML_BYTES: usize = 256 * 1024;
/// Most widgets one session keeps.
pub const MAX_WIDGETS: usize = 32;
/// Longest title, in characters.
pub const MAX_TITLE_CHARS: usize = 200;

/// One widget.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Widget {
    /// Its id within the session (`[A-Za-z0-9_-]`, at most 64).
    pub id: String,
    /// Its title.
    pub title: String,
    /// Its HTML.
    pub html: String,
    /// Whether it stays on the session's dashboard.
    pub pinned: bool,
    /// When it last changed (ms since the epoch).
    pub updated_ms: u64,
}

/// What changed, as clients are told (the gateway's `canvas` event).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CanvasChange {
    /// The session.
    pub session_key: String,
    /// `show`, `update` or `hide`.
    pub action: String,
    /// The widget.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Its HTML (absent for `hide`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub html: Option<String>,
    /// Whether it is pinned.
    pub pinned: bool,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stored {
    session_key: String,
    widgets: Vec<Widget>,
}

/// The widgets of one session.
pub struct CanvasStore {
    path: PathBuf,
    key: SessionKey,
}

/// What a widget change asks for.
#[derive(Debug, Default, Clone)]
pub struct WidgetEdit {
    /// The id (a new one is made for `show` without it).
    pub id: Option<String>,
    /// A new title.
    pub title: Option<String>,
    /// New HTML.
    pub html: Option<String>,
    /// Pin or unpin.
    pub pin: Option<bool>,
}

impl CanvasStore {
    /// The widgets of `key` in `home`.
    pub fn open(home: &Home, key: &SessionKey) -> Self {
        let digest = Sha256::digest(key.as_str().as_bytes());
        let name: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        Self {
            path: home
                .join("sessions")
                .join(key.agent_id())
                .join("canvas")
                .join(format!("{name}.json")),
            key: key.clone(),
        }
    }

    /// The widgets, oldest first (none when the file is missing or unreadable).
    pub fn list(&self) -> Vec<Widget> {
        std::fs::read(&self.path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Stored>(&b).ok())
            .filter(|s| s.session_key == self.key.as_str())
            .map(|s| s.widgets)
            .unwrap_or_default()
    }

    /// Shows a widget: a new one, or one with the same id replaced.
    ///
    /// # Errors
    /// Bad id, title or HTML, too many widgets, or the file not written.
    pub fn show(&self, edit: WidgetEdit) -> Result<CanvasChange, String> {
        let html = edit
            .html
            .ok_or("show needs html: a self-contained HTML or SVG document")?;
        let title = edit.title.unwrap_or_default();
        let mut widgets = self.list();
        let id = match edit.id {
            Some(id) => check_id(id)?,
            None => next_id(&widgets),
        };
        let widget = Widget {
            id: id.clone(),
            title: check_title(title)?,
            html: check_html(html)?,
            pinned: edit.pin.unwrap_or(false),
            updated_ms: lurkbot_core::now_ms(),
        };
        let full = widgets.len() >= MAX_WIDGETS;
        match widgets.iter_mut().find(|w| w.id == id) {
            Some(old) => *old = widget.clone(),
            None if full => {
                return Err(format!(
                    "this session already has {MAX_WIDGETS} widgets; hide one first (canvas list names them)"
                ));
            }
            None => widgets.push(widget.clone()),
        }
        self.save(widgets)?;
        Ok(self.change("show", &widget, true))
    }

    /// Changes a widget's title, HTML or pin.
    ///
    /// # Errors
    /// No such widget, bad values, or the file not written.
    pub fn update(&self, edit: WidgetEdit) -> Result<CanvasChange, String> {
        let id = check_id(edit.id.ok_or("update needs the widget's id")?)?;
        let mut widgets = self.list();
        let widget = widgets
            .iter_mut()
            .find(|w| w.id == id)
            .ok_or_else(|| format!("no widget '{id}' in this session (canvas list names them)"))?;
        if let Some(title) = edit.title {
            widget.title = check_title(title)?;
        }
        if let Some(html) = edit.html {
            widget.html = check_html(html)?;
        }
        if let Some(pin) = edit.pin {
            widget.pinned = pin;
        }
        widget.updated_ms = lurkbot_core::now_ms();
        let changed = self.change("update", widget, true);
        self.save(widgets)?;
        Ok(changed)
    }

    /// Removes a widget.
    ///
    /// # Errors
    /// No such widget, or the file not written.
    pub fn hide(&self, id: Option<String>) -> Result<CanvasChange, String> {
        let id = check_id(id.ok_or("hide needs the widget's id")?)?;
        let mut widgets = self.list();
        let at = widgets
            .iter()
            .position(|w| w.id == id)
            .ok_or_else(|| format!("no widget '{id}' in this session"))?;
        let widget = widgets.remove(at);
        self.save(widgets)?;
        Ok(self.change("hide", &widget, false))
    }

    fn change(&self, action: &str, w: &Widget, with_html: bool) -> CanvasChange {
        CanvasChange {
            session_key: self.key.as_str().to_string(),
            action: action.into(),
            id: w.id.clone(),
            title: w.title.clone(),
            html: with_html.then(|| w.html.clone()),
            pinned: w.pinned,
        }
    }

    fn save(&self, widgets: Vec<Widget>) -> Result<(), String> {
        let stored = Stored {
            session_key: self.key.as_str().to_string(),
            widgets,
        };
        let bytes = serde_json::to_vec(&stored).map_err(|e| e.to_string())?;
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("canvas not saved: {e}"))?;
        }
        write_atomic(&self.path, &bytes).map_err(|e| format!("canvas not saved: {e}"))
    }
}

fn check_id(id: String) -> Result<String, String> {
    let ok = !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    ok.then_some(id)
        .ok_or_else(|| "a widget id is 1–64 letters, digits, '-' or '_'".to_string())
}

fn check_title(title: String) -> Result<String, String> {
    if title.chars().count() > MAX_TITLE_CHARS {
        return Err(format!("a title is at most {MAX_TITLE_CHARS} characters"));
    }
    Ok(title)
}

fn check_html(html: String) -> Result<String, String> {
    if html.len() > MAX_HTML_BYTES {
        return Err(format!(
            "the widget is {} bytes; at most {MAX_HTML_BYTES} (256 KiB)",
            html.len()
        ));
    }
    if html.trim().is_empty() {
        return Err("the widget's html is empty".into());
    }
    Ok(html)
}

fn next_id(widgets: &[Widget]) -> String {
    (1..)
        .map(|n| format!("w{n}"))
        .find(|id| !widgets.iter().any(|w| &w.id == id))
        .unwrap_or_else(|| "w".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, CanvasStore) {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::open(dir.path()).unwrap();
        let key = SessionKey::main();
        (dir, CanvasStore::open(&home, &key))
    }

    fn edit(id: Option<&str>, html: Option<&str>, pin: Option<bool>) -> WidgetEdit {
        WidgetEdit {
            id: id.map(str::to_string),
            title: Some("T".into()),
            html: html.map(str::to_string),
            pin,
        }
    }

    #[test]
    fn widgets_are_shown_updated_pinned_and_hidden_and_persist() {
        let (_d, s) = store();
        let shown = s.show(edit(None, Some("<b>1</b>"), None)).unwrap();
        assert_eq!((shown.id.as_str(), shown.pinned), ("w1", false));
        s.show(edit(Some("chart"), Some("<svg/>"), Some(true)))
            .unwrap();
        let up = s
            .update(edit(Some("w1"), Some("<b>2</b>"), Some(true)))
            .unwrap();
        assert_eq!(up.html.as_deref(), Some("<b>2</b>"));
        let list = s.list();
        assert_eq!(list.len(), 2);
        assert!(list.iter().all(|w| w.pinned));
        let hidden = s.hide(Some("chart".into())).unwrap();
        assert_eq!(hidden.html, None);
        assert_eq!(s.list().len(), 1);
    }

    #[test]
    fn bad_widgets_are_refused() {
        let (_d, s) = store();
        let big = "x".repeat(MAX_HTML_BYTES + 1);
        assert!(
            s.show(edit(None, Some(&big), None))
                .unwrap_err()
                .contains("256 KiB")
        );
        assert!(s.show(edit(Some("../x"), Some("a"), None)).is_err());
        assert!(s.show(edit(None, None, None)).is_err());
        assert!(s.update(edit(Some("nope"), Some("a"), None)).is_err());
        for _ in 0..MAX_WIDGETS {
            s.show(edit(None, Some("a"), None)).unwrap();
        }
        assert!(
            s.show(edit(None, Some("a"), None))
                .unwrap_err()
                .contains("hide one")
        );
    }
}
