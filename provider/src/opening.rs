//! A session's device, opened on a worker thread while ONNX Runtime prepares the session.
//!
//! Opening a Vulkan device took 93 ms in a cold process and 70 ms in a warm one on an H100
//! (forty-sixth session), and CreateEp used to do it before returning, so ORT's graph
//! optimisations, partitioning and our own placement and program building waited for it. Now
//! CreateEp plans with the capabilities the device will have (they come from the adapter alone,
//! `ep_kernels::runtime::planned_caps`) and returns at once; the device opens on a worker
//! thread (joined with the compile workers before the library can be unloaded). The
//! first thing that needs the device waits for it: Compile, when it uploads the constants, or a
//! session allocator's first allocation; the wait is the `device_wait` start-up phase. A device
//! already open for the same key is taken at once.

use std::sync::Arc;
use std::time::Instant;

use ep_kernels::runtime::startup::{self, Phase};
use ep_kernels::runtime::{AdapterSummary, Gpu};
use ep_kernels::DeviceCaps;
use parking_lot::{Condvar, Mutex};

use crate::ort::EpError;

/// A device being opened, or open, with the capabilities it plans with.
pub struct OpeningGpu {
    summary: AdapterSummary,
    caps: DeviceCaps,
    state: Mutex<Option<Result<Arc<Gpu>, EpError>>>,
    ready: Condvar,
}

impl OpeningGpu {
    /// A device already open.
    pub fn open(gpu: Arc<Gpu>) -> Arc<OpeningGpu> {
        Arc::new(OpeningGpu {
            summary: gpu.adapter().clone(),
            caps: gpu.caps().clone(),
            state: Mutex::new(Some(Ok(gpu))),
            ready: Condvar::new(),
        })
    }

    /// A device that `open` opens on a worker thread (on this one if no thread can be made).
    pub fn spawn(
        summary: AdapterSummary,
        caps: DeviceCaps,
        open: impl FnOnce() -> Result<Arc<Gpu>, EpError> + Send + 'static,
    ) -> Arc<OpeningGpu> {
        let opening = Arc::new(OpeningGpu { summary, caps, state: Mutex::new(None), ready: Condvar::new() });
        let target = opening.clone();
        let job = move || {
            // A panic must still report (Compile would wait forever otherwise).
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(open)).unwrap_or_else(|panic| {
                Err(EpError::fail(format!(
                    "internal error: opening the device panicked: {}",
                    ep_kernels::runtime::panic_message(&panic)
                )))
            });
            *target.state.lock() = Some(result);
            target.ready.notify_all();
        };
        let job = Arc::new(Mutex::new(Some(job)));
        let run = {
            let job = job.clone();
            move || {
                if let Some(job) = job.lock().take() {
                    job();
                }
            }
        };
        // Unnamed: the driver's threads that opening the device starts inherit the name of the
        // thread that started them, and they outlive it (it is joined with the compile workers).
        match std::thread::Builder::new().spawn(run) {
            Ok(handle) => ep_kernels::runtime::keep_worker(handle),
            Err(_) => {
                if let Some(job) = job.lock().take() {
                    job();
                }
            }
        }
        opening
    }

    /// The capabilities the device plans with (the same as the open device's).
    pub fn caps(&self) -> &DeviceCaps {
        &self.caps
    }

    /// The adapter the device is opened on.
    pub fn adapter(&self) -> &AdapterSummary {
        &self.summary
    }

    /// The device, waiting for it to open; the error that opening it gave otherwise. A wait
    /// is recorded as the `device_wait` start-up phase.
    pub fn get(&self) -> Result<Arc<Gpu>, EpError> {
        self.result(true)
    }

    /// [`OpeningGpu::get`] without recording the wait (another opening's, which records its own).
    pub fn wait(&self) -> Result<Arc<Gpu>, EpError> {
        self.result(false)
    }

    fn result(&self, record: bool) -> Result<Arc<Gpu>, EpError> {
        let mut state = self.state.lock();
        if state.is_none() {
            let start = Instant::now();
            while state.is_none() {
                self.ready.wait(&mut state);
            }
            if record {
                startup::record(Phase::DeviceWait, start.elapsed(), 1);
            }
        }
        match state.as_ref() {
            Some(result) => result.clone(),
            None => Err(EpError::fail("internal error: the device's state vanished")),
        }
    }
}
