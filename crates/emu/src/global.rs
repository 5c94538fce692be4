//! Global memory as the warps see it: one interface, two stores.
//!
//! A timed run owns the launch's [`GlobalMemory`] and reads and writes its bytes directly,
//! a word at a time. A functional run spreads thread blocks over threads, which then share
//! global memory: [`SharedGlobal`] holds every buffer as 32-bit atomic words, so that
//! blocks on different threads access it without `unsafe`. Accesses are naturally aligned
//! (a misaligned one faults before), so a 4-byte access is one word and an 8-byte one two:
//! with relaxed ordering their loads and stores are the processor's plain ones, as fast as
//! a timed run's. A 1- or 2-byte store replaces its bytes by a compare-and-swap of the word
//! (its other bytes, which other threads may be writing in a race-free kernel, are
//! untouched). Atomic read-modify-writes and compare-and-swaps hold one of a few locks,
//! chosen by the location's 8-byte granule, so that two on one location never interleave
//! whatever their width. Relaxed ordering suffices elsewhere: the IR's memory model orders
//! nothing across thread blocks but atomics on one location.

use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::Mutex;
use warplift_ir::launch::memory::{load_le, store_le, MemFault};
use warplift_ir::launch::GlobalMemory;

/// What the warps need of global memory: finding a buffer, and sized accesses inside it.
pub(crate) trait Global {
    /// The buffer holding the `size` bytes at `addr` and the offset in it.
    fn find(&self, addr: u64, size: u32) -> Result<(usize, usize), MemFault>;
    /// The address range `[base, end)` of buffer `b`.
    fn span(&self, b: usize) -> (u64, u64);
    /// The `size`-byte value at offset `off` of buffer `b`, zero-extended.
    fn load(&self, b: usize, off: usize, size: u32) -> u64;
    /// Writes the low `size` bytes of `v` at offset `off` of buffer `b`.
    fn store(&mut self, b: usize, off: usize, size: u32, v: u64);
    /// Atomically replaces the value `old` at offset `off` of buffer `b` by `f(old)` (when
    /// it is `Some`); returns `old`.
    fn update(&mut self, b: usize, off: usize, size: u32, f: impl Fn(u64) -> Option<u64>) -> u64;
    /// [`Global::load`] at every offset of `offs` in buffer `b`, into `out`: a whole warp's
    /// access to one buffer, in one call.
    #[inline]
    fn load_all(&self, b: usize, offs: &[usize], size: u32, out: &mut [u64]) {
        for (o, &off) in out.iter_mut().zip(offs) {
            *o = self.load(b, off, size);
        }
    }
    /// [`Global::store`] of `vals` at the offsets `offs` of buffer `b`, in order (the last
    /// of two stores to one place wins, as lane order says).
    #[inline]
    fn store_all(&mut self, b: usize, offs: &[usize], size: u32, vals: &[u64]) {
        for (&off, &v) in offs.iter().zip(vals) {
            self.store(b, off, size, v);
        }
    }
    /// The consecutive 4-byte values from offset `off` of buffer `b`, one per element of
    /// `out` (a whole warp's coalesced access: the run lies inside the buffer, aligned).
    fn load_run32(&self, b: usize, off: usize, out: &mut [u32]);
    /// The consecutive 8-byte values from offset `off` of buffer `b`, as
    /// [`Global::load_run32`].
    fn load_run64(&self, b: usize, off: usize, out: &mut [u64]);
    /// Writes `vals` as consecutive 4-byte values from offset `off` of buffer `b`.
    fn store_run32(&mut self, b: usize, off: usize, vals: &[u32]);
    /// Writes `vals` as consecutive 8-byte values from offset `off` of buffer `b`.
    fn store_run64(&mut self, b: usize, off: usize, vals: &[u64]);
}

/// The `N` bytes at `off` of `bytes`, as an array (a fixed-size copy is one move, where
/// a copy of a run-time length calls `memcpy`).
#[inline]
fn bytes_at<const N: usize>(bytes: &[u8], off: usize) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&bytes[off..off + N]);
    a
}

/// `load_le` with the common sizes as fixed-size reads.
#[inline]
fn read_sized(bytes: &[u8], off: usize, size: u32) -> u64 {
    match size {
        4 => u64::from(u32::from_le_bytes(bytes_at(bytes, off))),
        8 => u64::from_le_bytes(bytes_at(bytes, off)),
        _ => load_le(bytes, off, size),
    }
}

