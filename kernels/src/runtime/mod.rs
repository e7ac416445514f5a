//! wgpu execution: adapter choice, the device, buffers, the pipeline cache and dispatches.
//!
//! Nothing here panics on a GPU error: wgpu's uncaptured-error handler is replaced by one that
//! records the error, work runs inside error scopes, and a lost device is remembered so later
//! calls fail with [`GpuError::DeviceLost`] instead of hanging.

mod adapter;
mod buffers;
mod compile_order;
mod conv;
pub mod devcopy;
mod dispatch;
pub mod held;
pub mod memory;
pub mod pipeline_cache;
mod pipelines;
pub mod readback;
pub mod rolled;
pub mod shadow;
pub mod spv_loops;
pub mod startup;
pub mod subgroup_sync;
mod timing;
pub mod transfer;
mod uniforms;
mod wait;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

pub(crate) use adapter::limits as adapter_limits;
pub use adapter::{adapter_caps, list_adapters, AdapterSelector, AdapterSummary};
pub use buffers::{GpuBuffer, Readback, Staged, STORAGE_OFFSET_ALIGN};
pub use compile_order::{defer_tensor_cores, hold_deferred, DeferScope, HoldDeferred};
pub use conv::ConvBindings;
pub use dispatch::{Dispatch, GemmBindings};
pub use pipeline_cache::{CacheLog, CacheLogLevel, PipelineCacheSetting};
pub use pipelines::{
    join_compile_workers, keep_worker, log_clock_ms, log_compiles, panic_message, set_wgsl_override, Access,
    BindingLayout, PendingPipeline,
};
pub use timing::GpuTimer;
pub use wait::{parse_spin, DEFAULT_SPIN};

use crate::caps::DeviceCaps;
use crate::error::GpuError;

/// Makes shader modules without some of the runtime checks wgpu injects (index clamps,
/// loop-bounding counters, division guards). wgpu marks that `unsafe`, so the `provider` crate
/// implements it; the runtime only hands it variants whose templates guard every access
/// themselves, or whose loops provably end, with the checks they keep
/// ([`ShaderVariant::kept_checks`](crate::shader::ShaderVariant::kept_checks)).
pub trait TrustedShaders: Send + Sync {
    /// `keep`: the checks wgpu still injects (none for the self-guarding variants).
    fn create(
        &self,
        device: &wgpu::Device,
        desc: wgpu::ShaderModuleDescriptor<'_>,
        keep: KeptChecks,
    ) -> wgpu::ShaderModule;

    /// A module from SPIR-V the runtime wrote itself ([`rolled`]) for one compute entry point
    /// `main` of `workgroup_size`, handed to the driver as is; `None` where the device cannot
    /// take it.
    fn create_spirv(&self, _device: &wgpu::Device, _spirv: rolled::Spirv<'_>) -> Option<wgpu::ShaderModule> {
        None
    }
}

/// Which of wgpu's runtime checks a module made through [`TrustedShaders`] keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeptChecks {
    /// Index clamps (and buffer checks where the driver has no robust access of its own).
    pub bounds: bool,
    /// A counter that bounds every loop.
    pub loop_bounding: bool,
    /// Guards on integer division and remainder.
    pub int_div: bool,
}

/// Makes the driver's pipeline cache from a blob read back from disk. wgpu marks that
/// `unsafe` (the blob must come from `PipelineCache::get_data` of the same adapter; our file's
/// key and checksum make sure of it), so the `provider` crate implements it.
pub trait PipelineCaches: Send + Sync {
    fn create(&self, device: &wgpu::Device, data: Option<&[u8]>) -> wgpu::PipelineCache;
}

