//! Compiled pipelines, cached by shader variant (not by shape: shapes are uniforms), compiled on
//! worker threads in parallel and, where the driver has one, through the persistent cache.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use super::compile_order::{self, Priority};
use super::pipeline_cache::DiskCache;
use super::startup::{self, Phase};
use super::Gpu;
use crate::error::GpuError;
use crate::shader::ShaderVariant;

/// How a binding is used by a shader.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    Read,
    ReadWrite,
    Uniform,
}

/// The bindings a family of shaders declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BindingLayout {
    /// `(binding, access)` pairs.
    Fixed(&'static [(u32, Access)]),
    /// Op-registry kernels: `reads` read-only storage buffers at bindings `0..reads`, `writes`
    /// read-write ones after them, then one uniform buffer.
    Op { reads: u32, writes: u32 },
}

impl BindingLayout {
    /// Every `(binding, access)` of the layout.
    pub fn entries(self) -> Vec<(u32, Access)> {
        match self {
            BindingLayout::Fixed(e) => e.to_vec(),
            BindingLayout::Op { reads, writes } => (0..reads)
                .map(|b| (b, Access::Read))
                .chain((reads..reads + writes).map(|b| (b, Access::ReadWrite)))
                .chain(std::iter::once((reads + writes, Access::Uniform)))
                .collect(),
        }
    }

    /// The binding numbers of the layout, in its order.
    pub fn bindings(self) -> Vec<u32> {
        self.entries().into_iter().map(|(b, _)| b).collect()
    }

    /// `a, b, bias → out`: GEMM products (the split-K partial kernel leaves bias unused).
    pub const PRODUCT: BindingLayout = BindingLayout::Fixed(&PRODUCT_ENTRIES);
    /// `a, b, bias → out` plus the conv geometry: implicit-GEMM conv products.
    pub const PRODUCT_IMPLICIT: BindingLayout = BindingLayout::Fixed(&join::<6>(&PRODUCT_ENTRIES, &[GEOMETRY]));
    /// [`Self::PRODUCT`] plus the operands' scales: split f32 products.
    pub const PRODUCT_SPLIT: BindingLayout = BindingLayout::Fixed(&join::<6>(&PRODUCT_ENTRIES, &[SCALES]));
    /// [`Self::PRODUCT_SPLIT`] plus a residual operand.
    pub const PRODUCT_SPLIT_RESIDUAL: BindingLayout =
        BindingLayout::Fixed(&join::<7>(&PRODUCT_ENTRIES, &[SCALES, RESIDUAL]));
    /// `a, b → out`: the max passes of a split f32 product.
    pub const ABSMAX: BindingLayout =
        BindingLayout::Fixed(&[(0, Access::Read), (1, Access::Read), (3, Access::ReadWrite), (4, Access::Uniform)]);
    /// `partials, bias → out`: the split-K reduction.
    pub const REDUCE: BindingLayout = BindingLayout::Fixed(&REDUCE_ENTRIES);
    /// [`Self::PRODUCT`] plus a residual operand (`_res` programs).
    pub const PRODUCT_RESIDUAL: BindingLayout = BindingLayout::Fixed(&join::<6>(&PRODUCT_ENTRIES, &[RESIDUAL]));
    /// [`Self::PRODUCT_IMPLICIT`] plus a residual operand.
    pub const PRODUCT_IMPLICIT_RESIDUAL: BindingLayout =
        BindingLayout::Fixed(&join::<7>(&PRODUCT_ENTRIES, &[GEOMETRY, RESIDUAL]));
    /// [`Self::REDUCE`] plus a residual operand.
    pub const REDUCE_RESIDUAL: BindingLayout = BindingLayout::Fixed(&join::<5>(&REDUCE_ENTRIES, &[RESIDUAL]));
    /// `input → out`: data movement such as im2col.
    pub const UNARY: BindingLayout =
        BindingLayout::Fixed(&[(0, Access::Read), (3, Access::ReadWrite), (4, Access::Uniform)]);
}

/// `a, b, bias → out` and the uniforms: every GEMM product's bindings.
const PRODUCT_ENTRIES: [(u32, Access); 5] =
    [(0, Access::Read), (1, Access::Read), (2, Access::Read), (3, Access::ReadWrite), (4, Access::Uniform)];
