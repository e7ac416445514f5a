//! Host copies of the small tensors written into our device memory from the host (ORT's uploads
//! through our data transfer: a decoder's sequence lengths, a prompt's token ids), so a kernel's
//! run-time check can read them without waiting for the GPU (`Kernel::host_check`,
//! `graph/execute.rs`): a run whose checks all pass on the host returns without waiting, and
//! runs back to back overlap one's recording with the previous one's GPU work.
//! Every other write to a range of a shadowed buffer — a copy on the device, a run's output, a
//! free — drops the shadows it overlaps, so a shadow always holds what the device will hold when
//! the next run reads it (the queue runs writes in the order they were made).

use parking_lot::Mutex;

use super::memory::DeviceSlice;

/// Tensors up to this long are shadowed: the int64 token ids of a 2048-token prompt.
pub const MAX_BYTES: usize = 16 << 10;
/// Shadows kept per buffer, and buffers with shadows (the oldest go first).
const PER_BUFFER: usize = 64;
const BUFFERS: usize = 256;
/// Bytes kept in all: past it the oldest buffers' shadows go first.
const TOTAL_BYTES: usize = 1 << 20;

/// Per buffer, its shadows as (offset, bytes).
type Shadows = Vec<(wgpu::Buffer, Vec<(u64, Vec<u8>)>)>;
static SHADOWS: Mutex<Shadows> = Mutex::new(Vec::new());

/// `data` was written at `dst` from the host.
pub fn record(dst: &DeviceSlice, data: &[u8]) {
    let mut all = SHADOWS.lock();
    drop_overlapping(&mut all, &dst.buffer, dst.offset, data.len() as u64);
    if data.len() > MAX_BYTES {
        return;
    }
    while !all.is_empty() && held(&all) + data.len() > TOTAL_BYTES {
        all.remove(0);
    }
    let k = match all.iter().position(|(b, _)| *b == dst.buffer) {
        Some(k) => k,
        None => {
            if all.len() >= BUFFERS {
                all.remove(0);
            }
            all.push((dst.buffer.clone(), Vec::new()));
            all.len() - 1
        }
    };
    let list = &mut all[k].1;
    if list.len() >= PER_BUFFER {
        list.remove(0);
    }
    list.push((dst.offset, data.to_vec()));
}

/// `len` bytes at `offset` of `buffer` were (or will be) written on the device.
pub fn forget(buffer: &wgpu::Buffer, offset: u64, len: u64) {
    let mut all = SHADOWS.lock();
    drop_overlapping(&mut all, buffer, offset, len);
}

/// `buffer` was freed.
pub fn forget_buffer(buffer: &wgpu::Buffer) {
    SHADOWS.lock().retain(|(b, _)| b != buffer);
}

/// The bytes last written from the host at exactly `s`, if nothing has written over them since.
pub fn lookup(s: &DeviceSlice) -> Option<Vec<u8>> {
    let all = SHADOWS.lock();
    let (_, list) = all.iter().find(|(b, _)| *b == s.buffer)?;
    list.iter().rev().find(|(o, d)| *o == s.offset && d.len() as u64 == s.len).map(|(_, d)| d.clone())
}

/// Bytes the shadows hold.
fn held(all: &Shadows) -> usize {
    all.iter().flat_map(|(_, list)| list.iter().map(|(_, d)| d.len())).sum()
}

fn drop_overlapping(all: &mut Shadows, buffer: &wgpu::Buffer, offset: u64, len: u64) {
    let Some(k) = all.iter().position(|(b, _)| b == buffer) else { return };
    let list = &mut all[k].1;
    list.retain(|(o, d)| *o + d.len() as u64 <= offset || offset + len <= *o);
    if list.is_empty() {
        all.remove(k);
    }
}
