//! The devices the factory has open, shared by every session on the same adapter and options,
//! and with the allocators ORT creates at registration.
//!
//! **A device opened at registration.** Opening a Vulkan device takes 80–140 ms on the H200 (70–90 on an
//! H100), and a session needs it at Compile (`opening.rs`). When the library is registered
//! (`GetSupportedDevices`), the first adapter we list starts opening with the default options
//! on a worker thread ([`Devices::open_early`]), so the opening overlaps what the process does
//! before its session reaches Compile (reading the model, ORT's graph work) instead of starting
//! at CreateEp. The first session or allocator that asks for that adapter with the same device
//! options takes it ([`Devices::gpu`]); a session that asks for its own pipeline cache gives it
//! up (the first session decides the cache, as before). `ONNXRUNTIME_EP_WGPU_EARLY_OPEN=0`
//! opens devices on first use only.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use ep_kernels::runtime::{planned_caps, AdapterSelector, CacheLogLevel, Gpu, GpuOptions, PipelineCacheSetting};
use ort_sys::OrtLoggingLevel;
use parking_lot::Mutex;

use crate::fault::{self, Site};
use crate::opening::OpeningGpu;
use crate::options::{CoopMode, EpOptions, Validation};
use crate::ort::{EpError, Logger};

/// The environment variable that turns the device opened at registration off (`0`).
pub const EARLY_OPEN_ENV: &str = "ONNXRUNTIME_EP_WGPU_EARLY_OPEN";

/// An opened device: (adapter, debug validation, tensor cores, `max_storage_buffers`,
/// `emulate_tensor_cores`, `rolled_loops`).
type GpuKey = (usize, bool, bool, Option<u32>, bool, bool);

/// The open devices, shared with the allocators ORT creates at registration (which open their
/// device on first use).
pub struct Devices {
    /// Open devices by [`GpuKey`].
    gpus: Mutex<HashMap<GpuKey, Arc<Gpu>>>,
    /// The device opened at registration until a session or an allocator takes it.
    early: Mutex<Option<(GpuKey, Arc<OpeningGpu>)>>,
    logger: Logger,
}

/// Whether [`EARLY_OPEN_ENV`] lets registration open a device: unset or `1` yes, `0` no;
/// anything else is the default with the reason.
pub fn early_open_setting(value: Option<&str>) -> Result<bool, String> {
    match value.map(str::trim) {
        None | Some("") | Some("1") => Ok(true),
        Some("0") => Ok(false),
        Some(other) => Err(format!(
            "{EARLY_OPEN_ENV}={other:?} is not 1 (open the first listed device at registration) or 0 (open devices \
             when a session first needs them); using the default (1)"
        )),
    }
}

impl Devices {
    pub fn new(logger: Logger) -> Arc<Devices> {
        Arc::new(Devices { gpus: Mutex::new(HashMap::new()), early: Mutex::new(None), logger })
    }

    /// The devices open now.
    pub fn open_gpus(&self) -> Vec<Arc<Gpu>> {
        self.gpus.lock().values().cloned().collect()
    }

    /// Starts opening `adapter`'s device with the default options on a worker thread, unless
    /// [`EARLY_OPEN_ENV`] says not to or a device is already open or opening.
    pub fn open_early(&self, adapter: usize) {
        let wanted = early_open_setting(std::env::var(EARLY_OPEN_ENV).ok().as_deref()).unwrap_or_else(|e| {
            self.logger.log(OrtLoggingLevel::ORT_LOGGING_LEVEL_WARNING, &e);
            true
        });
        let options = match EpOptions::from_config(&BTreeMap::new()) {
            Ok(o) => o,
            Err(e) => return self.log_info(&format!("internal error: the default options do not parse: {e}")),
        };
        // Lock order: `gpus` before `early`, as in `gpu`.
        if !wanted || self.gpus.lock().contains_key(&gpu_key(adapter, &options)) {
            return;
        }
        let mut early = self.early.lock();
        if early.is_some() {
            return;
        }
        let gpu_options = self.gpu_options(adapter, &options);
        let (summary, caps) = match planned_caps(&gpu_options) {
            Ok(planned) => planned,
            Err(e) => return self.log_info(&format!("adapter {adapter}: not opened at registration: {e}")),
        };
        self.log_info(&format!(
            "adapter {adapter}: opening {} now, before a session needs it ({EARLY_OPEN_ENV}=0: on first use)",
            summary.name
        ));
        join_early_open_at_exit();
        let opening = OpeningGpu::spawn(summary, caps, move || {
            if let Some(delay) = fault::open_delay() {
                std::thread::sleep(delay);
            }
            let gpu = Gpu::new(&gpu_options)?;
            join_compiles_at_exit();
            Ok(gpu)
        });
        *early = Some((gpu_key(adapter, &options), opening));
    }