/// `store_le` with the common sizes as fixed-size writes.
#[inline]
fn write_sized(bytes: &mut [u8], off: usize, size: u32, v: u64) {
    match size {
        4 => bytes[off..off + 4].copy_from_slice(&(v as u32).to_le_bytes()),
        8 => bytes[off..off + 8].copy_from_slice(&v.to_le_bytes()),
        _ => store_le(bytes, off, size, v),
    }
}

impl Global for GlobalMemory {
    #[inline]
    fn find(&self, addr: u64, size: u32) -> Result<(usize, usize), MemFault> {
        GlobalMemory::find(self, addr, size)
    }

    #[inline]
    fn span(&self, b: usize) -> (u64, u64) {
        let buf = &self.buffers[b];
        (buf.base, buf.end())
    }

    #[inline]
    fn load(&self, b: usize, off: usize, size: u32) -> u64 {
        read_sized(&self.buffers[b].bytes, off, size)
    }

    #[inline]
    fn store(&mut self, b: usize, off: usize, size: u32, v: u64) {
        write_sized(&mut self.buffers[b].bytes, off, size, v);
    }

    #[inline]
    fn load_all(&self, b: usize, offs: &[usize], size: u32, out: &mut [u64]) {
        let bytes = &self.buffers[b].bytes[..];
        // One loop per size, so that each read is a plain move.
        match size {
            4 => {
                for (o, &off) in out.iter_mut().zip(offs) {
                    *o = u64::from(u32::from_le_bytes(bytes_at(bytes, off)));
                }
            }
            8 => {
                for (o, &off) in out.iter_mut().zip(offs) {
                    *o = u64::from_le_bytes(bytes_at(bytes, off));
                }
            }
            _ => {
                for (o, &off) in out.iter_mut().zip(offs) {
                    *o = load_le(bytes, off, size);
                }
            }
        }
    }

    #[inline]
    fn store_all(&mut self, b: usize, offs: &[usize], size: u32, vals: &[u64]) {
        let bytes = &mut self.buffers[b].bytes[..];
        match size {
            4 => {
                for (&off, &v) in offs.iter().zip(vals) {
                    bytes[off..off + 4].copy_from_slice(&(v as u32).to_le_bytes());
                }
            }
            8 => {
                for (&off, &v) in offs.iter().zip(vals) {
                    bytes[off..off + 8].copy_from_slice(&v.to_le_bytes());
                }
            }
            _ => {
                for (&off, &v) in offs.iter().zip(vals) {
                    store_le(bytes, off, size, v);
                }
            }
        }
    }

    #[inline]
    fn load_run32(&self, b: usize, off: usize, out: &mut [u32]) {
        let bytes = &self.buffers[b].bytes[off..off + 4 * out.len()];
        for (o, c) in out.iter_mut().zip(bytes.chunks_exact(4)) {
            *o = u32::from_le_bytes(bytes_at(c, 0));
        }
    }

    #[inline]
    fn load_run64(&self, b: usize, off: usize, out: &mut [u64]) {
        let bytes = &self.buffers[b].bytes[off..off + 8 * out.len()];
        for (o, c) in out.iter_mut().zip(bytes.chunks_exact(8)) {
            *o = u64::from_le_bytes(bytes_at(c, 0));
        }
    }

    #[inline]
    fn store_run32(&mut self, b: usize, off: usize, vals: &[u32]) {
        let bytes = &mut self.buffers[b].bytes[off..off + 4 * vals.len()];
        for (c, &v) in bytes.chunks_exact_mut(4).zip(vals) {
            c.copy_from_slice(&v.to_le_bytes());
        }
    }

    #[inline]
    fn store_run64(&mut self, b: usize, off: usize, vals: &[u64]) {
        let bytes = &mut self.buffers[b].bytes[off..off + 8 * vals.len()];
        for (c, &v) in bytes.chunks_exact_mut(8).zip(vals) {
            c.copy_from_slice(&v.to_le_bytes());
        }
    }

    #[inline]
    fn update(&mut self, b: usize, off: usize, size: u32, f: impl Fn(u64) -> Option<u64>) -> u64 {
        let bytes = &mut self.buffers[b].bytes;
        let old = read_sized(bytes, off, size);
        if let Some(new) = f(old) {
            write_sized(bytes, off, size, new);
        }
        old
    }
}