/// `partials, bias → out` and the uniforms.
const REDUCE_ENTRIES: [(u32, Access); 4] =
    [(0, Access::Read), (2, Access::Read), (3, Access::ReadWrite), (4, Access::Uniform)];
/// Binding 5 of an implicit-GEMM product (the conv geometry) or of a split f32 product (its scales).
const GEOMETRY: (u32, Access) = (5, Access::Uniform);
const SCALES: (u32, Access) = (5, Access::Read);
/// Binding 6: the residual operand of a `_res` program.
const RESIDUAL: (u32, Access) = (6, Access::Read);

/// `base` followed by `extra`, as an array of `N` entries (`N` must be their total length).
const fn join<const N: usize>(base: &[(u32, Access)], extra: &[(u32, Access)]) -> [(u32, Access); N] {
    assert!(base.len() + extra.len() == N, "join: N is not the combined length");
    let mut out = [(0, Access::Read); N];
    let mut i = 0;
    while i < N {
        out[i] = if i < base.len() { base[i] } else { extra[i - base.len()] };
        i += 1;
    }
    out
}

/// Pipelines a device keeps before it drops the least recently used of those that nothing
/// prepared holds: a process that loads model after model (a server, a notebook, the fuzzer)
/// would otherwise keep every pipeline it ever compiled (about 0.2 MB each on llvmpipe).
pub const MAX_PIPELINES: usize = 1024;

/// The pipelines by variant, each with the clock of its last request.
#[derive(Default)]
struct Pipelines {
    map: HashMap<ShaderVariant, (Arc<PendingPipeline>, u64)>,
    clock: u64,
}

impl Pipelines {
    fn get(&mut self, variant: &ShaderVariant) -> Option<Arc<PendingPipeline>> {
        self.clock += 1;
        let now = self.clock;
        self.map.get_mut(variant).map(|(p, used)| {
            *used = now;
            p.clone()
        })
    }

    /// Adds `p`; past `limit`, drops the least recently used idle pipelines (compiled, and held
    /// by nothing but this map) down to three quarters of it.
    fn insert(&mut self, variant: ShaderVariant, p: Arc<PendingPipeline>, limit: usize) {
        self.clock += 1;
        self.map.insert(variant, (p, self.clock));
        if self.map.len() <= limit {
            return;
        }
        let mut idle: Vec<(u64, ShaderVariant)> = self
            .map
            .iter()
            .filter(|(_, (p, _))| Arc::strong_count(p) == 1 && p.is_ready())
            .map(|(v, (_, used))| (*used, v.clone()))
            .collect();
        idle.sort_unstable_by_key(|(used, _)| *used);
        let excess = self.map.len().saturating_sub(limit * 3 / 4);
        for (_, v) in idle.into_iter().take(excess) {
            self.map.remove(&v);
        }
    }
}

pub(super) struct PipelineCache {
    layouts: Mutex<HashMap<BindingLayout, Arc<(wgpu::BindGroupLayout, wgpu::PipelineLayout)>>>,
    pipelines: Mutex<Pipelines>,
    /// [`MAX_PIPELINES`], or what a test sets.
    limit: AtomicUsize,
    trusted: Option<Arc<dyn super::TrustedShaders>>,
    /// The persistent cache: the driver's cache object and the file it is saved to.
    disk: Option<(wgpu::PipelineCache, DiskCache)>,
    /// Compiles started and not finished (the disk cache is saved when it drops to 0).
    in_flight: AtomicUsize,
    /// Whether the tensor-core variants compile rolled ([`super::rolled`]): the device takes
    /// SPIR-V as is and the option `rolled_loops` is on.
    rolls: bool,
}

impl PipelineCache {
    pub(super) fn new(
        trusted: Option<Arc<dyn super::TrustedShaders>>,
        disk: Option<(wgpu::PipelineCache, DiskCache)>,
        rolls: bool,
    ) -> Self {
        PipelineCache {
            layouts: Mutex::new(HashMap::new()),
            pipelines: Mutex::new(Pipelines::default()),
            limit: AtomicUsize::new(MAX_PIPELINES),
            trusted,
            disk,
            in_flight: AtomicUsize::new(0),
            rolls,
        }
    }

    /// The file of the persistent cache, when one is in use.
    pub(super) fn disk_path(&self) -> Option<&std::path::Path> {
        self.disk.as_ref().map(|(_, d)| d.path())
    }
}

