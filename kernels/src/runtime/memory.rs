//! Device memory that ONNX Runtime allocates on our device, behind addresses it may do
//! arithmetic on.
//!
//! ONNX Runtime treats what an allocator returns as a byte address: with memory patterns (on by
//! default) it places tensors at `base + offset` inside one large allocation, and tensor views
//! carry byte offsets. A wgpu buffer has no address, so each buffer gets a range of a reserved,
//! never-mapped part of the 64-bit space ([`ADDRESS_BASE`] upwards, a guard gap between
//! buffers) and one process-wide map turns any address inside a live range back into
//! `(buffer, offset)` ([`resolve`]). The address stays with its buffer for the buffer's life,
//! so the reuse cache hands back the same address and the space is never exhausted; an
//! address whose buffer was freed resolves to an error, not to another tensor.
//!
//! Allocations are rounded up to size buckets (256 B steps up to 4 KiB, then eight steps per
//! power of two) and freed buffers are kept per bucket, up to a byte limit, so a steady run
//! allocates nothing.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Weak};

use parking_lot::{Mutex, RwLock};

use super::Gpu;
use crate::error::GpuError;

/// The first address handed out: 64 TiB into the user half of the address space, far from
/// where Linux maps heaps, stacks and libraries. Nothing is ever mapped there by us.
pub const ADDRESS_BASE: u64 = 0x0000_4000_0000_0000;
/// Buffers start at multiples of this, with at least this much unused space between them, so
/// one past the end of a buffer never resolves to the next one.
const ADDRESS_ALIGN: u64 = 1 << 16;
/// Freed bytes kept for reuse per allocator before the largest cached buffers are dropped.
pub const DEFAULT_CACHE_LIMIT: u64 = 1 << 30;

/// A byte range of a device buffer: what an address of ours stands for.
#[derive(Clone, Debug)]
pub struct DeviceSlice {
    pub gpu: Arc<Gpu>,
    pub buffer: wgpu::Buffer,
    pub offset: u64,
    pub len: u64,
}

impl DeviceSlice {
    /// Whether wgpu can copy it directly (offset and length multiples of 4).
    pub fn aligned(&self) -> bool {
        self.offset % 4 == 0 && self.len % 4 == 0
    }
}

struct Live {
    gpu: Arc<Gpu>,
    buffer: wgpu::Buffer,
    /// The bytes ONNX Runtime asked for (addresses past them do not resolve).
    size: u64,
    capacity: u64,
    owner: Weak<Pool>,
}

static SPACE: LazyLock<RwLock<BTreeMap<u64, Live>>> = LazyLock::new(|| RwLock::new(BTreeMap::new()));
static NEXT_ADDRESS: AtomicU64 = AtomicU64::new(ADDRESS_BASE);

/// The buffer range behind `[addr, addr + len)`: an error when no live allocation of ours
/// holds it (freed, never ours — e.g. another provider's device memory —, or out of bounds).
pub fn resolve(addr: u64, len: u64) -> Result<DeviceSlice, GpuError> {
    if addr == 0 {
        // ORT carries on with a NULL tensor when an allocation failed: report that failure.
        return Err(last_failure().unwrap_or_else(|| not_ours(addr)));
    }
    let space = SPACE.read();
    let found = space.range(..=addr).next_back();
    let Some((&start, live)) = found else {
        return Err(not_ours(addr));
    };
    let end = addr.checked_add(len).ok_or_else(|| not_ours(addr))?;
    if end > start + live.size {
        if addr <= start + live.size {
            return Err(GpuError::Invalid(format!(
                "a device tensor of {len} bytes at offset {} overruns its allocation of {} bytes",
                addr - start,
                live.size
            )));
        }
        return Err(not_ours(addr));
    }
    Ok(DeviceSlice { gpu: live.gpu.clone(), buffer: live.buffer.clone(), offset: addr - start, len })
}

/// The last failed allocation: a device loss, or anything else, with its message.
static LAST_FAILURE: Mutex<Option<(bool, String)>> = Mutex::new(None);

fn remember_failure(e: &GpuError) {
    *LAST_FAILURE.lock() = Some((matches!(e, GpuError::DeviceLost(_)), e.to_string()));
}

fn last_failure() -> Option<GpuError> {
    LAST_FAILURE.lock().as_ref().map(|(lost, message)| {
        let message = format!("a device allocation failed: {message}");
        if *lost {
            GpuError::DeviceLost(message)
        } else {
            GpuError::OutOfMemory(message)
        }
    })
}

fn not_ours(addr: u64) -> GpuError {
    GpuError::Invalid(format!(
        "device address {addr:#x} is not live memory of WgpuExecutionProvider (it was released, or it belongs to \
         another provider)"
    ))
}

/// The size bucket of an allocation of `size` bytes.
pub fn bucket(size: u64) -> u64 {
    if size <= 4096 {
        return size.max(1).next_multiple_of(256);
    }
    // An eighth of the power of two at or below `size`: at most 12.5% rounding.
    let step = 1u64 << (63 - size.leading_zeros()).saturating_sub(3);
    size.next_multiple_of(step)
}

