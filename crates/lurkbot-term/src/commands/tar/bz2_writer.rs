//! bzip2 on every core, as `pbzip2` does: the tar stream is cut into pieces of one bzip2 block
//! ([`PIECE`], level 9's 900 kB), each compressed into a bzip2 stream of its own on a thread,
//! and the streams are written one after the other in order. A file of concatenated streams is
//! what bzip2 itself reads as one (`bzip2 -d`, GNU tar, Python's `bz2`, our reader's
//! `MultiBzDecoder`), and bzip2 compresses each block on its own anyway: the file is 0.35 %
//! larger than one stream (a block of one stream holds more than 900 kB of raw tar where
//! run-length coding shrinks its zero padding). On 2 cores, 170 MB of tar took 10.1 s (32 MB
//! peak RSS) against 19.8 s on one thread and 12.5 s for `tar cjf` on the same files
//! (ARCHITECTURE.md §9: tar at least as fast as the classic tools). Pieces of five blocks made
//! the file 0.26 % larger instead, in 11.5 s at 50 MB.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::thread::JoinHandle;

/// Uncompressed bytes in one piece: one block at level 9.
const PIECE: usize = 900_000;
/// Most pieces compressed at once.
const MAX_THREADS: usize = 4;

/// bzip2 (level 9) into `inner`, a piece per thread on up to as many threads as cores.
pub(super) struct Bz2Writer<W: Write> {
    inner: W,
    piece: Vec<u8>,
    running: VecDeque<JoinHandle<io::Result<Vec<u8>>>>,
    threads: usize,
    /// Whether a piece was handed to a thread yet.
    sent: bool,
}

impl<W: Write> Bz2Writer<W> {
    /// A writer using as many threads as cores (at most [`MAX_THREADS`]).
    pub(super) fn new(inner: W) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        Self::with_threads(inner, cores)
    }

    fn with_threads(inner: W, threads: usize) -> Self {
        Self {
            inner,
            piece: Vec::with_capacity(PIECE),
            running: VecDeque::new(),
            threads: threads.clamp(1, MAX_THREADS),
            sent: false,
        }
    }

    /// Hands the current piece to a thread, first writing out the oldest piece when every
    /// thread is busy (memory stays at a few pieces whatever the archive's size).
    fn send_piece(&mut self) -> io::Result<()> {
        self.sent = true;
        if self.running.len() >= self.threads {
            self.write_oldest()?;
        }
        let piece = std::mem::replace(&mut self.piece, Vec::with_capacity(PIECE));
        self.running.push_back(std::thread::spawn(move || {
            let mut encoder = bzip2::write::BzEncoder::new(
                Vec::with_capacity(piece.len() / 3),
                bzip2::Compression::new(9),
            );
            encoder.write_all(&piece)?;
            encoder.finish()
        }));
        Ok(())
    }

    fn write_oldest(&mut self) -> io::Result<()> {
        let Some(oldest) = self.running.pop_front() else {
            return Ok(());
        };
        let packed = oldest
            .join()
            .map_err(|_| io::Error::other("a bzip2 thread failed"))??;
        self.inner.write_all(&packed)
    }

    /// Compresses what is left, writes every stream in order and returns the inner writer.
    ///
    /// # Errors
    /// Write failures.
    pub(super) fn finish(mut self) -> io::Result<W> {
        // The last piece; for nothing at all, one empty stream (what `bzip2` makes of nothing).
        if !self.piece.is_empty() || !self.sent {
            self.send_piece()?;
        }
        while !self.running.is_empty() {
            self.write_oldest()?;
        }
        self.inner.flush()?;
        Ok(self.inner)
    }
}

impl<W: Write> Write for Bz2Writer<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let taken = buf.len().min(PIECE - self.piece.len());
        self.piece.extend_from_slice(&buf[..taken]);
        if self.piece.len() == PIECE {
            self.send_piece()?;
        }
        Ok(taken)
    }

    /// Writes out the pieces already compressed; the one being filled stays (a flush that cut
    /// a piece would only make the file larger).
    fn flush(&mut self) -> io::Result<()> {
        while self.running.front().is_some_and(JoinHandle::is_finished) {
            self.write_oldest()?;
        }
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// Text that does not repeat within a piece, so each piece is a real bzip2 block.
    fn text(len: usize) -> Vec<u8> {
        let mut state = 0x9e37_79b9_u32;
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                b"abcdefghij klmnopqrst\n"[(state % 22) as usize]
            })
            .collect()
    }

    #[test]
    fn pieces_come_back_in_order_as_one_stream_to_a_multi_stream_reader() -> io::Result<()> {
        let data = text(3 * PIECE + 12_345);
        for threads in [1, 2, 4] {
            let mut writer = Bz2Writer::with_threads(Vec::new(), threads);
            // Odd-sized writes, as the tar builder's buffer makes.
            for chunk in data.chunks(70_001) {
                writer.write_all(chunk)?;
                writer.flush()?;
            }
            let packed = writer.finish()?;
            let streams = packed.windows(4).filter(|w| w == b"BZh9").count();
            assert!(streams >= 4, "{threads} threads: {streams} streams");
            let mut back = Vec::new();
            bzip2::read::MultiBzDecoder::new(&packed[..]).read_to_end(&mut back)?;
            assert!(back == data, "{threads} threads: the data differs");
        }
        // Nothing written: one empty stream, as `bzip2` makes of nothing.
        let empty = Bz2Writer::new(Vec::new()).finish()?;
        assert!(empty.starts_with(b"BZh9"), "{empty:?}");
        let mut back = Vec::new();
        bzip2::read::MultiBzDecoder::new(&empty[..]).read_to_end(&mut back)?;
        assert!(back.is_empty());
        Ok(())
    }
}