    /// The device for an adapter, opened on first use (or taken from registration).
    pub fn gpu(&self, adapter: usize, options: &EpOptions) -> Result<Arc<Gpu>, EpError> {
        let key = gpu_key(adapter, options);
        let mut gpus = self.gpus.lock();
        if let Some(g) = self.alive(&mut gpus, &key) {
            return Ok(g);
        }
        let gpu = match self.take_early(&key, options) {
            Some(gpu) => gpu,
            None => Gpu::new(&self.gpu_options(adapter, options))?,
        };
        join_compiles_at_exit();
        if let Some(path) = gpu.pipeline_cache_path() {
            self.log_info(&format!("adapter {adapter}: pipeline cache {}", path.display()));
        }
        gpus.insert(key, gpu.clone());
        Ok(gpu)
    }

    /// The device opened at registration, waited for, when it was opened as `key` and the
    /// session leaves the pipeline cache at its default (off). A session that sets the cache
    /// gives it up; one of another key leaves it for the next. A device that failed to open is
    /// given up too: the caller opens one itself and reports what that gives.
    fn take_early(&self, key: &GpuKey, options: &EpOptions) -> Option<Arc<Gpu>> {
        let mut early = self.early.lock();
        if early.as_ref().is_none_or(|(k, _)| k != key) {
            return None;
        }
        let (_, opening) = early.take()?;
        drop(early);
        if options.pipeline_cache != PipelineCacheSetting::Off {
            self.log_info(&format!(
                "adapter {}: the device opened at registration has no pipeline cache; opening another with the \
                 session's",
                key.0
            ));
            return None;
        }
        opening.wait().ok()
    }

    /// The device [`Devices::gpu`] gives, opening on a worker thread if it is not open yet: its
    /// capabilities are known at once (`opening.rs`).
    pub fn open(self: &Arc<Self>, adapter: usize, options: &EpOptions) -> Result<Arc<OpeningGpu>, EpError> {
        if let Some(g) = self.alive(&mut self.gpus.lock(), &gpu_key(adapter, options)) {
            return Ok(OpeningGpu::open(g));
        }
        let (summary, caps) = planned_caps(&self.gpu_options(adapter, options))?;
        let (devices, options) = (self.clone(), options.clone());
        Ok(OpeningGpu::spawn(summary, caps, move || {
            fault::panic_point(Site::OpenDevice);
            if let Some(delay) = fault::open_delay() {
                std::thread::sleep(delay);
            }
            devices.gpu(adapter, &options)
        }))
    }

    /// The open device of `key`, unless it was lost: a lost device never comes back, sessions
    /// still holding it fail their runs with the reason, and new sessions get a freshly opened one.
    fn alive(&self, gpus: &mut HashMap<GpuKey, Arc<Gpu>>, key: &GpuKey) -> Option<Arc<Gpu>> {
        let reason = match gpus.get(key)?.check_alive() {
            Ok(()) => return gpus.get(key).cloned(),
            Err(reason) => reason,
        };
        self.logger.log(
            OrtLoggingLevel::ORT_LOGGING_LEVEL_WARNING,
            &format!("adapter {}: reopening the device ({reason})", key.0),
        );
        gpus.remove(key);
        None
    }

