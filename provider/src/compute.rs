//! `OrtNodeComputeInfo`: runs one compiled partition per `Compute` call, with host tensors in
//! and out (the EP registers no device memory, so ORT hands us CPU tensors).

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use ep_kernels::graph::{Executable, HostTensor};
use ep_kernels::ElemType;
use ort_sys::{OrtKernelContext, OrtLoggingLevel, OrtValue};

use crate::abi::{OrtNodeComputeContext, OrtNodeComputeInfo, ABI_VERSION};
use crate::fault::{self, Fault, Site};
use crate::graph_reader::{tensor_view, TensorView};
use crate::ort::{check, guard, guard_value, ort, EpError, Logger, Status};

#[repr(C)]
pub struct ComputeInfo {
    /// Must stay the first field: ORT hands this pointer back to every callback.
    base: OrtNodeComputeInfo,
    exec: Executable,
    name: String,
}

impl ComputeInfo {
    pub fn create(exec: Executable, name: String) -> *mut OrtNodeComputeInfo {
        let info = Box::new(ComputeInfo {
            base: OrtNodeComputeInfo {
                ort_version_supported: ABI_VERSION,
                CreateState: create_state,
                Compute: compute,
                ReleaseState: release_state,
            },
            exec,
            name,
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
    guard("Compute", || {
        fault::panic_point(Site::Compute);
        let o = ort()?;
        // SAFETY: ORT passes back our compute info and a kernel context live for this call.
        let info = unsafe { &*(this as *const ComputeInfo) };
        if fault::fires(Fault::LoseDevice, Site::Compute) {
            info.exec.gpu().destroy("test fault lose_device:compute");
        }
        let n = info.exec.program().inputs.len();
        let mut tensors: Vec<TensorView> = Vec::with_capacity(n);
        for i in 0..n {
            let mut value: *const OrtValue = null();
            // SAFETY: ctx is live; index < the fused node's input count.
            check(unsafe { (o.api.KernelContext_GetInput)(ctx, i, &mut value) })?;
            if value.is_null() {
                return Err(EpError::invalid(format!("{}: input {i} is missing", info.name)));
            }
            // SAFETY: a live input tensor of this Compute call.
            tensors.push(unsafe { tensor_view(o, value)? });
        }
        let mut inputs = Vec::with_capacity(n);
        for t in &tensors {
            let elem = t.elem_type;
            let dtype = ElemType::from_onnx(elem)
                .ok_or_else(|| EpError::invalid(format!("{}: element type {elem} is not supported", info.name)))?;
            inputs.push(HostTensor { dtype, shape: &t.shape, data: t.data });
        }
        let mut write_output = |i: usize, shape: &[u64], bytes: &[u8]| -> Result<(), String> {
            let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
            let mut out: *mut OrtValue = null_mut();
            // SAFETY: ctx is live; ORT allocates the output with this shape; its data pointer
            // covers exactly `bytes.len()` bytes (same element type and count).
            unsafe {
                check((o.api.KernelContext_GetOutput)(ctx, i, dims.as_ptr(), dims.len(), &mut out))
                    .map_err(|e| e.message)?;
                let mut size = 0usize;
                check((o.api.GetTensorSizeInBytes)(out, &mut size)).map_err(|e| e.message)?;
                if size != bytes.len() {
                    return Err(format!("output {i}: ORT allocated {size} bytes, the result has {}", bytes.len()));
                }
                if size > 0 {
                    let mut p: *mut c_void = null_mut();
                    check((o.api.GetTensorMutableData)(out, &mut p)).map_err(|e| e.message)?;
                    if p.is_null() {
                        return Err(format!("output {i}: ORT returned no data pointer for {size} bytes"));
                    }
                    // SAFETY: ORT's output buffer of `size` bytes, exclusively ours during Compute.
                    let dst = std::slice::from_raw_parts_mut(p as *mut u8, size);
                    ep_kernels::hostcopy::copy(dst, bytes);
                }
            }
            Ok(())
        };
        let report = info.exec.run(&inputs, &mut write_output).map_err(|e| {
            let mut err = EpError::from(e);
            err.message = format!("{}: {}", info.name, err.message);
            err
        })?;
        if let Some(path) = crate::profile::target() {
            if let Err(e) = crate::profile::record(&path, &info.name, &info.exec, &inputs) {
                tracing::info!(target: "ep_wgpu", "profiling {}: {e}", info.name);
            }
        }
        if let Some(mut lines) = report {
            lines.push(format!("{} dispatches per run", info.exec.dispatch_count(&inputs)));
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
    })
}
