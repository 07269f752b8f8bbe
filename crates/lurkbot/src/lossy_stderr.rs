//! Log lines to stderr that never block serving (ARCHITECTURE.md §9): each line is queued to a
//! writer thread of its own; when the terminal or pipe is stuck (nobody reads it) the queue
//! fills and further lines are dropped and counted, and the count is written before the next
//! line that gets through. A gateway whose stderr nobody read used to stop answering, `/health`
//! included, after about 64 KiB of log lines: a runtime thread blocked in the pipe write.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};

/// Lines waiting for the writer thread at most.
const QUEUE_LINES: usize = 1024;

/// Lines queued and lines written, process-wide: [`drain`] waits for the one to reach the other.
static QUEUED: AtomicU64 = AtomicU64::new(0);
static WRITTEN: AtomicU64 = AtomicU64::new(0);

/// Waits (at most `limit`) until every line queued so far is written: called as the process
/// ends, so its last lines ("gateway stopped") are not lost with the writer thread.
pub(crate) fn drain(limit: std::time::Duration) {
    let queued = QUEUED.load(Ordering::Acquire);
    let deadline = std::time::Instant::now() + limit;
    while WRITTEN.load(Ordering::Acquire) < queued && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// A `MakeWriter` for `tracing_subscriber`: one event's text per writer, queued when dropped.
#[derive(Clone)]
pub(crate) struct LossyStderr {
    queue: SyncSender<Vec<u8>>,
    dropped: Arc<AtomicU64>,
}

impl LossyStderr {
    /// Starts the writer thread (it ends when every writer is gone).
    pub(crate) fn start() -> Self {
        let (queue, lines) = sync_channel(QUEUE_LINES);
        let dropped = Arc::new(AtomicU64::new(0));
        let counted = dropped.clone();
        // Without the thread (none could be made) every line is dropped and counted rather than
        // written in place.
        let _ = std::thread::Builder::new()
            .name("lurkbot-stderr".into())
            .spawn(move || write_lines(&lines, &counted));
        Self { queue, dropped }
    }
}

fn write_lines(lines: &Receiver<Vec<u8>>, dropped: &AtomicU64) {
    let mut stderr = std::io::stderr();
    while let Ok(line) = lines.recv() {
        let lost = dropped.swap(0, Ordering::Relaxed);
        if lost > 0 {
            let _ = writeln!(
                stderr,
                "lurkbot: {lost} log line(s) dropped: stderr was not being read (the full log is in logs/gateway.log)"
            );
        }
        let _ = stderr.write_all(&line);
        WRITTEN.fetch_add(1, Ordering::Release);
    }
}

/// One event's text.
pub(crate) struct Line {
    text: Vec<u8>,
    queue: SyncSender<Vec<u8>>,
    dropped: Arc<AtomicU64>,
}

impl Write for Line {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.text.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        if self.text.is_empty() {
            return;
        }
        let text = std::mem::take(&mut self.text);
        match self.queue.try_send(text) {
            Ok(()) => {
                QUEUED.fetch_add(1, Ordering::Release);
            }
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LossyStderr {
    type Writer = Line;

    fn make_writer(&'a self) -> Self::Writer {
        Line {
            text: Vec::new(),
            queue: self.queue.clone(),
            dropped: self.dropped.clone(),
        }
    }
}