    fn gpu_options(&self, adapter: usize, options: &EpOptions) -> GpuOptions {
        let (_, debug, coop, ..) = gpu_key(adapter, options);
        let experimental = if coop {
            crate::experimental::cooperative_matrix_opt_in()
        } else {
            wgpu::ExperimentalFeatures::disabled()
        };
        GpuOptions {
            adapter: AdapterSelector::Index(adapter),
            debug_validation: debug,
            experimental,
            // Debug validation keeps every runtime check wgpu can inject.
            trusted_shaders: if debug { None } else { Some(Arc::new(crate::experimental::UncheckedShaders)) },
            pipeline_cache: options.pipeline_cache.clone(),
            pipeline_caches: Some(Arc::new(crate::experimental::SavedPipelineCaches)),
            log: Some(cache_log(self.logger)),
            max_storage_buffers: options.max_storage_buffers,
            emulate_tensor_cores: options.emulate_tensor_cores,
            rolled_loops: options.rolled_loops,
        }
    }

    fn log_info(&self, message: &str) {
        self.logger.log(OrtLoggingLevel::ORT_LOGGING_LEVEL_INFO, message);
    }
}

fn gpu_key(adapter: usize, options: &EpOptions) -> GpuKey {
    let debug = options.validation == Validation::Debug;
    let coop = options.cooperative_matrix != CoopMode::Off;
    (adapter, debug, coop, options.max_storage_buffers, options.emulate_tensor_cores, options.rolled_loops)
}

/// Makes the process's exit wait for the pipeline compiles still running. A session starts its
/// compiles when it is created (`Executable::warm_up`); a process that exits before its first run
/// ends (an H100 crashed at exit so, forty-fifth session: `docs/RELIABILITY.md` §8) would tear
/// the driver down under a worker still inside its compiler. Registered once, after a device is
/// open, so that it runs before the driver's own exit handlers (they run in reverse order).
fn join_compiles_at_exit() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    join_workers_at_exit(&ONCE, "compile");
}

/// Makes the process's exit wait for registration's opening (a worker thread, like the compile
/// workers): a process that exits right after registering the library must not tear the driver
/// down under a thread inside its device creation. Registered before that thread starts; once a
/// device is open, [`join_compiles_at_exit`] is registered too.
fn join_early_open_at_exit() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    join_workers_at_exit(&ONCE, "early-open");
}

/// Registers, once per `once`, an exit handler that joins every worker thread
/// (`ep_kernels::runtime::join_compile_workers`).
fn join_workers_at_exit(once: &'static std::sync::Once, what: &str) {
    extern "C" {
        fn atexit(callback: extern "C" fn()) -> std::ffi::c_int;
    }
    extern "C" fn join() {
        ep_kernels::runtime::join_compile_workers();
    }
    once.call_once(|| {
        // SAFETY: `atexit` takes a function with no arguments, which it calls once at exit (or when
        // this library is unloaded); `join` only joins the worker threads listed in a static.
        if unsafe { atexit(join) } != 0 {
            tracing::debug!(target: "ep_wgpu", "atexit refused the {what} join");
        }
    });
}

/// Sends the persistent pipeline cache's messages to ORT's log.
fn cache_log(logger: Logger) -> ep_kernels::runtime::CacheLog {
    Arc::new(move |level, message: &str| {
        let level = match level {
            CacheLogLevel::Info => OrtLoggingLevel::ORT_LOGGING_LEVEL_INFO,
            CacheLogLevel::Warning => OrtLoggingLevel::ORT_LOGGING_LEVEL_WARNING,
        };
        logger.log(level, message);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_early_open_setting_parses_its_values_and_names_a_bad_one() {
        assert_eq!(early_open_setting(None), Ok(true));
        assert_eq!(early_open_setting(Some(" 1 ")), Ok(true));
        assert_eq!(early_open_setting(Some("0")), Ok(false));
        let err = early_open_setting(Some("off")).unwrap_err();
        assert!(err.contains(EARLY_OPEN_ENV) && err.contains("\"off\""), "{err}");
    }
}
