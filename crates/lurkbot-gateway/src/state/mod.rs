//! The composition root: [`AppState`] builds each capability (the session host, the hub, the
//! nodes, the users, the timers' state) and holds its handle for the server and the handlers.
//! The capabilities below it never see it; `members.rs` keeps the users' own states.

pub(crate) mod members;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use lurkbot_core::{Config, Home};
use lurkbot_term::TerminalExec;
use tokio::sync::watch;

use crate::access::auth::FailureLimiter;
use crate::events::hub::{ClientApprover, Hub};
use crate::turns::host::SessionHost;

/// Called with the new settings when a reload puts them in force (the binary re-applies its log
/// level with it).
pub type ReloadHook = Arc<dyn Fn(&Config) + Send + Sync>;

/// The gateway's shared state.
#[derive(Clone)]
pub struct AppState {
    /// The home.
    pub home: Home,
    /// Settings, replaced whole by a reload (`gateway.reload`, SIGHUP).
    config: Arc<RwLock<Arc<Config>>>,
    /// The token clients must present (`None`: `gateway.auth = "none"` on loopback).
    pub token: Option<Arc<str>>,
    /// The hooks' bearer token (`None`: hooks are off).
    pub hooks_token: Option<Arc<str>>,
    /// Event fan-out.
    pub hub: Hub,
    /// Approvals asked of the clients.
    pub approver: Arc<ClientApprover>,
    /// Per-session agents and turns.
    pub host: Arc<SessionHost>,
    /// The pseudo-terminal.
    pub exec: Arc<TerminalExec>,
    /// Failed-auth limiter.
    pub limiter: Arc<FailureLimiter>,
    /// The cron scheduler's and heartbeat's shared state.
    pub autonomy: Arc<crate::ops::autonomy::Autonomy>,
    /// Paired devices and live node connections.
    pub nodes: Arc<crate::nodes::registry::Nodes>,
    /// When the state was made (ms since the epoch): the gateway's start, for uptime.
    pub started_ms: u64,
    /// The users of a shared gateway (`[users] enabled`; read at start).
    pub users: Option<Arc<crate::users::tenants::Tenants>>,
    /// The users' own states (`[users] enabled`; shared by the gateway's and each user's).
    pub members: Option<Arc<crate::state::members::Members>>,
    /// Whose state this is: `None` for the gateway's own home, else the user's name.
    pub user: Option<Arc<str>>,
    reload_hook: Option<ReloadHook>,
    live_connections: Arc<AtomicUsize>,
    /// Connections that show canvas widgets (the web UI, `caps: ["canvas"]`).
    canvas_viewers: Arc<AtomicUsize>,
    shutdown: Arc<watch::Sender<bool>>,
    bound: Arc<OnceLock<SocketAddr>>,
}

impl AppState {
    /// State for `home`.
    pub fn new(
        home: Home,
        config: Config,
        token: Option<String>,
        hooks_token: Option<String>,
    ) -> Self {
        let hub = Hub::default();
        let approver = Arc::new(ClientApprover::new(hub.clone()));
        let host = SessionHost::new(home.clone(), config.clone(), hub.clone(), approver.clone());
        let exec = host.exec();
        let nodes = Arc::new(crate::nodes::registry::Nodes::new(&home));
        let users = config
            .users
            .enabled
            .then(|| Arc::new(crate::users::tenants::Tenants::open(&home)));
        let members = users.as_ref().map(|_| Arc::default());
        Self {
            users,
            members,
            user: None,
            home,
            config: Arc::new(RwLock::new(Arc::new(config))),
            token: token.map(Arc::from),
            hooks_token: hooks_token.map(Arc::from),
            hub,
            approver,
            host,
            exec,
            limiter: Arc::new(FailureLimiter::default()),
            autonomy: Arc::default(),
            nodes,
            started_ms: lurkbot_core::now_ms(),
            reload_hook: None,
            live_connections: Arc::new(AtomicUsize::new(0)),
            canvas_viewers: Arc::new(AtomicUsize::new(0)),
            shutdown: Arc::new(watch::channel(false).0),
            bound: Arc::new(OnceLock::new()),
        }
    }

