//! Large host-memory copies split across threads.
//!
//! A run moves its inputs into mapped staging memory and its outputs out of mapped read-back
//! memory. One thread copies 2.3 MB out of memory the GPU just wrote in about 0.2–0.45 ms on the
//! H200's host (a Whisper-tiny output; 16 MB in 3.1 ms), and threads share that work well, but
//! starting a thread per copy costs ~30 µs and waking a parked one after the idle milliseconds
//! between runs ~0.1 ms. So copies go to [`Workers`] that outlive them (the provider's pool,
//! registered with [`set_workers`]) only in parts of at least [`POOLED_MIN_CHUNK`] bytes, the
//! calling thread taking the first; measured there (provider `workers::speed`), 2 parts of a 2.3 MB
//! copy took 0.32 ms against 0.46 in one, 8 parts of 16 MB 0.92 against 3.15, while every split of
//! 1.15 MB or less was slower than one thread. A read-back that waits for the GPU first makes the
//! threads its copy will use poll for it ([`expect`]), so their wake-up falls inside the wait.
//! Without workers (the engine used on its own, or after the provider stopped them) copies of at
//! least [`MIN_CHUNK`] bytes a part go to scoped threads.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};

/// Without workers: below this a copy stays on the calling thread; each extra thread gets at
/// least this much.
pub const MIN_CHUNK: usize = 4 << 20;
/// With workers: the least each part of a split copy gets.
pub const POOLED_MIN_CHUNK: usize = 1 << 20;
/// At most this many threads (the caller included) share one copy.
pub const MAX_THREADS: usize = 8;

