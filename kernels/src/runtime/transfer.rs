//! Copies between host memory and our device memory, and between two device ranges, for ONNX
//! Runtime's data transfer and for `Compute` on device tensors; each copy is counted.
//!
//! Every copy is ordered on the device's one queue: an upload returns once its bytes are in a
//! staging buffer and the copy is submitted, so any later use of the destination — a run, a
//! copy, a read-back — sees them; a read-back waits for the GPU and hands over exactly the
//! tensor's bytes, never the padding. wgpu copies need offsets and lengths in multiples of 4:
//! other ranges are read, patched on the host and written back as whole words, so the bytes
//! around a tensor are never touched.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::buffers::{padded, request_maps};
use super::memory::{bucket, DeviceSlice};
use super::startup::{self, Phase};
use super::Gpu;
use crate::error::GpuError;

/// Staging bytes a device keeps mapped for reuse, per direction: room for an LLM's prefill logits
/// (1,024 tokens × 152k vocabulary in f16 is 300 MB), whose staging must not be made every run.
const POOL_LIMIT: u64 = 512 << 20;

/// Copies counted since the process started (or on this thread: [`thread_copy_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CopyStats {
    pub host_to_device_bytes: u64,
    pub host_to_device: u64,
    pub device_to_host_bytes: u64,
    pub device_to_host: u64,
    pub device_to_device_bytes: u64,
    pub device_to_device: u64,
}

impl CopyStats {
    /// What was copied between `earlier` and `self`.
    pub fn since(&self, earlier: &CopyStats) -> CopyStats {
        CopyStats {
            host_to_device_bytes: self.host_to_device_bytes - earlier.host_to_device_bytes,
            host_to_device: self.host_to_device - earlier.host_to_device,
            device_to_host_bytes: self.device_to_host_bytes - earlier.device_to_host_bytes,
            device_to_host: self.device_to_host - earlier.device_to_host,
            device_to_device_bytes: self.device_to_device_bytes - earlier.device_to_device_bytes,
            device_to_device: self.device_to_device - earlier.device_to_device,
        }
    }

    /// `h2d 2 (1.2 MB), d2h 1 (4 KB), d2d 0 (0 B)`.
    pub fn summary(&self) -> String {
        format!(
            "host->GPU {} ({} B), GPU->host {} ({} B), GPU->GPU {} ({} B)",
            self.host_to_device,
            self.host_to_device_bytes,
            self.device_to_host,
            self.device_to_host_bytes,
            self.device_to_device,
            self.device_to_device_bytes
        )
    }
}

/// Which way a copy went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    HostToDevice,
    DeviceToHost,
    DeviceToDevice,
}

static TOTAL: [AtomicU64; 6] = [const { AtomicU64::new(0) }; 6];

thread_local! {
    static THREAD: Cell<CopyStats> = const { Cell::new(CopyStats {
        host_to_device_bytes: 0, host_to_device: 0, device_to_host_bytes: 0, device_to_host: 0,
        device_to_device_bytes: 0, device_to_device: 0,
    }) };
}

/// Counts one copy of `bytes` (empty copies are not counted).
pub fn count(direction: Direction, bytes: u64) {
    if bytes == 0 {
        return;
    }
    let k = direction as usize * 2;
    TOTAL[k].fetch_add(bytes, Ordering::Relaxed);
    TOTAL[k + 1].fetch_add(1, Ordering::Relaxed);
    THREAD.with(|t| {
        let mut s = t.get();
        let (b, n) = match direction {
            Direction::HostToDevice => (&mut s.host_to_device_bytes, &mut s.host_to_device),
            Direction::DeviceToHost => (&mut s.device_to_host_bytes, &mut s.device_to_host),
            Direction::DeviceToDevice => (&mut s.device_to_device_bytes, &mut s.device_to_device),
        };
        *b += bytes;
        *n += 1;
        t.set(s);
    });
}

/// Every copy of the process so far.
pub fn copy_stats() -> CopyStats {
    let v: Vec<u64> = TOTAL.iter().map(|a| a.load(Ordering::Relaxed)).collect();
    CopyStats {
        host_to_device_bytes: v[0],
        host_to_device: v[1],
        device_to_host_bytes: v[2],
        device_to_host: v[3],
        device_to_device_bytes: v[4],
        device_to_device: v[5],
    }
}

