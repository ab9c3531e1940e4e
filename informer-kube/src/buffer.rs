//! The bytes the decoders hold: buffers whose capacity is accounted in a shared gauge, so
//! that tests (and operators) can see that a hostile server cannot make them grow past their
//! caps.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The most bytes of a chunk appended to a decoder's buffer at once: a frame the server (or
/// hyper) hands over in one piece is fed in slices of this size, so that the buffer holds at
/// most one slice beyond the value it is assembling.
pub(crate) const SLICE: usize = 64 << 10;

/// What a [`KubeListerWatcher`](crate::KubeListerWatcher)'s decoders hold: the capacity of
/// their buffers (a list body's partial item, a watch stream's partial line, an error
/// answer's body), now and at the most since the last [`reset`](DecoderMemory::reset_peak).
///
/// Decoded objects are not counted: they belong to the caller as soon as they are decoded.
/// A hostile server cannot push these buffers past
/// [`ClientLimits::max_frame_bytes`](crate::ClientLimits::max_frame_bytes) plus one read
/// slice of 64 KiB per open request: no buffer is sized from a `Content-Length` header, and a
/// value larger than the cap fails its request.
#[derive(Debug, Clone, Default)]
pub struct DecoderMemory {
    gauge: Arc<Gauge>,
}

#[derive(Debug, Default)]
struct Gauge {
    held: AtomicUsize,
    peak: AtomicUsize,
}

impl DecoderMemory {
    /// Bytes held right now, over every open request of the lister-watcher (and its clones).
    pub fn held_bytes(&self) -> usize {
        self.gauge.held.load(Ordering::Relaxed)
    }

    /// The most bytes held at once since the lister-watcher was built or the peak was reset.
    pub fn peak_held_bytes(&self) -> usize {
        self.gauge.peak.load(Ordering::Relaxed)
    }

    /// Starts a new peak from what is held now.
    pub fn reset_peak(&self) {
        self.gauge
            .peak
            .store(self.gauge.held.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    fn grow(&self, by: usize) {
        let held = self.gauge.held.fetch_add(by, Ordering::Relaxed) + by;
        self.gauge.peak.fetch_max(held, Ordering::Relaxed);
    }

    fn shrink(&self, by: usize) {
        self.gauge.held.fetch_sub(by, Ordering::Relaxed);
    }
}

/// A byte buffer whose unconsumed part starts at `start`; its capacity is accounted in a
/// [`DecoderMemory`]. It grows by what arrives (never by what a header announces), to at most
/// `soft_cap` unless a single append needs more, and gives memory back when emptied.
pub(crate) struct TrackedBuf {
    buf: Vec<u8>,
    start: usize,
    accounted: usize,
    soft_cap: usize,
    memory: DecoderMemory,
}

impl TrackedBuf {
    /// An empty buffer that prefers not to grow past `soft_cap` bytes.
    pub(crate) fn new(memory: DecoderMemory, soft_cap: usize) -> Self {
        Self {
            buf: Vec::new(),
            start: 0,
            accounted: 0,
            soft_cap,
            memory,
        }
    }

    /// The unconsumed bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    /// How many unconsumed bytes there are.
    pub(crate) fn len(&self) -> usize {
        self.buf.len() - self.start
    }

    /// Drops the first `n` unconsumed bytes.
    pub(crate) fn consume(&mut self, n: usize) {
        self.start = (self.start + n).min(self.buf.len());
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
    }

    /// Appends `data` (at most [`SLICE`] bytes at a time is what callers feed), first moving
    /// the unconsumed bytes to the front when that makes room.
    pub(crate) fn push(&mut self, data: &[u8]) {
        let needed = self.len() + data.len();
        if self.start > 0 && needed > self.buf.capacity() - self.start {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        if needed > self.buf.capacity() {
            // Double, as a Vec would, but not past the soft cap unless this append needs it:
            // the capacity stays within what the caps allow.
            let target = needed
                .max(self.buf.capacity().saturating_mul(2))
                .min(self.soft_cap.max(needed));
            self.buf.reserve_exact(target - self.buf.len());
        }
        self.buf.extend_from_slice(data);
        self.sync();
    }

    /// Gives the memory back (after an error, or when the stream ends).
    pub(crate) fn release(&mut self) {
        self.buf = Vec::new();
        self.start = 0;
        self.sync();
    }

    /// Returns the buffer's memory when it is empty and larger than `keep` bytes.
    pub(crate) fn shrink_if_empty(&mut self, keep: usize) {
        if self.len() == 0 && self.buf.capacity() > keep {
            self.release();
        }
    }

    fn sync(&mut self) {
        let capacity = self.buf.capacity();
        if capacity > self.accounted {
            self.memory.grow(capacity - self.accounted);
        } else {
            self.memory.shrink(self.accounted - capacity);
        }
        self.accounted = capacity;
    }
}

impl Drop for TrackedBuf {
    fn drop(&mut self) {
        self.memory.shrink(self.accounted);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_is_accounted_and_returned() {
        let memory = DecoderMemory::default();
        let mut buf = TrackedBuf::new(memory.clone(), 100);
        buf.push(b"hello");
        assert!(memory.held_bytes() >= 5);
        buf.consume(2);
        assert_eq!(buf.bytes(), b"llo");
        buf.push(&[b'x'; 90]);
        assert_eq!(buf.len(), 93);
        assert!(memory.held_bytes() <= 100, "{}", memory.held_bytes());
        // One append larger than the soft cap gets exactly what it needs.
        buf.push(&[b'y'; 200]);
        assert_eq!(memory.held_bytes(), 293);
        buf.consume(usize::MAX);
        assert_eq!(buf.len(), 0);
        buf.shrink_if_empty(10);
        assert_eq!(memory.held_bytes(), 0);
        assert_eq!(memory.peak_held_bytes(), 293);
        memory.reset_peak();
        assert_eq!(memory.peak_held_bytes(), 0);
        buf.push(b"abc");
        drop(buf);
        assert_eq!(memory.held_bytes(), 0);
    }
}
