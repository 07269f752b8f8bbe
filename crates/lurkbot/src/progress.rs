//! The progress bar `lurkbot exec` draws on an interactive stderr for long archive work.
//!
//! It appears only after the operation has run for a moment (short runs stay quiet; 150 ms, or
//! `LURKBOT_PROGRESS_AFTER_MS`) — on a timer, so a compressor that takes a while over its first
//! blocks cannot hide it — never when stderr is not a terminal and never in `--json` mode, and is
//! cleared when the work ends. While it shows it ticks (elapsed time, spinner) even between
//! advances.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use lurkbot_term::ProgressSink;

/// How long an operation runs before the bar appears, unless `LURKBOT_PROGRESS_AFTER_MS` says.
const SHOW_AFTER: Duration = Duration::from_millis(150);

/// The delay before the bar appears: `LURKBOT_PROGRESS_AFTER_MS` when it is a whole number of
/// milliseconds (0 shows it at once), else [`SHOW_AFTER`].
pub(crate) fn show_after_from_env() -> Duration {
    std::env::var("LURKBOT_PROGRESS_AFTER_MS")
        .ok()
        .and_then(|ms| ms.trim().parse().ok())
        .map_or(SHOW_AFTER, Duration::from_millis)
}

/// An indicatif bar on stderr.
pub(crate) struct TerminalProgress {
    bar: ProgressBar,
    show_after: Duration,
    started: Mutex<Option<Instant>>,
    /// Bumped by every begin and end: a reveal timer of an older phase does nothing.
    phase: Arc<Mutex<u64>>,
}

impl TerminalProgress {
    /// A hidden bar, shown once an operation has run for `show_after`.
    pub(crate) fn new(show_after: Duration) -> Self {
        Self {
            bar: ProgressBar::hidden(),
            show_after,
            started: Mutex::new(None),
            phase: Arc::new(Mutex::new(0)),
        }
    }

    fn reveal(bar: &ProgressBar) {
        bar.set_draw_target(ProgressDrawTarget::stderr());
        bar.enable_steady_tick(Duration::from_millis(200));
    }
}

impl ProgressSink for TerminalProgress {
    fn begin(&self, label: &str, total_bytes: Option<u64>) {
        self.bar.reset();
        let template = match total_bytes {
            Some(total) if total > 0 => {
                self.bar.set_length(total);
                "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {elapsed} eta {eta}"
            }
            _ => {
                self.bar.unset_length();
                "{spinner} {msg} {bytes} {bytes_per_sec} {elapsed}"
            }
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            self.bar.set_style(style.progress_chars("=> "));
        }
        self.bar.set_message(label.to_string());
        if let Ok(mut started) = self.started.lock() {
            *started = Some(Instant::now());
        }
        let phase = match self.phase.lock() {
            Ok(mut p) => {
                *p += 1;
                *p
            }
            Err(_) => return,
        };
        let (bar, current, show_after) = (self.bar.clone(), self.phase.clone(), self.show_after);
        std::thread::spawn(move || {
            std::thread::sleep(show_after);
            // Under the lock, so an `end` cannot slip between the check and the reveal.
            if let Ok(now) = current.lock()
                && *now == phase
            {
                Self::reveal(&bar);
            }
        });
    }

    fn relabel(&self, label: &str) {
        self.bar.set_message(label.to_string());
    }

    fn advance(&self, bytes: u64) {
        self.bar.inc(bytes);
        if let Ok(mut started) = self.started.lock()
            && started.is_some_and(|t| t.elapsed() >= self.show_after)
        {
            *started = None;
            Self::reveal(&self.bar);
        }
    }

    fn end(&self) {
        // Held until the bar is hidden: a reveal timer waits, then sees a newer phase.
        let mut phase = self.phase.lock().ok();
        if let Some(p) = phase.as_mut() {
            **p += 1;
        }
        self.bar.disable_steady_tick();
        self.bar.finish_and_clear();
        self.bar.set_draw_target(ProgressDrawTarget::hidden());
        drop(phase);
        if let Ok(mut started) = self.started.lock() {
            *started = None;
        }
    }
}
