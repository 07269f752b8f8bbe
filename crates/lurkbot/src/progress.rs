//! The progress bar `lurkbot exec` draws on an interactive stderr for long archive work.
//!
//! It appears only after the operation has run for a moment (short runs stay quiet), never when
//! stderr is not a terminal and never in `--json` mode, and is cleared when the work ends.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use lurkbot_term::ProgressSink;

/// How long an operation runs before the bar appears.
const SHOW_AFTER: Duration = Duration::from_millis(150);

/// An indicatif bar on stderr.
pub(crate) struct TerminalProgress {
    bar: ProgressBar,
    started: Mutex<Option<Instant>>,
}

impl TerminalProgress {
    /// A hidden bar, shown once an operation runs long enough.
    pub(crate) fn new() -> Self {
        Self {
            bar: ProgressBar::hidden(),
            started: Mutex::new(None),
        }
    }
}

impl ProgressSink for TerminalProgress {
    fn begin(&self, label: &str, total_bytes: Option<u64>) {
        self.bar.reset();
        let template = match total_bytes {
            Some(total) if total > 0 => {
                self.bar.set_length(total);
                "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}"
            }
            _ => {
                self.bar.unset_length();
                "{spinner} {msg} {bytes} {bytes_per_sec}"
            }
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            self.bar.set_style(style.progress_chars("=> "));
        }
        self.bar.set_message(label.to_string());
        if let Ok(mut started) = self.started.lock() {
            *started = Some(Instant::now());
        }
    }

    fn advance(&self, bytes: u64) {
        self.bar.inc(bytes);
        if let Ok(mut started) = self.started.lock()
            && started.is_some_and(|t| t.elapsed() >= SHOW_AFTER)
        {
            *started = None;
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }

    fn end(&self) {
        self.bar.finish_and_clear();
        self.bar.set_draw_target(ProgressDrawTarget::hidden());
        if let Ok(mut started) = self.started.lock() {
            *started = None;
        }
    }
}
