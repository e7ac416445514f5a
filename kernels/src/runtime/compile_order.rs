//! The order pipelines compile in. Compiles run on worker threads, at most one per core at once.
//!
//! A cold process's first run needs only some of a set's pipelines: while a set's tensor-core
//! products compile, its runs take interim plans without tensor cores (`graph/interim.rs`). On
//! an H100, fifteen cold compiles at once each took 1.1–2.6× as long as alone (the SIMT
//! `gemm_f16_64x64_v4` 193 against 75 ms, forty-sixth session), so the tensor-core products that
//! interim plans stand in for slowed the compiles the first run waits for. Now a tensor-core
//! pipeline first requested inside a [`DeferScope`] (a set being prepared with interim plans)
//! is *deferred*: its compile starts only when no other compile is queued or running and no set
//! is being prepared. The set then promotes the deferred pipelines that no interim plan stands in
//! for ([`PendingPipeline::promote`](super::PendingPipeline::promote)), and a run that waits for
//! a deferred pipeline promotes it too, so nothing waits on a compile that has not started.
//!
//! Only tensor-core pipelines that compile unrolled are deferred. Rolled ones (`rolled.rs`)
//! compile in 80–150 ms: on an H100 (fifty-sixth session, Whisper-tiny fp16, cold) starting
//! them beside the interim compiles left the first result where it was (505 against 494 ms,
//! 390 against 408 on a slower host) and had them ready 0.03 s after it instead of 0.16 (0.12
//! instead of 0.24), so the runs after the first leave the interim plans sooner.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::{Condvar, Mutex};

thread_local! {
    /// Whether this thread is preparing a set whose tensor-core compiles may wait.
    static DEFER: Cell<bool> = const { Cell::new(false) };
}

/// Compiles running, and foreground work: compiles not deferred that have not finished, and
/// sets being prepared (a deferred compile waits while there is any).
#[derive(Default)]
struct Slots {
    running: usize,
    foreground: usize,
}

static SLOTS: (Mutex<Slots>, Condvar) = (Mutex::new(Slots { running: 0, foreground: 0 }), Condvar::new());

/// While alive, tensor-core pipelines that this thread requests for the first time are
/// deferred, and no deferred compile starts (see the module's documentation).
pub struct DeferScope {
    previous: bool,
    _hold: HoldDeferred,
}

/// Opens a [`DeferScope`] on this thread.
pub fn defer_tensor_cores() -> DeferScope {
    let hold = hold_deferred();
    DeferScope { previous: DEFER.with(|d| d.replace(true)), _hold: hold }
}

impl Drop for DeferScope {
    fn drop(&mut self) {
        DEFER.with(|d| d.set(self.previous));
    }
}

/// While alive, no deferred compile starts; nothing requested meanwhile is deferred by it. A
/// session's Compile holds one over all its partitions, so the interim pipelines of its later
/// sets start before the tensor-core ones of its earlier sets.
pub struct HoldDeferred(());

/// Opens a [`HoldDeferred`].
pub fn hold_deferred() -> HoldDeferred {
    SLOTS.0.lock().foreground += 1;
    HoldDeferred(())
}

impl Drop for HoldDeferred {
    fn drop(&mut self) {
        SLOTS.0.lock().foreground -= 1;
        SLOTS.1.notify_all();
    }
}

/// Whether a pipeline first requested now on this thread, running on tensor cores or not
/// (`tensor_cores`), compiled rolled or not (`rolled`), is deferred.
pub(super) fn deferred_here(tensor_cores: bool, rolled: bool) -> bool {
    tensor_cores && !rolled && DEFER.with(Cell::get) && !no_defer()
}

/// An experiment build's `EXP_NO_DEFER=1`: nothing is deferred (the tensor-core compiles start
/// beside those of the interim plans). Release builds never read the variable.
fn no_defer() -> bool {
    cfg!(feature = "wgsl-override") && std::env::var("EXP_NO_DEFER").is_ok_and(|v| v.trim() == "1")
}

