//! LurkBot's browser (ARCHITECTURE.md §5.3): a managed headless Chromium driven over the DevTools
//! protocol on a pipe, pages seen as accessibility snapshots with refs, actions by ref, and the
//! policy proxy every request of every page goes through — the network policy of §4.6, the
//! same one `web_fetch` obeys, as a real boundary rather than a check before navigating.
//!
//! This crate knows nothing of the agent: the `browser` tool hands it the rules the gate chose
//! and reads or writes home files (uploads, PDFs, downloads) through the protection model.

mod actions;
mod blocked;
mod browser;
mod cdp;
mod error;
mod input;
mod intercept;
mod launch;
mod memory;
mod page;
mod proxy;
mod snapshot;
mod watch;

pub use blocked::Blocked;
pub use browser::{Browser, Settings, Status, browser_for};
pub use error::BrowserError;
pub use launch::{LaunchOptions, find_executable};
pub use proxy::PolicyProxy;
pub use snapshot::MAX_CHARS as SNAPSHOT_MAX_CHARS;
pub use watch::Download;

use serde_json::Value;

/// A mutex's guard; a panic elsewhere never makes the browser's state unreadable.
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Every action of the `browser` tool.
pub const ACTIONS: &[&str] = &[
    "status",
    "start",
    "stop",
    "tabs",
    "open",
    "focus",
    "close",
    "navigate",
    "snapshot",
    "click",
    "type",
    "fill",
    "press",
    "hover",
    "select",
    "scroll",
    "wait",
    "screenshot",
    "pdf",
    "upload",
    "download",
    "evaluate",
];

/// One thing to do in the browser.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Action {
    /// Chromium's state.
    Status,
    /// Start Chromium.
    Start,
    /// Stop Chromium.
    Stop,
    /// List the tabs.
    Tabs,
    /// A new tab at `url`.
    Open {
        /// Where.
        url: String,
    },
    /// Make a tab current.
    Focus {
        /// Its id (or a prefix).
        tab: String,
    },
    /// Close a tab (the current one when none is named).
    Close {
        /// Its id.
        tab: Option<String>,
    },
    /// Load `url` in the current tab.
    Navigate {
        /// Where.
        url: String,
    },
    /// The accessibility tree with refs.
    Snapshot,
    /// Click a node.
    Click {
        /// The ref.
        r: String,
    },
    /// Type after what a field holds.
    Type {
        /// The ref.
        r: String,
        /// The text.
        text: String,
    },
    /// Replace what a field holds.
    Fill {
        /// The ref.
        r: String,
        /// The text.
        text: String,
    },
    /// Press a key.
    Press {
        /// `Enter`, `Tab`, a character…
        key: String,
        /// On this node (else where the focus is).
        r: Option<String>,
    },
    /// Move the mouse over a node.
    Hover {
        /// The ref.
        r: String,
    },
    /// Pick options of a `<select>`.
    Select {
        /// The ref.
        r: String,
        /// Values or labels.
        values: Vec<String>,
    },
    /// Scroll a node into view, or the page.
    Scroll {
        /// The ref.
        r: Option<String>,
        /// `down` (default), `up`, `top`, `bottom`.
        way: String,
    },
    /// Wait for text, or for the page to settle.
    Wait {
        /// The text.
        text: Option<String>,
    },
    /// A PNG of the page.
    Screenshot {
        /// The whole page, not the viewport.
        full_page: bool,
    },
    /// The page as PDF.
    Pdf,
    /// Set files on a file input (absolute paths, checked by the caller).
    Upload {
        /// The ref.
        r: String,
        /// The files.
        files: Vec<String>,
    },
    /// Click a node that starts a download, and wait for it.
    Download {
        /// The ref.
        r: String,
    },
    /// Run a script (only when the owner set `[browser] evaluate = true`).
    Evaluate {
        /// The expression.
        expression: String,
    },
}

