//! One action on the running browser: which tab, which node, and what to say back.

use std::time::Duration;

use serde_json::json;

use crate::browser::{Settings, View, as_text, pages, short};
use crate::page::Page;
use crate::{Action, BrowserError, Outcome, lock};

/// Runs `action` (not `status`, `start` or `stop`, which the browser handles itself).
pub(crate) async fn run(
    mut v: View<'_>,
    action: Action,
    settings: &Settings,
) -> Result<Outcome, BrowserError> {
    let t = settings.timeout;
    match action {
        Action::Status | Action::Start | Action::Stop => Ok(Outcome::text("Chromium is running.")),
        Action::Tabs => {
            let current = v.tab(t).await?;
            let mut out = String::new();
            for (id, title, url) in pages(v.cdp, t).await? {
                let mark = if id == current { "*" } else { " " };
                out.push_str(&format!("{mark} {} {title} ({url})\n", short(&id)));
            }
            Ok(Outcome::text(out))
        }
        Action::Open { url } => {
            let id = v.new_tab(t).await?;
            *v.current = Some(id.clone());
            v.refs.clear();
            let session = v.session(&id, t).await?;
            let page = page(&v, &session, t);
            activate(&v, &id, t).await;
            page.navigate(&url).await?;
            Ok(Outcome::text(format!(
                "Opened tab {}: {}",
                short(&id),
                here(&page).await
            )))
        }
        Action::Focus { tab } => {
            let id = find_tab(&v, &tab, t).await?;
            activate(&v, &id, t).await;
            *v.current = Some(id.clone());
            v.refs.clear();
            let session = v.session(&id, t).await?;
            Ok(Outcome::text(format!(
                "Tab {} is current: {}",
                short(&id),
                here(&page(&v, &session, t)).await
            )))
        }
        Action::Close { tab } => {
            let id = match tab {
                Some(tab) => find_tab(&v, &tab, t).await?,
                None => v.tab(t).await?,
            };
            v.cdp
                .call("Target.closeTarget", json!({"targetId": id}), None, t)
                .await?;
            v.sessions.remove(&id);
            if v.current.as_deref() == Some(id.as_str()) {
                *v.current = None;
                v.refs.clear();
            }
            Ok(Outcome::text(format!("Closed tab {}.", short(&id))))
        }
        Action::Navigate { url } => {
            let (session, _) = current(&mut v, t).await?;
            v.refs.clear();
            let page = page(&v, &session, t);
            page.navigate(&url).await?;
            Ok(Outcome::text(format!("Loaded {}", here(&page).await)))
        }
        Action::Snapshot => {
            let (session, id) = current(&mut v, t).await?;
            let page = page(&v, &session, t);
            let frames = lock(v.watched).frames.clone();
            let (tree, refs, document) = page.snapshot(&frames).await?;
            let head = here(&page).await;
            *v.refs = refs;
            *v.document = document;
            Ok(Outcome::text(format!(
                "Tab {} — {head}\n{tree}",
                short(&id)
            )))
        }
        Action::Click { r } => {
            let (session, node) = target(&mut v, &r, t).await?;
            let page = page(&v, &session, t);
            page.click(node, &r).await?;
            Ok(Outcome::text(format!(
                "Clicked {r}. Now: {}",
                here(&page).await
            )))
        }
        Action::Hover { r } => {
            let (session, node) = target(&mut v, &r, t).await?;
            page(&v, &session, t).hover(node, &r).await?;
            Ok(Outcome::text(format!("The mouse is over {r}.")))
        }
        Action::Type { r, text } | Action::Fill { r, text } if text.len() > 100_000 => {
            let _ = (r, text);
            Err(BrowserError::InvalidArgs(
                "text is longer than 100,000 characters".into(),
            ))
        }
        Action::Type { r, text } => {
            let (session, node) = target(&mut v, &r, t).await?;
            let page = page(&v, &session, t);
            page.type_text(node, &r, &text, false).await?;
            Ok(Outcome::text(format!("Typed into {r}.")))
        }
        Action::Fill { r, text } => {
            let (session, node) = target(&mut v, &r, t).await?;
            let page = page(&v, &session, t);
            page.type_text(node, &r, &text, true).await?;
            Ok(Outcome::text(format!("Filled {r}.")))
        }
        Action::Press { key, r } => {
            let (session, node) = match &r {
                Some(r) => {
                    let (s, n) = target(&mut v, r, t).await?;
                    (s, Some(n))
                }
                None => (current(&mut v, t).await?.0, None),
            };
            let page = page(&v, &session, t);
            page.press(&key, node.zip(r.as_deref())).await?;
            Ok(Outcome::text(format!(
                "Pressed {key}. Now: {}",
                here(&page).await
            )))
        }
        Action::Select { r, values } => {
            let (session, node) = target(&mut v, &r, t).await?;
            let picked = page(&v, &session, t).select(node, &r, &values).await?;
            Ok(Outcome::text(format!(
                "Selected {} in {r}.",
                as_text(&picked)
            )))
        }
        Action::Scroll { r, way } => {
            let (session, node) = match &r {
                Some(r) => {
                    let (s, n) = target(&mut v, r, t).await?;
                    (s, Some(n))
                }
                None => (current(&mut v, t).await?.0, None),
            };
            page(&v, &session, t)
                .scroll(node.zip(r.as_deref()), &way)
                .await?;
            Ok(Outcome::text("Scrolled."))
        }
        Action::Wait { text } => {
            let (session, _) = current(&mut v, t).await?;
            let page = page(&v, &session, t);
            page.wait_for(text.as_deref()).await?;
            Ok(Outcome::text(match text {
                Some(text) => format!("\"{text}\" is on the page."),
                None => "The page has settled.".into(),
            }))
        }
        Action::Screenshot { full_page } => {
            let (session, _) = current(&mut v, t).await?;
            let page = page(&v, &session, t);
            let png = page.screenshot(full_page).await?;
            let mut out = Outcome::text(format!("Screenshot of {}", here(&page).await));
            out.png = Some(png);
            Ok(out)
        }
        Action::Pdf => {
            let (session, _) = current(&mut v, t).await?;
            let page = page(&v, &session, t);
            let pdf = page.pdf().await?;
            let mut out = Outcome::text(format!("PDF of {}", here(&page).await));
            out.pdf = Some(pdf);
            Ok(out)
        }
        Action::Upload { r, files } => {
            let (session, node) = target(&mut v, &r, t).await?;
            page(&v, &session, t).upload(node, &r, &files).await?;
            Ok(Outcome::text(format!(
                "{} file(s) set on {r}.",
                files.len()
            )))
        }
        Action::Download { r } => {
            let (session, node) = target(&mut v, &r, t).await?;
            let mut ended = lock(v.watched).ended.subscribe();
            let before = *ended.borrow_and_update();
            page(&v, &session, t).click(node, &r).await?;
            let done = tokio::time::timeout(t, ended.wait_for(|n| *n != before)).await;
            if !matches!(done, Ok(Ok(_))) {
                return Err(BrowserError::Timeout(format!(
                    "the download started by {r}"
                )));
            }
            Ok(Outcome::text(format!("Clicked {r} to download.")))
        }
        Action::Evaluate { expression } => {
            let (session, _) = current(&mut v, t).await?;
            let value = page(&v, &session, t).evaluate(&expression).await?;
            Ok(Outcome::text(as_text(&value)))
        }
    }
}