/// An experiment build's `EXP_COMPILE_THREADS=<n>`: at most n compiles at once instead of one per
/// core. Release builds never read the variable.
fn exp_compile_threads() -> Option<usize> {
    if !cfg!(feature = "wgsl-override") {
        return None;
    }
    std::env::var("EXP_COMPILE_THREADS").ok()?.trim().parse().ok().filter(|&n: &usize| n > 0)
}

/// A compile's place in the order, kept by its pending pipeline.
pub(super) struct Priority {
    deferred: AtomicBool,
}

impl Priority {
    /// A compile about to be queued; one not deferred counts as foreground work until it ends.
    pub(super) fn new(deferred: bool) -> Self {
        if !deferred {
            SLOTS.0.lock().foreground += 1;
        }
        Priority { deferred: AtomicBool::new(deferred) }
    }

    pub(super) fn is_deferred(&self) -> bool {
        self.deferred.load(Ordering::Acquire)
    }

    /// Makes a deferred compile foreground work (nothing for one that is not deferred).
    pub(super) fn promote(&self) {
        if !self.is_deferred() {
            return;
        }
        let mut slots = SLOTS.0.lock();
        if self.deferred.swap(false, Ordering::AcqRel) {
            slots.foreground += 1;
            drop(slots);
            SLOTS.1.notify_all();
        }
    }

    /// Waits for a core (and, for a deferred compile, for the end of all foreground work); the
    /// permit ends the compile's share of either when dropped.
    pub(super) fn permit(&self) -> Permit<'_> {
        let cores = exp_compile_threads().unwrap_or_else(crate::hostcopy::cores);
        let mut slots = SLOTS.0.lock();
        while slots.running >= cores || (self.is_deferred() && slots.foreground > 0) {
            SLOTS.1.wait(&mut slots);
        }
        slots.running += 1;
        Permit { priority: self }
    }
}

/// A running compile's core (see [`Priority::permit`]).
pub(super) struct Permit<'a> {
    priority: &'a Priority,
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let mut slots = SLOTS.0.lock();
        slots.running -= 1;
        if !self.priority.is_deferred() {
            slots.foreground -= 1;
        }
        drop(slots);
        SLOTS.1.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// Takes a permit for `p` on a new thread; the receiver hears when it has one.
    fn start(p: &'static Priority) -> mpsc::Receiver<()> {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _permit = p.permit();
            let _ = tx.send(());
        });
        rx
    }

    fn leaked(deferred: bool) -> &'static Priority {
        Box::leak(Box::new(Priority::new(deferred)))
    }

    #[test]
    fn a_deferred_compile_waits_for_the_set_being_prepared() {
        let scope = defer_tensor_cores();
        assert!(deferred_here(true, false) && !deferred_here(false, false));
        assert!(!deferred_here(true, true), "a rolled tensor-core compile is cheap: never deferred");
        let started = start(leaked(true));
        // Not even a core's worth of waiting: the set being prepared is foreground work.
        assert!(started.recv_timeout(Duration::from_millis(300)).is_err(), "started during the set's preparation");
        let plain = start(leaked(false));
        plain.recv_timeout(Duration::from_secs(120)).expect("a compile not deferred waited");
        drop(scope);
        assert!(!deferred_here(true, false));
        // Other tests of this process may compile meanwhile: it starts once they are done.
        started.recv_timeout(Duration::from_secs(120)).expect("a deferred compile never started");
    }

    #[test]
    fn a_hold_keeps_deferred_compiles_back_and_defers_nothing() {
        let hold = hold_deferred();
        assert!(!deferred_here(true, false), "a hold alone defers nothing");
        let started = start(leaked(true));
        assert!(started.recv_timeout(Duration::from_millis(300)).is_err(), "started while held");
        drop(hold);
        started.recv_timeout(Duration::from_secs(120)).expect("a deferred compile never started");
    }

    #[test]
    fn a_promoted_compile_starts_while_foreground_work_remains() {
        let scope = defer_tensor_cores();
        let urgent = leaked(true);
        let started = start(urgent);
        assert!(started.recv_timeout(Duration::from_millis(300)).is_err(), "started during the set's preparation");
        urgent.promote();
        assert!(!urgent.is_deferred());
        started.recv_timeout(Duration::from_secs(120)).expect("a promoted compile did not start");
        drop(scope);
    }
}
