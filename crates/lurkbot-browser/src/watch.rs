//! What happens in the browser between actions: JavaScript dialogs answered as `[browser]
//! dialogs` says (a dialog left open would hang the page), and downloads followed to the end —
//! one over the size cap is cancelled and its partial file removed, and one whose origin is not
//! an http(s) URL the network policy allows (a `file:`, `data:` or `filesystem:` URL; a `blob:`
//! counts as the page that made it) is removed, never kept.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lurkbot_term::NetworkPolicy;
use serde_json::json;
use url::{Origin, Url};

use crate::cdp::Cdp;
use crate::lock;
use crate::proxy::Rules;

/// A finished download, still in the staging folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Download {
    /// Where Chromium wrote it.
    pub staged: PathBuf,
    /// The name the site suggested.
    pub name: String,
    /// Its size.
    pub bytes: u64,
}

/// Things seen since the last action.
#[derive(Debug, Default)]
pub(crate) struct Watched {
    /// Lines for the next answer (dialogs, refused downloads).
    pub(crate) notes: Vec<String>,
    /// Downloads that finished.
    pub(crate) finished: Vec<Download>,
    /// How many downloads have ended either way (finished or refused); an action waiting for
    /// its download subscribes to it.
    pub(crate) ended: tokio::sync::watch::Sender<u64>,
    /// Frames of other sites: the session attached to each → (the session of the page or
    /// frame that holds it, its URL).
    pub(crate) frames: HashMap<String, (String, String)>,
}

/// Follows the browser's events until it exits.
pub(crate) fn watch(
    cdp: Arc<Cdp>,
    watched: Arc<Mutex<Watched>>,
    rules: Arc<Rules>,
    accept_dialogs: bool,
    max_bytes: u64,
    staging: PathBuf,
) -> tokio::task::JoinHandle<()> {
    let mut events = cdp.subscribe();
    tokio::spawn(async move {
        // Each download under way: its guid → (the suggested name, the URL it came from).
        let mut names: HashMap<String, (String, String)> = HashMap::new();
        // Downloads this watcher cancelled: their later events (progress already queued, a
        // late "completed") are ignored and their file removed.
        let mut cancelled: std::collections::HashSet<String> = std::collections::HashSet::new();
        let note = |line: String, ended: bool| {
            let mut w = lock(&watched);
            w.notes.push(line);
            if ended {
                w.ended.send_modify(|n| *n += 1);
            }
        };
        loop {
            let event = match events.recv().await {
                Ok(e) => e,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            };
            let p = &event.params;
            match event.method.as_str() {
                "Target.attachedToTarget" if p["targetInfo"]["type"] == "iframe" => {
                    if let (Some(parent), Some(session)) =
                        (event.session.as_deref(), p["sessionId"].as_str())
                    {
                        let url = p["targetInfo"]["url"].as_str().unwrap_or_default();
                        lock(&watched)
                            .frames
                            .insert(session.into(), (parent.into(), url.into()));
                    }
                }
                "Target.detachedFromTarget" => {
                    if let Some(session) = p["sessionId"].as_str() {
                        lock(&watched).frames.remove(session);
                    }
                }
                "Page.javascriptDialogOpening" => {
                    let _ = cdp
                        .call(
                            "Page.handleJavaScriptDialog",
                            json!({"accept": accept_dialogs}),
                            event.session.as_deref(),
                            Duration::from_secs(5),
                        )
                        .await;
                    note(
                        format!(
                            "a {} dialog said \"{}\" and was {}",
                            p["type"].as_str().unwrap_or("page"),
                            p["message"].as_str().unwrap_or_default(),
                            if accept_dialogs {
                                "accepted"
                            } else {
                                "dismissed"
                            }
                        ),
                        false,
                    );
                }
                "Browser.downloadWillBegin" => {
                    let guid = p["guid"].as_str().unwrap_or_default().to_string();
                    let name = p["suggestedFilename"]
                        .as_str()
                        .unwrap_or("download")
                        .to_string();
                    let url = p["url"].as_str().unwrap_or_default().to_string();
                    names.insert(guid, (name, url));
                }
                "Browser.downloadProgress" => {
                    let guid = p["guid"].as_str().unwrap_or_default().to_string();
                    let received = p["receivedBytes"].as_f64().unwrap_or(0.0);
                    let total = p["totalBytes"].as_f64().unwrap_or(0.0);
                    let state = p["state"].as_str().unwrap_or_default();
                    if cancelled.contains(&guid) {
                        if state != "inProgress" {
                            remove_partial(&staging, &guid);
                        }
                        continue;
                    }
                    let (name, url) = names
                        .get(&guid)
                        .cloned()
                        .unwrap_or_else(|| ("download".into(), String::new()));
                    #[allow(clippy::cast_precision_loss)]
                    let cap = max_bytes as f64;
                    if state == "inProgress" && (received > cap || total > cap) {
                        let _ = cdp
                            .call(
                                "Browser.cancelDownload",
                                json!({"guid": guid}),
                                None,
                                Duration::from_secs(5),
                            )
                            .await;
                        remove_partial(&staging, &guid);
                        names.remove(&guid);
                        cancelled.insert(guid);
                        note(
                            format!(
                                "DownloadTooLarge: {name} was stopped: it is larger than the {max_bytes}-byte cap ([browser] download_max_bytes)"
                            ),
                            true,
                        );
                    } else if state == "completed" {
                        names.remove(&guid);
                        if let Err(why) = kept_origin(&url, &rules.policy()).await {
                            remove_partial(&staging, &guid);
                            note(format!("DownloadRefused: {name} was not kept: {why}"), true);
                            continue;
                        }
                        let staged = staging.join(&guid);
                        let bytes = std::fs::metadata(&staged).map_or(0, |m| m.len());
                        let mut w = lock(&watched);
                        w.finished.push(Download {
                            staged,
                            name,
                            bytes,
                        });
                        w.ended.send_modify(|n| *n += 1);
                    } else if state == "canceled" && names.remove(&guid).is_some() {
                        remove_partial(&staging, &guid);
                        note(format!("the download of {name} was cancelled"), true);
                    }
                }
                _ => {}
            }
        }
    })
}

