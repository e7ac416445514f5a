//! Storage buffers, uploads and read-back.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::Gpu;
use crate::error::GpuError;

/// A storage buffer on the device with the byte length its tensor needs (the allocation is
/// rounded up to 4 bytes, as wgpu requires for bindings and copies).
#[derive(Clone, Debug)]
pub struct GpuBuffer {
    pub buffer: wgpu::Buffer,
    pub len: u64,
    /// Where a binding of it starts (0 but for the views of [`GpuBuffer::from_offset`]).
    pub offset: u64,
    /// Whether a binding of it ends after `len` bytes rather than at the buffer's end
    /// ([`GpuBuffer::range`]).
    pub sized: bool,
}

impl GpuBuffer {
    /// A whole buffer of `len` bytes.
    pub fn new(buffer: wgpu::Buffer, len: u64) -> GpuBuffer {
        GpuBuffer { buffer, len, offset: 0, sized: false }
    }

    /// `len` bytes of `buffer` from `offset` on, bound as exactly that range (a copy kernel's
    /// ends in ORT's tensors, which may lie inside a larger allocation).
    pub fn range(buffer: wgpu::Buffer, offset: u64, len: u64) -> GpuBuffer {
        GpuBuffer { buffer, len, offset, sized: true }
    }

    pub fn binding(&self) -> wgpu::BindingResource<'_> {
        let size = if self.sized { std::num::NonZeroU64::new(self.len) } else { None };
        if self.offset == 0 && size.is_none() {
            return self.buffer.as_entire_binding();
        }
        wgpu::BindingResource::Buffer(wgpu::BufferBinding { buffer: &self.buffer, offset: self.offset, size })
    }

    /// The same buffer bound from byte `offset` on (a multiple of the device's storage offset
    /// alignment, which is at most [`STORAGE_OFFSET_ALIGN`]), for kernels that read one operand
    /// out of a wider tensor.
    pub fn from_offset(&self, offset: u64) -> Result<GpuBuffer, GpuError> {
        if offset % STORAGE_OFFSET_ALIGN != 0 || offset >= self.len {
            return Err(GpuError::Internal(format!(
                "a binding at byte {offset} of a {}-byte tensor is not aligned or out of range",
                self.len
            )));
        }
        Ok(GpuBuffer {
            buffer: self.buffer.clone(),
            len: self.len - offset,
            offset: self.offset + offset,
            sized: self.sized,
        })
    }
}

/// The largest `min_storage_buffer_offset_alignment` WebGPU allows: a storage binding at a
/// multiple of it is valid on every device.
pub const STORAGE_OFFSET_ALIGN: u64 = 256;

pub(super) const fn padded(len: u64) -> u64 {
    let l = if len < 4 { 4 } else { len };
    l.next_multiple_of(4)
}

/// The smallest storage buffer: one `vec4<f32>`.
const MIN_STORAGE_BYTES: u64 = 16;

/// How long a read-back waits for its map callbacks once its submission is done.
const MAP_TIMEOUT: Duration = Duration::from_secs(30);

/// Requests a whole-buffer map of each buffer; its callback sends `(index, result)`.
pub(super) fn request_maps<'a>(
    buffers: impl IntoIterator<Item = &'a wgpu::Buffer>,
    mode: wgpu::MapMode,
) -> mpsc::Receiver<(usize, Result<(), String>)> {
    let (tx, rx) = mpsc::channel();
    for (i, buffer) in buffers.into_iter().enumerate() {
        let tx = tx.clone();
        buffer.map_async(mode, .., move |res| {
            let _ = tx.send((i, res.map_err(|e| e.to_string())));
        });
    }
    rx
}

/// A host-writable staging buffer that uploads copy from (see [`Gpu::staging`]).
///
/// It is created mapped; [`Gpu::fill`] writes data and unmaps it, the run's encoder copies it
/// with [`Staged::copy_to`], and [`Gpu::remap`] maps it again once the GPU is done with it, so
/// a pooled one is reused without a new allocation or wgpu's zero-fill of a new mapping.
#[derive(Debug)]
pub struct Staged {
    buffer: wgpu::Buffer,
    size: u64,
    mapped: bool,
}

impl Staged {
    /// Records the copy into the start of `dst` (which must hold the padded length).
    pub fn copy_to(&self, encoder: &mut wgpu::CommandEncoder, dst: &wgpu::Buffer) {
        encoder.copy_buffer_to_buffer(&self.buffer, 0, dst, 0, self.size);
    }
}

/// A mapped-readable staging buffer and the byte length to read from it. A clone shares the
/// buffer: a set rebuilt from another takes over its status word's read-back this way.
#[derive(Clone, Debug)]
pub struct Readback {
    buffer: wgpu::Buffer,
    len: u64,
}

