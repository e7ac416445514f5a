//! `OrtNodeComputeInfo`: runs one compiled partition per `Compute` call. ORT hands us tensors in
//! our device memory (ranges of wgpu buffers behind our addresses), which the run copies on the
//! GPU; host tensors (e.g. through a test harness) are uploaded and read back.

use std::ffi::c_void;
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use ep_kernels::graph::{Executable, OutputTarget, RunInput, RunOutputs};
use ep_kernels::runtime::startup::{self, Phase};
use ep_kernels::{ElemType, GpuError};
use ort_sys::{OrtKernelContext, OrtLoggingLevel, OrtValue};
use parking_lot::Mutex;

use crate::abi::{OrtNodeComputeContext, OrtNodeComputeInfo, ABI_VERSION};
use crate::fault::{self, Fault, Site};
use crate::graph_reader::tensor_type_shape;
use crate::memory::{tensor_place, tensor_raw, Place};
use crate::ort::{check, guard, guard_value, ort, EpError, Logger, Ort, Status};

#[repr(C)]
pub struct ComputeInfo {
    /// Must stay the first field: ORT hands this pointer back to every callback.
    base: OrtNodeComputeInfo,
    exec: Executable,
    name: String,
    /// Whether Compute ran once (the first run counts as the start-up phase `first_run`).
    ran: AtomicBool,
    /// Plan lines of the shapes prepared at Compile, logged by the first run.
    plans: Mutex<Vec<String>>,
}

impl ComputeInfo {
    pub fn create(exec: Executable, name: String, plans: Vec<String>) -> *mut OrtNodeComputeInfo {
        let info = Box::new(ComputeInfo {
            base: OrtNodeComputeInfo {
                ort_version_supported: ABI_VERSION,
                CreateState: create_state,
                Compute: compute,
                ReleaseState: release_state,
            },
            exec,
            name,
            ran: AtomicBool::new(false),
            plans: Mutex::new(plans),
        });
        Box::into_raw(info) as *mut OrtNodeComputeInfo
    }

    /// # Safety
    /// `info` came from [`ComputeInfo::create`] and is released once (or is NULL).
    pub unsafe fn destroy(info: *mut OrtNodeComputeInfo) {
        if !info.is_null() {
            // SAFETY: guaranteed by the caller.
            drop(unsafe { Box::from_raw(info as *mut ComputeInfo) });
        }
    }
}

unsafe extern "system" fn create_state(
    _this: *mut OrtNodeComputeInfo,
    _ctx: *mut OrtNodeComputeContext,
    state: *mut *mut c_void,
) -> Status {
    guard("CreateState", || {
        // All per-run state lives in the executable's pool.
        // SAFETY: ORT passes a valid out-pointer.
        unsafe { *state = null_mut() };
        Ok(())
    })
}

unsafe extern "system" fn release_state(_this: *mut OrtNodeComputeInfo, _state: *mut c_void) {
    guard_value("ReleaseState", (), || ());
}

unsafe extern "system" fn compute(
    this: *mut OrtNodeComputeInfo,
    _state: *mut c_void,
    ctx: *mut OrtKernelContext,
) -> Status {
    guard("Compute", || startup::time(Phase::Compute, || run_compute(this, ctx)))
}