/// Bytes converted between a buffer and its words before the memory they held is freed.
const STEP: usize = 1 << 22;

/// Locks serialising the atomic read-modify-writes, by 8-byte granule.
const STRIPES: usize = 64;

/// One buffer as atomic little-endian 32-bit words.
struct AtomicBuffer {
    base: u64,
    len: usize,
    words: Vec<AtomicU32>,
}

/// Global memory shared by the threads of a functional run.
pub(crate) struct SharedGlobal {
    /// The buffers' names, for faults.
    names: Vec<String>,
    buffers: Vec<AtomicBuffer>,
    /// An atomic read-modify-write of the 8-byte granule `g` of buffer `b` holds stripe
    /// `(g + b) % STRIPES`, so that two on the same location are never interleaved, even
    /// when one is 8 bytes wide (two words) and the other 4.
    stripes: Vec<Mutex<()>>,
}

impl SharedGlobal {
    /// Moves the buffers' contents of `memory` into atomic words. The bytes are consumed
    /// from the end in steps of [`STEP`], the words built in reverse and turned around in
    /// place, so that a buffer is never held twice: the peak is its size plus a step.
    pub(crate) fn take(memory: &mut GlobalMemory) -> SharedGlobal {
        let mut buffers = Vec::with_capacity(memory.buffers.len());
        for buf in &mut memory.buffers {
            let mut bytes = std::mem::take(&mut buf.bytes);
            let len = bytes.len();
            let mut words = Vec::with_capacity(len.div_ceil(4));
            let mut end = len;
            while end > 0 {
                let start = end.saturating_sub(STEP) / 4 * 4;
                for c in bytes[start..end].chunks(4).rev() {
                    let mut w = [0u8; 4];
                    w[..c.len()].copy_from_slice(c);
                    words.push(AtomicU32::new(u32::from_le_bytes(w)));
                }
                bytes.truncate(start);
                bytes.shrink_to_fit();
                end = start;
            }
            words.reverse();
            buffers.push(AtomicBuffer {
                base: buf.base,
                len,
                words,
            });
        }
        let names = memory.buffers.iter().map(|b| b.name.clone()).collect();
        let stripes = (0..STRIPES).map(|_| Mutex::new(())).collect();
        SharedGlobal {
            names,
            buffers,
            stripes,
        }
    }

    /// Moves the contents back into `memory`'s buffers, as [`SharedGlobal::take`] moved
    /// them out: from the end, a step at a time.
    pub(crate) fn give_back(self, memory: &mut GlobalMemory) {
        for (buf, a) in memory.buffers.iter_mut().zip(self.buffers) {
            let mut words = a.words;
            let mut bytes = Vec::with_capacity(a.len);
            // The last word holds `a.len - 4 * (words - 1)` bytes of the buffer.
            let mut keep = a.len - 4 * words.len().saturating_sub(1);
            while !words.is_empty() {
                let start = words.len().saturating_sub(STEP / 4);
                for w in words.drain(start..).rev() {
                    let le = w.into_inner().to_le_bytes();
                    bytes.extend(le[..keep].iter().rev());
                    keep = 4;
                }
                words.shrink_to_fit();
            }
            bytes.reverse();
            buf.bytes = bytes;
        }
    }

    /// The words of buffer `b`.
    #[inline]
    fn words(&self, b: usize) -> &[AtomicU32] {
        &self.buffers[b].words
    }
}

/// A thread's handle on a [`SharedGlobal`].
#[derive(Copy, Clone)]
pub(crate) struct SharedRef<'a>(pub &'a SharedGlobal);

impl SharedRef<'_> {
    /// Writes the low `size` bytes of `v` at offset `off` of buffer `b`. Accesses are
    /// naturally aligned, so a 4-byte one is one word, an 8-byte one two (each written
    /// whole: a race-free kernel has no other thread reading them meanwhile), and a
    /// smaller one part of a word, whose other bytes other threads may be writing: it is
    /// replaced by a compare-and-swap.
    #[inline]
    fn put(&self, b: usize, off: usize, size: u32, v: u64) {
        let words = self.0.words(b);
        match size {
            4 => words[off / 4].store(v as u32, Relaxed),
            8 => {
                words[off / 4].store(v as u32, Relaxed);
                words[off / 4 + 1].store((v >> 32) as u32, Relaxed);
            }
            _ => {
                let w = &words[off / 4];
                let shift = (off % 4) as u32 * 8;
                let mask = ((1u32 << (size * 8)) - 1) << shift;
                let bits = ((v as u32) << shift) & mask;
                let mut cur = w.load(Relaxed);
                while let Err(seen) =
                    w.compare_exchange_weak(cur, (cur & !mask) | bits, Relaxed, Relaxed)
                {
                    cur = seen;
                }
            }
        }
    }
}

