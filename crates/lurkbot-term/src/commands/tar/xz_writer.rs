//! An xz writer that stops when the run is cancelled.
//!
//! liblzma's own `XzEncoder` finishes its stream when dropped: after a timeout that meant
//! compressing everything already handed to the multi-threaded encoder (measured: 33 s after a
//! 0.3 s timeout on 200 MB). This writer drives the stream itself: it finishes only when asked,
//! waits on the encoder at most [`WAIT_MS`] at a time so the cancel flag is seen, and dropping it
//! ends the stream (`lzma_end` stops the worker threads) without compressing anything more.

use std::io::{self, Write};

use liblzma::stream::{Action, Filters, LzmaOptions, MtStreamBuilder, Status, Stream};

use crate::CancelFlag;

/// Longest wait inside the encoder before the cancel flag is checked again.
const WAIT_MS: u32 = 100;
/// Output buffer size.
const OUT_CHUNK: usize = 256 * 1024;
/// LZMA2 dictionary: preset 6 with a 4 MiB dictionary instead of 8 compresses within about 1%
/// of `xz -6` on text and halves the encoder's memory per thread (and the reader's).
const DICT_SIZE: u32 = 4 << 20;
/// Uncompressed size of one xz block (one thread's unit of work); twice the dictionary.
const BLOCK_SIZE: u64 = 8 << 20;
/// The encoder's memory budget: threads are dropped until the estimate fits, so memory stays
/// bounded whatever the archive size or core count (liblzma estimates 142 MiB for two threads; 125 MB peak RSS measured).
const MEMORY_BUDGET: u64 = 144 << 20;
/// Most threads ever used.
const MAX_THREADS: u32 = 4;

/// Multi-threaded xz (LZMA2 preset 6 with a 4 MiB dictionary, 8 MiB blocks, CRC64) into `inner`,
/// using as many threads as fit in [`MEMORY_BUDGET`].
pub(super) struct XzWriter<W: Write> {
    stream: Stream,
    inner: W,
    out: Vec<u8>,
    cancel: CancelFlag,
}

impl<W: Write> XzWriter<W> {
    /// A writer with as many threads as the cores and [`MEMORY_BUDGET`] allow.
    ///
    /// # Errors
    /// When the encoder cannot be set up (out of memory).
    pub(super) fn new(inner: W, cancel: CancelFlag) -> io::Result<Self> {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let stream = builder(u32::try_from(cores).unwrap_or(MAX_THREADS))?
            .encoder()
            .map_err(io::Error::other)?;
        Ok(Self {
            stream,
            inner,
            out: Vec::with_capacity(OUT_CHUNK),
            cancel,
        })
    }

    /// The encoder's own estimate of its memory use, in bytes.
    #[cfg(test)]
    fn memory_estimate(cores: u32) -> io::Result<u64> {
        Ok(builder(cores)?.memusage())
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

/// The encoder settings with the most threads (at most `max_threads`, at least one) whose
/// estimated memory fits in [`MEMORY_BUDGET`].
fn builder(max_threads: u32) -> io::Result<MtStreamBuilder> {
    let mut lzma2 = LzmaOptions::new_preset(6).map_err(io::Error::other)?;
    lzma2.dict_size(DICT_SIZE);
    let mut threads = max_threads.clamp(1, MAX_THREADS);
    loop {
        let mut filters = Filters::new();
        filters.lzma2(&lzma2);
        let mut builder = MtStreamBuilder::new();
        builder
            .filters(filters)
            .check(liblzma::stream::Check::Crc64)
            .block_size(BLOCK_SIZE)
            .threads(threads)
            .timeout_ms(WAIT_MS);
        if threads == 1 || builder.memusage() <= MEMORY_BUDGET {
            return Ok(builder);
        }
        threads -= 1;
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

    #[test]
    fn memory_stays_within_the_budget_whatever_the_core_count() -> io::Result<()> {
        for cores in [1, 2, 4, 64] {
            let estimate = XzWriter::<Vec<u8>>::memory_estimate(cores)?;
            assert!(estimate <= MEMORY_BUDGET, "{cores} cores: {estimate} bytes");
        }
        // Two threads fit, so a two-core machine compresses in parallel.
        assert!(builder(2)?.memusage() > builder(1)?.memusage());
        Ok(())
    }
}