/// How to open a device.
#[derive(Clone, Default)]
pub struct GpuOptions {
    pub adapter: AdapterSelector,
    /// Turn on the backend's validation layers (when installed) on top of wgpu's own checks.
    pub debug_validation: bool,
    /// Experimental wgpu features (cooperative matrices). The token is `unsafe` to make, so the
    /// `provider` crate creates it; kernels never does.
    pub experimental: wgpu::ExperimentalFeatures,
    /// Compiles self-guarding variants without wgpu's runtime checks, when set.
    pub trusted_shaders: Option<Arc<dyn TrustedShaders>>,
    /// Where the persistent pipeline cache lives (or off). It needs `pipeline_caches` and an
    /// adapter with `Features::PIPELINE_CACHE` (Vulkan); otherwise it is a no-op.
    pub pipeline_cache: PipelineCacheSetting,
    pub pipeline_caches: Option<Arc<dyn PipelineCaches>>,
    /// Where the persistent cache's warnings and info lines go (dropped when unset).
    pub log: Option<CacheLog>,
    /// Plans as if the device bound at most this many storage buffers per shader stage.
    pub max_storage_buffers: Option<u32>,
    /// Plans the tensor-core kernels in their emulated form ([`DeviceCaps::coop_emulated`]).
    pub emulate_tensor_cores: bool,
    /// Compiles the tensor-core kernels with their product loop kept rolled ([`rolled`]), where
    /// `trusted_shaders` is set and the adapter takes SPIR-V as is (Vulkan).
    pub rolled_loops: bool,
}

impl std::fmt::Debug for GpuOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuOptions")
            .field("adapter", &self.adapter)
            .field("debug_validation", &self.debug_validation)
            .field("experimental", &self.experimental)
            .field("trusted_shaders", &self.trusted_shaders.is_some())
            .field("pipeline_cache", &self.pipeline_cache)
            .field("pipeline_caches", &self.pipeline_caches.is_some())
            .field("max_storage_buffers", &self.max_storage_buffers)
            .field("emulate_tensor_cores", &self.emulate_tensor_cores)
            .field("rolled_loops", &self.rolled_loops)
            .finish()
    }
}

/// An open wgpu device with its capabilities and pipeline cache. Shared by every session on
/// the same adapter (`Arc<Gpu>`); all methods take `&self` and are thread-safe.
pub struct Gpu {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    caps: DeviceCaps,
    summary: AdapterSummary,
    pipelines: pipelines::PipelineCache,
    errors: Arc<Mutex<Vec<String>>>,
    lost: Arc<Mutex<Option<String>>>,
    lost_flag: Arc<AtomicBool>,
    staging_pools: transfer::StagingPools,
    uniform_slabs: uniforms::UniformSlabs,
    unused_input: std::sync::OnceLock<GpuBuffer>,
    /// How long a wait polls before it blocks, in µs (0: it blocks at once; `wait.rs`).
    spin_us: std::sync::atomic::AtomicU64,
    /// Submissions made, and how many of them a wait has seen finished (`wait.rs`): equal when
    /// the GPU has nothing of ours in flight.
    submitted: std::sync::atomic::AtomicU64,
    seen_done: std::sync::atomic::AtomicU64,
    /// This device's own `Arc`, for the pipeline-compile workers.
    me: Weak<Gpu>,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu").field("adapter", &self.summary.name).finish_non_exhaustive()
    }
}

/// The persistent cache's file and its blob, when the options, the adapter and the platform
/// allow one.
fn disk_cache(
    options: &GpuOptions,
    adapter: &wgpu::Adapter,
    summary: &AdapterSummary,
) -> Option<(pipeline_cache::DiskCache, Option<Vec<u8>>)> {
    options.pipeline_caches.as_ref()?;
    if !adapter.features().contains(wgpu::Features::PIPELINE_CACHE) {
        return None;
    }
    let dir = options.pipeline_cache.dir()?;
    let log = options.log.clone().unwrap_or_else(|| Arc::new(|_, _| {}));
    let disk = pipeline_cache::DiskCache::open(&dir, summary, log)?;
    let start = std::time::Instant::now();
    let data = disk.load();
    startup::record(startup::Phase::CacheLoad, start.elapsed(), data.as_ref().map_or(0, |d| d.len() as u64));
    Some((disk, data))
}

