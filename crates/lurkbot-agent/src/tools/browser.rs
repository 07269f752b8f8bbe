//! `browser {action, …}` (ARCHITECTURE.md §5.3): the agent's hands on a managed Chromium. The
//! tool is thin: `lurkbot-browser` drives Chromium and enforces the network rules **the gate**
//! gives a URL from outside the settings on every request of every page; this file reads and
//! writes home files through the protection model (uploads read, PDFs and downloads written)
//! and hands screenshots to the model through the image path.

use std::sync::Arc;
use std::time::Duration;

use lurkbot_browser::{Action, Browser, LaunchOptions, Outcome, Settings, browser_for};
use lurkbot_core::{Config, Home};
use lurkbot_llm::ToolSpec;
use serde_json::{Value, json};

use super::fs::{readable, resolve_path, writable, write_checked};
use super::{Tool, ToolCtx, ToolFuture, ToolOutput};
use crate::gate::{UrlFrom, web_rules};

/// The browser's profile, home-relative (secret to every tool: cookies, logins).
pub const BROWSER_PROFILE: &str = "browser/profile";

/// This process's browser profile in `home`: `browser/profile`, or `browser/profile-<gateway>`
/// for a gateway whose state is in PostgreSQL (Chromium locks a profile: each gateway sharing
/// the home keeps its own, [`lurkbot_core::instance`]).
pub fn browser_profile(home: &Home) -> std::path::PathBuf {
    home.join(lurkbot_core::instance::local_name(BROWSER_PROFILE).as_str())
}

/// Where downloads and PDFs land.
const DOWNLOADS: &str = "workspace/downloads";

/// The `browser` tool.
pub(crate) struct BrowserTool;

/// The tool's spec; `evaluate` is listed only when the owner allows it.
pub(crate) fn spec(evaluate: bool) -> ToolSpec {
    let actions: Vec<&str> = lurkbot_browser::ACTIONS
        .iter()
        .copied()
        .filter(|a| evaluate || *a != "evaluate")
        .collect();
    ToolSpec {
        name: "browser".into(),
        description: "Drive a browser; snapshot gives refs (e1…) for actions.".into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": actions},
                "url": {"type": "string"},
                "ref": {"type": "string"},
                "text": {"type": "string"},
                "key": {"type": "string"},
                "values": {"type": "array"},
                "tabId": {"type": "string"},
                "fullPage": {"type": "boolean"},
                "path": {"type": "string"}
            },
            "required": ["action"]
        }),
    }
}

/// The browser of this home, configured from `config`.
pub async fn home_browser(home: &Home, config: &Config) -> Arc<Browser> {
    let browser = browser_for(&browser_profile(home));
    browser
        .configure(
            settings(home, config),
            web_rules(UrlFrom::Elsewhere, config),
        )
        .await;
    browser
}

/// The network rules every page request is held to (the gate's, for URLs from outside the
/// settings).
pub fn page_rules(config: &Config) -> lurkbot_term::NetworkPolicy {
    web_rules(UrlFrom::Elsewhere, config)
}

fn settings(home: &Home, config: &Config) -> Settings {
    let b = &config.browser;
    Settings {
        launch: LaunchOptions {
            executable: b.executable.clone(),
            headless: b.headless,
            profile: browser_profile(home),
            log: home.join("logs/browser.log"),
        },
        idle: Duration::from_secs(b.idle_minutes.max(1) * 60),
        accept_dialogs: b.dialogs.eq_ignore_ascii_case("accept"),
        download_max_bytes: b.download_max_bytes,
        staging: home.join("browser/downloads"),
        timeout: Duration::from_secs(b.timeout_seconds.clamp(1, 600)),
    }
}

impl Tool for BrowserTool {
    /// Looking is free; acting (navigate, click, type, …) is not.
    fn side_effect_free(&self, args: &Value) -> bool {
        matches!(
            args.get("action").and_then(Value::as_str),
            Some("status" | "tabs" | "snapshot" | "screenshot")
        )
    }

    fn spec(&self) -> ToolSpec {
        spec(false)
    }

    fn run<'a>(&'a self, ctx: &'a ToolCtx<'a>, args: &'a Value) -> ToolFuture<'a> {
        Box::pin(async move {
            match drive(ctx, args).await {
                Ok(out) => out,
                Err(e) => e,
            }
        })
    }
}

