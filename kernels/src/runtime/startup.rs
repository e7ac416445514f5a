//! Where start-up time goes, and where each run's host time goes (the `Run*` phases):
//! process-wide totals per phase, measured with `Instant` (always on;
//! a handful of atomic adds per session). The provider exports them
//! (`onnxruntime_ep_wgpu_startup_stats`), `tools/run_model.py --verbose` and `bench/startup.py`
//! print them.
//!
//! Phases that run on the pipeline-compile workers (`Render`, `Module`, `Pipeline`) are summed
//! over threads, so with parallel compiles their total can exceed the wall time they took;
//! `PipelineWait` is the wall time a run spent waiting for them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// One measured phase of start-up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// wgpu instance creation and adapter enumeration (library registration).
    Enumerate,
    /// Opening the device (`request_device`).
    Device,
    /// GetCapability: reading ORT's graph and placement.
    Placement,
    /// Compile: reading the fused graphs and building the programs (fusion, kernels).
    Program,
    /// Uploading the constants (weights).
    Upload,
    /// Rendering WGSL from the templates.
    Render,
    /// Shader module creation (naga parses and validates the WGSL).
    Module,
    /// Compute pipeline creation (naga writes SPIR-V, the driver compiles it).
    Pipeline,
    /// Wall time a run waited for pipelines still compiling.
    PipelineWait,
    /// Preparing an input-shape set: shapes, plans, buffers and bind groups (at Compile when the
    /// shapes are static, else in the first run of the shapes).
    Prepare,
    /// Each partition's first run, start to end (includes `PipelineWait`, and `Prepare` when
    /// the shapes were not known at Compile).
    FirstRun,
    /// Reading the persistent pipeline cache (count: bytes read).
    CacheLoad,
    /// Writing the persistent pipeline cache (count: bytes written).
    CacheSave,
    /// Every run of a partition, start to end (count: runs). The `run_*` phases split it.
    Run,
    /// Reading value inputs on the host and keying the run's set by them.
    RunValues,
    /// Recording and submitting the run's dispatches (count: dispatches).
    RunRecord,
    /// Waiting for the GPU: run-time checks, read-backs, outputs the encoder could not copy.
    RunWait,
    /// Host → device copies of `runtime::transfer` (ONNX Runtime's data transfer; a device input
    /// a run cannot copy on the GPU): the bytes into staging memory (count: copies).
    CopyIn,
    /// Device → host copies of `runtime::transfer`: waiting for the GPU and the mapping.
    CopyOutWait,
    /// Device → host copies of `runtime::transfer`: the mapped bytes into host memory.
    CopyOut,
    /// Runs that took interim plans without tensor cores while their own pipelines compiled
    /// (`graph/interim.rs`; count: steps run so).
    Interim,
    /// Wall time Compile (or a first allocation) waited for a device still opening on its worker
    /// thread (`provider/src/opening.rs`): what of [`Phase::Device`] the session's preparation
    /// did not hide.
    DeviceWait,
    /// Creating storage buffers (count: buffers), most of them while a set is prepared.
    Buffers,
    /// Creating a dispatch's bind group while a set is prepared (count: bind groups).
    BindGroups,
    /// The provider's `Compute` call, start to end (count: calls): [`Phase::Run`] plus reading
    /// ORT's inputs; ORT's own time per run is what a caller's wall time adds to it.
    Compute,
    /// A run's work before recording: its set from the pool, ORT's outputs, run-time checks on
    /// the host, in-place bindings.
    RunSetup,
    /// Queue submissions of runs (count: submissions); inside [`Phase::RunRecord`] except the last
    /// of each run.
    RunSubmit,
}

impl Phase {
    /// Every phase, in the order of the exported values.
    pub const ALL: [Phase; 27] = [
        Phase::Enumerate,
        Phase::Device,
        Phase::Placement,
        Phase::Program,
        Phase::Upload,
        Phase::Render,
        Phase::Module,
        Phase::Pipeline,
        Phase::PipelineWait,
        Phase::Prepare,
        Phase::FirstRun,
        Phase::CacheLoad,
        Phase::CacheSave,
        Phase::Run,
        Phase::RunValues,
        Phase::RunRecord,
        Phase::RunWait,
        Phase::CopyIn,
        Phase::CopyOutWait,
        Phase::CopyOut,
        Phase::Interim,
        Phase::DeviceWait,
        Phase::Buffers,
        Phase::BindGroups,
        Phase::Compute,
        Phase::RunSetup,
        Phase::RunSubmit,
    ];

