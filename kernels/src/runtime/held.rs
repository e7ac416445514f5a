//! What sets keep across runs that holds ONNX Runtime's device buffers (copy kernels, dispatches
//! bound to ORT's tensors in place), in one process-wide registry so an out-of-memory can drop
//! it all ([`drop_all`], from `memory::trim_all`): a buffer ORT freed stays allocated while a
//! bind group holds it, past the allocators' caches.

use std::any::Any;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::LazyLock;

use parking_lot::Mutex;

static HELD: LazyLock<Mutex<HashMap<u64, Box<dyn Any + Send>>>> = LazyLock::new(Default::default);
static NEXT_OWNER: AtomicU64 = AtomicU64::new(1);

/// One owner's entry, a `T` made on first use and dropped with the owner or by [`drop_all`].
#[derive(Debug)]
pub struct Held<T> {
    id: u64,
    _t: PhantomData<fn() -> T>,
}

impl<T> Default for Held<T> {
    fn default() -> Held<T> {
        Held { id: NEXT_OWNER.fetch_add(1, Ordering::Relaxed), _t: PhantomData }
    }
}

impl<T: Default + Send + 'static> Held<T> {
    /// Runs `f` on the entry under the registry's lock, so `f` must not allocate device memory:
    /// an out-of-memory there would empty the registry under the same lock. `None` only if the
    /// entry is not a `T` (it always is).
    pub fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> Option<R> {
        let mut held = HELD.lock();
        held.entry(self.id).or_insert_with(|| Box::new(T::default())).downcast_mut::<T>().map(f)
    }
}

impl<T> Drop for Held<T> {
    fn drop(&mut self) {
        // Dropped after the lock is released: dropping a dispatch takes other locks.
        let entry = HELD.lock().remove(&self.id);
        drop(entry);
    }
}

/// Drops every owner's entry; returns how many owners had one.
pub fn drop_all() -> u64 {
    let all = std::mem::take(&mut *HELD.lock());
    all.len() as u64
}