/// A pipeline compiling on a worker thread, or compiled. Dispatches hold it and wait for it
/// only when they are recorded, so every pipeline a run needs compiles in parallel with the
/// planning of the others.
pub struct PendingPipeline {
    state: Mutex<Option<Result<Arc<wgpu::ComputePipeline>, String>>>,
    ready: Condvar,
    /// When its compile may start (`compile_order.rs`).
    priority: Priority,
}

impl std::fmt::Debug for PendingPipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingPipeline").field("ready", &self.state.lock().is_some()).finish()
    }
}

impl PendingPipeline {
    fn new(deferred: bool) -> Self {
        PendingPipeline { state: Mutex::new(None), ready: Condvar::new(), priority: Priority::new(deferred) }
    }

    fn set(&self, result: Result<Arc<wgpu::ComputePipeline>, String>) {
        *self.state.lock() = Some(result);
        self.ready.notify_all();
    }

    /// Whether the compile finished (successfully or not).
    pub fn is_ready(&self) -> bool {
        self.state.lock().is_some()
    }

    /// Whether its compile waits for all other work (`compile_order.rs`).
    pub fn is_deferred(&self) -> bool {
        self.priority.is_deferred()
    }

    /// Lets a deferred compile start as soon as a core is free (`compile_order.rs`).
    pub fn promote(&self) {
        self.priority.promote();
    }

    /// Blocks until the compile finished or `deadline` passed (a deferred one is promoted
    /// first); whether it finished.
    pub fn wait_until(&self, deadline: Instant) -> bool {
        self.promote();
        let mut state = self.state.lock();
        while state.is_none() {
            if self.ready.wait_until(&mut state, deadline).timed_out() {
                break;
            }
        }
        state.is_some()
    }

    /// The pipeline, blocking until its compile finished (a deferred one is promoted first);
    /// the compile's error message otherwise.
    pub fn wait(&self) -> Result<Arc<wgpu::ComputePipeline>, String> {
        self.promote();
        let mut state = self.state.lock();
        loop {
            if let Some(result) = &*state {
                return result.clone();
            }
            self.ready.wait(&mut state);
        }
    }
}

/// The compile workers not yet joined.
static WORKERS: Mutex<Vec<std::thread::JoinHandle<()>>> = Mutex::new(Vec::new());

/// A folder of hand-edited kernels for experiments (`KERNEL_BENCH_OVERRIDE` of `kernel_bench`): a variant whose
/// `<name>.wgsl` is there compiles from that file instead of its template. The EP sets it only when built with
/// the `wgsl-override` feature, from `EXP_WGSL_OVERRIDE`.
static WGSL_OVERRIDE: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// Sets the experiment folder (see [`WGSL_OVERRIDE`]); the first call wins.
pub fn set_wgsl_override(dir: std::path::PathBuf) {
    let _ = WGSL_OVERRIDE.set(dir);
}

fn overridden(name: &str) -> Option<String> {
    #[cfg(feature = "wgsl-override")]
    if let Some(dir) = std::env::var_os("EXP_WGSL_OVERRIDE") {
        set_wgsl_override(dir.into());
    }
    std::fs::read_to_string(WGSL_OVERRIDE.get()?.join(format!("{name}.wgsl"))).ok()
}

/// An experiment build's `EXP_NO_ZERO_INIT=1`: pipelines without wgpu's zero-initialised workgroup
/// memory (what that costs; a kernel that reads workgroup memory before writing it would then read
/// garbage). Release builds never read the variable.
fn no_zero_init() -> bool {
    cfg!(feature = "wgsl-override") && std::env::var("EXP_NO_ZERO_INIT").is_ok_and(|v| v.trim() == "1")
}

/// An experiment build's `EXP_COOP_CHECKS`: the runtime checks every variant whose name holds
/// `EXP_CHECKS_ON` (default `_coop_`, the tensor-core kernels) is compiled with, as a comma list
/// of `bounds`, `loop`, `div` (or `none`), whatever the variant guards itself: how each check
/// changes the driver's compile time and the kernel's speed (issue 15). Release builds never
/// read the variables.
fn exp_checks(name: &str) -> Option<super::KeptChecks> {
    if !cfg!(feature = "wgsl-override") {
        return None;
    }
    let on = std::env::var("EXP_CHECKS_ON").unwrap_or_else(|_| "_coop_".into());
    if !name.contains(on.as_str()) {
        return None;
    }
    let list = std::env::var("EXP_COOP_CHECKS").ok()?;
    let has = |c: &str| list.split(',').any(|x| x.trim() == c);
    Some(super::KeptChecks { bounds: has("bounds"), loop_bounding: has("loop"), int_div: has("div") })
}

