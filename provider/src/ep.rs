//! `OrtEp`: one per session. GetCapability places nodes with `ep_kernels::graph::place`;
//! Compile turns each fused partition into an `Executable` behind an `OrtNodeComputeInfo`.

use std::ffi::{c_char, CString};
use std::ptr::null;
use std::sync::Arc;
use std::time::Instant;

use ep_kernels::graph::{build_program_with, place, Constant, DeclineKind, Executable, PlacementOptions};
use ep_kernels::runtime::memory::{DeviceAllocator, GpuSource, DEFAULT_CACHE_LIMIT};
use ep_kernels::runtime::startup::{self, Phase};
use ep_kernels::runtime::transfer::{thread_copy_stats, CopyStats};
use ep_kernels::{ElemType, GpuError};
use ort_sys::{OrtAllocator, OrtGraph, OrtLoggingLevel, OrtMemoryInfo, OrtNode, OrtRunOptions, OrtValue, OrtValueInfo};

use crate::abi::{
    OrtEp, OrtEpGraphSupportInfo, OrtKernelRegistry, OrtNodeComputeInfo, OrtNodeFusionOptions, ABI_VERSION,
};
use crate::compute::ComputeInfo;
use crate::factory::EP_NAME;
use crate::fault::{self, Site};
use crate::graph_reader::{read_graph, tensor_bytes};
use crate::memory::Allocator;
use crate::opening::OpeningGpu;
use crate::options::EpOptions;
use crate::ort::{c_string, check, cstr, guard, guard_value, ort, EpError, Logger, Status};

#[repr(C)]
pub struct Ep {
    /// Must stay the first field: ORT hands this pointer back to every callback.
    base: OrtEp,
    name: CString,
    /// The session's device, opening on a worker thread until Compile needs it (`opening.rs`).
    gpu: Arc<OpeningGpu>,
    options: EpOptions,
    /// The session logger, valid for the EP's lifetime.
    logger: Logger,
}

impl Ep {
    /// Boxes a new EP and returns the pointer ORT keeps.
    pub fn create(gpu: Arc<OpeningGpu>, options: EpOptions, logger: Logger) -> *mut OrtEp {
        let ep = Box::new(Ep {
            base: OrtEp {
                ort_version_supported: ABI_VERSION,
                GetName: get_name,
                GetCapability: get_capability,
                Compile: compile,
                ReleaseNodeComputeInfos: release_node_compute_infos,
                GetPreferredDataLayout: Some(get_preferred_data_layout),
                ShouldConvertDataLayoutForOp: None,
                SetDynamicOptions: None,
                OnRunStart: Some(on_run_start),
                OnRunEnd: Some(on_run_end),
                CreateAllocator: Some(create_allocator),
                CreateSyncStreamForDevice: None,
                GetCompiledModelCompatibilityInfo: None,
                GetKernelRegistry: Some(get_kernel_registry),
                IsConcurrentRunSupported: Some(is_concurrent_run_supported),
            },
            name: c_string(EP_NAME),
            gpu,
            options,
            logger,
        });
        Box::into_raw(ep) as *mut OrtEp
    }

    /// # Safety
    /// `ep` came from [`Ep::create`] and is released once.
    pub unsafe fn destroy(ep: *mut OrtEp) {
        if !ep.is_null() {
            // SAFETY: guaranteed by the caller.
            drop(unsafe { Box::from_raw(ep as *mut Ep) });
        }
    }

    /// # Safety
    /// `this` is a pointer made by [`Ep::create`].
    unsafe fn from_ptr<'a>(this: *const OrtEp) -> &'a Ep {
        // SAFETY: `base` is the first field of the #[repr(C)] Ep we boxed.
        unsafe { &*(this as *const Ep) }
    }

    fn placement_options(&self) -> PlacementOptions {
        self.options.placement_options(self.gpu.caps().clone())
    }

    fn log(&self, level: OrtLoggingLevel, message: &str) {
        self.logger.log(level, message);
    }
}

unsafe extern "system" fn get_name(this: *const OrtEp) -> *const c_char {
    // SAFETY: ORT passes back our EP.
    guard_value("OrtEp::GetName", null(), || unsafe { Ep::from_ptr(this) }.name.as_ptr())
}

