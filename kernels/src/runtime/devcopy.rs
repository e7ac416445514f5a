//! Device-to-device copies by a compute kernel. A run copies device inputs into its set's
//! buffers and its results into ORT's output tensors; on the H200 wgpu's copy command
//! (`vkCmdCopyBuffer`) moved those at about 0.3 TB/s, a sixth of what a kernel of 16-byte loads
//! reaches (docs/PERFORMANCE.md, "Copies by a kernel"). Short, unaligned or oversized copies keep
//! the copy command.

use std::sync::Arc;

use bytemuck::{bytes_of, Pod, Zeroable};

use super::held::Held;
use super::{Dispatch, Gpu, GpuBuffer};
use crate::error::GpuError;
use crate::shader::{render, OpShader, OpSource, ShaderVariant};

/// Invocations per workgroup, and 16-byte words each moves per pass of its loop.
const THREADS: u32 = 256;
const WORDS_PER_INVOCATION: u64 = 4;
/// Copies shorter than this keep the copy command: the kernel's gain (~3 µs per MiB on the H200)
/// is below a microsecond.
pub const MIN_KERNEL_COPY: u64 = 256 << 10;

#[derive(Debug)]
struct CopySource;

impl OpSource for CopySource {
    fn name(&self) -> String {
        format!("device_copy_v4_t{THREADS}")
    }

    fn emit(&self) -> Result<String, String> {
        render("device_copy.wgsl.j2", minijinja::context! { threads => THREADS })
    }

    /// Both bindings hold exactly `words` words and every index is compared with it.
    fn guards_every_access(&self) -> bool {
        true
    }
}

/// The copy program (goldens).
pub fn variant() -> ShaderVariant {
    OpShader::new(CopySource).into()
}

thread_local! {
    /// Copy kernels recorded into runs, and their dispatches made, by this thread (tests).
    static RECORDED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    static MADE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many copy dispatches (bind groups) this thread has made.
pub fn thread_copy_dispatches_made() -> u64 {
    MADE.with(std::cell::Cell::get)
}

/// How many copy kernels this thread has recorded into runs.
pub fn thread_kernel_copies() -> u64 {
    RECORDED.with(std::cell::Cell::get)
}

/// Counts `n` copy kernels recorded by this thread.
pub(crate) fn recorded(n: usize) {
    RECORDED.with(|c| c.set(c.get() + n as u64));
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    words: u32,
    stride: u32,
    pad: [u32; 2],
}

/// One end of a copy: a buffer and a byte offset into it. Compared by buffer identity, so an
/// owner can keep the dispatch of a copy ORT asks for again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    pub buffer: wgpu::Buffer,
    pub offset: u64,
}

/// What a copy kernel moves: (source, destination, bytes).
pub type CopyKey = (Region, Region, u64);

/// Copy kernels an owner keeps beyond those of its current run and the one before it (ORT hands
/// a bound loop's outputs alternately from two sets of tensors). Few, because a kept dispatch
/// holds its tensors' buffers alive.
const KEPT_COPIES: usize = 2;

/// The copy kernels one owner (a prepared set, one per direction) keeps across its runs: ORT
/// hands the same few device tensors run after run, and making a bind group costs more than the
/// copy of a few MiB. Dropped with the owner, or by an out-of-memory (`runtime::held`).
#[derive(Debug, Default)]
pub struct KeptCopies(Held<Vec<(CopyKey, Arc<Dispatch>)>>);

impl KeptCopies {
    /// The dispatches of `keys`, in order: kept ones reused, the others made and kept; up to
    /// twice as many as `keys` plus [`KEPT_COPIES`] stay, the oldest unused going first.
    pub fn dispatches(&self, gpu: &Gpu, keys: &[CopyKey]) -> Result<Vec<Arc<Dispatch>>, GpuError> {
        let lost = || GpuError::Internal("the kept copy kernels are not a list".into());
        let missing: Vec<&CopyKey> = self
            .0
            .with(|mine| keys.iter().filter(|k| !mine.iter().any(|(m, _)| m == *k)).collect())
            .ok_or_else(lost)?;
        // Made without the registry's lock: making one may run out of memory.
        let made = missing
            .into_iter()
            .map(|k| gpu.copy_dispatch(&k.0, &k.1, k.2).map(|d| (k.clone(), Arc::new(d))))
            .collect::<Result<Vec<_>, _>>()?;
        let (list, evicted) = self
            .0
            .with(|mine| {
                mine.extend(made);
                let list: Option<Vec<_>> =
                    keys.iter().map(|key| mine.iter().find(|(k, _)| k == key).map(|(_, d)| d.clone())).collect();
                let mut evicted = Vec::new();
                while mine.len() > KEPT_COPIES + 2 * keys.len() {
                    let Some(old) = mine.iter().position(|(k, _)| !keys.contains(k)) else { break };
                    evicted.push(mine.remove(old));
                }
                (list, evicted)
            })
            .ok_or_else(lost)?;
        drop(evicted);
        list.ok_or_else(|| GpuError::Internal("a copy kernel was dropped before its run".into()))
    }
}

impl Gpu {
    /// Whether the copy kernel can move `len` bytes between these offsets: at least
    /// [`MIN_KERNEL_COPY`], whole 16-byte words, offsets the device can bind storage at (and
    /// of whole words), and within one binding.
    pub fn kernel_copies(&self, src_offset: u64, dst_offset: u64, len: u64) -> bool {
        let align = u64::from(self.device.limits().min_storage_buffer_offset_alignment).max(16);
        len >= MIN_KERNEL_COPY
            && len % 16 == 0
            && src_offset % align == 0
            && dst_offset % align == 0
            && len <= self.caps().binding_limit()
            && len / 16 <= u64::from(u32::MAX)
    }

    /// A dispatch copying `len` bytes from `src` to `dst`; [`Gpu::kernel_copies`] must allow it.
    pub fn copy_dispatch(&self, src: &Region, dst: &Region, len: u64) -> Result<Dispatch, GpuError> {
        if !self.kernel_copies(src.offset, dst.offset, len) {
            return Err(GpuError::Internal(format!(
                "a kernel copy of {len} bytes at offsets {} and {} is not allowed",
                src.offset, dst.offset
            )));
        }
        let words = len / 16;
        let limit = u64::from(self.caps().max_workgroups_per_dimension.max(1));
        let groups = words.div_ceil(u64::from(THREADS) * WORDS_PER_INVOCATION).clamp(1, limit);
        let params = Params { words: words as u32, stride: (groups * u64::from(THREADS)) as u32, pad: [0; 2] };
        let from = GpuBuffer::range(src.buffer.clone(), src.offset, len);
        let to = GpuBuffer::range(dst.buffer.clone(), dst.offset, len);
        MADE.with(|c| c.set(c.get() + 1));
        self.prepare_op(&variant(), &[&from], &[&to], bytes_of(&params), [groups as u32, 1, 1])
    }
}
