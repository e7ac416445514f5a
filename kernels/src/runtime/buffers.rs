//! Storage buffers, uploads and read-back.

use std::sync::Arc;

use parking_lot::Mutex;

use super::Gpu;
use crate::error::GpuError;

/// A storage buffer on the device with the byte length its tensor needs (the allocation is
/// rounded up to 4 bytes, as wgpu requires for bindings and copies).
#[derive(Clone, Debug)]
pub struct GpuBuffer {
    pub buffer: wgpu::Buffer,
    pub len: u64,
}

impl GpuBuffer {
    pub fn binding(&self) -> wgpu::BindingResource<'_> {
        self.buffer.as_entire_binding()
    }
}

const fn padded(len: u64) -> u64 {
    let l = if len < 4 { 4 } else { len };
    l.next_multiple_of(4)
}

/// Outcome of each `map_async` callback, filled in by wgpu during `poll`.
type MapResults = Arc<Mutex<Vec<Option<Result<(), String>>>>>;

/// A mapped-readable staging buffer and the byte length to read from it.
#[derive(Debug)]
pub struct Readback {
    buffer: wgpu::Buffer,
    len: u64,
}

impl Gpu {
    /// An uninitialised storage buffer of `len` bytes (copy source and destination too).
    pub fn storage_buffer(&self, len: u64, label: &str) -> Result<GpuBuffer, GpuError> {
        let size = padded(len);
        let limit = self.caps().max_buffer_size;
        if size > limit {
            return Err(GpuError::OutOfMemory(format!(
                "{label}: {size} bytes exceeds the device's max buffer size {limit}"
            )));
        }
        let buffer = self.scoped(label, || {
            Ok(self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            }))
        })?;
        Ok(GpuBuffer { buffer, len })
    }

    /// A storage buffer holding `data`.
    pub fn upload(&self, data: &[u8], label: &str) -> Result<GpuBuffer, GpuError> {
        let buf = self.storage_buffer(data.len() as u64, label)?;
        self.write(&buf, data);
        Ok(buf)
    }

    /// Queues a write of `data` at the start of `buf` (ordered before later submissions).
    pub fn write(&self, buf: &GpuBuffer, data: &[u8]) {
        let whole = data.len() - data.len() % 4;
        if whole > 0 {
            self.queue.write_buffer(&buf.buffer, 0, &data[..whole]);
        }
        if whole < data.len() {
            // wgpu writes whole words: pad the tail (an odd number of f16 elements).
            let mut tail = [0u8; 4];
            tail[..data.len() - whole].copy_from_slice(&data[whole..]);
            self.queue.write_buffer(&buf.buffer, whole as u64, &tail);
        }
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
        let results: MapResults = Arc::new(Mutex::new(vec![None; readbacks.len()]));
        for (i, r) in readbacks.iter().enumerate() {
            let slot = results.clone();
            r.buffer.map_async(wgpu::MapMode::Read, .., move |res| {
                slot.lock()[i] = Some(res.map_err(|e| e.to_string()));
            });
        }
        let waited = self.wait();
        let mut outcome = waited;
        for (i, r) in readbacks.iter().enumerate() {
            let mapped = match results.lock()[i].take() {
                Some(Ok(())) => true,
                Some(Err(e)) => {
                    outcome = outcome.and(Err(GpuError::Readback(e)));
                    false
                }
                None => {
                    outcome = outcome.and(Err(GpuError::Readback("the map callback never ran".into())));
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

    /// Reads a whole buffer back (tests and tools; the provider batches its read-backs).
    pub fn read_buffer(&self, src: &GpuBuffer) -> Result<Vec<u8>, GpuError> {
        let rb = self.readback(src.len)?;
        let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("read") });
        self.copy_to_readback(&mut encoder, src, &rb);
        self.queue.submit([encoder.finish()]);
        let mut out = Vec::new();
        self.read(&[&rb], |_, bytes| out.extend_from_slice(bytes))?;
        Ok(out)
    }
}