async fn drive(ctx: &ToolCtx<'_>, args: &Value) -> Result<ToolOutput, ToolOutput> {
    let fail = |e: lurkbot_browser::BrowserError| ToolOutput::error(format!("{}: {e}", e.code()));
    let mut action = Action::from_args(args, ctx.config.browser.evaluate).map_err(fail)?;
    let browser = home_browser(ctx.home, ctx.config).await;
    let rules = page_rules(ctx.config);
    match &mut action {
        Action::Status => {
            let status = browser.status().await;
            return Ok(ToolOutput::ok(
                serde_json::to_string(&status).unwrap_or_default(),
            ));
        }
        Action::Start => {
            let note = browser.start(rules).await.map_err(fail)?;
            return Ok(ToolOutput::ok(note));
        }
        Action::Upload { files, .. } => {
            // Chromium reads the file the protection model allowed: the resolved path.
            let mut checked = Vec::with_capacity(files.len());
            for raw in files.iter() {
                let path = resolve_path(ctx, raw)?;
                readable(ctx, &path)?;
                if !path.absolute().is_file() {
                    return Err(ToolOutput::error(format!(
                        "InvalidArgs: {raw} is not a file in the home"
                    )));
                }
                checked.push(path.absolute().to_string_lossy().into_owned());
            }
            *files = checked;
        }
        _ => {}
    }
    let outcome = browser.act(action, rules).await.map_err(fail)?;
    deliver(ctx, outcome).await
}

/// The outcome as the model sees it: files written through the protection model, the
/// screenshot as an image part, notes and refused requests after the text.
async fn deliver(ctx: &ToolCtx<'_>, outcome: Outcome) -> Result<ToolOutput, ToolOutput> {
    let mut lines = vec![outcome.text.trim_end().to_string()];
    for d in &outcome.downloads {
        let saved = keep_file(ctx, &d.name, &std::fs::read(&d.staged).unwrap_or_default());
        let _ = std::fs::remove_file(&d.staged);
        lines.push(match saved {
            Ok(rel) => format!("downloaded {} ({} bytes) to {rel}", d.name, d.bytes),
            Err(why) => format!("the download {} was not kept: {why}", d.name),
        });
    }
    if let Some(pdf) = &outcome.pdf {
        let name = format!("page-{}.pdf", lurkbot_core::now_ms());
        match keep_file(ctx, &name, pdf) {
            Ok(rel) => lines.push(format!("saved as {rel} ({} bytes)", pdf.len())),
            Err(why) => return Err(ToolOutput::error(format!("IoError: {why}"))),
        }
    }
    lines.extend(outcome.footer());
    let text = lines.join("\n");
    let Some(png) = outcome.png else {
        return Ok(ToolOutput::ok(text));
    };
    let prepared = tokio::task::spawn_blocking(move || lurkbot_media::prepare(&png))
        .await
        .map_err(|e| ToolOutput::error(format!("ImageDamaged: {e}")))?
        .map_err(|e| ToolOutput::error(format!("{}: the screenshot: {e}", e.code())))?;
    let part = crate::images::keep(ctx.home, &prepared)
        .map_err(|e| ToolOutput::error(format!("cannot keep the screenshot: {e}")))?;
    if !crate::images::sees_images(ctx.config, ctx.model) {
        return Ok(ToolOutput::ok(format!(
            "{text}\nThe screenshot is kept as {}; {} cannot see images (use snapshot to read the page).",
            part.path, ctx.model
        )));
    }
    let (w, h) = prepared.size;
    Ok(
        ToolOutput::ok(format!("{text}\nThe screenshot ({w}×{h}) is attached."))
            .with_images(vec![part]),
    )
}

/// Writes `bytes` as `workspace/downloads/<name>` (the name made safe, a number added when
/// taken) through the protection model; the home-relative path written.
fn keep_file(ctx: &ToolCtx<'_>, name: &str, bytes: &[u8]) -> Result<String, String> {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, '.' | '-' | '_' | ' ') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let safe = safe.trim_start_matches('.').trim();
    let safe = if safe.is_empty() { "download" } else { safe };
    let (stem, ext) = match safe.rsplit_once('.') {
        Some((s, e)) if !s.is_empty() => (s.to_string(), format!(".{e}")),
        _ => (safe.to_string(), String::new()),
    };
    for n in 0..1000 {
        let candidate = if n == 0 {
            format!("{DOWNLOADS}/{stem}{ext}")
        } else {
            format!("{DOWNLOADS}/{stem} ({n}){ext}")
        };
        let path = resolve_path(ctx, &candidate).map_err(|o| o.text)?;
        if path.absolute().exists() {
            continue;
        }
        writable(ctx, &path).map_err(|o| o.text)?;
        write_checked(&path, bytes)?;
        return Ok(path.relative().to_string());
    }
    Err(format!("too many files named {safe} in {DOWNLOADS}"))
}
