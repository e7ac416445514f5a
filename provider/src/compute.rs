//! `OrtNodeComputeInfo`: runs one compiled partition per `Compute` call, with host tensors in
//! and out (the EP registers no device memory, so ORT hands us CPU tensors).

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use ep_kernels::graph::{dtype_of, Executable, HostTensor};
use ort_sys::{OrtKernelContext, OrtLoggingLevel, OrtValue};

use crate::abi::{OrtNodeComputeContext, OrtNodeComputeInfo, ABI_VERSION};
use crate::fault::{self, Fault, Site};
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

/// An input tensor's element type, shape and bytes, borrowed from ORT for this call.
///
/// # Safety
/// `value` is a live CPU tensor for the lifetime `'a`.
unsafe fn host_tensor<'a>(value: *const OrtValue) -> Result<(i32, Vec<u64>, &'a [u8]), EpError> {
    let o = ort()?;
    // SAFETY (whole block): value is a live CPU tensor; the info object is released; the data
    // pointer covers GetTensorSizeInBytes bytes for as long as ORT keeps the input alive, which
    // is the whole Compute call.
    unsafe {
        let mut info = null_mut();
        check((o.api.GetTensorTypeAndShape)(value, &mut info))?;
        let mut elem = 0i32;
        let r1 =
            check((o.api.GetTensorElementType)(info, &mut elem as *mut i32 as *mut ort_sys::ONNXTensorElementDataType));
        let mut rank = 0usize;
        let r2 = check((o.api.GetDimensionsCount)(info, &mut rank));
        let mut dims = vec![0i64; rank];
        let r3 = check((o.api.GetDimensions)(info, dims.as_mut_ptr(), rank));
        (o.api.ReleaseTensorTypeAndShapeInfo)(info);
        r1.and(r2).and(r3)?;
        let shape = dims.iter().map(|&d| d.max(0) as u64).collect();
        let mut size = 0usize;
        check((o.api.GetTensorSizeInBytes)(value, &mut size))?;
        let mut p: *const c_void = null();
        check((o.api.GetTensorData)(value, &mut p))?;
        let data: &'a [u8] =
            if size == 0 || p.is_null() { &[] } else { std::slice::from_raw_parts(p as *const u8, size) };
        Ok((elem, shape, data))
    }
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
        let mut tensors: Vec<(i32, Vec<u64>, &[u8])> = Vec::with_capacity(n);
        for i in 0..n {
            let mut value: *const OrtValue = null();
            // SAFETY: ctx is live; index < the fused node's input count.
            check(unsafe { (o.api.KernelContext_GetInput)(ctx, i, &mut value) })?;
            if value.is_null() {
                return Err(EpError::invalid(format!("{}: input {i} is missing", info.name)));
            }
            // SAFETY: a live input tensor of this Compute call.
            tensors.push(unsafe { host_tensor(value)? });
        }
        let mut inputs = Vec::with_capacity(n);
        for (elem, shape, data) in &tensors {
            let dtype = dtype_of(*elem)
                .ok_or_else(|| EpError::invalid(format!("{}: element type {elem} is not supported", info.name)))?;
            inputs.push(HostTensor { dtype, shape, data });
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
                    std::ptr::copy_nonoverlapping(bytes.as_ptr(), p as *mut u8, size);
                }
            }
            Ok(())
        };
        let report = info.exec.run(&inputs, &mut write_output).map_err(|e| {
            let mut err = EpError::from(e);
            err.message = format!("{}: {}", info.name, err.message);
            err
        })?;
        if let Some(lines) = report {
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
