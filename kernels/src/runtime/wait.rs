//! Waiting for the GPU: a wait polls without blocking for a while before it blocks. Waking from
//! a blocking wait cost the H200's transformer runs 0.1–0.45 ms each (`docs/PERFORMANCE.md`,
//! "Waiting for the GPU"); a run shorter than the budget now ends the wait as soon as it ends.
//! A CPU adapter (llvmpipe) blocks at once: its work runs on the cores a polling wait would take.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::Gpu;
use crate::caps::DeviceKind;
use crate::error::GpuError;

/// Polling budget of a wait by default: a transformer's run (1–5 ms of GPU work on the H200)
/// finishes inside it; a longer one blocks after it.
pub const DEFAULT_SPIN: Duration = Duration::from_millis(5);

/// The budget `ONNXRUNTIME_EP_WGPU_SPIN_WAIT` sets: microseconds, `0` for none; unset or not a
/// number: the default.
pub fn parse_spin(value: Option<&str>) -> Option<Duration> {
    match value.map(str::trim).and_then(|v| v.parse::<u64>().ok()) {
        Some(0) => None,
        Some(us) => Some(Duration::from_micros(us)),
        None => Some(DEFAULT_SPIN),
    }
}

/// A new device's budget in µs (0: none), from `ONNXRUNTIME_EP_WGPU_SPIN_WAIT` and its kind.
pub(super) fn initial_spin(kind: DeviceKind) -> u64 {
    let budget = parse_spin(std::env::var("ONNXRUNTIME_EP_WGPU_SPIN_WAIT").ok().as_deref());
    budget.filter(|_| kind != DeviceKind::Cpu).map_or(0, |b| b.as_micros().min(u64::MAX as u128) as u64)
}

impl Gpu {
    /// Blocks until all submitted work is done (polling first, for the device's budget).
    pub fn wait(&self) -> Result<(), GpuError> {
        let submitted = self.submitted.load(Ordering::Acquire);
        let polled = match self.spin_us.load(Ordering::Relaxed) {
            0 => self.device.poll(wgpu::PollType::wait_indefinitely()),
            us => self.spin(Duration::from_micros(us)),
        };
        self.check_alive()?;
        polled.map_err(|e| GpuError::Poll(e.to_string()))?;
        // Everything submitted before the wait began is done.
        self.seen_done.fetch_max(submitted, Ordering::AcqRel);
        Ok(())
    }

    /// Whether every submission of ours was seen finished by a wait: the GPU is idle (a run then
    /// feeds it early, in small submissions), or at least not running a backlog of ours (runs
    /// back to back, which never wait, submit once).
    pub fn seen_idle(&self) -> bool {
        self.seen_done.load(Ordering::Acquire) >= self.submitted.load(Ordering::Acquire)
    }

    /// How long this device's waits poll before they block (`None`: they block at once).
    pub fn spin_wait(&self) -> Option<Duration> {
        Some(self.spin_us.load(Ordering::Relaxed)).filter(|&us| us > 0).map(Duration::from_micros)
    }

    /// Sets how long this device's waits poll before they block (`None`: they block at once).
    pub fn set_spin_wait(&self, budget: Option<Duration>) {
        let us = budget.map_or(0, |b| b.as_micros().clamp(1, u64::MAX as u128) as u64);
        self.spin_us.store(us, Ordering::Relaxed);
    }

    /// Polls without blocking for up to `budget`, then blocks.
    fn spin(&self, budget: Duration) -> Result<wgpu::PollStatus, wgpu::PollError> {
        let start = Instant::now();
        while start.elapsed() < budget {
            let status = self.device.poll(wgpu::PollType::Poll)?;
            if status.is_queue_empty() {
                return Ok(status);
            }
            // Lets the process's other threads (recording, submitting) run on a busy machine.
            std::thread::yield_now();
        }
        self.device.poll(wgpu::PollType::wait_indefinitely())
    }
}