/// Threads that run the parts of host copies and outlive them.
pub trait Workers: Send + Sync {
    /// Runs every task, the first on the calling thread; returns once all have finished (so they
    /// may borrow from the caller's stack). A task that panicked re-raises on the caller.
    fn run(&self, tasks: Vec<Box<dyn FnOnce() + Send + '_>>);
    /// Threads besides the caller's.
    fn threads(&self) -> usize;
    /// Gets `threads` of them ready for a copy expected within `within` (they poll for it instead of
    /// sleeping, so that waking them does not delay it). By default nothing.
    fn ready(&self, _threads: usize, _within: Duration) {}
}

static WORKERS: RwLock<Option<Arc<dyn Workers>>> = RwLock::new(None);

/// Registers the workers later copies use, or none (scoped threads for large copies).
pub fn set_workers(workers: Option<Arc<dyn Workers>>) {
    *WORKERS.write() = workers;
}

fn workers() -> Option<Arc<dyn Workers>> {
    WORKERS.read().clone()
}

/// Below this a copy expected after a wait (`expect`) gets its threads ready: larger copies take
/// longer than a thread's wake-up.
pub const EXPECT_MAX: usize = 8 << 20;

/// A copy of `len` bytes follows a wait of at most `within` (a read-back waiting for the GPU): the
/// threads that will share it poll for it meanwhile, where it splits and is shorter than
/// [`EXPECT_MAX`] (a parked thread's wake-up cost the H200 ~0.1 ms, a third of a 2.3 MB copy).
pub fn expect(len: usize, within: Duration) {
    if len >= EXPECT_MAX || within.is_zero() {
        return;
    }
    if let Some(w) = workers() {
        let parts = chunks(len, 1).len();
        if parts > 1 {
            w.ready(parts - 1, within);
        }
    }
}

/// The cores this process may use, read once: `available_parallelism` reads the cgroup quota
/// files on every call (~35 µs on Linux), and host copies ask for it several times per run
/// (ONNX Runtime copies every host input and output of a partition through our data transfer).
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Byte ranges, each a multiple of `align` long except the last, that split `len` bytes for
/// parallel copying: one range when `len` is small.
pub fn chunks(len: usize, align: usize) -> Vec<Range<usize>> {
    let (min, threads) = match workers() {
        Some(w) => (POOLED_MIN_CHUNK, (w.threads() + 1).min(MAX_THREADS)),
        None => (MIN_CHUNK, cores().min(MAX_THREADS)),
    };
    chunks_of(len, align, min, threads)
}

fn chunks_of(len: usize, align: usize, min: usize, threads: usize) -> Vec<Range<usize>> {
    let parts = (len / min).clamp(1, threads.max(1));
    let align = align.max(1);
    let step = len.div_ceil(parts).next_multiple_of(align);
    (0..len).step_by(step.max(1)).map(|start| start..(start + step).min(len)).collect()
}

/// Runs `copy(range)` for each range of [`chunks`]`(len, align)`, in parallel when there are
/// several; returns the first error.
pub fn for_each_chunk<E: Send>(
    len: usize,
    align: usize,
    copy: impl Fn(Range<usize>) -> Result<(), E> + Sync,
) -> Result<(), E> {
    run_parts(chunks(len, align), copy)
}

/// `dst.copy_from_slice(src)`, split across threads when large.
pub fn copy(dst: &mut [u8], src: &[u8]) {
    assert_eq!(dst.len(), src.len(), "copy between slices of different lengths");
    let step = chunks(src.len(), 1).first().map_or(1, |r| r.len());
    let parts: Vec<(&mut [u8], &[u8])> = dst.chunks_mut(step).zip(src.chunks(step)).collect();
    let copied: Result<(), std::convert::Infallible> = run_parts(parts, |(d, s)| {
        d.copy_from_slice(s);
        Ok(())
    });
    let Ok(()) = copied;
}

/// Runs `work` on every part: the first on the calling thread, the others on the registered
/// [`Workers`] or else on scoped threads. Each part is taken exactly once, by its thread or by the
/// caller when that thread could not start (no memory for its stack) or has not started yet. A
/// panic in a thread re-raises on the caller's thread (inside its FFI guard).
fn run_parts<T: Send, E: Send>(parts: Vec<T>, work: impl Fn(T) -> Result<(), E> + Sync) -> Result<(), E> {
    if parts.len() <= 1 {
        return parts.into_iter().try_for_each(work);
    }
    let slots: Vec<Mutex<Option<T>>> = parts.into_iter().map(|p| Mutex::new(Some(p))).collect();
    let run = |slot: &Mutex<Option<T>>| {
        let part = slot.lock().take();
        part.map_or(Ok(()), &work)
    };
    let run = &run;
    if let Some(pool) = workers() {
        let results: Vec<Mutex<Result<(), E>>> = slots.iter().map(|_| Mutex::new(Ok(()))).collect();
        let tasks = slots
            .iter()
            .zip(&results)
            .map(|(slot, out)| Box::new(move || *out.lock() = run(slot)) as Box<dyn FnOnce() + Send + '_>)
            .collect();
        pool.run(tasks);
        return results.into_iter().try_for_each(Mutex::into_inner);
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = slots
            .iter()
            .skip(1)
            .filter_map(|slot| std::thread::Builder::new().spawn_scoped(s, move || run(slot)).ok())
            .collect();
        let mut result = slots.iter().try_for_each(run);
        for h in handles {
            result = result.and(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        }
        result
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_the_range_in_aligned_steps() {
        for len in [0, 1, 7, MIN_CHUNK - 1, MIN_CHUNK, 2 * MIN_CHUNK + 3, 33 * MIN_CHUNK + 5] {
            // (The scoped threads' sizes: another test registers workers meanwhile.)
            let r = chunks_of(len, 8, MIN_CHUNK, cores().min(MAX_THREADS));
            assert!(r.len() <= MAX_THREADS);
            let mut next = 0;
            for (i, c) in r.iter().enumerate() {
                assert_eq!(c.start, next, "len {len}: gap before chunk {i}");
                assert!(c.start % 8 == 0, "len {len}: chunk {i} starts unaligned");
                next = c.end;
            }
            assert_eq!(next, len, "len {len}: chunks end at {next}");
            if len < MIN_CHUNK {
                assert!(r.len() <= 1);
            }
        }
    }

    #[test]
    fn parallel_copy_is_exact() {
        for len in [0, 5, 2 * MIN_CHUNK - 1, 2 * MIN_CHUNK, 9 * MIN_CHUNK + 13] {
            let src: Vec<u8> = (0..len).map(|i| (i * 7 + i / 251) as u8).collect();
            let mut dst = vec![0xAAu8; len];
            copy(&mut dst, &src);
            assert!(dst == src, "len {len}");
            let cells: Vec<std::sync::atomic::AtomicU8> = (0..len).map(|_| Default::default()).collect();
            for_each_chunk::<()>(len, 8, |r| {
                for i in r {
                    cells[i].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                Ok(())
            })
            .ok();
            let seen: Vec<u8> = cells.iter().map(|c| c.load(std::sync::atomic::Ordering::Relaxed)).collect();
            assert!(seen.iter().all(|&n| n == 1), "len {len}: every byte visited once");
        }
    }

    /// Workers that run every part on the caller, last first (a valid pool: the parts are
    /// independent), and record what they were made ready for.
    #[derive(Default)]
    struct Backwards(Mutex<Vec<(usize, Duration)>>);

    impl Workers for Backwards {
        fn run(&self, tasks: Vec<Box<dyn FnOnce() + Send + '_>>) {
            tasks.into_iter().rev().for_each(|t| t());
        }
        fn threads(&self) -> usize {
            3
        }
        fn ready(&self, threads: usize, within: Duration) {
            self.0.lock().push((threads, within));
        }
    }

    #[test]
    fn pooled_copies_split_at_the_smaller_chunk_and_are_exact() {
        let pool = Arc::new(Backwards::default());
        set_workers(Some(pool.clone()));
        // A read-back makes its copy's other threads ready while it waits: only copies that split
        // and are shorter than EXPECT_MAX, only when the wait polls.
        let ms = Duration::from_millis(5);
        for (len, within) in [(2_304_000, ms), (POOLED_MIN_CHUNK, ms), (EXPECT_MAX, ms), (2_304_000, Duration::ZERO)] {
            expect(len, within);
        }
        assert_eq!(*pool.0.lock(), [(1, ms)]);
        let split = chunks(3 * POOLED_MIN_CHUNK + 5, 8);
        let small = chunks(POOLED_MIN_CHUNK - 1, 8);
        for len in [0, 7, POOLED_MIN_CHUNK + 3, 5 * POOLED_MIN_CHUNK + 13] {
            let src: Vec<u8> = (0..len).map(|i| (i * 13 + i / 509) as u8).collect();
            let mut dst = vec![0x55u8; len];
            copy(&mut dst, &src);
            assert!(dst == src, "len {len}");
            let failed = for_each_chunk(len, 8, |r| if r.start > 0 { Err(r.start) } else { Ok(()) });
            assert_eq!(failed.is_err(), chunks(len, 8).len() > 1, "len {len}: a part's error is returned");
        }
        set_workers(None);
        assert_eq!(split.len(), 3);
        assert_eq!(small.len(), 1);
        assert_eq!(chunks(3 * POOLED_MIN_CHUNK + 5, 8).len(), 1, "scoped threads keep the large chunk");
    }
}
