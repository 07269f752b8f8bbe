//! The managed browser of one home: started on first use, one per profile in the process,
//! restarted with a note when Chromium died, stopped after `idle_minutes` without use and when
//! the process ends (the DevTools pipe closes, and Chromium follows).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use lurkbot_term::{NetworkPolicy, PageLoad};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::cdp::Cdp;
use crate::intercept::intercept;
use crate::launch::{LaunchOptions, launch};
use crate::page::Page;
use crate::proxy::PolicyProxy;
use crate::watch::{Watched, watch};
use crate::{Action, BrowserError, Outcome, lock};

/// How the browser behaves (from `[browser]`).
#[derive(Debug, Clone)]
pub struct Settings {
    /// How Chromium starts.
    pub launch: LaunchOptions,
    /// Stopped after this long unused.
    pub idle: Duration,
    /// JavaScript dialogs are accepted (else dismissed).
    pub accept_dialogs: bool,
    /// Largest download kept.
    pub download_max_bytes: u64,
    /// Where Chromium writes downloads before they are handed over.
    pub staging: PathBuf,
    /// Longest one browser step may take.
    pub timeout: Duration,
}

/// What `status` reports.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// Chromium is running.
    pub running: bool,
    /// An action is in progress: the other figures are from the last look.
    pub busy: bool,
    /// Its process id.
    pub pid: Option<u32>,
    /// Open tabs.
    pub tabs: usize,
    /// Memory of Chromium and its helper processes, in bytes: their proportional set sizes
    /// (shared pages divided among the processes that map them), summed.
    pub memory_bytes: u64,
    /// Requests the policy proxy refused since the start.
    pub blocked_requests: u64,
    /// The executable.
    pub executable: String,
}