/// Every copy made on this thread so far (a run's copies are the difference around it).
pub fn thread_copy_stats() -> CopyStats {
    THREAD.with(Cell::get)
}

/// Pending uploads above this many bytes are submitted at once rather than with the next work.
const PENDING_LIMIT: u64 = 64 << 20;

/// Mapped staging buffers kept for reuse, by size bucket, and the uploads recorded but not yet
/// submitted.
#[derive(Default)]
pub(crate) struct StagingPools {
    upload: Arc<Mutex<Bucketed>>,
    download: Arc<Mutex<Bucketed>>,
    pending: Mutex<Pending>,
}

/// Upload copies waiting for the device's next submission, so a run's uploads and its work go
/// to the queue in one submission.
#[derive(Default)]
struct Pending {
    encoder: Option<wgpu::CommandEncoder>,
    staged: Vec<(u64, wgpu::Buffer)>,
    bytes: u64,
}

/// Free staging buffers by size (generic for its unit test).
struct Bucketed<B = wgpu::Buffer> {
    free: HashMap<u64, Vec<B>>,
    bytes: u64,
}

impl<B> Default for Bucketed<B> {
    fn default() -> Self {
        Bucketed { free: HashMap::new(), bytes: 0 }
    }
}

impl<B> Bucketed<B> {
    fn take(&mut self, size: u64) -> Option<B> {
        let b = self.free.get_mut(&size)?.pop()?;
        self.bytes -= size;
        Some(b)
    }

    /// Keeps `b` for reuse; the newest buffer wins: others go, largest first, until it fits.
    fn put(&mut self, size: u64, b: B) {
        if size > POOL_LIMIT {
            return;
        }
        while self.bytes + size > POOL_LIMIT {
            let Some(victim) = self.free.iter().filter(|(_, v)| !v.is_empty()).map(|(&k, _)| k).max() else { break };
            if let Some(list) = self.free.get_mut(&victim) {
                list.pop();
                self.bytes -= victim;
            }
        }
        self.bytes += size;
        self.free.entry(size).or_default().push(b);
    }
}

