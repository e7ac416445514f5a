//! ONNX Runtime plugin-EP boundary of onnxruntime-ep-wgpu. The only crate with `unsafe` and
//! `extern "C"`: it turns ORT objects into plain Rust values, calls the `ep_kernels` engine and
//! maps errors to `OrtStatus` in one place (`ort::guard`, which also stops panics).

pub mod abi;
mod compute;
pub mod devices;
mod ep;
pub mod experimental;
mod factory;
pub mod fault;
mod gpus;
mod graph_reader;
pub mod memory;
mod opening;
pub mod options;
pub mod ort;
mod profile;
pub mod vkstats;
mod workers;

use std::ffi::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};

use ort_sys::{OrtApiBase, OrtLogger};

use crate::abi::OrtEpFactory;
use crate::ort::{guard, EpError, Status};

pub use factory::EP_NAME;

/// Creates our single factory. Called by `register_execution_provider_library`.
///
/// # Safety
/// Called by ONNX Runtime with a valid `OrtApiBase` and an output array of `max_factories`.
#[no_mangle]
pub unsafe extern "C" fn CreateEpFactories(
    _registered_name: *const c_char,
    ort_api_base: *const OrtApiBase,
    default_logger: *const OrtLogger,
    factories: *mut *mut OrtEpFactory,
    max_factories: usize,
    num_factories: *mut usize,
) -> Status {
    // SAFETY: ORT's API base is valid for the process; init negotiates the version and
    // reports an unsupported host with a status built from GetApi(1). It runs before `guard`
    // (which needs the negotiated API to build a status), so a panic in it is caught here.
    let negotiated = catch_unwind(AssertUnwindSafe(|| unsafe { ort::init(ort_api_base) }));
    let failure = match negotiated {
        Ok(Ok(_)) => None,
        Ok(Err(status)) => Some(status),
        Err(_) => {
            let message = "internal error negotiating the ONNX Runtime API";
            // SAFETY: as above; building a status through GetApi(1) needs nothing negotiated.
            Some(unsafe { ort::bootstrap_status(ort_api_base, message) })
        }
    };
    if let Some(status) = failure {
        if !num_factories.is_null() {
            // SAFETY: ORT passes a valid out-pointer (checked non-NULL).
            unsafe { *num_factories = 0 };
        }
        return status;
    }
    guard("CreateEpFactories", || {
        if factories.is_null() || num_factories.is_null() || max_factories < 1 {
            return Err(EpError::invalid("CreateEpFactories: no room for a factory"));
        }
        // SAFETY: ORT's default logger lives as long as the environment, which outlives the
        // factory (ORT releases factories before tearing the environment down).
        let logger = unsafe { ort::Logger::new(default_logger) };
        let factory = factory::Factory::new(logger);
        ort::factory_created(logger);
        workers::install();
        // SAFETY: ORT passes valid output pointers (checked non-NULL above).
        unsafe {
            *factories = Box::into_raw(factory) as *mut OrtEpFactory;
            *num_factories = 1;
        }
        Ok(())
    })
}

/// Frees the factory. Called by `unregister_execution_provider_library`.
///
/// # Safety
/// `factory` came from [`CreateEpFactories`] and is released once.
#[no_mangle]
pub unsafe extern "C" fn ReleaseEpFactory(factory: *mut OrtEpFactory) -> Status {
    // SAFETY: guaranteed by ORT's contract (see above).
    guard("ReleaseEpFactory", || unsafe { factory::destroy(factory) })
}

/// Copies between host and our device memory since the library was loaded, for tools and tests
/// (`onnxruntime_ep_wgpu.copy_stats()` reads it through ctypes): writes up to `n` of
/// `[host→GPU bytes, host→GPU copies, GPU→host bytes, GPU→host copies, GPU→GPU bytes,
/// GPU→GPU copies]` to `out` and returns how many values there are (6).
///
/// # Safety
/// `out` is NULL or points to `n` writable `u64`s.
#[no_mangle]
pub unsafe extern "C" fn onnxruntime_ep_wgpu_copy_stats(out: *mut u64, n: usize) -> usize {
    let s = ep_kernels::runtime::transfer::copy_stats();
    let values = [
        s.host_to_device_bytes,
        s.host_to_device,
        s.device_to_host_bytes,
        s.device_to_host,
        s.device_to_device_bytes,
        s.device_to_device,
    ];
    // SAFETY: guaranteed by the caller.
    unsafe { write_values(out, n, &values) }
}

/// Our device allocators' counters: writes up to `n` of `[live bytes, cached bytes,
/// allocations, buffers created, failed allocations]` and returns how many there are (5).
///
/// # Safety
/// `out` is NULL or points to `n` writable `u64`s.
#[no_mangle]
pub unsafe extern "C" fn onnxruntime_ep_wgpu_memory_stats(out: *mut u64, n: usize) -> usize {
    let s = ep_kernels::runtime::memory::memory_stats();
    let values = [s.live_bytes, s.cached_bytes, s.allocations, s.buffers_created, s.failures];
    // SAFETY: guaranteed by the caller.
    unsafe { write_values(out, n, &values) }
}

/// Where start-up time went since the library was loaded (`ep_kernels::runtime::startup`): writes
/// up to `n` of `[nanoseconds, count]` pairs, one per phase in `Phase::ALL` order (enumerate,
/// device, placement, program, upload, render, module, pipeline, pipeline_wait, prepare,
/// first_run, cache_load, cache_save, run, run_values, run_record, run_wait, copy_in, copy_out_wait,
/// copy_out, interim, device_wait, buffers, bind_groups, compute, run_setup, run_submit), and returns
/// how many values there are (54).
///
/// # Safety
/// `out` is NULL or points to `n` writable `u64`s.
#[no_mangle]
pub unsafe extern "C" fn onnxruntime_ep_wgpu_startup_stats(out: *mut u64, n: usize) -> usize {
    let values: Vec<u64> =
        ep_kernels::runtime::startup::startup_stats().iter().flat_map(|t| [t.nanos, t.count]).collect();
    // SAFETY: guaranteed by the caller.
    unsafe { write_values(out, n, &values) }
}

/// # Safety
/// `out` is NULL or points to `n` writable `u64`s.
unsafe fn write_values(out: *mut u64, n: usize, values: &[u64]) -> usize {
    if !out.is_null() {
        for (i, v) in values.iter().take(n).enumerate() {
            // SAFETY: i < n, guaranteed writable by the caller.
            unsafe { *out.add(i) = *v };
        }
    }
    values.len()
}