/// The adapter `options` select and the capabilities a device opened on it with them plans
/// with, without opening it (the adapters are enumerated once per process, so this is quick):
/// what a session plans its partitions with while its device opens (`provider/src/opening.rs`).
pub fn planned_caps(options: &GpuOptions) -> Result<(AdapterSummary, DeviceCaps), GpuError> {
    plan(options).map(|(_, summary, caps)| (summary, caps))
}

fn plan(options: &GpuOptions) -> Result<(wgpu::Adapter, AdapterSummary, DeviceCaps), GpuError> {
    let (adapter, summary) = adapter::select(options.debug_validation, &options.adapter)?;
    let mut caps = DeviceCaps::from_adapter(&adapter);
    if let Some(n) = options.max_storage_buffers {
        caps.max_storage_buffers_per_stage = caps.max_storage_buffers_per_stage.min(n);
    }
    if options.emulate_tensor_cores && !caps.coop_matrix.is_empty() {
        return Err(GpuError::Invalid(format!(
            "option 'emulate_tensor_cores': '{}' has tensor cores; the emulated kernels are for testing their plans \
             on adapters without them",
            summary.name
        )));
    }
    caps.coop_emulated = options.emulate_tensor_cores;
    if !options.experimental.is_enabled() {
        caps.coop_matrix.clear();
    }
    Ok((adapter, summary, caps))
}