/// The session's allocator of our device memory, on the session's own device, so its tensors
/// are copied on the GPU without a detour.
unsafe extern "system" fn create_allocator(
    this: *mut OrtEp,
    info: *const OrtMemoryInfo,
    out: *mut *mut OrtAllocator,
) -> Status {
    guard("OrtEp::CreateAllocator", || {
        if out.is_null() || info.is_null() {
            return Err(EpError::invalid("CreateAllocator: NULL argument"));
        }
        // SAFETY: ORT passes back our EP.
        let ep = unsafe { Ep::from_ptr(this) };
        let opening = ep.gpu.clone();
        let source: GpuSource = Box::new(move || {
            opening
                .get()
                .map_err(|e| GpuError::DeviceCreation { adapter: opening.adapter().name.clone(), reason: e.message })
        });
        let inner = DeviceAllocator::new(source, DEFAULT_CACHE_LIMIT);
        // SAFETY: ORT passes a valid out-pointer; the memory info is the one we registered,
        // which the factory keeps alive.
        unsafe { *out = Allocator::create(info, inner, ep.logger) };
        Ok(())
    })
}

thread_local! {
    /// This thread's copy counters when its current run started.
    static RUN_START: std::cell::Cell<Option<CopyStats>> = const { std::cell::Cell::new(None) };
}

unsafe extern "system" fn on_run_start(_this: *mut OrtEp, _options: *const OrtRunOptions) -> Status {
    guard("OrtEp::OnRunStart", || {
        RUN_START.with(|s| s.set(Some(thread_copy_stats())));
        Ok(())
    })
}

/// Logs the run's copies between host and device (verbose): ORT runs a session's feeds,
/// fetches and nodes on the calling thread, whose counters we compare.
unsafe extern "system" fn on_run_end(this: *mut OrtEp, _options: *const OrtRunOptions, _sync: bool) -> Status {
    guard("OrtEp::OnRunEnd", || {
        if let Some(start) = RUN_START.with(|s| s.take()) {
            let copies = thread_copy_stats().since(&start);
            // SAFETY: ORT passes back our EP.
            let ep = unsafe { Ep::from_ptr(this) };
            ep.log(OrtLoggingLevel::ORT_LOGGING_LEVEL_VERBOSE, &format!("run copies: {}", copies.summary()));
        }
        Ok(())
    })
}

unsafe extern "system" fn get_preferred_data_layout(_this: *mut OrtEp, layout: *mut i32) -> Status {
    guard("GetPreferredDataLayout", || {
        // SAFETY: ORT passes a valid out-pointer. 0 = NCHW, what our conv kernels read.
        unsafe { *layout = 0 };
        Ok(())
    })
}

unsafe extern "system" fn get_kernel_registry(_this: *mut OrtEp, registry: *mut *const OrtKernelRegistry) -> Status {
    guard("GetKernelRegistry", || {
        // SAFETY: ORT passes a valid out-pointer; we compile partitions, we have no kernels.
        unsafe { *registry = null() };
        Ok(())
    })
}

unsafe extern "system" fn is_concurrent_run_supported(_this: *mut OrtEp, supported: *mut bool) -> Status {
    guard("IsConcurrentRunSupported", || {
        // Executables pool their per-run buffers behind a mutex and wgpu's device and queue are
        // thread-safe, so concurrent Run() calls on one session are safe (tested with 8 threads).
        // SAFETY: ORT passes a valid out-pointer.
        unsafe { *supported = true };
        Ok(())
    })
}

