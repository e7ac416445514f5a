//! A read-back in parts: each part is copied into its own staging buffer in its own submission,
//! and its bytes are copied out as soon as its map completes, while the GPU still copies the
//! parts after it, so a large output's trip over PCIe overlaps the host's copy of it (Whisper-tiny
//! fp32's 2.3 MB: about 0.06 ms of transfer and 0.11 ms of copy on the H200's host, one after the
//! other in one piece). [`parts_for`] decides: on an H100 (forty-first session) the encoder's
//! numpy runs took 2.66–2.69 ms with its 2.3 MB in 8 parts against 2.87–2.90 in one piece, and
//! fp16's 1.15 MB 1.32–1.33 ms in 4 parts against 1.33–1.35 (1.36–1.38 in 8 parts of 144 KB).
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

/// Smallest read-back taken in parts.
const MIN_BYTES: usize = 1 << 20;
/// Smallest part of a read-back the rule makes: smaller ones lost (fp16 Whisper's 1.15 MB in 8
/// parts of 144 KB ran slower than in one piece).
const PART_BYTES: usize = 256 << 10;
/// Most parts the rule gives one read-back, and most parts of any read-back.
const RULE_PARTS: usize = 8;
const MAX_PARTS: usize = 16;
/// How long a read-back in parts waits for its maps.
const TIMEOUT: Duration = Duration::from_secs(30);

/// The parts a read of `len` bytes takes (`None`: one piece): from 1 MiB, one per 256 KiB up to
/// 8, where the device's waits poll (a GPU; a CPU adapter's waits block, and its copies gain
/// nothing from overlapping). An experiment build takes `EXP_READBACK_PARTS=N` instead (1: one
/// piece).
pub(super) fn parts_for(len: usize, polling: bool) -> Option<usize> {
    #[cfg(feature = "wgsl-override")]
    if let Some(n) = std::env::var("EXP_READBACK_PARTS").ok().and_then(|v| v.trim().parse::<usize>().ok()) {
        return (n >= 2 && len >= MIN_BYTES).then_some(n);
    }
    rule_parts(len, polling)
}

fn rule_parts(len: usize, polling: bool) -> Option<usize> {
    (polling && len >= MIN_BYTES).then(|| (len / PART_BYTES).min(RULE_PARTS))
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
        let (started, spin) = (Instant::now(), self.spin_wait().unwrap_or_default());
        let mut polls = (0u32, std::time::Duration::ZERO, 0u32);
        startup::time(Phase::CopyOutWait, || loop {
            let poll = Instant::now();
            let _ = self.device.poll(wgpu::PollType::Poll);
            polls = (polls.0 + 1, polls.1.max(poll.elapsed()), polls.2);
            match rx.try_recv() {
                Ok(next) => {
                    if super::pipelines::log_compiles() && started.elapsed().as_millis() >= 10 {
                        eprintln!(
                            "ep-wgpu read-back part waited {:.1} ms: {} polls, the longest {:.1} ms, {} blocking waits",
                            started.elapsed().as_secs_f64() * 1e3,
                            polls.0,
                            polls.1.as_secs_f64() * 1e3,
                            polls.2
                        );
                    }
                    return Ok(next);
                }
                Err(mpsc::TryRecvError::Disconnected) => {
                    return Err(GpuError::Readback("a read-back part was never mapped".into()))
                }
                Err(mpsc::TryRecvError::Empty) if Instant::now() > deadline => {
                    return Err(GpuError::Readback("a read-back part's map did not complete".into()))
                }
                Err(mpsc::TryRecvError::Empty) => {
                    self.check_alive()?;
                    if started.elapsed() < spin {
                        std::thread::yield_now();
                    } else {
                        // Past the device's polling budget the wait blocks, for every part at once.
                        polls.2 += 1;
                        self.device
                            .poll(wgpu::PollType::wait_indefinitely())
                            .map_err(|e| GpuError::Poll(e.to_string()))?;
                    }
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_reads_on_a_polling_device_take_parts_of_a_quarter_mebibyte() {
        assert_eq!(rule_parts(2_304_000, true), Some(8), "Whisper fp32's output");
        assert_eq!(rule_parts(1_152_000, true), Some(4), "Whisper fp16's output");
        assert_eq!(rule_parts(1 << 20, true), Some(4));
        assert_eq!(rule_parts((1 << 20) - 4, true), None, "below 1 MiB: one piece");
        assert_eq!(rule_parts(100 << 20, true), Some(8));
        assert_eq!(rule_parts(2_304_000, false), None, "a device whose waits block: one piece");
    }

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