fn page<'a>(v: &'a View<'_>, session: &'a str, timeout: Duration) -> Page<'a> {
    Page {
        cdp: v.cdp,
        session,
        timeout,
    }
}

/// `title (url)` of the page.
async fn here(page: &Page<'_>) -> String {
    let (title, url) = page.location().await;
    if title.is_empty() {
        url
    } else {
        format!("{title} ({url})")
    }
}

async fn activate(v: &View<'_>, id: &str, t: Duration) {
    let _ = v
        .cdp
        .call("Target.activateTarget", json!({"targetId": id}), None, t)
        .await;
}

/// The current tab's session and target id.
async fn current(v: &mut View<'_>, t: Duration) -> Result<(String, String), BrowserError> {
    let id = v.tab(t).await?;
    let session = v.session(&id, t).await?;
    Ok((session, id))
}

/// The session and DOM node a ref of the last snapshot stands for.
async fn target(v: &mut View<'_>, r: &str, t: Duration) -> Result<(String, i64), BrowserError> {
    let (session, _) = current(v, t).await?;
    if v.refs.is_empty() {
        return Err(BrowserError::StaleRef(format!(
            "{r}: no snapshot of this page has been taken, so"
        )));
    }
    let node = *v
        .refs
        .get(r)
        .ok_or_else(|| BrowserError::StaleRef(r.to_string()))?;
    // A ref stands for a node of the document it was taken from, and only while it is there.
    let page = page(v, &session, t);
    if page.document().await? != *v.document || !page.connected(node, r).await? {
        return Err(BrowserError::StaleRef(r.to_string()));
    }
    Ok((session, node))
}

/// The tab whose id starts with `wanted`.
async fn find_tab(v: &View<'_>, wanted: &str, t: Duration) -> Result<String, BrowserError> {
    let wanted = wanted.trim();
    let all = pages(v.cdp, t).await?;
    let mut hits = all
        .iter()
        .filter(|p| !wanted.is_empty() && p.0.starts_with(wanted));
    match (hits.next(), hits.next()) {
        (Some(p), None) => Ok(p.0.clone()),
        _ => Err(BrowserError::NoTab(wanted.to_string())),
    }
}