    /// The phase's name in logs, the locator's dict and the bench's JSON.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Enumerate => "enumerate",
            Phase::Device => "device",
            Phase::Placement => "placement",
            Phase::Program => "program",
            Phase::Upload => "upload",
            Phase::Render => "render",
            Phase::Module => "module",
            Phase::Pipeline => "pipeline",
            Phase::PipelineWait => "pipeline_wait",
            Phase::Prepare => "prepare",
            Phase::FirstRun => "first_run",
            Phase::CacheLoad => "cache_load",
            Phase::CacheSave => "cache_save",
            Phase::Run => "run",
            Phase::RunValues => "run_values",
            Phase::RunRecord => "run_record",
            Phase::RunWait => "run_wait",
            Phase::CopyIn => "copy_in",
            Phase::CopyOutWait => "copy_out_wait",
            Phase::CopyOut => "copy_out",
            Phase::Interim => "interim",
            Phase::DeviceWait => "device_wait",
            Phase::Buffers => "buffers",
            Phase::BindGroups => "bind_groups",
            Phase::Compute => "compute",
            Phase::RunSetup => "run_setup",
            Phase::RunSubmit => "run_submit",
        }
    }
}

const N: usize = Phase::ALL.len();
static NANOS: [AtomicU64; N] = [const { AtomicU64::new(0) }; N];
static COUNTS: [AtomicU64; N] = [const { AtomicU64::new(0) }; N];

/// Adds `elapsed` and `count` to a phase.
pub fn record(phase: Phase, elapsed: Duration, count: u64) {
    let i = phase as usize;
    NANOS[i].fetch_add(elapsed.as_nanos().min(u64::MAX as u128) as u64, Ordering::Relaxed);
    COUNTS[i].fetch_add(count, Ordering::Relaxed);
}

/// Runs `f`, adding its time (and one count) to `phase`.
pub fn time<T>(phase: Phase, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = f();
    record(phase, start.elapsed(), 1);
    out
}

/// One phase's totals since the library was loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhaseTotal {
    pub phase: Phase,
    pub nanos: u64,
    pub count: u64,
}

/// Every phase's totals, in [`Phase::ALL`] order.
pub fn startup_stats() -> Vec<PhaseTotal> {
    Phase::ALL
        .iter()
        .map(|&phase| PhaseTotal {
            phase,
            nanos: NANOS[phase as usize].load(Ordering::Relaxed),
            count: COUNTS[phase as usize].load(Ordering::Relaxed),
        })
        .collect()
}

/// One line for the log: `enumerate 12.3 ms (1), device 40.1 ms (1), ...` (phases not seen yet
/// are left out).
pub fn summary() -> String {
    let parts: Vec<String> = startup_stats()
        .into_iter()
        .filter(|t| t.count > 0)
        .map(|t| format!("{} {:.1} ms ({})", t.phase.name(), t.nanos as f64 / 1e6, t.count))
        .collect();
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_add_up_in_order() {
        let before = startup_stats()[Phase::CacheSave as usize];
        record(Phase::CacheSave, Duration::from_micros(5), 3);
        let v = time(Phase::CacheSave, || 7);
        assert_eq!(v, 7);
        let after = startup_stats()[Phase::CacheSave as usize];
        assert_eq!(after.phase, Phase::CacheSave);
        assert_eq!(after.count, before.count + 4);
        assert!(after.nanos >= before.nanos + 5_000);
        assert!(summary().contains("cache_save"));
        let names: Vec<&str> = Phase::ALL.iter().map(|p| p.name()).collect();
        assert_eq!(names.len(), N);
        for (i, p) in Phase::ALL.iter().enumerate() {
            assert_eq!(*p as usize, i);
        }
    }
}