/// Process-wide counters of the device allocators (see [`memory_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryStats {
    /// Bytes of live allocations (bucket sizes).
    pub live_bytes: u64,
    /// Bytes of freed buffers kept for reuse.
    pub cached_bytes: u64,
    /// `Alloc` calls that succeeded.
    pub allocations: u64,
    /// Buffers created on the device (an allocation served from the cache creates none).
    pub buffers_created: u64,
    /// Allocations that failed (out of memory or too large).
    pub failures: u64,
}

struct Counters {
    live: AtomicU64,
    cached: AtomicU64,
    allocations: AtomicU64,
    created: AtomicU64,
    failures: AtomicU64,
}

static COUNTERS: Counters = Counters {
    live: AtomicU64::new(0),
    cached: AtomicU64::new(0),
    allocations: AtomicU64::new(0),
    created: AtomicU64::new(0),
    failures: AtomicU64::new(0),
};

pub fn memory_stats() -> MemoryStats {
    MemoryStats {
        live_bytes: COUNTERS.live.load(Ordering::Relaxed),
        cached_bytes: COUNTERS.cached.load(Ordering::Relaxed),
        allocations: COUNTERS.allocations.load(Ordering::Relaxed),
        buffers_created: COUNTERS.created.load(Ordering::Relaxed),
        failures: COUNTERS.failures.load(Ordering::Relaxed),
    }
}

/// Where an allocator gets its device: a fixed one (a session's), or one opened on first use
/// and reopened after a loss (the allocator ORT creates when the library is registered).
pub type GpuSource = Box<dyn Fn() -> Result<Arc<Gpu>, GpuError> + Send + Sync>;

struct Cached {
    address: u64,
    buffer: wgpu::Buffer,
    gpu: Arc<Gpu>,
}

struct Pool {
    source: GpuSource,
    free: Mutex<HashMap<u64, Vec<Cached>>>,
    cached_bytes: AtomicU64,
    limit: u64,
}

/// A size-bucketed allocator of device buffers with addresses (see the module docs).
pub struct DeviceAllocator {
    pool: Arc<Pool>,
}

impl DeviceAllocator {
    pub fn new(source: GpuSource, cache_limit: u64) -> DeviceAllocator {
        let pool = Arc::new(Pool {
            source,
            free: Mutex::new(HashMap::new()),
            cached_bytes: AtomicU64::new(0),
            limit: cache_limit,
        });
        let mut pools = POOLS.lock();
        pools.retain(|p| p.strong_count() > 0);
        pools.push(Arc::downgrade(&pool));
        DeviceAllocator { pool }
    }

    /// A fixed device.
    pub fn for_gpu(gpu: Arc<Gpu>, cache_limit: u64) -> DeviceAllocator {
        DeviceAllocator::new(Box::new(move || Ok(gpu.clone())), cache_limit)
    }

    /// Allocates `size` bytes (0 gives a small allocation of its own) and returns its address.
    pub fn alloc(&self, size: u64) -> Result<u64, GpuError> {
        let result = self.try_alloc(size);
        if let Err(e) = &result {
            COUNTERS.failures.fetch_add(1, Ordering::Relaxed);
            remember_failure(e);
        }
        result
    }

    fn try_alloc(&self, size: u64) -> Result<u64, GpuError> {
        let gpu = (self.pool.source)()?;
        gpu.check_alive()?;
        let capacity = bucket(size);
        let (address, buffer) = match self.take_cached(&gpu, capacity) {
            Some(c) => (c.address, c.buffer),
            None => {
                let buffer = self.create(&gpu, capacity)?;
                let address =
                    NEXT_ADDRESS.fetch_add(capacity.next_multiple_of(ADDRESS_ALIGN) + ADDRESS_ALIGN, Ordering::Relaxed);
                (address, buffer)
            }
        };
        let live = Live { gpu, buffer, size, capacity, owner: Arc::downgrade(&self.pool) };
        SPACE.write().insert(address, live);
        COUNTERS.live.fetch_add(capacity, Ordering::Relaxed);
        COUNTERS.allocations.fetch_add(1, Ordering::Relaxed);
        Ok(address)
    }

    fn create(&self, gpu: &Arc<Gpu>, capacity: u64) -> Result<wgpu::Buffer, GpuError> {
        let limit = gpu.caps().max_buffer_size;
        if capacity > limit {
            return Err(GpuError::OutOfMemory(format!(
                "an allocation of {capacity} bytes exceeds the device's largest buffer ({limit} bytes)"
            )));
        }
        let make = || {
            gpu.scoped("device allocation", || {
                Ok(gpu.device().create_buffer(&wgpu::BufferDescriptor {
                    label: Some("ort tensor"),
                    size: capacity,
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                }))
            })
        };
        let buffer = match make() {
            // Out of memory: give every allocator's cached buffers back to the devices and try
            // once more.
            Err(GpuError::OutOfMemory(_)) if trim_all() > 0 => {
                let _ = gpu.device().poll(wgpu::PollType::wait_indefinitely());
                make()?
            }
            other => other?,
        };
        COUNTERS.created.fetch_add(1, Ordering::Relaxed);
        Ok(buffer)
    }