/// One copy.
pub enum Copy<'a> {
    ToDevice { src: &'a [u8], dst: DeviceSlice },
    ToHost { src: DeviceSlice, dst: &'a mut [u8] },
    OnDevice { src: DeviceSlice, dst: DeviceSlice },
}

/// Runs the copies in order; each is counted. Ranges must have equal lengths.
pub fn transfer(copies: Vec<Copy<'_>>) -> Result<(), GpuError> {
    for c in copies {
        match c {
            Copy::ToDevice { src, dst } => {
                check_len(src.len() as u64, dst.len)?;
                write(&dst, src)?;
                count(Direction::HostToDevice, dst.len);
            }
            Copy::ToHost { src, dst } => {
                check_len(src.len, dst.len() as u64)?;
                read(&src, dst)?;
                count(Direction::DeviceToHost, src.len);
            }
            Copy::OnDevice { src, dst } => {
                check_len(src.len, dst.len)?;
                super::shadow::forget(&dst.buffer, dst.offset, dst.len);
                copy_on_device(&src, &dst)?;
                count(Direction::DeviceToDevice, src.len);
            }
        }
    }
    Ok(())
}

fn check_len(src: u64, dst: u64) -> Result<(), GpuError> {
    if src != dst {
        return Err(GpuError::Invalid(format!("copy between tensors of {src} and {dst} bytes")));
    }
    Ok(())
}

/// The whole 4-byte words that cover `s`.
fn covering(s: &DeviceSlice) -> (u64, u64) {
    let start = s.offset / 4 * 4;
    (start, (s.offset + s.len).next_multiple_of(4) - start)
}

/// Host bytes into a device range (exact: no byte outside it changes).
pub fn write(dst: &DeviceSlice, data: &[u8]) -> Result<(), GpuError> {
    if data.is_empty() {
        return Ok(());
    }
    super::shadow::record(dst, data);
    if dst.aligned() {
        return dst.gpu.upload_at(&dst.buffer, dst.offset, data);
    }
    let (start, len) = covering(dst);
    let mut words = vec![0u8; len as usize];
    dst.gpu.read_at(&dst.buffer, start, &mut words)?;
    let at = (dst.offset - start) as usize;
    words[at..at + data.len()].copy_from_slice(data);
    dst.gpu.upload_at(&dst.buffer, start, &words)
}

/// A device range into host memory, after every submitted use of it. A range written from the
/// host and not since (`shadow`: ORT reading back a prompt's attention mask for its CPU nodes) is
/// read from its host copy, without waiting for the GPU.
pub fn read(src: &DeviceSlice, out: &mut [u8]) -> Result<(), GpuError> {
    if out.is_empty() {
        return Ok(());
    }
    if let Some(bytes) = super::shadow::lookup(src).filter(|b| b.len() == out.len()) {
        out.copy_from_slice(&bytes);
        return Ok(());
    }
    if src.aligned() {
        return src.gpu.read_at(&src.buffer, src.offset, out);
    }
    let (start, len) = covering(src);
    let mut words = vec![0u8; len as usize];
    src.gpu.read_at(&src.buffer, start, &mut words)?;
    let at = (src.offset - start) as usize;
    out.copy_from_slice(&words[at..at + out.len()]);
    Ok(())
}

/// Whether `encode_copy` can record this copy (same device, wgpu's alignment, two buffers: wgpu
/// refuses a copy within one buffer, and ORT's memory patterns put tensors in one).
pub fn direct(src: &DeviceSlice, dst: &DeviceSlice) -> bool {
    Arc::ptr_eq(&src.gpu, &dst.gpu) && src.offset % 4 == 0 && dst.aligned() && src.buffer != dst.buffer
}

/// Records a copy that [`direct`] allows into `encoder`.
pub fn encode_copy(encoder: &mut wgpu::CommandEncoder, src: &DeviceSlice, dst: &DeviceSlice) {
    if dst.len > 0 {
        encoder.copy_buffer_to_buffer(&src.buffer, src.offset, &dst.buffer, dst.offset, dst.len);
    }
}

/// One device range into another (possibly on another device).
pub fn copy_on_device(src: &DeviceSlice, dst: &DeviceSlice) -> Result<(), GpuError> {
    if src.len == 0 {
        return Ok(());
    }
    if direct(src, dst) {
        let gpu = &dst.gpu;
        return gpu.scoped("device copy", || {
            let mut encoder =
                gpu.device().create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("device copy") });
            encode_copy(&mut encoder, src, dst);
            gpu.submit([encoder.finish()]);
            Ok(())
        });
    }
    let mut bytes = vec![0u8; src.len as usize];
    read(src, &mut bytes)?;
    write(dst, &bytes)
}