/// Keeps a worker thread of ours (a compile, a device opening) to be joined by
/// [`join_compile_workers`].
pub fn keep_worker(handle: std::thread::JoinHandle<()>) {
    let mut workers = WORKERS.lock();
    let (done, running): (Vec<_>, Vec<_>) = workers.drain(..).partition(|h| h.is_finished());
    *workers = running;
    workers.push(handle);
    drop(workers);
    for h in done {
        let _ = h.join();
    }
}

/// Waits until every compile worker has exited. The provider calls it before the library can
/// be unloaded (a thread still running our code then would crash the process).
pub fn join_compile_workers() {
    loop {
        let workers: Vec<_> = WORKERS.lock().drain(..).collect();
        if workers.is_empty() {
            return;
        }
        for h in workers {
            let _ = h.join();
        }
    }
}

fn entry(binding: u32, access: Access) -> wgpu::BindGroupLayoutEntry {
    let ty = match access {
        Access::Uniform => wgpu::BufferBindingType::Uniform,
        Access::Read => wgpu::BufferBindingType::Storage { read_only: true },
        Access::ReadWrite => wgpu::BufferBindingType::Storage { read_only: false },
    };
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer { ty, has_dynamic_offset: false, min_binding_size: None },
        count: None,
    }
}

impl Gpu {
    pub(crate) fn layout(&self, layout: BindingLayout) -> Arc<(wgpu::BindGroupLayout, wgpu::PipelineLayout)> {
        let mut layouts = self.pipelines.layouts.lock();
        layouts
            .entry(layout)
            .or_insert_with(|| {
                let entries: Vec<_> = layout.entries().into_iter().map(|(b, a)| entry(b, a)).collect();
                let bgl = self
                    .device
                    .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: None, entries: &entries });
                let pl = self.device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                    label: None,
                    bind_group_layouts: &[Some(&bgl)],
                    immediate_size: 0,
                });
                Arc::new((bgl, pl))
            })
            .clone()
    }

    /// The compiled pipeline of `variant`, compiling it on first use.
    pub fn pipeline(
        &self,
        variant: &ShaderVariant,
        layout: BindingLayout,
    ) -> Result<Arc<wgpu::ComputePipeline>, GpuError> {
        let pending = self.pipeline_async(variant, layout);
        if log_compiles() && !pending.is_ready() {
            eprintln!("ep-wgpu waiting for {} at {:.1} ms", variant.name(), log_clock_ms());
        }
        let waited = Instant::now();
        let result = pending.wait();
        startup::record(Phase::PipelineWait, waited.elapsed(), 1);
        result.map_err(|message| GpuError::ShaderCompile { variant: variant.name(), message })
    }

    /// The pipeline of `variant`, compiled once per device: the first request starts its
    /// compile on a worker thread (at most one per core run at once, unrolled tensor-core ones
    /// asked for inside a [`DeferScope`](super::DeferScope) after the rest: `compile_order.rs`)
    /// and returns at once.
    pub fn pipeline_async(&self, variant: &ShaderVariant, layout: BindingLayout) -> Arc<PendingPipeline> {
        let pending = {
            let mut pipelines = self.pipelines.pipelines.lock();
            if let Some(p) = pipelines.get(variant) {
                return p;
            }
            let rolled = super::rolled::wanted(&variant.name(), self.pipelines.rolls);
            let deferred = compile_order::deferred_here(variant.uses_tensor_cores(), rolled);
            let p = Arc::new(PendingPipeline::new(deferred));
            pipelines.insert(variant.clone(), p.clone(), self.pipelines.limit.load(Ordering::Relaxed));
            p
        };
        self.pipelines.in_flight.fetch_add(1, Ordering::SeqCst);
        let job = {
            let (pending, variant) = (pending.clone(), variant.clone());
            move |gpu: &Gpu| {
                // A panic must still report the pipeline (its run would wait forever otherwise).
                let result = catch_unwind(AssertUnwindSafe(|| {
                    if let Some(delay) = test_compile_delay(&variant.name()) {
                        std::thread::sleep(delay);
                    }
                    let _permit = pending.priority.permit();
                    gpu.compile(&variant, layout)
                }))
                .unwrap_or_else(|panic| {
                    Err(GpuError::ShaderCompile { variant: variant.name(), message: panic_message(&panic) })
                });
                // The last compile of a batch saves the persistent cache before it reports
                // ready, so a run that waited for its pipelines has their cache on disk.
                if gpu.pipelines.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
                    gpu.save_pipeline_cache();
                }
                if result.is_err() {
                    // Not kept: a later request compiles again (the failure may have been
                    // transient, e.g. out of memory); the runs already bound to it fail.
                    let mut pipelines = gpu.pipelines.pipelines.lock();
                    if pipelines.map.get(&variant).is_some_and(|(p, _)| Arc::ptr_eq(p, &pending)) {
                        pipelines.map.remove(&variant);
                    }
                }
                pending.set(result.map(Arc::new).map_err(|e| e.to_string()));
            }
        };
        match self.me.upgrade() {
            Some(gpu) => {
                let spawned = std::thread::Builder::new().name("ep-wgpu-compile".into()).spawn({
                    let job = job.clone();
                    move || job(&gpu)
                });
                match spawned {
                    Ok(handle) => keep_worker(handle),
                    Err(_) => job(self),
                }
            }
            None => job(self),
        }
        pending
    }

    /// Renders, validates and compiles one variant (on a worker thread).
    fn compile(&self, variant: &ShaderVariant, layout: BindingLayout) -> Result<wgpu::ComputePipeline, GpuError> {
        let name = variant.name();
        let source = match overridden(&name) {
            Some(s) => s,
            None => startup::time(Phase::Render, || variant.emit())
                .map_err(|message| GpuError::ShaderCompile { variant: name.clone(), message })?,
        };
        let wgsl_bytes = source.len();
        if log_compiles() {
            // Before the driver sees it, so that a crash inside the driver names its shader.
            eprintln!("ep-wgpu compiling {name}: wgsl {wgsl_bytes} B");
        }
        let kept = exp_checks(&name).or_else(|| variant.kept_checks());
        let rolled = match super::rolled::wanted(&name, self.pipelines.rolls) {
            true => Some(
                super::rolled::spirv(&source, kept, !no_zero_init(), &layout.bindings())
                    .map_err(|message| GpuError::ShaderCompile { variant: name.clone(), message })?,
            ),
            false => None,
        };
        if let (true, Some((_, _, marked))) = (log_compiles(), &rolled) {
            eprintln!("ep-wgpu compiling {name} rolled: {marked} loop(s) marked");
        }
        let source = super::subgroup_sync::shader_source(&source)
            .map_err(|message| GpuError::ShaderCompile { variant: name.clone(), message })?;
        let layouts = self.layout(layout);
        let trusted = self.pipelines.trusted.as_ref().filter(|_| kept.is_some());
        let cache = self.pipelines.disk.as_ref().map(|(c, _)| c);
        let started = Instant::now();
        let mut module_done = started;
        let compile = || {
            let desc = wgpu::ShaderModuleDescriptor { label: Some(&name), source };
            let module = startup::time(Phase::Module, || {
                let spirv = rolled.as_ref().map(|(words, size, _)| super::rolled::Spirv {
                    label: &name,
                    words,
                    workgroup_size: *size,
                });
                let module = spirv.zip(self.pipelines.trusted.as_ref());
                match (module.and_then(|(spirv, t)| t.create_spirv(&self.device, spirv)), trusted) {
                    (Some(module), _) => module,
                    (None, Some(t)) => t.create(&self.device, desc, kept.unwrap_or_default()),
                    (None, None) => self.device.create_shader_module(desc),
                }
            });
            module_done = Instant::now();
            startup::time(Phase::Pipeline, || {
                self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(&name),
                    layout: Some(&layouts.1),
                    module: &module,
                    entry_point: Some("main"),
                    compilation_options: wgpu::PipelineCompilationOptions {
                        zero_initialize_workgroup_memory: !no_zero_init(),
                        ..Default::default()
                    },
                    cache,
                })
            })
        };
        // naga has panicked inside its SPIR-V backend on some inputs (gpu-machine.md): a panic
        // here must become an error, never unwind into the host process.
        let pipeline = self
            .scoped(&name, || {
                catch_unwind(AssertUnwindSafe(compile))
                    .map_err(|panic| GpuError::ShaderCompile { variant: name.clone(), message: panic_message(&panic) })
            })
            .map_err(|e| match e {
                GpuError::Validation { message, .. } => GpuError::ShaderCompile { variant: name.clone(), message },
                other => other,
            })?;
        tracing::debug!(target: "ep_wgpu", "compiled pipeline {name}");
        if log_compiles() {
            let (module, total) = (module_done - started, started.elapsed());
            let end = log_clock_ms();
            eprintln!(
                "ep-wgpu compile {name}: wgsl {wgsl_bytes} B, module {:.1} ms, pipeline {:.1} ms, at {:.1}-{end:.1} ms",
                module.as_secs_f64() * 1e3,
                (total - module).as_secs_f64() * 1e3,
                end - total.as_secs_f64() * 1e3
            );
        }
        Ok(pipeline)
    }

    /// Writes the driver's pipeline cache to its file (when it changed).
    fn save_pipeline_cache(&self) {
        let Some((cache, disk)) = &self.pipelines.disk else { return };
        let start = Instant::now();
        let written = cache.get_data().map(|data| disk.store(&data)).unwrap_or(0);
        if written > 0 {
            startup::record(Phase::CacheSave, start.elapsed(), written);
        }
    }

    /// Waits for the pipelines of `dispatches` (the wait counts as [`Phase::PipelineWait`]); a
    /// failed compile is reported as an error of the enclosing [`Gpu::scoped`] call.
    pub(super) fn await_pipelines<'a>(&self, pipelines: impl Iterator<Item = &'a PendingPipeline>) {
        let start = Instant::now();
        let mut waited = false;
        for p in pipelines {
            waited |= !p.is_ready();
            if let Err(message) = p.wait() {
                self.errors.lock().push(format!("compiling a pipeline: {message}"));
            }
        }
        if waited {
            startup::record(Phase::PipelineWait, start.elapsed(), 1);
        }
    }

    /// Number of pipelines compiled (or compiling) so far (tests check that new shapes reuse
    /// them).
    pub fn pipeline_count(&self) -> usize {
        self.pipelines.pipelines.lock().map.len()
    }

    /// Sets how many pipelines this device keeps before it drops idle ones (tests; the default
    /// is [`MAX_PIPELINES`]).
    pub fn set_pipeline_limit(&self, limit: usize) {
        self.pipelines.limit.store(limit.max(1), Ordering::Relaxed);
    }
}

