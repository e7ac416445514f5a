//! The threads that share large host copies (`ep_kernels::hostcopy::Workers`): started at the
//! first split copy, parked between copies (or polling for one a read-back expects while it waits
//! for the GPU, `Workers::ready`), stopped and joined when the factory is released (ONNX Runtime
//! may unload the library next, and a parked thread is still in our code).
//!
//! A copy's parts borrow its source and destination, which a thread outliving the copy cannot
//! hold by type; [`Pool::run`] erases that lifetime and returns only once every part has
//! finished, which is what makes the erasure sound (the same contract as scoped threads).

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ep_kernels::hostcopy::{self, Workers};
use parking_lot::{Condvar, Mutex, MutexGuard};

/// How long the caller spins for the other parts before it sleeps: the parts of one copy end
/// within microseconds of each other, and a sleep adds a wake-up (~10 µs) to every copy.
const SPIN: Duration = Duration::from_micros(50);

type Task = Box<dyn FnOnce() + Send + 'static>;

/// One copy's count of unfinished parts.
struct Latch {
    left: AtomicUsize,
    panicked: AtomicBool,
    lock: Mutex<()>,
    done: Condvar,
}

impl Latch {
    fn finish(&self, panicked: bool) {
        if panicked {
            self.panicked.store(true, Ordering::SeqCst);
        }
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            let _held = self.lock.lock();
            self.done.notify_all();
        }
    }

    fn wait(&self) {
        let start = Instant::now();
        while self.left.load(Ordering::Acquire) > 0 {
            if start.elapsed() > SPIN {
                let mut held = self.lock.lock();
                while self.left.load(Ordering::Acquire) > 0 {
                    self.done.wait(&mut held);
                }
                return;
            }
            std::hint::spin_loop();
        }
    }
}

struct Job {
    task: Task,
    latch: Arc<Latch>,
}

impl Job {
    fn run(self) {
        let panicked = catch_unwind(AssertUnwindSafe(self.task)).is_err();
        self.latch.finish(panicked);
    }
}

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    stop: bool,
    /// Threads asked to poll for the next copy instead of sleeping, and until when
    /// ([`Workers::ready`]: a read-back waiting for the GPU).
    wanted: usize,
    until: Option<Instant>,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    ready: Condvar,
    /// Jobs queued (what polling threads watch without the lock), and the stop flag for them.
    pending: AtomicUsize,
    halt: AtomicBool,
}

impl Shared {
    fn push(&self, q: &mut Queue, job: Job) {
        q.jobs.push_back(job);
        self.pending.fetch_add(1, Ordering::AcqRel);
    }

    fn pop(&self, q: &mut Queue, at: usize) -> Option<Job> {
        let job = q.jobs.remove(at)?;
        self.pending.fetch_sub(1, Ordering::AcqRel);
        Some(job)
    }

    /// Polls (yielding the core to anything else runnable) until a job is queued, the pool
    /// stops or `until` passes.
    fn poll_for_jobs(&self, until: Instant) {
        while self.pending.load(Ordering::Acquire) == 0 && !self.halt.load(Ordering::Acquire) && Instant::now() < until
        {
            std::thread::yield_now();
        }
    }
}

/// The copy threads: `threads` of them, started at the first copy that needs them.
pub struct Pool {
    threads: usize,
    shared: Arc<Shared>,
    handles: Mutex<Vec<JoinHandle<()>>>,
}

impl Pool {
    pub fn new(threads: usize) -> Pool {
        Pool { threads, shared: Arc::default(), handles: Mutex::new(Vec::new()) }
    }

    fn start(&self) {
        let mut handles = self.handles.lock();
        // Once stopped, never again: the library may be about to be unloaded.
        while handles.len() < self.threads && !self.shared.queue.lock().stop {
            let shared = self.shared.clone();
            match std::thread::Builder::new().name("ep-wgpu-copy".into()).spawn(move || serve(&shared)) {
                Ok(h) => handles.push(h),
                // The caller runs the parts no thread took.
                Err(_) => break,
            }
        }
    }

    /// Stops and joins the threads (queued parts still run: the callers take theirs back).
    pub fn stop(&self) {
        self.shared.queue.lock().stop = true;
        self.shared.halt.store(true, Ordering::Release);
        self.shared.ready.notify_all();
        for h in self.handles.lock().drain(..) {
            let _ = h.join();
        }
    }
}