impl Gpu {
    /// Uploads `data` (a multiple of 4 bytes) to `dst` at `offset` through a pooled staging
    /// buffer; ordered before every later submission.
    pub fn upload_at(&self, dst: &wgpu::Buffer, offset: u64, data: &[u8]) -> Result<(), GpuError> {
        let len = data.len() as u64;
        if len % 4 != 0 || offset % 4 != 0 {
            return Err(GpuError::Internal(format!("unaligned upload of {len} bytes at {offset}")));
        }
        let size = bucket(len);
        let staging = self.pooled_staging(true, size)?;
        // Large uploads are copied by several threads, each through its own mapped view.
        startup::time(Phase::CopyIn, || {
            let written = crate::hostcopy::for_each_chunk::<GpuError>(data.len(), 8, |r| {
                let mut view = staging
                    .slice(r.start as u64..r.end as u64)
                    .get_mapped_range_mut()
                    .map_err(|e| GpuError::OutOfMemory(format!("upload staging: {e}")))?;
                view.slice(..).copy_from_slice(&data[r]);
                Ok(())
            });
            staging.unmap();
            written
        })?;
        // Recorded now, submitted with the next submission on this device (every submission and
        // every wait goes through `Gpu::submit`), so queue order is kept.
        let flush = {
            let mut pending = self.staging_pools.pending.lock();
            let device = &self.device;
            let encoder = pending.encoder.get_or_insert_with(|| {
                device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("uploads") })
            });
            encoder.copy_buffer_to_buffer(&staging, 0, dst, offset, len);
            pending.staged.push((size, staging));
            pending.bytes += size;
            pending.bytes > PENDING_LIMIT
        };
        if flush {
            self.scoped("upload", || {
                self.submit([]);
                Ok(())
            })?;
        }
        Ok(())
    }

    /// Submits `work` after the pending uploads, in one submission.
    pub fn submit(&self, work: impl IntoIterator<Item = wgpu::CommandBuffer>) {
        // The lock is held through the submission: another thread's work submitted between
        // taking the uploads and submitting them could otherwise overtake them.
        let staged = {
            let mut pending = self.staging_pools.pending.lock();
            pending.bytes = 0;
            let first = pending.encoder.take().map(wgpu::CommandEncoder::finish);
            self.queue.submit(first.into_iter().chain(work));
            self.submitted.fetch_add(1, std::sync::atomic::Ordering::Release);
            std::mem::take(&mut pending.staged)
        };
        // Each staging buffer is mapped again once the GPU is done with it (on a later poll),
        // then reused.
        for (size, staging) in staged {
            let pool = self.staging_pools.upload.clone();
            let again = staging.clone();
            staging.map_async(wgpu::MapMode::Write, .., move |r| {
                if r.is_ok() {
                    pool.lock().put(size, again);
                }
            });
        }
    }

    /// A staging buffer of `size` bytes from the pool, or a new one: for uploads mapped for
    /// writing (`MAP_WRITE | COPY_SRC`), for read-backs unmapped (`MAP_READ | COPY_DST`).
    pub(super) fn pooled_staging(&self, upload: bool, size: u64) -> Result<wgpu::Buffer, GpuError> {
        let pool = if upload { &self.staging_pools.upload } else { &self.staging_pools.download };
        if let Some(b) = pool.lock().take(size) {
            return Ok(b);
        }
        let (label, usage) = if upload {
            ("upload staging", wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC)
        } else {
            ("readback", wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST)
        };
        self.scoped(label, || {
            Ok(self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage,
                mapped_at_creation: upload,
            }))
        })
    }

    /// Puts an unmapped read-back staging buffer of `size` bytes back in the pool.
    pub(super) fn keep_readback(&self, size: u64, staging: wgpu::Buffer) {
        self.staging_pools.download.lock().put(size, staging);
    }

    /// Reads `out.len()` bytes (a multiple of 4) of `src` at `offset`, waiting for the GPU.
    pub fn read_at(&self, src: &wgpu::Buffer, offset: u64, out: &mut [u8]) -> Result<(), GpuError> {
        if let Some(parts) = super::readback::parts_for(out.len(), self.spin_wait().is_some()) {
            return self.read_at_parts(src, offset, out, parts);
        }
        let len = out.len() as u64;
        let size = bucket(padded(len));
        let staging = self.pooled_staging(false, size)?;
        self.scoped("readback", || {
            let mut encoder =
                self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("readback") });
            encoder.copy_buffer_to_buffer(src, offset, &staging, 0, padded(len));
            self.submit([encoder.finish()]);
            Ok(())
        })?;
        let (mut outcome, mapped) = startup::time(Phase::CopyOutWait, || {
            crate::hostcopy::expect(out.len(), self.spin_wait().unwrap_or_default());
            let rx = request_maps([&staging], wgpu::MapMode::Read);
            let outcome = self.wait();
            (outcome, self.collect_maps(&rx, 1).pop().flatten())
        });
        match mapped {
            Some(Ok(())) => {
                if outcome.is_ok() {
                    outcome = startup::time(Phase::CopyOut, || match staging.slice(..padded(len)).get_mapped_range() {
                        Ok(view) => {
                            crate::hostcopy::copy(out, &view[..out.len()]);
                            Ok(())
                        }
                        Err(e) => Err(GpuError::Readback(e.to_string())),
                    });
                }
                staging.unmap();
                if outcome.is_ok() {
                    self.keep_readback(size, staging);
                }
            }
            Some(Err(e)) => outcome = outcome.and(Err(GpuError::Readback(e))),
            None => outcome = outcome.and(Err(GpuError::Readback("the buffer was never mapped".into()))),
        }
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_staging_buffer_is_kept() {
        let mut pool: Bucketed<u32> = Bucketed::default();
        pool.put(256 << 20, 1);
        pool.put(160 << 20, 2);
        // 288 MiB does not fit beside 416: the largest others go first, until it does.
        pool.put(288 << 20, 3);
        assert_eq!(pool.bytes, (288 + 160) << 20);
        assert_eq!(pool.take(256 << 20), None);
        assert_eq!(pool.take(288 << 20), Some(3));
        assert_eq!(pool.take(160 << 20), Some(2));
        assert_eq!(pool.bytes, 0);
        pool.put(POOL_LIMIT + 1, 4);
        assert_eq!(pool.bytes, 0);
    }
}