/// `ONNXRUNTIME_EP_WGPU_LOG_COMPILES=1`: one line on stderr per compiled pipeline (WGSL size,
/// module and pipeline creation times), to find the pipelines a cold start waits for, one as
/// each compile starts, and one for each dispatch (or pipeline) a run finds still compiling.
pub fn log_compiles() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        log_clock_ms();
        std::env::var("ONNXRUNTIME_EP_WGPU_LOG_COMPILES").is_ok_and(|v| v == "1")
    })
}

/// Milliseconds since the process first asked [`log_compiles`] (its first pipeline request):
/// the clock of the compile log's timeline.
pub fn log_clock_ms() -> f64 {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_secs_f64() * 1e3
}

/// Test-only `ONNXRUNTIME_EP_WGPU_TEST_SLOW_COMPILE=<part of a variant's name>:<ms>`: each
/// compile of a variant whose name holds that part waits so long first, as a cold driver's
/// tensor-core compiles do (the interim plans' tests, `graph/interim.rs`, and a process that
/// exits while compiles run, `tests/test_startup.py`). Read once; never set it outside tests.
fn test_compile_delay(name: &str) -> Option<std::time::Duration> {
    static DELAY: std::sync::OnceLock<Option<(String, std::time::Duration)>> = std::sync::OnceLock::new();
    let parsed = DELAY.get_or_init(|| {
        let spec = std::env::var("ONNXRUNTIME_EP_WGPU_TEST_SLOW_COMPILE").ok()?;
        let (part, ms) = spec.rsplit_once(':')?;
        Some((part.to_string(), std::time::Duration::from_millis(ms.trim().parse().ok()?)))
    });
    parsed.as_ref().filter(|(part, _)| name.contains(part.as_str())).map(|(_, d)| *d)
}

/// The text of a caught panic payload.
pub fn panic_message(payload: &Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic with a non-string payload".into())
}