unsafe extern "system" fn get_capability(
    this: *mut OrtEp,
    graph: *const OrtGraph,
    support: *mut OrtEpGraphSupportInfo,
) -> Status {
    guard("GetCapability", || {
        fault::panic_point(Site::GetCapability);
        let o = ort()?;
        // SAFETY: ORT passes back our EP and a graph that is live during this call.
        let started = Instant::now();
        let (ep, read) = unsafe { (Ep::from_ptr(this), read_graph(o, graph)?) };
        let placement = place(&read.graph, &ep.placement_options());
        startup::record(Phase::Placement, started.elapsed(), 1);
        for (i, reason, kind) in placement.declines() {
            let node = &read.graph.nodes[i];
            // A registered op we cannot run is worth a user's attention; a cost decision is
            // information; an op we never run is routine.
            let level = match kind {
                DeclineKind::Unsupported => OrtLoggingLevel::ORT_LOGGING_LEVEL_WARNING,
                DeclineKind::Cost => OrtLoggingLevel::ORT_LOGGING_LEVEL_INFO,
                DeclineKind::NotOurs => OrtLoggingLevel::ORT_LOGGING_LEVEL_VERBOSE,
            };
            ep.log(level, &format!("declined {} '{}': {reason}", node.op_type, node.name));
        }
        ep.log(
            OrtLoggingLevel::ORT_LOGGING_LEVEL_INFO,
            &format!(
                "GetCapability: claimed {} of {} nodes in {} partition(s); declined {}",
                placement.claimed(),
                read.graph.nodes.len(),
                placement.groups.len(),
                read.graph.nodes.len() - placement.claimed()
            ),
        );
        let fusion = OrtNodeFusionOptions { ort_version_supported: ABI_VERSION, drop_constant_initializers: true };
        for group in &placement.groups {
            let nodes: Vec<*const OrtNode> = group.iter().map(|&i| read.handles[i]).collect();
            // SAFETY: the node handles belong to the live graph; ORT copies the list.
            check(unsafe { (o.ep.EpGraphSupportInfo_AddNodesToFuse)(support, nodes.as_ptr(), nodes.len(), &fusion) })?;
        }
        Ok(())
    })
}

/// Names of a node's inputs or outputs (empty string for omitted optional ones).
///
/// # Safety
/// `node` is live.
unsafe fn io_names(node: *const OrtNode, outputs: bool) -> Result<Vec<String>, EpError> {
    let o = ort()?;
    let (count_fn, get_fn) = if outputs {
        (o.api.Node_GetNumOutputs, o.api.Node_GetOutputs)
    } else {
        (o.api.Node_GetNumInputs, o.api.Node_GetInputs)
    };
    let mut n = 0usize;
    // SAFETY: node is live; the array is sized by ORT's count; names are copied.
    unsafe {
        check(count_fn(node, &mut n))?;
        let mut vals: Vec<*const OrtValueInfo> = vec![null(); n];
        check(get_fn(node, vals.as_mut_ptr(), n))?;
        vals.iter()
            .map(|&v| {
                if v.is_null() {
                    return Ok(String::new());
                }
                let mut p = null();
                check((o.api.GetValueInfoName)(v, &mut p))?;
                Ok(cstr(p))
            })
            .collect()
    }
}

/// Copies the initializers of a partition's graph (the weights dropped from the fused inputs).
///
/// # Safety
/// `graph` is live.
unsafe fn read_constants(graph: *const OrtGraph) -> Result<Vec<Constant>, EpError> {
    let o = ort()?;
    let mut n = 0usize;
    // SAFETY: graph is live; arrays are sized by ORT's count; tensors are copied.
    unsafe {
        check((o.api.Graph_GetNumInitializers)(graph, &mut n))?;
        let mut infos: Vec<*const OrtValueInfo> = vec![null(); n];
        check((o.api.Graph_GetInitializers)(graph, infos.as_mut_ptr(), n))?;
        let mut out = Vec::with_capacity(n);
        for &vi in infos.iter().filter(|p| !p.is_null()) {
            let mut name = null();
            check((o.api.GetValueInfoName)(vi, &mut name))?;
            let name = cstr(name);
            let mut value: *const OrtValue = null();
            check((o.api.ValueInfo_GetInitializerValue)(vi, &mut value))?;
            if value.is_null() {
                continue;
            }
            let t = tensor_bytes(o, value, usize::MAX)?;
            let Some(dtype) = ElemType::from_onnx(t.elem_type) else { continue };
            out.push(Constant { name, dtype, shape: t.shape, data: t.data });
        }
        Ok(out)
    }
}