    fn take_cached(&self, gpu: &Arc<Gpu>, capacity: u64) -> Option<Cached> {
        let mut free = self.pool.free.lock();
        let list = free.get_mut(&capacity)?;
        // Buffers of a device that was since lost or replaced are dropped, never reused.
        while let Some(c) = list.pop() {
            self.pool.cached_bytes.fetch_sub(capacity, Ordering::Relaxed);
            COUNTERS.cached.fetch_sub(capacity, Ordering::Relaxed);
            if Arc::ptr_eq(&c.gpu, gpu) {
                return Some(c);
            }
        }
        None
    }

    /// Drops cached buffers until at most `keep` bytes stay cached; returns the bytes dropped.
    pub fn trim(&self, keep: u64) -> u64 {
        self.pool.trim(keep)
    }

    /// Bytes of freed buffers this allocator keeps for reuse.
    pub fn cached_bytes(&self) -> u64 {
        self.pool.cached_bytes.load(Ordering::Relaxed)
    }
}

impl Drop for DeviceAllocator {
    fn drop(&mut self) {
        self.trim(0);
    }
}

impl Pool {
    fn trim(&self, keep: u64) -> u64 {
        let mut free = self.free.lock();
        let mut dropped = 0;
        let mut sizes: Vec<u64> = free.keys().copied().collect();
        sizes.sort_unstable_by(|a, b| b.cmp(a));
        for size in sizes {
            let Some(list) = free.get_mut(&size) else { continue };
            while self.cached_bytes.load(Ordering::Relaxed) > keep && list.pop().is_some() {
                self.cached_bytes.fetch_sub(size, Ordering::Relaxed);
                COUNTERS.cached.fetch_sub(size, Ordering::Relaxed);
                dropped += size;
            }
        }
        free.retain(|_, l| !l.is_empty());
        dropped
    }

    fn put(&self, c: Cached, capacity: u64) {
        if c.gpu.is_lost() || capacity > self.limit {
            return;
        }
        self.free.lock().entry(capacity).or_default().push(c);
        self.cached_bytes.fetch_add(capacity, Ordering::Relaxed);
        COUNTERS.cached.fetch_add(capacity, Ordering::Relaxed);
        if self.cached_bytes.load(Ordering::Relaxed) > self.limit {
            self.trim(self.limit / 2);
        }
    }
}

/// Every allocator's pool, so an out-of-memory anywhere can empty all the caches.
static POOLS: Mutex<Vec<Weak<Pool>>> = Mutex::new(Vec::new());

/// Drops the cached buffers of every live allocator, and what sets keep that holds ORT's buffers
/// (they may hold freed tensors': `runtime::held`); returns the bytes of cached buffers dropped
/// plus the number of sets' entries dropped, 0 when nothing was.
pub fn trim_all() -> u64 {
    let pools: Vec<Arc<Pool>> = POOLS.lock().iter().filter_map(Weak::upgrade).collect();
    pools.iter().map(|p| p.trim(0)).sum::<u64>() + super::held::drop_all()
}

/// Frees the allocation starting at `addr` (NULL is a no-op). The buffer goes back to its
/// allocator's cache, or is dropped when that allocator is gone. Returns false when `addr` is
/// not the start of a live allocation.
pub fn free(addr: u64) -> bool {
    if addr == 0 {
        return true;
    }
    let Some(live) = SPACE.write().remove(&addr) else { return false };
    super::shadow::forget_buffer(&live.buffer);
    COUNTERS.live.fetch_sub(live.capacity, Ordering::Relaxed);
    if let Some(pool) = live.owner.upgrade() {
        pool.put(Cached { address: addr, buffer: live.buffer, gpu: live.gpu }, live.capacity);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_round_up_by_at_most_an_eighth() {
        assert_eq!(bucket(0), 256);
        assert_eq!(bucket(1), 256);
        assert_eq!(bucket(257), 512);
        assert_eq!(bucket(4096), 4096);
        assert_eq!(bucket(4097), 4608);
        for size in [5000u64, 65_537, 1 << 20, (1 << 20) + 1, 3_000_000_017] {
            let b = bucket(size);
            assert!(b >= size && b - size <= size / 8 + 1, "{size} -> {b}");
            assert_eq!(b % 256, 0, "{size} -> {b}");
        }
    }

    #[test]
    fn unknown_addresses_do_not_resolve() {
        assert!(resolve(0x1234, 4).is_err());
        assert!(resolve(ADDRESS_BASE - 1, 1).is_err());
        assert!(!free(0x1234));
        assert!(free(0));
    }
}
