//! The threads that share large host copies (`ep_kernels::hostcopy::Workers`): started at the
//! first split copy, parked between copies, stopped and joined when the factory is released
//! (ONNX Runtime may unload the library next, and a parked thread is still in our code).
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
use parking_lot::{Condvar, Mutex};

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
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    ready: Condvar,
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
                if let Some(job) = q.jobs.pop_front() {
                    break job;
                }
                if q.stop {
                    return;
                }
                shared.ready.wait(&mut q);
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
            for task in tasks {
                // SAFETY: only the lifetime changes. `run` does not return before `latch` counts
                // this task finished (below: `wait`, also after a panic of the caller's own part),
                // so everything the task borrows outlives it.
                let task: Task = unsafe { std::mem::transmute::<Box<dyn FnOnce() + Send + '_>, Task>(task) };
                q.jobs.push_back(Job { task, latch: latch.clone() });
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
                at.and_then(|i| q.jobs.remove(i))
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
/// split in 1 to 8 parts on the pool, the pool idle for 2 ms before each (as between runs), source not cached.
#[cfg(test)]
mod speed {
    use super::*;

    #[test]
    #[ignore]
    fn copy_speed() {
        let pool = Pool::new(7);
        let mut evict = vec![0u8; 64 << 20];
        for len in [393_216usize, 983_040, 1_152_000, 2_304_000, 16 << 20] {
            let src = vec![1u8; len];
            let mut dst = vec![0u8; len];
            for parts in [1usize, 2, 3, 4, 8] {
                let mut times = Vec::new();
                for it in 0..60u8 {
                    evict.iter_mut().step_by(64).for_each(|b| *b = b.wrapping_add(it));
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
                println!("{len} B in {parts} parts: median {:.1} us, p10 {:.1}", times[30], times[6]);
            }
        }
        pool.stop();
    }
}