impl Action {
    /// The action the tool's arguments describe. `upload` carries the paths as written; the
    /// caller replaces them with checked absolute paths.
    ///
    /// # Errors
    /// [`BrowserError::InvalidArgs`] saying what is missing.
    pub fn from_args(args: &Value, evaluate_allowed: bool) -> Result<Self, BrowserError> {
        let text = |name: &str| {
            args.get(name)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let need = |name: &str, action: &str| {
            text(name).ok_or_else(|| {
                BrowserError::InvalidArgs(format!("'{action}' needs the parameter '{name}'"))
            })
        };
        let raw_text = |action: &str| {
            args.get("text")
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| {
                    BrowserError::InvalidArgs(format!("'{action}' needs the parameter 'text'"))
                })
        };
        let list = |name: &str| -> Vec<String> {
            match args.get(name) {
                Some(Value::Array(a)) => a
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect(),
                Some(Value::String(s)) => vec![s.clone()],
                _ => Vec::new(),
            }
        };
        let action = text("action").unwrap_or_default();
        Ok(match action.as_str() {
            "status" => Self::Status,
            "start" => Self::Start,
            "stop" => Self::Stop,
            "tabs" => Self::Tabs,
            "open" => Self::Open {
                url: need("url", "open")?,
            },
            "focus" => Self::Focus {
                tab: need("tabId", "focus")?,
            },
            "close" => Self::Close { tab: text("tabId") },
            "navigate" => Self::Navigate {
                url: need("url", "navigate")?,
            },
            "snapshot" => Self::Snapshot,
            "click" => Self::Click {
                r: need("ref", "click")?,
            },
            "type" => Self::Type {
                r: need("ref", "type")?,
                text: raw_text("type")?,
            },
            "fill" => Self::Fill {
                r: need("ref", "fill")?,
                text: raw_text("fill")?,
            },
            "press" => Self::Press {
                key: need("key", "press")?,
                r: text("ref"),
            },
            "hover" => Self::Hover {
                r: need("ref", "hover")?,
            },
            "select" => {
                let values = list("values");
                if values.is_empty() {
                    return Err(BrowserError::InvalidArgs(
                        "'select' needs 'values': the options' values or labels".into(),
                    ));
                }
                Self::Select {
                    r: need("ref", "select")?,
                    values,
                }
            }
            "scroll" => Self::Scroll {
                r: text("ref"),
                way: text("text").unwrap_or_else(|| "down".into()),
            },
            "wait" => Self::Wait { text: text("text") },
            "screenshot" => Self::Screenshot {
                full_page: args
                    .get("fullPage")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            },
            "pdf" => Self::Pdf,
            "upload" => {
                let files = list("path");
                if files.is_empty() {
                    return Err(BrowserError::InvalidArgs(
                        "'upload' needs 'path': the home file (or a list of them) to upload".into(),
                    ));
                }
                Self::Upload {
                    r: need("ref", "upload")?,
                    files,
                }
            }
            "download" => Self::Download {
                r: need("ref", "download")?,
            },
            "evaluate" if evaluate_allowed => Self::Evaluate {
                expression: need("text", "evaluate")?,
            },
            "evaluate" => {
                return Err(BrowserError::InvalidArgs(
                    "evaluate is off: the owner allows scripts with [browser] evaluate = true in config.toml".into(),
                ));
            }
            other => {
                return Err(BrowserError::InvalidArgs(format!(
                    "unknown action '{other}'; one of: {}",
                    ACTIONS.join(", ")
                )));
            }
        })
    }
}

/// What an action produced.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Text for the model (page text is third-party text).
    pub text: String,
    /// A screenshot (PNG).
    pub png: Option<Vec<u8>>,
    /// A printed page (PDF).
    pub pdf: Option<Vec<u8>>,
    /// Downloads that finished, still in the staging folder.
    pub downloads: Vec<Download>,
    /// Requests the policy refused during the action.
    pub blocked: Vec<Blocked>,
    /// Other things to tell (a restart, dialogs, refused downloads).
    pub notes: Vec<String>,
}

impl Outcome {
    /// Just text.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }

    /// The lines to add after the text: notes and the blocked requests.
    pub fn footer(&self) -> Vec<String> {
        let mut lines = self.notes.clone();
        lines.extend(blocked::blocked_lines(&self.blocked));
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refused(args: Value, evaluate: bool) -> String {
        match Action::from_args(&args, evaluate) {
            Err(e) => format!("{}: {e}", e.code()),
            Ok(a) => panic!("{args} was taken as {a:?}"),
        }
    }

    #[test]
    fn arguments_an_action_cannot_use_are_refused_with_what_to_give() {
        let cases = [
            (json!({}), "unknown action ''"),
            (
                json!({"action": "dance"}),
                "unknown action 'dance'; one of: status",
            ),
            (
                json!({"action": "navigate"}),
                "'navigate' needs the parameter 'url'",
            ),
            (
                json!({"action": "click", "ref": "  "}),
                "'click' needs the parameter 'ref'",
            ),
            (
                json!({"action": "type", "ref": "e1"}),
                "'type' needs the parameter 'text'",
            ),
            (
                json!({"action": "select", "ref": "e1"}),
                "'select' needs 'values'",
            ),
            (
                json!({"action": "upload", "ref": "e1"}),
                "'upload' needs 'path'",
            ),
            (
                json!({"action": "focus"}),
                "'focus' needs the parameter 'tabId'",
            ),
            (
                json!({"action": "evaluate", "text": "1"}),
                "[browser] evaluate = true",
            ),
        ];
        for (args, expected) in cases {
            let got = refused(args, false);
            assert!(got.starts_with("InvalidArgs: "), "{got}");
            assert!(got.contains(expected), "{got} lacks {expected}");
        }
        assert_eq!(
            Action::from_args(&json!({"action": "evaluate", "text": "1"}), true).ok(),
            Some(Action::Evaluate {
                expression: "1".into()
            })
        );
        // Typed text keeps its spaces; a single path is a list of one.
        assert_eq!(
            Action::from_args(
                &json!({"action": "type", "ref": "e2", "text": " a "}),
                false
            )
            .ok(),
            Some(Action::Type {
                r: "e2".into(),
                text: " a ".into()
            })
        );
        assert_eq!(
            Action::from_args(
                &json!({"action": "upload", "ref": "e3", "path": "f.txt"}),
                false
            )
            .ok(),
            Some(Action::Upload {
                r: "e3".into(),
                files: vec!["f.txt".into()]
            })
        );
    }
}