    /// The state of user `name` on this shared gateway: their own home, session host,
    /// terminal, event hub, approvals and scheduler state; the listener, limits and shutdown
    /// are the gateway's.
    pub(crate) fn for_user(&self, name: &str, home: Home, config: Config) -> Self {
        let hub = Hub::default();
        let approver = Arc::new(ClientApprover::new(hub.clone()));
        let host = SessionHost::new(home.clone(), config.clone(), hub.clone(), approver.clone())
            .sharing_channels(&self.host);
        host.bounds.for_a_user();
        host.drain.follow(&self.host.drain);
        let exec = host.exec();
        let nodes = Arc::new(crate::nodes::registry::Nodes::new(&home));
        Self {
            users: self.users.clone(),
            members: self.members.clone(),
            user: Some(Arc::from(name)),
            home,
            config: Arc::new(RwLock::new(Arc::new(config))),
            token: None,
            hooks_token: None,
            hub,
            approver,
            host,
            exec,
            limiter: self.limiter.clone(),
            autonomy: Arc::default(),
            nodes,
            started_ms: self.started_ms,
            reload_hook: None,
            live_connections: self.live_connections.clone(),
            canvas_viewers: Arc::new(AtomicUsize::new(0)),
            shutdown: self.shutdown.clone(),
            bound: self.bound.clone(),
        }
    }

    /// Calls `hook` whenever a reload puts new settings in force (builder style).
    #[must_use]
    pub fn with_reload_hook(mut self, hook: ReloadHook) -> Self {
        self.reload_hook = Some(hook);
        self
    }

    /// What a reload calls with the new settings, if the embedder gave it.
    pub(crate) fn reload_hook(&self) -> Option<&ReloadHook> {
        self.reload_hook.as_ref()
    }

    /// The settings in force now.
    pub fn config(&self) -> Arc<Config> {
        match self.config.read() {
            Ok(c) => c.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Puts `config` in force for every request and turn that starts from now on.
    pub(crate) fn replace_config(&self, config: Config) {
        if self.user.is_none()
            && let Some(members) = &self.members
        {
            members.replace_config(&config);
        }
        let config = Arc::new(config);
        self.host.replace_config(config.clone());
        match self.config.write() {
            Ok(mut c) => *c = config,
            Err(poisoned) => *poisoned.into_inner() = config,
        }
    }

    /// What the timers (cron, heartbeat) may use.
    pub(crate) fn timers(&self) -> crate::ops::scheduler::Timers {
        crate::ops::scheduler::Timers::new(self.host.clone(), self.autonomy.clone())
    }

    /// What the channel loop may use: the session host and, on a shared gateway, the users'
    /// own hosts.
    pub(crate) fn channel_context(&self) -> crate::channels::context::ChannelContext {
        let users = self.users.clone().map(|tenants| {
            let hosts: Arc<dyn crate::channels::context::UserHosts> =
                Arc::new(members::MemberHosts(self.clone()));
            (tenants, hosts)
        });
        crate::channels::context::ChannelContext::new(self.host.clone(), users)
    }

    /// The address the gateway listens on (set once when serving starts).
    pub fn bound(&self) -> Option<SocketAddr> {
        self.bound.get().copied()
    }

    /// Records the listening address (the first call wins).
    pub fn set_bound(&self, addr: SocketAddr) {
        let _ = self.bound.set(addr);
    }

    /// Tells every connection the gateway is stopping.
    pub fn begin_shutdown(&self) {
        let _ = self.shutdown.send(true);
    }

    /// Resolves when the gateway begins to stop.
    pub fn stopping(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    /// Whether a connection that shows canvas widgets is open.
    pub fn shows_canvas(&self) -> bool {
        self.canvas_viewers.load(Ordering::Relaxed) > 0
    }

    /// Counts a canvas-showing connection while the guard lives.
    pub(crate) fn canvas_viewer(&self) -> CanvasViewer {
        self.canvas_viewers.fetch_add(1, Ordering::Relaxed);
        CanvasViewer(self.canvas_viewers.clone())
    }

    /// Open WebSocket connections.
    pub fn connections(&self) -> usize {
        self.live_connections.load(Ordering::Relaxed)
    }

    /// Counts a connection while the guard lives.
    pub fn connection_guard(&self) -> ConnectionGuard {
        self.live_connections.fetch_add(1, Ordering::Relaxed);
        ConnectionGuard(self.live_connections.clone())
    }
}

/// Decrements the connection count when dropped.
pub struct ConnectionGuard(Arc<AtomicUsize>);

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One connection that shows canvas widgets, counted while it lives.
pub(crate) struct CanvasViewer(Arc<AtomicUsize>);

impl Drop for CanvasViewer {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A handler that needs only the session host takes it (`State<Arc<SessionHost>>`), not the
/// whole state.
impl axum::extract::FromRef<AppState> for Arc<SessionHost> {
    fn from_ref(state: &AppState) -> Self {
        state.host.clone()
    }
}
