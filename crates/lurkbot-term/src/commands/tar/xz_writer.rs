//! An xz writer that stops when the run is cancelled.
//!
//! liblzma's own `XzEncoder` finishes its stream when dropped: after a timeout that meant
//! compressing everything already handed to the multi-threaded encoder (measured: 33 s after a
//! 0.3 s timeout on 200 MB). This writer drives the stream itself: it finishes only when asked,
//! waits on the encoder at most [`WAIT_MS`] at a time so the cancel flag is seen, and dropping it
//! ends the stream (`lzma_end` stops the worker threads) without compressing anything more.

use std::io::{self, Write};

use liblzma::stream::{Action, MtStreamBuilder, Status, Stream};

use crate::CancelFlag;

/// Longest wait inside the encoder before the cancel flag is checked again.
const WAIT_MS: u32 = 100;
/// Output buffer size.
const OUT_CHUNK: usize = 256 * 1024;

/// Multi-threaded xz (preset 6, CRC64) into `inner`.
pub(super) struct XzWriter<W: Write> {
    stream: Stream,
    inner: W,
    out: Vec<u8>,
    cancel: CancelFlag,
}

impl<W: Write> XzWriter<W> {
    /// A writer with up to four threads.
    ///
    /// # Errors
    /// When the encoder cannot be set up (out of memory).
    pub(super) fn new(inner: W, cancel: CancelFlag) -> io::Result<Self> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
        let stream = MtStreamBuilder::new()
            .preset(6)
            .check(liblzma::stream::Check::Crc64)
            .threads(u32::try_from(threads).unwrap_or(1))
            .timeout_ms(WAIT_MS)
            .encoder()
            .map_err(io::Error::other)?;
        Ok(Self {
            stream,
            inner,
            out: Vec::with_capacity(OUT_CHUNK),
            cancel,
        })
    }

    fn check(&self) -> io::Result<()> {
        if self.cancel.is_cancelled() {
            Err(io::Error::other("cancelled"))
        } else {
            Ok(())
        }
    }

    /// Hands `input` to the encoder with `action`; returns how much it took and the status.
    fn step(&mut self, input: &[u8], action: Action) -> io::Result<(usize, Status)> {
        self.check()?;
        self.out.clear();
        let before = self.stream.total_in();
        let status = self
            .stream
            .process_vec(input, &mut self.out, action)
            .map_err(io::Error::other)?;
        let taken = usize::try_from(self.stream.total_in() - before).unwrap_or(input.len());
        self.inner.write_all(&self.out)?;
        Ok((taken, status))
    }

    /// Ends the stream and returns the inner writer.
    ///
    /// # Errors
    /// Write failures, or cancellation.
    pub(super) fn finish(mut self) -> io::Result<W> {
        while self.step(&[], Action::Finish)?.1 != Status::StreamEnd {}
        self.inner.flush()?;
        Ok(self.inner)
    }
}

impl<W: Write> Write for XzWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        loop {
            let (taken, _) = self.step(buf, Action::Run)?;
            if taken > 0 || buf.is_empty() {
                return Ok(taken);
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.check()?;
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_cancellation() -> io::Result<()> {
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let mut w = XzWriter::new(Vec::new(), CancelFlag::default())?;
        w.write_all(&data)?;
        let packed = w.finish()?;
        let mut back = Vec::new();
        io::Read::read_to_end(&mut liblzma::read::XzDecoder::new(&packed[..]), &mut back)?;
        assert_eq!(back, data);

        let cancel = CancelFlag::default();
        let mut w = XzWriter::new(Vec::new(), cancel.clone())?;
        w.write_all(&data)?;
        cancel.cancel();
        assert!(w.write_all(&data).is_err());
        assert!(w.finish().is_err());
        Ok(())
    }
}