impl Global for SharedRef<'_> {
    #[inline]
    fn find(&self, addr: u64, size: u32) -> Result<(usize, usize), MemFault> {
        let bufs = &self.0.buffers;
        let idx = bufs.partition_point(|b| b.base <= addr);
        let fault = |nearest: Option<usize>| MemFault::OutOfBounds {
            addr,
            size,
            nearest: nearest.map(|i| {
                let b = &bufs[i];
                (self.0.names[i].clone(), b.base, b.base + b.len as u64)
            }),
        };
        if idx == 0 {
            return Err(fault(None));
        }
        let buf = &bufs[idx - 1];
        let off = addr - buf.base;
        match off.checked_add(u64::from(size)) {
            Some(end) if end <= buf.len as u64 => Ok((idx - 1, off as usize)),
            _ => Err(fault(Some(idx - 1))),
        }
    }

    #[inline]
    fn span(&self, b: usize) -> (u64, u64) {
        let buf = &self.0.buffers[b];
        (buf.base, buf.base + buf.len as u64)
    }

    #[inline]
    fn load(&self, b: usize, off: usize, size: u32) -> u64 {
        let words = self.0.words(b);
        match size {
            4 => u64::from(words[off / 4].load(Relaxed)),
            8 => {
                let lo = u64::from(words[off / 4].load(Relaxed));
                lo | u64::from(words[off / 4 + 1].load(Relaxed)) << 32
            }
            _ => {
                let shift = (off % 4) as u32 * 8;
                let v = words[off / 4].load(Relaxed) >> shift;
                u64::from(v & ((1u32 << (size * 8)) - 1))
            }
        }
    }

    #[inline]
    fn store(&mut self, b: usize, off: usize, size: u32, v: u64) {
        self.put(b, off, size, v);
    }

    #[inline]
    fn load_all(&self, b: usize, offs: &[usize], size: u32, out: &mut [u64]) {
        let words = self.0.words(b);
        // A 4-byte access is one word: its own loop, without the size test per lane.
        if size == 4 {
            for (o, &off) in out.iter_mut().zip(offs) {
                *o = u64::from(words[off / 4].load(Relaxed));
            }
        } else {
            for (o, &off) in out.iter_mut().zip(offs) {
                *o = self.load(b, off, size);
            }
        }
    }

    #[inline]
    fn store_all(&mut self, b: usize, offs: &[usize], size: u32, vals: &[u64]) {
        let words = self.0.words(b);
        if size == 4 {
            for (&off, &v) in offs.iter().zip(vals) {
                words[off / 4].store(v as u32, Relaxed);
            }
        } else {
            for (&off, &v) in offs.iter().zip(vals) {
                self.put(b, off, size, v);
            }
        }
    }

    #[inline]
    fn load_run32(&self, b: usize, off: usize, out: &mut [u32]) {
        let words = &self.0.words(b)[off / 4..off / 4 + out.len()];
        // Groups of eight, unrolled: relaxed atomic loads are not vectorised, so the
        // loop's own counting and tests were a third of a run's instructions.
        let mut outs = out.chunks_exact_mut(8);
        let mut ws = words.chunks_exact(8);
        for (o, w) in (&mut outs).zip(&mut ws) {
            for (o, w) in o.iter_mut().zip(w) {
                *o = w.load(Relaxed);
            }
        }
        for (o, w) in outs.into_remainder().iter_mut().zip(ws.remainder()) {
            *o = w.load(Relaxed);
        }
    }

    #[inline]
    fn load_run64(&self, b: usize, off: usize, out: &mut [u64]) {
        let words = &self.0.words(b)[off / 4..off / 4 + 2 * out.len()];
        for (o, w) in out.iter_mut().zip(words.chunks_exact(2)) {
            *o = u64::from(w[0].load(Relaxed)) | u64::from(w[1].load(Relaxed)) << 32;
        }
    }

    #[inline]
    fn store_run32(&mut self, b: usize, off: usize, vals: &[u32]) {
        let words = &self.0.words(b)[off / 4..off / 4 + vals.len()];
        // Groups of eight, as in `load_run32`.
        let mut ws = words.chunks_exact(8);
        let mut vs = vals.chunks_exact(8);
        for (w, v) in (&mut ws).zip(&mut vs) {
            for (w, &v) in w.iter().zip(v) {
                w.store(v, Relaxed);
            }
        }
        for (w, &v) in ws.remainder().iter().zip(vs.remainder()) {
            w.store(v, Relaxed);
        }
    }

    #[inline]
    fn store_run64(&mut self, b: usize, off: usize, vals: &[u64]) {
        let words = &self.0.words(b)[off / 4..off / 4 + 2 * vals.len()];
        for (w, &v) in words.chunks_exact(2).zip(vals) {
            w[0].store(v as u32, Relaxed);
            w[1].store((v >> 32) as u32, Relaxed);
        }
    }

    #[inline]
    fn update(&mut self, b: usize, off: usize, size: u32, f: impl Fn(u64) -> Option<u64>) -> u64 {
        let stripe = (off / 8 + b) % STRIPES;
        // A poisoned stripe only means another worker panicked; the words are intact.
        let _held = self.0.stripes[stripe]
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let old = self.load(b, off, size);
        if let Some(new) = f(old) {
            self.put(b, off, size, new);
        }
        old
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use warplift_ir::launch::memory::{Buffer, ElemType};

    fn memory() -> GlobalMemory {
        GlobalMemory {
            buffers: vec![
                Buffer {
                    name: "a".into(),
                    elem: ElemType::U8,
                    base: 0x1000_0000,
                    bytes: (0..13).collect(),
                    print: true,
                    save: None,
                    expect: None,
                },
                Buffer {
                    name: "b".into(),
                    elem: ElemType::U32,
                    base: 0x1000_0200,
                    bytes: vec![0; 8],
                    print: true,
                    save: None,
                    expect: None,
                },
            ],
        }
    }

    /// Buffers of every length round-trip through the words, steps and partial words
    /// included.
    #[test]
    fn buffers_round_trip() {
        for len in [0usize, 1, 7, 8, 9, STEP - 3, STEP, STEP + 13, 3 * STEP + 5] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 7 + i / 251) as u8).collect();
            let mut m = memory();
            m.buffers[0].bytes = bytes.clone();
            let shared = SharedGlobal::take(&mut m);
            assert!(m.buffers[0].bytes.is_empty());
            if len >= 8 {
                let s = SharedRef(&shared);
                assert_eq!(
                    s.load(0, 0, 8),
                    u64::from_le_bytes(bytes[..8].try_into().unwrap())
                );
            }
            shared.give_back(&mut m);
            assert!(m.buffers[0].bytes == bytes, "length {len}");
            assert_eq!(m.buffers[1].bytes, vec![0; 8]);
        }
    }

    /// The same accesses on both stores give the same values and the same bytes.
    #[test]
    fn shared_words_behave_as_bytes() {
        let mut plain = memory();
        let mut m = memory();
        let shared = SharedGlobal::take(&mut m);
        let mut s = SharedRef(&shared);
        for (addr, size) in [
            (0x1000_0000, 1),
            (0x1000_0002, 2),
            (0x1000_0008, 4),
            (0x1000_0204, 4),
        ] {
            assert_eq!(Global::find(&plain, addr, size), s.find(addr, size));
            let (b, off) = s.find(addr, size).unwrap();
            assert_eq!(Global::load(&plain, b, off, size), s.load(b, off, size));
            Global::store(&mut plain, b, off, size, 0xa1b2_c3d4_e5f6);
            s.store(b, off, size, 0xa1b2_c3d4_e5f6);
            let add = |old: u64| Some(old.wrapping_add(3));
            assert_eq!(plain.update(b, off, size, add), s.update(b, off, size, add));
            assert_eq!(
                plain.update(b, off, size, |_| None),
                s.update(b, off, size, |_| None)
            );
        }
        assert_eq!(s.span(0), (0x1000_0000, 0x1000_000d));
        assert_eq!(
            Global::find(&plain, 0x1000_000c, 2).unwrap_err(),
            s.find(0x1000_000c, 2).unwrap_err()
        );
        assert!(s.find(0x0fff_ffff, 1).is_err());
        shared.give_back(&mut m);
        for (x, y) in plain.buffers.iter().zip(&m.buffers) {
            assert_eq!(x.bytes, y.bytes);
        }
    }
}