/// A started Chromium with its proxy and tabs.
struct Running {
    child: Child,
    cdp: Arc<Cdp>,
    proxy: PolicyProxy,
    current: Option<String>,
    sessions: HashMap<String, String>,
    refs: HashMap<String, i64>,
    document: String,
    watched: Arc<Mutex<Watched>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The browser of one profile.
pub struct Browser {
    state: tokio::sync::Mutex<Option<Running>>,
    last_used_ms: AtomicU64,
    settings: Mutex<Option<Settings>>,
    /// The last full status, shown while an action holds the browser.
    last: Mutex<Option<Status>>,
}

static BROWSERS: LazyLock<Mutex<HashMap<PathBuf, Arc<Browser>>>> = LazyLock::new(Mutex::default);

/// The browser whose profile is `profile` (one per process).
pub fn browser_for(profile: &Path) -> Arc<Browser> {
    let mut all = lock(&BROWSERS);
    Arc::clone(all.entry(profile.to_path_buf()).or_insert_with(|| {
        Arc::new(Browser {
            state: tokio::sync::Mutex::new(None),
            last_used_ms: AtomicU64::new(0),
            settings: Mutex::new(None),
            last: Mutex::new(None),
        })
    }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TargetInfo {
    target_id: String,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    url: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Targets {
    target_infos: Vec<TargetInfo>,
}

impl Browser {
    /// Uses these settings and network rules from now on (called before each use: the owner
    /// may have changed them).
    /// Never waits for an action in progress: the rules reach the proxy at the next action.
    pub async fn configure(&self, settings: Settings, policy: NetworkPolicy) {
        *lock(&self.settings) = Some(settings);
        if let Ok(guard) = self.state.try_lock()
            && let Some(running) = guard.as_ref()
        {
            running.proxy.set_policy(policy);
        }
    }

    fn settings(&self) -> Result<Settings, BrowserError> {
        lock(&self.settings)
            .clone()
            .ok_or_else(|| BrowserError::Unavailable("the browser is not configured".into()))
    }

    /// Chromium's state.
    pub async fn status(&self) -> Status {
        let executable = lock(&self.settings)
            .as_ref()
            .map(|s| s.launch.executable.clone())
            .unwrap_or_default();
        let Ok(mut guard) = self.state.try_lock() else {
            // An action (or a stop) holds the browser: `status` never waits for it; the
            // figures are those of the last look.
            let last = lock(&self.last).clone();
            return Status {
                busy: true,
                executable,
                ..last.unwrap_or(Status {
                    running: true,
                    busy: true,
                    pid: None,
                    tabs: 0,
                    memory_bytes: 0,
                    blocked_requests: 0,
                    executable: String::new(),
                })
            };
        };
        let alive = guard
            .as_mut()
            .is_some_and(|r| r.cdp.is_alive() && matches!(r.child.try_wait(), Ok(None)));
        let Some(running) = guard.as_ref().filter(|_| alive) else {
            return Status {
                running: false,
                busy: false,
                pid: None,
                tabs: 0,
                memory_bytes: 0,
                blocked_requests: 0,
                executable,
            };
        };
        let pid = running.child.id();
        let tabs = pages(&running.cdp, Duration::from_secs(5))
            .await
            .map_or(0, |p| p.len());
        let status = Status {
            running: true,
            busy: false,
            pid: Some(pid),
            tabs,
            memory_bytes: crate::memory::tree_memory(pid),
            blocked_requests: running.proxy.blocked_total(),
            executable,
        };
        *lock(&self.last) = Some(status.clone());
        status
    }

    /// Starts Chromium unless it runs; says what happened.
    ///
    /// # Errors
    /// Chromium is missing or would not start.
    pub async fn start(self: &Arc<Self>, policy: NetworkPolicy) -> Result<String, BrowserError> {
        let mut guard = self.state.lock().await;
        let note = self.ensure(&mut guard, policy).await?;
        Ok(note.unwrap_or_else(|| "Chromium is running".into()))
    }

    /// Stops Chromium; whether it was running. Returns once it has exited (the state stays
    /// locked until then, so `status` never reports a browser that is still going away).
    pub async fn stop(&self) -> bool {
        let mut guard = self.state.lock().await;
        let Some(running) = guard.take() else {
            return false;
        };
        // Ask politely, then the drop kills what is left and reaps it.
        let _ = running
            .cdp
            .call("Browser.close", json!({}), None, Duration::from_secs(2))
            .await;
        let _ = tokio::task::spawn_blocking(move || drop(running)).await;
        drop(guard);
        true
    }

    /// Makes sure Chromium runs; `Some(note)` when it was (re)started.
    async fn ensure(
        self: &Arc<Self>,
        guard: &mut Option<Running>,
        policy: NetworkPolicy,
    ) -> Result<Option<String>, BrowserError> {
        let mut note = None;
        if let Some(running) = guard.as_mut() {
            let exited = running.child.try_wait().ok().flatten();
            if running.cdp.is_alive() && exited.is_none() {
                running.proxy.set_policy(policy);
                return Ok(None);
            }
            let how = exited.map_or_else(|| "it stopped answering".to_string(), |s| s.to_string());
            note = Some(format!(
                "Chromium had stopped ({how}) and was started again: earlier tabs and refs are gone."
            ));
            *guard = None;
        }
        let settings = self.settings()?;
        let proxy = PolicyProxy::start(policy).await?;
        std::fs::create_dir_all(&settings.staging)?;
        let launched = launch(&settings.launch, proxy.addr())?;
        let cdp = launched.cdp;
        // The browser answers once it is up.
        cdp.call(
            "Browser.getVersion",
            json!({}),
            None,
            settings.timeout.max(Duration::from_secs(20)),
        )
        .await
        .map_err(|e| {
            BrowserError::Unavailable(format!(
                "Chromium started but did not answer on its DevTools pipe ({e}); see logs/browser.log"
            ))
        })?;
        cdp.call(
            "Browser.setDownloadBehavior",
            json!({"behavior": "allowAndName", "downloadPath": settings.staging,
                   "eventsEnabled": true}),
            None,
            settings.timeout,
        )
        .await?;
        // Every request of every page is decided before it leaves Chromium (schemes), then by
        // the proxy (addresses).
        let interceptor = intercept(&cdp, &proxy.rules(), settings.timeout).await?;
        let watched = Arc::new(Mutex::new(Watched::default()));
        let watcher = watch(
            Arc::clone(&cdp),
            Arc::clone(&watched),
            proxy.rules(),
            settings.accept_dialogs,
            settings.download_max_bytes,
            settings.staging.clone(),
        );
        // Used now: the reaper must not find the clock of a browser never used (or used long
        // ago, before a restart) and stop the one just started.
        self.touch();
        let reaper = self.reaper(settings.idle);
        // What Chromium asked for on its own while starting is no page's doing.
        let _ = proxy.take_blocked();
        *guard = Some(Running {
            child: launched.child,
            cdp,
            proxy,
            current: None,
            sessions: HashMap::new(),
            refs: HashMap::new(),
            document: String::new(),
            watched,
            tasks: vec![interceptor, watcher, reaper],
        });
        Ok(Some(note.unwrap_or_else(|| "Chromium started.".into())))
    }

    fn touch(&self) {
        self.last_used_ms
            .store(lurkbot_core::now_ms(), Ordering::Relaxed);
    }

    /// Stops the browser once it has gone `idle` without use.
    fn reaper(self: &Arc<Self>, idle: Duration) -> tokio::task::JoinHandle<()> {
        let me = Arc::downgrade(self);
        tokio::spawn(async move {
            let idle_ms = u64::try_from(idle.as_millis()).unwrap_or(u64::MAX);
            loop {
                let Some(b) = me.upgrade() else { return };
                let used = b.last_used_ms.load(Ordering::Relaxed);
                let due = used.saturating_add(idle_ms);
                let now = lurkbot_core::now_ms();
                if now >= due {
                    tracing::info!(
                        "stopping the browser after {} idle minutes",
                        idle_ms / 60_000
                    );
                    // Stop from outside this task: stopping aborts it.
                    tokio::spawn(async move { b.stop().await });
                    return;
                }
                drop(b);
                tokio::time::sleep(Duration::from_millis(due - now)).await;
            }
        })
    }

    /// Runs one action, starting Chromium when needed.
    ///
    /// # Errors
    /// What went wrong, with its code.
    pub async fn act(
        self: &Arc<Self>,
        action: Action,
        policy: NetworkPolicy,
    ) -> Result<Outcome, BrowserError> {
        let settings = self.settings()?;
        // The model's URL is refused before Chromium sees it (or even starts).
        if let Action::Navigate { url } | Action::Open { url } = &action {
            policy
                .check_page_url(url, PageLoad::Document)
                .map_err(|e| BrowserError::Refused(e.to_string()))?;
        }
        let mut guard = self.state.lock().await;
        if matches!(action, Action::Stop) {
            drop(guard);
            let was = self.stop().await;
            return Ok(Outcome::text(if was {
                "Chromium stopped."
            } else {
                "Chromium was not running."
            }));
        }
        let started = self.ensure(&mut guard, policy).await?;
        self.touch();
        let running = guard
            .as_mut()
            .ok_or_else(|| BrowserError::Closed("Chromium is not running".into()))?;
        let mut outcome = crate::actions::run(running_view(running), action, &settings).await?;
        if let Some(note) = started {
            outcome.notes.insert(0, note);
        }
        outcome.blocked = running.proxy.take_blocked();
        let mut watched = lock(&running.watched);
        outcome.notes.append(&mut watched.notes);
        outcome.downloads.append(&mut watched.finished);
        drop(watched);
        self.touch();
        Ok(outcome)
    }
}

/// The parts of a running browser an action uses.
pub(crate) struct View<'a> {
    pub(crate) cdp: &'a Arc<Cdp>,
    pub(crate) current: &'a mut Option<String>,
    pub(crate) sessions: &'a mut HashMap<String, String>,
    pub(crate) refs: &'a mut HashMap<String, i64>,
    /// The document (main frame's loader) the refs were taken from.
    pub(crate) document: &'a mut String,
    pub(crate) watched: &'a Arc<Mutex<Watched>>,
}

fn running_view(r: &mut Running) -> View<'_> {
    View {
        cdp: &r.cdp,
        current: &mut r.current,
        sessions: &mut r.sessions,
        refs: &mut r.refs,
        document: &mut r.document,
        watched: &r.watched,
    }
}

/// (target id, title, url) of every tab. Chromium's own pages that it lists as page targets
/// (the omnibox popup's `chrome://omnibox-popup.top-chrome/`, which comes and goes) are not
/// tabs: the model never sees or drives them.
pub(crate) async fn pages(
    cdp: &Cdp,
    timeout: Duration,
) -> Result<Vec<(String, String, String)>, BrowserError> {
    let targets: Targets = cdp
        .call_as("Target.getTargets", json!({}), None, timeout)
        .await?;
    Ok(targets
        .target_infos
        .into_iter()
        .filter(|t| t.kind == "page" && !is_browsers_own(&t.url))
        .map(|t| (t.target_id, t.title, t.url))
        .collect())
}

/// Whether a target shows one of Chromium's own pages.
fn is_browsers_own(url: &str) -> bool {
    [
        "chrome:",
        "chrome-untrusted:",
        "devtools:",
        "chrome-extension:",
    ]
    .iter()
    .any(|scheme| url.starts_with(scheme))
}

impl View<'_> {
    /// The current tab (the first one, or a new one, when none is chosen).
    pub(crate) async fn tab(&mut self, timeout: Duration) -> Result<String, BrowserError> {
        let all = pages(self.cdp, timeout).await?;
        if let Some(c) = self
            .current
            .as_ref()
            .filter(|c| all.iter().any(|p| &p.0 == *c))
        {
            return Ok(c.clone());
        }
        let id = match all.first() {
            Some(p) => p.0.clone(),
            None => self.new_tab(timeout).await?,
        };
        *self.current = Some(id.clone());
        self.refs.clear();
        Ok(id)
    }

    /// Opens a blank tab; its target id.
    pub(crate) async fn new_tab(&mut self, timeout: Duration) -> Result<String, BrowserError> {
        let created = self
            .cdp
            .call(
                "Target.createTarget",
                json!({"url": "about:blank"}),
                None,
                timeout,
            )
            .await?;
        created["targetId"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| BrowserError::Protocol {
                method: "Target.createTarget".into(),
                message: "no target id".into(),
            })
    }

    /// The DevTools session of a tab (attached on first use).
    pub(crate) async fn session(
        &mut self,
        target: &str,
        timeout: Duration,
    ) -> Result<String, BrowserError> {
        if let Some(s) = self.sessions.get(target) {
            return Ok(s.clone());
        }
        let attached = self
            .cdp
            .call(
                "Target.attachToTarget",
                json!({"targetId": target, "flatten": true}),
                None,
                timeout,
            )
            .await?;
        let session = attached["sessionId"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| BrowserError::Protocol {
                method: "Target.attachToTarget".into(),
                message: "no session id".into(),
            })?;
        Page {
            cdp: self.cdp,
            session: &session,
            timeout,
        }
        .enable()
        .await?;
        self.sessions.insert(target.to_string(), session.clone());
        Ok(session)
    }
}

/// Short form of a target id shown to the model.
pub(crate) fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// `Value` helper for actions.
pub(crate) fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