impl Gpu {
    /// Opens a device on the selected adapter, asking for the adapter's own limits (wgpu's
    /// defaults would cap workgroup storage at 16 KB) and the features the kernels use.
    pub fn new(options: &GpuOptions) -> Result<Arc<Gpu>, GpuError> {
        let (adapter, summary, caps) = plan(options)?;
        let wanted = wgpu::Features::SHADER_F16
            | wgpu::Features::SUBGROUP
            | wgpu::Features::SUBGROUP_BARRIER
            | wgpu::Features::TIMESTAMP_QUERY;
        let mut features = adapter.features() & wanted;
        let disk = disk_cache(options, &adapter, &summary);
        if disk.is_some() {
            features |= wgpu::Features::PIPELINE_CACHE;
        }
        if options.experimental.is_enabled() {
            features |= adapter.features() & wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX;
        }
        let passthrough = (options.rolled_loops || rolled::enabled())
            && options.trusted_shaders.is_some()
            && adapter.get_info().backend == wgpu::Backend::Vulkan;
        if passthrough {
            features |= adapter.features() & wgpu::Features::PASSTHROUGH_SHADERS;
        }
        let descriptor = wgpu::DeviceDescriptor {
            label: Some("onnxruntime-ep-wgpu"),
            required_features: features,
            required_limits: adapter::limits(&adapter),
            experimental_features: options.experimental,
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        };
        let opened = startup::time(startup::Phase::Device, || pollster::block_on(adapter.request_device(&descriptor)));
        let (device, queue) =
            opened.map_err(|e| GpuError::DeviceCreation { adapter: summary.name.clone(), reason: e.to_string() })?;
        let errors = Arc::new(Mutex::new(Vec::new()));
        let sink = errors.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            tracing::error!(target: "ep_wgpu", "uncaptured wgpu error: {e}");
            sink.lock().push(e.to_string());
        }));
        let lost = Arc::new(Mutex::new(None));
        let lost_flag = Arc::new(AtomicBool::new(false));
        let (lost_sink, flag) = (lost.clone(), lost_flag.clone());
        device.set_device_lost_callback(move |reason, message| {
            tracing::error!(target: "ep_wgpu", "wgpu device lost ({reason:?}): {message}");
            let mut lost = lost_sink.lock();
            if lost.is_none() {
                *lost = Some(format!("{reason:?}: {message}"));
            }
            flag.store(true, Ordering::SeqCst);
        });
        let disk = disk.and_then(|(disk, data)| {
            let caches = options.pipeline_caches.as_ref()?;
            Some((caches.create(&device, data.as_deref()), disk))
        });
        let rolls = passthrough && device.features().contains(wgpu::Features::PASSTHROUGH_SHADERS);
        let pipelines = pipelines::PipelineCache::new(options.trusted_shaders.clone(), disk, rolls);
        tracing::info!(target: "ep_wgpu", "opened {} ({:?}, {})", summary.name, summary.kind, summary.driver);
        let spin_us = wait::initial_spin(caps.kind).into();
        Ok(Arc::new_cyclic(|me| Gpu {
            device,
            queue,
            caps,
            summary,
            pipelines,
            errors,
            lost,
            lost_flag,
            staging_pools: Default::default(),
            uniform_slabs: Default::default(),
            unused_input: Default::default(),
            spin_us,
            submitted: Default::default(),
            seen_done: Default::default(),
            me: me.clone(),
        }))
    }

    /// The file of the persistent pipeline cache, when this device uses one.
    pub fn pipeline_cache_path(&self) -> Option<&std::path::Path> {
        self.pipelines.disk_path()
    }

    pub fn caps(&self) -> &DeviceCaps {
        &self.caps
    }

    pub fn adapter(&self) -> &AdapterSummary {
        &self.summary
    }

    /// Destroys the device now, as a driver reset would: work in flight is dropped and every
    /// later call fails with [`GpuError::DeviceLost`]. wgpu only reports the loss on its next
    /// poll, so the flag is set here rather than left to the callback.
    pub fn destroy(&self, reason: &str) {
        self.mark_lost(format!("Destroyed: {reason}"));
        self.device.destroy();
    }

    fn mark_lost(&self, reason: String) {
        let mut lost = self.lost.lock();
        if lost.is_none() {
            *lost = Some(reason);
        }
        self.lost_flag.store(true, Ordering::SeqCst);
    }

    /// Whether the device was lost (or destroyed); a lost device never comes back.
    pub fn is_lost(&self) -> bool {
        self.lost_flag.load(Ordering::SeqCst)
    }

    /// Fails once the device is lost; call before starting work.
    pub fn check_alive(&self) -> Result<(), GpuError> {
        if self.lost_flag.load(Ordering::SeqCst) {
            let reason = self.lost.lock().clone().unwrap_or_default();
            return Err(GpuError::DeviceLost(reason));
        }
        Ok(())
    }

    /// Runs `f` inside out-of-memory and validation error scopes and turns a captured error
    /// (or one that escaped to the uncaptured handler meanwhile) into a [`GpuError`].
    pub fn scoped<T>(&self, context: &str, f: impl FnOnce() -> Result<T, GpuError>) -> Result<T, GpuError> {
        self.check_alive()?;
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let result = f();
        let validation_error = pollster::block_on(validation.pop());
        let oom_error = pollster::block_on(oom.pop());
        // On a lost device every call also raises a validation error; the loss is the cause.
        self.check_alive()?;
        if let Some(e) = oom_error {
            return Err(GpuError::OutOfMemory(format!("{context}: {e}")));
        }
        if let Some(e) = validation_error {
            return Err(GpuError::Validation { context: context.into(), message: e.to_string() });
        }
        if let Some(e) = self.errors.lock().pop() {
            return Err(GpuError::Validation { context: context.into(), message: e });
        }
        result
    }

    /// wgpu's allocator report: bytes currently allocated on the device, when the backend
    /// reports it (Vulkan and DX12 do; Metal does not).
    pub fn allocated_bytes(&self) -> Option<u64> {
        // wgpu frees a dropped buffer once the submissions that used it are retired, which it
        // notices only when polled; a non-blocking poll first keeps the report current.
        let _ = self.device.poll(wgpu::PollType::Poll);
        self.device.generate_allocator_report().map(|r| r.total_allocated_bytes)
    }

    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }
}
