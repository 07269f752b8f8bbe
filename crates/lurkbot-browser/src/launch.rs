//! Starting Chromium: the executable found on `PATH` (or as configured), its own profile in
//! `browser/profile` (0700), headless, every request through the policy proxy, DevTools on a
//! pipe. Chromium's life is tied to ours through that pipe: when LurkBot exits — even by
//! `kill -9` — the pipe reaches end of file and Chromium quits with its helpers.

use std::os::fd::OwnedFd;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use command_fds::{CommandFdExt, FdMapping};

use crate::BrowserError;
use crate::cdp::Cdp;

/// How to start Chromium.
#[derive(Debug, Clone)]
pub struct LaunchOptions {
    /// The executable: a name looked up on `PATH`, or a path.
    pub executable: String,
    /// Run without a window (the default).
    pub headless: bool,
    /// The profile directory.
    pub profile: PathBuf,
    /// Where Chromium's own output goes.
    pub log: PathBuf,
}

/// A started Chromium.
pub(crate) struct Launched {
    pub(crate) child: Child,
    pub(crate) cdp: Arc<Cdp>,
}

/// The executable `name` names: itself when it has a `/`, else the first match on `PATH`.
pub fn find_executable(name: &str) -> Option<PathBuf> {
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if name.contains('/') {
        let path = PathBuf::from(name);
        return runnable(&path).then_some(path);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| runnable(p))
}

/// The command-line switches, beside the profile and the proxy.
fn switches(options: &LaunchOptions, proxy: std::net::SocketAddr) -> Vec<String> {
    let mut args = vec![
        "--remote-debugging-pipe".to_string(),
        format!("--user-data-dir={}", options.profile.display()),
        format!("--proxy-server=http://{proxy}"),
        // Without it Chromium sends loopback requests around the proxy.
        "--proxy-bypass-list=<-loopback>".into(),
        // Chromium resolves no name itself (no DNS prefetch, no lookup around the proxy): every
        // name maps to "not found"; proxied requests carry the name to the proxy unresolved.
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1".into(),
        // QUIC is UDP, which no proxy carries. (WebRTC's UDP is turned off in the profile's
        // preferences: its command-line switch has no effect in headless Chromium.)
        "--disable-quic".into(),
        // No calls home (they would only be refused by the proxy).
        "--no-first-run".into(),
        "--no-default-browser-check".into(),
        "--disable-background-networking".into(),
        "--disable-component-update".into(),
        "--disable-sync".into(),
        "--disable-domain-reliability".into(),
        "--disable-breakpad".into(),
        "--metrics-recording-only".into(),
        "--disable-features=Translate,OptimizationHints,OptimizationGuideModelDownloading,MediaRouter,DialMediaRouteProvider,AutofillServerCommunication,BackForwardCache,AccountConsistency,NetworkTimeServiceQuerying".into(),
        "--disable-back-forward-cache".into(),
        "--disable-extensions".into(),
        "--disable-default-apps".into(),
        "--disable-client-side-phishing-detection".into(),
        "--disable-component-extensions-with-background-pages".into(),
        "--disable-search-engine-choice-screen".into(),
        "--password-store=basic".into(),
        "--disable-dev-shm-usage".into(),
        "--mute-audio".into(),
        "--hide-scrollbars".into(),
        "--window-size=1280,800".into(),
    ];
    if options.headless {
        args.push("--headless".into());
        args.push("--disable-gpu".into());
    }
    if rustix::process::geteuid().is_root() {
        // Chromium refuses to run as root with its sandbox on.
        args.push("--no-sandbox".into());
    }
    args.push("about:blank".into());
    args
}

/// Starts Chromium with its requests sent to `proxy`.
pub(crate) fn launch(
    options: &LaunchOptions,
    proxy: std::net::SocketAddr,
) -> Result<Launched, BrowserError> {
    let executable = find_executable(&options.executable).ok_or_else(|| {
        BrowserError::Unavailable(format!(
            "Chromium was not found ('{}' is not an executable on PATH); install it (Debian: apt-get install chromium) or set [browser] executable in config.toml",
            options.executable
        ))
    })?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&options.profile)?;
    std::fs::set_permissions(&options.profile, std::fs::Permissions::from_mode(0o700))?;
    pin_preferences(&options.profile)?;
    if let Some(dir) = options.log.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&options.log)?;
    let (from_us, to_browser) = pipe()?;
    let (from_browser, to_us) = pipe()?;
    let mut command = Command::new(&executable);
    command
        .args(switches(options, proxy))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log));
    command
        .fd_mappings(vec![
            FdMapping {
                parent_fd: from_us,
                child_fd: 3,
            },
            FdMapping {
                parent_fd: to_us,
                child_fd: 4,
            },
        ])
        .map_err(|e| BrowserError::Unavailable(format!("cannot pass the DevTools pipe: {e}")))?;
    let child = command.spawn().map_err(|e| {
        BrowserError::Unavailable(format!("cannot start {}: {e}", executable.display()))
    })?;
    // The child's ends were moved into the command, which is dropped here: our copies close,
    // so end of file on the pipe means Chromium is gone.
    drop(command);
    let cdp = Cdp::new(
        std::fs::File::from(to_browser),
        std::fs::File::from(from_browser),
    );
    Ok(Launched { child, cdp })
}

/// The profile preferences every start sets, over whatever the profile holds: WebRTC may use
/// no UDP that does not go through the proxy (an HTTP proxy carries none), so a page's peer
/// connection reaches only what the proxy allows, over TCP.
const PINNED: &[(&str, &str, &str)] =
    &[("webrtc", "ip_handling_policy", "disable_non_proxied_udp")];

/// Writes [`PINNED`] into `profile/Default/Preferences` (kept otherwise; replaced when it is
/// not a JSON object), atomically and private.
fn pin_preferences(profile: &Path) -> Result<(), BrowserError> {
    let path = profile.join("Default/Preferences");
    let mut prefs = std::fs::read(&path)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .filter(serde_json::Value::is_object)
        .unwrap_or_else(|| serde_json::json!({}));
    for (section, key, value) in PINNED {
        if !prefs[*section].is_object() {
            prefs[*section] = serde_json::json!({});
        }
        prefs[*section][*key] = serde_json::json!(value);
    }
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let bytes = serde_json::to_vec(&prefs).map_err(|e| BrowserError::Io(e.to_string()))?;
    lurkbot_core::write_atomic_with_mode(&path, &bytes, 0o600)
        .map_err(|e| BrowserError::Io(format!("{}: {e}", path.display())))
}

/// A pipe: (read end, write end), both close-on-exec.
fn pipe() -> Result<(OwnedFd, OwnedFd), BrowserError> {
    let (read, write) = std::io::pipe()
        .map_err(|e| BrowserError::Unavailable(format!("cannot make a pipe: {e}")))?;
    Ok((OwnedFd::from(read), OwnedFd::from(write)))
}