/// Removes what a stopped download left in `staging`: the file under its guid, and the
/// partial Chromium writes beside it while it runs (`<guid>.crdownload`).
fn remove_partial(staging: &std::path::Path, guid: &str) {
    let _ = std::fs::remove_file(staging.join(guid));
    let _ = std::fs::remove_file(staging.join(format!("{guid}.crdownload")));
}

/// Whether a download from `raw` may be kept: it came from an http(s) URL (or a `blob:` of an
/// http(s) page) whose host the network policy allows.
async fn kept_origin(raw: &str, policy: &NetworkPolicy) -> Result<(), String> {
    let url = Url::parse(raw).map_err(|_| "its origin is not a URL".to_string())?;
    let from = match url.scheme() {
        "http" | "https" => url,
        "blob" => match url.origin() {
            Origin::Tuple(scheme, host, port) if matches!(scheme.as_str(), "http" | "https") => {
                Url::parse(&format!("{scheme}://{host}:{port}/"))
                    .map_err(|_| "its origin is not a URL".to_string())?
            }
            _ => return Err("it was made by a page that is not http(s)".into()),
        },
        other => {
            return Err(format!(
                "it came from a {other}: URL; only files from http(s) pages the network policy allows are kept"
            ));
        }
    };
    policy
        .check(&from)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_downloads_from_allowed_http_pages_are_kept() {
        let policy = NetworkPolicy {
            allow_private: false,
            allow_hosts: vec!["127.0.0.1:8080".into()],
        };
        for ok in [
            "http://127.0.0.1:8080/report.csv",
            "blob:http://127.0.0.1:8080/1b9d6bcd-bbfd-4b2d-9b5d-ab8dfbbd4bed",
        ] {
            assert_eq!(kept_origin(ok, &policy).await, Ok(()), "{ok}");
        }
        for (refused, why) in [
            ("file:///home/me/.lurkbot/config.toml", "a file: URL"),
            ("data:text/plain,hello", "a data: URL"),
            (
                "filesystem:http://127.0.0.1:8080/temporary/x",
                "a filesystem: URL",
            ),
            ("blob:null/1b9d6bcd", "not http(s)"),
            ("http://127.0.0.2:8080/report.csv", "non-public"),
            ("blob:http://127.0.0.1:9999/1b9d6bcd", "non-public"),
            ("not a url", "not a URL"),
        ] {
            let got = kept_origin(refused, &policy).await;
            assert!(
                got.as_ref().is_err_and(|e| e.contains(why)),
                "{refused}: {got:?}"
            );
        }
    }
}
