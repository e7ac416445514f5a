//! A read-back in parts: each part is copied into its own staging buffer in its own submission,
//! and its bytes are copied out as soon as its map completes, while the GPU still copies the
//! parts after it, so a large output's trip over PCIe overlaps the host's copy of it (Whisper-tiny
//! fp32's 2.3 MB: about 0.06 ms of transfer and 0.11 ms of copy on the H200's host, one after the
//! other in one piece). Experiment builds take it with `EXP_READBACK_PARTS=N` (`parts_for`);
//! [`read_in_parts`] runs it directly (tests).

use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::buffers::{padded, request_maps};
use super::memory::{bucket, DeviceSlice};
use super::startup::{self, Phase};
use super::Gpu;
use crate::error::GpuError;

/// Smallest read-back an experiment build splits.
const MIN_BYTES: usize = 1 << 20;
/// Most parts of one read-back.
const MAX_PARTS: usize = 16;
/// How long a read-back in parts waits for its maps.
const TIMEOUT: Duration = Duration::from_secs(30);

/// The parts an experiment build's `EXP_READBACK_PARTS=N` gives a read of `len` bytes (`None`:
/// one piece). Release builds never read the variable.
pub(super) fn parts_for(len: usize) -> Option<usize> {
    if !cfg!(feature = "wgsl-override") || len < MIN_BYTES {
        return None;
    }
    let n: usize = std::env::var("EXP_READBACK_PARTS").ok()?.trim().parse().ok()?;
    (n >= 2).then_some(n)
}

/// `len` bytes in at most `n` ranges, each but the last a multiple of 256 bytes.
fn ranges(len: usize, n: usize) -> Vec<Range<usize>> {
    let step = len.div_ceil(n.clamp(1, MAX_PARTS)).next_multiple_of(256).max(256);
    (0..len).step_by(step).map(|s| s..(s + step).min(len)).collect()
}

/// A device range (whole 4-byte words) into host memory in `parts` parts, after every submitted
/// use of it.
pub fn read_in_parts(src: &DeviceSlice, out: &mut [u8], parts: usize) -> Result<(), GpuError> {
    if !src.aligned() || src.len != out.len() as u64 {
        return Err(GpuError::Internal(format!(
            "a read-back in parts needs whole words: {} bytes at {} into {}",
            src.len,
            src.offset,
            out.len()
        )));
    }
    src.gpu.read_at_parts(&src.buffer, src.offset, out, parts)
}

impl Gpu {
    /// [`Gpu::read_at`] in `parts` parts (`out.len()` a multiple of 4).
    pub(super) fn read_at_parts(
        &self,
        src: &wgpu::Buffer,
        offset: u64,
        out: &mut [u8],
        parts: usize,
    ) -> Result<(), GpuError> {
        let ranges = ranges(out.len(), parts);
        let mut stagings = Vec::with_capacity(ranges.len());
        for r in &ranges {
            let len = padded(r.len() as u64);
            let staging = self.pooled_staging(false, bucket(len))?;
            self.scoped("readback", || {
                let label = Some("readback part");
                let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label });
                encoder.copy_buffer_to_buffer(src, offset + r.start as u64, &staging, 0, len);
                self.submit([encoder.finish()]);
                Ok(())
            })?;
            stagings.push(staging);
        }
        let submitted = self.submitted.load(Ordering::Acquire);
        let rx = request_maps(stagings.iter(), wgpu::MapMode::Read);
        let deadline = Instant::now() + TIMEOUT;
        let mut outcome = Ok(());
        for _ in 0..ranges.len() {
            let (i, mapped) = self.next_map(&rx, deadline)?;
            let (r, staging) = (ranges[i].clone(), &stagings[i]);
            let copied = mapped.map_err(GpuError::Readback).and_then(|()| {
                startup::time(Phase::CopyOut, || match staging.slice(..padded(r.len() as u64)).get_mapped_range() {
                    Ok(view) => {
                        crate::hostcopy::copy(&mut out[r.clone()], &view[..r.len()]);
                        Ok(())
                    }
                    Err(e) => Err(GpuError::Readback(e.to_string())),
                })
            });
            if copied.is_ok() {
                staging.unmap();
                self.keep_readback(bucket(padded(r.len() as u64)), staging.clone());
            }
            outcome = outcome.and(copied);
        }
        // Every submission before the last part's is done once it is.
        self.seen_done.fetch_max(submitted, Ordering::AcqRel);
        outcome
    }

    /// The next completed map of `rx`, polling the device until `deadline`.
    fn next_map(
        &self,
        rx: &mpsc::Receiver<(usize, Result<(), String>)>,
        deadline: Instant,
    ) -> Result<(usize, Result<(), String>), GpuError> {
        startup::time(Phase::CopyOutWait, || loop {
            let _ = self.device.poll(wgpu::PollType::Poll);
            match rx.try_recv() {
                Ok(next) => return Ok(next),
                Err(mpsc::TryRecvError::Disconnected) => {
                    return Err(GpuError::Readback("a read-back part was never mapped".into()))
                }
                Err(mpsc::TryRecvError::Empty) if Instant::now() > deadline => {
                    return Err(GpuError::Readback("a read-back part's map did not complete".into()))
                }
                Err(mpsc::TryRecvError::Empty) => {
                    self.check_alive()?;
                    std::thread::yield_now();
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_the_bytes_in_whole_blocks() {
        for (len, n) in [(2_304_000, 4), (1 << 20, 3), (4100, 2), (1000, 8), (12, 2), (3_000_004, 40)] {
            let rs = ranges(len, n);
            assert!(rs.len() <= n.min(MAX_PARTS), "{len} in {n}: {rs:?}");
            assert_eq!(rs.first().map(|r| r.start), Some(0));
            assert_eq!(rs.last().map(|r| r.end), Some(len));
            assert!(rs.windows(2).all(|w| w[0].end == w[1].start && w[0].len() % 256 == 0), "{len} in {n}: {rs:?}");
        }
    }
}
