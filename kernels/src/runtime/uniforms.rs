//! Uniform slots: every dispatch's uniforms live in a slot of a shared slab buffer, bound at
//! its offset, instead of a buffer of their own. Preparing a set of a few hundred dispatches
//! (each new shape of a decode loop whose cache grows) then creates a handful of buffers, not
//! hundreds: the driver's allocator scans its free list on every buffer it creates.
//!
//! Slots come in size classes (multiples of the device's uniform offset alignment); a freed
//! slot returns to its class and is written again through the queue, which orders the write
//! after every submission that read the old contents.

use std::collections::HashMap;
use std::num::NonZeroU64;
use std::sync::Arc;

use parking_lot::Mutex;

use super::Gpu;
use crate::error::GpuError;

/// Slots per slab buffer.
const SLOTS_PER_SLAB: u64 = 64;

/// The free slots of one size: (slab, byte offset).
#[derive(Debug, Default)]
struct SlotClass {
    free: Mutex<Vec<(wgpu::Buffer, u64)>>,
}

/// Every size class of a device.
#[derive(Debug, Default)]
pub(super) struct UniformSlabs {
    classes: Mutex<HashMap<u64, Arc<SlotClass>>>,
}

/// One dispatch's uniforms: `len` bytes at `offset` of a slab; the slot is free again on drop.
#[derive(Debug)]
pub struct UniformSlot {
    class: Arc<SlotClass>,
    buffer: wgpu::Buffer,
    offset: u64,
    len: u64,
}

impl UniformSlot {
    pub fn binding(&self) -> wgpu::BindingResource<'_> {
        wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: &self.buffer,
            offset: self.offset,
            size: NonZeroU64::new(self.len),
        })
    }
}

impl Drop for UniformSlot {
    fn drop(&mut self) {
        self.class.free.lock().push((self.buffer.clone(), self.offset));
    }
}

impl Gpu {
    /// A slot holding `params` (written through the queue, so before the next submission).
    pub(super) fn uniform_slot(&self, params: &[u8], label: &str) -> Result<UniformSlot, GpuError> {
        let align = u64::from(self.device.limits().min_uniform_buffer_offset_alignment).max(16);
        let len = (params.len() as u64).next_multiple_of(16).max(16);
        let size = len.next_multiple_of(align);
        let class = self.uniform_slabs.classes.lock().entry(size).or_default().clone();
        let taken = class.free.lock().pop();
        let (buffer, offset) = match taken {
            Some(slot) => slot,
            None => {
                let buffer = self.scoped(label, || {
                    Ok(self.device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some("uniform slab"),
                        size: size * SLOTS_PER_SLAB,
                        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                        mapped_at_creation: false,
                    }))
                })?;
                class.free.lock().extend((1..SLOTS_PER_SLAB).map(|i| (buffer.clone(), i * size)));
                (buffer, 0)
            }
        };
        let mut bytes = params.to_vec();
        bytes.resize(len as usize, 0);
        self.queue.write_buffer(&buffer, offset, &bytes);
        Ok(UniformSlot { class, buffer, offset, len })
    }
}