impl Gpu {
    /// An uninitialised storage buffer of `len` bytes (copy source and destination too).
    /// A storage buffer that stands in for an omitted input a kernel never reads (a bias, a past
    /// cache, a norm weight): one per device, shared by every dispatch, so preparing a set does
    /// not create one per step. Only ever bound read-only.
    pub fn unused_input(&self) -> Result<&GpuBuffer, GpuError> {
        if let Some(b) = self.unused_input.get() {
            return Ok(b);
        }
        let b = self.storage_buffer(MIN_STORAGE_BYTES, "unused input")?;
        Ok(self.unused_input.get_or_init(|| b))
    }

    pub fn storage_buffer(&self, len: u64, label: &str) -> Result<GpuBuffer, GpuError> {
        // At least one vec4: a binding of a vectorised kernel must hold one element of its array
        // type even when the tensor is empty (wgpu checks the bound size against the shader's).
        let size = padded(len).max(MIN_STORAGE_BYTES);
        let limit = self.caps().max_buffer_size;
        if size > limit {
            return Err(GpuError::OutOfMemory(format!(
                "{label}: {size} bytes exceeds the device's max buffer size {limit}"
            )));
        }
        let make = || {
            self.scoped(label, || {
                Ok(self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size,
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                }))
            })
        };
        let buffer = super::startup::time(super::startup::Phase::Buffers, || match make() {
            // Freed tensors cached by the device allocators go back to the driver first.
            Err(GpuError::OutOfMemory(_)) if super::memory::trim_all() > 0 => {
                let _ = self.device.poll(wgpu::PollType::wait_indefinitely());
                make()
            }
            other => other,
        })?;
        Ok(GpuBuffer::new(buffer, len))
    }

    /// A storage buffer holding `data`.
    pub fn upload(&self, data: &[u8], label: &str) -> Result<GpuBuffer, GpuError> {
        let buf = self.storage_buffer(data.len() as u64, label)?;
        self.write(&buf, data)?;
        Ok(buf)
    }

    /// Writes `data` at the start of `buf`, ordered before later submissions (one submission of
    /// its own; the executor copies from its pooled staging buffers in the run's encoder).
    pub fn write(&self, buf: &GpuBuffer, data: &[u8]) -> Result<(), GpuError> {
        self.write_raw(&buf.buffer, data, "write")
    }

    /// Copies `data` into `dst` through a one-off staging buffer of our own.
    ///
    /// Not `Queue::write_buffer`: wgpu makes its staging buffer there with a driver
    /// out-of-memory counted as fatal, so one upload that does not fit lost the device for every
    /// session on it. A buffer we create ourselves fails with a plain out-of-memory error, and
    /// the device lives on (`kernels/tests/oom.rs`).
    pub(super) fn write_raw(&self, dst: &wgpu::Buffer, data: &[u8], label: &str) -> Result<(), GpuError> {
        if data.is_empty() {
            return Ok(());
        }
        let mut staged = self.staging(data.len() as u64, label)?;
        self.fill(&mut staged, data)?;
        self.scoped(label, || {
            let mut encoder =
                self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) });
            staged.copy_to(&mut encoder, dst);
            self.submit([encoder.finish()]);
            Ok(())
        })
    }

    /// A staging buffer for uploads of `len` bytes (`len` > 0), mapped for [`Gpu::fill`].
    /// wgpu zero-fills a new mapping once; the padding past `len` stays zero.
    pub fn staging(&self, len: u64, label: &str) -> Result<Staged, GpuError> {
        let size = padded(len);
        let buffer = self.scoped(label, || {
            Ok(self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage: wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: true,
            }))
        })?;
        Ok(Staged { buffer, size, mapped: true })
    }

    /// Writes `data` (at most the staging buffer's length) at its start and unmaps it, ready for
    /// [`Staged::copy_to`].
    pub fn fill(&self, staged: &mut Staged, data: &[u8]) -> Result<(), GpuError> {
        if !staged.mapped {
            return Err(GpuError::Invalid("staging buffer written while the GPU may still read it".into()));
        }
        if data.len() as u64 > staged.size {
            return Err(GpuError::Invalid(format!(
                "{} bytes do not fit a staging buffer of {}",
                data.len(),
                staged.size
            )));
        }
        // Large uploads are copied by several threads, each through its own view of a disjoint
        // range (mapped ranges start at multiples of 8 bytes; the last one runs to the padded end).
        let size = staged.size;
        let buffer = &staged.buffer;
        let written = crate::hostcopy::for_each_chunk::<GpuError>(data.len(), 8, |r| {
            let end = if r.end == data.len() { size } else { r.end as u64 };
            let mut view = buffer
                .slice(r.start as u64..end)
                .get_mapped_range_mut()
                .map_err(|e| GpuError::OutOfMemory(format!("staging: {e}")))?;
            view.slice(..r.len()).copy_from_slice(&data[r]);
            Ok(())
        });
        staged.buffer.unmap();
        staged.mapped = false;
        written?;
        Ok(())
    }

    /// Maps staging buffers for writing again. Call once the submission that copied from them
    /// has completed (after its read-back): the maps then resolve on the next poll.
    pub fn remap(&self, staged: &mut [&mut Staged]) -> Result<(), GpuError> {
        let rx = request_maps(staged.iter().map(|s| &s.buffer), wgpu::MapMode::Write);
        let mut outcome = self.check_alive();
        let _ = self.device.poll(wgpu::PollType::Poll);
        let results = self.collect_maps(&rx, staged.len());
        for (s, result) in staged.iter_mut().zip(results) {
            match result {
                Some(Ok(())) => s.mapped = true,
                Some(Err(e)) => outcome = outcome.and(Err(GpuError::Readback(format!("staging map: {e}")))),
                None => outcome = outcome.and(Err(GpuError::Readback("a staging buffer was never mapped".into()))),
            }
        }
        outcome
    }

    /// A staging buffer to read `len` bytes of a storage buffer back through.
    pub fn readback(&self, len: u64) -> Result<Readback, GpuError> {
        let buffer = self.scoped("readback", || {
            Ok(self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("readback"),
                size: padded(len),
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }))
        })?;
        Ok(Readback { buffer, len })
    }

    /// Records a copy of `src` into the staging buffer `dst`.
    pub fn copy_to_readback(&self, encoder: &mut wgpu::CommandEncoder, src: &GpuBuffer, dst: &Readback) {
        encoder.copy_buffer_to_buffer(&src.buffer, 0, &dst.buffer, 0, padded(dst.len.min(src.len)));
    }

    /// Maps the staging buffers (after their copies were submitted), waits, and hands each
    /// one's bytes to `sink` in order.
    pub fn read(&self, readbacks: &[&Readback], mut sink: impl FnMut(usize, &[u8])) -> Result<(), GpuError> {
        let rx = request_maps(readbacks.iter().map(|r| &r.buffer), wgpu::MapMode::Read);
        let mut outcome = self.wait();
        let results = self.collect_maps(&rx, readbacks.len());
        for (i, r) in readbacks.iter().enumerate() {
            let mapped = match &results[i] {
                Some(Ok(())) => true,
                Some(Err(e)) => {
                    outcome = outcome.and(Err(GpuError::Readback(e.clone())));
                    false
                }
                None => {
                    outcome = outcome.and(Err(GpuError::Readback("the buffer was never mapped".into())));
                    false
                }
            };
            if mapped {
                if outcome.is_ok() {
                    match r.buffer.get_mapped_range(..) {
                        Ok(view) => sink(i, &view[..r.len as usize]),
                        Err(e) => outcome = Err(GpuError::Readback(e.to_string())),
                    }
                }
                // Always unmap, so a pooled staging buffer can be mapped again next run.
                r.buffer.unmap();
            }
        }
        outcome
    }

    /// Waits for `n` map callbacks. Another thread's `poll` may be the one that fires ours, a
    /// moment after our own `poll(Wait)` returned, so wait on the callbacks themselves (polling
    /// meanwhile) rather than assume they ran; give up after [`MAP_TIMEOUT`].
    pub(super) fn collect_maps(
        &self,
        rx: &mpsc::Receiver<(usize, Result<(), String>)>,
        n: usize,
    ) -> Vec<Option<Result<(), String>>> {
        let mut results = vec![None; n];
        let deadline = Instant::now() + MAP_TIMEOUT;
        let mut pending = n;
        while pending > 0 {
            match rx.recv_timeout(Duration::from_millis(2)) {
                Ok((i, res)) => {
                    results[i] = Some(res);
                    pending -= 1;
                }
                Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() < deadline && self.check_alive().is_ok() => {
                    let _ = self.device.poll(wgpu::PollType::Poll);
                }
                // Timed out, the device is lost, or every callback was dropped unrun.
                Err(_) => break,
            }
        }
        results
    }

    /// Reads a whole buffer back (tests and tools; the provider batches its read-backs).
    pub fn read_buffer(&self, src: &GpuBuffer) -> Result<Vec<u8>, GpuError> {
        let rb = self.readback(src.len)?;
        let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("read") });
        self.copy_to_readback(&mut encoder, src, &rb);
        self.submit([encoder.finish()]);
        let mut out = Vec::new();
        self.read(&[&rb], |_, bytes| out.extend_from_slice(bytes))?;
        Ok(out)
    }
}