/// One `Compute` call (see [`compute`]): `this` is our compute info and `ctx` ORT's kernel
/// context, both live for the call.
fn run_compute(this: *mut OrtNodeComputeInfo, ctx: *mut OrtKernelContext) -> Result<(), EpError> {
    fault::panic_point(Site::Compute);
    let o = ort()?;
    // SAFETY: ORT passes back our compute info and a kernel context live for this call.
    let info = unsafe { &*(this as *const ComputeInfo) };
    if fault::fires(Fault::LoseDevice, Site::Compute) {
        info.exec.gpu().destroy("test fault lose_device:compute");
    }
    let n = info.exec.program().inputs.len();
    let mut shapes = Vec::with_capacity(n);
    let mut places = Vec::with_capacity(n);
    for i in 0..n {
        let mut value: *const OrtValue = null();
        // SAFETY: ctx is live; index < the fused node's input count.
        check(unsafe { (o.api.KernelContext_GetInput)(ctx, i, &mut value) })?;
        if value.is_null() {
            return Err(EpError::invalid(format!("{}: input {i} is missing", info.name)));
        }
        // SAFETY: a live input tensor of this Compute call.
        let (elem, shape) = unsafe { tensor_type_shape(o, value)? };
        let dtype = ElemType::from_onnx(elem)
            .ok_or_else(|| EpError::invalid(format!("{}: element type {elem} is not supported", info.name)))?;
        shapes.push((dtype, shape));
        // SAFETY: as above; host bytes stay valid for this call.
        places.push(unsafe { tensor_place(o, value, false)? });
    }
    let inputs: Vec<RunInput<'_>> =
        shapes.iter().zip(places).map(|((dtype, shape), data)| RunInput { dtype: *dtype, shape, data }).collect();
    let mut outputs = OrtOutputs { o, ctx, values: Vec::new() };
    let started = Instant::now();
    let report = info.exec.run_io(&inputs, &mut outputs).map_err(|e| {
        let mut err = EpError::from(e);
        err.message = format!("{}: {}", info.name, err.message);
        err
    })?;
    if let Some(path) = crate::profile::target() {
        if let Err(e) = crate::profile::record(&path, &info.name, &info.exec, &inputs) {
            tracing::info!(target: "ep_wgpu", "profiling {}: {e}", info.name);
        }
    }
    let mut lines = Vec::new();
    if let Some(plans) = report {
        // The last line is the executor's dispatch count of the new set.
        lines = plans;
    }
    if !info.ran.swap(true, Ordering::Relaxed) {
        startup::record(Phase::FirstRun, started.elapsed(), 1);
        let prepared = std::mem::take(&mut *info.plans.lock());
        lines.splice(0..0, prepared);
        lines.push(format!("start-up so far: {}", startup::summary()));
    }
    if !lines.is_empty() {
        let mut logger = null();
        // SAFETY: ctx is live; the logger it returns lives as long as ctx.
        if check(unsafe { (o.api.KernelContext_GetLogger)(ctx, &mut logger) }).is_ok() {
            // SAFETY: the kernel context's logger outlives this call, and the handle does not
            // escape it.
            let logger = unsafe { Logger::new(logger) };
            for line in lines {
                logger.log(OrtLoggingLevel::ORT_LOGGING_LEVEL_INFO, &format!("{}: {line}", info.name));
            }
        }
    }
    Ok(())
}

/// The fused node's outputs, allocated by ORT in the memory it chose for them (ours, once the
/// EP registers device memory; host memory otherwise).
struct OrtOutputs<'a> {
    o: &'a Ort,
    ctx: *mut OrtKernelContext,
    values: Vec<*mut OrtValue>,
}

impl RunOutputs for OrtOutputs<'_> {
    fn target(&mut self, i: usize, shape: &[u64]) -> Result<OutputTarget, GpuError> {
        let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        let mut out: *mut OrtValue = null_mut();
        // SAFETY: ctx is live for this Compute call; ORT allocates output i with this shape and
        // keeps it alive past the call.
        unsafe {
            check((self.o.api.KernelContext_GetOutput)(self.ctx, i, dims.as_ptr(), dims.len(), &mut out))
                .map_err(|e| GpuError::Invalid(e.message))?;
        }
        if self.values.len() <= i {
            self.values.resize(i + 1, null_mut());
        }
        self.values[i] = out;
        // SAFETY: `out` is the live output tensor just allocated; a failed allocation behind it
        // is reported as that failure (out of memory, a lost device).
        let raw = unsafe { tensor_raw(self.o, out, true) }.map_err(|e| GpuError::Invalid(e.message))?;
        // SAFETY: as above.
        match unsafe { raw.place()? } {
            Place::Host(_) => Ok(OutputTarget::Host),
            Place::Device(s) => Ok(OutputTarget::Device(s)),
        }
    }

    fn host(&mut self, i: usize, _shape: &[u64], bytes: &[u8]) -> Result<(), String> {
        let out = self.values.get(i).copied().filter(|p| !p.is_null()).ok_or("output was not allocated")?;
        // SAFETY: `out` is the live host output tensor allocated in `target`.
        let place = unsafe { tensor_place(self.o, out, true) }.map_err(|e| e.message)?;
        let Place::Host(dst) = place else { return Err(format!("output {i} is not in host memory")) };
        if dst.len() != bytes.len() {
            return Err(format!("output {i}: ORT allocated {} bytes, the result has {}", dst.len(), bytes.len()));
        }
        if !dst.is_empty() {
            // SAFETY: ORT's output buffer of `dst.len()` bytes, exclusively ours during Compute.
            let dst = unsafe { std::slice::from_raw_parts_mut(dst.as_ptr() as *mut u8, dst.len()) };
            ep_kernels::hostcopy::copy(dst, bytes);
        }
        Ok(())
    }
}