fn serve(shared: &Shared) {
    loop {
        let job = {
            let mut q = shared.queue.lock();
            loop {
                if let Some(job) = shared.pop(&mut q, 0) {
                    break job;
                }
                if q.stop {
                    return;
                }
                match q.until.filter(|&t| q.wanted > 0 && Instant::now() < t) {
                    Some(until) => {
                        q.wanted -= 1;
                        MutexGuard::unlocked(&mut q, || shared.poll_for_jobs(until));
                    }
                    None => shared.ready.wait(&mut q),
                }
            }
        };
        job.run();
    }
}

impl Workers for Pool {
    fn run(&self, tasks: Vec<Box<dyn FnOnce() + Send + '_>>) {
        let mut tasks = tasks.into_iter();
        let Some(first) = tasks.next() else { return };
        let latch = Arc::new(Latch {
            left: AtomicUsize::new(tasks.len()),
            panicked: AtomicBool::new(false),
            lock: Mutex::new(()),
            done: Condvar::new(),
        });
        if tasks.len() > 0 {
            self.start();
            let mut q = self.shared.queue.lock();
            // The expected copy has come: no thread polls for another.
            (q.wanted, q.until) = (0, None);
            for task in tasks {
                // SAFETY: only the lifetime changes. `run` does not return before `latch` counts
                // this task finished (below: `wait`, also after a panic of the caller's own part),
                // so everything the task borrows outlives it.
                let task: Task = unsafe { std::mem::transmute::<Box<dyn FnOnce() + Send + '_>, Task>(task) };
                self.shared.push(&mut q, Job { task, latch: latch.clone() });
            }
            drop(q);
            self.shared.ready.notify_all();
        }
        let own = catch_unwind(AssertUnwindSafe(first));
        // Parts no thread has taken yet (all busy, stopped or never started) run here.
        loop {
            let mine = {
                let mut q = self.shared.queue.lock();
                let at = q.jobs.iter().position(|j| Arc::ptr_eq(&j.latch, &latch));
                at.and_then(|i| self.shared.pop(&mut q, i))
            };
            match mine {
                Some(job) => job.run(),
                None => break,
            }
        }
        latch.wait();
        if let Err(panic) = own {
            std::panic::resume_unwind(panic);
        }
        if latch.panicked.load(Ordering::SeqCst) {
            panic!("a host copy part panicked on a copy thread");
        }
    }

    fn threads(&self) -> usize {
        self.threads
    }

    fn ready(&self, threads: usize, within: Duration) {
        self.start();
        let wanted = threads.min(self.threads);
        {
            let mut q = self.shared.queue.lock();
            (q.wanted, q.until) = (wanted, Some(Instant::now() + within));
        }
        for _ in 0..wanted {
            self.shared.ready.notify_one();
        }
    }
}

/// The process's pool, registered with the engine: one thread per core beside the caller, up to
/// `hostcopy::MAX_THREADS` in all.
static POOL: Mutex<Option<Arc<Pool>>> = Mutex::new(None);

/// Registers the pool (threads start at the first split copy). Idempotent.
pub fn install() {
    let mut pool = POOL.lock();
    if pool.is_none() {
        let threads = hostcopy::cores().min(hostcopy::MAX_THREADS).saturating_sub(1);
        if threads == 0 {
            return;
        }
        let p = Arc::new(Pool::new(threads));
        hostcopy::set_workers(Some(p.clone()));
        *pool = Some(p);
    }
}

/// Unregisters the pool and joins its threads (before the library may be unloaded).
pub fn shut_down() {
    let pool = POOL.lock().take();
    if let Some(p) = pool {
        hostcopy::set_workers(None);
        p.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_runs_once_and_borrows_are_kept() {
        let pool = Pool::new(3);
        for parts in [1usize, 2, 4, 9] {
            let hits: Vec<AtomicUsize> = (0..parts).map(|_| AtomicUsize::new(0)).collect();
            let tasks = hits
                .iter()
                .map(|h| {
                    Box::new(move || {
                        h.fetch_add(1, Ordering::SeqCst);
                    }) as Box<dyn FnOnce() + Send + '_>
                })
                .collect();
            pool.run(tasks);
            assert!(hits.iter().all(|h| h.load(Ordering::SeqCst) == 1), "{parts} parts");
        }
        pool.stop();
        // Stopped: the caller runs every part itself.
        let hits = AtomicUsize::new(0);
        let h = &hits;
        pool.run(
            (0..3)
                .map(|_| {
                    Box::new(move || {
                        h.fetch_add(1, Ordering::SeqCst);
                    }) as Box<_>
                })
                .collect(),
        );
        assert_eq!(hits.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn polling_threads_take_parts_and_see_a_stop_at_once() {
        let pool = Pool::new(2);
        pool.ready(1, Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(20));
        let caller = std::thread::current().id();
        let ran_on: Mutex<Vec<std::thread::ThreadId>> = Mutex::default();
        let r = &ran_on;
        let tasks = (0..2)
            .map(|i| {
                Box::new(move || {
                    if i == 0 {
                        // The caller's part waits for the other, which a ready thread must take.
                        let start = Instant::now();
                        while r.lock().is_empty() && start.elapsed() < Duration::from_secs(5) {
                            std::thread::yield_now();
                        }
                    } else {
                        r.lock().push(std::thread::current().id());
                    }
                }) as Box<dyn FnOnce() + Send + '_>
            })
            .collect();
        pool.run(tasks);
        assert!(ran_on.lock().first().is_some_and(|&t| t != caller), "the second part ran on a copy thread");
        // Polling threads see the stop at once, not after their 10 s.
        pool.ready(2, Duration::from_secs(10));
        let start = Instant::now();
        pool.stop();
        assert!(start.elapsed() < Duration::from_secs(2), "stop waited for the polling threads' deadline");
    }

    #[test]
    fn a_panicking_part_re_raises_on_the_caller_after_all_finish() {
        let pool = Pool::new(2);
        let finished = AtomicUsize::new(0);
        let f = &finished;
        let tasks: Vec<Box<dyn FnOnce() + Send + '_>> = vec![
            Box::new(move || {
                f.fetch_add(1, Ordering::SeqCst);
            }),
            Box::new(|| panic!("part")),
            Box::new(move || {
                std::thread::sleep(Duration::from_millis(20));
                f.fetch_add(1, Ordering::SeqCst);
            }),
        ];
        let caught = catch_unwind(AssertUnwindSafe(|| pool.run(tasks)));
        assert!(caught.is_err());
        assert_eq!(finished.load(Ordering::SeqCst), 2, "run returned before every part finished");
        pool.stop();
    }
}

/// `cargo test --release -p onnxruntime-ep-wgpu --lib copy_speed -- --ignored --nocapture`: one copy's time
/// split in 1 to 8 parts on the pool, 2 ms after the last (as between runs), source not cached: the threads
/// parked, or made ready when the 2 ms began (as a read-back does before it waits for the GPU).
#[cfg(test)]
mod speed {
    use super::*;

    #[test]
    #[ignore]
    fn copy_speed() {
        let pool = Pool::new(7);
        let mut evict = vec![0u8; 64 << 20];
        for len in [393_216usize, 1_152_000, 2_304_000, 4_608_000, 16 << 20] {
            let src = vec![1u8; len];
            let mut dst = vec![0u8; len];
            for ready in [false, true] {
                for parts in [1usize, 2, 3, 4, 8] {
                    let mut times = Vec::new();
                    for it in 0..60u8 {
                        evict.iter_mut().step_by(64).for_each(|b| *b = b.wrapping_add(it));
                        if ready {
                            pool.ready(parts - 1, Duration::from_millis(5));
                        }
                        std::thread::sleep(Duration::from_millis(2));
                        let step = len.div_ceil(parts);
                        let t = Instant::now();
                        let tasks = dst
                            .chunks_mut(step)
                            .zip(src.chunks(step))
                            .map(|(d, s)| Box::new(move || d.copy_from_slice(s)) as Box<dyn FnOnce() + Send + '_>)
                            .collect();
                        pool.run(tasks);
                        times.push(t.elapsed().as_secs_f64() * 1e6);
                    }
                    times.sort_by(f64::total_cmp);
                    let mode = if ready { "ready" } else { "parked" };
                    println!("{len} B in {parts} parts, {mode}: median {:.1} us, p10 {:.1}", times[30], times[6]);
                }
            }
        }
        pool.stop();
    }
}
