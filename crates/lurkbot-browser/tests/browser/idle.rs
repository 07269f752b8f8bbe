//! A browser nobody uses stops by itself after its idle time (the reaper, not the test).

use std::path::Path;
use std::time::Duration;

use lurkbot_browser::{Action, browser_for};
use lurkbot_term::NetworkPolicy;

use super::settings;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unused_browser_stops_after_its_idle_time() {
    let dir = tempfile::tempdir().unwrap();
    let policy = NetworkPolicy::default();
    let b = browser_for(&dir.path().join("profile"));
    let mut quick = settings(dir.path());
    quick.idle = Duration::from_millis(300);
    b.configure(quick, policy.clone()).await;
    b.act(Action::Tabs, policy.clone()).await.unwrap();
    let pid = b.status().await.pid.unwrap();
    // Stopped by the reaper, not by us: wait for it (bounded).
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while b.status().await.running {
        assert!(std::time::Instant::now() < deadline, "still running");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "Chromium {pid} is gone"
    );
}