unsafe extern "system" fn compile(
    this: *mut OrtEp,
    graphs: *const *const OrtGraph,
    fused_nodes: *const *const OrtNode,
    count: usize,
    compute_infos: *mut *mut OrtNodeComputeInfo,
    _ep_context_nodes: *mut *mut OrtNode,
) -> Status {
    guard("Compile", || {
        fault::panic_point(Site::Compile);
        let o = ort()?;
        // SAFETY: ORT passes back our EP and `count` live graphs and fused nodes, and an output
        // array of `count` slots that we fill (each slot owned by us until ReleaseNodeComputeInfos).
        unsafe {
            let ep = Ep::from_ptr(this);
            // The tensor-core compiles deferred by one partition's set wait for every partition's
            // interim pipelines (`runtime/compile_order.rs`).
            let _hold = ep_kernels::runtime::hold_deferred();
            let mut created: Vec<*mut OrtNodeComputeInfo> = Vec::with_capacity(count);
            let mut build = || -> Result<(), EpError> {
                for i in 0..count {
                    let (graph, fused) = (*graphs.add(i), *fused_nodes.add(i));
                    let inputs = io_names(fused, false)?;
                    let outputs = io_names(fused, true)?;
                    let started = Instant::now();
                    let read = read_graph(o, graph)?;
                    let order = read.graph.topological_order();
                    let nodes: Vec<_> = order.iter().map(|&k| read.graph.nodes[k].clone()).collect();
                    let constants = read_constants(graph)?;
                    let flash = ep.options.flash_mode(ep.gpu.caps());
                    let program =
                        build_program_with(&nodes, &inputs, &outputs, constants, flash).map_err(EpError::fail)?;
                    let mut name = null();
                    check((o.api.Node_GetName)(fused, &mut name))?;
                    startup::record(Phase::Program, started.elapsed(), 1);
                    let gpu = ep.gpu.get()?;
                    let exec =
                        startup::time(Phase::Upload, || Executable::new(gpu, program, ep.options.exec_options()))?;
                    let name = cstr(name);
                    let plans = match static_shapes(&read.graph, &inputs) {
                        Some(shapes) => warm_up(ep, &exec, &name, &shapes),
                        None => Vec::new(),
                    };
                    created.push(ComputeInfo::create(exec, name, plans));
                }
                Ok(())
            };
            if let Err(e) = build() {
                // ORT will not call ReleaseNodeComputeInfos for a failed Compile.
                for info in created {
                    ComputeInfo::destroy(info);
                }
                return Err(e);
            }
            for (i, info) in created.into_iter().enumerate() {
                *compute_infos.add(i) = info;
            }
        }
        Ok(())
    })
}

/// The shape of each fused-node input, when every one is fully known (no symbolic dims).
fn static_shapes(graph: &ep_kernels::graph::Graph, inputs: &[String]) -> Option<Vec<Vec<u64>>> {
    inputs
        .iter()
        .map(|name| {
            let info = graph.nodes.iter().flat_map(|n| n.inputs.iter().flatten()).find(|v| &v.name == name)?;
            info.fixed_shape()
        })
        .collect()
}

/// Prepares a partition's one shape set at Compile, so its pipelines compile (in parallel, on
/// the workers) while ORT finishes the session; a failure is left for the first run to report.
/// Returns the plan lines, which the first run logs (as it does for shapes it prepares).
fn warm_up(ep: &Ep, exec: &Executable, name: &str, shapes: &[Vec<u64>]) -> Vec<String> {
    match exec.warm_up(shapes) {
        Ok(lines) => lines,
        Err(e) => {
            ep.log(OrtLoggingLevel::ORT_LOGGING_LEVEL_VERBOSE, &format!("{name}: not prepared at Compile: {e}"));
            Vec::new()
        }
    }
}

unsafe extern "system" fn release_node_compute_infos(
    _this: *mut OrtEp,
    infos: *mut *mut OrtNodeComputeInfo,
    count: usize,
) {
    guard_value("ReleaseNodeComputeInfos", (), || {
        for i in 0..count {
            // SAFETY: each entry came from ComputeInfo::create and ORT releases it once.
            unsafe { ComputeInfo::destroy(*infos.add(i)) };
        }
    });
}
